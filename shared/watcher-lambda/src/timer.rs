//! The timer function: target of every per-expectation schedule (`{"tenant", "timer"}`), of the
//! sweep duties' schedules (`{"sweep": "<duty>"}`, [`crate::sweep`]) and of the timer queue's
//! event source mapping (an SQS event whose bodies are the same `{"tenant", "timer"}`, delayed
//! to the exact deadline, a schedule delete, or a lane's delayed wake-up:
//! docs/aws-latency.md). The event is read once into a [`TimerEvent`]
//! ([`crate::timer_event`]); a shape it is not is refused with a logged error.
//!
//! Timers are hints: the record decides. A wake before the deadline on this function's own
//! clock lapses nothing and re-arms the timer (a delayed message when a timer queue is
//! configured); a wake after it lapses late, once.
//!
//! A firing that fails for a passing reason (the store throttled or failed, or the lapse queue
//! did not take the lapse task it determined) is tried again within seconds
//! ([`crate::redelivery`]): in the invocation first, then by the timer message's return after a
//! jittered backoff. A schedule's direct fire is handed to the timer queue (the timer armed again
//! [`FIRE_AGAIN_AFTER`] later), not to Lambda's asynchronous retries, which are off for this
//! function (template.yaml `TimerAsyncRetries`: they would also run a sweep duty twice at once).

use std::time::Duration;

use serde_json::Value;
use watcher_aws::{TimerQueueMessage, WakeLane};
use watcher_core::engine::{Input, TimerKey};
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_runtime::ports::{LapseQueue, Timers};
use watcher_runtime::store::Store;
use watcher_runtime::watcher::{ApplyError, Watcher};

use crate::redelivery::{visibility_after, Invocation};
use crate::sweep::{run_duties, Notify, SweepParts};
use crate::timer_event::{TimerEvent, TimerRecord};

pub use crate::sweep::{
    follow_due, sweep, Following, FOLLOW_BUDGET, FOLLOW_MARGIN, FOLLOW_PER_AGENT,
    REQUEUE_AFTER_SECS, REQUEUE_PER_AGENT,
};

/// How long after a schedule's failed fire its timer is evaluated again: the timer is armed
/// again at `now` + this, which the timer queue carries as a delayed message (a store failure
/// that outlasted the invocation's retries, or a lapse task the lapse queue did not take).
pub const FIRE_AGAIN_AFTER: Duration = Duration::from_secs(2);

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
    /// Schedules' fires that failed for a passing reason and were handed to the timer queue
    /// ([`FIRE_AGAIN_AFTER`]).
    #[serde(skip_serializing_if = "is_zero")]
    pub fired_again: usize,
    /// Lanes woken at their delayed wake-up (`LapseQueue::wake`).
    #[serde(skip_serializing_if = "is_zero")]
    pub lanes_woken: usize,
    /// Lane wake-ups received before their instant and sent on again (a wait beyond SQS's 15
    /// minutes of delay).
    #[serde(skip_serializing_if = "is_zero")]
    pub wakes_sent_on: usize,
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
    /// Notifications the `notify` duty delivered.
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub notified: u64,
    /// Notifications the `notify` duty could not deliver (tried again at a later round).
    #[serde(skip_serializing_if = "is_zero_u64")]
    pub notify_failed: u64,
    /// Whether a duty ran out of its budget ([`crate::sweep::run_duties`],
    /// [`Following::budget`]); what it had not done is done at its next tick.
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
    /// The event is none of the function's shapes ([`TimerEvent::parse`]): retrying cannot help.
    /// Look at what invoked the function with it.
    #[error("not a timer event: {0}")]
    Malformed(String),
    /// The store failed: a retry may succeed.
    #[error(transparent)]
    Store(#[from] ApplyError),
    /// The lapse was recorded but its lapse task not queued, for a passing reason, and the
    /// timer could not be handed to the timer queue either: the sweep's `requeue` duty wakes
    /// its lane.
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

/// What the timer function works with, each borrowed from its cold start.
pub struct TimerParts<'a, S: Store + ?Sized> {
    /// The watcher: store, directory, settings, recorder.
    pub watcher: &'a Watcher<S>,
    /// The lapse queue: lapse tasks determined here, lane wake-ups.
    pub queue: &'a dyn LapseQueue,
    /// The schedules and the timer queue (re-arms, deferred deletes).
    pub timers: &'a dyn Timers,
    /// The configured agents' cards: picked up before a timer's evaluation, refreshed by the
    /// `cards` duty; `None`: neither.
    pub cards: Option<&'a dyn crate::cards::AgentCards>,
    /// What the `follow` and `origins` duties poll with; `None`: they do nothing.
    pub following: Option<&'a Following<'a>>,
    /// The channels the `notify` duty tells; `None`: it does nothing.
    pub notify: Option<&'a dyn Notify>,
}

