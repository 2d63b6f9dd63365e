//! Carries out, after each commit, the effects the record alone does not: EventBridge schedules
//! for deadlines and horizons, and SQS messages for new lapse tasks.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use futures_util::StreamExt;
use watcher_aws::{delay_seconds, TimerQueue};
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_runtime::ports::{LapseQueue, Timers};
use watcher_runtime::store::DeliveryState;
use watcher_runtime::watcher::{net_timers, passed_disarms, Applied, EffectSink};

/// The serverless deployment's [`EffectSink`].
///
/// Timers: the last effect per timer wins; a timer left armed at or before `now` was already
/// evaluated by the watcher (`evaluating_due_at_once`), so only future instants are armed. With a
/// [`timer_queue`](AwsSink::timer_queue), a timer due within SQS's 900 s is sent there as a
/// message delayed to its instant, and a later one is scheduled (a minute early, per the
/// scheduler's lead; its early fire re-arms the timer, which then goes to the queue:
/// docs/aws-latency.md). Without one, every future timer is scheduled: it fires at, or within the
/// minute after, its instant, and the timer function re-arms any early wake. A delayed message
/// cannot be withdrawn: a disarmed or moved timer's message lapses nothing when it arrives (the
/// record decides). With [`disarm_later`](AwsSink::disarm_later) and a timer queue, schedule
/// deletes go to that queue for the timer function to make (docs/aws-latency.md, step 6).
/// Failures are logged: the sweep finds every due-but-unlapsed expectation and every queued lapse task, so a
/// lost effect delays a lapse, never loses it. A lapse task the lapse queue did not take is also
/// noted for the caller when it asked ([`noting_unsent`]): the timer function then has its
/// message come back within seconds to hand the task over again, rather than wait for the sweep
/// (docs/aws-latency.md, "When a firing fails").
pub struct AwsSink {
    /// EventBridge Scheduler (or any [`Timers`]).
    pub timers: Arc<dyn Timers>,
    /// The lapse queue (or any [`LapseQueue`]).
    pub queue: Arc<dyn LapseQueue>,
    /// Where timers due within [`MAX_DELAY_SECS`](watcher_aws::MAX_DELAY_SECS) finish their
    /// wait, if anywhere.
    pub timer_queue: Option<Arc<dyn TimerQueue>>,
    /// Hand schedule deletes to the timer queue rather than make them ([`watcher_aws::DisarmMessage`]):
    /// in the functions that answer callers (the API, the submitter), not in the timer function,
    /// whose deletes keep no one waiting.
    pub disarm_later: bool,
}

/// What a failed timer effect leaves behind, for its log line: what really happens next.
///
/// - An arm (a new or moved deadline) that failed: the timer is in the record, and the sweep
///   (every 5 minutes) fires every deadline and horizon due, whatever happened to its schedule,
///   so the lapse is late by at most a sweep, never lost.
/// - A disarm (a withdrawal, satisfaction or move) whose `DeleteSchedule` failed, after the
///   timer queue did not take it either: nothing catches up, and nothing needs to. The
///   one-time schedule stays armed and fires at its instant (less the lead); the timer function
///   evaluates the timer against the record, which no longer holds it (withdrawn, met), so it
///   lapses nothing and arms nothing; and Scheduler deletes the schedule after that invocation
///   (`ActionAfterCompletion: DELETE`). The cost is one needless invocation.
pub fn effect_failed_note(arm: bool) -> &'static str {
    if arm {
        "arming the timer failed; the record holds it, and the sweep fires it when due (late by at most one sweep, never lost)"
    } else {
        "deleting the timer's schedule failed; it stays armed until its instant, when the timer function finds the record no longer holds the timer and does nothing, and Scheduler deletes the one-time schedule after that run (ActionAfterCompletion DELETE)"
    }
}

/// A lapse task that a commit queued and the lapse queue did not take ([`noting_unsent`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsent {
    /// The agent the lapse task goes to.
    pub agent: watcher_core::ids::AgentId,
    /// Its `messageId`.
    pub message_id: String,
    /// Whether the failure may pass (throttling, 5xx, a timeout): sending it again may succeed.
    pub retryable: bool,
}

tokio::task_local! {
    /// Where [`AwsSink::carry_out`] notes the lapse tasks it could not send, within
    /// [`noting_unsent`]. Per call, not per instance: a function instance keeps nothing of one
    /// invocation for the next.
    static UNSENT: Arc<Mutex<Vec<Unsent>>>;
}

