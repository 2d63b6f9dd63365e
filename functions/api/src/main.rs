//! The API function: the watcher's routes (contracts/serve.md) behind an API Gateway HTTP API —
//! agents' push webhooks, carrier fact webhooks, and the operators' read routes. The same axum
//! router `a2a-watcher serve` runs, hosted by `lambda_http`.

use std::sync::Arc;

use tokio::sync::Notify;
use watcher_http::{watcher_router, AppState};
use watcher_runtime::clock::SystemClock;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    watcher_lambda::init_tracing();
    let parts = watcher_lambda::env::from_env()
        .await
        .map_err(|e| format!("{e:#}"))?;
    let app = watcher_router(AppState {
        watcher: parts.watcher,
        credentials: parts.credentials,
        clock: Arc::new(SystemClock),
        // No in-process loops to wake: schedules and the queue carry the work.
        wake: Arc::new(Notify::new()),
    })
    .fallback(watcher_http::not_found)
    .method_not_allowed_fallback(watcher_http::method_not_allowed);
    lambda_http::run(app).await
}