/// Handles the function's `event` at `now` within `invocation`: a schedule's fire
/// (`fire`), a timer-queue batch (`from_queue`) or a sweep tick
/// ([`crate::sweep::run_duties`], its budgets from the invocation's deadline). Before a fire or
/// a batch, the cards other functions kept are picked up for agents this instance lacks.
///
/// # Errors
/// [`TimerError::Store`] when a schedule's fire could not be evaluated nor handed to the timer
/// queue, or when the `timers` duty cannot list the due timers; [`TimerError::Enqueue`] when a
/// fire's lapse task was not queued and the timer could not be handed to the timer queue. A
/// timer-queue batch never fails as a whole: its records are handed back one by one.
pub async fn handle_event<S: Store + ?Sized>(
    parts: &TimerParts<'_, S>,
    event: &TimerEvent,
    now: Instant,
    invocation: &Invocation<'_>,
) -> Result<TimerReport, TimerError> {
    match event {
        TimerEvent::Sweep(tick) => {
            let sweep = SweepParts {
                watcher: parts.watcher,
                queue: parts.queue,
                cards: parts.cards,
                following: parts.following,
                notify: parts.notify,
            };
            run_duties(&sweep, *tick, now, invocation.deadline).await
        }
        TimerEvent::Fire(input) => {
            if let Some(cards) = parts.cards {
                cards.pick_up_all(now).await;
            }
            fire(parts, &input.tenant, &input.timer, now, invocation).await
        }
        TimerEvent::Batch(records) => {
            if let Some(cards) = parts.cards {
                cards.pick_up_all(now).await;
            }
            Ok(from_queue(parts, records, now, invocation).await)
        }
    }
}

/// [`handle_with_cards_in`] with no deadline ([`Invocation::unbounded`]): nothing is tried again
/// inside the invocation and no message's visibility is changed.
///
/// # Errors
/// As [`handle_event`]; [`TimerError::Malformed`] for an event [`TimerEvent::parse`] refuses.
pub async fn handle_with_cards<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    cards: &impl crate::cards::AgentCards,
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

/// The JSON `event` read ([`TimerEvent::parse`]) and handled ([`handle_event`]) with `cards`
/// and no notification channels.
///
/// # Errors
/// As [`handle_event`]; [`TimerError::Malformed`] for an event [`TimerEvent::parse`] refuses.
#[allow(
    clippy::too_many_arguments,
    reason = "the function's parts, its event and its invocation, each borrowed"
)]
pub async fn handle_with_cards_in<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    cards: &impl crate::cards::AgentCards,
    following: Option<&Following<'_>>,
    event: &Value,
    now: Instant,
    invocation: &Invocation<'_>,
) -> Result<TimerReport, TimerError> {
    let event = TimerEvent::parse(event)?;
    let parts = TimerParts {
        watcher,
        queue,
        timers,
        cards: Some(cards),
        following,
        notify: None,
    };
    handle_event(&parts, &event, now, invocation).await
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn is_zero_u64(n: &u64) -> bool {
    *n == 0
}

pub(crate) fn lapses_in(applied: &watcher_runtime::watcher::Applied) -> usize {
    applied
        .effects
        .iter()
        .filter(|e| matches!(e, watcher_core::engine::Effect::Lapsed(_)))
        .count()
}

/// Handles one JSON event at `now` with no cards; a sweep follows lapse tasks with `following`
/// (`None`: it does not). Nothing is tried again inside the invocation and no message's
/// visibility is changed ([`Invocation::unbounded`]).
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

/// Handles one JSON event at `now` within `invocation`, with no cards: the event read
/// ([`TimerEvent::parse`]) and handled ([`handle_event`]).
///
/// # Errors
/// [`TimerError::Malformed`] for an event that is none of the shapes; otherwise as
/// [`handle_event`].
pub async fn handle_in<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    timers: &dyn Timers,
    following: Option<&Following<'_>>,
    event: &Value,
    now: Instant,
    invocation: &Invocation<'_>,
) -> Result<TimerReport, TimerError> {
    let event = TimerEvent::parse(event)?;
    let parts = TimerParts {
        watcher,
        queue,
        timers,
        cards: None,
        following,
        notify: None,
    };
    handle_event(&parts, &event, now, invocation).await
}

