//! The last stretch to a deadline on SQS: a [`TimerInput`] sent to a standard queue with
//! `DelaySeconds` up to the exact instant, consumed by the timer function (docs/aws-latency.md).
//!
//! EventBridge Scheduler fires a one-time schedule anywhere within the minute after its `at()`
//! time. So each schedule is armed [`SCHEDULE_LEAD`] early (see
//! [`SchedulerConfig::with_lead`](crate::SchedulerConfig::with_lead)); the early fire re-arms the
//! timer for its exact instant, now within [`MAX_DELAY_SECS`], and that re-arm (like any timer
//! due within [`MAX_DELAY_SECS`] of its arming) becomes one delayed message here. SQS makes the
//! message visible `DelaySeconds` after the send and the event source mapping hands it to the
//! timer function within about a second, so a lapse is determined about a second after its
//! deadline rather than up to a minute.
//!
//! The message is a hint like the schedule: the timer function re-reads the record and lapses
//! nothing before the deadline on its own clock (an early one re-arms, and comes back as another
//! delayed message). A message for a timer that moved or ended lapses nothing. A standard queue,
//! not FIFO: FIFO queues take no per-message delay.
//!
//! The queue also carries the schedule deletes of a commit ([`DisarmMessage`], no delay), so an
//! input's answer waits for one `SendMessageBatch` rather than for each `DeleteSchedule`: the
//! timer function deletes them a second or so later. A delete that never happens costs nothing
//! but the schedule's firing: it finds no pending timer and lapses nothing, then Scheduler
//! deletes it (`ActionAfterCompletion: DELETE`).

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use jiff::SignedDuration;
use watcher_core::engine::TimerKey;
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_runtime::ports::PortError;

use serde::{Deserialize, Serialize};

use crate::error::{permanent, port_error};
use crate::timer_input::TimerInput;

/// The longest delay SQS gives one message, in seconds (15 minutes).
pub const MAX_DELAY_SECS: i64 = 900;

/// How early each schedule is armed when a [`TimerQueue`] finishes the wait: Scheduler's whole
/// one-minute window, so the schedule fires before the deadline, never after it.
pub const SCHEDULE_LEAD: SignedDuration = SignedDuration::from_secs(60);

/// The `DelaySeconds` that makes a message sent at `now` visible at `at` or just after (whole
/// seconds, rounded up, so never before `at`), or `None` when `at` is more than
/// [`MAX_DELAY_SECS`] away (arm a schedule instead). An `at` already past is 0 (evaluate now).
///
/// # Example
/// ```
/// # use watcher_core::time::Instant;
/// let now = Instant::parse("2026-09-10T22:14:20Z").unwrap();
/// let at = |s| Instant::parse(s).unwrap();
/// assert_eq!(watcher_aws::delay_seconds(now, at("2026-09-10T22:15:00Z")), Some(40));
/// assert_eq!(watcher_aws::delay_seconds(now, at("2026-09-10T22:15:00.2Z")), Some(41));
/// assert_eq!(watcher_aws::delay_seconds(now, at("2026-09-10T22:29:21Z")), None);
/// ```
pub fn delay_seconds(now: Instant, at: Instant) -> Option<i32> {
    let nanos = at.as_nanos() - now.as_nanos();
    if nanos <= 0 {
        return Some(0);
    }
    let secs = nanos.div_euclid(1_000_000_000) + i128::from(nanos.rem_euclid(1_000_000_000) > 0);
    if secs > i128::from(MAX_DELAY_SECS) {
        return None;
    }
    i32::try_from(secs).ok()
}

/// A timer-queue message that asks the timer function to delete the schedule of `disarm`:
/// `{"tenant": "...", "disarm": {"subject", "expectation", "kind"}}` (the [`TimerKey`]'s serde
/// form, as in [`TimerInput`]'s `timer`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DisarmMessage {
    /// The tenant of the timer.
    pub tenant: Tenant,
    /// The timer whose schedule to delete.
    pub disarm: TimerKey,
}

/// The [`DisarmMessage`] in a timer-queue message's `body`, if it is one (a [`TimerInput`] is
/// not: it has `timer`, not `disarm`).
pub fn parse_disarm_message(body: &str) -> Option<DisarmMessage> {
    serde_json::from_str(body).ok()
}

/// Finishes a timer's wait with a delayed message to the timer function.
#[async_trait]
pub trait TimerQueue: Send + Sync {
    /// Sends the timer `key` of `tenant` so that the timer function evaluates it at `at`
    /// (seen from `now`). Call only when [`delay_seconds`] is `Some`.
    ///
    /// # Errors
    /// Permanent for an `at` beyond [`MAX_DELAY_SECS`] or the service's refusals; retryable for
    /// throttling, 5xx and timeouts.
    async fn send_at(
        &self,
        tenant: &Tenant,
        key: &TimerKey,
        at: Instant,
        now: Instant,
    ) -> Result<(), PortError>;

