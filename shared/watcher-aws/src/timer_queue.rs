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
//!
//! And it carries the delayed wake-ups of the submitter's per-agent lanes ([`WakeLane`],
//! [`SqsTimerQueue::wake_lane_at`]): a lane that ends with its agent's next attempt or poll in
//! the future asks to be woken then; the timer function, at the message, wakes the lane through
//! the lapse queue (`LapseQueue::wake`), or sends the message on again while the instant is more
//! than [`MAX_DELAY_SECS`] away. The lapse queue is FIFO and takes no per-message delay, so the
//! wait is kept here. Every body the queue carries is one [`TimerQueueMessage`].

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use jiff::SignedDuration;
use watcher_core::engine::TimerKey;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::ports::PortError;

use serde::{Deserialize, Serialize};

use crate::error::{permanent, port_error, MessageError};
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

/// A timer-queue message that asks the timer function to wake the lane of `agent` of `tenant`
/// at `at`: `{"kind": "wakeLane", "tenant": "...", "agent": "...", "at": "<RFC 3339 instant>"}`.
/// Sent with `DelaySeconds` up to [`MAX_DELAY_SECS`]; received before `at` (a wait longer than
/// SQS's delay), it is sent on again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WakeLane {
    /// The tenant of the agent.
    pub tenant: Tenant,
    /// The agent whose lane to wake.
    pub agent: AgentId,
    /// When: the agent's next attempt or poll, on the sender's clock.
    pub at: Instant,
}

/// The messages with a `kind` ([`TimerQueueMessage::WakeLane`] only, today), for serde.
#[derive(Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
enum Kinded {
    WakeLane(WakeLane),
}

/// Every body the timer queue carries, read once at the edge:
///
/// * `{"tenant", "timer"}`: a timer to evaluate ([`TimerInput`], delayed to its instant);
/// * `{"tenant", "disarm"}`: a schedule to delete ([`DisarmMessage`], no delay);
/// * `{"kind": "wakeLane", "tenant", "agent", "at"}`: a lane to wake ([`WakeLane`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimerQueueMessage {
    /// Evaluate a timer.
    Timer(TimerInput),
    /// Delete a timer's schedule, then evaluate the timer.
    Disarm(DisarmMessage),
    /// Wake an agent's lane at an instant.
    WakeLane(WakeLane),
}

/// What [`TimerQueueMessage::parse`] names in its errors.
const MESSAGE: &str = "timer queue message";

impl TimerQueueMessage {
    /// Reads a timer-queue message's `body`: by its `kind` when it has one (`wakeLane`), else
    /// by its `disarm` or `timer` field.
    ///
    /// # Errors
    /// [`MessageError::Malformed`] for a body that is not JSON or not the shape its field names
    /// (an id empty or too long included); [`MessageError::Invalid`] for an unknown `kind` or a
    /// body with none of `kind`, `disarm` and `timer`. Not retryable: the message is dropped.
    ///
    /// # Example
    /// ```
    /// use watcher_aws::TimerQueueMessage;
    /// let body = r#"{"kind":"wakeLane","tenant":"default","agent":"booking","at":"2026-09-10T22:15:00Z"}"#;
    /// assert!(matches!(TimerQueueMessage::parse(body), Ok(TimerQueueMessage::WakeLane(_))));
    /// assert!(TimerQueueMessage::parse(r#"{"kind":"nap"}"#).is_err());
    /// ```
    pub fn parse(body: &str) -> Result<Self, MessageError> {
        let malformed = |source| MessageError::Malformed {
            what: MESSAGE,
            source,
        };
        let value: serde_json::Value = serde_json::from_str(body).map_err(malformed)?;
        let Some(fields) = value.as_object() else {
            return Err(MessageError::Invalid {
                what: MESSAGE,
                reason: "not a JSON object".into(),
            });
        };
        if let Some(kind) = fields.get("kind") {
            return match kind.as_str() {
                Some("wakeLane") => match serde_json::from_value::<Kinded>(value) {
                    Ok(Kinded::WakeLane(wake)) => Ok(TimerQueueMessage::WakeLane(wake)),
                    Err(e) => Err(malformed(e)),
                },
                _ => Err(MessageError::Invalid {
                    what: MESSAGE,
                    reason: format!("unknown kind {kind}; the known one is \"wakeLane\""),
                }),
            };
        }
        if fields.contains_key("disarm") {
            return serde_json::from_value(value)
                .map(TimerQueueMessage::Disarm)
                .map_err(malformed);
        }
        if fields.contains_key("timer") {
            return serde_json::from_value(value)
                .map(TimerQueueMessage::Timer)
                .map_err(malformed);
        }
        Err(MessageError::Invalid {
            what: MESSAGE,
            reason: "none of \"kind\", \"disarm\" and \"timer\"".into(),
        })
    }
}

