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
    agents(&["booking", "ops-bot", "quiet"])
}

/// The agents `ids` of the default tenant, each with the booking card and submitting its lapse
/// tasks.
pub fn agents(ids: &[&str]) -> Directory {
    let card: Value = serde_json::from_str(CARD).unwrap();
    let directory = Directory::new();
    for &id in ids {
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

/// The credentials of the default tenant's `parties`, each `(token, role, id)`.
pub fn credentials(parties: &[(&str, Role, &str)]) -> Credentials {
    let mut credentials = Credentials::new();
    for (token, role, id) in parties {
        credentials
            .insert(
                token,
                Principal {
                    role: *role,
                    id: (*id).into(),
                    tenant: Tenant::default_tenant(),
                    on_behalf_of: Vec::new(),
                },
            )
            .unwrap();
    }
    credentials
}

/// `method uri` on `app` with the header `auth` (name, value) and a JSON `body`, if any: the
/// status, the `Content-Type` and the body's bytes.
pub async fn send(
    app: &Router,
    method: &str,
    uri: &str,
    auth: (&str, &str),
    body: Option<&Value>,
) -> (StatusCode, String, axum::body::Bytes) {
    let request = Request::builder()
        .method(method)
        .uri(uri)
        .header(auth.0, auth.1);
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
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (status, content_type, bytes)
}

/// The watcher's routes over `store` with `directory`'s agents and `credentials`, on default
/// settings, the clock stopped at `at` (RFC 3339).
pub fn router_at(
    store: Arc<dyn Store>,
    directory: Directory,
    credentials: Credentials,
    at: &str,
) -> Router {
    watcher_router(AppState {
        watcher: Arc::new(Watcher::new(
            store,
            directory,
            watcher_core::settings::Settings::default(),
        )),
        credentials: Arc::new(credentials),
        clock: Arc::new(FakeClock::new(Instant::parse(at).unwrap())),
        wake: Arc::new(Notify::new()),
    })
}

/// The watcher's routes over `watcher` for the operator `ops-desk` of the default tenant (bearer
/// [`OPERATOR`]), the clock at 2026-09-11T12:00:00Z, waking the delivery lanes through `wake`.
pub fn operator_router(watcher: Watcher<dyn Store>, wake: Arc<Notify>) -> Router {
    let credentials = credentials(&[(OPERATOR, Role::Operator, "ops-desk")]);
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
    let bearer = format!("Bearer {OPERATOR}");
    let (status, content_type, bytes) = send(
        app,
        method,
        uri,
        (header::AUTHORIZATION.as_str(), &bearer),
        body.as_ref(),
    )
    .await;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, content_type, body, bytes.len())
}

/// The booking agent's push token in [`InProcess`].
pub const PUSH_TOKEN: &str = "push-token-booking";
/// The source `carrier-feed:emirates`'s token in [`InProcess`].
pub const SOURCE_TOKEN: &str = "src-token-carrier";

/// The watcher's routes in-process, over a memory store on a simulated clock, with the agent
/// `booking` (its push token [`PUSH_TOKEN`]), the source `carrier-feed:emirates`
/// ([`SOURCE_TOKEN`]) and the operator `ops-desk` ([`OPERATOR`]): the end-to-end tests that
/// need no process (the routes, the engine and the record, with no timer or delivery loop).
pub struct InProcess {
    app: Router,
    /// The watcher's clock; tests move it with `set`.
    pub clock: Arc<FakeClock>,
}

/// A route's answer: its status and its body as JSON (`Null` when it is not).
#[derive(Debug)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Value,
}

impl Answer {
    /// The array `member` of the body (empty when it is not one).
    pub fn list(&self, member: &str) -> Vec<Value> {
        self.body[member].as_array().cloned().unwrap_or_default()
    }

    /// Asserts a problem+json answer with `status`; gives its `detail`.
    pub fn assert_problem(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{self:?}");
        self.body["detail"].as_str().unwrap_or_default().to_owned()
    }
}

impl InProcess {
    /// The routes with the clock at `at` (RFC 3339).
    pub fn at(at: &str) -> InProcess {
        let clock = Arc::new(FakeClock::new(Instant::parse(at).unwrap()));
        let credentials = credentials(&[
            (OPERATOR, Role::Operator, "ops-desk"),
            (PUSH_TOKEN, Role::Agent, "booking"),
            (SOURCE_TOKEN, Role::Source, "carrier-feed:emirates"),
        ]);
        let store: Arc<dyn Store> = Arc::new(watcher_runtime::memory::MemoryStore::new());
        let watcher = Watcher::new(
            store,
            three_agents(),
            watcher_core::settings::Settings::default(),
        );
        let app = watcher_router(AppState {
            watcher: Arc::new(watcher),
            credentials: Arc::new(credentials),
            clock: clock.clone(),
            wake: Arc::new(Notify::new()),
        });
        InProcess { app, clock }
    }

