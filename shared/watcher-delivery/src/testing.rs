//! A recording A2A agent for tests (feature `test-utils`): an axum server on `127.0.0.1:0` that
//! records every request (method, path, headers, body) and answers each as a [`Behaviour`] says.
//!
//! ```no_run
//! # async fn demo() {
//! use a2a_types::TaskState;
//! use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};
//!
//! let agent = spawn_capture_agent(Behaviour::sequence(vec![
//!     Reply::status(503),
//!     Reply::task("task-1", TaskState::Submitted),
//! ]))
//! .await;
//! let endpoint = agent.endpoint(Some("watcher-token".into()));
//! // … deliver to `endpoint` …
//! assert_eq!(agent.requests().len(), 2);
//! # }
//! ```

use std::future::IntoFuture;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_types::{TaskState, AGENT_CARD_PATH};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};

use crate::endpoint::AgentEndpoint;

mod fixtures;
pub use fixtures::agent_entry;

/// One request the agent received.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedRequest {
    /// HTTP method.
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Headers in arrival order, names lower-case.
    pub headers: Vec<(String, String)>,
    /// The raw body.
    pub body: Vec<u8>,
}

impl CapturedRequest {
    /// The first value of header `name` (any case).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body as JSON, if it is JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::from_slice(&self.body).ok()
    }

    /// The JSON-RPC `id` (`null` when absent or the body is not JSON).
    pub fn rpc_id(&self) -> Value {
        self.json()
            .and_then(|v| v.get("id").cloned())
            .unwrap_or(Value::Null)
    }

    /// The JSON-RPC `method`, if any.
    pub fn rpc_method(&self) -> Option<String> {
        self.json()?.get("method")?.as_str().map(str::to_owned)
    }

    /// `params.message.messageId`, if any.
    pub fn message_id(&self) -> Option<String> {
        self.json()?
            .pointer("/params/message/messageId")?
            .as_str()
            .map(str::to_owned)
    }
}

/// How the agent answers one request.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// HTTP 200 with a JSON-RPC result `{"task": {id, contextId, status: {state}}}`; the
    /// `contextId` is the request message's, else `ctx-capture`.
    Task {
        /// Task id.
        id: String,
        /// Task state.
        state: TaskState,
    },
    /// HTTP 200 with a JSON-RPC result `{"message": {messageId, role: ROLE_AGENT, parts}}`.
    Message {
        /// The answer's messageId.
        message_id: String,
    },
    /// HTTP 200 with a JSON-RPC error.
    RpcError {
        /// Error code.
        code: i64,
        /// Error message.
        message: String,
    },
    /// Any HTTP answer, as given.
    Http {
        /// Status code.
        status: u16,
        /// Extra headers.
        headers: Vec<(String, String)>,
        /// Body.
        body: String,
    },
    /// Never answers (to test timeouts). The connection stays open until the client gives up.
    Hang,
}

impl Reply {
    /// [`Reply::Task`].
    pub fn task(id: impl Into<String>, state: TaskState) -> Self {
        Reply::Task {
            id: id.into(),
            state,
        }
    }

    /// [`Reply::Message`].
    pub fn message(message_id: impl Into<String>) -> Self {
        Reply::Message {
            message_id: message_id.into(),
        }
    }

    /// [`Reply::RpcError`].
    pub fn rpc_error(code: i64, message: impl Into<String>) -> Self {
        Reply::RpcError {
            code,
            message: message.into(),
        }
    }

    /// An empty-bodied answer with this status.
    pub fn status(status: u16) -> Self {
        Reply::Http {
            status,
            headers: Vec::new(),
            body: String::new(),
        }
    }

