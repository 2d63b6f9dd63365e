//! The Learnables authority over HTTP (contracts/learnables.md), driven with `oneshot`:
//! learnables-v1 Appendix B end to end (in memory and on SQLite), refusals (§10.1, §13.3), undo
//! (§10.3), tombstones (§14), a column-mapping learnable through the same routes (§9),
//! authorization and tenancy (§13.2), `lessons:check` (§13.1), and a definition too large for
//! its store (413).

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use learnables::{DefinitionId, DefinitionState, Registry, TenantId};
use learnables_store::{
    DefinitionBackend, DefinitionStore, DefinitionStoreError, MemoryDefinitionStore,
    SqliteDefinitionStore, Swapped,
};
use serde_json::{json, Value};
use tower::ServiceExt;
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_http::{learnables_router, Credentials, LearnablesState, Principal, Role};
use watcher_runtime::clock::FakeClock;

use scenario::*;

const AGENT: &str = "agent-token";
const OTHER_TENANT_TEACHER: &str = "globex-teacher-token";

// Harness.

fn principal(role: Role, id: &str, tenant: &str, on_behalf_of: &[&str]) -> Principal {
    Principal {
        role,
        id: id.into(),
        tenant: Tenant::parse(tenant).expect("a tenant"),
        on_behalf_of: on_behalf_of.iter().map(ToString::to_string).collect(),
    }
}

fn credentials() -> Credentials {
    let mut c = Credentials::new();
    let all = [
        (
            TEACHER,
            principal(Role::Teacher, "teacher-console", "acme-logistics", &[DANA]),
        ),
        (
            OPERATOR,
            principal(Role::Operator, "ops-dashboard", "acme-logistics", &[]),
        ),
        (
            SOURCE,
            principal(Role::Source, "edi-feed", "acme-logistics", &[DANA]),
        ),
        (
            AGENT,
            principal(Role::Agent, "triage-agent", "acme-logistics", &[DANA]),
        ),
        (
            OTHER_TENANT_TEACHER,
            principal(Role::Teacher, "globex-console", "globex", &[DANA]),
        ),
    ];
    for (token, p) in all {
        c.insert(token, p).expect("a fresh token");
    }
    c
}

fn app(store: Arc<dyn DefinitionStore>) -> Router {
    app_with_reviews(store, None)
}

/// [`app`], telling `reviews` what each lesson and activation did to the definition's reviews.
fn app_with_reviews(
    store: Arc<dyn DefinitionStore>,
    reviews: Option<Arc<dyn watcher_http::lesson_reviews::LessonReviews>>,
) -> Router {
    learnables_router(LearnablesState {
        store,
        credentials: Arc::new(credentials()),
        clock: Arc::new(FakeClock::new(
            Instant::parse("2026-08-17T09:00:00Z").expect("an instant"),
        )),
        registry: Arc::new(Registry::builtin()),
        reviews,
    })
}

fn memory_app() -> Router {
    app(Arc::new(MemoryDefinitionStore::new()))
}

/// Sends one request, its body the text sent, to the router with `oneshot`.
async fn call_text(
    app: &Router,
    method: &str,
    uri: &str,
    token: &str,
    body: Option<String>,
) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    if !token.is_empty() {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = match body {
        Some(b) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b)),
        None => request.body(Body::empty()),
    }
    .expect("a request");
    let response = app.clone().oneshot(request).await.expect("an answer");
    let status = response.status();
    let content_type = header_text(response.headers(), header::CONTENT_TYPE).unwrap_or_default();
    let location = header_text(response.headers(), header::LOCATION);
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| json!(String::from_utf8_lossy(&bytes)))
    };
    Answer {
        status,
        content_type,
        location,
        body,
    }
}

mod appendix_b;
mod authorization;
mod check_and_races;
mod column_mapping;
mod noticed_once;
mod refusals;
mod reviews;
mod scenario;
mod undo;
