//! Deadlines and horizons: when each fires, the overdue and stalled lapses they cause, and the
//! timer effects that keep an external scheduler in step (expectations-v1 §9.1, §9.3, §10.1).
//!
//! Timers are hints: firing one only means "evaluate this now"; the record decides.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Effect, Out, StepContext};
use crate::ids::{ExpectationRef, Subject};
use crate::lapse::{message_id, phrase, Lapse, LapseBlock, Phrase};
use crate::record::{AnchorState, ExpectationRecord, LapseEntry, LapseKind};
use crate::slice::{Need, Slice, SubjectState};
use crate::time::Instant;

/// Which of an expectation's two clocks a timer is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TimerKind {
    /// `dueAt + grace`: the overdue lapse.
    Deadline,
    /// `horizon`: the stalled lapse.
    Horizon,
}

impl TimerKind {
    /// `deadline` or `horizon`.
    pub fn as_str(self) -> &'static str {
        match self {
            TimerKind::Deadline => "deadline",
            TimerKind::Horizon => "horizon",
        }
    }
}

/// Identifies one timer: the expectation (and its subject, where the record lives) and kind.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerKey {
    /// Where the record lives.
    pub subject: Subject,
    /// The expectation.
    pub expectation: ExpectationRef,
    /// Deadline or horizon.
    pub kind: TimerKind,
}

/// The overdue deadline if the expectation can still lapse overdue on it (§9.1, §9.3): open,
/// not lapsed overdue or skipped, and not waiting on an unsatisfied anchor.
pub fn overdue_deadline(rec: &ExpectationRecord) -> Option<Instant> {
    let eligible = rec.is_open()
        && !rec.has_lapsed(LapseKind::Overdue)
        && !rec.has_lapsed(LapseKind::Skipped)
        && rec.anchor_state != AnchorState::Waiting;
    eligible.then(|| rec.deadline())
}

/// The horizon if it has not yet been evaluated and the expectation is open (§9.1 stalled).
pub fn horizon_due(rec: &ExpectationRecord) -> Option<Instant> {
    if rec.is_open() && !rec.horizon_checked {
        rec.expectation.horizon
    } else {
        None
    }
}

/// The timers a record needs now: `(kind, instant)` for its deadline and its horizon.
pub fn pending_timers(rec: &ExpectationRecord) -> Vec<(TimerKind, Instant)> {
    let mut out = Vec::with_capacity(2);
    if let Some(t) = overdue_deadline(rec) {
        out.push((TimerKind::Deadline, t));
    }
    if let Some(t) = horizon_due(rec) {
        out.push((TimerKind::Horizon, t));
    }
    out
}

/// Until when a record counts against the bounds (semantics.md, "States").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveUntil {
    /// Satisfied, withdrawn, or past every way to lapse.
    Closed,
    /// Waiting on an anchor: it can lapse once the anchor is satisfied.
    Indefinite,
    /// Live while `now` is before this instant.
    Until(Instant),
}

/// Until when the record can still lapse: open, with a deadline not yet passed or a horizon not
/// yet reached.
pub fn live_until(rec: &ExpectationRecord) -> LiveUntil {
    if !rec.is_open() {
        return LiveUntil::Closed;
    }
    let overdue_possible =
        !rec.has_lapsed(LapseKind::Overdue) && !rec.has_lapsed(LapseKind::Skipped);
    if overdue_possible && rec.anchor_state == AnchorState::Waiting {
        return LiveUntil::Indefinite;
    }
    let deadline = overdue_possible.then(|| rec.deadline());
    let horizon = horizon_due(rec);
    match deadline.max(horizon) {
        Some(t) => LiveUntil::Until(t),
        None => LiveUntil::Closed,
    }
}

/// Greatest `observedAt` of facts on the subject received since the record was raised.
fn last_fact_at(state: &SubjectState, rec: &ExpectationRecord) -> Option<Instant> {
    state
        .facts
        .iter()
        .filter(|f| f.received_at >= rec.raised_at)
        .map(|f| f.observed_at)
        .max()
}

