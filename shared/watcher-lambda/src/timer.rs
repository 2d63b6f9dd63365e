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
//!
//! A firing that fails for a passing reason (the store throttled or failed, or the lapse queue
//! did not take the lapse task it determined) is tried again within seconds
//! ([`crate::redelivery`]): in the invocation first, then by the timer message's return after a
//! jittered backoff, or, for a schedule's direct fire, by Lambda's retry of the invocation.

use serde_json::Value;
use watcher_core::engine::{Input, TimerKey};
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_runtime::ports::{LapseQueue, Timers};
use watcher_runtime::store::Store;
use watcher_runtime::watcher::{ApplyError, Watcher};

use crate::redelivery::{receive_count, visibility_after, Invocation};

pub use crate::sweep::{
    follow_due, sweep, Following, FOLLOW_BUDGET, FOLLOW_PER_AGENT, REQUEUE_AFTER_SECS,
    REQUEUE_PER_AGENT,
};

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
    /// `ReportBatchItemFailures`): those whose record could not be read or written, and those
    /// whose lapse task the lapse queue did not take for a passing reason; each made visible
    /// again after its backoff ([`crate::redelivery::TIMER_REDELIVERY`]).
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
    /// The lapse was recorded but its lapse task not queued, for a passing reason: a retry of
    /// the invocation evaluates the timer again and hands the task over ([`crate::handover`]).
    #[error("lapse task not queued: {0}")]
    Enqueue(String),
}

impl From<TimerError> for lambda_runtime::Diagnostic {
    fn from(e: TimerError) -> Self {
        let error_type = match &e {
            TimerError::Malformed(_) => "NotRetryable.MalformedEvent",
            TimerError::Store(_) => "Retryable.Store",
            TimerError::Enqueue(_) => "Retryable.Enqueue",
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
/// comes first, so a slow card server never delays a lapse.
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
    let invocation = Invocation::unbounded();
    handle_with_cards_in(
        watcher,
        queue,
        timers,
        cards,
        following,
        event,
        now,
        &invocation,
    )
    .await
}

/// [`handle_with_cards`] within `invocation` (its deadline and the timer queue's visibility
/// changes: [`handle_in`]). The function's entry point.
///
/// # Errors
/// As [`handle_in`] (the cards are refreshed after a sweep even then).
#[allow(
    clippy::too_many_arguments,
    reason = "the function's parts, its event and its invocation, each borrowed"
)]
pub async fn handle_with_cards_in<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    cards: &(impl crate::cards::AgentCards + ?Sized),
    following: Option<&Following<'_>>,
    event: &Value,
    now: Instant,
    invocation: &Invocation<'_>,
) -> Result<TimerReport, TimerError> {
    if event.get("sweep").and_then(Value::as_bool) != Some(true) {
        cards.pick_up_all(now).await;
        return handle_in(watcher, queue, timers, following, event, now, invocation).await;
    }
    let swept = handle_in(watcher, queue, timers, following, event, now, invocation).await;
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

pub(crate) fn lapses_in(applied: &watcher_runtime::watcher::Applied) -> usize {
    applied
        .effects
        .iter()
        .filter(|e| matches!(e, watcher_core::engine::Effect::Lapsed(_)))
        .count()
}

/// Handles one event at `now` on this function's clock; a sweep follows lapse tasks with
/// `following` (`None`: it does not). Nothing is tried again inside the invocation and no
/// message's visibility is changed ([`Invocation::unbounded`]; the function runs [`handle_in`]).
///
/// # Errors
/// As [`handle_in`].
pub async fn handle<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    following: Option<&Following<'_>>,
    event: &Value,
    now: Instant,
) -> Result<TimerReport, TimerError> {
    let invocation = Invocation::unbounded();
    handle_in(watcher, queue, timers, following, event, now, &invocation).await
}

/// Handles one event at `now` within `invocation`: a passing store failure of a timer's
/// evaluation is tried again while the invocation's time allows ([`Invocation::may_retry`]),
/// and a timer-queue message handed back is made visible again after its backoff
/// ([`crate::redelivery`]).
///
/// # Errors
/// [`TimerError::Malformed`] for an event that is neither shape; [`TimerError::Store`] when the
/// record could not be read or written; [`TimerError::Enqueue`] when a schedule's fire recorded
/// a lapse whose lapse task the lapse queue did not take for a passing reason (Lambda's
/// asynchronous retry then hands it over). A timer-queue batch never fails as a whole: its
/// records are handed back one by one.
pub async fn handle_in<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    following: Option<&Following<'_>>,
    event: &Value,
    now: Instant,
    invocation: &Invocation<'_>,
) -> Result<TimerReport, TimerError> {
    if event.get("sweep").and_then(Value::as_bool) == Some(true) {
        return sweep(watcher, queue, following, now).await;
    }
    if let Some(records) = event.get("Records").and_then(Value::as_array) {
        return from_queue(watcher, queue, timers, records, now, invocation).await;
    }
    let input = watcher_aws::parse_timer_input(&event.to_string())
        .map_err(|e| TimerError::Malformed(e.to_string()))?;
    let done = evaluate(
        watcher,
        queue,
        (&input.tenant, &input.timer),
        now,
        true,
        invocation,
    )
    .await?;
    if done.left_unsent {
        tracing::warn!(timer = ?input.timer, "the fired timer's lapse task was not queued; failing the invocation so that Lambda runs it again");
        return Err(TimerError::Enqueue(format!(
            "timer {:?} of {}: the lapse queue did not take its lapse task",
            input.timer, input.tenant
        )));
    }
    Ok(TimerReport {
        evaluated: 1,
        lapses: done.lapses,
        handed_over: done.handed_over,
        ..TimerReport::default()
    })
}

