//! The watcher's HTTP API (contracts/serve.md "Routes") as one router factory, so the same
//! routes run under `axum::serve` in `a2a-watcher serve`, under `lambda_http::run` on AWS, and
//! under `oneshot` in tests.

pub mod auth;
pub mod body;
pub mod learnables;
pub mod limits;
pub mod page;
pub mod problem;
pub mod root;
pub mod routes;
pub mod schemas;
pub mod strict_json;
pub mod web;
pub mod webhook;

use std::sync::Arc;

use axum::routing::{get, post};
use axum::Router;
use tokio::sync::Notify;
use watcher_runtime::clock::Clock;
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;

pub use crate::learnables::{learnables_router, learnables_router_with, LearnablesState};
pub use crate::limits::Limits;
pub use auth::{Credentials, Principal, Role, SourceWebhook};
pub use problem::ApiError;

/// Largest request body accepted by default, in bytes (1 MiB; `[limits] body_bytes`).
pub const MAX_BODY_BYTES: usize = 1024 * 1024;

/// Everything a handler needs; cheap to clone.
#[derive(Clone)]
pub struct AppState {
    /// The engine over the store, with the agent directory.
    pub watcher: Arc<Watcher<dyn Store>>,
    /// Who may call what.
    pub credentials: Arc<Credentials>,
    /// The watcher's clock.
    pub clock: Arc<dyn Clock>,
    /// Woken when new lapse tasks are queued (the delivery loop listens).
    pub wake: Arc<Notify>,
}

/// Answers a route that does not exist with problem+json 404 (axum's default is an empty body).
/// Install with `.fallback(not_found)` on the final, merged router.
pub async fn not_found(uri: axum::http::Uri) -> ApiError {
    ApiError::not_found(format!(
        "no route {}; see the README for the routes",
        uri.path()
    ))
}

/// Answers a known path with the wrong method with problem+json 405.
pub async fn method_not_allowed(method: axum::http::Method, uri: axum::http::Uri) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::METHOD_NOT_ALLOWED,
        "Method not allowed",
        format!("{method} is not allowed on {}", uri.path()),
    )
}

/// The watcher's routes with the default [`Limits`] and request tracing.
pub fn watcher_router(state: AppState) -> Router {
    watcher_router_with(state, Limits::default())
}

/// The watcher's routes with `limits` (body size, JSON depth and strings, facts per request,
/// expectations per artifact; every error problem+json, [`limits::enforce`]) and request
/// tracing.
pub fn watcher_router_with(state: AppState, limits: Limits) -> Router {
    // The web page answers HTML (its own errors and login form), so it sits outside the
    // problem+json layer, with a small body limit of its own (`web::MAX_LOGIN_BYTES`).
    let web = web::web_router(state.clone());
    let routes = Router::new()
        .route("/", get(root::root))
        .route("/openapi.json", get(root::openapi))
        .route("/healthz", get(routes::healthz))
        .route("/v1/agents/{agent_id}/push", post(routes::push))
        .route("/v1/agents/{agent_id}/rejections", get(routes::rejections))
        .route("/v1/facts", post(routes::facts))
        .route("/v1/sources/{source_id}/webhook", post(webhook::webhook))
        .route(
            "/v1/sources/{source_id}/rejections",
            get(routes::source_rejections),
        )
        .route(
            "/v1/subjects/{subject_type}/{subject_id}",
            get(routes::subject),
        )
        .route(
            "/v1/subjects/{subject_type}/{subject_id}/timeline.svg",
            get(routes::timeline),
        )
        .route("/v1/lapses", get(routes::lapses))
        .route("/v1/lapses/retry", post(routes::retry_lapses))
        .route("/v1/agents", get(routes::agents))
        .route("/v1/schemas/{file}", get(schemas::get_schema))
        .with_state(state);
    limits::apply(routes, limits)
        .merge(web)
        .layer(tower_http::trace::TraceLayer::new_for_http())
}