/// A schedule's fire of timer `key` of `tenant`: evaluated at `now`, finishing a replay's
/// hand-over. When it fails for a passing reason after the invocation's own retries (the store),
/// or its lapse task was not queued, the timer is armed again [`FIRE_AGAIN_AFTER`] later (a
/// delayed timer-queue message, whose failures come back after their backoff): Lambda's
/// asynchronous retries are off for this function.
///
/// # Errors
/// The evaluation's failure, when the timer could not be armed again either (logged): the
/// `timers` duty fires a timer still due, the `requeue` duty wakes the lane of a lapse task
/// not queued.
async fn fire<S: Store + ?Sized>(
    parts: &TimerParts<'_, S>,
    tenant: &Tenant,
    key: &TimerKey,
    now: Instant,
    invocation: &Invocation<'_>,
) -> Result<TimerReport, TimerError> {
    let failure = match evaluate(
        parts.watcher,
        parts.queue,
        (tenant, key),
        now,
        true,
        invocation,
    )
    .await
    {
        Ok(done) if !done.left_unsent => {
            return Ok(TimerReport {
                evaluated: 1,
                lapses: done.lapses,
                handed_over: done.handed_over,
                ..TimerReport::default()
            });
        }
        Ok(done) => (
            done.lapses,
            TimerError::Enqueue(format!(
                "timer {key:?} of {tenant}: the lapse queue did not take its lapse task"
            )),
        ),
        Err(e) => (0, TimerError::Store(e)),
    };
    let (lapses, error) = failure;
    let again = jiff::SignedDuration::try_from(FIRE_AGAIN_AFTER)
        .ok()
        .and_then(|d| now.checked_add(d))
        .unwrap_or(now);
    match parts.timers.arm(tenant, key, again).await {
        Ok(()) => {
            tracing::warn!(error = %error, timer = ?key, %again, "the fired timer failed for a passing reason; armed again on the timer queue");
            Ok(TimerReport {
                evaluated: 1,
                lapses,
                fired_again: 1,
                ..TimerReport::default()
            })
        }
        Err(arm) => {
            tracing::error!(error = %error, arm_error = %arm, timer = ?key, "the fired timer failed and could not be armed again; the sweep's duties take it up");
            Err(error)
        }
    }
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

/// The timer queue's batch: each record's `body` a [`TimerQueueMessage`]. A timer is evaluated
/// at `now` like a schedule's (an early one lapses nothing and re-arms); a schedule delete is
/// carried out ([`disarm`]); a lane wake-up wakes the lane or is sent on ([`wake_lane`]). A body
/// that is none of these is dropped with an error log (it can never succeed, and the sweep
/// covers every deadline); a store failure, a delete or wake-up that may succeed later, or a
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
    parts: &TimerParts<'_, S>,
    records: &[TimerRecord],
    now: Instant,
    invocation: &Invocation<'_>,
) -> TimerReport {
    let outcomes = futures_util::future::join_all(
        records
            .iter()
            .map(|record| from_queue_record(parts, record, now, invocation)),
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
            RecordOutcome::Woken => report.lanes_woken += 1,
            RecordOutcome::SentOn => report.wakes_sent_on += 1,
            RecordOutcome::Dropped => {}
            RecordOutcome::Redeliver { lapses } => {
                report.lapses += lapses;
                if !record.message_id.is_empty() {
                    report.batch_item_failures.push(ItemFailure {
                        item_identifier: record.message_id.clone(),
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
    report
}

/// Makes the handed-back `record` visible again after [`Invocation::redeliver`]'s backoff for
/// its receive count; a failure is logged (the queue's visibility timeout then applies).
async fn redeliver(record: &TimerRecord, invocation: &Invocation<'_>) {
    let Some(receipt) = record.receipt_handle.as_deref() else {
        return;
    };
    let id = &record.message_id;
    let received = record.receive_count;
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
    /// A lane woken at its wake-up.
    Woken,
    /// A lane wake-up still ahead, sent on.
    SentOn,
    /// None of the shapes, or refused for good: dropped (logged).
    Dropped,
    /// To be received again (logged), after the lapses it determined, if any (its lapse task
    /// not queued).
    Redeliver { lapses: usize },
}

/// One record of [`from_queue`]'s batch.
async fn from_queue_record<S: Store + ?Sized>(
    parts: &TimerParts<'_, S>,
    record: &TimerRecord,
    now: Instant,
    invocation: &Invocation<'_>,
) -> RecordOutcome {
    let id = &record.message_id;
    let message = match TimerQueueMessage::parse(&record.body) {
        Ok(message) => message,
        Err(e) => {
            tracing::error!(error = %cause_chain(&e), sqs_message_id = %id, "not a timer queue message; dropped");
            return RecordOutcome::Dropped;
        }
    };
    let (watcher, queue, timers) = (parts.watcher, parts.queue, parts.timers);
    let input = match message {
        TimerQueueMessage::Timer(input) => input,
        TimerQueueMessage::WakeLane(wake) => {
            return wake_lane(queue, &wake, id, now, invocation).await;
        }
        TimerQueueMessage::Disarm(message) => {
            // A disarm received again may follow an evaluation whose lapse task was not queued:
            // it hands that over. On its first receive there is nothing to finish, and no read
            // is made for it (a satisfied expectation's disarm costs what it did).
            let again = record.receive_count > 1;
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

/// `e` and its causes, joined with `: ` (a body's parse error names the field at fault).
fn cause_chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        out.push_str(": ");
        out.push_str(&s.to_string());
        source = s.source();
    }
    out
}

/// A lane's delayed wake-up: at or after its instant on this function's clock, the lane is
/// woken (`LapseQueue::wake`); before it (a wait longer than SQS's 15 minutes of delay), the
/// wake-up is sent on with the delay left ([`Invocation::wakes`]). A failure that may pass hands
/// the record back; one that cannot is logged and the record dropped (the sweep's `requeue` and
/// `follow` duties find the lane's work).
async fn wake_lane(
    queue: &dyn LapseQueue,
    wake: &WakeLane,
    id: &str,
    now: Instant,
    invocation: &Invocation<'_>,
) -> RecordOutcome {
    let (tenant, agent, at) = (&wake.tenant, &wake.agent, wake.at);
    if at > now {
        return match invocation.wakes.wake_lane_at(tenant, agent, at).await {
            Ok(()) => {
                tracing::debug!(%tenant, %agent, %at, "lane wake-up still ahead; sent on");
                RecordOutcome::SentOn
            }
            Err(e) if e.is_retryable() => {
                tracing::warn!(error = %e, sqs_message_id = %id, %agent, "sending a lane wake-up on failed; redelivered");
                RecordOutcome::Redeliver { lapses: 0 }
            }
            Err(e) => {
                tracing::error!(error = %e, sqs_message_id = %id, %agent, "a lane wake-up still ahead cannot be sent on; dropped (the sweep finds the lane's work)");
                RecordOutcome::Dropped
            }
        };
    }
    match queue.wake(tenant, agent).await {
        Ok(()) => {
            tracing::debug!(%tenant, %agent, %at, "lane woken at its wake-up");
            RecordOutcome::Woken
        }
        Err(e) if e.is_retryable() => {
            tracing::warn!(error = %e, sqs_message_id = %id, %agent, "waking a lane failed; redelivered");
            RecordOutcome::Redeliver { lapses: 0 }
        }
        Err(e) => {
            tracing::error!(error = %e, sqs_message_id = %id, %agent, "the lapse queue refused a lane wake-up; dropped (the sweep finds the lane's work)");
            RecordOutcome::Dropped
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
mod tests;
