//! Per-agent rate limiting of lapse-task submissions (expectations-v1 §13.2 SHOULD): a token
//! bucket per (tenant, agent), with `now` passed in.
//!
//! Implemented as GCRA (the "virtual scheduling" form of a token bucket): one instant per key,
//! the theoretical arrival time of the next request, so the state is tiny and the arithmetic exact.
//! The arithmetic is one pure function, [`gcra`]; where the state lives is a [`RateBuckets`]:
//! [`RateLimiter`] keeps it in memory (`serve`, one process), the submitter function keeps it in
//! a DynamoDB item per agent so the limit holds across its concurrent instances.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;

/// How many lapse tasks one agent may be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Sustained rate, in lapse tasks per minute (`[delivery] per_minute`). Default 600 (10 a
    /// second). `0` turns limiting off.
    pub per_minute: u32,
    /// How many may go at once after a quiet spell, the bucket's size (`[delivery] burst`).
    /// Default 100; `0` counts as 1. With the defaults 100 lapses due together go at once and
    /// the next 500 within the minute; excess waits (deferred), never dropped.
    pub burst: u32,
}

impl Default for RateLimit {
    fn default() -> Self {
        RateLimit {
            per_minute: 600,
            burst: 100,
        }
    }
}

impl RateLimit {
    /// No limit at all.
    pub fn unlimited() -> Self {
        RateLimit {
            per_minute: 0,
            burst: 0,
        }
    }

    /// Time between two tokens, in nanoseconds; `None` when unlimited.
    fn interval_nanos(&self) -> Option<i128> {
        (self.per_minute > 0).then(|| 60_000_000_000i128 / i128::from(self.per_minute))
    }
}

/// One GCRA step, pure: given the key's theoretical arrival time `tat` (nanoseconds since the
/// epoch; `None` for a key never seen, a full bucket) and `now`, answers `Ok(Some(tat'))` when a
/// token is taken (keep `tat'`), `Ok(None)` when `limit` is unlimited (nothing to keep), or
/// `Err(at)`, the earliest instant a token is free, when the bucket is empty (keep nothing).
///
/// # Errors
/// `Err(at)` as above.
pub fn gcra(limit: RateLimit, tat: Option<i128>, now: Instant) -> Result<Option<i128>, Instant> {
    gcra_many(limit, tat, now, 1).map(|(_, next)| next)
}

/// Up to `n` GCRA steps at once, pure: what `n` calls of [`gcra`] at `now` would take, stopping
/// at the first refusal. Answers `Ok((k, Some(tat')))` when `k` tokens (1 ≤ `k` ≤ `n`) are taken
/// (keep `tat'`), `Ok((n, None))` when `limit` is unlimited, or `Err(at)`, the earliest instant a
/// token is free, when not even one is (keep nothing). `n` of 0 counts as 1.
///
/// # Errors
/// `Err(at)` as above.
pub fn gcra_many(
    limit: RateLimit,
    tat: Option<i128>,
    now: Instant,
    n: u32,
) -> Result<(u32, Option<i128>), Instant> {
    let n = n.max(1);
    let Some(interval) = limit.interval_nanos() else {
        return Ok((n, None));
    };
    let tolerance = interval * i128::from(limit.burst.max(1) - 1);
    let t = now.as_nanos();
    let tat = tat.unwrap_or(t).max(t);
    // The j-th token (from 0) is free when `tat + j * interval - tolerance <= t`.
    let room = t + tolerance - tat;
    if room < 0 {
        return Err(Instant::from_nanos(tat - tolerance).unwrap_or(now));
    }
    let k = u32::try_from(room / interval + 1)
        .unwrap_or(u32::MAX)
        .min(n);
    Ok((k, Some(tat + i128::from(k) * interval)))
}

/// Why a shared bucket could not be consulted.
#[derive(Debug, thiserror::Error)]
#[error("rate bucket unavailable: {0}")]
pub struct BucketError(pub String);

