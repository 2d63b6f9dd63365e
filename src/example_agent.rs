//! `a2a-watcher example-agent`: a small A2A 1.0 agent that serves its card and accepts lapse
//! tasks over JSON-RPC, printing each one. For trying the watcher out; not a real agent.
//!
//! It answers `SendMessage` with a new Task in `TASK_STATE_SUBMITTED` and `GetTask` with that
//! task (or any other it is asked about, such as the origin tasks the worked example pushes)
//! `TASK_STATE_COMPLETED`: it handles every task at once, so the watcher's origin check before
//! sending and its following of the lapse task end cleanly. `CancelTask`: -32002 (task not
//! cancelable: it is already completed). Other methods: -32601.
//!
//! Its card claims only what it does (m6): whatever card it serves, `pushNotifications` is
//! `false`, since it never pushes; every status it answers carries a `timestamp`. So
//! `a2a-watcher probe` against it is not lifecycle-trusted and says why (no push to count
//! terminal events by, and a task it cannot cancel), and the watcher follows its lapse tasks with
//! `GetTask` (docs/agents.md §4a).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use anyhow::Context;
use axum::extract::State;
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// The booking agent's card that ships with the examples.
pub const BOOKING_CARD: &str = include_str!("../examples/booking-card.json");

#[derive(Clone)]
struct AgentState {
    card: Arc<Value>,
    seen: mpsc::UnboundedSender<Value>,
    counter: Arc<AtomicU64>,
    quiet: bool,
}

/// A running example agent.
pub struct ExampleAgent {
    /// Its base URL, e.g. `http://127.0.0.1:9999/`.
    pub url: String,
    /// Every `SendMessage` params it accepted.
    pub received: mpsc::UnboundedReceiver<Value>,
    /// The card it serves (`pushNotifications: false`, its JSONRPC interface at `url`).
    pub card: Value,
}

/// Starts the agent on `listen` (port 0 picks one). Its card's JSONRPC interface is rewritten to
/// the bound address, and its `capabilities.pushNotifications` to `false` (it never pushes).
///
/// # Errors
/// Bind failures, or a card that is not JSON.
pub async fn start(listen: &str, card_text: &str, quiet: bool) -> anyhow::Result<ExampleAgent> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("Failed to listen on {listen}"))?;
    let addr = listener.local_addr()?;
    let url = format!("http://{addr}/");
    let mut card: Value =
        serde_json::from_str(card_text).context("the example card is not JSON")?;
    card["supportedInterfaces"] =
        json!([{ "url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0" }]);
    card["capabilities"]["pushNotifications"] = json!(false);
    let (tx, rx) = mpsc::unbounded_channel();
    let state = AgentState {
        card: Arc::new(card.clone()),
        seen: tx,
        counter: Arc::new(AtomicU64::new(0)),
        quiet,
    };
    let app = Router::new()
        .route("/.well-known/agent-card.json", get(card_route))
        .route("/", post(jsonrpc))
        .with_state(state);
    tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "example agent stopped");
        }
    });
    Ok(ExampleAgent {
        url,
        received: rx,
        card,
    })
}

async fn card_route(State(s): State<AgentState>) -> Json<Value> {
    Json((*s.card).clone())
}

fn now() -> String {
    watcher_runtime::clock::Clock::now(&watcher_runtime::clock::SystemClock).to_string()
}

async fn jsonrpc(State(s): State<AgentState>, Json(req): Json<Value>) -> Json<Value> {
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    if req.get("method").and_then(Value::as_str) == Some("CancelTask") {
        // Every task is completed by the time anyone can ask (see GetTask): not cancelable.
        return Json(
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32002, "message": "Task not cancelable: the example agent completes every task at once" } }),
        );
    }
    if req.get("method").and_then(Value::as_str) == Some("GetTask") {
        let Some(task_id) = req.pointer("/params/id").and_then(Value::as_str) else {
            return Json(
                json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32602, "message": "Invalid params: `id` is required" } }),
            );
        };
        return Json(json!({
            "jsonrpc": "2.0",
            "id": id,
            "result": {
                "id": task_id,
                "status": {
                    "state": "TASK_STATE_COMPLETED",
                    "timestamp": now()
                }
            }
        }));
    }
    if req.get("method").and_then(Value::as_str) != Some("SendMessage") {
        return Json(
            json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32601, "message": "Method not found" } }),
        );
    }
    let params = req.get("params").cloned().unwrap_or(Value::Null);
    let message = &params["message"];
    let block = &message["metadata"][watcher_core::EXPECTATIONS_URI]["lapse"];
    if !s.quiet {
        println!(
            "agent <- lapse task {}  [{} {} of {}]\n           {}",
            message["messageId"].as_str().unwrap_or("?"),
            block["lapse"].as_str().unwrap_or("?"),
            block["expectationId"].as_str().unwrap_or("?"),
            block["subject"]["id"].as_str().unwrap_or("?"),
            message["parts"][0]["text"].as_str().unwrap_or("")
        );
    }
    let _ = s.seen.send(params.clone());
    let n = s.counter.fetch_add(1, Ordering::Relaxed) + 1;
    Json(json!({
        "jsonrpc": "2.0",
        "id": id,
        "result": { "task": {
            "id": format!("lapse-task-{n}"),
            "contextId": message["contextId"],
            "status": { "state": "TASK_STATE_SUBMITTED", "timestamp": now() }
        } }
    }))
}

/// Runs the example agent until interrupted.
///
/// # Errors
/// As [`start`].
pub async fn run(listen: &str, card: Option<&std::path::Path>) -> anyhow::Result<()> {
    let text = match card {
        Some(p) => {
            std::fs::read_to_string(p).with_context(|| format!("Failed to read {}", p.display()))?
        }
        None => BOOKING_CARD.to_owned(),
    };
    let mut agent = start(listen, &text, false).await?;
    println!(
        "example agent listening on {} (card at {}.well-known/agent-card.json)",
        agent.url, agent.url
    );
    while agent.received.recv().await.is_some() {}
    Ok(())
}
