//! When a timer firing that failed for a passing reason is tried again: within seconds, with
//! jittered backoff, rather than after the timer queue's 720 s visibility timeout or the next
//! sweep (docs/aws-latency.md, "When a firing fails").
//!
//! * A store failure that may pass (throttling, a conflict that outlasted the step's retries, a
//!   5xx, a timeout: `ApplyError::unavailability`) is first tried again inside the invocation,
//!   [`STORE_RETRY`], while the invocation's remaining time leaves [`RESERVE`]
//!   ([`Invocation::may_retry`]).
//! * A timer-queue record still failing, or whose lapse task the lapse queue did not take, is
//!   handed back (`batchItemFailures`) with its visibility changed to a full-jitter backoff keyed
//!   by its `ApproximateReceiveCount` ([`TIMER_REDELIVERY`]: 1 s doubling to 60 s). A failed
//!   visibility change is logged; the message then returns after the queue's visibility timeout.
//! * A schedule's direct fire (Scheduler invokes Lambda asynchronously) answers an error
//!   instead, and Lambda runs the invocation again (twice, a minute then two minutes later).

use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use async_trait::async_trait;
use serde_json::Value;
use watcher_runtime::ports::PortError;
use watcher_runtime::retry::{Backoff, Retry};

use crate::submitter::{QueueTimeout, Redelivery};

/// When a handed-back timer message returns, by its receive count `n` (its
/// `ApproximateReceiveCount`, 1 on the first receive): uniform in `[0, min(60 s, 1 s × 2^(n−1))]`,
/// in whole seconds (rounded up, so never above the ceiling). Receives 1 to 4 return within 1,
/// 2, 4 and 8 s; the queue's redrive moves the message to the dead-letter queue after its 10th
/// receive (`maxReceiveCount`, template.yaml: about 4 minutes of ceilings), and the sweep fires
/// the timer then.
/// `max_attempts` is that redrive's count, for the record: SQS, not this policy, enforces it.
pub const TIMER_REDELIVERY: Backoff = Backoff {
    base: Duration::from_secs(1),
    cap: Duration::from_secs(60),
    max_attempts: 10,
};

/// When a lapse message the submitter handed back after a store failure returns, by its receive
/// count: the same full jitter as [`TIMER_REDELIVERY`] (1 s doubling to 60 s), where the lapse
/// queue's 360 s visibility timeout would hold the agent's FIFO message group that long.
/// `max_attempts` is the lapse queue's redrive count (`maxReceiveCount`, template.yaml), for the
/// record.
pub const SUBMITTER_REDELIVERY: Backoff = Backoff {
    base: Duration::from_secs(1),
    cap: Duration::from_secs(60),
    max_attempts: 1000,
};

/// A passing store failure tried again inside the invocation: 250 ms doubling to 2 s, 3
/// attempts in all (waits of at most 250 and 500 ms), after the SDK's own 3 attempts per request
/// and the step's conflict retries.
pub const STORE_RETRY: Backoff = Backoff {
    base: Duration::from_millis(250),
    cap: Duration::from_secs(2),
    max_attempts: 3,
};

/// What an in-invocation retry must leave of the invocation's time: one more evaluation (its
/// reads and transaction, each with the SDK's retries), the hand-over and the visibility changes.
pub const RESERVE: Duration = Duration::from_secs(10);

/// The record's `attributes.ApproximateReceiveCount` (a decimal string in SQS's event), at
/// least 1; 1 when it is missing or unreadable.
pub fn receive_count(record: &Value) -> u32 {
    record
        .get("attributes")
        .and_then(|a| a.get("ApproximateReceiveCount"))
        .and_then(|n| match n {
            Value::String(s) => s.trim().parse::<u32>().ok(),
            Value::Number(n) => n.as_u64().and_then(|n| u32::try_from(n).ok()),
            _ => None,
        })
        .unwrap_or(1)
        .max(1)
}