    /// An answer with this status and body.
    pub fn http(status: u16, body: impl Into<String>) -> Self {
        Reply::Http {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    fn into_response(self, request: &CapturedRequest) -> Option<Response> {
        let id = request.rpc_id();
        let rpc = |body: Value| {
            (
                StatusCode::OK,
                [("content-type", "application/json")],
                body.to_string(),
            )
                .into_response()
        };
        Some(match self {
            Reply::Task { id: task_id, state } => {
                let context = request
                    .json()
                    .and_then(|v| {
                        v.pointer("/params/message/contextId")
                            .and_then(Value::as_str)
                            .map(str::to_owned)
                    })
                    .unwrap_or_else(|| "ctx-capture".to_owned());
                rpc(json!({"jsonrpc": "2.0", "id": id, "result": {"task": {
                    "id": task_id, "contextId": context, "status": {"state": state.as_str()}
                }}}))
            }
            Reply::Message { message_id } => {
                rpc(json!({"jsonrpc": "2.0", "id": id, "result": {"message": {
                    "messageId": message_id, "role": "ROLE_AGENT", "parts": [{"text": "noted"}]
                }}}))
            }
            Reply::RpcError { code, message } => rpc(json!({
                "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}
            })),
            Reply::Http {
                status,
                headers,
                body,
            } => {
                let mut response = body.into_response();
                *response.status_mut() =
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
                for (name, value) in headers {
                    if let (Ok(n), Ok(v)) = (
                        HeaderName::try_from(name.as_str()),
                        HeaderValue::try_from(value.as_str()),
                    ) {
                        response.headers_mut().insert(n, v);
                    }
                }
                response
            }
            Reply::Hang => return None,
        })
    }
}

type ReplyFn = dyn Fn(usize, &CapturedRequest) -> Reply + Send + Sync;

/// Chooses the [`Reply`] to the `n`th request (0-based, counting every recorded request).
#[derive(Clone)]
pub struct Behaviour(Arc<ReplyFn>);

impl std::fmt::Debug for Behaviour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Behaviour(..)")
    }
}

impl Behaviour {
    /// The same reply every time.
    pub fn always(reply: Reply) -> Self {
        Behaviour(Arc::new(move |_, _| reply.clone()))
    }

    /// The `n`th reply to the `n`th request; the last one repeats. An empty list accepts
    /// everything as [`Behaviour::accept`] does.
    pub fn sequence(replies: Vec<Reply>) -> Self {
        if replies.is_empty() {
            return Self::accept();
        }
        Behaviour(Arc::new(move |n, _| {
            replies[n.min(replies.len() - 1)].clone()
        }))
    }

    /// A new task per request: `task-1`, `task-2`, … in `TASK_STATE_SUBMITTED`.
    pub fn accept() -> Self {
        Behaviour(Arc::new(|n, _| {
            Reply::task(format!("task-{}", n + 1), TaskState::Submitted)
        }))
    }

    /// Any rule over the request number and the request.
    pub fn from_fn(f: impl Fn(usize, &CapturedRequest) -> Reply + Send + Sync + 'static) -> Self {
        Behaviour(Arc::new(f))
    }
}

impl Default for Behaviour {
    fn default() -> Self {
        Self::accept()
    }
}

/// The switches and the task list shared by a [`CaptureAgent`] and its handlers.
#[derive(Debug, Default)]
struct Controls {
    /// While set, every JSON-RPC request is refused with 503 and only counted.
    down: AtomicBool,
    /// Requests refused while down.
    refused: AtomicUsize,
    /// While `true`, answers wait (requests are recorded, and tasks kept, at once).
    held: Option<tokio::sync::watch::Sender<bool>>,
    /// Tasks created by `SendMessage` answers, when the agent keeps tasks.
    tasks: Option<Mutex<Vec<Value>>>,
    /// Milliseconds every answer takes (an agent that thinks before it answers).
    answer_delay_ms: AtomicU64,
    /// `SendMessage` requests received and not yet answered.
    sends_in_flight: AtomicUsize,
    /// The most `SendMessage` requests ever in flight at once.
    peak_sends_in_flight: AtomicUsize,
}

/// Counts one `SendMessage` in flight at the agent until dropped (answered, or the connection
/// lost), keeping the peak.
struct InFlight<'a>(&'a Controls);