/// Runs `f` (an input applied through a watcher whose sink is an [`AwsSink`]) and answers its
/// output with the lapse tasks the sink could not send to the lapse queue meanwhile, in order.
/// A per-call collector on the task: several calls awaited at once (a timer-queue batch's
/// records) each get their own, and a sink called outside one notes nothing (the sweep's).
pub async fn noting_unsent<F: Future>(f: F) -> (F::Output, Vec<Unsent>) {
    let unsent = Arc::new(Mutex::new(Vec::new()));
    let out = UNSENT.scope(Arc::clone(&unsent), f).await;
    let noted = std::mem::take(&mut *unsent.lock().unwrap_or_else(PoisonError::into_inner));
    (out, noted)
}

/// Notes `unsent` for the caller of [`noting_unsent`], if any; answers whether one asked.
fn note_unsent(unsent: Unsent) -> bool {
    UNSENT
        .try_with(|noted| {
            noted
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(unsent);
        })
        .is_ok()
}

/// The most Scheduler or timer-queue calls one commit's effects have in flight at once.
pub const TIMER_CALLS_AT_ONCE: usize = 8;

#[async_trait]
impl EffectSink for AwsSink {
    async fn carry_out(&self, tenant: &Tenant, applied: &Applied, now: Instant) {
        // With `disarm_later`, deletes go to the timer queue, when there is one, ten to a
        // `SendMessageBatch`: the answer waits for that, not for each `DeleteSchedule` (the
        // timer function deletes them). A delete the queue did not take is made here.
        // A timer disarmed after its instant passed needs no delete: its one-time schedule
        // (armed for that instant less the lead) has fired and deleted itself, or will, and
        // then finds nothing pending (`ActionAfterCompletion: DELETE`). So a lapse, which ends
        // the timer that fired it, costs no `DeleteSchedule` (docs/costs.md).
        let passed = passed_disarms(&applied.effects, now);
        let mut moves = Vec::new();
        let mut deletes = Vec::new();
        for (key, at) in net_timers(&applied.effects) {
            match at {
                None if passed.contains(&key) => {}
                None => deletes.push(key),
                Some(at) if at > now => moves.push((key, at)),
                Some(_) => {}
            }
        }
        if let (Some(q), true) = (&self.timer_queue, self.disarm_later && !deletes.is_empty()) {
            let sent = q.send_disarms(tenant, &deletes).await;
            deletes = deletes
                .into_iter()
                .zip(sent)
                .filter_map(|(key, r)| r.err().map(|e| {
                    tracing::warn!(error = %e, timer = ?key, "queueing a schedule delete failed; deleting it now");
                    key
                }))
                .collect();
        }
        // The rest [`TIMER_CALLS_AT_ONCE`] at a time: the answer waits for the slowest call of
        // each wave, not for their sum, and a commit that moves a thousand timers does not open
        // a thousand connections. Each key appears once (`net_timers`), so no two calls touch
        // one schedule.
        let calls = moves
            .into_iter()
            .map(|(key, at)| (key, Some(at)))
            .chain(deletes.into_iter().map(|key| (key, None)))
            .map(|(key, at)| async move {
                let result = match at {
                    Some(at) => match &self.timer_queue {
                        Some(q) if delay_seconds(now, at).is_some() => {
                            q.send_at(tenant, &key, at, now).await
                        }
                        _ => self.timers.arm(tenant, &key, at).await,
                    },
                    None => self.timers.disarm(tenant, &key).await,
                };
                if let Err(e) = result {
                    tracing::warn!(error = %e, timer = ?key, "{}", effect_failed_note(at.is_some()));
                }
            });
        futures_util::stream::iter(calls)
            .buffer_unordered(TIMER_CALLS_AT_ONCE)
            .collect::<Vec<()>>()
            .await;
        // The lapse tasks in order, several to a request (`SendMessageBatch`: the SDK retries a
        // request that fails whole, the adapter an entry SQS failed alone); one no agent
        // receives (`unaddressed`, the Learnables authority's) is for the channels only.
        let to_send: Vec<_> = applied
            .outbox
            .iter()
            .filter(|e| e.delivery == DeliveryState::Queued)
            .cloned()
            .collect();
        let results = self.queue.enqueue_all(&to_send).await;
        for (entry, result) in to_send.iter().zip(results) {
            if let Err(e) = result {
                let noted = note_unsent(Unsent {
                    agent: entry.agent.clone(),
                    message_id: entry.message_id.clone(),
                    retryable: e.is_retryable(),
                });
                if noted && e.is_retryable() {
                    tracing::warn!(error = %e, message_id = %entry.message_id, "enqueueing a lapse task failed; the timer function evaluates the timer again soon to hand it over");
                } else {
                    tracing::warn!(error = %e, message_id = %entry.message_id, "enqueueing a lapse task failed; the sweep will re-queue it");
                }
            }
        }
    }
}
