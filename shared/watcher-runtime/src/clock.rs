//! The watcher's clock, owned by the shell (style: "time is an argument"). The engine never
//! reads it; adapters pass `now` in.

use std::sync::Mutex;

use watcher_core::time::Instant;

/// A source of the current UTC instant.
pub trait Clock: Send + Sync {
    /// Now, on the watcher's clock.
    fn now(&self) -> Instant;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        // A system clock reads a year between 1 and 9999; saturate rather than panic if not.
        let now = jiff::Timestamp::now();
        Instant::from_timestamp(now).unwrap_or(if now.as_second() < 0 {
            Instant::MIN
        } else {
            Instant::MAX
        })
    }
}

/// A clock tests set by hand.
#[derive(Debug)]
pub struct FakeClock(Mutex<Instant>);

impl FakeClock {
    /// A clock stopped at `at`.
    pub fn new(at: Instant) -> Self {
        FakeClock(Mutex::new(at))
    }

    /// Moves the clock to `at`.
    pub fn set(&self, at: Instant) {
        if let Ok(mut t) = self.0.lock() {
            *t = at;
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> Instant {
        self.0
            .lock()
            .map(|t| *t)
            .unwrap_or_else(|p| *p.into_inner())
    }
}