/// What evaluating one timer came to.
struct Evaluation {
    /// Lapses determined.
    lapses: usize,
    /// Unsent lapse tasks of a replay handed over again ([`crate::handover`]).
    handed_over: usize,
    /// A lapse task of the timer's own lapse is recorded but not queued, for a reason that may
    /// pass: evaluating the timer again soon hands it over.
    left_unsent: bool,
}

/// Evaluates timer `key` of `tenant` at `now`, then, with `hand_over`, finishes a replay's
/// hand-over ([`crate::handover`]: a read of the subject when nothing lapsed). A store
/// failure that may pass (`ApplyError::unavailability`) is tried again after
/// `invocation.retry`'s backoff while [`Invocation::may_retry`] allows.
///
/// Only the timer's own lapse counts towards [`Evaluation::left_unsent`]: a lapse task of
/// another timer the same commit evaluated at once is not what a replay of this one hands over
/// (the sweep re-queues it).
async fn evaluate<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    (tenant, key): (&Tenant, &TimerKey),
    now: Instant,
    hand_over: bool,
    invocation: &Invocation<'_>,
) -> Result<Evaluation, ApplyError> {
    let input = Input::Timer(key.clone());
    let mut retry = 0;
    loop {
        let (applied, unsent) =
            crate::sink::noting_unsent(watcher.apply(tenant, &input, now)).await;
        match applied {
            Ok(applied) => {
                let own_unsent = unsent.iter().filter(|u| u.retryable).any(|u| {
                    applied.outbox.iter().any(|e| {
                        e.message_id == u.message_id
                            && e.agent == u.agent
                            && crate::handover::is_lapse_of(key, e)
                    })
                });
                let hand_over = if hand_over {
                    crate::handover::finish_hand_over(watcher, queue, tenant, key, &applied).await
                } else {
                    crate::handover::HandOver::default()
                };
                return Ok(Evaluation {
                    lapses: lapses_in(&applied),
                    handed_over: hand_over.handed,
                    left_unsent: own_unsent || hand_over.may_finish_later,
                });
            }
            Err(e) if e.unavailability().is_some() && invocation.may_retry(retry + 1) => {
                retry += 1;
                let waited = invocation.retry.pause(retry).await;
                tracing::info!(error = %e, timer = ?key, retry, ?waited, "evaluating the timer failed for a passing reason; trying again");
            }
            Err(e) => return Err(e),
        }
    }
}