/// Records a lapse on the record at `idx` and returns the lapse to submit.
pub(crate) fn lapse(
    state: &mut SubjectState,
    idx: usize,
    kind: LapseKind,
    now: Instant,
    satisfied_after: Vec<crate::ids::ExpectationId>,
) -> Lapse {
    let last = last_fact_at(state, &state.records[idx]);
    let revealed_by: Vec<String> = satisfied_after
        .iter()
        .filter_map(|id| {
            state
                .records
                .iter()
                .find(|r| r.id() == id && r.agent == state.records[idx].agent)
                .map(|r| r.expectation.expects.clone())
        })
        .collect();
    let since = state
        .last_satisfying_receipt
        .max(Some(state.records[idx].raised_at));
    let rec = &mut state.records[idx];
    let mid = message_id(rec.id(), kind, rec.due_at);
    rec.lapses.push(LapseEntry {
        lapse: kind,
        lapsed_at: now,
        message_id: mid.clone(),
        due_at: rec.due_at,
    });
    let block = LapseBlock {
        expectation_id: rec.id().clone(),
        kind: rec.expectation.kind.clone(),
        subject: rec.expectation.subject.clone(),
        expects: rec.expectation.expects.clone(),
        lapse: kind,
        projected_due_at: rec.projected_due_at(),
        due_at: rec.due_at,
        lapsed_at: now,
        last_fact_at: last,
        satisfied_after,
        lineage: rec.lineage,
    };
    let text = phrase(&Phrase {
        block: &block,
        grace: rec
            .expectation
            .grace
            .as_ref()
            .map(instants::IsoDuration::as_str),
        horizon: rec.expectation.horizon,
        revealed_by: revealed_by.iter().map(String::as_str).collect(),
        silent_since: last.or(since).unwrap_or(rec.raised_at),
    });
    Lapse {
        tenant: rec.tenant.clone(),
        agent: rec.agent.clone(),
        raised_by: rec.raised_by.clone(),
        message_id: mid,
        block,
        text,
        order: rec.order,
    }
}

/// Evaluates the horizon of the record at `idx` (once): stalled if open and no fact on the
/// subject was received after the later of its raising and the last satisfying fact.
fn evaluate_horizon(state: &mut SubjectState, idx: usize, now: Instant) -> Option<Lapse> {
    let rec = &state.records[idx];
    if !rec.is_open() || rec.horizon_checked {
        return None;
    }
    let since = match state.last_satisfying_receipt {
        Some(t) if t > rec.raised_at => t,
        _ => rec.raised_at,
    };
    let heard = state.facts.iter().any(|f| f.received_at > since);
    state.records[idx].horizon_checked = true;
    if heard || state.records[idx].has_lapsed(LapseKind::Stalled) {
        None
    } else {
        Some(lapse(state, idx, LapseKind::Stalled, now, Vec::new()))
    }
}

/// Fires the timer `kind` of the record at `idx` if it is due at `now`; returns the lapse.
fn fire_due(state: &mut SubjectState, idx: usize, kind: TimerKind, now: Instant) -> Option<Lapse> {
    match kind {
        TimerKind::Deadline => match overdue_deadline(&state.records[idx]) {
            Some(t) if t <= now => Some(lapse(state, idx, LapseKind::Overdue, now, Vec::new())),
            _ => None,
        },
        TimerKind::Horizon => match horizon_due(&state.records[idx]) {
            Some(t) if t <= now => evaluate_horizon(state, idx, now),
            _ => None,
        },
    }
}

/// Timers of one subject due strictly before `now`, in firing order: instant, raising order,
/// deadline before horizon.
fn due_before(
    state: &SubjectState,
    now: Instant,
) -> Vec<(Instant, crate::record::RaiseOrder, TimerKind, usize)> {
    let mut due = Vec::new();
    for (idx, rec) in state.records.iter().enumerate() {
        for (kind, at) in pending_timers(rec) {
            if at < now {
                due.push((at, rec.order, kind, idx));
            }
        }
    }
    due.sort();
    due
}

