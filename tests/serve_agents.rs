//! Agents are independent (serve.md): a partner whose card cannot be read never stops `serve` or
//! another agent; its pushes answer 503 with `Retry-After` until its card is read; it is
//! reported at `/healthz` and `GET /v1/agents`, retried with backoff, and once read, its card is
//! kept in the store and used across a restart while the partner is down again.

use crate::common;

use std::time::Duration;

use axum::routing::get;
use axum::{Json, Router};
use jiff::Timestamp;
use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};

use common::*;

const PARTNER_TOKEN: &str = "push-token-partner";

/// A loopback port nothing listens on (yet).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    l.local_addr().expect("an address").port()
}

/// Serves `card` at `/.well-known/agent-card.json` on `port` until the handle is aborted.
async fn serve_card(port: u16, card: Value) -> tokio::task::JoinHandle<()> {
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("bind the partner's port");
    let app = Router::new().route(
        "/.well-known/agent-card.json",
        get(move || {
            let card = card.clone();
            async move { Json(card) }
        }),
    );
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    })
}

async fn partner_push(w: &Watcher, body: &Value) -> reqwest::Response {
    w.http()
        .post(w.url("/v1/agents/partner/push"))
        .header("X-A2A-Notification-Token", PARTNER_TOKEN)
        .json(body)
        .send()
        .await
        .expect("the watcher answers")
}

async fn partner_card_state(w: &Watcher) -> Value {
    let agents = w.get("/v1/agents").await;
    assert_eq!(agents.status, 200, "{agents:?}");
    agents.body["agents"]
        .as_array()
        .and_then(|l| l.iter().find(|a| a["agentId"] == "partner"))
        .map(|a| a["card"]["state"].clone())
        .unwrap_or(Value::Null)
}

#[tokio::test]
async fn an_unreachable_card_stops_nothing_and_is_retried_then_kept() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let port = free_port();
    let extra = format!(
        r#"allow_private_endpoints = true

[[agents]]
id = "partner"
card = "http://127.0.0.1:{port}"
push_token = "{PARTNER_TOKEN}"
"#
    );
    let mut w = spawn_watcher(&agent, &extra).await;
    let due = plus(Timestamp::now(), 3600);

    // The other agent is served.
    let booking = w
        .push(&one_expectation("task-b", "exp-b", "PA-B", due, "PT1H"))
        .await;
    assert_eq!(booking.status, 200, "{booking:?}");

    // The partner, whose card was never read, is told to come back.
    let raise = one_expectation("task-p", "exp-p", "PA-P", due, "PT1H");
    let refused = partner_push(&w, &raise).await;
    assert_come_back_later(&refused);
    // The answer says why: the last read's error, naming the card's address.
    let problem: Value = refused.json().await.expect("problem+json");
    let detail = problem["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("the last read failed") && detail.contains(&port.to_string()),
        "{problem}"
    );
    assert!(
        detail.starts_with("agent \"partner\"'s card has not been read yet"),
        "the agent is named by its id: {problem}"
    );

    // It is reported, and the watcher stays healthy for everyone else.
    let health = w.get("/healthz").await;
    assert_eq!(health.status, 200, "{health:?}");
    assert_eq!(health.body["agents"][0]["agentId"], "partner", "{health:?}");
    assert_eq!(health.body["agents"][0]["card"]["state"], "unavailable");
    assert!(health.body["agents"][0]["card"]["error"]
        .as_str()
        .is_some_and(|e| e.contains(&port.to_string())));
    assert_eq!(partner_card_state(&w).await, "unavailable");

    // The partner's card comes up: the retry reads it and the partner is served.
    let mut card: Value = serde_json::from_str(include_str!("../examples/booking-card.json"))
        .expect("examples/booking-card.json is JSON");
    card["supportedInterfaces"][0]["url"] = json!(agent.url());
    let card_server = serve_card(port, card).await;
    let served = wait_until(
        || async { partner_push(&w, &raise).await.status().as_u16() == 200 },
        Duration::from_secs(40),
    )
    .await;
    assert!(served, "the partner is served once its card is read");
    assert_eq!(partner_card_state(&w).await, "ok");
    let health = w.get("/healthz").await;
    assert!(health.body.get("agents").is_none(), "{health:?}");

    // Down again, and the watcher restarts: the kept card serves the partner.
    card_server.abort();
    let _ = card_server.await;
    w.restart().await;
    let again = partner_push(
        &w,
        &one_expectation("task-p2", "exp-p2", "PA-P2", due, "PT1H"),
    )
    .await;
    assert_eq!(again.status().as_u16(), 200);
    assert_eq!(partner_card_state(&w).await, "stale");
}