/// The timer queue's batch: each record's `body` is a timer input, evaluated at `now` like a
/// schedule's (an early one lapses nothing and re-arms), or a [`watcher_aws::DisarmMessage`]
/// ([`disarm`]). A body that is neither is dropped with an error log (it can never succeed,
/// and the sweep covers every deadline); a store failure, a delete that may succeed later, or a
/// lapse task the lapse queue did not take for a passing reason reports the record for
/// redelivery, its visibility first changed to [`crate::redelivery::TIMER_REDELIVERY`]'s
/// backoff for its receive count (a failed change is logged: the queue's visibility timeout
/// then applies). The redelivered record's evaluation finds the lapse recorded and hands its
/// task over ([`crate::handover`]).
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
    invocation: &Invocation<'_>,
) -> Result<TimerReport, TimerError> {
    let outcomes = futures_util::future::join_all(
        records
            .iter()
            .map(|record| from_queue_record(watcher, queue, timers, record, now, invocation)),
    )
    .await;
    let mut report = TimerReport::default();
    let mut back = Vec::new();
    for (record, outcome) in records.iter().zip(outcomes) {
        match outcome {
            RecordOutcome::Disarmed {
                lapses,
                handed_over,
            } => {
                report.disarmed += 1;
                report.lapses += lapses;
                report.handed_over += handed_over;
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
            RecordOutcome::Redeliver { lapses } => {
                report.lapses += lapses;
                let id = record
                    .get("messageId")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if !id.is_empty() {
                    report.batch_item_failures.push(ItemFailure {
                        item_identifier: id.to_owned(),
                    });
                    back.push(record);
                }
            }
        }
    }
    // Each handed-back message returns after its backoff, not the queue's 720 s; the calls at
    // once (at most a batch's ten), all before the answer, while the receipt handles hold.
    futures_util::future::join_all(back.into_iter().map(|record| redeliver(record, invocation)))
        .await;
    Ok(report)
}

/// Makes the handed-back `record` visible again after [`Invocation::redeliver`]'s backoff for
/// its receive count; a failure is logged (the queue's visibility timeout then applies).
async fn redeliver(record: &Value, invocation: &Invocation<'_>) {
    let Some(receipt) = record.get("receiptHandle").and_then(Value::as_str) else {
        return;
    };
    let id = record
        .get("messageId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let received = receive_count(record);
    let seconds = visibility_after(&invocation.redeliver, received);
    match invocation
        .redelivery
        .redeliver_after(receipt, seconds)
        .await
    {
        Ok(()) => {
            tracing::info!(sqs_message_id = %id, received, seconds, "timer message handed back; it returns after its backoff");
        }
        Err(e) => {
            tracing::warn!(error = %e, sqs_message_id = %id, received, seconds, "could not set when a handed-back timer message returns; the queue's visibility timeout (720 s) applies");
        }
    }
}

/// What one timer-queue record came to.
enum RecordOutcome {
    /// A deferred schedule delete, done, and its timer evaluated: lapses determined, and a
    /// redelivered one's unsent lapse tasks handed over again.
    Disarmed { lapses: usize, handed_over: usize },
    /// A timer evaluated: lapses determined, and unsent lapse tasks of a replay handed over
    /// again ([`crate::handover`]).
    Evaluated { lapses: usize, handed_over: usize },
    /// Neither shape: dropped (logged).
    Dropped,
    /// To be received again (logged), after the lapses it determined, if any (its lapse task
    /// not queued).
    Redeliver { lapses: usize },
}

/// One record of [`from_queue`]'s batch.
async fn from_queue_record<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    record: &Value,
    now: Instant,
    invocation: &Invocation<'_>,
) -> RecordOutcome {
    let id = record
        .get("messageId")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let body = record.get("body").and_then(Value::as_str).unwrap_or("");
    if let Some(message) = watcher_aws::parse_disarm_message(body) {
        // A disarm received again may follow an evaluation whose lapse task was not queued: it
        // hands that over. On its first receive there is nothing to finish, and no read is made
        // for it (a satisfied expectation's disarm costs what it did).
        let again = receive_count(record) > 1;
        return match disarm(watcher, queue, timers, &message, now, again, invocation).await {
            Ok(done) if done.left_unsent => {
                tracing::warn!(sqs_message_id = %id, "the disarmed timer's lapse task was not queued; redelivered");
                RecordOutcome::Redeliver {
                    lapses: done.lapses,
                }
            }
            Ok(done) => RecordOutcome::Disarmed {
                lapses: done.lapses,
                handed_over: done.handed_over,
            },
            Err(e) => {
                tracing::warn!(error = %e, sqs_message_id = %id, "schedule delete failed; redelivered");
                RecordOutcome::Redeliver { lapses: 0 }
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
    match evaluate(
        watcher,
        queue,
        (&input.tenant, &input.timer),
        now,
        true,
        invocation,
    )
    .await
    {
        Ok(done) if done.left_unsent => {
            tracing::warn!(sqs_message_id = %id, timer = ?input.timer, "the timer's lapse task was not queued; redelivered to hand it over");
            RecordOutcome::Redeliver {
                lapses: done.lapses,
            }
        }
        Ok(done) => RecordOutcome::Evaluated {
            lapses: done.lapses,
            handed_over: done.handed_over,
        },
        Err(e) => {
            tracing::warn!(error = %e, sqs_message_id = %id, "timer message failed; redelivered");
            RecordOutcome::Redeliver { lapses: 0 }
        }
    }
}

/// A schedule delete an input's commit deferred to the timer queue: deletes the schedule, then
/// evaluates the timer as a wake would ([`evaluate`], finishing a replay's hand-over when
/// `hand_over`), so a timer the record armed again since (a re-anchor within the second) is
/// armed again rather than lost, and one now due lapses. The evaluation of a timer the record
/// no longer holds changes nothing.
///
/// # Errors
/// A retryable failure of the delete, or the store's: redeliver. A permanent failure of the
/// delete (the schedule group is gone) is logged and the message dropped.
async fn disarm<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    message: &watcher_aws::DisarmMessage,
    now: Instant,
    hand_over: bool,
    invocation: &Invocation<'_>,
) -> Result<Evaluation, String> {
    match timers.disarm(&message.tenant, &message.disarm).await {
        Ok(()) => {}
        Err(e) if e.is_retryable() => return Err(e.to_string()),
        Err(e) => {
            tracing::error!(error = %e, timer = ?message.disarm, "schedule delete refused; dropped");
        }
    }
    evaluate(
        watcher,
        queue,
        (&message.tenant, &message.disarm),
        now,
        hand_over,
        invocation,
    )
    .await
    .map_err(|e| e.to_string())
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
