//! The A2A JSON-RPC client that posts one lapse task (a2a-v1.md §1, §4, §5) and says whether a
//! failure is worth retrying.

use std::error::Error as StdError;
use std::sync::Arc;
use std::time::Duration;

use a2a_types::{
    methods, JsonRpcError, JsonRpcRequest, JsonRpcResponse, SendMessageResponse, TaskState,
    A2A_EXTENSIONS_HEADER, A2A_VERSION, A2A_VERSION_HEADER,
};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use reqwest::{redirect, StatusCode};
use serde_json::Value;
use watcher_core::trace::{TraceParent, TRACEPARENT_HEADER};
use watcher_core::EXPECTATIONS_URI;

use crate::endpoint::{AgentEndpoint, Protocol};
use crate::guard::{check_literal_host, NonPublicAddress, PublicOnlyResolver};

/// A boxed error kept as the source of a [`DeliveryError`].
pub type BoxError = Box<dyn StdError + Send + Sync + 'static>;

/// Settings of an [`A2aClient`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// Longest wait for the TCP (and TLS) connection. Default 10 s.
    pub connect_timeout: Duration,
    /// Longest wait for the whole exchange, from sending to the end of the answer's body.
    /// Default 10 s. Lapse tasks ask for `returnImmediately`, so an agent answers at once.
    pub request_timeout: Duration,
    /// Largest answer body read, in bytes; a longer answer is an error. Default 4 MiB.
    pub max_response_bytes: usize,
    /// The `User-Agent` header.
    pub user_agent: String,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            connect_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(10),
            max_response_bytes: 4 * 1024 * 1024,
            user_agent: concat!("a2a-watcher/", env!("CARGO_PKG_VERSION")).to_owned(),
        }
    }
}

