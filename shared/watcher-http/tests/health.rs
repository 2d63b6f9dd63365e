//! `GET /healthz` at the edge (docs/security.md "The edge"): anonymous, a fixed answer that
//! reads and writes nothing and names no agent; with an operator's bearer token, the store's
//! write probe and the operator's own tenant's agents whose card cannot be read; any other
//! credential refused.

use std::sync::Arc;

use axum::http::StatusCode;
use serde_json::{json, Value};
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_http::{Principal, Role};
use watcher_runtime::directory::{CardHealth, CardState};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Store, Upkeep as _};

use crate::common::{credentials, router_at, send, three_agents, OPERATOR};

const AT: &str = "2026-09-11T12:00:00Z";
/// The operator of another tenant, `acme`.
const ACME_OPERATOR: &str = "acme-ops-token";
/// An agent's push token (a credential of the wrong kind for the detail).
const PUSH: &str = "push-token-booking";

/// A card that was never read: `unavailable`, failing since [`AT`], with the error naming where.
fn unreadable(error: &str) -> CardHealth {
    CardHealth {
        state: CardState::Unavailable,
        read_at: None,
        failing_since: Some(Instant::parse(AT).unwrap()),
        error: Some(error.into()),
        next_try_at: None,
    }
}

/// The routes over `store` for the default tenant's three agents, `quiet`'s card unreadable, and
/// the `acme` tenant's agent `partner`, whose card is unreadable too; the operators of both
/// tenants and the agent `booking` hold credentials.
fn app(store: Arc<MemoryStore>) -> axum::Router {
    let directory = three_agents();
    directory.set_card_health(
        &Tenant::default_tenant(),
        &AgentId::parse("quiet").unwrap(),
        unreadable("http://127.0.0.1:9/card.json: connection refused"),
    );
    let acme = Tenant::parse("acme").unwrap();
    directory.set_card_health(
        &acme,
        &AgentId::parse("partner").unwrap(),
        unreadable("http://partner.invalid/card.json: no such host"),
    );
    let mut creds = credentials(&[
        (OPERATOR, Role::Operator, "ops-desk"),
        (PUSH, Role::Agent, "booking"),
    ]);
    creds
        .insert(
            ACME_OPERATOR,
            Principal {
                role: Role::Operator,
                id: "acme-desk".into(),
                tenant: acme,
                on_behalf_of: Vec::new(),
            },
        )
        .unwrap();
    let dyn_store: Arc<dyn Store> = store;
    router_at(dyn_store, directory, creds, AT)
}

/// `GET /healthz` with the header `(name, value)`: status, content type, body as JSON and the
/// body's bytes.
async fn health(app: &axum::Router, header: (&str, &str)) -> (StatusCode, String, Value, Vec<u8>) {
    let (status, content_type, bytes) = send(app, "GET", "/healthz", header, None).await;
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (status, content_type, body, bytes.to_vec())
}

/// No credential: `{"status":"ok","version"}` and nothing else, the same bytes every time, while
/// agents' cards cannot be read and even while the store cannot write: the answer reads and
/// writes nothing (the store's work counter does not move) and names no agent.
#[tokio::test]
async fn the_anonymous_answer_is_fixed_touches_no_store_and_names_no_agent() {
    let store = Arc::new(MemoryStore::new());
    let app = app(store.clone());
    let anonymous = ("accept", "application/json");
    let work_before = store.work_done();
    let (status, content_type, body, first) = health(&app, anonymous).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(content_type, "application/json");
    assert_eq!(
        body,
        json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION") })
    );
    store.fail_writes(true);
    let (status, _, _, again) = health(&app, anonymous).await;
    assert_eq!(status, StatusCode::OK, "the anonymous answer never writes");
    assert_eq!(again, first, "the anonymous answer is the same bytes");
    assert_eq!(store.work_done(), work_before, "nothing read or written");
    let text = String::from_utf8(first).unwrap();
    for named in ["quiet", "partner", "agents", "detail"] {
        assert!(!text.contains(named), "{named} in {text}");
    }
}

/// The operator's answer: the store's write probe (`"store": "writes"`), and its own tenant's
/// agent whose card cannot be read, never another tenant's.
#[tokio::test]
async fn the_operator_sees_the_probe_and_only_its_tenants_unreadable_cards() {
    let app = app(Arc::new(MemoryStore::new()));
    let bearer = format!("Bearer {OPERATOR}");
    let (status, _, body, _) = health(&app, ("authorization", &bearer)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["status"], "ok");
    assert_eq!(body["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(body["store"], "writes");
    assert_eq!(
        body["detail"],
        "1 agent card(s) cannot be read; those agents are retried, every other agent is served"
    );
    assert_eq!(
        body["agents"],
        json!([{
            "tenant": "default",
            "agentId": "quiet",
            "card": {
                "state": "unavailable",
                "failingSince": AT,
                "error": "http://127.0.0.1:9/card.json: connection refused",
            },
        }])
    );

    let bearer = format!("Bearer {ACME_OPERATOR}");
    let (status, _, body, _) = health(&app, ("authorization", &bearer)).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["agents"].as_array().map(Vec::len), Some(1), "{body}");
    assert_eq!(body["agents"][0]["tenant"], "acme");
    assert_eq!(body["agents"][0]["agentId"], "partner");
}

/// A credential presented on `/healthz` must be an operator's: an unknown token is 401, an
/// agent's is 403, a scheme other than Bearer is 401; each problem+json, none echoing the token.
#[tokio::test]
async fn a_credential_that_is_not_an_operators_is_refused() {
    let app = app(Arc::new(MemoryStore::new()));
    let unknown = "Bearer not-a-token";
    let agent = format!("Bearer {PUSH}");
    for (value, want) in [
        (unknown, StatusCode::UNAUTHORIZED),
        (agent.as_str(), StatusCode::FORBIDDEN),
        ("Basic b3BzOm9wcw==", StatusCode::UNAUTHORIZED),
    ] {
        let (status, content_type, body, bytes) = health(&app, ("authorization", value)).await;
        assert_eq!(status, want, "{value}: {body}");
        assert_eq!(content_type, "application/problem+json", "{value}");
        assert_eq!(body["status"], want.as_u16(), "{value}");
        let text = String::from_utf8(bytes).unwrap();
        assert!(
            !text.contains("not-a-token") && !text.contains(PUSH),
            "{text}"
        );
    }
}
