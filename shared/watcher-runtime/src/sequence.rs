//! Time-ordered ids: raising-order numbers and row ids that no shared item hands out
//! (docs/interpretation.md "Raising order without a counter", docs/dynamodb.md).
//!
//! An id is a `u64`: the microseconds since the Unix epoch in the high 54 bits, and an
//! instance number (random per [`TimeOrdered`], [`INSTANCE_BITS`] bits) in the low bits. One
//! generator answers strictly increasing ids (a clock that stands still or steps back borrows
//! the next microsecond); generators with different instance numbers never answer the same id;
//! ids of different generators are ordered by their clocks, so across processes the order is
//! the order in time to within the clocks' disagreement. Ids are not dense.
//!
//! Every id is at least [`FIRST_TIME_ORDERED`] (2^60, a microsecond of 2005), so it orders after
//! every number a dense counter handed out before (a table written by a version that counted).

use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use watcher_core::slice::Slice;

use crate::clock::Clock;

/// Low bits of an id that hold the generator's instance number.
pub const INSTANCE_BITS: u32 = 10;

/// One microsecond in an id: the step between two ids of one generator.
pub const TICK: u64 = 1 << INSTANCE_BITS;

/// The smallest time-ordered id (2^60, a microsecond of October 2005). Numbers below it were
/// handed out by a counter; every time-ordered id is greater than all of them.
pub const FIRST_TIME_ORDERED: u64 = 1 << 60;

/// Largest id: 2^63 − 1, so that an id fits a signed 64-bit column (SQLite) as well
/// (microseconds up to the year 2255).
pub const LAST_TIME_ORDERED: u64 = i64::MAX as u64;

/// A source of time-ordered ids (module docs), shared by clones.
#[derive(Clone)]
pub struct TimeOrdered {
    clock: Arc<dyn Clock>,
    instance: u64,
    last: Arc<AtomicU64>,
}

impl std::fmt::Debug for TimeOrdered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimeOrdered")
            .field("instance", &self.instance)
            .field("last", &self.last.load(Ordering::Relaxed))
            .finish()
    }
}

impl TimeOrdered {
    /// A generator reading `clock`, with a random instance number.
    pub fn new(clock: Arc<dyn Clock>) -> Self {
        let instance = RandomState::new().hash_one(std::process::id()) & (TICK - 1);
        Self::with_instance(clock, instance)
    }

    /// A generator reading `clock` with instance number `instance` (its low [`INSTANCE_BITS`]
    /// bits), for tests.
    pub fn with_instance(clock: Arc<dyn Clock>, instance: u64) -> Self {
        TimeOrdered {
            clock,
            instance: instance & (TICK - 1),
            last: Arc::new(AtomicU64::new(0)),
        }
    }

    /// This generator's instance number (the low [`INSTANCE_BITS`] bits of its ids).
    pub fn instance(&self) -> u64 {
        self.instance
    }

    /// The next id: greater than every id this generator (and its clones) answered before.
    pub fn next(&self) -> u64 {
        self.next_block(1)
    }

    /// The first of `n` ids `first + i × TICK` (`i` in `0..n`), all reserved for the caller:
    /// greater than every id answered before, and never answered again. `n` = 0 counts as 1.
    pub fn next_block(&self, n: u64) -> u64 {
        let span = n.max(1).saturating_sub(1).saturating_mul(TICK);
        let now = id_at(self.clock.now().as_nanos() / 1000, self.instance);
        let mut first = 0;
        // `fetch_update` retries the closure until its compare-and-swap lands.
        let _ = self
            .last
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
                first = if last == 0 {
                    now
                } else {
                    now.max(last.saturating_add(TICK))
                };
                Some(first.saturating_add(span))
            });
        first
    }
}