/// Where the token buckets of [`RateLimit`] are kept, per (tenant, agent).
#[async_trait::async_trait]
pub trait RateBuckets: Send + Sync {
    /// Takes a token for one submission to `agent` of `tenant` at `now`.
    ///
    /// # Errors
    /// `Ok(Err(at))` when the bucket is empty: `at` is the earliest instant a token is free and
    /// nothing is taken. `Err(_)` when the buckets' store cannot be read or written (the caller
    /// takes it as a store failure and tries again later).
    async fn try_acquire(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        now: Instant,
    ) -> Result<Result<(), Instant>, BucketError>;

    /// Takes up to `n` tokens at once for submissions to `agent` of `tenant` at `now`, as `n`
    /// calls of [`RateBuckets::try_acquire`] would, stopping at the first refusal: `Ok(Ok(k))`,
    /// `1 ≤ k ≤ n`, tokens taken. The default asks one token at a time; a shared store answers
    /// with one conditional write ([`gcra_many`]). A token taken and not used is spent: the
    /// agent is sent less, never more, than its rate.
    ///
    /// # Errors
    /// As [`RateBuckets::try_acquire`]: `Ok(Err(at))` when not even one token is free.
    async fn try_acquire_many(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        n: u32,
        now: Instant,
    ) -> Result<Result<u32, Instant>, BucketError> {
        let mut taken = 0;
        while taken < n.max(1) {
            match self.try_acquire(tenant, agent, now).await? {
                Ok(()) => taken += 1,
                Err(at) if taken == 0 => return Ok(Err(at)),
                Err(_) => break,
            }
        }
        Ok(Ok(taken))
    }
}

/// Tokens already taken for one (tenant, agent) ([`RateBuckets::try_acquire_many`]), handed out
/// before `inner` is asked: the SQS-fed submitter takes a batch's tokens for an agent at once
/// rather than one write per lapse task.
pub struct Prepaid<'a> {
    inner: &'a dyn RateBuckets,
    tenant: Tenant,
    agent: AgentId,
    left: std::sync::atomic::AtomicU32,
}

impl<'a> Prepaid<'a> {
    /// `left` tokens of `agent` of `tenant`, then `inner`'s.
    pub fn new(inner: &'a dyn RateBuckets, tenant: Tenant, agent: AgentId, left: u32) -> Self {
        Prepaid {
            inner,
            tenant,
            agent,
            left: std::sync::atomic::AtomicU32::new(left),
        }
    }

    /// Tokens not handed out yet.
    pub fn left(&self) -> u32 {
        self.left.load(std::sync::atomic::Ordering::Acquire)
    }
}

#[async_trait::async_trait]
impl RateBuckets for Prepaid<'_> {
    async fn try_acquire(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        now: Instant,
    ) -> Result<Result<(), Instant>, BucketError> {
        use std::sync::atomic::Ordering;
        if *tenant == self.tenant
            && *agent == self.agent
            && self
                .left
                .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                .is_ok()
        {
            return Ok(Ok(()));
        }
        self.inner.try_acquire(tenant, agent, now).await
    }
}

#[async_trait::async_trait]
impl RateBuckets for RateLimiter {
    async fn try_acquire(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        now: Instant,
    ) -> Result<Result<(), Instant>, BucketError> {
        Ok(RateLimiter::try_acquire(self, tenant, agent, now))
    }

    async fn try_acquire_many(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        n: u32,
        now: Instant,
    ) -> Result<Result<u32, Instant>, BucketError> {
        Ok(RateLimiter::try_acquire_many(self, tenant, agent, n, now))
    }
}

/// Keys kept before idle ones are forgotten.
const PRUNE_ABOVE: usize = 1024;

/// Token buckets keyed by (tenant, agent). Shareable (`&self` methods, a short internal lock
/// never held across an await).
#[derive(Debug)]
pub struct RateLimiter {
    limit: RateLimit,
    /// Theoretical arrival time of each key's next request, in nanoseconds since the epoch.
    tat: Mutex<HashMap<(Tenant, AgentId), i128>>,
}

