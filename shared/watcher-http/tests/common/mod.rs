//! What the operator-route tests share: the three agents with the booking card, the operator
//! `ops-desk`, the router over a watcher, and an operator's request answered with `oneshot`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::sync::Notify;
use tower::ServiceExt;
use watcher_core::card::declaration_from_card;
use watcher_core::engine::AgentProfile;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_core::time::Instant;
use watcher_http::{watcher_router, AppState, Credentials, Principal, Role};
use watcher_runtime::clock::FakeClock;
use watcher_runtime::directory::{AgentEntry, Directory};
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;

/// The bearer token of the operator `ops-desk`.
pub const OPERATOR: &str = "ops-token";

const CARD: &str = include_str!("../../../../examples/booking-card.json");

/// The agents `booking`, `ops-bot` and `quiet` of the default tenant, each with the booking card
/// and submitting its lapse tasks.
pub fn three_agents() -> Directory {
    let card: Value = serde_json::from_str(CARD).unwrap();
    let directory = Directory::new();
    for id in ["booking", "ops-bot", "quiet"] {
        directory.insert(AgentEntry {
            tenant: Tenant::default_tenant(),
            profile: AgentProfile {
                id: AgentId::parse(id).unwrap(),
                declaration: declaration_from_card(&card).unwrap(),
            },
            submits_lapses: true,
            delivery: Delivery::default(),
        });
    }
    directory
}

/// The watcher's routes over `watcher` for the operator `ops-desk` of the default tenant (bearer
/// [`OPERATOR`]), the clock at 2026-09-11T12:00:00Z, waking the delivery lanes through `wake`.
pub fn operator_router(watcher: Watcher<dyn Store>, wake: Arc<Notify>) -> Router {
    let mut credentials = Credentials::new();
    credentials
        .insert(
            OPERATOR,
            Principal {
                role: Role::Operator,
                id: "ops-desk".into(),
                tenant: Tenant::default_tenant(),
                on_behalf_of: Vec::new(),
            },
        )
        .unwrap();
    watcher_router(AppState {
        watcher: Arc::new(watcher),
        credentials: Arc::new(credentials),
        clock: Arc::new(FakeClock::new(
            Instant::parse("2026-09-11T12:00:00Z").unwrap(),
        )),
        wake,
    })
}

/// The operator's `method uri` request (with a JSON `body`, if any): the status, the
/// `Content-Type`, the body as JSON (`Null` when it is not) and the body's size in bytes.
pub async fn operator_request(
    app: &Router,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, String, Value, usize) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {OPERATOR}"));
    let request = match body {
        Some(b) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b.to_string())),
        None => request.body(Body::empty()),
    }
    .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, content_type, body, bytes.len())
}
