//! A step whose commit loses to another writer waits before stepping again: exponential backoff
//! with full jitter (`watcher_runtime::retry`), bounded by the step's attempts. Before, it
//! stepped again at once, so writers that collided collided again in step (issue 40).

use std::sync::Arc;
use std::time::Duration;

use watcher_core::fact::parse_fact;
use watcher_core::ids::{Source, Tenant};
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::directory::Directory;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::retry::{Backoff, RecordingSleeper, Retry};
use watcher_runtime::watcher::{ApplyError, Watcher};

fn setup() -> (
    Arc<MemoryStore>,
    Arc<RecordingSleeper>,
    Watcher<MemoryStore>,
) {
    let store = Arc::new(MemoryStore::new());
    let sleeper = Arc::new(RecordingSleeper::new());
    let watcher = Watcher::new(store.clone(), Directory::new(), Settings::default())
        .with_retry(Retry::with_sleeper(Backoff::CONFLICT, sleeper.clone()));
    (store, sleeper, watcher)
}

async fn report(watcher: &Watcher<MemoryStore>) -> Result<usize, ApplyError> {
    let source = Source::parse("carrier-feed").expect("source");
    let fact = parse_fact(
        &serde_json::json!({ "factKey": "shipment.manifest.received:PA-1",
            "observedAt": "2026-09-10T09:59:00Z", "subject": { "type": "shipment", "id": "PA-1" } }),
        &source,
    )
    .expect("a fact");
    let now = Instant::parse("2026-09-10T10:00:00Z").expect("instant");
    let tenant = Tenant::parse("default").expect("tenant");
    watcher
        .report_facts(&tenant, &source, vec![fact], Vec::new(), now)
        .await
        .map(|o| o.results.len())
}

#[tokio::test]
async fn each_lost_commit_waits_with_growing_full_jitter_before_the_next_step() {
    let (store, sleeper, watcher) = setup();
    store.conflict_next_commits(5);
    assert_eq!(report(&watcher).await.expect("recorded after 5 losses"), 1);
    let waits = sleeper.waits();
    assert_eq!(waits.len(), 5, "one wait per lost commit: {waits:?}");
    // Retry n waits within [0, min(320 ms, 5 ms × 2^(n−1))].
    let ceilings = [5, 10, 20, 40, 80].map(Duration::from_millis);
    for (n, (wait, ceiling)) in waits.iter().zip(ceilings).enumerate() {
        assert!(
            wait <= &ceiling,
            "retry {}: waited {wait:?}, ceiling {ceiling:?}",
            n + 1
        );
    }
}

#[tokio::test]
async fn a_step_that_keeps_losing_gives_up_after_its_attempts_having_waited_each_time() {
    let (store, sleeper, watcher) = setup();
    store.conflict_next_commits(1_000);
    let e = report(&watcher).await.expect_err("writers keep winning");
    assert!(matches!(e, ApplyError::Exhausted(32)), "{e:?}");
    let waits = sleeper.waits();
    // 32 loads, each but the first after a lost commit and its wait; none after the last.
    assert_eq!(waits.len(), 31, "{}", waits.len());
    assert!(waits.iter().all(|w| *w <= Duration::from_millis(320)));
    let total: Duration = waits.iter().sum();
    assert!(total > Duration::ZERO, "jittered waits, not all zero");
}
