//! Delivery as operators see it, driven with `oneshot` over an in-memory store: `/healthz` with
//! the operator's token tells whether the store can write (503 problem+json while it cannot, 200 after), `GET /v1/agents`
//! reports each agent's delivery state, `POST /v1/lapses/retry` re-queues failed lapse tasks and
//! refuses bad input with problem+json, and `GET /v1/lapses` marks lapse tasks needing a person.

use std::sync::Arc;
use watcher_runtime::store::{Outbox as _, Records as _};

use axum::http::StatusCode;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::Notify;
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry, Store};
use watcher_runtime::watcher::{Applied, EffectSink, Watcher};

use crate::common::{operator_request, operator_router, three_agents};

fn t0() -> Instant {
    Instant::parse("2026-09-10T12:00:00Z").unwrap()
}

/// Lapse task `id` of `agent` in `delivery`, lapsed at [`t0`], tried twice (last error HTTP 503).
fn entry(agent: &str, id: &str, delivery: DeliveryState) -> OutboxEntry {
    OutboxEntry {
        delivery,
        attempts: 2,
        last_error: Some("HTTP 503".into()),
        ..OutboxEntry::queued(
            Tenant::default_tenant(),
            AgentId::parse(agent).unwrap(),
            id.into(),
            ExpectationId::parse("exp-1").unwrap(),
            LapseKind::Overdue,
            t0(),
            json!({}),
        )
    }
}

struct Harness {
    app: Router,
    store: Arc<MemoryStore>,
    wake: Arc<Notify>,
}

fn harness(store: Arc<MemoryStore>) -> Harness {
    harness_with_sink(store, None)
}

/// [`harness`] whose watcher hands effects to `sink`, as the serverless deployment's does.
fn harness_with_sink(store: Arc<MemoryStore>, sink: Option<Arc<dyn EffectSink>>) -> Harness {
    let wake = Arc::new(Notify::new());
    let dyn_store: Arc<dyn Store> = store.clone();
    let mut watcher = Watcher::new(dyn_store, three_agents(), Settings::default());
    if let Some(sink) = sink {
        watcher = watcher.with_sink(sink);
    }
    let app = operator_router(watcher, wake.clone());
    Harness { app, store, wake }
}

async fn call(
    app: &Router,
    method: &str,
    uri: &str,
    body: Option<Value>,
) -> (StatusCode, String, Value) {
    let (status, content_type, body, _) = operator_request(app, method, uri, body).await;
    (status, content_type, body)
}

#[tokio::test]
async fn healthz_is_503_while_the_store_cannot_write_and_200_after() {
    let h = harness(Arc::new(MemoryStore::new()));
    let (status, _, body) = call(&h.app, "GET", "/healthz", None).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({ "status": "ok", "version": env!("CARGO_PKG_VERSION"), "store": "writes" })
    );

    h.store.fail_writes(true);
    let (status, content_type, body) = call(&h.app, "GET", "/healthz", None).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(content_type, "application/problem+json");
    assert_eq!(body["status"], 503);
    let detail = body["detail"].as_str().unwrap();
    assert!(detail.starts_with("the store cannot write"), "{detail}");
    assert!(detail.contains("no space left on device"), "{detail}");

    h.store.fail_writes(false);
    let (status, _, _) = call(&h.app, "GET", "/healthz", None).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "healthy again once the store writes"
    );
}

/// The operator's `POST /v1/lapses/retry` with `body`.
async fn retry(app: &Router, body: Value) -> (StatusCode, String, Value) {
    call(app, "POST", "/v1/lapses/retry", Some(body)).await
}

/// The lapse task `id` of `agent` (default tenant) as the store holds it.
async fn stored_entry(h: &Harness, agent: &str, id: &str) -> OutboxEntry {
    let agent = AgentId::parse(agent).unwrap();
    let tenant = Tenant::default_tenant();
    h.store
        .outbox_get(&tenant, &agent, id)
        .await
        .unwrap()
        .unwrap()
}

async fn with_entries(entries: Vec<OutboxEntry>) -> Harness {
    harness(stored(entries).await)
}