    /// The clock's instant now.
    pub fn now(&self) -> Timestamp {
        use watcher_runtime::clock::Clock as _;
        self.clock.now().timestamp().unwrap()
    }

    async fn send(
        &self,
        method: &str,
        uri: &str,
        auth: (&str, &str),
        body: Option<&Value>,
    ) -> Answer {
        let (status, _, bytes) = send(&self.app, method, uri, auth, body).await;
        Answer {
            status: status.as_u16(),
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }

    /// `POST /v1/agents/booking/push` with the agent's token in `X-A2A-Notification-Token`.
    pub async fn push(&self, body: &Value) -> Answer {
        self.send(
            "POST",
            "/v1/agents/booking/push",
            ("X-A2A-Notification-Token", PUSH_TOKEN),
            Some(body),
        )
        .await
    }

    /// `POST /v1/facts` as the source.
    pub async fn report(&self, body: &Value) -> Answer {
        let bearer = format!("Bearer {SOURCE_TOKEN}");
        self.send("POST", "/v1/facts", ("Authorization", &bearer), Some(body))
            .await
    }

    /// `GET path` as the operator.
    pub async fn get(&self, path: &str) -> Answer {
        let bearer = format!("Bearer {OPERATOR}");
        self.send("GET", path, ("Authorization", &bearer), None)
            .await
    }

    /// `GET path` with `token` as the bearer.
    pub async fn get_as(&self, path: &str, token: &str) -> Answer {
        let bearer = format!("Bearer {token}");
        self.send("GET", path, ("Authorization", &bearer), None)
            .await
    }

    /// `GET /v1/subjects/shipment/{id}` as the operator: the body, or `None` when not 200.
    pub async fn shipment(&self, id: &str) -> Option<Value> {
        let bearer = format!("Bearer {OPERATOR}");
        let a = self
            .send(
                "GET",
                &format!("/v1/subjects/shipment/{id}"),
                ("Authorization", &bearer),
                None,
            )
            .await;
        (a.status == 200).then_some(a.body)
    }
}

// The bodies the in-process tests send.

use jiff::{SignedDuration, Timestamp};
use serde_json::json;

/// The Expectations extension's URI.
pub const URI: &str = "https://rsaxb.com/a2a/expectations/v1";

/// `t` plus `secs` seconds.
pub fn plus(t: Timestamp, secs: i64) -> Timestamp {
    t + SignedDuration::from_secs(secs)
}

/// An instant as the watcher prints whole seconds: `2026-09-10T20:15:00Z`.
pub fn fmt(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A status update of `task` (context `ctx-{task}`) carrying `status`.
pub fn status_update(task: &str, status: Value) -> Value {
    json!({ "statusUpdate": { "taskId": task, "contextId": format!("ctx-{task}"), "status": status } })
}

/// An artifact update from `task` raising one `shipment.manifest` expectation `id` about
/// `shipment`, due at `due` with an hour's grace.
pub fn one_expectation(task: &str, id: &str, shipment: &str, due: Timestamp) -> Value {
    json!({ "artifactUpdate": {
        "taskId": task, "contextId": format!("ctx-{task}"),
        "artifact": {
            "artifactId": format!("artifact-{task}"),
            "parts": [{ "text": "booked" }],
            "extensions": [URI],
            "metadata": { URI: { "expectations": [{
                "expectationId": id, "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": shipment },
                "expects": format!("the airline manifest for {shipment}"),
                "satisfiedBy": { "factKey": format!("shipment.manifest.received:{shipment}") },
                "dueAt": fmt(due), "grace": "PT1H", "basis": "observed"
            }] } }
        }
    } })
}

/// The expectation `id` in a subject view.
pub fn expectation<'a>(subject: &'a Value, id: &str) -> &'a Value {
    subject["expectations"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["expectationId"] == id))
        .unwrap_or_else(|| panic!("{id} is not in {subject:#}"))
}

/// The departure fact of §9.2 for `shipment`, observed at `observed`.
pub fn departure_fact(shipment: &str, observed: Timestamp) -> Value {
    serde_json::json!({
        "factKey": format!("shipment.departed:{shipment}"),
        "observedAt": fmt(observed),
        "subject": { "type": "shipment", "id": shipment },
    })
}