/// The HTTP client could not be built (the TLS backend failed to initialise). Fatal: the process
/// cannot deliver anything; check the build's TLS features.
#[derive(Debug, thiserror::Error)]
#[error("could not build the HTTP client for lapse tasks")]
pub struct ClientBuildError(#[source] reqwest::Error);

/// What the agent answered to a `SendMessage` that it accepted (a JSON-RPC `result`).
///
/// Every variant means the lapse task is delivered: its `messageId` is never sent again.
#[derive(Debug, Clone, PartialEq)]
pub enum SendOutcome {
    /// `{"task": …}`: the agent created a task for the lapse.
    Task {
        /// The agent's task id.
        id: String,
        /// The task's state in the answer.
        state: TaskState,
    },
    /// `{"message": …}`: the agent answered directly, without a task.
    Message {
        /// The answer's `messageId`.
        message_id: String,
    },
    /// A `result` that is neither a Task nor a Message. The agent accepted the request (resending
    /// would only repeat it), so this counts as delivered, with the oddity recorded.
    Unrecognised {
        /// Why the result was not understood.
        detail: String,
    },
}

/// Why a lapse task was not delivered, and whether trying again can help.
#[derive(Debug, thiserror::Error)]
pub enum DeliveryError {
    /// A transient failure: transport error, timeout, HTTP 5xx, 408 or 429, or a JSON-RPC error
    /// that is not permanent (e.g. `-32603`). Try again later with backoff.
    #[error("{reason}")]
    Retryable {
        /// What went wrong, in words.
        reason: String,
        /// The wait the agent's `Retry-After` asks for, when it sent one (delta-seconds, or an
        /// HTTP-date read against the wall clock when the answer arrived).
        retry_after: Option<Duration>,
        /// The agent may have received the request and acted on it: a connection was made and
        /// the request sent, then no answer came (a timeout, a connection reset or closed
        /// before the answer ended), or the answer was a 5xx or a JSON-RPC error that is not
        /// permanent (the agent failed while handling it). `false` when the request cannot
        /// have been received (no connection: refused, DNS, connect timeout) or the agent
        /// refused it without handling it (408, 429). An attempt that may have been received
        /// is ambiguous: the agent is asked with `ListTasks` before it is posted again
        /// ([`crate::deliver::record_attempt`], docs/interpretation.md).
        maybe_received: bool,
        /// The underlying error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// Resending the same request would get the same answer: a permanent JSON-RPC error
    /// (`-32001..=-32009`, `-32600`, `-32601`, `-32602`, `-32700`), HTTP 4xx other than 408 and
    /// 429, a redirect (never followed), a 2xx whose body is not a JSON-RPC response, or an
    /// endpoint that cannot be used. Do not retry; a person must look at the agent or the
    /// configuration.
    #[error("{reason}")]
    Permanent {
        /// What went wrong, in words.
        reason: String,
        /// The underlying error, when there is one.
        #[source]
        source: Option<BoxError>,
    },
}

impl DeliveryError {
    /// A retryable error with a source; `maybe_received` as [`DeliveryError::Retryable`]
    /// documents it.
    pub fn retryable(
        reason: impl Into<String>,
        maybe_received: bool,
        source: impl Into<BoxError>,
    ) -> Self {
        DeliveryError::Retryable {
            reason: reason.into(),
            retry_after: None,
            maybe_received,
            source: Some(source.into()),
        }
    }

    /// A permanent error with a source.
    pub fn permanent(reason: impl Into<String>, source: impl Into<BoxError>) -> Self {
        DeliveryError::Permanent {
            reason: reason.into(),
            source: Some(source.into()),
        }
    }

    /// Whether trying again later can help.
    pub fn is_retryable(&self) -> bool {
        matches!(self, DeliveryError::Retryable { .. })
    }

    /// Whether the failed request may have reached the agent and been acted on (see
    /// [`DeliveryError::Retryable`]'s `maybe_received`): the attempt is then ambiguous. Always
    /// `false` for a [`DeliveryError::Permanent`] (its outcome is recorded for good).
    pub fn maybe_received(&self) -> bool {
        matches!(
            self,
            DeliveryError::Retryable {
                maybe_received: true,
                ..
            }
        )
    }

    /// The reason, without the source chain.
    pub fn reason(&self) -> &str {
        match self {
            DeliveryError::Retryable { reason, .. } | DeliveryError::Permanent { reason, .. } => {
                reason
            }
        }
    }

    /// The JSON-RPC error the agent answered (in a 2xx answer or another status), when it
    /// answered one; `None` for a transport failure, a timeout or an answer that is not
    /// JSON-RPC.
    pub fn rpc_error(&self) -> Option<&JsonRpcError> {
        let source = match self {
            DeliveryError::Retryable { source, .. } | DeliveryError::Permanent { source, .. } => {
                source.as_ref()?
            }
        };
        source.downcast_ref::<JsonRpcError>()
    }

    /// The agent's `Retry-After`, if any.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            DeliveryError::Retryable { retry_after, .. } => *retry_after,
            DeliveryError::Permanent { .. } => None,
        }
    }

    /// The reason followed by each source's message, `: `-separated (what `last_error` records).
    pub fn describe(&self) -> String {
        let mut text = self.to_string();
        let mut source = self.source();
        while let Some(e) = source {
            let msg = e.to_string();
            if !text.ends_with(&msg) {
                text.push_str(": ");
                text.push_str(&msg);
            }
            source = e.source();
        }
        text
    }
}

/// Posts lapse tasks as A2A 1.0 JSON-RPC `SendMessage` requests over HTTPS (rustls) or HTTP.
///
/// Build it once (it holds connection pools) and share it. Redirects are never followed
/// (serve.md "Outbound"); no proxy from the environment is used.
#[derive(Debug, Clone)]
pub struct A2aClient {
    /// For endpoints written in the configuration.
    open: reqwest::Client,
    /// For endpoints from fetched cards: resolves only to public addresses.
    public_only: reqwest::Client,
    max_response_bytes: usize,
}

