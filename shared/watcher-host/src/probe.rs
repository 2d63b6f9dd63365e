//! `a2a-watcher probe AGENT_URL`: sends two probe tasks through an agent's lifecycle and prints
//! the lifecycle descriptor of (agent, protocol version) that
//! `docs/specs/agent-card-vs-lifecycle-conformance.md` asks for: the card alone never says
//! whether statuses carry timestamps, whether exactly one terminal event is sent, whether pushes
//! arrive, whether a cancel is pushed, or whether `GetTask` and `ListTasks` are served.
//!
//! * The completion leg: one task followed with `GetTask` until it settles; its pushed terminal
//!   events are counted.
//! * The cancel leg: a second task, canceled with `CancelTask` as soon as `SendMessage` answers;
//!   whether its canceled status was pushed once, twice (or more) or never is recorded. An SDK
//!   may push nothing for a cancel, and a cancel the watcher is not told of would leave the
//!   origin task's expectations open.
//!
//! The probe speaks to the interface lapse tasks go to ([`crate::agents::jsonrpc_interface`]:
//! the card's first A2A 1.x JSONRPC interface, else its first 0.3 one) in that interface's
//! protocol, through the client lapse tasks go through
//! ([`watcher_delivery::client::A2aClient::request`]) with the typed requests of `a2a_types`:
//! 1.0 `SendMessage`, `GetTask`, `CancelTask` and `ListTasks` with `A2A-Version: 1.0`, or 0.3
//! `message/send`, `tasks/get` and `tasks/cancel` through the 0.3 adapter (0.3 has no method to
//! list tasks). Pushes go to a [`PushInbox`]: for `a2a-watcher probe` and `serve`, a
//! webhook served on 127.0.0.1 ([`LocalInbox`]), so they can only arrive from an agent that can
//! reach this machine; for the AWS functions, the deployment's own push route, read back from
//! the store ([`crate::aws::cards`]).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_types::rpc::{CancelTaskRequest, GetTaskRequest, ListTasksRequest};
use a2a_types::{
    methods, v03, Message, Part, Role, SendMessageConfiguration, SendMessageRequest,
    TaskPushNotificationConfig, TaskState,
};
use anyhow::Context;
use axum::{extract::State, routing::post, Json, Router};
use serde_json::{json, Value};
use watcher_delivery::client::{A2aClient, ClientConfig};
use watcher_delivery::endpoint::{AgentEndpoint, Protocol};

/// The two legs of a probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leg {
    /// The task followed to its end.
    Complete,
    /// The task canceled with `CancelTask`.
    Cancel,
}

/// Where a probe's pushes go, and how the probe reads them back.
#[async_trait::async_trait]
pub trait PushInbox: Send + Sync {
    /// The `taskPushNotificationConfig` (its `url` and `token`) the probe task of `leg` asks
    /// for; `None` when no push can be received.
    fn config(&self, leg: Leg) -> Option<TaskPushNotificationConfig>;

    /// The statuses pushed so far for the task `task_id` of `leg`, in receipt order, each
    /// `{"from": "push", "state", "timestamp"?}`.
    async fn pushed(&self, leg: Leg, task_id: &str) -> Vec<Value>;
}

/// A [`PushInbox`] served on 127.0.0.1 by this process, one path per leg, until dropped.
pub struct LocalInbox {
    base: String,
    complete: Pushes,
    cancel: Pushes,
    server: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl LocalInbox {
    /// Binds a free port on 127.0.0.1 and serves the webhook.
    ///
    /// # Errors
    /// The port cannot be bound.
    pub async fn start() -> anyhow::Result<Self> {
        let (complete, cancel): (Pushes, Pushes) = Default::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let base = format!("http://{}", listener.local_addr()?);
        let app = Router::new()
            .route(COMPLETE_PATH, post(collect).with_state(complete.clone()))
            .route(CANCEL_PATH, post(collect).with_state(cancel.clone()));
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        Ok(LocalInbox {
            base,
            complete,
            cancel,
            server,
        })
    }
}

impl Drop for LocalInbox {
    fn drop(&mut self) {
        self.server.abort();
    }
}

#[async_trait::async_trait]
impl PushInbox for LocalInbox {
    fn config(&self, leg: Leg) -> Option<TaskPushNotificationConfig> {
        let path = match leg {
            Leg::Complete => COMPLETE_PATH,
            Leg::Cancel => CANCEL_PATH,
        };
        let mut config = TaskPushNotificationConfig::new(format!("{}{path}", self.base));
        config.token = Some("probe".to_owned());
        Some(config)
    }