impl RateLimiter {
    /// A limiter applying `limit` to every agent.
    pub fn new(limit: RateLimit) -> Self {
        RateLimiter {
            limit,
            tat: Mutex::new(HashMap::new()),
        }
    }

    /// The limit applied.
    pub fn limit(&self) -> RateLimit {
        self.limit
    }

    /// Takes a token for one submission to `agent` of `tenant` at `now`.
    ///
    /// # Errors
    /// `Err(at)` when the bucket is empty: `at` is the earliest instant a token is free. Nothing
    /// is taken then; ask again at `at`.
    pub fn try_acquire(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        now: Instant,
    ) -> Result<(), Instant> {
        self.try_acquire_many(tenant, agent, 1, now).map(|_| ())
    }

    /// Takes up to `n` tokens at once for `agent` of `tenant` at `now` ([`gcra_many`]): the
    /// number taken, at least 1.
    ///
    /// # Errors
    /// `Err(at)` when not even one token is free: `at` is the earliest instant one is.
    pub fn try_acquire_many(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        n: u32,
        now: Instant,
    ) -> Result<u32, Instant> {
        if self.limit.interval_nanos().is_none() {
            return Ok(n.max(1));
        }
        let t = now.as_nanos();
        // A poisoned lock only means another thread panicked mid-update of a plain map of
        // instants; the data is still usable.
        let mut map = self
            .tat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if map.len() > PRUNE_ABOVE {
            // A key whose arrival time has passed holds a full bucket: same as absent.
            map.retain(|_, tat| *tat > t);
        }
        let key = (tenant.clone(), agent.clone());
        let (k, next) = gcra_many(self.limit, map.get(&key).copied(), now, n)?;
        if let Some(next) = next {
            map.insert(key, next);
        }
        Ok(k)
    }

    /// Time until a token is free for `agent` at `now` (zero when one is free now).
    pub fn wait_time(&self, tenant: &Tenant, agent: &AgentId, now: Instant) -> Duration {
        let Some(interval) = self.limit.interval_nanos() else {
            return Duration::ZERO;
        };
        let tolerance = interval * i128::from(self.limit.burst.max(1) - 1);
        let t = now.as_nanos();
        let map = self
            .tat
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let tat = map
            .get(&(tenant.clone(), agent.clone()))
            .copied()
            .unwrap_or(t);
        let wait = (tat - tolerance - t).max(0);
        Duration::from_nanos(u64::try_from(wait).unwrap_or(u64::MAX))
    }
}