/// The visibility, in whole seconds, of a message handed back after receive `receive_count`
/// for the uniform draw `unit` in `[0, 1]`: `backoff`'s wait before retry `receive_count`,
/// rounded up, never above `backoff.cap` (rounded down to whole seconds).
pub fn visibility_for(backoff: &Backoff, receive_count: u32, unit: f64) -> u32 {
    whole_secs(backoff, backoff.delay_for(receive_count.max(1), unit))
}

/// [`visibility_for`] with a random draw (full jitter).
pub fn visibility_after(backoff: &Backoff, receive_count: u32) -> u32 {
    whole_secs(backoff, backoff.delay(receive_count.max(1)))
}

/// `wait` in whole seconds, rounded up, at most `backoff.cap`'s whole seconds.
fn whole_secs(backoff: &Backoff, wait: Duration) -> u32 {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    u32::try_from(secs.min(backoff.cap.as_secs())).unwrap_or(u32::MAX)
}

/// What one timer invocation has beyond its event: where handed-back timer messages are made
/// visible again, when the invocation must have answered, and the two policies.
pub struct Invocation<'a> {
    /// Sets when a handed-back timer-queue message returns (`ChangeMessageVisibility` on the
    /// timer queue).
    pub redelivery: &'a dyn Redelivery,
    /// When Lambda ends the invocation (its context's deadline); `None`: unknown, and nothing is
    /// tried again inside the invocation.
    pub deadline: Option<SystemTime>,
    /// A handed-back message's visibility, by receive count ([`TIMER_REDELIVERY`]).
    pub redeliver: Backoff,
    /// A passing store failure's retries inside the invocation ([`STORE_RETRY`]), and how they
    /// wait.
    pub retry: Retry,
    /// Where a lane wake-up received before its instant is sent on (the timer queue's
    /// `wake_lane_at`); [`crate::submitter::NoLaneWakes`] unless [`Invocation::with_wakes`] says.
    pub wakes: &'a dyn crate::submitter::LaneWakes,
}

impl Invocation<'static> {
    /// No visibility change (the queue's timeout applies), no deadline, so no retry inside the
    /// invocation: what [`crate::timer::handle`] runs with.
    pub fn unbounded() -> Self {
        Invocation {
            redelivery: &QueueTimeout,
            deadline: None,
            redeliver: TIMER_REDELIVERY,
            retry: Retry::new(STORE_RETRY),
            wakes: &crate::submitter::NoLaneWakes,
        }
    }
}

impl<'a> Invocation<'a> {
    /// An invocation that ends at `deadline`, its handed-back messages made visible through
    /// `redelivery`, with the default policies.
    pub fn new(redelivery: &'a dyn Redelivery, deadline: SystemTime) -> Self {
        Invocation {
            redelivery,
            deadline: Some(deadline),
            redeliver: TIMER_REDELIVERY,
            retry: Retry::new(STORE_RETRY),
            wakes: &crate::submitter::NoLaneWakes,
        }
    }

    /// This invocation, sending lane wake-ups still ahead on through `wakes`.
    pub fn with_wakes(self, wakes: &'a dyn crate::submitter::LaneWakes) -> Self {
        Invocation { wakes, ..self }
    }

    /// Whether retry `retry` (1 for the first) of a passing failure may be made now: the
    /// policy allows it, and the invocation's deadline is known and leaves the longest wait
    /// before it and [`RESERVE`].
    pub fn may_retry(&self, retry: u32) -> bool {
        let Some(deadline) = self.deadline else {
            return false;
        };
        let left = deadline
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        self.retry.allows(retry) && left >= self.retry.backoff.ceiling(retry) + RESERVE
    }
}

#[async_trait]
impl Redelivery for watcher_aws::SqsTimerQueue {
    async fn redeliver_after(&self, receipt_handle: &str, seconds: u32) -> Result<(), PortError> {
        watcher_aws::SqsTimerQueue::redeliver_after(self, receipt_handle, seconds).await
    }
}

