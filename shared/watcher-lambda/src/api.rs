//! The API function's router: the watcher's routes (contracts/serve.md), the same axum router
//! `a2a-watcher serve` runs, over the function's parts. `functions/api` hosts it with
//! `lambda_http`; tests drive it with API Gateway HTTP API (payload 2.0) events.

use std::sync::Arc;

use axum::Router;
use tokio::sync::Notify;
use watcher_http::{watcher_router_with, AppState};
use watcher_runtime::clock::Clock;

use crate::env::Parts;

/// The routes over `parts`, with problem+json answers for unknown routes and methods.
pub fn router(parts: &Parts, clock: Arc<dyn Clock>) -> Router {
    watcher_router_with(
        AppState {
            watcher: parts.watcher.clone(),
            credentials: parts.credentials.clone(),
            clock,
            // No in-process loops to wake: schedules and the queue carry the work.
            wake: Arc::new(Notify::new()),
        },
        parts.limits,
    )
    .fallback(watcher_http::not_found)
    .method_not_allowed_fallback(watcher_http::method_not_allowed)
}