    async fn pushed(&self, leg: Leg, _task_id: &str) -> Vec<Value> {
        pushed_statuses(&taken(match leg {
            Leg::Complete => &self.complete,
            Leg::Cancel => &self.cancel,
        }))
    }
}

/// How long a probe task may take to reach a terminal or interrupted state.
const LIFECYCLE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long to wait for late pushes after both tasks settled.
const PUSH_GRACE: Duration = Duration::from_secs(1);
/// The webhook path of the completion leg's pushes.
const COMPLETE_PATH: &str = "/probe/complete";
/// The webhook path of the cancel leg's pushes.
const CANCEL_PATH: &str = "/probe/cancel";

type Pushes = Arc<Mutex<Vec<Value>>>;

/// Probes the agent at `agent_url` (a base URL, its card at `/.well-known/agent-card.json` or
/// the legacy `/.well-known/agent.json`, or the card's own URL) and returns the descriptor of
/// [`run_with_card`].
///
/// # Errors
/// The card cannot be read or names no JSONRPC 1.x or 0.3 interface, or the first
/// `SendMessage` fails.
pub async fn run(agent_url: &str) -> anyhow::Result<Value> {
    let (card, _) = crate::agents::fetch_card(agent_url)
        .await
        .context("no agent card")?;
    run_with_card(agent_url, &card, None).await
}

/// The client the probe speaks through: lapse tasks' own ([`A2aClient`]: no redirect
/// followed, 10 s to connect and 10 s per exchange).
fn client() -> anyhow::Result<A2aClient> {
    Ok(A2aClient::new(&ClientConfig::default())?)
}

/// Probes the agent whose card (1.0 or 0.3 shape) is `card`, named `agent` in the descriptor,
/// presenting `bearer` when given (serve's probe on registration: the card kept in the store,
/// the agent's configured bearer). Answers the descriptor:
///
/// `{ "agent", "protocolVersion" (the interface's), "protocolSpoken" ("1.0" | "0.3"),
/// "endpoint", "card": { "pushNotifications", "streaming" }, "taskId", "statuses": [{ "from",
/// "state", "timestamp"? }], "timestampsOnEveryStatus", "terminalEvents", "exactlyOneTerminal",
/// "pushesArrived", "getTask", "listTasks", "cancel": { "taskId", "statuses", "canceled",
/// "terminalEvents", "pushed": "once" | "twice" | "never" | null, "error"? },
/// "lifecycleTrusted", "demotions": [why not trusted, in words] }`.
///
/// `terminalEvents` counts the completion leg's terminal statuses among its pushes (each push
/// is one event), `null` when nothing was pushed; `cancel.pushed` says how many terminal
/// statuses were pushed for the canceled task ("twice" for two or more), `null` when the task
/// could not be canceled (`cancel.error` says why). `timestampsOnEveryStatus` covers both
/// tasks.
///
/// # Errors
/// The card names no JSONRPC 1.x or 0.3 interface, the first `SendMessage` fails, or the agent
/// cannot be reached.
pub async fn run_with_card(
    agent: &str,
    card: &Value,
    bearer: Option<&str>,
) -> anyhow::Result<Value> {
    let inbox = LocalInbox::start().await?;
    run_with_inbox(agent, card, bearer, &inbox).await
}

/// [`run_with_card`], the pushes going to `inbox` (the AWS functions: the deployment's own push
/// route, read back from the store).
///
/// # Errors
/// As [`run_with_card`].
pub async fn run_with_inbox(
    agent: &str,
    card: &Value,
    bearer: Option<&str>,
    inbox: &dyn PushInbox,
) -> anyhow::Result<Value> {
    let card = v03::card_to_v1(card.clone());
    let parsed: a2a_types::AgentCard = serde_json::from_value(card.clone())
        .context("the card is not an A2A AgentCard (1.0, or 0.3 read through the adapter)")?;
    let (iface, protocol) = crate::agents::jsonrpc_interface(&parsed)
        .context("the card names no JSONRPC interface of A2A 1.x or 0.3")?;
    // The interface as the card gives it, used as given (the probe is asked for this agent),
    // with the agent's bearer when configured.
    let peer = Peer {
        client: client()?,
        endpoint: AgentEndpoint::configured(iface.url.clone(), bearer.map(str::to_owned))
            .speaking(protocol),
    };
    let version = iface.protocol_version.clone();
    let push_capable = parsed.capabilities.push_notifications == Some(true);

    // Where the agent pushes: one config per leg, so each leg counts its own pushes.
    let webhook = |leg: Leg| push_capable.then(|| inbox.config(leg)).flatten();

    // The completion leg.
    let sent = peer
        .call(
            methods::SEND_MESSAGE,
            &send_params(webhook(Leg::Complete), "complete"),
        )
        .await?
        .map_err(|e| anyhow::anyhow!("SendMessage answered an error: {e}"))?;
    let task = task_of(&sent);
    let task_id = task["id"]
        .as_str()
        .context("SendMessage answered no Task")?
        .to_owned();
    let mut statuses = vec![status("SendMessage", &task["status"])];
    let get_task = peer.follow(&task_id, &mut statuses, settles).await?;
    let list_tasks = match protocol {
        // A2A 0.3 has no method to list tasks.
        Protocol::V03 => false,
        Protocol::V1 => peer
            .call(
                methods::LIST_TASKS,
                &ListTasksRequest {
                    page_size: Some(1),
                    ..ListTasksRequest::default()
                },
            )
            .await?
            .is_ok(),
    };

    // The cancel leg.
    let mut cancel = cancel_leg(&peer, webhook(Leg::Cancel)).await?;

    tokio::time::sleep(PUSH_GRACE).await;

    let pushed = inbox.pushed(Leg::Complete, &task_id).await;
    statuses.extend(pushed.iter().cloned());
    let cancel_pushed = match &cancel.task_id {
        Some(id) => inbox.pushed(Leg::Cancel, id).await,
        None => Vec::new(),
    };
    let cancel_terminal = cancel_pushed
        .iter()
        .filter(|s| terminal(&s["state"]))
        .count();
    cancel.statuses.extend(cancel_pushed);

    let timestamps = statuses
        .iter()
        .chain(&cancel.statuses)
        .all(|s| s.get("timestamp").is_some());
    let terminal_events = (!pushed.is_empty()).then(|| {
        statuses
            .iter()
            .filter(|s| s["from"] == "push" && terminal(&s["state"]))
            .count()
    });
    let canceled = cancel
        .statuses
        .iter()
        .any(|s| s["state"] == TaskState::Canceled.as_str());
    let cancel_outcome = if canceled {
        Ok(cancel_terminal)
    } else {
        Err(cancel.error.clone().unwrap_or_else(|| {
            "the task did not reach TASK_STATE_CANCELED within the probe's time".to_owned()
        }))
    };
    let demotions = demotions(&Observed {
        push_capable,
        timestamps,
        terminal_events,
        get_task,
        cancel: cancel_outcome.clone(),
    });
    let mut cancel_json = json!({
        "taskId": cancel.task_id,
        "statuses": cancel.statuses,
        "canceled": canceled,
        "terminalEvents": cancel_terminal,
        "pushed": cancel_outcome.as_ref().ok().map(|n| pushed_word(*n)),
    });
    if let Some(e) = &cancel.error {
        cancel_json["error"] = json!(e);
    }
    Ok(json!({
        "agent": agent,
        "protocolVersion": version,
        "protocolSpoken": match protocol { Protocol::V1 => "1.0", Protocol::V03 => "0.3" },
        "endpoint": peer.endpoint.url,
        "card": { "pushNotifications": push_capable,
                  "streaming": parsed.capabilities.streaming == Some(true) },
        "taskId": task_id,
        "statuses": statuses,
        "timestampsOnEveryStatus": timestamps,
        "terminalEvents": terminal_events,
        "exactlyOneTerminal": terminal_events == Some(1),
        "pushesArrived": pushed.len(),
        "getTask": get_task,
        "listTasks": list_tasks,
        "cancel": cancel_json,
        "lifecycleTrusted": demotions.is_empty(),
        "demotions": demotions,
    }))
}

/// What the probe saw, for [`demotions`].
#[derive(Debug, Clone)]
struct Observed {
    /// The card says `pushNotifications: true`.
    push_capable: bool,
    /// Every status of both tasks carried a `timestamp`.
    timestamps: bool,
    /// Terminal statuses pushed for the completion leg's task; `None` when nothing was pushed.
    terminal_events: Option<usize>,
    /// `GetTask` answered.
    get_task: bool,
    /// The cancel leg: `Ok(terminal statuses pushed for the canceled task)`, or `Err(why the
    /// task could not be canceled)`.
    cancel: Result<usize, String>,
}

/// "once", "twice" (two or more) or "never": how often a terminal status was pushed.
fn pushed_word(n: usize) -> &'static str {
    match n {
        0 => "never",
        1 => "once",
        _ => "twice",
    }
}