async fn stored(entries: Vec<OutboxEntry>) -> Arc<MemoryStore> {
    let store = Arc::new(MemoryStore::new());
    store
        .commit(
            &Tenant::default_tenant(),
            Commit {
                outbox: entries,
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    store
}

/// The messageIds of the lapse tasks a deployment's sink was handed, in order.
#[derive(Default)]
struct Handed(std::sync::Mutex<Vec<String>>);

#[async_trait::async_trait]
impl EffectSink for Handed {
    async fn carry_out(&self, _: &Tenant, applied: &Applied, _: Instant) {
        let mut handed = self.0.lock().unwrap();
        handed.extend(applied.outbox.iter().map(|e| e.message_id.clone()));
    }
}

#[tokio::test]
async fn retry_hands_requeued_lapse_tasks_to_the_deployments_queue_at_once() {
    // On AWS the sink is the lapse queue: a re-queued entry is enqueued by the retry itself,
    // not left for the sweep.
    let store = stored(vec![
        entry("booking", "f1", DeliveryState::Failed),
        entry("booking", "f2", DeliveryState::Failed),
        entry("booking", "s1", DeliveryState::Sent),
    ])
    .await;
    let handed = Arc::new(Handed::default());
    let h = harness_with_sink(store, Some(handed.clone()));
    let (status, _, body) = retry(
        &h.app,
        json!({ "agent": "booking", "messageIds": ["f2", "s1"] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(*handed.0.lock().unwrap(), ["f2"]);
    let (status, _, body) = retry(&h.app, json!({ "agent": "booking" })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(*handed.0.lock().unwrap(), ["f2", "f1"]);
}

#[tokio::test]
async fn agents_report_ok_retrying_or_failing() {
    let mut retrying = entry("ops-bot", "r1", DeliveryState::Queued);
    retrying.retrying_since = Some(t0());
    let h = with_entries(vec![
        entry("booking", "f1", DeliveryState::Failed),
        retrying,
        entry("quiet", "s1", DeliveryState::Sent),
    ])
    .await;
    let (status, _, body) = call(&h.app, "GET", "/v1/agents", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let by_id = |id: &str| {
        body["agents"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["agentId"] == id)
            .cloned()
            .unwrap()
    };
    assert_eq!(by_id("booking")["delivery"], "failing");
    assert_eq!(by_id("booking")["lastError"], "HTTP 503");
    assert_eq!(by_id("ops-bot")["delivery"], "retrying");
    assert_eq!(by_id("ops-bot")["retryingSince"], "2026-09-10T12:00:00Z");
    assert_eq!(by_id("quiet")["delivery"], "ok");
}

#[tokio::test]
async fn retry_requeues_failed_lapse_tasks_of_one_agent() {
    let h = with_entries(vec![
        entry("booking", "f1", DeliveryState::Failed),
        entry("booking", "f2", DeliveryState::Failed),
        entry("booking", "f3", DeliveryState::Failed),
        entry("booking", "s1", DeliveryState::Sent),
        entry("ops-bot", "f4", DeliveryState::Failed),
    ])
    .await;
    let woken = h.wake.notified();
    tokio::pin!(woken);
    woken.as_mut().enable();
    let (status, _, body) = retry(
        &h.app,
        json!({ "agent": "booking", "messageIds": ["f1", "s1"] }),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["requeued"], 1);
    assert_eq!(body["messageIds"], json!(["f1"]));
    assert_eq!(body["skipped"][0]["messageId"], "s1");
    assert!(
        tokio::time::timeout(std::time::Duration::from_secs(5), &mut woken)
            .await
            .is_ok(),
        "the delivery lanes are woken"
    );
    let f1 = stored_entry(&h, "booking", "f1").await;
    assert_eq!(f1.delivery, DeliveryState::Queued);
    assert_eq!(
        f1.next_attempt_at,
        Instant::parse("2026-09-11T12:00:00Z").unwrap()
    );

    let (status, _, body) = retry(&h.app, json!({ "agent": "booking" })).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["requeued"], 2, "every other failed one: {body}");
    assert_eq!(
        stored_entry(&h, "ops-bot", "f4").await.delivery,
        DeliveryState::Failed,
        "another agent's failed lapse tasks stay"
    );
}

#[tokio::test]
async fn retry_refuses_bad_input_with_problem_json() {
    let h = with_entries(vec![entry("booking", "f1", DeliveryState::Failed)]).await;
    for (body, status, needle) in [
        (json!([]), StatusCode::BAD_REQUEST, "must be an object"),
        (json!({}), StatusCode::BAD_REQUEST, "missing field `agent`"),
        (
            json!({ "agent": 7 }),
            StatusCode::BAD_REQUEST,
            "field `agent`",
        ),
        (
            json!({ "agent": "booking", "messageIds": "f1" }),
            StatusCode::BAD_REQUEST,
            "field `messageIds`",
        ),
        (
            json!({ "agent": "booking", "messageIds": [] }),
            StatusCode::BAD_REQUEST,
            "must not be empty",
        ),
        (
            json!({ "agent": "booking", "messageIds": ["f1", 3] }),
            StatusCode::BAD_REQUEST,
            "field `messageIds[1]`",
        ),
        (
            json!({ "agent": "booking", "messageIds": ["f1", ""] }),
            StatusCode::BAD_REQUEST,
            "field `messageIds[1]`: must be a non-empty string",
        ),
        (
            json!({ "agent": "" }),
            StatusCode::BAD_REQUEST,
            "field `agent`: must be a non-empty string",
        ),
        (
            json!({ "agent": "nobody" }),
            StatusCode::NOT_FOUND,
            "not registered",
        ),
    ] {
        let (got, content_type, answer) = retry(&h.app, body.clone()).await;
        assert_eq!(got, status, "{body} → {answer}");
        assert_eq!(content_type, "application/problem+json");
        let detail = answer["detail"].as_str().unwrap();
        assert!(detail.contains(needle), "{body}: {detail}");
    }
    assert_eq!(
        stored_entry(&h, "booking", "f1").await.delivery,
        DeliveryState::Failed,
        "a refused request changes nothing"
    );
}

#[tokio::test]
async fn lapse_tasks_waiting_on_a_person_are_marked() {
    let mut waiting = entry("booking", "w1", DeliveryState::Sent);
    waiting.task_id = Some("task-1".into());
    waiting.task_state = Some("TASK_STATE_INPUT_REQUIRED".into());
    let mut working = entry("booking", "w2", DeliveryState::Sent);
    working.task_state = Some("TASK_STATE_WORKING".into());
    let h = with_entries(vec![waiting, working]).await;
    let (status, _, body) = call(&h.app, "GET", "/v1/lapses", None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let lapses = body["lapses"].as_array().unwrap();
    assert_eq!(lapses[0]["needsPerson"], true);
    assert!(lapses[1].get("needsPerson").is_none());
}
