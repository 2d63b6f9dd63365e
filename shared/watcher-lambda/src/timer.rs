//! The timer function: target of every per-expectation schedule (`{"tenant", "timer"}`), of the
//! `rate(5 minutes)` sweep (`{"sweep": true}`) and of the timer queue's event source mapping (an
//! SQS event whose bodies are the same `{"tenant", "timer"}`, delayed to the exact deadline:
//! docs/aws-latency.md).
//!
//! The sweep also follows delivered lapse tasks whose agent was asked for no push
//! notifications: those due by the sweep's instant are asked for with `GetTask`, from the
//! outbox's per-agent follow index (see [`sweep`]), so on AWS a lapse task's state moves at most
//! one sweep (5 minutes) after its next poll falls due; and the origin tasks followed in the
//! table (origin-task reconciliation), the same way.
//!
//! Timers are hints: the record decides. A wake before the deadline on this function's own
//! clock lapses nothing and re-arms the timer (a delayed message when a timer queue is
//! configured); a wake after it lapses late, once.

use futures_util::stream::{self, StreamExt};
use serde_json::Value;
use watcher_core::engine::Input;
use watcher_core::time::Instant;
use watcher_delivery::deliver::Submitter;
use watcher_delivery::endpoint::Endpoints;
use watcher_delivery::reconcile::Reconciler;
use watcher_runtime::directory::AgentEntry;
use watcher_runtime::ports::{LapseQueue, Timers};
use watcher_runtime::store::{DeliveryState, OutboxEntry, Store};
use watcher_runtime::watcher::{ApplyError, Watcher};

/// How long a queued lapse task may wait past its next attempt before the sweep re-queues it
/// (the submitter normally picks it up within seconds).
pub const REQUEUE_AFTER_SECS: i64 = 120;

/// The most lapse tasks one sweep re-queues per agent, read from the outbox's per-agent index
/// (oldest next attempt first): one agent's backlog never hides another agent's lost message,
/// and a sweep's reads grow with the configured agents, not with any agent's backlog.
pub const REQUEUE_PER_AGENT: usize = 100;

/// The most followed lapse tasks one sweep polls per agent, read from the outbox's follow index
/// (earliest next poll first); the rest are polled at the next sweep.
pub const FOLLOW_PER_AGENT: usize = 100;

/// `GetTask` polls in flight at once during a sweep, over all agents.
const FOLLOW_IN_FLIGHT: usize = 8;

/// How many agents' reads a sweep makes at once (re-queueing, the open gauge, following).
const AGENTS_AT_ONCE: usize = 8;

/// What the sweep needs to follow lapse tasks with `GetTask` (the timer function's `env::Parts`).
pub struct Following<'a> {
    /// Records each poll (`Submitter::record_poll_result`, its retry policy's backoff).
    pub submitter: &'a Submitter,
    /// Where each agent is.
    pub endpoints: &'a (dyn Endpoints + 'a),
    /// Feeds each `GetTask` answer through the push ingest path (`Reconciler::poll_lapse_task`),
    /// as serve's lanes do; `None` records the state only (`Submitter::poll_one`).
    pub reconciler: Option<&'a Reconciler>,
    /// How long each following pass (lapse tasks, then origin tasks) may take
    /// ([`FOLLOW_BUDGET`] in the function): an agent that holds its answers never makes the sweep
    /// overrun the function's timeout. A poll cut short records nothing and is due again at the
    /// next sweep.
    pub budget: std::time::Duration,
}

/// Each following pass's budget in the timer function: two passes and the sweep's own work stay
/// well within the function's 120 s timeout (template.yaml).
pub const FOLLOW_BUDGET: std::time::Duration = std::time::Duration::from_secs(40);