/// Why the agent is not lifecycle-trusted, in words: the conformance note's demotion rules as
/// the probe can see them, and the cancel leg's (docs/interpretation.md). Empty: trusted.
fn demotions(o: &Observed) -> Vec<String> {
    let mut out = Vec::new();
    if !o.timestamps {
        out.push(
            "a status without `timestamp`: duplicate terminal events cannot be told apart"
                .to_owned(),
        );
    }
    match o.terminal_events {
        None if o.push_capable => {
            out.push("the card says pushNotifications: true, but no push arrived".to_owned());
        }
        None => out.push(
            "no push arrived (the card offers none): terminal events cannot be counted".to_owned(),
        ),
        Some(1) => {}
        Some(n) => out.push(format!(
            "{n} terminal events pushed for one task, not exactly one"
        )),
    }
    if !o.get_task {
        out.push("GetTask is not served".to_owned());
    }
    match &o.cancel {
        Ok(0) => out.push(
            "the probe's canceled task had its cancel pushed never: a cancel the watcher is not \
             told of leaves the origin task's expectations open"
                .to_owned(),
        ),
        Ok(1) => {}
        Ok(n) => out.push(format!(
            "{n} terminal events pushed for the probe's canceled task, not exactly one"
        )),
        Err(why) => out.push(format!(
            "the probe task could not be canceled ({why}): how cancels are pushed is unknown"
        )),
    }
    out
}

