//! `serve`'s retention loop (expectations-v1 §14, serve.md `retention_days`).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use watcher_runtime::clock::Clock;
use watcher_runtime::store::Store;

/// How often the retention loop purges (expectations-v1 §14); it also purges once at start.
const PURGE_EVERY: Duration = Duration::from_secs(3600);

/// Forgets what the retention period allows (expectations-v1 §14, serve.md `retention_days`):
/// once at start, then every `PURGE_EVERY`. The SQLite store deletes in small batches and
/// frees the connection between them, so requests go on during a large purge. A failed purge
/// stops at the failing batch (earlier batches' deletions stand; the rule allowed them); it is
/// logged and tried again at the next round.
pub async fn retention_loop(
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    retention_days: u32,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if let Some(before) = watcher_runtime::retention::purge_before(clock.now(), retention_days)
        {
            match store.purge(before).await {
                Ok(report) => tracing::info!(
                    %before,
                    retention_days,
                    subjects = report.subjects,
                    outbox = report.outbox,
                    rejections = report.rejections,
                    tasks = report.tasks,
                    "retention purge"
                ),
                Err(e) => {
                    tracing::error!(error = %e, %before, "retention purge failed; will retry");
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(PURGE_EVERY) => {},
            _ = stop.changed() => return,
        }
    }
}