    /// Asks the timer function to delete the schedules of `keys` of `tenant` ([`DisarmMessage`]
    /// each, at once); one result per key, in order. A key whose message failed is the
    /// caller's to disarm itself. The default sends none and fails each.
    async fn send_disarms(&self, tenant: &Tenant, keys: &[TimerKey]) -> Vec<Result<(), PortError>> {
        let _ = tenant;
        keys.iter()
            .map(|_| {
                Err(PortError::new(
                    false,
                    "this timer queue carries no disarms".into(),
                    None,
                ))
            })
            .collect()
    }
}

/// [`TimerQueue`] over the standard SQS queue at `queue_url`; the body is the schedule's
/// [`TimerInput`] JSON, so the timer function reads both the same way.
#[derive(Debug, Clone)]
pub struct SqsTimerQueue {
    client: Client,
    queue_url: String,
}

impl SqsTimerQueue {
    /// The queue at `queue_url` on `client` (build it once, in `main`).
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        SqsTimerQueue {
            client,
            queue_url: queue_url.into(),
        }
    }

    /// The queue's URL.
    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    /// Makes the received timer message `receipt_handle` visible again `seconds` from now
    /// (`ChangeMessageVisibility`, clamped to SQS's 0 to 43,200 s): a message the timer
    /// function hands back for a passing failure returns after its backoff rather than the
    /// queue's 720 s visibility timeout (docs/aws-latency.md, "When a firing fails").
    ///
    /// # Errors
    /// Permanent: an expired or unknown receipt handle, permissions. Retryable: throttling, 5xx.
    pub async fn redeliver_after(
        &self,
        receipt_handle: &str,
        seconds: u32,
    ) -> Result<(), PortError> {
        crate::sqs::change_visibility(&self.client, &self.queue_url, receipt_handle, seconds).await
    }
}

#[async_trait]
impl TimerQueue for SqsTimerQueue {
    async fn send_at(
        &self,
        tenant: &Tenant,
        key: &TimerKey,
        at: Instant,
        now: Instant,
    ) -> Result<(), PortError> {
        let delay = delay_seconds(now, at).ok_or_else(|| PortError::Permanent {
            reason: format!(
                "timer at {at} is more than {MAX_DELAY_SECS} s after {now}: SQS cannot delay it"
            ),
            source: None,
        })?;
        let body = serde_json::to_string(&TimerInput {
            tenant: tenant.clone(),
            timer: key.clone(),
        })
        .map_err(|e| permanent("body of the timer message", e))?;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .delay_seconds(delay)
            .send()
            .await
            .map_err(|e| port_error(format!("send timer {key:?} to {}", self.queue_url), e))?;
        tracing::debug!(timer = ?key, %at, delay, "timer message queued");
        Ok(())
    }

    /// [`DisarmMessage`]s with `SendMessageBatch`, ten to a request.
    async fn send_disarms(&self, tenant: &Tenant, keys: &[TimerKey]) -> Vec<Result<(), PortError>> {
        let mut results = Vec::with_capacity(keys.len());
        for chunk in keys.chunks(crate::sqs::BATCH_MAX) {
            results.extend(self.send_disarm_batch(tenant, chunk).await);
        }
        results
    }
}

impl SqsTimerQueue {
    /// One `SendMessageBatch` of at most ten [`DisarmMessage`]s; one result per key, in order.
    async fn send_disarm_batch(
        &self,
        tenant: &Tenant,
        chunk: &[TimerKey],
    ) -> Vec<Result<(), PortError>> {
        let entries = chunk
            .iter()
            .enumerate()
            .map(|(i, key)| {
                let message = DisarmMessage {
                    tenant: tenant.clone(),
                    disarm: key.clone(),
                };
                serde_json::to_string(&message)
                    .map_err(|e| permanent("body of the disarm message", e))
                    .and_then(|body| {
                        aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                            .id(i.to_string())
                            .message_body(body)
                            .build()
                            .map_err(|e| permanent("disarm batch entry", e))
                    })
            })
            .collect();
        crate::sqs::send_batch_entries(&self.client, &self.queue_url, entries, || {
            format!("send {} disarms to {}", chunk.len(), self.queue_url)
        })
        .await
        .results
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: &str) -> Instant {
        Instant::parse(s).unwrap()
    }

    #[test]
    fn delays_round_up_to_never_fire_early_and_stop_at_sqs_limit() {
        let now = t("2026-09-10T22:00:00Z");
        for (at, expected) in [
            ("2026-09-10T21:59:59Z", Some(0)),
            ("2026-09-10T22:00:00Z", Some(0)),
            ("2026-09-10T22:00:00.000000001Z", Some(1)),
            ("2026-09-10T22:00:01Z", Some(1)),
            ("2026-09-10T22:01:00Z", Some(60)),
            ("2026-09-10T22:15:00Z", Some(900)),
            ("2026-09-10T22:15:00.5Z", None),
            ("2026-09-10T23:00:00Z", None),
        ] {
            assert_eq!(delay_seconds(now, t(at)), expected, "{at}");
        }
    }
}