/// [`Redelivery`] on the timer queue named by `TIMER_QUEUE_URL`, its SQS client built from
/// Lambda's environment (`watcher_aws::sdk_env`) at its first use, then kept for the process:
/// most invocations hand nothing back and never build it.
#[derive(Default)]
pub struct TimerQueueFromEnv {
    queue: OnceLock<Result<watcher_aws::SqsTimerQueue, String>>,
}

impl TimerQueueFromEnv {
    /// Nothing built yet.
    pub fn new() -> Self {
        Self::default()
    }

    fn queue(&self) -> &Result<watcher_aws::SqsTimerQueue, String> {
        self.queue.get_or_init(|| {
            let url = std::env::var("TIMER_QUEUE_URL")
                .ok()
                .filter(|u| !u.is_empty())
                .ok_or_else(|| "TIMER_QUEUE_URL is not set: no timer queue".to_owned())?;
            let aws = watcher_aws::sdk_env::sdk_config_from_env().map_err(|e| e.to_string())?;
            Ok(watcher_aws::SqsTimerQueue::new(
                aws_sdk_sqs::Client::new(&aws),
                url,
            ))
        })
    }
}

#[async_trait]
impl Redelivery for TimerQueueFromEnv {
    async fn redeliver_after(&self, receipt_handle: &str, seconds: u32) -> Result<(), PortError> {
        match self.queue() {
            Ok(queue) => queue.redeliver_after(receipt_handle, seconds).await,
            Err(e) => Err(PortError::new(false, e.clone(), None)),
        }
    }
}

/// A lane wake-up received before its instant, sent on from the timer function
/// ([`watcher_aws::SqsTimerQueue::wake_lane_at`]); no timer queue configured: refused, permanent.
#[async_trait]
impl crate::submitter::LaneWakes for TimerQueueFromEnv {
    async fn wake_lane_at(
        &self,
        tenant: &watcher_core::ids::Tenant,
        agent: &watcher_core::ids::AgentId,
        at: watcher_core::time::Instant,
    ) -> Result<(), PortError> {
        match self.queue() {
            Ok(queue) => queue.wake_lane_at(tenant, agent, at).await,
            Err(e) => Err(PortError::new(false, e.clone(), None)),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_receive_count_is_read_from_the_records_attributes() {
        let rec = |n: Value| json!({ "attributes": { "ApproximateReceiveCount": n } });
        assert_eq!(receive_count(&rec(json!("3"))), 3);
        assert_eq!(receive_count(&rec(json!(4))), 4);
        assert_eq!(receive_count(&rec(json!("0"))), 1);
        assert_eq!(receive_count(&rec(json!("many"))), 1);
        assert_eq!(receive_count(&json!({ "body": "{}" })), 1);
    }

    #[test]
    fn visibility_spans_zero_to_the_ceiling_of_the_receive_count() {
        let b = TIMER_REDELIVERY;
        assert_eq!(visibility_for(&b, 1, 0.0), 0);
        assert_eq!(visibility_for(&b, 1, 1.0), 1);
        assert_eq!(visibility_for(&b, 3, 1.0), 4);
        assert_eq!(visibility_for(&b, 3, 0.3), 2, "1.2 s rounds up");
        assert_eq!(visibility_for(&b, 7, 1.0), 60, "capped");
        assert_eq!(visibility_for(&b, 40, 1.0), 60);
        for n in 1..10 {
            let ceiling = u32::try_from(b.ceiling(n).as_secs()).unwrap();
            for _ in 0..50 {
                assert!(visibility_after(&b, n) <= ceiling);
            }
        }
    }

    #[test]
    fn no_retry_inside_an_invocation_without_time_for_it() {
        assert!(!Invocation::unbounded().may_retry(1), "no deadline known");
        let ample = Invocation::new(&QueueTimeout, SystemTime::now() + Duration::from_secs(100));
        assert!(ample.may_retry(1) && ample.may_retry(2));
        assert!(!ample.may_retry(3), "three attempts in all");
        let short = Invocation::new(&QueueTimeout, SystemTime::now() + Duration::from_secs(5));
        assert!(!short.may_retry(1), "less than the reserve left");
    }
}