/// What one invocation did.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimerReport {
    /// Timers evaluated.
    pub evaluated: usize,
    /// Schedules deleted for commits that deferred it to the timer queue.
    #[serde(skip_serializing_if = "is_zero")]
    pub disarmed: usize,
    /// Lapses determined.
    pub lapses: usize,
    /// Lapse tasks re-queued by the sweep.
    pub requeued: usize,
    /// Unsent lapse tasks a replayed timer handed over again ([`crate::handover`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub handed_over: usize,
    /// Agent cards the sweep tried to read (unavailable, stale, or older than the maximum age:
    /// [`crate::cards`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub cards_tried: usize,
    /// Agent cards the sweep read and kept in the table.
    #[serde(skip_serializing_if = "is_zero")]
    pub cards_read: usize,
    /// Lifecycle descriptors the sweep's registration probe kept in the table (`probe = true`).
    #[serde(skip_serializing_if = "is_zero")]
    pub probed: usize,
    /// Followed lapse tasks the sweep asked for with `GetTask`.
    pub followed: usize,
    /// Followed origin tasks the sweep asked for with `GetTask` (origin-task reconciliation).
    pub origins: usize,
    /// Whether a following pass ran out of its budget ([`Following::budget`]); what it had not
    /// recorded is polled at the next sweep.
    pub cut_short: bool,
    /// The timer queue's messages to redeliver (SQS partial batch response,
    /// `ReportBatchItemFailures`): those whose record could not be read or written.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub batch_item_failures: Vec<ItemFailure>,
}

/// One SQS message to redeliver: `{"itemIdentifier": "<SQS messageId>"}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemFailure {
    /// The SQS `messageId` of the record.
    pub item_identifier: String,
}

/// A failure, typed for Lambda's retry (style: `Diagnostic` with a retryability `error_type`).
#[derive(Debug, thiserror::Error)]
pub enum TimerError {
    /// The event is not a timer input or a sweep: retrying cannot help.
    #[error("not a timer event: {0}")]
    Malformed(String),
    /// The store failed: a retry may succeed.
    #[error(transparent)]
    Store(#[from] ApplyError),
}

impl From<TimerError> for lambda_runtime::Diagnostic {
    fn from(e: TimerError) -> Self {
        let error_type = match &e {
            TimerError::Malformed(_) => "NotRetryable.MalformedEvent",
            TimerError::Store(_) => "Retryable.Store",
        };
        lambda_runtime::Diagnostic {
            error_type: error_type.into(),
            error_message: e.to_string(),
        }
    }
}

/// [`handle`], then `cards` kept up to date: after a sweep, the cards due for a re-read are read
/// and the registration probe run ([`crate::cards::AgentCards::refresh`]), counted in the report;
/// before any other event, the cards and descriptors other functions kept are picked up for
/// agents this instance lacks ([`crate::cards::AgentCards::pick_up_all`]). The sweep's own work
/// comes first, so a slow card server never delays a lapse. The function's entry point.
///
/// # Errors
/// As [`handle`] (the cards are refreshed after a sweep even then).
pub async fn handle_with_cards<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    cards: &(impl crate::cards::AgentCards + ?Sized),
    following: Option<&Following<'_>>,
    event: &Value,
    now: Instant,
) -> Result<TimerReport, TimerError> {
    if event.get("sweep").and_then(Value::as_bool) != Some(true) {
        cards.pick_up_all(now).await;
        return handle(watcher, queue, timers, following, event, now).await;
    }
    let swept = handle(watcher, queue, timers, following, event, now).await;
    let read = cards.refresh(now).await;
    let mut report = swept?;
    report.cards_tried = read.tried;
    report.cards_read = read.read;
    report.probed = read.probed;
    Ok(report)
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn lapses_in(applied: &watcher_runtime::watcher::Applied) -> usize {
    applied
        .effects
        .iter()
        .filter(|e| matches!(e, watcher_core::engine::Effect::Lapsed(_)))
        .count()
}

/// Handles one event at `now` on this function's clock; a sweep follows lapse tasks with
/// `following` (`None`: it does not).
///
/// # Errors
/// [`TimerError::Malformed`] for an event that is neither shape; [`TimerError::Store`] when the
/// record could not be read or written.
pub async fn handle<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    following: Option<&Following<'_>>,
    event: &Value,
    now: Instant,
) -> Result<TimerReport, TimerError> {
    if event.get("sweep").and_then(Value::as_bool) == Some(true) {
        return sweep(watcher, queue, following, now).await;
    }
    if let Some(records) = event.get("Records").and_then(Value::as_array) {
        return from_queue(watcher, queue, timers, records, now).await;
    }
    let input = watcher_aws::parse_timer_input(&event.to_string())
        .map_err(|e| TimerError::Malformed(e.to_string()))?;
    let input_timer = Input::Timer(input.timer.clone());
    let applied = watcher.apply(&input.tenant, &input_timer, now).await?;
    let handed_over =
        crate::handover::finish_hand_over(watcher, queue, &input.tenant, &input.timer, &applied)
            .await;
    Ok(TimerReport {
        evaluated: 1,
        lapses: lapses_in(&applied),
        handed_over,
        ..TimerReport::default()
    })
}

