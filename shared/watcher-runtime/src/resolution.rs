//! When a lapse ends: the resolution of its lapse task's incident (expectations-v1 §13.1; the
//! "Incidents" entry of docs/interpretation.md says what "resolved" means per lapse kind).
//!
//! A lapse task that is told opens an incident keyed by its `messageId`
//! (`lapse:{expectationId}:{lapse}:{dueAt}`); the incident is resolved, once, by the first of:
//!
//! * the fact arriving late (`fact`): the expectation is satisfied after it lapsed;
//! * the lapse task's own Task reaching a terminal state the operator chose (`task`, with the
//!   state; [`RESOLVING_TASK_STATES`]: `TASK_STATE_COMPLETED`);
//! * the expectation withdrawn (`withdrawn`, with the withdrawal's reason) or superseded
//!   (`superseded`, with the successor's id);
//! * an operator acknowledging it (`acknowledged`, with who).
//!
//! The resolution is kept on the outbox entry ([`crate::store::OutboxEntry::resolved`]). The
//! first one stays: every writer goes through [`resolve`] (which never replaces one) and every
//! store's merge keeps the stored one ([`keep_resolution`], called by
//! [`crate::task_progress::keep_task_progress`]). The functions here are pure so that the memory,
//! SQLite and DynamoDB stores apply the very same rules.

use a2a_types::TaskState;
use serde::{Deserialize, Serialize};
use watcher_core::engine::Effect;
use watcher_core::ids::{AgentId, ExpectationId};
use watcher_core::record::ExpectationRecord;
use watcher_core::slice::Slice;
use watcher_core::time::Instant;

use crate::store::OutboxEntry;

/// The states of the lapse task's Task that resolve its lapse by default (expectations-v1
/// §13.1: the agent finished handling it): `TASK_STATE_COMPLETED` only, so a lapse task that
/// failed or was canceled leaves the lapse open for a person. An agent's `resolve_on` chooses
/// others ([`OutboxEntry::resolve_on`]).
pub const RESOLVING_TASK_STATES: [TaskState; 1] = [TaskState::Completed];

/// Most characters of the `who` of an acknowledgement.
pub const MAX_WHO_CHARS: usize = 256;

/// How a lapse's incident ended: when (UTC, the watcher's clock) and why. JSON
/// `{"at": "2026-12-01T08:00:00Z", "reason": "fact"}`, with the reason's own members beside
/// `reason` (see [`ResolutionReason`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resolution {
    /// When it was resolved (UTC): the late fact's receipt, the withdrawal's instant, or the
    /// instant the watcher learnt the Task's state or the acknowledgement.
    pub at: Instant,
    /// Why.
    #[serde(flatten)]
    pub reason: ResolutionReason,
}

/// Why a lapse's incident was resolved (the `reason` member of [`Resolution`]'s JSON).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "lowercase")]
pub enum ResolutionReason {
    /// `{"reason": "fact"}`: the expected fact arrived, after the lapse (expectations-v1 §9.2).
    Fact,
    /// `{"reason": "task", "state": "TASK_STATE_COMPLETED"}`: the lapse task's Task reached a
    /// state of [`RESOLVING_TASK_STATES`] (its A2A wire name).
    Task {
        /// The Task's state, as A2A names it (`TASK_STATE_COMPLETED`).
        state: String,
    },
    /// `{"reason": "withdrawn", "detail": "..."}`: the expectation was withdrawn
    /// (expectations-v1 §8.1); `detail` is the withdrawal's reason.
    Withdrawn {
        /// The withdrawal's reason, in words.
        detail: String,
    },
    /// `{"reason": "superseded", "by": "exp-2"}`: a successor superseded the expectation
    /// (expectations-v1 §10.3).
    Superseded {
        /// The successor's `expectationId`.
        by: ExpectationId,
    },
    /// `{"reason": "acknowledged", "by": "ops@example.com"}`: an operator acknowledged it.
    Acknowledged {
        /// Who acknowledged it, as the operator gave it (1 to [`MAX_WHO_CHARS`] characters).
        by: String,
    },
}

impl ResolutionReason {
    /// `fact`, `task`, `withdrawn`, `superseded` or `acknowledged`.
    pub fn as_str(&self) -> &'static str {
        match self {
            ResolutionReason::Fact => "fact",
            ResolutionReason::Task { .. } => "task",
            ResolutionReason::Withdrawn { .. } => "withdrawn",
            ResolutionReason::Superseded { .. } => "superseded",
            ResolutionReason::Acknowledged { .. } => "acknowledged",
        }
    }
}

/// A resolution for a lapse task already in the outbox, written in the commit of the step that
/// caused it ([`crate::store::Commit::resolutions`]; the tenant is the commit's). The store reads
/// the entry (tenant, `agent`, `message_id`) by its key and sets [`resolve`] of it; an entry
/// that is not stored (the agent receives no lapse tasks) is left alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// The agent the lapse task went to (the expectation's raising agent).
    pub agent: AgentId,
    /// The lapse task's `messageId`.
    pub message_id: String,
    /// The resolution.
    pub resolution: Resolution,
}

/// Sets `resolution` on `entry` unless it is resolved already (the first resolution stays).
/// Answers whether `entry` changed.
pub fn resolve(entry: &mut OutboxEntry, resolution: Resolution) -> bool {
    if entry.resolved.is_some() {
        return false;
    }
    entry.resolved = Some(resolution);
    true
}