/// The body of the [`WakeLane`] message `wake`: `{"kind": "wakeLane", ...}`.
///
/// # Errors
/// Never for the watcher's own types; a serializer failure is permanent.
pub fn wake_lane_body(wake: &WakeLane) -> Result<String, PortError> {
    serde_json::to_string(&Kinded::WakeLane(wake.clone()))
        .map_err(|e| permanent("body of the wake-lane message", e))
}

/// The `DelaySeconds` of a [`WakeLane`] for `at` sent at `now`: the whole seconds until `at`,
/// rounded up (never early), at most [`MAX_DELAY_SECS`] (a longer wait is sent on again when
/// the message arrives); 0 for an `at` already past.
///
/// # Example
/// ```
/// # use watcher_core::time::Instant;
/// let now = Instant::parse("2026-09-10T22:00:00Z").unwrap();
/// let at = |s| Instant::parse(s).unwrap();
/// assert_eq!(watcher_aws::wake_delay_seconds(now, at("2026-09-10T22:00:02.5Z")), 3);
/// assert_eq!(watcher_aws::wake_delay_seconds(now, at("2026-09-10T23:00:00Z")), 900);
/// assert_eq!(watcher_aws::wake_delay_seconds(now, at("2026-09-10T21:00:00Z")), 0);
/// ```
pub fn wake_delay_seconds(now: Instant, at: Instant) -> i32 {
    // `delay_seconds` is `None` only beyond the longest delay; MAX_DELAY_SECS fits an i32.
    delay_seconds(now, at).unwrap_or(MAX_DELAY_SECS as i32)
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
    /// Sends `body` to the timer queue, delayed `delay` seconds; a refusal is a [`PortError`]
    /// naming `what` was sent.
    async fn send_delayed(
        &self,
        body: String,
        delay: i32,
        what: impl FnOnce() -> String,
    ) -> Result<(), PortError> {
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .delay_seconds(delay)
            .send()
            .await
            .map_err(|e| port_error(format!("send {} to {}", what(), self.queue_url), e))?;
        Ok(())
    }

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

impl SqsTimerQueue {
    /// Asks for the lane of `agent` of `tenant` to be woken at `at`: one [`WakeLane`] message,
    /// `DelaySeconds` = the seconds from now (the system clock) until `at`, rounded up, at most
    /// [`MAX_DELAY_SECS`] ([`wake_delay_seconds`]). The timer function, at the message, wakes the
    /// lane through the lapse queue (`LapseQueue::wake`), or sends it on again while `at` is
    /// still ahead. An `at` already past is sent with no delay.
    ///
    /// # Errors
    /// Retryable: throttling, 5xx, timeouts. Permanent: permissions, a missing queue,
    /// validation. The lapse tasks stay due in the outbox either way; the sweep finds them.
    pub async fn wake_lane_at(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        at: Instant,
    ) -> Result<(), PortError> {
        let now = Instant::from_timestamp(jiff::Timestamp::now()).unwrap_or(at);
        self.wake_lane_at_from(tenant, agent, at, now).await
    }

    /// [`SqsTimerQueue::wake_lane_at`] seen from `now` (the caller's clock).
    ///
    /// # Errors
    /// As [`SqsTimerQueue::wake_lane_at`].
    pub async fn wake_lane_at_from(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        at: Instant,
        now: Instant,
    ) -> Result<(), PortError> {
        let delay = wake_delay_seconds(now, at);
        let body = wake_lane_body(&WakeLane {
            tenant: tenant.clone(),
            agent: agent.clone(),
            at,
        })?;
        self.send_delayed(body, delay, || {
            format!("a wake-up of lane {agent} of {tenant}")
        })
        .await?;
        tracing::debug!(%tenant, %agent, %at, delay, "lane wake-up queued");
        Ok(())
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
        self.send_delayed(body, delay, || format!("timer {key:?}"))
            .await?;
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

    fn wake(at: &str) -> WakeLane {
        WakeLane {
            tenant: Tenant::default_tenant(),
            agent: AgentId::parse("booking").unwrap(),
            at: t(at),
        }
    }

    #[test]
    fn a_wake_lane_body_is_kinded_and_reads_back() {
        let w = wake("2026-09-10T22:15:00Z");
        let body = wake_lane_body(&w).unwrap();
        let value: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            value,
            serde_json::json!({
                "kind": "wakeLane", "tenant": "default", "agent": "booking",
                "at": "2026-09-10T22:15:00Z"
            })
        );
        assert_eq!(
            TimerQueueMessage::parse(&body).unwrap(),
            TimerQueueMessage::WakeLane(w)
        );
    }

    #[test]
    fn every_body_the_queue_carries_reads_as_its_kind_and_others_are_refused() {
        let key = serde_json::json!({
            "subject": {"type": "shipment", "id": "S-1"},
            "expectation": {"agent": "booking", "id": "e-1"},
            "kind": "deadline"
        });
        let timer = serde_json::json!({"tenant": "default", "timer": key}).to_string();
        assert!(matches!(
            TimerQueueMessage::parse(&timer),
            Ok(TimerQueueMessage::Timer(_))
        ));
        let disarm = serde_json::json!({"tenant": "default", "disarm": key}).to_string();
        assert!(matches!(
            TimerQueueMessage::parse(&disarm),
            Ok(TimerQueueMessage::Disarm(_))
        ));
        for (body, says) in [
            ("not json", "malformed timer queue message"),
            ("[1]", "invalid timer queue message: not a JSON object"),
            (r#"{"kind": "nap"}"#, "unknown kind \"nap\""),
            (r#"{"kind": 3}"#, "unknown kind 3"),
            (r#"{"tenant": "default"}"#, "none of"),
            (
                r#"{"kind": "wakeLane", "tenant": "default", "agent": "", "at": "2026-09-10T22:15:00Z"}"#,
                "malformed timer queue message",
            ),
            (
                r#"{"kind": "wakeLane", "tenant": "default", "agent": "booking", "at": "soon"}"#,
                "malformed timer queue message",
            ),
            (r#"{"tenant": "default", "timer": {}}"#, "malformed"),
        ] {
            let e = TimerQueueMessage::parse(body).expect_err(body);
            assert!(e.to_string().contains(says), "{body}: {e}");
        }
    }

    #[test]
    fn a_wake_waits_until_its_instant_or_the_longest_delay() {
        let now = t("2026-09-10T22:00:00Z");
        for (at, expected) in [
            ("2026-09-10T21:00:00Z", 0),
            ("2026-09-10T22:00:00Z", 0),
            ("2026-09-10T22:00:00.1Z", 1),
            ("2026-09-10T22:14:59Z", 899),
            ("2026-09-10T22:15:00Z", 900),
            ("2026-09-10T22:15:01Z", 900),
            ("2026-09-11T22:00:00Z", 900),
        ] {
            assert_eq!(wake_delay_seconds(now, t(at)), expected, "{at}");
        }
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
