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
/// `{ "raised", "rejected", "withdrawn", "facts", "alreadyRecorded"?, "warnings"?, "summary"? }`.
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
    /// Why nothing was raised, when every expectation the push carried was refused because its
    /// `expectationId` was already recorded for this agent (an id is never reused,
    /// expectations-v1 §8): how many, the rule, and how to start afresh. Absent otherwise; each
    /// refusal's own reason is in `rejected`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
}

impl PushOutcome {
    /// The `expectationId`s refused because they were already recorded for this agent with
    /// other content or from another task (id reuse, expectations-v1 §8), in answer order.
    pub fn reused(&self) -> impl Iterator<Item = &str> {
        self.rejected.iter().filter_map(|r| {
            let id = r.expectation_id.as_deref()?;
            (r.reason == watcher_core::engine::raise::id_reused_reason(id)).then_some(id)
        })
    }
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
    /// agent's rejections marked `warning`) are one input, so one commit; what the outbox knows
    /// of the task's lineage comes first ([`outbox_lineage`]: at most two keyed reads). After
    /// it: an origin task that raised expectations is followed with `GetTask` in case its
    /// cancel is never pushed ([`crate::origins::OriginQueue::follow`]); a push about a lapse task the
    /// watcher created records that task's state ([`track_lapse_task`]).
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
        // What the outbox knows of the lineage: a lapse task's work descends from the task the
        // lapse was about, whether or not the event shows the request (docs/interpretation.md
        // "Withdrawal follows the lineage").
        let (known, lapse_tasks) = outbox_lineage(&*self.store, tenant, agent, event, &items).await;
        items.splice(0..0, known);
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
        record_lapse_task_state(&*self.store, tenant, agent, event, lapse_tasks, now).await;
        Ok(outcome(&applied.effects, carried, warnings))
    }
}

/// The lapse tasks the outbox knows by task id `task_id` (from the index by (tenant, agent,
/// taskId): the cost does not grow with the outbox); none when there is no task id or the read
/// fails (logged: the lapse task's state is also followed with `GetTask`).
async fn lapse_tasks_of<S: crate::store::Outbox + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
    task_id: Option<&str>,
) -> Vec<crate::store::OutboxEntry> {
    let Some(task_id) = task_id else {
        return Vec::new();
    };
    store
        .outbox_by_task(tenant, agent, task_id)
        .await
        .unwrap_or_else(|e| {
            tracing::warn!(error = %e, task_id, "could not look the pushed task up among the lapse tasks");
            Vec::new()
        })
}

/// What the outbox knows of the lineage of a pushed event whose own items are `items`
/// (docs/interpretation.md "Withdrawal follows the lineage"): a lapse task the watcher sent
/// descends from the task its request names first in `referenceTaskIds` (the task that raised
/// the lapsed expectation, semantics.md "The lapse task"). Answers the [`PushItem::Lineage`]s to
/// put before `items` (for the event's task, when it is a lapse task; and for the task its
/// request names, when that is a lapse task that never pushed anything itself), and the lapse
/// tasks the outbox knows by the event's task id. At most two keyed reads of the outbox by task
/// id, whatever its size: one when the event raises or reports a status, one more when it shows
/// a request naming an earlier task; none otherwise.
pub async fn outbox_lineage<S: crate::store::Outbox + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
    event: &StreamResponse,
    items: &[PushItem],
) -> (Vec<PushItem>, Vec<crate::store::OutboxEntry>) {
    // Only what raises or reports a status needs it (and a status also updates the lapse
    // task's state): a push of facts or withdrawals costs no read.
    let needed = items
        .iter()
        .any(|i| matches!(i, PushItem::Raise { .. } | PushItem::Status { .. }));
    let lapse_tasks = match needed {
        true => lapse_tasks_of(store, tenant, agent, event.task_id()).await,
        false => Vec::new(),
    };
    let mut known = Vec::new();
    // The request's parent first, so that the event's task is linked below a known lineage.
    if let Some(parent) = items.iter().find_map(|i| match i {
        PushItem::Lineage { parent, .. } => Some(parent),
        _ => None,
    }) {
        let above = lapse_tasks_of(store, tenant, agent, Some(parent.as_str())).await;
        known.extend(lapse_origin(&above).map(|grandparent| PushItem::Lineage {
            origin: watcher_core::engine::Origin {
                task_id: parent.clone(),
                context_id: None,
            },
            parent: grandparent,
        }));
    }
    let own = event.task_id().and_then(|t| TaskId::parse(t).ok());
    if let (Some(task_id), Some(parent)) = (own, lapse_origin(&lapse_tasks)) {
        let context_id = event
            .context_id()
            .filter(|c| !c.is_empty())
            .and_then(|c| watcher_core::ids::ContextId::parse(c).ok());
        known.push(PushItem::Lineage {
            origin: watcher_core::engine::Origin {
                task_id,
                context_id,
            },
            parent,
        });
    }
    (known, lapse_tasks)
}

/// The task a lapse task's request names first in `referenceTaskIds`, for the first of
/// `lapse_tasks` that names one.
fn lapse_origin(lapse_tasks: &[crate::store::OutboxEntry]) -> Option<TaskId> {
    lapse_tasks.iter().find_map(|e| {
        e.request
            .pointer("/message/referenceTaskIds/0")
            .and_then(serde_json::Value::as_str)
            .and_then(|p| TaskId::parse(p).ok())
    })
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
    let reused = out.reused().count();
    if out.raised.is_empty() && reused > 0 && reused == out.rejected.len() {
        out.summary = Some(reused_summary(reused));
    }
    out
}

/// [`PushOutcome::summary`] when all `n` refusals of a push that raised nothing were id reuse.
fn reused_summary(n: usize) -> String {
    let each = if n == 1 {
        "the one expectation this push carried was refused: its expectationId was".to_owned()
    } else {
        format!("all {n} expectations this push carried were refused: their expectationIds were")
    };
    format!(
        "nothing was raised: {each} already recorded for this agent, with other content or from \
         another task, and an expectationId is never reused (expectations-v1 §8). New work needs \
         new expectationIds; to run the same artifact again from the start, use a fresh record \
         (for serve, a new `database` file)"
    )
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
    if event.status().is_none() {
        return;
    }
    let known = lapse_tasks_of(store, tenant, agent, event.task_id()).await;
    record_lapse_task_state(store, tenant, agent, event, known, now).await;
}

/// [`track_lapse_task`] with the lapse tasks the outbox knows by the event's task id already
/// read (`known`).
async fn record_lapse_task_state<S: crate::store::Outbox + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
    event: &StreamResponse,
    known: Vec<crate::store::OutboxEntry>,
    now: Instant,
) {
    let (Some(task_id), Some(status)) = (event.task_id(), event.status()) else {
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