impl<'a> InFlight<'a> {
    fn enter(controls: &'a Controls) -> Self {
        let now = controls.sends_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        controls
            .peak_sends_in_flight
            .fetch_max(now, Ordering::SeqCst);
        Self(controls)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.sends_in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

#[derive(Clone)]
struct AgentState {
    behaviour: Behaviour,
    requests: Arc<Mutex<Vec<CapturedRequest>>>,
    card: Option<Arc<Value>>,
    card_fetches: Arc<AtomicUsize>,
    controls: Arc<Controls>,
}

/// A running capture agent. Stops when dropped.
///
/// Besides answering as its [`Behaviour`] says, it can be made *down* ([`CaptureAgent::set_down`]:
/// every request refused with 503, counted but not recorded), *slow* ([`CaptureAgent::hold`]:
/// answers wait until released), and *task-keeping* ([`CaptureAgent::spawn_keeping_tasks`]:
/// each `Task` answer to `SendMessage` is kept with the request's message as its history, and
/// `ListTasks` (by `contextId`) and `GetTask` are answered from those tasks, as an A2A 1.0 agent
/// offering `ListTasks` does).
#[derive(Debug)]
pub struct CaptureAgent {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<CapturedRequest>>>,
    card_fetches: Arc<AtomicUsize>,
    controls: Arc<Controls>,
    server: tokio::task::JoinHandle<()>,
}

impl CaptureAgent {
    /// Starts an agent on `127.0.0.1:0` answering as `behaviour`.
    ///
    /// # Errors
    /// When the listener cannot be bound.
    pub async fn spawn(behaviour: Behaviour) -> std::io::Result<Self> {
        Self::start(behaviour, None::<fn(&str) -> Value>, false).await
    }

    /// Starts an agent that keeps the tasks its `SendMessage` answers create and answers
    /// `ListTasks` and `GetTask` from them (see [`CaptureAgent`]).
    ///
    /// # Errors
    /// When the listener cannot be bound.
    pub async fn spawn_keeping_tasks(behaviour: Behaviour) -> std::io::Result<Self> {
        Self::start(behaviour, None::<fn(&str) -> Value>, true).await
    }

    /// Starts an agent that also serves an agent card at `/.well-known/agent-card.json`, built by
    /// `card` from the agent's base URL (e.g. `http://127.0.0.1:41234/`). Card fetches are counted
    /// ([`CaptureAgent::card_fetches`]), not recorded as requests.
    ///
    /// # Errors
    /// When the listener cannot be bound.
    pub async fn spawn_with_card(
        behaviour: Behaviour,
        card: impl FnOnce(&str) -> Value,
    ) -> std::io::Result<Self> {
        Self::start(behaviour, Some(card), false).await
    }

    async fn start(
        behaviour: Behaviour,
        card: Option<impl FnOnce(&str) -> Value>,
        keep_tasks: bool,
    ) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let url = format!("http://{addr}/");
        let state = AgentState {
            behaviour,
            requests: Arc::default(),
            card: card.map(|c| Arc::new(c(&url))),
            card_fetches: Arc::default(),
            controls: Arc::new(Controls {
                held: Some(tokio::sync::watch::channel(false).0),
                tasks: keep_tasks.then(|| Mutex::new(Vec::new())),
                ..Controls::default()
            }),
        };
        let requests = state.requests.clone();
        let card_fetches = state.card_fetches.clone();
        let controls = state.controls.clone();
        let app = Router::new()
            .route(AGENT_CARD_PATH, get(serve_card))
            .fallback(capture)
            .with_state(state);
        let server = tokio::spawn(async move {
            // An accept error ends the test agent; the test then sees connection errors.
            let _ = axum::serve(listener, app).into_future().await;
        });
        Ok(CaptureAgent {
            addr,
            requests,
            card_fetches,
            controls,
            server,
        })
    }

    /// The socket address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:{port}/`: the agent's JSON-RPC URL (every path is answered).
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// An endpoint for this agent (private address allowed) with an optional bearer.
    pub fn endpoint(&self, bearer: Option<String>) -> AgentEndpoint {
        AgentEndpoint::configured(self.url(), bearer)
    }

    /// Every request recorded so far, in arrival order.
    pub fn requests(&self) -> Vec<CapturedRequest> {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// How many requests were recorded.
    pub fn request_count(&self) -> usize {
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }

    /// How many times the agent card was fetched.
    pub fn card_fetches(&self) -> usize {
        self.card_fetches.load(Ordering::SeqCst)
    }

    /// Takes the agent down (`true`: every request answered 503, counted by
    /// [`CaptureAgent::refused_count`], not recorded) or brings it back up.
    pub fn set_down(&self, down: bool) {
        self.controls.down.store(down, Ordering::SeqCst);
    }

    /// Requests refused while down.
    pub fn refused_count(&self) -> usize {
        self.controls.refused.load(Ordering::SeqCst)
    }

    /// Holds every answer (`true`) until released (`false`): a slow agent. Requests are recorded,
    /// and tasks kept, when they arrive; only the answers wait.
    pub fn hold(&self, on: bool) {
        if let Some(held) = &self.controls.held {
            held.send_replace(on);
        }
    }

    /// Makes every answer take `delay` (an agent that thinks before it answers, e.g. 300 ms);
    /// requests are recorded at once. `Duration::ZERO` answers at once again.
    pub fn set_answer_delay(&self, delay: Duration) {
        let ms = u64::try_from(delay.as_millis()).unwrap_or(u64::MAX);
        self.controls.answer_delay_ms.store(ms, Ordering::SeqCst);
    }

    /// The most `SendMessage` requests that were in flight at this agent at once (received and
    /// not yet answered) since it started or since [`CaptureAgent::reset_peak_in_flight`]: how
    /// many lapse tasks a lane keeps in flight to one agent (`in_flight_per_agent`).
    pub fn peak_sends_in_flight(&self) -> usize {
        self.controls.peak_sends_in_flight.load(Ordering::SeqCst)
    }

    /// Starts [`CaptureAgent::peak_sends_in_flight`] again from those in flight now.
    pub fn reset_peak_in_flight(&self) {
        let now = self.controls.sends_in_flight.load(Ordering::SeqCst);
        self.controls
            .peak_sends_in_flight
            .store(now, Ordering::SeqCst);
    }

    /// The `messageId` of every `SendMessage` recorded, in arrival order (duplicates kept).
    pub fn sent_message_ids(&self) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| r.rpc_method().as_deref() == Some("SendMessage"))
            .filter_map(CapturedRequest::message_id)
            .collect()
    }

