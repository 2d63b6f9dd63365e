//! A push from an agent's webhook as one application step: the agent looked up, the event's
//! items applied with its warnings in the same commit, the origin task followed when the push
//! raised (origin-task reconciliation), the lapse task it may be about brought up to date, and
//! the outcome typed. The HTTP route authenticates, parses and serialises
//! [`PushOutcome`]; everything between is here (expectations-v1 §8.1, §10.2, §13.4).

use a2a_types::StreamResponse;
use serde::Serialize;
use watcher_core::engine::{Effect, Input, PushItem};
use watcher_core::ids::{AgentId, ExpectationId, TaskId, Tenant};
use watcher_core::ingest::{push_items, push_warnings};
use watcher_core::time::Instant;

use crate::store::Store;
use crate::watcher::{ApplyError, Watcher};

/// What a push did, as `POST /v1/agents/{agentId}/push` answers it:
/// `{ "raised", "rejected", "withdrawn", "facts", "alreadyRecorded"?, "warnings"? }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct PushOutcome {
    /// The expectations this push raised, in order.
    pub raised: Vec<ExpectationId>,
    /// The expectations it refused, each with the rule and the field in words.
    pub rejected: Vec<Refused>,
    /// The expectations it withdrew (its task canceled or failed, §10.4).
    pub withdrawn: Vec<ExpectationId>,
    /// Facts it recorded that were not recorded before.
    pub facts: usize,
    /// Expectations it carried that were recorded before with the same content (a replay, or a
    /// Task snapshot repeating its artifacts): unchanged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub already_recorded: Vec<String>,
    /// What it ignored (unknown members, an invalid `status.timestamp`), kept with the agent's
    /// rejections as warnings.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One refused expectation: `{ "expectationId", "reason" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Refused {
    /// Its `expectationId`, when one could be read (`null` otherwise).
    pub expectation_id: Option<String>,
    /// The rule and the field, in words.
    pub reason: String,
}

/// Why a push was not applied.
#[derive(Debug, thiserror::Error)]
pub enum PushError {
    /// The agent is not configured in this tenant.
    #[error("agent {:?} is not registered with this watcher", .agent.as_str())]
    UnknownAgent {
        /// The agent named by the route.
        agent: AgentId,
    },
    /// The agent is configured but its card was never read, so its expectations cannot be
    /// checked against it (serve.md "Agents are independent"): push again later.
    #[error("agent {:?}'s card has not been read yet", .agent.as_str())]
    CardNotRead {
        /// The agent.
        agent: AgentId,
        /// The last read's error, if any.
        error: Option<String>,
        /// When the card is read again (UTC), if known.
        next_try_at: Option<Instant>,
    },
    /// The store failed: retry.
    #[error(transparent)]
    Store(#[from] ApplyError),
}

impl<S: Store + ?Sized> Watcher<S> {
    /// Applies `event`, pushed by `agent` of `tenant`, at `now`, and answers what it did.
    ///
    /// The event's items ([`push_items`]) and its warnings ([`push_warnings`], kept as the
    /// agent's rejections marked `warning`) are one input, so one commit. After it: an origin
    /// task that raised expectations is followed with `GetTask` in case its cancel is never
    /// pushed ([`crate::origins::follow_origin`]); a push about a lapse task the watcher
    /// created records that task's state ([`track_lapse_task`]).
    ///
    /// # Errors
    /// [`PushError::UnknownAgent`], [`PushError::CardNotRead`], or the store's failure.
    pub async fn push(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        event: &StreamResponse,
        now: Instant,
    ) -> Result<PushOutcome, PushError> {
        let profile = match self.directory.get(tenant, agent) {
            Some(entry) => entry.profile.clone(),
            None => {
                return Err(match self.directory.card_health(tenant, agent) {
                    Some(health) => PushError::CardNotRead {
                        agent: agent.clone(),
                        error: health.error,
                        next_try_at: health.next_try_at,
                    },
                    None => PushError::UnknownAgent {
                        agent: agent.clone(),
                    },
                })
            }
        };
        let warnings = push_warnings(event);
        let mut items = push_items(event, agent, now);
        // The well-formed expectations this push carries, to say which were recorded before.
        let carried: Vec<String> = items
            .iter()
            .filter_map(|i| match i {
                PushItem::Raise { expectations, .. } => Some(expectations),
                _ => None,
            })
            .flatten()
            .filter_map(|e| e.as_ref().ok().map(|e| e.expectation_id.to_string()))
            .collect();
        let warned_task = event.task_id().and_then(|t| TaskId::parse(t).ok());
        items.extend(warnings.iter().map(|w| PushItem::Ignored {
            task_id: warned_task.clone(),
            reason: w.clone(),
        }));
        let applied = self
            .apply(
                tenant,
                &Input::Push {
                    agent: profile,
                    items,
                },
                now,
            )
            .await?;
        let raised_any = applied
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Raised { .. }));
        if let (Some(task_id), true) = (event.task_id(), raised_any) {
            self.follow_origin(tenant, agent, task_id, now).await;
        }
        track_lapse_task(&*self.store, tenant, agent, event, now).await;
        Ok(outcome(&applied.effects, carried, warnings))
    }
}

