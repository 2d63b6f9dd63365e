//! issue 22 item 7 on the DynamoDB store's own work counter (`DynamoStore::counting_work`: each
//! `GetItem`, each item a `Query` looked at, each item written): a push, a fact, a status update
//! and two pages cost the same at 99,000 open expectations of one agent as at 1,000. Slow on the emulator, so by hand only
//! (docs/testing.md): with moto started by `bash infra/moto.sh`,
//! `cargo test --release -p watcher-store-dynamodb --test it at_scale -- --ignored --nocapture`
//! prints each step's work. Figures in `docs/performance.md`, "Work per input at 99,000 open on
//! DynamoDB". The emulator answers a Query from the asked partition only (infra/moto_server.py);
//! without that, each Query would cost time in proportion to the table and the run would not end.

use std::sync::Arc;

use crate::common;

/// Each step's work at 1,000 and at `large` open expectations and lapse tasks of one agent,
/// printed; the check itself (at most twice, plus 20) is the conformance suite's.
async fn steps_at(large: usize) {
    let store = Arc::new(common::store().await.counting_work());
    let measured = watcher_runtime::conformance::steps_read_the_same_at(store, 1_000, large).await;
    assert_eq!(measured.len(), 5, "the store counts its work");
    for (step, small, at_large) in measured {
        println!("{step}: work {small} at 1,000 open, {at_large} at {large}");
    }
}

/// 10,000 open: about 100 s on the emulator in a release build.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "slow: 10,000 open expectations on the emulator; run by hand (docs/testing.md)"]
async fn steps_read_the_same_at_10k_open() {
    steps_at(10_000).await;
}

/// 99,000 open (just under the default §13.2 bound of 100,000 per agent): about 12 minutes on
/// the emulator in a release build (some 300,000 requests).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "slow: 99,000 open expectations on the emulator; run by hand (docs/testing.md)"]
async fn steps_read_the_same_at_100k_open() {
    steps_at(99_000).await;
}

/// 1,000,000 open (the §13.2 bound raised for the run by the conformance step): 61 minutes on
/// the emulator in a release build, and some 13 GB of the emulator's memory (moto keeps every
/// item in one Python process, about 13 KB per open expectation with its lapse task). Figures in
/// `docs/performance.md`, "At 1,000,000 open on DynamoDB".
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "slow: 1,000,000 open expectations on the emulator (about an hour, 13 GB); run by hand (docs/testing.md)"]
async fn steps_read_the_same_at_1m_open() {
    steps_at(1_000_000).await;
}
