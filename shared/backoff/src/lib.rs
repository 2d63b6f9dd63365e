//! The one retry policy of every loop that tries a request again after losing to another writer
//! or being turned away: a step whose commit lost its compare-and-set, a read-merge-write of a
//! lapse task, a rate bucket's conditional write, a batch read's unprocessed keys.
//!
//! Exponential backoff with full jitter, capped, in a bounded number of attempts: before retry
//! `n` (1 for the first), a wait drawn uniformly from `[0, min(cap, base × 2^(n−1))]`. That is
//! the policy AWS's SDKs use in their standard retry mode (and the one AWS's architecture
//! guidance recommends over equal or no jitter): writers that collided once spread out rather
//! than colliding again in step, and a throttled partition is given time to recover. The SDK
//! clients themselves are built in standard mode (`watcher_aws::sdk_env`); this policy covers
//! what the SDK does not retry: outcomes it hands back as answers (a cancelled transaction, a
//! failed condition, unprocessed keys).
//!
//! Why a policy of our own rather than a crate: `backon`'s jitter adds `[0, min_delay)` to the
//! exponential delay (not full jitter), and the SDK's own backoff arithmetic
//! (`aws-smithy-runtime`'s standard strategy) is not public API. The policy is the formula above
//! and nothing else; the randomness is `fastrand`'s.
//!
//! The wait goes through a [`Sleeper`], so that tests record the waits instead of sleeping
//! ([`RecordingSleeper`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Exponential backoff with full jitter: the wait before retry `n` is uniform in
/// `[0, min(cap, base × 2^(n−1))]`, and at most `max_attempts` attempts are made in all (the first
/// try and `max_attempts − 1` retries).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// The ceiling of the first retry's wait.
    pub base: Duration,
    /// The most any one wait can be.
    pub cap: Duration,
    /// Attempts in all, the first included (at least 1).
    pub max_attempts: u32,
}

impl Backoff {
    /// For writers that lost a compare-and-set to another (a step's commit, a lapse task's
    /// read-merge-write, a rate bucket): 5 ms doubling to 320 ms. Those conflicts last as long as
    /// the other writer's request (milliseconds), so the waits start short; 32 attempts (a
    /// step's `MAX_ATTEMPTS`) wait at most about 8.3 s in all (4 s on average), inside every
    /// function's timeout.
    pub const CONFLICT: Backoff = Backoff {
        base: Duration::from_millis(5),
        cap: Duration::from_millis(320),
        max_attempts: 32,
    };

    /// For a request DynamoDB turned away in part (a batch read's unprocessed keys: throttling
    /// of a partition): 25 ms doubling to 1 s, 8 attempts, after which the read fails as
    /// unavailable. DynamoDB's guidance for unprocessed keys is exactly this: retry with
    /// exponential backoff.
    pub const THROTTLED: Backoff = Backoff {
        base: Duration::from_millis(25),
        cap: Duration::from_secs(1),
        max_attempts: 8,
    };

    /// The same policy with `max_attempts` attempts (at least 1).
    #[must_use]
    pub const fn with_attempts(self, max_attempts: u32) -> Backoff {
        Backoff {
            max_attempts: if max_attempts == 0 { 1 } else { max_attempts },
            ..self
        }
    }

    /// The longest wait before retry `retry` (1 for the first): `min(cap, base × 2^(retry−1))`;
    /// zero for retry 0 (the first try does not wait).
    pub fn ceiling(&self, retry: u32) -> Duration {
        if retry == 0 {
            return Duration::ZERO;
        }
        let doublings = (retry - 1).min(31);
        self.base
            .checked_mul(1u32 << doublings)
            .map_or(self.cap, |d| d.min(self.cap))
    }

    /// The wait before retry `retry` for a uniform draw `unit` in `[0, 1]`: `unit × ceiling`.
    /// A `unit` outside `[0, 1]` (or NaN) is clamped into it.
    pub fn delay_for(&self, retry: u32, unit: f64) -> Duration {
        let unit = if unit.is_nan() {
            0.0
        } else {
            unit.clamp(0.0, 1.0)
        };
        self.ceiling(retry).mul_f64(unit)
    }

    /// The wait before retry `retry`, drawn at random (full jitter).
    pub fn delay(&self, retry: u32) -> Duration {
        self.delay_for(retry, fastrand::f64())
    }

    /// Whether retry `retry` (1 for the first) is still within [`Backoff::max_attempts`].
    pub fn allows(&self, retry: u32) -> bool {
        retry < self.max_attempts.max(1)
    }
}

