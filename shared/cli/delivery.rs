//! `serve`'s lapse-task delivery loop over the shared submitter (`watcher-delivery`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Notify};
use watcher_core::ids::{AgentId, Tenant};
use watcher_delivery::deliver::Submitter;
use watcher_delivery::endpoint::AgentEndpoint;
use watcher_runtime::clock::Clock;
use watcher_runtime::store::Store;

/// Longest the loop sleeps before looking at the outbox again (backoffs end on their own clock).
const POLL: Duration = Duration::from_millis(500);

/// Posts queued lapse tasks until stopped: woken when new ones are queued, and at least every
/// half second for retries whose backoff has ended. One pass at a time, so a messageId is
/// never in flight twice.
pub async fn delivery_loop(
    store: Arc<dyn Store>,
    submitter: Submitter,
    endpoints: HashMap<(Tenant, AgentId), AgentEndpoint>,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        match submitter
            .deliver_due(&*store, &endpoints, clock.now(), 64)
            .await
        {
            Ok(report) => tracing::debug!(?report, "delivery pass"),
            Err(e) => tracing::error!(error = %e, "delivery pass failed; will retry"),
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {},
            () = wake.notified() => {},
            _ = stop.changed() => return,
        }
    }
}