impl A2aClient {
    /// A client with the given settings.
    ///
    /// # Errors
    /// [`ClientBuildError`] when the TLS backend cannot be initialised.
    pub fn new(config: &ClientConfig) -> Result<Self, ClientBuildError> {
        let builder = || {
            reqwest::Client::builder()
                .connect_timeout(config.connect_timeout)
                .timeout(config.request_timeout)
                .redirect(redirect::Policy::none())
                .user_agent(config.user_agent.clone())
                .no_proxy()
        };
        let open = builder().build().map_err(ClientBuildError)?;
        let public_only = builder()
            .dns_resolver(Arc::new(PublicOnlyResolver))
            .build()
            .map_err(ClientBuildError)?;
        Ok(A2aClient {
            open,
            public_only,
            max_response_bytes: config.max_response_bytes,
        })
    }

    /// A client with [`ClientConfig::default`].
    ///
    /// # Errors
    /// As [`A2aClient::new`].
    pub fn with_defaults() -> Result<Self, ClientBuildError> {
        Self::new(&ClientConfig::default())
    }

    /// Posts `{"jsonrpc":"2.0","id":<message_id>,"method":"SendMessage","params":<params>}` to
    /// `endpoint.url` with `A2A-Version: 1.0`, `A2A-Extensions: <expectations URI>`,
    /// `Content-Type: application/json` and, when configured, `Authorization: Bearer …`.
    ///
    /// `params` is the stored `SendMessageRequest` (semantics.md "The lapse task"); `message_id`
    /// is its `message.messageId`, used as the JSON-RPC `id`.
    ///
    /// # Errors
    /// [`DeliveryError::Retryable`] or [`DeliveryError::Permanent`], classified as documented
    /// there; the transport or JSON-RPC error is kept as the source.
    pub async fn send_message(
        &self,
        endpoint: &AgentEndpoint,
        params: &Value,
        message_id: &str,
    ) -> Result<SendOutcome, DeliveryError> {
        self.send_traced(endpoint, params, message_id, None).await
    }