/// `stored` with `resolution` set, or `None` when it was resolved already (nothing to write).
pub fn resolved(stored: &OutboxEntry, resolution: &Resolution) -> Option<OutboxEntry> {
    let mut entry = stored.clone();
    resolve(&mut entry, resolution.clone()).then_some(entry)
}

/// Keeps in `incoming`, an entry about to replace `stored`, `stored`'s resolution: a writer that
/// read the entry before it was resolved never unresolves it, and a later reason never replaces
/// the first. Called by [`crate::task_progress::keep_task_progress`] in every store's write.
pub fn keep_resolution(incoming: &mut OutboxEntry, stored: &OutboxEntry) {
    if stored.resolved.is_some() {
        incoming.resolved.clone_from(&stored.resolved);
    }
}

/// Resolves `entry` at `now` by its Task's state (`task_state`) when that state is one of the
/// entry's `resolve_on` ([`RESOLVING_TASK_STATES`] when it has none; an empty list: no state)
/// and it is not resolved yet. Called by every writer that learns a
/// state ([`crate::task_progress::mark_needs_person`]). Answers whether `entry` changed.
pub fn resolve_by_task(entry: &mut OutboxEntry, now: Instant) -> bool {
    let Some(state) = entry.task_state.as_deref() else {
        return false;
    };
    let states = entry
        .resolve_on
        .as_deref()
        .unwrap_or(&RESOLVING_TASK_STATES);
    if !states.iter().any(|s| s.as_str() == state) {
        return false;
    }
    let reason = ResolutionReason::Task {
        state: state.to_owned(),
    };
    resolve(entry, Resolution { at: now, reason })
}

/// An operator's acknowledgement of the lapse task `entry` at `now` by `who`: `entry` resolved
/// with reason `acknowledged`, or `None` when it was resolved already (the first resolution
/// stays).
///
/// # Errors
/// `who` is empty, only white space, or longer than [`MAX_WHO_CHARS`] characters: the reason
/// says which.
pub fn acknowledge(
    entry: &OutboxEntry,
    who: &str,
    now: Instant,
) -> Result<Option<OutboxEntry>, String> {
    if who.trim().is_empty() {
        return Err(format!(
            "must name who acknowledges it (1 to {MAX_WHO_CHARS} characters); it is empty"
        ));
    }
    let chars = who.chars().count();
    if chars > MAX_WHO_CHARS {
        return Err(format!(
            "has {chars} characters; at most {MAX_WHO_CHARS} are kept"
        ));
    }
    let reason = ResolutionReason::Acknowledged { by: who.to_owned() };
    Ok(resolved(entry, &Resolution { at: now, reason }))
}

/// The lapse tasks `effect` resolves, by `messageId`, given `record`, the expectation the effect
/// is about as the step left it (its `lapses`, `satisfaction`, `withdrawal`, `supersededBy`):
///
/// * `Effect::Satisfied`: every lapse of the record, reason `fact`, at the fact's receipt
///   (`satisfaction.satisfiedAt`; `now` if the record has none);
/// * `Effect::Withdrawn`: every lapse of the record, reason `superseded` (with the successor)
///   when the record was superseded, else `withdrawn` with the withdrawal's reason; at the
///   withdrawal (`withdrawal.withdrawnAt`; `now` if the record has none).
///
/// Empty for any other effect, for an effect about another expectation, and for a record that
/// never lapsed.
pub fn resolution_of(
    effect: &Effect,
    record: &ExpectationRecord,
    now: Instant,
) -> Vec<(String, Resolution)> {
    let (key, resolution) = match effect {
        Effect::Satisfied { expectation, .. } => {
            let at = record.satisfaction.as_ref().map_or(now, |s| s.satisfied_at);
            let reason = ResolutionReason::Fact;
            (expectation, Resolution { at, reason })
        }
        Effect::Withdrawn {
            expectation,
            reason,
        } => {
            let at = record.withdrawal.as_ref().map_or(now, |w| w.withdrawn_at);
            let reason = match &record.superseded_by {
                Some(by) => ResolutionReason::Superseded { by: by.clone() },
                None => ResolutionReason::Withdrawn {
                    detail: reason.clone(),
                },
            };
            (expectation, Resolution { at, reason })
        }
        _ => return Vec::new(),
    };
    if *key != record.key() {
        return Vec::new();
    }
    record
        .lapses
        .iter()
        .map(|l| (l.message_id.clone(), resolution.clone()))
        .collect()
}

/// Every resolution `effects` make, in order, with the record each is about looked up in
/// `slice` (the slice the step left): [`resolution_of`] of each effect, addressed to the
/// record's agent.
pub fn resolutions(effects: &[Effect], slice: &Slice, now: Instant) -> Vec<Resolved> {
    let mut out = Vec::new();
    for effect in effects {
        let (Effect::Satisfied {
            expectation: key, ..
        }
        | Effect::Withdrawn {
            expectation: key, ..
        }) = effect
        else {
            continue;
        };
        let Some(record) = slice.subjects.values().find_map(|s| s.record(key)) else {
            continue;
        };
        out.extend(resolution_of(effect, record, now).into_iter().map(
            |(message_id, resolution)| Resolved {
                agent: record.agent.clone(),
                message_id,
                resolution,
            },
        ));
    }
    out
}

#[cfg(test)]
mod tests;