/// The cancel leg so far: the second probe task and what `SendMessage`, `CancelTask` and
/// `GetTask` said of it.
struct CancelLeg {
    task_id: Option<String>,
    statuses: Vec<Value>,
    error: Option<String>,
}

/// Sends the second probe task (pushes as `push_config` says), cancels it with `CancelTask` at once, and
/// follows it with `GetTask` until it is terminal. A JSON-RPC error (no task, not cancelable,
/// method not found) is recorded in `error`, not raised.
///
/// # Errors
/// The agent cannot be reached or answers no JSON.
async fn cancel_leg(
    peer: &Peer,
    push_config: Option<TaskPushNotificationConfig>,
) -> anyhow::Result<CancelLeg> {
    let mut leg = CancelLeg {
        task_id: None,
        statuses: Vec::new(),
        error: None,
    };
    let sent = match peer
        .call(methods::SEND_MESSAGE, &send_params(push_config, "cancel"))
        .await?
    {
        Ok(sent) => sent,
        Err(e) => {
            leg.error = Some(format!("SendMessage answered {e}"));
            return Ok(leg);
        }
    };
    let task = task_of(&sent);
    let Some(task_id) = task["id"].as_str().map(str::to_owned) else {
        leg.error = Some("SendMessage answered no Task".to_owned());
        return Ok(leg);
    };
    leg.task_id = Some(task_id.clone());
    leg.statuses.push(status("SendMessage", &task["status"]));
    if terminal(&leg.statuses[0]["state"]) {
        leg.error = Some(format!(
            "it was {} before CancelTask could be sent",
            leg.statuses[0]["state"].as_str().unwrap_or("terminal")
        ));
        return Ok(leg);
    }
    let method = peer.name(methods::CANCEL_TASK);
    match peer
        .call(
            methods::CANCEL_TASK,
            &CancelTaskRequest {
                tenant: None,
                id: task_id.clone(),
                metadata: None,
            },
        )
        .await?
    {
        Ok(r) => leg.statuses.push(status(method, &task_of(&r)["status"])),
        Err(e) => {
            leg.error = Some(format!("{method} answered {e}"));
            return Ok(leg);
        }
    }
    peer.follow(&task_id, &mut leg.statuses, terminal).await?;
    Ok(leg)
}