/// Waits. The production one is [`TokioSleeper`]; tests record instead ([`RecordingSleeper`]).
#[async_trait::async_trait]
pub trait Sleeper: Send + Sync + std::fmt::Debug {
    /// Waits `d`.
    async fn sleep(&self, d: Duration);
}

/// Sleeps on tokio's timer.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

#[async_trait::async_trait]
impl Sleeper for TokioSleeper {
    async fn sleep(&self, d: Duration) {
        if !d.is_zero() {
            tokio::time::sleep(d).await;
        }
    }
}

/// Records every wait asked of it and returns at once: a test's view of a retry loop's backoff.
#[derive(Debug, Default)]
pub struct RecordingSleeper {
    waits: Mutex<Vec<Duration>>,
}

impl RecordingSleeper {
    /// A sleeper that has recorded nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// The waits asked so far, in order.
    pub fn waits(&self) -> Vec<Duration> {
        self.waits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }
}

#[async_trait::async_trait]
impl Sleeper for RecordingSleeper {
    async fn sleep(&self, d: Duration) {
        self.waits
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(d);
    }
}

/// A [`Backoff`] and the [`Sleeper`] it waits with: what a retry loop holds.
#[derive(Debug, Clone)]
pub struct Retry {
    /// The policy.
    pub backoff: Backoff,
    /// How it waits.
    pub sleeper: Arc<dyn Sleeper>,
}

impl Retry {
    /// `backoff`, sleeping on tokio's timer.
    pub fn new(backoff: Backoff) -> Self {
        Retry {
            backoff,
            sleeper: Arc::new(TokioSleeper),
        }
    }

    /// `backoff`, waiting through `sleeper`.
    pub fn with_sleeper(backoff: Backoff, sleeper: Arc<dyn Sleeper>) -> Self {
        Retry { backoff, sleeper }
    }

    /// Waits before retry `retry` (1 for the first) with full jitter; answers the wait.
    pub async fn pause(&self, retry: u32) -> Duration {
        let d = self.backoff.delay(retry);
        self.sleeper.sleep(d).await;
        d
    }

    /// Whether retry `retry` is still allowed ([`Backoff::allows`]).
    pub fn allows(&self, retry: u32) -> bool {
        self.backoff.allows(retry)
    }
}

impl Default for Retry {
    /// [`Backoff::CONFLICT`] on tokio's timer.
    fn default() -> Self {
        Retry::new(Backoff::CONFLICT)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn the_ceiling_doubles_from_the_base_up_to_the_cap() {
        let b = Backoff::CONFLICT;
        let ceilings: Vec<Duration> = (0..9).map(|n| b.ceiling(n)).collect();
        assert_eq!(
            ceilings,
            [0, 5, 10, 20, 40, 80, 160, 320, 320].map(MS).to_vec()
        );
        // Far past the cap (no overflow at large retry numbers).
        assert_eq!(b.ceiling(u32::MAX), MS(320));
        assert_eq!(Backoff::THROTTLED.ceiling(7), MS(1000));
    }

    #[test]
    fn full_jitter_spans_zero_to_the_ceiling() {
        let b = Backoff::THROTTLED;
        assert_eq!(b.delay_for(3, 0.0), Duration::ZERO);
        assert_eq!(b.delay_for(3, 1.0), MS(100));
        assert_eq!(b.delay_for(3, 0.5), MS(50));
        assert_eq!(b.delay_for(3, 7.0), MS(100), "clamped");
        assert_eq!(b.delay_for(3, f64::NAN), Duration::ZERO, "clamped");
        // Random draws stay within the ceiling and are not all equal (jitter).
        let draws: Vec<Duration> = (0..200).map(|_| b.delay(5)).collect();
        assert!(draws.iter().all(|d| *d <= b.ceiling(5)), "{draws:?}");
        assert!(draws.iter().any(|d| *d != draws[0]), "jittered");
    }

    #[test]
    fn attempts_are_bounded() {
        let b = Backoff::CONFLICT.with_attempts(3);
        assert!(b.allows(1) && b.allows(2));
        assert!(!b.allows(3), "3 attempts: the first try and 2 retries");
        assert_eq!(Backoff::CONFLICT.with_attempts(0).max_attempts, 1);
    }

    #[tokio::test]
    async fn a_retry_waits_through_its_sleeper() {
        let sleeper = Arc::new(RecordingSleeper::new());
        let retry = Retry::with_sleeper(Backoff::CONFLICT, sleeper.clone());
        let waited = [retry.pause(1).await, retry.pause(4).await];
        assert_eq!(sleeper.waits(), waited.to_vec());
        assert!(waited[0] <= MS(5) && waited[1] <= MS(40), "{waited:?}");
    }
}