    /// Asks the agent for its tasks in `context_id` (A2A 1.0 `ListTasks`, a2a-v1.md §1) with
    /// their whole history (`historyLength` [`LIST_HISTORY_LENGTH`]: without it an agent
    /// answers its own default, which may be no history at all, and the lapse task's message is
    /// the first of its task's history, the one a short history drops first), newest first,
    /// `page_size` (1..=100) a page, following `nextPageToken`
    /// until the last page (at most [`LIST_PAGES`] pages), and answers the `id` and state of the
    /// first task whose history holds a message with `message_id` (the lapse task's own), or
    /// `None` when no task of the context does.
    ///
    /// Used before sending an entry again whose earlier attempt has no recorded outcome
    /// (a2a-delegation-in-depth, "Recovery"): found, the entry is delivered already.
    ///
    /// # Errors
    /// As [`A2aClient::send_message`]; an agent without `ListTasks` answers `-32601`
    /// (permanent). [`DeliveryError::Permanent`] when [`LIST_PAGES`] pages hold no such task and
    /// the agent offers more, or a page repeats the previous page's token: the look-up could
    /// not finish, so whether the agent has the task is unknown. The JSON-RPC id is
    /// `list:{message_id}`.
    pub async fn find_in_context(
        &self,
        endpoint: &AgentEndpoint,
        context_id: &str,
        tenant: Option<&str>,
        message_id: &str,
        page_size: u32,
    ) -> Result<Option<(String, TaskState)>, DeliveryError> {
        if endpoint.protocol == Protocol::V03 {
            // A2A 0.3 has no method to list tasks: the caller sends again with the same
            // messageId (a2a-delegation-in-depth, "Recovery").
            return Err(DeliveryError::Permanent {
                reason: "an A2A 0.3 agent offers no ListTasks".into(),
                source: None,
            });
        }
        let mut params = serde_json::json!({
            "contextId": context_id,
            "pageSize": page_size.clamp(1, 100),
            "historyLength": LIST_HISTORY_LENGTH,
        });
        if let Some(t) = tenant {
            params["tenant"] = Value::String(t.to_owned());
        }
        for _ in 0..LIST_PAGES {
            let result = self
                .call(
                    endpoint,
                    methods::LIST_TASKS,
                    &params,
                    &format!("list:{message_id}"),
                )
                .await?;
            let Some(tasks) = result.get("tasks").and_then(Value::as_array) else {
                return Err(DeliveryError::Permanent {
                    reason: "the ListTasks result has no `tasks` array".into(),
                    source: None,
                });
            };
            if let Some(found) = tasks.iter().find_map(|task| holding(task, message_id)) {
                return Ok(Some(found));
            }
            // `""` or absent on the last page (a2a-v1.md §1.1).
            let next = result
                .get("nextPageToken")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty());
            let Some(next) = next else {
                return Ok(None);
            };
            if params.get("pageToken").and_then(Value::as_str) == Some(next) {
                return Err(DeliveryError::Permanent {
                    reason: "ListTasks answered the same nextPageToken twice".into(),
                    source: None,
                });
            }
            params["pageToken"] = Value::String(next.to_owned());
        }
        Err(DeliveryError::Permanent {
            reason: format!(
                "ListTasks holds more than {LIST_PAGES} pages in the context; the look-up stopped \
                 without finding the lapse task"
            ),
            source: None,
        })
    }

    /// Asks the agent for the task `task_id` (A2A 1.0 `GetTask`, no history) and answers its
    /// state (`TASK_STATE_UNSPECIFIED` when the answer has none the watcher knows).
    ///
    /// # Errors
    /// As [`A2aClient::send_message`]; an unknown task is `-32001` (permanent). The JSON-RPC id
    /// is `get:{task_id}`.
    pub async fn get_task_state(
        &self,
        endpoint: &AgentEndpoint,
        task_id: &str,
        tenant: Option<&str>,
    ) -> Result<TaskState, DeliveryError> {
        // A 0.3 answer is the bare Task (with `kind` and a lowercase state): `/status/state`
        // reads the same, and the state decoder takes the 0.3 names.
        let result = self.call_get_task(endpoint, task_id, tenant).await?;
        Ok(result
            .pointer("/status/state")
            .cloned()
            .and_then(|s| serde_json::from_value::<TaskState>(s).ok())
            .unwrap_or(TaskState::Unspecified))
    }

    /// Asks the agent for the task `task_id` (A2A 1.0 `GetTask`, no history; `tasks/get` to a
    /// 0.3 agent) and answers the whole Task in 1.0 shape (a 0.3 task converted by the adapter),
    /// so its status and artifacts can go through the push ingest path.
    ///
    /// # Errors
    /// As [`A2aClient::get_task_state`]; a result that is not a Task object is permanent. The
    /// JSON-RPC id is `get:{task_id}`.
    pub async fn get_task(
        &self,
        endpoint: &AgentEndpoint,
        task_id: &str,
        tenant: Option<&str>,
    ) -> Result<Value, DeliveryError> {
        let result = self.call_get_task(endpoint, task_id, tenant).await?;
        let v1 = a2a_types::v03::result_to_v1(&result);
        let task = v1.get("task").cloned().unwrap_or(v1);
        if task.get("id").and_then(Value::as_str).is_none() || task.get("status").is_none() {
            return Err(DeliveryError::Permanent {
                reason: "the GetTask result is not a Task (no `id` or `status`)".into(),
                source: None,
            });
        }
        Ok(task)
    }

    /// `GetTask` (`tasks/get` to a 0.3 agent) of `task_id` with no history, JSON-RPC id
    /// `get:{task_id}`; answers the raw `result`.
    async fn call_get_task(
        &self,
        endpoint: &AgentEndpoint,
        task_id: &str,
        tenant: Option<&str>,
    ) -> Result<Value, DeliveryError> {
        let mut params = serde_json::json!({ "id": task_id, "historyLength": 0 });
        if let Some(t) = tenant {
            params["tenant"] = Value::String(t.to_owned());
        }
        let method = match endpoint.protocol {
            Protocol::V1 => methods::GET_TASK,
            Protocol::V03 => a2a_types::v03::METHOD_GET_TASK,
        };
        self.call(endpoint, method, &params, &format!("get:{task_id}"))
            .await
    }

    /// One A2A request other than a lapse task's own, for tools that speak to an agent (the
    /// lifecycle probe's `SendMessage`, `GetTask`, `CancelTask` and `ListTasks`): 1.0 `method`
    /// with its typed 1.0 `params` ([`a2a_types::SendMessageRequest`],
    /// [`a2a_types::rpc::GetTaskRequest`], [`a2a_types::rpc::CancelTaskRequest`],
    /// [`a2a_types::rpc::ListTasksRequest`]) as JSON-RPC request `id`, in the endpoint's
    /// protocol: to a 0.3 agent the method's 0.3 name (`message/send`, `tasks/get`,
    /// `tasks/cancel`) and `SendMessage`'s params through the 0.3 adapter. Answers the JSON-RPC
    /// `result`, a 0.3 result (a bare `Task` or `Message` with `kind`, whichever protocol the
    /// agent claims) read into 1.0 shape.
    ///
    /// # Errors
    /// As [`A2aClient::send_message`]; [`DeliveryError::rpc_error`] gives the agent's JSON-RPC
    /// error when it answered one. [`DeliveryError::Permanent`], with nothing sent, for a
    /// method A2A 0.3 does not have (`ListTasks`) or params that do not encode.
    pub async fn request<P: serde::Serialize>(
        &self,
        endpoint: &AgentEndpoint,
        method: &str,
        params: &P,
        id: &str,
    ) -> Result<Value, DeliveryError> {
        let params = serde_json::to_value(params)
            .map_err(|e| DeliveryError::permanent("could not encode the request", e))?;
        let (name, params) = match (endpoint.protocol, method) {
            (Protocol::V1, _) => (method, params),
            (Protocol::V03, methods::SEND_MESSAGE) => (
                a2a_types::v03::METHOD_SEND_MESSAGE,
                a2a_types::v03::send_params_to_v03(&params),
            ),
            (Protocol::V03, methods::GET_TASK) => (a2a_types::v03::METHOD_GET_TASK, params),
            (Protocol::V03, methods::CANCEL_TASK) => (a2a_types::v03::METHOD_CANCEL_TASK, params),
            (Protocol::V03, other) => {
                return Err(DeliveryError::Permanent {
                    reason: format!("an A2A 0.3 agent offers no {other}"),
                    source: None,
                })
            }
        };
        let result = self.call(endpoint, name, &params, id).await?;
        Ok(a2a_types::v03::result_to_v1(&result))
    }

    /// Posts one JSON-RPC request and answers its `result`.
    async fn call(
        &self,
        endpoint: &AgentEndpoint,
        method: &str,
        params: &Value,
        id: &str,
    ) -> Result<Value, DeliveryError> {
        self.call_traced(endpoint, method, params, id, None).await
    }

    /// [`A2aClient::call`] with a `traceparent` header when one is given.
    async fn call_traced(
        &self,
        endpoint: &AgentEndpoint,
        method: &str,
        params: &Value,
        id: &str,
        traceparent: Option<&TraceParent>,
    ) -> Result<Value, DeliveryError> {
        let message_id = id;
        let url = reqwest::Url::parse(&endpoint.url).map_err(|e| {
            DeliveryError::permanent(format!("endpoint {:?} is not a URL", endpoint.url), e)
        })?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(DeliveryError::Permanent {
                reason: format!("endpoint {:?} is not an http(s) URL", endpoint.url),
                source: None,
            });
        }
        if endpoint.public_only {
            check_literal_host(&url).map_err(|e| {
                DeliveryError::permanent("endpoint refused by the outbound address policy", e)
            })?;
        }
        let request = JsonRpcRequest::new(message_id, method, params);
        let body = serde_json::to_vec(&request)
            .map_err(|e| DeliveryError::permanent("could not encode the request", e))?;

        let client = if endpoint.public_only {
            &self.public_only
        } else {
            &self.open
        };
        let mut req = client
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json")
            .body(body);
        if let Some(tp) = traceparent {
            req = req.header(TRACEPARENT_HEADER, tp.to_string());
        }
        req = match endpoint.protocol {
            Protocol::V1 => req
                .header(A2A_VERSION_HEADER, A2A_VERSION)
                .header(A2A_EXTENSIONS_HEADER, EXPECTATIONS_URI),
            // 0.3 names the extensions header with an `X-` and has no version header.
            Protocol::V03 => req.header("X-A2A-Extensions", EXPECTATIONS_URI),
        };
        if let Some(bearer) = &endpoint.bearer {
            let mut value = HeaderValue::from_str(&format!("Bearer {bearer}")).map_err(|e| {
                DeliveryError::permanent("the configured bearer token is not a valid header", e)
            })?;
            value.set_sensitive(true);
            req = req.header(AUTHORIZATION, value);
        }

        let mut response = req.send().await.map_err(transport_error)?;
        let status = response.status();
        let headers = response.headers().clone();
        let mut body = Vec::new();
        let mut truncated = false;
        while let Some(chunk) = response.chunk().await.map_err(transport_error)? {
            let room = self.max_response_bytes.saturating_sub(body.len());
            if chunk.len() > room {
                body.extend_from_slice(&chunk[..room]);
                truncated = true;
                break;
            }
            body.extend_from_slice(&chunk);
        }
        if truncated && status.is_success() {
            return Err(DeliveryError::Permanent {
                reason: format!(
                    "HTTP {status}: the answer is longer than {} bytes",
                    self.max_response_bytes
                ),
                source: None,
            });
        }
        rpc_result(status, &headers, &body, message_id)
    }
}