/// The id of microsecond `micros` for `instance`, clamped to
/// [`FIRST_TIME_ORDERED`]..=[`LAST_TIME_ORDERED`].
fn id_at(micros: i128, instance: u64) -> u64 {
    let first = i128::from(FIRST_TIME_ORDERED >> INSTANCE_BITS);
    let last = i128::from(LAST_TIME_ORDERED >> INSTANCE_BITS);
    let micros = u64::try_from(micros.clamp(first, last)).unwrap_or(FIRST_TIME_ORDERED);
    (micros << INSTANCE_BITS) | instance
}

/// The greatest input number stored in `slice`: raising orders of its records and the inputs
/// of its tasks' statuses. 0 when there is none.
pub fn greatest_in(slice: &Slice) -> u64 {
    let records = slice
        .subjects
        .values()
        .flat_map(|s| s.records.iter().map(|r| r.order.input));
    let statuses = slice.tasks.values().flatten().flat_map(|t| {
        t.statuses
            .iter()
            .chain(t.withdrawn_by.iter())
            .map(|seen| seen.seq)
    });
    records.chain(statuses).max().unwrap_or(0)
}

/// The input number a step over `slice` uses: `seq`, or one more than the greatest number
/// stored in the slice when `seq` is not above it. So an input is ordered after every input
/// already recorded on the subjects and tasks it touches, whatever the clocks of the processes
/// that numbered them (docs/interpretation.md "Raising order without a counter").
pub fn above_slice(seq: u64, slice: &Slice) -> u64 {
    let greatest = greatest_in(slice);
    if seq > greatest {
        seq
    } else {
        greatest.saturating_add(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use watcher_core::time::Instant;

    fn clock(at: &str) -> Arc<FakeClock> {
        Arc::new(FakeClock::new(Instant::parse(at).unwrap()))
    }

    #[test]
    fn ids_hold_the_microsecond_and_the_instance() {
        let c = clock("2026-09-10T12:00:00.000001Z");
        let g = TimeOrdered::with_instance(c, 5);
        let id = g.next();
        let micros = Instant::parse("2026-09-10T12:00:00.000001Z")
            .unwrap()
            .as_nanos()
            / 1000;
        assert_eq!(id, (u64::try_from(micros).unwrap() << INSTANCE_BITS) | 5);
        assert!((FIRST_TIME_ORDERED..=LAST_TIME_ORDERED).contains(&id));
    }

    #[test]
    fn one_generator_strictly_increases_when_its_clock_stands_or_steps_back() {
        let c = clock("2026-09-10T12:00:00Z");
        let g = TimeOrdered::with_instance(c.clone(), 7);
        let a = g.next();
        let b = g.next();
        c.set(Instant::parse("2026-09-10T11:00:00Z").unwrap());
        let d = g.next();
        assert!(a < b && b < d, "{a} < {b} < {d}");
        assert!([a, b, d].iter().all(|id| id & (TICK - 1) == 7));
        let first = g.next_block(3);
        assert!(first > d);
        assert_eq!(g.next(), first + 3 * TICK, "a block reserves its ids");
    }

    #[test]
    fn two_generators_order_by_time_and_never_collide() {
        let c = clock("2026-09-10T12:00:00Z");
        let a = TimeOrdered::with_instance(c.clone(), 1);
        let b = TimeOrdered::with_instance(c.clone(), 2);
        let (x, y) = (a.next(), b.next());
        assert_ne!(x, y, "same microsecond, different instances");
        c.set(Instant::parse("2026-09-10T12:00:00.000002Z").unwrap());
        assert!(
            a.next() > y && b.next() > x,
            "a later microsecond orders after"
        );
    }

    #[test]
    fn clocks_outside_the_range_are_clamped() {
        let early = TimeOrdered::with_instance(clock("1970-01-01T00:00:00Z"), 0);
        assert_eq!(early.next(), FIRST_TIME_ORDERED);
        let late = TimeOrdered::with_instance(clock("9999-12-31T23:59:59Z"), 3);
        assert!(late.next() <= LAST_TIME_ORDERED);
    }
}
