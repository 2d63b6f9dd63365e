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

use std::collections::HashMap;
use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use anyhow::{bail, Context};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

/// Runs a bench agent on `listen` until killed: JSON-RPC on `/` answered as [`answer`] does,
/// from the tasks it holds (those it created and those the bench gave it on `POST /hold`, a
/// JSON array of `{"id", "contextId"}`, each `TASK_STATE_WORKING`), each answer `answer_delay`
/// after its request and with `Connection: close`. It prints `asked METHOD` for every `GetTask`
/// and `ListTasks`, so the parent counts what the origin checks cost.
///
/// # Errors
/// Bind failures, or the server failing.
pub async fn run(listen: &str, answer_delay: Duration) -> anyhow::Result<()> {
    let listener = TcpListener::bind(listen)
        .await
        .with_context(|| format!("Failed to listen on {listen}"))?;
    let addr = listener.local_addr()?;
    {
        let mut out = std::io::stdout().lock();
        writeln!(out, "listening http://{addr}/")?;
        out.flush()?;
    }
    axum::serve(listener, router(answer_delay))
        .await
        .context("the bench agent's server failed")
}

/// What a bench agent process shares between its requests.
struct Agent {
    counter: AtomicU64,
    held: Held,
    answer_delay: Duration,
}

/// The bench agent's routes: JSON-RPC on `/`, the tasks to hold on `/hold`.
fn router(answer_delay: Duration) -> Router {
    Router::new()
        .route("/", post(jsonrpc))
        .route("/hold", post(hold))
        .with_state(Arc::new(Agent {
            counter: AtomicU64::new(0),
            held: Held::default(),
            answer_delay,
        }))
}

async fn hold(State(agent): State<Arc<Agent>>, Json(tasks): Json<Vec<Value>>) -> StatusCode {
    for t in &tasks {
        if let (Some(id), Some(context)) = (t["id"].as_str(), t["contextId"].as_str()) {
            agent.held.add(id, context);
        }
    }
    StatusCode::NO_CONTENT
}

async fn jsonrpc(State(agent): State<Arc<Agent>>, Json(req): Json<Value>) -> impl IntoResponse {
    let close = [(header::CONNECTION, "close")];
    let method = req.get("method").and_then(Value::as_str);
    if method == Some("SendMessage") {
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
    } else if let Some(m @ ("GetTask" | "ListTasks")) = method {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "asked {m}");
        let _ = out.flush();
    }
    if !agent.answer_delay.is_zero() {
        tokio::time::sleep(agent.answer_delay).await;
    }
    let answer = answer(&req, &agent.counter, Some(&agent.held));
    (close, Json(answer))
}

/// The tasks a bench agent holds, as a real agent's task store would: id → contextId, in the
/// order they were added (`ListTasks` answers newest first).
#[derive(Default)]
pub(crate) struct Held {
    inner: Mutex<HeldTasks>,
}

#[derive(Default)]
struct HeldTasks {
    context_of: HashMap<String, String>,
    by_context: HashMap<String, Vec<String>>,
}

impl Held {
    fn lock(&self) -> std::sync::MutexGuard<'_, HeldTasks> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Holds the task `id` in `context` (working).
    pub(crate) fn add(&self, id: &str, context: &str) {
        let mut inner = self.lock();
        if inner
            .context_of
            .insert(id.to_owned(), context.to_owned())
            .is_none()
        {
            inner
                .by_context
                .entry(context.to_owned())
                .or_default()
                .push(id.to_owned());
        }
    }

    /// The context of the held task `id`.
    fn context(&self, id: &str) -> Option<String> {
        self.lock().context_of.get(id).cloned()
    }

    /// One `ListTasks` page of `context`'s tasks, newest first: from `offset`, at most `size`;
    /// the tasks, the offset of the next page (`None` on the last) and how many there are.
    fn page(
        &self,
        context: &str,
        offset: usize,
        size: usize,
    ) -> (Vec<String>, Option<usize>, usize) {
        let inner = self.lock();
        let all = inner.by_context.get(context).map_or(&[][..], Vec::as_slice);
        let page: Vec<String> = all.iter().rev().skip(offset).take(size).cloned().collect();
        let next = (offset + page.len() < all.len()).then_some(offset + page.len());
        (page, next, all.len())
    }
}

