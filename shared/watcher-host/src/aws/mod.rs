//! The AWS functions' composition (feature `aws`): each function's parts built once per cold
//! start ([`env`](mod@env)), the configured agents' cards kept up to date across function instances
//! ([`cards`]), and the API function's router over the parts ([`api_router`]). The handlers
//! themselves are `watcher_lambda`'s.

pub mod cards;
pub mod env;
#[cfg(feature = "aws-notify")]
pub mod sns;

use std::sync::Arc;

use tokio::sync::Notify;
use watcher_http::AppState;
use watcher_runtime::clock::Clock;

pub use crate::functions::Function;
#[cfg(feature = "aws-notify")]
pub use env::Notifying;
pub use env::{
    assemble, assemble_for, assemble_with_timer_queue, from_config, from_env, notify_settle, Parts,
    Sending, NOTIFY_BUDGET, NOTIFY_SETTLE, NOTIFY_SETTLE_ENV,
};

/// The API function's router over `parts` on `clock` ([`watcher_lambda::api::router`]): the
/// watcher's routes with the function's credentials and `[limits]`, cards picked up before each
/// request.
pub fn api_router(parts: &Parts, clock: Arc<dyn Clock>) -> axum::Router {
    watcher_lambda::api::router(
        AppState {
            watcher: parts.watcher.clone(),
            credentials: parts.credentials.clone(),
            clock,
            // No in-process loops to wake: schedules and the queue carry the work.
            wake: Arc::new(Notify::new()),
        },
        parts.limits,
        parts.cards.clone(),
    )
}
