//! The sweep (`Watcher::fire_due`) skips a timer whose record cannot be written, fires every
//! timer after it, counts the failure, and fires the skipped one at the next sweep.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::common::apply_raise;
use watcher_core::engine::Effect;
use watcher_core::ids::Tenant;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::directory::Directory;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::metrics::{AttemptOutcome, Recorder, Tally};
use watcher_runtime::watcher::Watcher;

#[derive(Default)]
struct Failures(AtomicU64);

impl Recorder for Failures {
    fn applied(&self, _: &Tally) {}
    fn attempt(&self, _: AttemptOutcome, _: Option<f64>) {}
    fn timer_failed(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn instant(s: &str) -> Instant {
    Instant::parse(s).expect("instant")
}

fn lapses(
    fired: &[(
        watcher_runtime::store::DueTimer,
        watcher_runtime::watcher::Applied,
    )],
) -> Vec<String> {
    fired
        .iter()
        .flat_map(|(_, a)| a.effects.iter())
        .filter_map(|e| match e {
            Effect::Lapsed(l) => Some(l.block.expectation_id.to_string()),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn a_timer_that_fails_is_skipped_counted_and_fired_next_time() {
    let store = Arc::new(MemoryStore::new());
    let failures = Arc::new(Failures::default());
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default())
        .with_recorder(failures.clone());
    let (a, b) = (
        Tenant::parse("tenant-a").expect("tenant"),
        Tenant::parse("tenant-b").expect("tenant"),
    );
    let t0 = instant("2026-09-10T12:00:00Z");
    // Tenant a's deadline comes first, then tenant b's.
    apply_raise(&watcher, &a, ("e-a", "PA-1", "2026-09-10T13:00:00Z"), t0).await;
    apply_raise(&watcher, &b, ("e-b", "PA-2", "2026-09-10T14:00:00Z"), t0).await;

    store.fail_commits_of(Some(a.clone()));
    let sweep = instant("2026-09-10T15:00:00Z");
    let fired = watcher
        .fire_due(sweep)
        .await
        .expect("a failing subject does not fail the sweep");
    assert_eq!(
        lapses(&fired),
        ["e-b"],
        "the timer after the failing one fired"
    );
    assert_eq!(
        failures.0.load(Ordering::SeqCst),
        1,
        "the failure is counted"
    );

    store.fail_commits_of(None);
    let fired = watcher.fire_due(sweep).await.expect("sweep");
    assert_eq!(
        lapses(&fired),
        ["e-a"],
        "the skipped timer fires at the next sweep"
    );
    assert_eq!(failures.0.load(Ordering::SeqCst), 1);
}
