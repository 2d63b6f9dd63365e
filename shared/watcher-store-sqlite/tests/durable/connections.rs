//! Two connections on one file lose nothing.

use super::*;

/// Two stores (two connections) on one file: `BEGIN IMMEDIATE` and the version check inside the
/// transaction keep every update, with writers on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_connections_on_one_file_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let a = Arc::new(SqliteStore::open(&path).unwrap());
    let b = Arc::new(SqliteStore::open(&path).unwrap());
    watcher_runtime::conformance::concurrent_writers_across(vec![a, b]).await;
}