/// The timer queue's batch: each record's `body` is a timer input, evaluated at `now` like a
/// schedule's (an early one lapses nothing and re-arms), or a [`watcher_aws::DisarmMessage`]
/// ([`disarm`]). A body that is neither is dropped with an error log (it can never succeed,
/// and the sweep covers every deadline); a store failure, or a delete that may succeed later,
/// reports the record for redelivery.
///
/// The records are handled at once, not one after another: each is its own input, committed on
/// its own conditions (two of one subject conflict and the loser applies again, as two
/// invocations' would), and the timer queue is a standard queue with no order to keep. A batch
/// of ten deadlines due together then takes about one record's time, not ten.
async fn from_queue<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    records: &[Value],
    now: Instant,
) -> Result<TimerReport, TimerError> {
    let outcomes = futures_util::future::join_all(
        records
            .iter()
            .map(|record| from_queue_record(watcher, queue, timers, record, now)),
    )
    .await;
    let mut report = TimerReport::default();
    for (record, outcome) in records.iter().zip(outcomes) {
        match outcome {
            RecordOutcome::Disarmed { lapses } => {
                report.disarmed += 1;
                report.lapses += lapses;
            }
            RecordOutcome::Evaluated {
                lapses,
                handed_over,
            } => {
                report.evaluated += 1;
                report.lapses += lapses;
                report.handed_over += handed_over;
            }
            RecordOutcome::Dropped => {}
            RecordOutcome::Redeliver => {
                let id = record
                    .get("messageId")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !id.is_empty() {
                    report.batch_item_failures.push(ItemFailure {
                        item_identifier: id.to_owned(),
                    });
                }
            }
        }
    }
    Ok(report)
}

/// What one timer-queue record came to.
enum RecordOutcome {
    /// A deferred schedule delete, done, and its timer evaluated: lapses determined.
    Disarmed { lapses: usize },
    /// A timer evaluated: lapses determined, and unsent lapse tasks of a replay handed over
    /// again ([`crate::handover`]).
    Evaluated { lapses: usize, handed_over: usize },
    /// Neither shape: dropped (logged).
    Dropped,
    /// To be received again (logged).
    Redeliver,
}

