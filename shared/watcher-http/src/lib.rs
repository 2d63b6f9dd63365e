//! The watcher's HTTP API (contracts/serve.md "Routes") as one router factory, so the same
//! routes run under `axum::serve` in `a2a-watcher serve`, under `lambda_http::run` on AWS, and
//! under `oneshot` in tests.

pub mod auth;
pub mod body;
pub mod incidents;
pub mod learnables;
pub mod learnables_answers;
pub mod learnables_requests;
pub mod lesson_reviews;
pub mod limits;
pub mod page;
pub mod problem;
pub mod root;
pub mod route_table;
pub mod routes;
pub mod schemas;
pub mod strict_json;
pub mod trace_context;
pub mod web;
pub mod webhook;

use std::sync::Arc;

use axum::Router;
use tokio::sync::Notify;
use watcher_runtime::clock::Clock;
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;

pub use crate::learnables::{learnables_router, learnables_router_with, LearnablesState};
pub use crate::limits::Limits;
pub use auth::{Credentials, Principal, Role, SourceWebhook};
pub use problem::ApiError;
use route_table::{route, Route};

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
        "no route {}; GET /openapi.json lists the routes",
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

/// The watcher's API routes (contracts/serve.md "Routes"), without the web page's: one table
/// builds [`watcher_router_with`] and lists them for [`api_routes`].
fn api_table() -> Vec<Route<AppState>> {
    use route_table::Method::{Get, Post};
    vec![
        route(Get, "/", root::root),
        route(Get, "/openapi.json", root::openapi),
        route(Get, "/healthz", routes::healthz),
        route(Post, "/v1/agents/{agent_id}/push", routes::push),
        route(Get, "/v1/agents/{agent_id}/rejections", routes::rejections),
        route(Post, "/v1/facts", routes::facts),
        route(Post, "/v1/sources/{source_id}/webhook", webhook::webhook),
        route(
            Get,
            "/v1/sources/{source_id}/rejections",
            routes::source_rejections,
        ),
        route(
            Get,
            "/v1/subjects/{subject_type}/{subject_id}",
            routes::subject,
        ),
        route(
            Get,
            "/v1/subjects/{subject_type}/{subject_id}/timeline.svg",
            routes::timeline,
        ),
        route(Get, "/v1/lapses", routes::lapses),
        route(Post, "/v1/lapses/retry", routes::retry_lapses),
        route(Get, "/v1/agents", routes::agents),
        route(Get, "/v1/incidents", routes::incidents),
        route(
            Post,
            "/v1/incidents/acknowledge",
            routes::acknowledge_incident,
        ),
        route(Get, "/v1/schemas/{file}", schemas::get_schema),
    ]
}

/// `(method, path)` of every API route [`watcher_router_with`] answers (axum's path patterns:
/// `{name}` is one segment); the web page's are [`web::web_routes`]. Deployments that declare
/// their routes (`template.yaml`) and `docs/openapi.json` are checked against this list.
pub fn api_routes() -> Vec<(route_table::Method, &'static str)> {
    route_table::list(&api_table())
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
    let routes = route_table::build(api_table()).with_state(state);
    limits::apply(routes, limits)
        .merge(web)
        .layer(axum::middleware::from_fn(trace_context::layer))
        .layer(tower_http::trace::TraceLayer::new_for_http())
}
