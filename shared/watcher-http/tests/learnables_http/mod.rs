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
    DefinitionStore, DefinitionStoreError, MemoryDefinitionStore, SqliteDefinitionStore,
};
use serde_json::{json, Value};
use tower::ServiceExt;
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_http::{learnables_router, Credentials, LearnablesState, Principal, Role};
use watcher_runtime::clock::FakeClock;

const DANA: &str = "dana@warehouse.example";
const REASON: &str = "Northgate's billing desk sends the pre-alerts";
const TEACHER: &str = "teacher-token";
const OPERATOR: &str = "operator-token";
const SOURCE: &str = "source-token";
const AGENT: &str = "agent-token";
const OTHER_TENANT_TEACHER: &str = "globex-teacher-token";
const DEF: &str = "/v1/definitions/prealert-triage";

// Harness.

fn principal(role: Role, id: &str, tenant: &str, on_behalf_of: &[&str]) -> Principal {
    Principal {
        role,
        id: id.into(),
        tenant: Tenant::parse(tenant).expect("a tenant"),
        on_behalf_of: on_behalf_of.iter().map(|p| p.to_string()).collect(),
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

/// An answer: status, `Content-Type`, and the body as JSON (`null` when empty).
struct Answer {
    status: StatusCode,
    content_type: String,
    location: Option<String>,
    body: Value,
}

impl Answer {
    /// Asserts a problem+json answer with `status`, and gives its `detail`.
    fn problem(&self, status: StatusCode) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(self.content_type, "application/problem+json");
        assert_eq!(self.body["status"], json!(status.as_u16()));
        self.body["detail"].as_str().expect("a detail").to_owned()
    }

    fn ok(&self) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "{}", self.body);
        &self.body
    }
}

async fn call(app: &Router, method: &str, uri: &str, token: &str, body: Option<Value>) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    if !token.is_empty() {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = match body {
        Some(b) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b.to_string())),
        None => request.body(Body::empty()),
    }
    .expect("a request");
    let response = app.clone().oneshot(request).await.expect("an answer");
    let status = response.status();
    let text_header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = text_header(header::CONTENT_TYPE).unwrap_or_default();
    let location = text_header(header::LOCATION);
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

async fn get(app: &Router, uri: &str, token: &str) -> Answer {
    call(app, "GET", uri, token, None).await
}

async fn post(app: &Router, uri: &str, token: &str, body: Value) -> Answer {
    call(app, "POST", uri, token, Some(body)).await
}

// Fixtures: the spec's Appendix B.

fn customers() -> Value {
    json!({
        "customers": {
            "learnable": "marks",
            "entry": "customer",
            "teaches": "which customer a message belongs to",
            "skills": ["triage_inbound", "recheck_message"],
            "entries": {
                "northgate": { "label": "Northgate Motors Ltd", "value": { "marks": [
                    { "pattern": "@northgate-motors\\.example", "where": "from" },
                    { "pattern": "NGM-\\d{6}", "where": "subject" }
                ] } },
                "alhamra": { "label": "Al Hamra Trading", "value": { "marks": [
                    { "pattern": "alhamra\\.example" }
                ] } }
            }
        }
    })
}

fn billing_message() -> Value {
    json!({
        "from": "billing@origin.example",
        "subject": "Pre-alert PA-2026-0901",
        "body": "Please find the pre-alert attached.",
        "attachments": ["PA-2026-0901.pdf"]
    })
}

fn lesson(entry: &str, pattern: &str, taught_by: &str) -> Value {
    json!({
        "collection": "customers",
        "entry": entry,
        "value": { "pattern": pattern, "where": "from" },
        "taughtBy": taught_by,
        "reason": REASON
    })
}

fn billing_lesson() -> Value {
    lesson("northgate", "billing@origin\\.example", DANA)
}

/// `PUT`s the Appendix B definition; gives the 201 answer's body.
async fn create_definition(app: &Router) -> Value {
    let created = call(
        app,
        "PUT",
        DEF,
        TEACHER,
        Some(json!({ "collections": customers(), "taughtBy": DANA, "reason": "first cut" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.location.as_deref(), Some(DEF));
    created.body
}

async fn show_back(app: &Router, token: &str) -> Value {
    post(
        app,
        &format!("{DEF}/show-back"),
        token,
        json!({ "input": billing_message() }),
    )
    .await
    .ok()
    .clone()
}

async fn active_version(app: &Router) -> u64 {
    get(app, DEF, TEACHER).await.ok()["definitionVersion"]
        .as_u64()
        .expect("a version number")
}

mod appendix_b;
mod authorization;
mod check_and_races;
mod column_mapping;
mod refusals;
mod reviews;
mod undo;
