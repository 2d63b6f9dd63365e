//! When to try a lapse task again: exponential backoff with *equal jitter*, as a pure function of
//! `now` so it is tested without sleeping.
//!
//! Equal jitter (rather than full jitter) keeps at least half of the exponential delay, so a
//! failing agent is never hammered by an unlucky draw of zero, while entries that failed together
//! still spread over the other half.

use std::time::Duration;

use jiff::SignedDuration;
use watcher_core::time::Instant;

/// How patiently a lapse task is retried: by age, not by count (`[delivery]` in serve's
/// configuration). A retryable failure is retried, with capped exponential backoff and jitter,
/// until the first failure of the run is `give_up_after` old; the last attempt is made at that
/// age, so an agent that comes back before it gets the lapse task.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How long after its first retryable failure a lapse task is still retried. Default 24 h
    /// (`give_up_after = "PT24H"`). Zero gives up at the first retryable failure.
    pub give_up_after: Duration,
    /// Backoff after the first failed attempt (before jitter). Default 1 s.
    pub base: Duration,
    /// Longest backoff. Default 5 min: an agent that recovers gets its lapse tasks at most about
    /// 5 minutes later (less the jitter).
    pub max_backoff: Duration,
    /// The first `GetTask` poll of a followed lapse task comes this long after its delivery;
    /// later ones thin out (half the time followed so far, at most `max_backoff`). Default 10 s.
    pub poll_first: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            give_up_after: Duration::from_secs(24 * 3600),
            base: Duration::from_secs(1),
            max_backoff: Duration::from_secs(5 * 60),
            poll_first: Duration::from_secs(10),
        }
    }
}

impl RetryPolicy {
    /// The un-jittered backoff after `attempts` failed attempts: `base × 2^(attempts−1)`, capped at
    /// `max_backoff`; zero when `attempts` is 0.
    pub fn backoff(&self, attempts: u32) -> Duration {
        if attempts == 0 {
            return Duration::ZERO;
        }
        let factor = 1u32.checked_shl(attempts - 1).unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .unwrap_or(Duration::MAX)
            .min(self.max_backoff)
    }
}

/// The earliest instant of the next attempt after `attempts` failed attempts.
///
/// With `d = backoff(attempts)` (see [`RetryPolicy::backoff`]) the delay is
/// `d/2 + jitter_fraction × d/2` (equal jitter), so it lies in `[d/2, d]`.
///
/// * `now`: the instant of the failure (the caller's clock).
/// * `attempts`: attempts made so far, the failed one included; `0` gives `now`.
/// * `jitter_fraction`: in `[0, 1]`; values outside are clamped and NaN counts as 0.
///
/// Never before `now`, never more than `max_backoff` after it, and non-decreasing in `attempts`
/// for a fixed `jitter_fraction`. Saturates at the end of the representable time range.
///
/// # Example
/// ```
/// # use std::time::Duration;
/// # use watcher_core::time::Instant;
/// # use watcher_delivery::{next_attempt_at, RetryPolicy};
/// let now = Instant::parse("2026-09-10T20:15:00Z").unwrap();
/// let policy = RetryPolicy::default(); // base 1 s, cap 5 min
/// // After the third failure the backoff is 4 s; with jitter 0.5 the delay is 2 + 1 = 3 s.
/// let at = next_attempt_at(now, 3, &policy, 0.5);
/// assert_eq!(at.to_string(), "2026-09-10T20:15:03Z");
/// ```
pub fn next_attempt_at(
    now: Instant,
    attempts: u32,
    policy: &RetryPolicy,
    jitter_fraction: f64,
) -> Instant {
    let d = policy.backoff(attempts);
    let j = if jitter_fraction.is_nan() {
        0.0
    } else {
        jitter_fraction.clamp(0.0, 1.0)
    };
    let half = d / 2;
    let delay = (half + half.mul_f64(j)).min(policy.max_backoff);
    add(now, delay)
}

/// The time from `from` to `to`, zero when `to` is not later.
pub(crate) fn elapsed(from: Instant, to: Instant) -> Duration {
    let ns = to.as_nanos() - from.as_nanos();
    Duration::from_nanos(u64::try_from(ns.max(0)).unwrap_or(u64::MAX))
}

/// `now + d`, saturating at the end of the representable range.
pub(crate) fn add(now: Instant, d: Duration) -> Instant {
    let d = SignedDuration::try_from(d).unwrap_or(SignedDuration::MAX);
    now.checked_add(d).unwrap_or(Instant::MAX)
}