/// Fires, late, every timer of the loaded subjects that fell due strictly before `now`, before
/// the input is applied (§10.1: a missed sweep submits late, never skips). A record whose
/// lineage ended withdrawing is withdrawn instead ([`super::lineage::withdraw_before_lapse`]).
///
/// # Errors
/// [`Need`] for the task records of the due records' lineages.
pub(crate) fn catch_up(
    slice: &mut Slice,
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    let now = ctx.now;
    let mut due_all = Vec::new();
    for (subject, state) in &slice.subjects {
        for (at, order, kind, idx) in due_before(state, now) {
            due_all.push((at, order, kind, subject.clone(), idx));
        }
    }
    due_all.sort();
    let records: Vec<(Subject, usize)> = due_all
        .iter()
        .map(|(_, _, _, subject, idx)| (subject.clone(), *idx))
        .collect();
    super::lineage::withdraw_before_lapse(slice, &records, ctx, out)?;
    for (_, _, kind, subject, idx) in due_all {
        if let Ok(state) = slice.subject_mut(&subject) {
            if let Some(l) = fire_due(state, idx, kind, now) {
                out.push(Effect::Lapsed(Box::new(l)));
            }
        }
    }
    Ok(())
}

/// After the input: anything it made due strictly before `now` (a re-anchor or fallback into the
/// past, a raise with a past due time) lapses at once, held for raising-order emission; a record
/// whose lineage ended withdrawing is withdrawn instead
/// ([`super::lineage::withdraw_before_lapse`]).
///
/// # Errors
/// [`Need`] for the task records of the due records' lineages.
pub(crate) fn lapse_newly_due(
    slice: &mut Slice,
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    let now = ctx.now;
    let mut due_all = Vec::new();
    for (subject, state) in &slice.subjects {
        let due = due_before(state, now);
        if !due.is_empty() {
            due_all.push((subject.clone(), due));
        }
    }
    let records: Vec<(Subject, usize)> = due_all
        .iter()
        .flat_map(|(subject, due)| due.iter().map(|d| (subject.clone(), d.3)))
        .collect();
    super::lineage::withdraw_before_lapse(slice, &records, ctx, out)?;
    for (subject, due) in due_all {
        if let Ok(state) = slice.subject_mut(&subject) {
            for (_, _, kind, idx) in due {
                if let Some(l) = fire_due(state, idx, kind, now) {
                    out.lapses.push(l);
                }
            }
        }
    }
    Ok(())
}

/// A timer firing: evaluates that deadline or horizon at `ctx.now`. An early wake lapses nothing
/// and re-arms the timer. A record whose lineage ended withdrawing is withdrawn instead of
/// lapsing ([`super::lineage::withdraw_before_lapse`]).
///
/// # Errors
/// [`Need`] for the subject, then for the task records of the record's lineage.
pub(crate) fn fire(
    slice: &mut Slice,
    key: &TimerKey,
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    let now = ctx.now;
    let state = slice.subject(&key.subject)?;
    let Some(idx) = state.position(&key.expectation) else {
        return Ok(());
    };
    let pending = pending_timers(&state.records[idx])
        .into_iter()
        .find(|(k, _)| *k == key.kind);
    match pending {
        Some((_, at)) if at <= now => {
            super::lineage::withdraw_before_lapse(slice, &[(key.subject.clone(), idx)], ctx, out)?;
            let state = slice.subject_mut(&key.subject)?;
            if let Some(l) = fire_due(state, idx, key.kind, now) {
                out.lapses.push(l);
            }
        }
        Some((_, at)) => out.push(Effect::ArmTimer {
            key: key.clone(),
            at,
        }),
        None => {}
    }
    Ok(())
}

/// Pending timers of every loaded subject, to diff against after the step.
pub(crate) fn snapshot(slice: &Slice) -> BTreeMap<TimerKey, Instant> {
    let mut map = BTreeMap::new();
    for (subject, state) in &slice.subjects {
        for rec in &state.records {
            for (kind, at) in pending_timers(rec) {
                map.insert(
                    TimerKey {
                        subject: subject.clone(),
                        expectation: rec.key(),
                        kind,
                    },
                    at,
                );
            }
        }
    }
    map
}

/// Emits arm/disarm effects for every timer that changed during the step.
pub(crate) fn diff(before: &BTreeMap<TimerKey, Instant>, slice: &Slice, out: &mut Out) {
    let after = snapshot(slice);
    for (key, at) in &after {
        if before.get(key) != Some(at) {
            out.push(Effect::ArmTimer {
                key: key.clone(),
                at: *at,
            });
        }
    }
    for (key, was) in before {
        if !after.contains_key(key) {
            out.push(Effect::DisarmTimer {
                key: key.clone(),
                was: *was,
            });
        }
    }
}