    /// Sets the state of every kept task with id `task_id` (a task-keeping agent's task moving on,
    /// as `GetTask` and `ListTasks` then show it).
    pub fn set_task_state(&self, task_id: &str, state: TaskState) {
        if let Some(tasks) = &self.controls.tasks {
            for t in tasks
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .iter_mut()
            {
                if t["id"].as_str() == Some(task_id) {
                    t["status"]["state"] = json!(state.as_str());
                }
            }
        }
    }

    /// The tasks kept by a task-keeping agent (empty otherwise).
    pub fn tasks(&self) -> Vec<Value> {
        self.controls
            .tasks
            .as_ref()
            .map(|t| {
                t.lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .clone()
            })
            .unwrap_or_default()
    }
}

impl Drop for CaptureAgent {
    fn drop(&mut self) {
        self.server.abort();
    }
}

/// Starts a [`CaptureAgent`], panicking if it cannot (for tests).
///
/// # Panics
/// When no port on 127.0.0.1 can be bound.
pub async fn spawn_capture_agent(behaviour: Behaviour) -> CaptureAgent {
    CaptureAgent::spawn(behaviour)
        .await
        .expect("bind a capture agent on 127.0.0.1:0")
}

async fn serve_card(
    State(state): State<AgentState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
) -> Response {
    match &state.card {
        Some(card) => {
            state.card_fetches.fetch_add(1, Ordering::SeqCst);
            (
                StatusCode::OK,
                [("content-type", "application/json")],
                card.to_string(),
            )
                .into_response()
        }
        None => capture(State(state), method, uri, headers, Bytes::new()).await,
    }
}