/// The answer from the step's effects: what was raised, refused (warnings aside), withdrawn,
/// and recorded, and which carried expectations were neither raised nor refused.
fn outcome(effects: &[Effect], carried: Vec<String>, warnings: Vec<String>) -> PushOutcome {
    let mut out = PushOutcome {
        warnings,
        ..PushOutcome::default()
    };
    for e in effects {
        match e {
            Effect::Raised { expectation, .. } => out.raised.push(expectation.id.clone()),
            Effect::Rejected(r) if !r.warning => out.rejected.push(Refused {
                expectation_id: r.expectation_id.clone(),
                reason: r.reason.clone(),
            }),
            Effect::Withdrawn { expectation, .. } => out.withdrawn.push(expectation.id.clone()),
            Effect::FactRecorded {
                duplicate: false, ..
            } => out.facts += 1,
            _ => {}
        }
    }
    let decided: std::collections::BTreeSet<String> = out
        .raised
        .iter()
        .map(ToString::to_string)
        .chain(out.rejected.iter().filter_map(|r| r.expectation_id.clone()))
        .collect();
    out.already_recorded = carried
        .into_iter()
        .filter(|id| !decided.contains(id))
        .collect();
    out.already_recorded.dedup();
    out
}

/// Pushes about a lapse task the watcher created update that task's state in `/v1/lapses`.
/// Task ids are the agent's own, so only the pushing agent's lapse tasks are looked at.
///
/// A push may beat the agent's answer to SendMessage (the official SDKs push the new Task, with
/// the request in its `history`, while the answer is on its way), so the lapse task is not yet
/// known by its task id: a pushed Task is then matched by the deterministic `messageId` of a
/// user message in its history (`lapse:…`, one keyed read). Each state is recorded with
/// [`crate::store::Outbox::outbox_task_state`], which changes only the task fields, in one
/// atomic step with the read, so neither a concurrent delivery's answer nor a later push of an
/// earlier state takes it back ([`crate::task_progress`]). Failures are logged: the lapse task's
/// state is also followed with `GetTask`.
pub async fn track_lapse_task<S: crate::store::Outbox + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
    event: &StreamResponse,
    now: Instant,
) {
    let (Some(task_id), Some(status)) = (event.task_id(), event.status()) else {
        return;
    };
    // From the index by (tenant, agent, taskId): the cost does not grow with the outbox.
    let Ok(known) = store.outbox_by_task(tenant, agent, task_id).await else {
        return;
    };
    let mut message_ids: Vec<String> = known.into_iter().map(|e| e.message_id).collect();
    if message_ids.is_empty() {
        if let StreamResponse::Task(task) = event {
            message_ids.extend(
                task.history
                    .iter()
                    .filter(|m| {
                        m.role == a2a_types::Role::User && m.message_id.starts_with("lapse:")
                    })
                    .map(|m| m.message_id.clone()),
            );
        }
    }
    for message_id in message_ids {
        if let Err(e) = store
            .outbox_task_state(tenant, agent, &message_id, task_id, status.state, now)
            .await
        {
            tracing::warn!(error = %e, message_id, "could not record the lapse task's state");
        }
    }
}