/// One record of [`from_queue`]'s batch.
async fn from_queue_record<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    record: &Value,
    now: Instant,
) -> RecordOutcome {
    let id = record
        .get("messageId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let body = record.get("body").and_then(Value::as_str).unwrap_or("");
    if let Some(message) = watcher_aws::parse_disarm_message(body) {
        return match disarm(watcher, timers, &message, now).await {
            Ok(applied) => RecordOutcome::Disarmed {
                lapses: lapses_in(&applied),
            },
            Err(e) => {
                tracing::warn!(error = %e, sqs_message_id = %id, "schedule delete failed; redelivered");
                RecordOutcome::Redeliver
            }
        };
    }
    let input = match watcher_aws::parse_timer_input(body) {
        Ok(input) => input,
        Err(e) => {
            tracing::error!(error = %e, sqs_message_id = %id, "not a timer message; dropped");
            return RecordOutcome::Dropped;
        }
    };
    match watcher
        .apply(&input.tenant, &Input::Timer(input.timer.clone()), now)
        .await
    {
        Ok(applied) => RecordOutcome::Evaluated {
            lapses: lapses_in(&applied),
            handed_over: crate::handover::finish_hand_over(
                watcher,
                queue,
                &input.tenant,
                &input.timer,
                &applied,
            )
            .await,
        },
        Err(e) => {
            tracing::warn!(error = %e, sqs_message_id = %id, "timer message failed; redelivered");
            RecordOutcome::Redeliver
        }
    }
}

/// A schedule delete an input's commit deferred to the timer queue: deletes the schedule, then
/// evaluates the timer as a wake would, so a timer the record armed again since (a re-anchor
/// within the second) is armed again rather than lost, and one now due lapses. The evaluation
/// of a timer the record no longer holds changes nothing.
///
/// # Errors
/// A retryable failure of the delete, or the store's: redeliver. A permanent failure of the
/// delete (the schedule group is gone) is logged and the message dropped.
async fn disarm<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    timers: &dyn Timers,
    message: &watcher_aws::DisarmMessage,
    now: Instant,
) -> Result<watcher_runtime::watcher::Applied, String> {
    match timers.disarm(&message.tenant, &message.disarm).await {
        Ok(()) => {}
        Err(e) if e.is_retryable() => return Err(e.to_string()),
        Err(e) => {
            tracing::error!(error = %e, timer = ?message.disarm, "schedule delete refused; dropped");
        }
    }
    watcher
        .apply(&message.tenant, &Input::Timer(message.disarm.clone()), now)
        .await
        .map_err(|e| e.to_string())
}

/// The sweep: evaluates every deadline and horizon due by `now` whatever happened to its
/// schedule (a timer whose record cannot be written is skipped, logged, counted as
/// `TimerFailures` and fired at the next sweep: `Watcher::fire_due`), and re-queues lapse tasks
/// still queued well past their next attempt (a crash between commit and enqueue, or a lost
/// message): for each agent the watcher submits for, at most [`REQUEUE_PER_AGENT`]. An agent
/// whose queued lapse tasks cannot be read is skipped until the next sweep. Re-queueing is
/// safe: the submitter claims the entry before posting it and never sends a delivered or
/// claimed `messageId` again (`Outbox::outbox_claim`).
///
/// With `following`, it then polls the delivered lapse tasks the watcher follows whose next poll
/// is due by `now` ([`follow_due`]), so a lapse task whose agent never pushes still reaches its
/// final state, and the origin tasks followed in the table whose next poll is due
/// (`Reconciler::poll_stored_due`), so a cancel never pushed still withdraws.
///
/// # Errors
/// [`TimerError::Store`] when the due timers cannot be listed.
pub async fn sweep<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    following: Option<&Following<'_>>,
    now: Instant,
) -> Result<TimerReport, TimerError> {
    let fired = watcher.fire_due(now).await?;
    let mut report = TimerReport {
        evaluated: fired.len(),
        lapses: fired.iter().map(|(_, a)| lapses_in(a)).sum(),
        ..TimerReport::default()
    };
    let stale_before = now
        .checked_sub(jiff::SignedDuration::from_secs(REQUEUE_AFTER_SECS))
        .unwrap_or(now);
    // Each agent's reads are by key and bounded; AGENTS_AT_ONCE agents at a time, so a sweep
    // over many agents takes about what its slowest reads take, not their sum.
    let submitting = submitting_agents(watcher);
    let requeued: Vec<usize> = stream::iter(&submitting)
        .map(|agent| requeue_stuck(watcher, queue, agent, stale_before))
        .buffer_unordered(AGENTS_AT_ONCE)
        .collect()
        .await;
    report.requeued = requeued.into_iter().sum();
    // The open-expectations gauge: one counter read per configured agent, never a listing.
    // Read after `fire_due` closed what was due, the counter is the live count but for what
    // could not be fired (`open_expectations_by_counter`).
    let everyone = watcher.directory.entries();
    let counts: Vec<u64> = stream::iter(&everyone)
        .map(|agent| async move {
            watcher_runtime::metrics::open_expectations_by_counter(
                &*watcher.store,
                &agent.tenant,
                &agent.profile.id,
                now,
            )
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, agent = %agent.profile.id, "cannot read the agent's live count");
                0
            })
        })
        .buffer_unordered(AGENTS_AT_ONCE)
        .collect()
        .await;
    let open: u64 = counts.into_iter().sum();
    watcher.recorder().open_expectations(open);
    // Last, each pass within its budget: a slow agent delays only the polls after it.
    if let Some(following) = following {
        match tokio::time::timeout(following.budget, follow_due(watcher, following, now)).await {
            Ok(n) => report.followed = n,
            Err(_) => {
                tracing::warn!(budget = ?following.budget, "following lapse tasks ran out of the sweep's budget; the rest at the next sweep");
                report.cut_short = true;
            }
        }
        if let Some(reconciler) = following.reconciler {
            match tokio::time::timeout(following.budget, reconciler.poll_stored_due(now)).await {
                Ok(n) => report.origins = n,
                Err(_) => {
                    tracing::warn!(budget = ?following.budget, "following origin tasks ran out of the sweep's budget; the rest at the next sweep");
                    report.cut_short = true;
                }
            }
        }
    }
    Ok(report)
}