/// The agent's JSON-RPC interface as the probe speaks to it.
struct Peer {
    client: A2aClient,
    /// The interface's URL, protocol and the agent's bearer.
    endpoint: AgentEndpoint,
}

impl Peer {
    /// The name of 1.0 `method` in the peer's protocol (`tasks/cancel` for `CancelTask` to a 0.3
    /// agent), as the descriptor's statuses name where they came from.
    fn name(&self, method: &'static str) -> &'static str {
        match (self.endpoint.protocol, method) {
            (Protocol::V03, methods::SEND_MESSAGE) => v03::METHOD_SEND_MESSAGE,
            (Protocol::V03, methods::GET_TASK) => v03::METHOD_GET_TASK,
            (Protocol::V03, methods::CANCEL_TASK) => v03::METHOD_CANCEL_TASK,
            _ => method,
        }
    }

    /// One request of 1.0 `method` with its typed 1.0 `params`, in the peer's protocol (0.3:
    /// the method's 0.3 name, `message/send` params through the adapter, no `A2A-Version`), the
    /// JSON-RPC id the method's name in that protocol: `Ok(result)` in 1.0 shape, or
    /// `Err(the JSON-RPC error object)` the agent answered (whatever the HTTP status); failing
    /// to exchange the request, or an answer that is not JSON-RPC, is an error of the outer
    /// result.
    async fn call<P: serde::Serialize>(
        &self,
        method: &'static str,
        params: &P,
    ) -> anyhow::Result<Result<Value, Value>> {
        let name = self.name(method);
        match self
            .client
            .request(&self.endpoint, method, params, name)
            .await
        {
            Ok(result) => Ok(Ok(result)),
            Err(e) => match e.rpc_error() {
                Some(error) => Ok(Err(serde_json::to_value(error)?)),
                None => Err(anyhow::anyhow!(
                    "{name} to {}: {}",
                    self.endpoint.url,
                    e.describe()
                )),
            },
        }
    }

    /// Follows `task_id` with `GetTask` every 200 ms, adding each new status to `statuses`,
    /// until the last one satisfies `done` or [`LIFECYCLE_TIMEOUT`] passes. Answers whether
    /// `GetTask` was served (`false` at its first error).
    async fn follow(
        &self,
        task_id: &str,
        statuses: &mut Vec<Value>,
        done: fn(&Value) -> bool,
    ) -> anyhow::Result<bool> {
        let deadline = tokio::time::Instant::now() + LIFECYCLE_TIMEOUT;
        let from = self.name(methods::GET_TASK);
        loop {
            let settled = statuses.last().is_some_and(|s| done(&s["state"]));
            if settled || tokio::time::Instant::now() >= deadline {
                return Ok(true);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            let get = GetTaskRequest {
                tenant: None,
                id: task_id.to_owned(),
                history_length: None,
            };
            match self.call(methods::GET_TASK, &get).await? {
                Ok(t) => {
                    let s = status(from, &task_of(&t)["status"]);
                    if statuses.last().map(|l| (&l["state"], &l["timestamp"]))
                        != Some((&s["state"], &s["timestamp"]))
                    {
                        statuses.push(s);
                    }
                }
                Err(_) => return Ok(false),
            }
        }
    }
}

/// `SendMessage` params of a probe task: `returnImmediately`, `push_config` as its
/// `taskPushNotificationConfig` when given, the text `probe` and a `messageId` unique to this
/// leg (`probe:{leg}:{nanoseconds}`).
fn send_params(push_config: Option<TaskPushNotificationConfig>, leg: &str) -> SendMessageRequest {
    let message = Message::new(
        format!("probe:{leg}:{}", jiff::Timestamp::now().as_nanosecond()),
        Role::User,
        vec![Part::text("probe")],
    );
    SendMessageRequest {
        configuration: Some(SendMessageConfiguration {
            return_immediately: Some(true),
            task_push_notification_config: push_config,
            ..SendMessageConfiguration::default()
        }),
        ..SendMessageRequest::new(message)
    }
}

/// The Task of a 1.0 result (`{"task": …}` or the bare Task `GetTask` answers).
fn task_of(result: &Value) -> Value {
    result
        .get("task")
        .cloned()
        .unwrap_or_else(|| result.clone())
}

/// The pushes received so far.
fn taken(pushes: &Pushes) -> Vec<Value> {
    pushes.lock().map(|p| p.clone()).unwrap_or_default()
}

/// The statuses of pushed bodies (1.0, or 0.3 through the adapter), each `from: "push"`.
fn pushed_statuses(bodies: &[Value]) -> Vec<Value> {
    bodies
        .iter()
        .filter_map(|body| {
            let body = v03::event_to_v1(body).unwrap_or_else(|| body.clone());
            let s = body
                .get("task")
                .or(body.get("statusUpdate"))
                .map(|e| &e["status"])
                .or_else(|| body.get("status").filter(|_| body.get("id").is_some()))?;
            Some(status("push", s))
        })
        .collect()
}

async fn collect(State(pushes): State<Pushes>, Json(body): Json<Value>) -> &'static str {
    if let Ok(mut p) = pushes.lock() {
        p.push(body);
    }
    "ok"
}

/// `{ "from", "state", "timestamp"? }` of a status object.
fn status(from: &str, s: &Value) -> Value {
    let mut out = json!({ "from": from, "state": state(&s["state"]).as_str() });
    if let Some(t) = s.get("timestamp").filter(|t| !t.is_null()) {
        out["timestamp"] = t.clone();
    }
    out
}

fn state(v: &Value) -> TaskState {
    TaskState::from_wire_value(v).unwrap_or(TaskState::Unspecified)
}

fn terminal(v: &Value) -> bool {
    v.as_str()
        .is_some_and(|s| TaskState::from_wire_str(s).is_terminal())
}

fn settles(v: &Value) -> bool {
    v.as_str().is_some_and(|s| {
        let s = TaskState::from_wire_str(s);
        s.is_terminal() || s.is_interrupted()
    })
}

/// serve's probe on registration (`probe = true` on an `[[agents]]` entry): probes the agent
/// whose card was just read (the card kept in the store), keeps the descriptor in the store per
/// (agent, protocol version) and puts it in `directory`, where it decides whether the agent is
/// lifecycle-trusted and is shown at `GET /v1/agents`. Failures are logged; the agent stays
/// untrusted.
pub async fn on_registration(
    agent: &watcher_config::config::AgentConfig,
    store: &dyn watcher_runtime::store::Store,
    directory: &watcher_runtime::directory::Directory,
    clock: &dyn watcher_runtime::clock::Clock,
) {
    let inbox = match LocalInbox::start().await {
        Ok(inbox) => inbox,
        Err(e) => {
            tracing::warn!(agent = %agent.id, error = %format!("{e:#}"), "lifecycle probe: no push webhook; the agent stays untrusted");
            return;
        }
    };
    probe_and_keep(agent, store, directory, &inbox, clock).await;
}

/// Probes `agent` from the card kept for it in `store`, its pushes going to `inbox`, keeps the
/// descriptor in `store` at the protocol version probed (`clock`'s instant after the probe) and
/// puts it in `directory`. Answers whether a descriptor was kept. Failures are logged; the agent
/// then stays untrusted.
pub async fn probe_and_keep(
    agent: &watcher_config::config::AgentConfig,
    store: &dyn watcher_runtime::store::Store,
    directory: &watcher_runtime::directory::Directory,
    inbox: &dyn PushInbox,
    clock: &dyn watcher_runtime::clock::Clock,
) -> bool {
    let (Ok(tenant), Ok(id)) = (
        watcher_core::ids::Tenant::parse(agent.tenant.clone()),
        watcher_core::ids::AgentId::parse(agent.id.clone()),
    ) else {
        return false;
    };
    let card = match store.agent_card(&tenant, &id).await {
        Ok(Some((card, _))) => card,
        Ok(None) => return false,
        Err(e) => {
            tracing::warn!(agent = %id, error = %e, "lifecycle probe: could not read the kept card");
            return false;
        }
    };
    let descriptor = match run_with_inbox(id.as_str(), &card, agent.bearer.as_deref(), inbox).await
    {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(agent = %id, error = %format!("{e:#}"), "lifecycle probe failed; the agent stays untrusted");
            return false;
        }
    };
    let now = clock.now();
    let version = descriptor["protocolVersion"]
        .as_str()
        .unwrap_or("1.0")
        .to_owned();
    let kept = match store
        .put_lifecycle_descriptor(&tenant, &id, &version, &descriptor, now)
        .await
    {
        Ok(()) => true,
        Err(e) => {
            tracing::warn!(agent = %id, error = %e, "could not keep the lifecycle descriptor");
            false
        }
    };
    let lifecycle = watcher_runtime::directory::Lifecycle::from_descriptor(descriptor, now);
    tracing::info!(agent = %id, protocol_version = %version, trusted = lifecycle.lifecycle_trusted,
        demotions = ?lifecycle.demotions, "lifecycle probe");
    directory.set_lifecycle(&tenant, &id, lifecycle);
    kept
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conforming() -> Observed {
        Observed {
            push_capable: true,
            timestamps: true,
            terminal_events: Some(1),
            get_task: true,
            cancel: Ok(1),
        }
    }