async fn capture(
    State(state): State<AgentState>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let request = CapturedRequest {
        method: method.to_string(),
        path: uri
            .path_and_query()
            .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned()),
        headers: headers
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body: body.to_vec(),
    };
    if state.controls.down.load(Ordering::SeqCst) {
        state.controls.refused.fetch_add(1, Ordering::SeqCst);
        return (StatusCode::SERVICE_UNAVAILABLE, "down").into_response();
    }
    // Held until the answer is on its way (or the connection is lost).
    let _in_flight = (request.rpc_method().as_deref() == Some("SendMessage"))
        .then(|| InFlight::enter(&state.controls));
    let n = {
        let mut requests = state
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        requests.push(request.clone());
        requests.len() - 1
    };
    let answer = match (&state.controls.tasks, request.rpc_method().as_deref()) {
        (Some(tasks), Some("ListTasks" | "GetTask")) => Some(from_tasks(tasks, &request)),
        _ => None,
    };
    let answer = match answer {
        Some(a) => Some(a),
        None => {
            let reply = (state.behaviour.0)(n, &request);
            if let (
                Some(tasks),
                Reply::Task {
                    id,
                    state: task_state,
                },
            ) = (&state.controls.tasks, &reply)
            {
                keep_task(tasks, &request, id, *task_state);
            }
            reply.into_response(&request)
        }
    };
    let delay = state.controls.answer_delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    if let Some(held) = &state.controls.held {
        let mut rx = held.subscribe();
        // Released, or the agent is gone (the sender dropped): answer either way.
        let _ = rx.wait_for(|on| !*on).await;
    }
    match answer {
        Some(response) => response,
        None => std::future::pending().await,
    }
}

/// Keeps the task a `SendMessage` answer creates, with the request's message as its history.
fn keep_task(tasks: &Mutex<Vec<Value>>, request: &CapturedRequest, id: &str, state: TaskState) {
    let message = request
        .json()
        .and_then(|v| v.pointer("/params/message").cloned())
        .unwrap_or(Value::Null);
    let context = message
        .get("contextId")
        .and_then(Value::as_str)
        .unwrap_or("ctx-capture")
        .to_owned();
    tasks
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .push(json!({
            "id": id, "contextId": context, "status": { "state": state.as_str() },
            "history": [message],
        }));
}

/// Answers `ListTasks` (filtered by `contextId`, newest first, in pages) or `GetTask` from the
/// kept tasks.
fn from_tasks(tasks: &Mutex<Vec<Value>>, request: &CapturedRequest) -> Response {
    let body = request.json().unwrap_or(Value::Null);
    let id = body.get("id").cloned().unwrap_or(Value::Null);
    let params = body.get("params").cloned().unwrap_or(Value::Null);
    let tasks = tasks
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let result = if request.rpc_method().as_deref() == Some("GetTask") {
        let want = params.get("id").and_then(Value::as_str);
        match tasks.iter().rev().find(|t| t["id"].as_str() == want) {
            Some(t) => json!({ "jsonrpc": "2.0", "id": id, "result": t }),
            None => json!({ "jsonrpc": "2.0", "id": id,
                            "error": { "code": -32001, "message": "Task not found" } }),
        }
    } else {
        // Pages of `pageSize` (default 50, at most 100), the token being the offset of the
        // next page, as a2a-v1.md §1.1 describes; `""` on the last page.
        let context = params.get("contextId").and_then(Value::as_str);
        let found: Vec<&Value> = tasks
            .iter()
            .rev()
            .filter(|t| context.is_none() || t["contextId"].as_str() == context)
            .collect();
        let size = params
            .get("pageSize")
            .and_then(Value::as_u64)
            .map_or(50, |n| n.clamp(1, 100)) as usize;
        let from = params
            .get("pageToken")
            .and_then(Value::as_str)
            .and_then(|t| t.parse::<usize>().ok())
            .unwrap_or(0)
            .min(found.len());
        let to = (from + size).min(found.len());
        let next = if to < found.len() {
            to.to_string()
        } else {
            String::new()
        };
        json!({ "jsonrpc": "2.0", "id": id, "result": {
            "tasks": &found[from..to], "nextPageToken": next, "pageSize": to - from,
            "totalSize": found.len()
        } })
    };
    (
        StatusCode::OK,
        [("content-type", "application/json")],
        result.to_string(),
    )
        .into_response()
}
