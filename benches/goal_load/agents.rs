//! The agents: one HTTP server in the driver, each agent at `/a/{id}`, answering as an A2A 1.0
//! agent and recording every lapse task's arrival; and the watcher's configuration naming them.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use anyhow::Context;
use axum::extract::{Path as UrlPath, State};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

use super::options::Options;
use super::stack::root;
use super::URI;

/// One lapse task as it arrived.
#[derive(Debug, Clone)]
pub(crate) struct Arrival {
    pub(crate) message_id: String,
    pub(crate) expectation_id: String,
    pub(crate) at: SystemTime,
}

/// What the agents' server shares.
#[derive(Default)]
pub(crate) struct Agents {
    pub(crate) arrivals: Mutex<Vec<Arrival>>,
    /// Each agent's tasks, oldest first: the task each lapse task created, completed, with the
    /// lapse task as its history (what `ListTasks` and `GetTask` answer from).
    tasks: Mutex<HashMap<String, Vec<Value>>>,
    /// JSON-RPC requests other than `SendMessage`, `ListTasks` and `GetTask`.
    pub(crate) other: AtomicUsize,
    /// `ListTasks` and `GetTask` requests.
    pub(crate) lookups: AtomicUsize,
}

impl Agents {
    /// The arrivals so far.
    pub(crate) fn arrivals(&self) -> Vec<Arrival> {
        self.arrivals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// Serves the agents on 127.0.0.1:`port` until the returned task is aborted.
///
/// # Errors
/// The port taken.
pub(crate) async fn serve(port: u16) -> anyhow::Result<(Arc<Agents>, tokio::task::JoinHandle<()>)> {
    let agents = Arc::new(Agents::default());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .with_context(|| format!("the agents' port {port} is taken"))?;
    let app = Router::new()
        .route("/a/{agent}", post(agent_rpc))
        .with_state(agents.clone());
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    Ok((agents, server))
}

/// `POST /a/{agent}`, as an A2A 1.0 agent offering `ListTasks`: a `SendMessage` is recorded
/// and answered with a new task, completed (nothing to follow), kept with the message as its
/// history; `ListTasks` (by `contextId`, newest first, one page of up to 100) and `GetTask`
/// answer from the kept tasks (the watcher asks them when it could not record a delivery, before
/// posting again); anything else gets "method not found".
async fn agent_rpc(
    State(agents): State<Arc<Agents>>,
    UrlPath(agent): UrlPath<String>,
    Json(req): Json<Value>,
) -> Json<Value> {
    let at = SystemTime::now();
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let params = &req["params"];
    match req.get("method").and_then(Value::as_str) {
        Some("SendMessage") => {}
        Some("ListTasks") => {
            agents.lookups.fetch_add(1, Ordering::Relaxed);
            let context = params.get("contextId").and_then(Value::as_str);
            let tasks = agents.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            let found: Vec<&Value> = tasks
                .get(&agent)
                .map(|l| {
                    l.iter()
                        .rev()
                        .filter(|t| context.is_none() || t["contextId"].as_str() == context)
                        .take(100)
                        .collect()
                })
                .unwrap_or_default();
            return Json(json!({ "jsonrpc": "2.0", "id": id, "result": {
                "tasks": found, "nextPageToken": "", "pageSize": found.len(),
                "totalSize": found.len() } }));
        }
        Some("GetTask") => {
            agents.lookups.fetch_add(1, Ordering::Relaxed);
            let want = params.get("id").and_then(Value::as_str);
            let tasks = agents.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            return Json(
                match tasks
                    .get(&agent)
                    .and_then(|l| l.iter().rev().find(|t| t["id"].as_str() == want))
                {
                    Some(t) => json!({ "jsonrpc": "2.0", "id": id, "result": t }),
                    None => json!({ "jsonrpc": "2.0", "id": id,
                        "error": { "code": -32001, "message": "Task not found" } }),
                },
            );
        }
        _ => {
            agents.other.fetch_add(1, Ordering::Relaxed);
            return Json(json!({ "jsonrpc": "2.0", "id": id,
                "error": { "code": -32601, "message": "Method not found" } }));
        }
    }
    let message = &params["message"];
    let message_id = message["messageId"].as_str().unwrap_or_default().to_owned();
    let expectation_id = message["metadata"][URI]["lapse"]["expectationId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    agents
        .arrivals
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arrival {
            message_id,
            expectation_id,
            at,
        });
    let mut tasks = agents.tasks.lock().unwrap_or_else(PoisonError::into_inner);
    let kept = tasks.entry(agent.clone()).or_default();
    let task = json!({
        "id": format!("task-{agent}-{}", kept.len() + 1),
        "contextId": message.get("contextId").and_then(Value::as_str).unwrap_or("ctx-goal-load"),
        "status": { "state": "TASK_STATE_COMPLETED" },
        "history": [message],
    });
    kept.push(task.clone());
    Json(json!({ "jsonrpc": "2.0", "id": id, "result": { "task": task } }))
}

/// The id of the `i`th agent.
pub(crate) fn agent_id(i: usize) -> String {
    format!("g{i:05}")
}

/// The tenant of the `i`th agent.
fn tenant_of(i: usize, tenants: usize) -> String {
    format!("t{}", i % tenants)
}

/// The watcher's configuration: one source per tenant, the agents (cards as files in `dir`
/// naming the agents' server), reconciliation off (the load is facts, raises and lapses).
///
/// # Errors
/// The example card unreadable, a card not written.
pub(crate) fn config(o: &Options, dir: &Path, agents_url: &str) -> anyhow::Result<String> {
    let card: Value = serde_json::from_str(&std::fs::read_to_string(
        root().join("examples/booking-card.json"),
    )?)?;
    let mut out = String::from("allow_private_endpoints = true\n\n");
    for t in 0..o.tenants.min(o.agents()) {
        let _ = write!(
            out,
            "[[sources]]\nid = \"feed-t{t}\"\ntoken = \"src-goal-t{t}\"\ntenant = \"t{t}\"\n\n"
        );
    }
    let _ = write!(
        out,
        "[[operators]]\nid = \"ops\"\ntoken = \"ops-goal\"\ntenant = \"t0\"\n\n"
    );
    for i in 0..o.agents() {
        let id = agent_id(i);
        let url = format!("{agents_url}/a/{id}");
        let mut c = card.clone();
        c["supportedInterfaces"][0]["url"] = json!(url);
        let path = dir.join(format!("{id}-card.json"));
        std::fs::write(&path, c.to_string())?;
        let _ = write!(
            out,
            "[[agents]]\nid = \"{id}\"\ncard = \"{}\"\nendpoint = \"{url}\"\npush_token = \"push-{id}\"\ntenant = \"{}\"\nreconcile = false\n\n",
            path.display(),
            tenant_of(i, o.tenants),
        );
    }
    Ok(out)
}
