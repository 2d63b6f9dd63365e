//! `a2a-watcher bench-agent` and `bench`'s burst phase: agents that are separate processes
//! answering over real HTTP connections, as simple agents do.
//!
//! The in-process capture agent of the other phases shares the watcher's runtime and keeps its
//! connections alive, so it hides what a burst costs against real agents: a connection set up
//! for every request, and agents scheduled by another process. Here every agent is its own
//! process (`a2a-watcher bench-agent`, spawned once per agent from the running executable) on
//! its own port of 127.0.0.1, and answers every request with `Connection: close`, so each
//! request of the watcher opens a fresh connection.
//!
//! A bench agent prints one line when it listens (`listening http://127.0.0.1:PORT/`) and one
//! line per `SendMessage` it receives (`arrived UNIX_NANOS MESSAGE_ID`), read by the parent
//! from its standard output: the arrival instant is taken in the agent, as the agent sees it.

use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

/// Runs a bench agent on `listen` until killed: JSON-RPC on `/`, `SendMessage` answered with a
/// new task in `TASK_STATE_SUBMITTED`, `GetTask` with the asked task `TASK_STATE_WORKING` (so
/// the watcher's origin check sends the lapse task and its follow-up keeps polling quietly),
/// anything else `-32601`; every answer with `Connection: close`.
///
/// # Errors
/// Bind failures, or the server failing.
pub async fn run(listen: &str) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("Failed to listen on {listen}"))?;
    let addr = listener.local_addr()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening http://{addr}/")?;
        out.flush()?;
    }
    axum::serve(listener, router())
        .await
        .context("the bench agent's server failed")
}

/// The bench agent's routes: JSON-RPC on `/`.
fn router() -> Router {
    Router::new()
        .route("/", post(jsonrpc))
        .with_state(Arc::new(AtomicU64::new(0)))
}

async fn jsonrpc(
    State(counter): State<Arc<AtomicU64>>,
    Json(req): Json<Value>,
) -> impl IntoResponse {
    let close = [(header::CONNECTION, "close")];
    if req.get("method").and_then(Value::as_str) == Some("SendMessage") {
        let at = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let mut out = std::io::stdout().lock();
        let _ = writeln!(
            out,
            "arrived {at} {}",
            req["params"]["message"]["messageId"]
                .as_str()
                .unwrap_or("?")
        );
        let _ = out.flush();
    }
    let answer = answer(&req, &counter);
    (close, Json(answer))
}

/// The JSON-RPC answer of a bench agent to `req`: `SendMessage` a new task `lapse-task-{n}` (`n`
/// from `counter`) in `TASK_STATE_SUBMITTED`, `GetTask` the asked task `TASK_STATE_WORKING`,
/// anything else `-32601`. Shared by the agent processes and the bench's in-process agent.
pub(crate) fn answer(req: &Value, counter: &AtomicU64) -> Value {
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    match req.get("method").and_then(Value::as_str) {
        Some("SendMessage") => {
            let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
            json!({ "jsonrpc": "2.0", "id": id, "result": { "task": {
                "id": format!("lapse-task-{n}"),
                "contextId": req["params"]["message"]["contextId"],
                "status": { "state": "TASK_STATE_SUBMITTED" }
            } } })
        }
        Some("GetTask") => match req.pointer("/params/id").and_then(Value::as_str) {
            Some(task_id) => json!({ "jsonrpc": "2.0", "id": id, "result": {
                "id": task_id,
                "status": { "state": "TASK_STATE_WORKING" }
            } }),
            None => json!({ "jsonrpc": "2.0", "id": id,
                "error": { "code": -32602, "message": "Invalid params: `id` is required" } }),
        },
        _ => json!({ "jsonrpc": "2.0", "id": id,
            "error": { "code": -32601, "message": "Method not found" } }),
    }
}

/// A bench agent running as a child process; killed when dropped.
pub struct AgentProcess {
    /// Its base URL, e.g. `http://127.0.0.1:40123/`.
    pub url: String,
    /// Arrival instants of the `SendMessage` requests it received, in the order it printed them.
    pub arrivals: Arc<Mutex<Vec<SystemTime>>>,
    _child: Child,
}

impl AgentProcess {
    /// Spawns `exe bench-agent --listen 127.0.0.1:0` and waits (at most 10 s) for its address.
    ///
    /// # Errors
    /// The process failing to start, or not printing its address.
    pub async fn spawn(exe: &Path) -> anyhow::Result<AgentProcess> {
        let mut child = Command::new(exe)
            .args(["bench-agent", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("Failed to start {} bench-agent", exe.display()))?;
        let stdout = child
            .stdout
            .take()
            .context("the bench agent's standard output")?;
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(Duration::from_secs(10), lines.next_line())
            .await
            .context("the bench agent did not print its address within 10 s")??;
        let Some(url) = first
            .as_deref()
            .and_then(|l| l.strip_prefix("listening "))
            .map(str::to_owned)
        else {
            bail!("the bench agent printed {first:?} instead of its address");
        };
        let arrivals: Arc<Mutex<Vec<SystemTime>>> = Arc::default();
        let seen = arrivals.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = parse_arrival(&line) {
                    seen.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(at);
                }
            }
        });
        Ok(AgentProcess {
            url,
            arrivals,
            _child: child,
        })
    }

    /// How many `SendMessage` requests it has received.
    pub fn received(&self) -> usize {
        self.arrivals.lock().map_or(0, |a| a.len())
    }
}

/// The instant of an `arrived UNIX_NANOS MESSAGE_ID` line.
fn parse_arrival(line: &str) -> Option<SystemTime> {
    let nanos: u64 = line
        .strip_prefix("arrived ")?
        .split(' ')
        .next()?
        .parse()
        .ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_arrival_line_gives_its_instant() {
        assert_eq!(
            parse_arrival("arrived 1700000000123456789 lapse:e:overdue:x"),
            Some(SystemTime::UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789))
        );
        assert_eq!(parse_arrival("listening http://127.0.0.1:1/"), None);
        assert_eq!(parse_arrival("arrived soon x"), None);
    }

    /// Every answer closes its connection (each request of the watcher sets up a new one, as
    /// against a simple agent), and `SendMessage` is answered with a submitted task.
    #[tokio::test]
    async fn answers_close_their_connection() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router()).await });
        let http = reqwest::Client::new();
        let call = |method: &str| {
            http.post(format!("http://{addr}/")).json(&json!({
                "jsonrpc": "2.0", "id": 1, "method": method,
                "params": { "id": "t-1", "message": { "messageId": "m-1", "contextId": "c-1" } }
            }))
        };
        for (method, pointer, want) in [
            (
                "SendMessage",
                "/result/task/status/state",
                "TASK_STATE_SUBMITTED",
            ),
            ("GetTask", "/result/status/state", "TASK_STATE_WORKING"),
        ] {
            let resp = call(method).send().await.unwrap();
            assert_eq!(
                resp.headers()
                    .get(header::CONNECTION)
                    .map(axum::http::HeaderValue::as_bytes),
                Some(&b"close"[..]),
                "{method}"
            );
            let body: Value = resp.json().await.unwrap();
            assert_eq!(
                body.pointer(pointer),
                Some(&json!(want)),
                "{method}: {body}"
            );
        }
        let body: Value = call("ListTasks")
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(body.pointer("/error/code"), Some(&json!(-32601)));
    }
}
