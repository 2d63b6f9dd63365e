//! `serve`'s timer loop: due deadlines and horizons fired from the store's deadline index, at
//! once after a restart and late (expectations-v1 §10.1), the lapse tasks they queue handed to
//! the delivery lanes as they are committed.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};
use watcher_runtime::clock::Clock;
use watcher_runtime::store::{DueTimer, Store};
use watcher_runtime::watcher::{Applied, Watcher};

/// Longest the timer loop sleeps before looking again: a safety net under the wake-ups (the
/// record, not the in-memory wait, is what decides).
const MAX_IDLE: Duration = Duration::from_secs(1);

/// Fires due deadlines and horizons. On start this evaluates everything that fell due while the
/// process was down, at once and late (§10.1), from the store's deadline index. What the firings
/// queue is handed to the delivery lanes in small groups as they are committed
/// ([`Watcher::fire_due_handing_over`]).
pub async fn timer_loop(
    watcher: Arc<Watcher<dyn Store>>,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        let now = clock.now();
        // The delivery lanes are woken after each small group of firings that queued a lapse
        // task, so a burst is delivered as it is decided, not once its last lapse is committed.
        let mut hand_over = |group: &[(DueTimer, Applied)]| {
            if group.iter().any(|(_, a)| !a.outbox.is_empty()) {
                wake.notify_waiters();
            }
        };
        // Fired together in each group (the SQLite store takes raising-order numbers and
        // commits in the order asked, so the firing order is kept): one sync per group.
        match watcher
            .fire_due_handing_over(now, true, &mut hand_over)
            .await
        {
            Ok(fired) if !fired.is_empty() => tracing::debug!(
                fired = fired.len(),
                ms = (clock.now().as_nanos() - now.as_nanos()) / 1_000_000,
                "fired due timers"
            ),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "firing due timers failed; will retry"),
        }
        let wait = match watcher.store.next_timer().await {
            Ok(Some(t)) => {
                let ns = t.at.as_nanos() - clock.now().as_nanos();
                Duration::from_nanos(ns.clamp(1_000_000, MAX_IDLE.as_nanos() as i128) as u64)
            }
            _ => MAX_IDLE,
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {},
            () = wake.notified() => {},
            _ = stop.changed() => return,
        }
    }
}