impl Default for RateLimiter {
    fn default() -> Self {
        RateLimiter::new(RateLimit::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Instant {
        Instant::parse(s).unwrap()
    }

    fn key() -> (Tenant, AgentId) {
        (Tenant::default_tenant(), AgentId::parse("booking").unwrap())
    }

    #[test]
    fn burst_then_one_per_interval() {
        let (t, a) = key();
        let rl = RateLimiter::new(RateLimit {
            per_minute: 2,
            burst: 2,
        });
        let t0 = at("2026-09-10T20:00:00Z");
        assert!(rl.try_acquire(&t, &a, t0).is_ok());
        assert!(rl.try_acquire(&t, &a, t0).is_ok());
        assert_eq!(rl.try_acquire(&t, &a, t0), Err(at("2026-09-10T20:00:30Z")));
        // Refusals take nothing: asking again is refused at the same instant.
        assert_eq!(rl.try_acquire(&t, &a, t0), Err(at("2026-09-10T20:00:30Z")));
        assert_eq!(rl.wait_time(&t, &a, t0), Duration::from_secs(30));
        assert!(rl.try_acquire(&t, &a, at("2026-09-10T20:00:30Z")).is_ok());
        assert_eq!(
            rl.try_acquire(&t, &a, at("2026-09-10T20:00:30Z")),
            Err(at("2026-09-10T20:01:00Z"))
        );
        // After a quiet spell the bucket is full again, but no fuller than `burst`.
        let later = at("2026-09-10T21:00:00Z");
        assert!(rl.try_acquire(&t, &a, later).is_ok());
        assert!(rl.try_acquire(&t, &a, later).is_ok());
        assert!(rl.try_acquire(&t, &a, later).is_err());
    }

    #[test]
    fn agents_and_tenants_have_their_own_buckets() {
        let (t, a) = key();
        let other_agent = AgentId::parse("ops").unwrap();
        let other_tenant = Tenant::parse("acme").unwrap();
        let rl = RateLimiter::new(RateLimit {
            per_minute: 1,
            burst: 1,
        });
        let t0 = at("2026-09-10T20:00:00Z");
        assert!(rl.try_acquire(&t, &a, t0).is_ok());
        assert!(rl.try_acquire(&t, &a, t0).is_err());
        assert!(rl.try_acquire(&t, &other_agent, t0).is_ok());
        assert!(rl.try_acquire(&other_tenant, &a, t0).is_ok());
    }

    #[test]
    fn unlimited_and_zero_burst() {
        let (t, a) = key();
        let t0 = at("2026-09-10T20:00:00Z");
        let free = RateLimiter::new(RateLimit::unlimited());
        for _ in 0..10_000 {
            assert!(free.try_acquire(&t, &a, t0).is_ok());
        }
        let one = RateLimiter::new(RateLimit {
            per_minute: 60,
            burst: 0,
        });
        assert!(one.try_acquire(&t, &a, t0).is_ok());
        assert_eq!(one.try_acquire(&t, &a, t0), Err(at("2026-09-10T20:00:01Z")));
    }

    /// The pure step the DynamoDB buckets share: a key never seen is a full bucket; the state
    /// kept is the next theoretical arrival; a refusal names when a token is free and keeps
    /// nothing; unlimited keeps nothing at all.
    #[test]
    fn the_pure_step() {
        let limit = RateLimit {
            per_minute: 60,
            burst: 2,
        };
        let t0 = at("2026-09-10T20:00:00Z");
        let second = 1_000_000_000i128;
        let first = gcra(limit, None, t0).unwrap().unwrap();
        assert_eq!(first, t0.as_nanos() + second);
        let next = gcra(limit, Some(first), t0).unwrap().unwrap();
        assert_eq!(next, t0.as_nanos() + 2 * second);
        assert_eq!(gcra(limit, Some(next), t0), Err(at("2026-09-10T20:00:01Z")));
        // A state long past is a full bucket again, never fuller.
        assert_eq!(
            gcra(limit, Some(t0.as_nanos()), at("2026-09-10T21:00:00Z")),
            Ok(Some(at("2026-09-10T21:00:01Z").as_nanos()))
        );
        assert_eq!(gcra(RateLimit::unlimited(), None, t0), Ok(None));
    }

    /// Many tokens at once take exactly what as many single steps would, and stop where they
    /// would be refused.
    #[test]
    fn many_at_once_is_many_single_steps() {
        let limit = RateLimit {
            per_minute: 60,
            burst: 3,
        };
        let t0 = at("2026-09-10T20:00:00Z");
        let second = 1_000_000_000i128;
        assert_eq!(
            gcra_many(limit, None, t0, 2),
            Ok((2, Some(t0.as_nanos() + 2 * second)))
        );
        // Three of ten: the bucket holds three.
        assert_eq!(
            gcra_many(limit, None, t0, 10),
            Ok((3, Some(t0.as_nanos() + 3 * second)))
        );
        assert_eq!(
            gcra_many(limit, Some(t0.as_nanos() + 3 * second), t0, 10),
            Err(at("2026-09-10T20:00:01Z"))
        );
        assert_eq!(
            gcra_many(RateLimit::unlimited(), None, t0, 7),
            Ok((7, None))
        );
        let (t, a) = key();
        let rl = RateLimiter::new(limit);
        assert_eq!(rl.try_acquire_many(&t, &a, 2, t0), Ok(2));
        assert_eq!(rl.try_acquire_many(&t, &a, 2, t0), Ok(1));
        assert_eq!(rl.try_acquire(&t, &a, t0), Err(at("2026-09-10T20:00:01Z")));
    }

    /// One GCRA step written out on its own (the textbook form: a token is free when
    /// `tat - tolerance <= now`), the oracle `gcra_many` is checked against.
    fn reference_step(
        limit: RateLimit,
        tat: Option<i128>,
        now: Instant,
    ) -> Result<Option<i128>, Instant> {
        let Some(interval) = limit.interval_nanos() else {
            return Ok(None);
        };
        let tolerance = interval * i128::from(limit.burst.max(1) - 1);
        let t = now.as_nanos();
        let tat = tat.unwrap_or(t).max(t);
        if tat - tolerance > t {
            return Err(Instant::from_nanos(tat - tolerance).unwrap_or(now));
        }
        Ok(Some(tat + interval))
    }

    proptest::proptest! {
        /// `gcra_many` of n is n textbook GCRA steps, stopping at the first refusal, for any
        /// limit, state and instant; `gcra` is the first of them.
        #[test]
        fn many_equals_steps(
            per_minute in 1u32..10_000,
            burst in 0u32..50,
            offset in -5_000_000_000i128..5_000_000_000i128,
            seen in proptest::bool::ANY,
            n in 1u32..60,
        ) {
            let limit = RateLimit { per_minute, burst };
            let now = at("2026-09-10T20:00:00Z");
            let start = seen.then(|| now.as_nanos() + offset);
            let mut tat = start;
            let mut taken = 0u32;
            let mut refused = None;
            proptest::prop_assert_eq!(gcra(limit, start, now), reference_step(limit, start, now));
            while taken < n {
                match reference_step(limit, tat, now) {
                    Ok(next) => {
                        tat = next;
                        taken += 1;
                    }
                    Err(at) => {
                        refused = Some(at);
                        break;
                    }
                }
            }
            let many = gcra_many(limit, start, now, n);
            if taken == 0 {
                proptest::prop_assert_eq!(many, Err(refused.unwrap()));
            } else {
                proptest::prop_assert_eq!(many, Ok((taken, tat)));
            }
        }
    }

    /// Prepaid tokens go first, to their own agent only; then the inner buckets answer.
    #[tokio::test]
    async fn prepaid_tokens_go_first() {
        let (t, a) = key();
        let other = AgentId::parse("ops").unwrap();
        let inner = RateLimiter::new(RateLimit {
            per_minute: 60,
            burst: 1,
        });
        let t0 = at("2026-09-10T20:00:00Z");
        let prepaid = Prepaid::new(&inner, t.clone(), a.clone(), 2);
        for _ in 0..2 {
            assert!(matches!(prepaid.try_acquire(&t, &a, t0).await, Ok(Ok(()))));
        }
        assert_eq!(prepaid.left(), 0);
        // Now the inner bucket's one token, then a refusal.
        assert!(matches!(prepaid.try_acquire(&t, &a, t0).await, Ok(Ok(()))));
        assert!(matches!(prepaid.try_acquire(&t, &a, t0).await, Ok(Err(_))));
        // Another agent never takes the prepaid ones.
        let prepaid = Prepaid::new(&inner, t.clone(), a.clone(), 5);
        assert!(matches!(
            prepaid.try_acquire(&t, &other, t0).await,
            Ok(Ok(()))
        ));
        assert!(matches!(
            prepaid.try_acquire(&t, &other, t0).await,
            Ok(Err(_))
        ));
        assert_eq!(prepaid.left(), 5);
    }

    #[test]
    fn idle_keys_are_pruned() {
        let rl = RateLimiter::new(RateLimit {
            per_minute: 60,
            burst: 1,
        });
        let t0 = at("2026-09-10T20:00:00Z");
        let t = Tenant::default_tenant();
        for i in 0..=PRUNE_ABOVE {
            let a = AgentId::parse(format!("a{i}")).unwrap();
            rl.try_acquire(&t, &a, t0).unwrap();
        }
        let later = at("2026-09-10T20:10:00Z");
        rl.try_acquire(&t, &AgentId::parse("new").unwrap(), later)
            .unwrap();
        assert_eq!(rl.tat.lock().unwrap().len(), 1);
    }
}