/// The agents the watcher submits lapse tasks for, from its directory.
fn submitting_agents<S: Store + ?Sized>(watcher: &Watcher<S>) -> Vec<AgentEntry> {
    watcher
        .directory
        .entries()
        .into_iter()
        .filter(|a| a.submits_lapses)
        .collect()
}

/// Re-queues `agent`'s lapse tasks still queued with their next attempt before `stale_before`,
/// at most [`REQUEUE_PER_AGENT`]; answers how many were re-queued. Failures are logged and left
/// to the next sweep.
async fn requeue_stuck<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    agent: &AgentEntry,
    stale_before: Instant,
) -> usize {
    let stuck = match watcher
        .store
        .outbox_of_agent(
            &agent.tenant,
            &agent.profile.id,
            DeliveryState::Queued,
            Some(stale_before),
            REQUEUE_PER_AGENT,
        )
        .await
    {
        Ok(stuck) => stuck,
        Err(e) => {
            tracing::warn!(error = %e, agent = %agent.profile.id, "reading the agent's queued lapse tasks failed; next sweep");
            return 0;
        }
    };
    let mut requeued = 0;
    for (entry, result) in stuck.iter().zip(queue.enqueue_all(&stuck).await) {
        match result {
            Ok(()) => requeued += 1,
            Err(e) => {
                tracing::warn!(error = %e, message_id = %entry.message_id, "re-queueing failed; next sweep");
            }
        }
    }
    requeued
}