    #[test]
    fn a_cancel_pushed_once_keeps_the_agent_trusted() {
        assert_eq!(demotions(&conforming()), Vec::<String>::new());
        assert_eq!(pushed_word(1), "once");
    }

    #[test]
    fn a_cancel_never_pushed_demotes() {
        let d = demotions(&Observed {
            cancel: Ok(0),
            ..conforming()
        });
        assert_eq!(pushed_word(0), "never");
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].contains("cancel pushed never"), "{d:?}");
    }

    #[test]
    fn a_cancel_pushed_twice_demotes() {
        let d = demotions(&Observed {
            cancel: Ok(2),
            ..conforming()
        });
        assert_eq!(pushed_word(2), "twice");
        assert_eq!(pushed_word(3), "twice", "two or more");
        assert_eq!(
            d,
            ["2 terminal events pushed for the probe's canceled task, not exactly one"]
        );
    }

    #[test]
    fn a_task_that_could_not_be_canceled_demotes() {
        let d = demotions(&Observed {
            cancel: Err("CancelTask answered -32002".into()),
            ..conforming()
        });
        assert_eq!(d.len(), 1, "{d:?}");
        assert!(d[0].contains("-32002") && d[0].contains("unknown"), "{d:?}");
    }

    #[test]
    fn the_peers_protocol_names_its_methods() {
        let peer = |protocol| Peer {
            client: client().expect("a client"),
            endpoint: AgentEndpoint::configured("http://127.0.0.1:1/", None).speaking(protocol),
        };
        let v03 = peer(Protocol::V03);
        assert_eq!(v03.name(methods::SEND_MESSAGE), "message/send");
        assert_eq!(v03.name(methods::GET_TASK), "tasks/get");
        assert_eq!(v03.name(methods::CANCEL_TASK), "tasks/cancel");
        let v1 = peer(Protocol::V1);
        assert_eq!(v1.name(methods::CANCEL_TASK), "CancelTask");
    }
}