/// Classifies a failure to exchange the request at all.
fn transport_error(e: reqwest::Error) -> DeliveryError {
    let mut source: Option<&(dyn StdError + 'static)> = e.source();
    while let Some(s) = source {
        if s.is::<NonPublicAddress>() {
            // The chain (kept as the source) names the host and address.
            return DeliveryError::permanent("endpoint refused by the outbound address policy", e);
        }
        source = s.source();
    }
    if e.is_builder() {
        return DeliveryError::permanent("the request could not be built", e);
    }
    // No connection, no request: a refused connection, a name that does not resolve and a
    // connect timeout all fail before a byte of the request is written. Anything else failed
    // once the request was on its way (hyper's pool sends again by itself a request it had not
    // begun to write on a connection it found closed), so the agent may have it.
    let connected = !e.is_connect();
    let reason = if !connected {
        "could not connect to the agent"
    } else if e.is_timeout() {
        "the agent did not answer in time"
    } else {
        "the exchange with the agent failed"
    };
    DeliveryError::retryable(reason, connected, e)
}

/// The most `ListTasks` pages [`A2aClient::find_in_context`] reads: 50 (5,000 tasks at the
/// largest page size).
pub const LIST_PAGES: usize = 50;

/// The `historyLength` [`A2aClient::find_in_context`] asks `ListTasks` for: the largest int32,
/// i.e. every message of each task's history (a2a-v1.md §1 notes: `n > 0` is "at most the n most
/// recent messages"; absent is the agent's default, which is all for some SDKs and none for
/// others). The lapse task's `messageId` is its task's first message, so any smaller bound
/// could hide it behind the agent's later messages (docs/interpretation.md).
pub const LIST_HISTORY_LENGTH: i32 = i32::MAX;

/// The id and state of `task` when its history holds a message with `message_id`.
fn holding(task: &Value, message_id: &str) -> Option<(String, TaskState)> {
    let holds = task
        .get("history")
        .and_then(Value::as_array)
        .is_some_and(|h| {
            h.iter()
                .any(|m| m.get("messageId").and_then(Value::as_str) == Some(message_id))
        });
    if !holds {
        return None;
    }
    let id = task.get("id").and_then(Value::as_str)?;
    let state = task
        .pointer("/status/state")
        .cloned()
        .and_then(|s| serde_json::from_value::<TaskState>(s).ok())
        .unwrap_or(TaskState::Unspecified);
    Some((id.to_owned(), state))
}

/// Classifies an answer to `SendMessage` received in full (a2a-v1.md §1, §4).
#[cfg(test)]
fn interpret_response(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    message_id: &str,
) -> Result<SendOutcome, DeliveryError> {
    rpc_result(status, headers, body, message_id).map(outcome_of)
}

/// What a `SendMessage` `result` says.
fn outcome_of(result: Value) -> SendOutcome {
    match serde_json::from_value::<SendMessageResponse>(result) {
        Ok(SendMessageResponse::Task(task)) => SendOutcome::Task {
            state: task.state(),
            id: task.id,
        },
        Ok(SendMessageResponse::Message(message)) => SendOutcome::Message {
            message_id: message.message_id,
        },
        Err(e) => SendOutcome::Unrecognised {
            detail: e.to_string(),
        },
    }
}

/// Classifies an answer received in full (a2a-v1.md §1, §4) and answers its JSON-RPC `result`.
fn rpc_result(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    message_id: &str,
) -> Result<Value, DeliveryError> {
    if !status.is_success() {
        // A JSON-RPC error in the answer is named, and kept as the source
        // ([`DeliveryError::rpc_error`]).
        let rpc_error = serde_json::from_slice::<JsonRpcResponse>(body)
            .ok()
            .and_then(|r| r.error);
        let detail = match &rpc_error {
            Some(err) => err.to_string(),
            None => snippet(body),
        };
        let source = || rpc_error.clone().map(|e| Box::new(e) as BoxError);
        let reason = if detail.is_empty() {
            format!("HTTP {status}")
        } else {
            format!("HTTP {status}: {detail}")
        };
        return Err(
            if status.is_server_error()
                || status == StatusCode::REQUEST_TIMEOUT
                || status == StatusCode::TOO_MANY_REQUESTS
            {
                DeliveryError::Retryable {
                    reason,
                    retry_after: retry_after(headers, std::time::SystemTime::now()),
                    // A 5xx comes from whatever handled the request (the agent, or a proxy that
                    // passed it on); 408 and 429 refuse it unhandled.
                    maybe_received: status.is_server_error(),
                    source: source(),
                }
            } else if status.is_redirection() {
                let location = headers
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("?");
                DeliveryError::Permanent {
                    reason: format!("{reason} (redirect to {location} not followed)"),
                    source: None,
                }
            } else {
                DeliveryError::Permanent {
                    reason,
                    source: source(),
                }
            },
        );
    }

    let response: JsonRpcResponse = serde_json::from_slice(body).map_err(|e| {
        DeliveryError::permanent(
            format!("HTTP {status} but the body is not a JSON-RPC response"),
            e,
        )
    })?;
    if response.result.is_none() && response.error.is_none() {
        return Err(DeliveryError::Permanent {
            reason: format!("HTTP {status} but the JSON-RPC response has neither result nor error"),
            source: None,
        });
    }
    if response.id.as_str() != Some(message_id) {
        tracing::warn!(
            message_id,
            answered_id = %response.id,
            "agent answered with a different JSON-RPC id; taking the answer as this request's"
        );
    }
    match response.into_result() {
        Ok(result) => Ok(result),
        Err(err) => {
            let reason = format!("agent answered {err}");
            Err(if err.is_permanent() {
                DeliveryError::permanent(reason, err)
            } else {
                // The agent's handler failed partway (e.g. `-32603`): it may have created
                // the task before failing.
                DeliveryError::retryable(reason, true, err)
            })
        }
    }
}

/// The wait an agent's `Retry-After` asks for (RFC 9110 §10.2.3), in either form:
/// delta-seconds (`120`), or an HTTP-date (`Sun, 06 Nov 1994 08:49:37 GMT`, and the obsolete
/// RFC 850 and asctime forms), read as the time from `now` (the wall clock when the answer
/// arrived) to that date; a date already past asks for no wait. `None` when the header is absent
/// or in neither form. The caller caps the wait at the lapse task's give-up age
/// ([`crate::deliver::record_attempt`]).
fn retry_after(headers: &HeaderMap, now: std::time::SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The start of a body for an error message: at most 200 characters, control characters blanked.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let mut out: String = text
        .chars()
        .take(200)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > 200 {
        out.push('…');
    }
    out.trim().to_owned()
}

mod traced;

#[cfg(test)]
mod tests;