/// Polls, with `GetTask`, the followed lapse tasks whose next poll is due by `now`: for each agent
/// the watcher submits for, at most [`FOLLOW_PER_AGENT`] from the outbox's follow index
/// (`Outbox::outbox_following`, a keyed read: a pass costs what is due, never the outbox's size),
/// `FOLLOW_IN_FLIGHT` at once. Each answer is recorded as serve's lanes record it (the task's
/// state, the next poll backing off from `poll_first` to `max_backoff`, following ending at a
/// terminal or interrupted state or after `give_up_after`). An agent whose followed lapse tasks
/// cannot be read, or a poll that cannot be recorded, is logged and left to the next sweep.
/// Answers how many were polled.
pub async fn follow_due<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    following: &Following<'_>,
    now: Instant,
) -> usize {
    let submitting = submitting_agents(watcher);
    let read: Vec<Vec<OutboxEntry>> = stream::iter(&submitting)
        .map(|agent| async move {
            watcher
                .store
                .outbox_following(&agent.tenant, &agent.profile.id, Some(now), FOLLOW_PER_AGENT)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, agent = %agent.profile.id, "reading the agent's followed lapse tasks failed; next sweep");
                    Vec::new()
                })
        })
        .buffer_unordered(AGENTS_AT_ONCE)
        .collect()
        .await;
    let due: Vec<OutboxEntry> = read.into_iter().flatten().collect();
    let polled = due.len();
    stream::iter(due)
        .for_each_concurrent(FOLLOW_IN_FLIGHT, |entry| async move {
            let recorded = match following.reconciler {
                Some(reconciler) => {
                    let result = reconciler.poll_lapse_task(&entry).await;
                    following
                        .submitter
                        .record_poll_result(&*watcher.store, &entry, result, now)
                        .await
                }
                None => {
                    following
                        .submitter
                        .poll_one(&*watcher.store, following.endpoints, &entry, now)
                        .await
                }
            };
            if let Err(e) = recorded {
                tracing::warn!(error = %e, message_id = %entry.message_id, "recording a GetTask poll failed; next sweep");
            }
        })
        .await;
    polled
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use serde_json::json;
    use watcher_core::card::declaration_from_card;
    use watcher_core::engine::{AgentProfile, TimerKey};
    use watcher_core::ids::{AgentId, ExpectationId, Tenant};
    use watcher_core::lapse::Delivery;
    use watcher_core::record::LapseKind;
    use watcher_core::settings::Settings;
    use watcher_runtime::directory::{AgentEntry, Directory};
    use watcher_runtime::memory::MemoryStore;
    use watcher_runtime::ports::PortError;
    use watcher_runtime::store::{Commit, OutboxEntry};

    use super::*;
    use watcher_runtime::store::Records as _;

    /// A lapse queue that keeps the `(agent, messageId)` of every entry enqueued.
    #[derive(Default)]
    struct Kept(Mutex<Vec<(String, String)>>);

    #[async_trait::async_trait]
    impl LapseQueue for Kept {
        async fn enqueue(&self, entry: &OutboxEntry) -> Result<(), PortError> {
            self.0
                .lock()
                .unwrap()
                .push((entry.agent.to_string(), entry.message_id.clone()));
            Ok(())
        }
    }

    fn agent_entry(tenant: &Tenant, id: &str) -> AgentEntry {
        let card = json!({
            "name": id,
            "skills": [{ "id": "handle_lapse", "name": "Handle lapse" }],
            "capabilities": { "extensions": [{
                "uri": watcher_core::EXPECTATIONS_URI,
                "params": { "keepsTime": false, "lapseSkill": "handle_lapse", "kinds": [
                    { "kind": "shipment.manifest", "subjectType": "shipment",
                      "describes": "the manifest", "basis": "observed" }] }
            }]}
        });
        AgentEntry {
            tenant: tenant.clone(),
            profile: AgentProfile {
                id: AgentId::parse(id).unwrap(),
                declaration: declaration_from_card(&card).unwrap(),
            },
            submits_lapses: true,
            delivery: Delivery::default(),
        }
    }

    fn queued(tenant: &Tenant, agent: &str, n: usize, at: Instant) -> OutboxEntry {
        OutboxEntry::queued(
            tenant.clone(),
            AgentId::parse(agent).unwrap(),
            format!("lapse:e-{n}:overdue:{at}"),
            ExpectationId::parse(format!("e-{n}")).unwrap(),
            LapseKind::Overdue,
            at,
            json!({}),
        )
    }

    /// Schedule deletes that wait until five are under way at once: handled one after
    /// another, the first would wait for ever.
    struct Gathering(tokio::sync::Barrier);

    #[async_trait::async_trait]
    impl Timers for Gathering {
        async fn arm(&self, _: &Tenant, _: &TimerKey, _: Instant) -> Result<(), PortError> {
            Ok(())
        }

        async fn disarm(&self, _: &Tenant, _: &TimerKey) -> Result<(), PortError> {
            self.0.wait().await;
            Ok(())
        }
    }

    /// A timer-queue batch's records are handled at once: five schedule deletes each waiting
    /// for the other four all finish (the batch takes one record's time, not five).
    #[tokio::test]
    async fn a_timer_queue_batch_is_handled_at_once() {
        let t = Tenant::default_tenant();
        let watcher = Watcher::new(
            Arc::new(MemoryStore::new()),
            Directory::new(),
            Settings::default(),
        );
        let records: Vec<Value> = (0..5)
            .map(|n| {
                let message = watcher_aws::DisarmMessage {
                    tenant: t.clone(),
                    disarm: TimerKey {
                        subject: watcher_core::ids::Subject::parse("shipment", &format!("S-{n}"))
                            .unwrap(),
                        expectation: watcher_core::ids::ExpectationRef {
                            agent: AgentId::parse("booking").unwrap(),
                            id: ExpectationId::parse(format!("e-{n}")).unwrap(),
                        },
                        kind: watcher_core::engine::TimerKind::Deadline,
                    },
                };
                json!({ "messageId": format!("m-{n}"), "body": serde_json::to_string(&message).unwrap() })
            })
            .collect();
        let timers = Gathering(tokio::sync::Barrier::new(5));
        let now = Instant::parse("2026-09-10T13:00:00Z").unwrap();
        let report = tokio::time::timeout(
            std::time::Duration::from_secs(10),
            handle(
                &watcher,
                &Kept::default(),
                &timers,
                None,
                &json!({ "Records": records }),
                now,
            ),
        )
        .await
        .expect("the five deletes run at once")
        .unwrap();
        assert_eq!(report.disarmed, 5);
        assert!(report.batch_item_failures.is_empty());
    }

    /// One agent with 5,000 lapse tasks queued (lapsed first), another with one lost message:
    /// the sweep re-queues the other agent's, and at most `REQUEUE_PER_AGENT` of the backlog.
    #[tokio::test]
    async fn one_agents_backlog_never_hides_another_agents_lost_message() {
        let t = Tenant::default_tenant();
        let store = Arc::new(MemoryStore::new());
        let directory = Directory::new();
        directory.insert(agent_entry(&t, "backlog"));
        directory.insert(agent_entry(&t, "quiet"));
        let at = Instant::parse("2026-09-10T12:00:00Z").unwrap();
        let backlog: Vec<OutboxEntry> = (0..5000).map(|n| queued(&t, "backlog", n, at)).collect();
        store
            .commit(
                &t,
                Commit {
                    outbox: backlog,
                    ..Commit::default()
                },
            )
            .await
            .unwrap();
        let later = Instant::parse("2026-09-10T12:01:00Z").unwrap();
        store
            .commit(
                &t,
                Commit {
                    outbox: vec![queued(&t, "quiet", 9, later)],
                    ..Commit::default()
                },
            )
            .await
            .unwrap();
        let watcher = Watcher::new(Arc::clone(&store), directory, Settings::default());
        let queue = Kept::default();
        let now = Instant::parse("2026-09-10T13:00:00Z").unwrap();
        let report = sweep(&watcher, &queue, None, now).await.unwrap();
        let kept = queue.0.lock().unwrap().clone();
        assert!(
            kept.contains(&("quiet".into(), format!("lapse:e-9:overdue:{later}"))),
            "the quiet agent's lost message is re-queued"
        );
        let of_backlog = kept.iter().filter(|(a, _)| a == "backlog").count();
        assert_eq!(of_backlog, REQUEUE_PER_AGENT);
        assert_eq!(report.requeued, REQUEUE_PER_AGENT + 1);
    }
}