/// A jitter fraction in `[0, 1)` derived from a lapse task's `messageId` and attempt number
/// (64-bit FNV-1a), so entries that failed together spread out while a rerun with the same inputs
/// schedules the same instants (no hidden randomness in the shell's bookkeeping).
pub fn jitter_fraction(message_id: &str, attempts: u32) -> f64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    let mut h = OFFSET;
    for b in message_id
        .as_bytes()
        .iter()
        .chain(&[0xff])
        .chain(&attempts.to_le_bytes())
    {
        h ^= u64::from(*b);
        h = h.wrapping_mul(PRIME);
    }
    // Top 53 bits as a fraction of 2^53: exactly representable, strictly below 1.
    (h >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t0() -> Instant {
        Instant::parse("2026-09-10T20:15:00Z").unwrap()
    }

    fn after(now: Instant, at: Instant) -> Duration {
        Duration::from_nanos(u64::try_from(at.as_nanos() - now.as_nanos()).unwrap())
    }

    #[test]
    fn backoff_doubles_then_caps() {
        let p = RetryPolicy::default();
        let secs: Vec<u64> = (0..=12).map(|n| p.backoff(n).as_secs()).collect();
        assert_eq!(secs, [0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 300, 300, 300]);
        assert_eq!(p.backoff(u32::MAX), p.max_backoff);
    }

    #[test]
    fn jitter_ends_of_the_range() {
        let p = RetryPolicy::default();
        assert_eq!(
            after(t0(), next_attempt_at(t0(), 4, &p, 0.0)),
            Duration::from_secs(4)
        );
        assert_eq!(
            after(t0(), next_attempt_at(t0(), 4, &p, 1.0)),
            Duration::from_secs(8)
        );
        assert_eq!(
            after(t0(), next_attempt_at(t0(), 4, &p, f64::NAN)),
            Duration::from_secs(4)
        );
        assert_eq!(
            after(t0(), next_attempt_at(t0(), 4, &p, 7.0)),
            Duration::from_secs(8)
        );
        assert_eq!(next_attempt_at(t0(), 0, &p, 0.9), t0());
    }

    #[test]
    fn saturates_at_the_end_of_time() {
        let end = Instant::MAX;
        assert_eq!(next_attempt_at(end, 5, &RetryPolicy::default(), 1.0), end);
    }

    #[test]
    fn jitter_fraction_is_stable_and_spread() {
        assert_eq!(jitter_fraction("lapse:a", 1), jitter_fraction("lapse:a", 1));
        assert_ne!(jitter_fraction("lapse:a", 1), jitter_fraction("lapse:a", 2));
        assert_ne!(jitter_fraction("lapse:a", 1), jitter_fraction("lapse:b", 1));
        let xs: Vec<f64> = (0..1000)
            .map(|i| jitter_fraction(&format!("m{i}"), 1))
            .collect();
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((0.4..0.6).contains(&mean), "{mean}");
    }

    fn policies() -> impl Strategy<Value = RetryPolicy> {
        (0u64..10_000, 0u64..1_000_000, 0u64..100_000).prop_map(|(base_ms, cap_ms, age_s)| {
            RetryPolicy {
                give_up_after: Duration::from_secs(age_s),
                base: Duration::from_millis(base_ms),
                max_backoff: Duration::from_millis(cap_ms),
                poll_first: Duration::from_secs(10),
            }
        })
    }

    proptest! {
        #[test]
        fn never_before_now_nor_past_the_cap(
            p in policies(),
            attempts in 0u32..200,
            j in 0.0f64..=1.0,
            secs in 0i64..4_000_000_000,
        ) {
            let now = Instant::from_nanos(i128::from(secs) * 1_000_000_000).unwrap();
            let at = next_attempt_at(now, attempts, &p, j);
            prop_assert!(at >= now);
            prop_assert!(after(now, at) <= p.max_backoff);
            if attempts > 0 {
                prop_assert!(after(now, at) >= p.backoff(attempts) / 2);
            }
        }

        #[test]
        fn monotone_in_attempts_up_to_the_cap(p in policies(), j in 0.0f64..=1.0) {
            let mut prev = t0();
            for attempts in 0..64 {
                let at = next_attempt_at(t0(), attempts, &p, j);
                prop_assert!(at >= prev, "attempt {} went back: {} < {}", attempts, at, prev);
                prev = at;
            }
        }
    }
}