/// A working task `id` of `context`, as `GetTask` and `ListTasks` answer it (no history, no
/// artifacts).
fn working(id: &str, context: &str) -> Value {
    json!({ "id": id, "contextId": context, "status": { "state": "TASK_STATE_WORKING" } })
}

/// The JSON-RPC answer of a bench agent to `req`: `SendMessage` a new task `lapse-task-{n}` (`n`
/// from `counter`) in `TASK_STATE_SUBMITTED`, anything else `-32601`. With `held` (the agent
/// processes), the tasks it created and was given are held: `GetTask` answers a held task
/// `TASK_STATE_WORKING` and any other `-32001`, and `ListTasks` pages a context's held tasks
/// (`pageSize` 1..=100, default 50; a2a-v1.md §1.1). Without (the bench's in-process agent),
/// `GetTask` answers any task `TASK_STATE_WORKING` and `ListTasks` is `-32601`.
pub(crate) fn answer(req: &Value, counter: &AtomicU64, held: Option<&Held>) -> Value {
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let params = &req["params"];
    match (req.get("method").and_then(Value::as_str), held) {
        (Some("SendMessage"), _) => {
            let n = counter.fetch_add(1, Ordering::Relaxed) + 1;
            let task_id = format!("lapse-task-{n}");
            let context = params["message"]["contextId"].as_str().unwrap_or("");
            if let Some(held) = held {
                held.add(&task_id, context);
            }
            json!({ "jsonrpc": "2.0", "id": id, "result": { "task": {
                "id": task_id,
                "contextId": context,
                "status": { "state": "TASK_STATE_SUBMITTED" }
            } } })
        }
        (Some("GetTask"), held) => match (params["id"].as_str(), held) {
            (None, _) => json!({ "jsonrpc": "2.0", "id": id,
                "error": { "code": -32602, "message": "Invalid params: `id` is required" } }),
            (Some(task_id), None) => json!({ "jsonrpc": "2.0", "id": id, "result": {
                "id": task_id,
                "status": { "state": "TASK_STATE_WORKING" }
            } }),
            (Some(task_id), Some(held)) => match held.context(task_id) {
                Some(context) => {
                    json!({ "jsonrpc": "2.0", "id": id, "result": working(task_id, &context) })
                }
                None => json!({ "jsonrpc": "2.0", "id": id,
                    "error": { "code": -32001, "message": "Task not found" } }),
            },
        },
        (Some("ListTasks"), Some(held)) => {
            let context = params["contextId"].as_str().unwrap_or("");
            let size = params["pageSize"].as_u64().unwrap_or(50).clamp(1, 100) as usize;
            let offset = params["pageToken"]
                .as_str()
                .and_then(|t| t.parse().ok())
                .unwrap_or(0);
            let (page, next, total) = held.page(context, offset, size);
            let tasks: Vec<Value> = page.iter().map(|t| working(t, context)).collect();
            json!({ "jsonrpc": "2.0", "id": id, "result": {
                "tasks": tasks,
                "nextPageToken": next.map_or(String::new(), |n| n.to_string()),
                "pageSize": size,
                "totalSize": total,
            } })
        }
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
    /// `GetTask` requests it received.
    pub get_tasks: Arc<AtomicU64>,
    /// `ListTasks` requests it received.
    pub list_tasks: Arc<AtomicU64>,
    _child: Child,
}

impl AgentProcess {
    /// Spawns `exe bench-agent --listen 127.0.0.1:0 --answer-ms answer_ms` and waits (at most
    /// 10 s) for its address.
    ///
    /// # Errors
    /// The process failing to start, or not printing its address.
    pub async fn spawn(exe: &Path, answer_ms: u64) -> anyhow::Result<AgentProcess> {
        let mut child = Command::new(exe)
            .args(["bench-agent", "--listen", "127.0.0.1:0", "--answer-ms"])
            .arg(answer_ms.to_string())
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
        let get_tasks: Arc<AtomicU64> = Arc::default();
        let list_tasks: Arc<AtomicU64> = Arc::default();
        let (seen, gets, lists) = (arrivals.clone(), get_tasks.clone(), list_tasks.clone());
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(at) = parse_arrival(&line) {
                    seen.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(at);
                } else if line == "asked GetTask" {
                    gets.fetch_add(1, Ordering::Relaxed);
                } else if line == "asked ListTasks" {
                    lists.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
        Ok(AgentProcess {
            url,
            arrivals,
            get_tasks,
            list_tasks,
            _child: child,
        })
    }

    /// How many `SendMessage` requests it has received.
    pub fn received(&self) -> usize {
        self.arrivals.lock().map_or(0, |a| a.len())
    }

    /// Gives the agent tasks to hold (`(id, contextId)`), as the origin tasks it created: the
    /// watcher's origin checks ask for them.
    ///
    /// # Errors
    /// The request failing or refused.
    pub async fn hold(
        &self,
        http: &reqwest::Client,
        tasks: &[(String, String)],
    ) -> anyhow::Result<()> {
        let body: Vec<Value> = tasks
            .iter()
            .map(|(id, context)| json!({ "id": id, "contextId": context }))
            .collect();
        for chunk in body.chunks(1000) {
            http.post(format!("{}hold", self.url))
                .json(chunk)
                .send()
                .await
                .context("giving the bench agent its tasks")?
                .error_for_status()
                .context("the bench agent refused its tasks")?;
        }
        Ok(())
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
    /// against a simple agent); `SendMessage` is answered with a submitted task; `GetTask` and
    /// `ListTasks` answer the tasks it holds, as a real agent would (a2a-v1.md §1.1), and an
    /// unknown task is `-32001`.
    #[tokio::test]
    async fn answers_close_their_connection_and_show_the_tasks_held() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, router(Duration::ZERO)).await });
        let http = reqwest::Client::new();
        let held = http
            .post(format!("http://{addr}/hold"))
            .json(
                &json!([{ "id": "t-1", "contextId": "c-1" }, { "id": "t-2", "contextId": "c-1" },
                          { "id": "t-3", "contextId": "c-2" }]),
            )
            .send()
            .await
            .unwrap();
        assert_eq!(held.status(), StatusCode::NO_CONTENT);
        let call = |method: &str, params: Value| {
            http.post(format!("http://{addr}/")).json(&json!({
                "jsonrpc": "2.0", "id": 1, "method": method, "params": params
            }))
        };
        let send = json!({ "message": { "messageId": "m-1", "contextId": "c-1" } });
        for (method, params, pointer, want) in [
            (
                "SendMessage",
                send,
                "/result/task/status/state",
                json!("TASK_STATE_SUBMITTED"),
            ),
            (
                "GetTask",
                json!({ "id": "t-1" }),
                "/result/status/state",
                json!("TASK_STATE_WORKING"),
            ),
            (
                "GetTask",
                json!({ "id": "t-9" }),
                "/error/code",
                json!(-32001),
            ),
            // Newest first: the lapse task just created, then t-2, t-1; pageSize 2.
            (
                "ListTasks",
                json!({ "contextId": "c-1", "pageSize": 2, "historyLength": 0 }),
                "/result/tasks/1/id",
                json!("t-2"),
            ),
            (
                "ListTasks",
                json!({ "contextId": "c-1", "pageSize": 2 }),
                "/result/nextPageToken",
                json!("2"),
            ),
            (
                "ListTasks",
                json!({ "contextId": "c-1", "pageToken": "2" }),
                "/result/tasks/0/id",
                json!("t-1"),
            ),
            (
                "ListTasks",
                json!({ "contextId": "c-1", "pageToken": "2" }),
                "/result/nextPageToken",
                json!(""),
            ),
            (
                "ListTasks",
                json!({ "contextId": "c-2" }),
                "/result/totalSize",
                json!(1),
            ),
            (
                "CancelTask",
                json!({ "id": "t-1" }),
                "/error/code",
                json!(-32601),
            ),
        ] {
            let resp = call(method, params.clone()).send().await.unwrap();
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
                Some(&want),
                "{method} {params}: {body}"
            );
        }
    }
}
