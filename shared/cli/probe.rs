//! `a2a-watcher probe AGENT_URL`: sends one probe task through an agent's lifecycle and prints
//! the lifecycle descriptor of (agent, protocol version) that
//! `docs/specs/agent-card-vs-lifecycle-conformance.md` asks for: the card alone never says
//! whether statuses carry timestamps, whether exactly one terminal event is sent, whether pushes
//! arrive, or whether `GetTask` and `ListTasks` are served.
//!
//! Probes the card's first JSONRPC interface (A2A 1.0 method names; a 0.3 card is read through
//! the 0.3 adapter). Pushes go to a webhook this command serves on 127.0.0.1, so they can only
//! arrive from an agent that can reach this machine.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use a2a_types::TaskState;
use anyhow::{bail, Context};
use axum::{extract::State, routing::post, Json, Router};
use serde_json::{json, Value};

/// How long the probe task may take to reach a terminal or interrupted state.
const LIFECYCLE_TIMEOUT: Duration = Duration::from_secs(20);
/// How long to wait for late pushes after the task settled.
const PUSH_GRACE: Duration = Duration::from_secs(1);

type Pushes = Arc<Mutex<Vec<Value>>>;

/// Probes the agent at `agent_url` (a base URL, or the card's own URL) and returns the
/// descriptor: `{ "agent", "protocolVersion", "endpoint", "card": { "pushNotifications",
/// "streaming" }, "taskId", "statuses": [{ "from", "state", "timestamp"? }],
/// "timestampsOnEveryStatus", "terminalEvents", "exactlyOneTerminal", "pushesArrived",
/// "getTask", "listTasks", "lifecycleTrusted" }`. `terminalEvents` counts terminal statuses
/// among the pushes (each push is one event); `null` when nothing was pushed.
///
/// # Errors
/// The card cannot be read or names no JSONRPC interface, or `SendMessage` fails.
pub async fn run(agent_url: &str) -> anyhow::Result<Value> {
    let http = client()?;
    let card = fetch_card(&http, agent_url).await?;
    run_with_card(agent_url, &card, None).await
}

fn client() -> anyhow::Result<reqwest::Client> {
    Ok(reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
        .build()?)
}

/// Probes the agent whose card (1.0 or 0.3 shape) is `card`, named `agent` in the descriptor,
/// presenting `bearer` when given (serve's probe on registration: the card kept in the store,
/// the agent's configured bearer). Answers the descriptor of [`run`], with `demotions`: why the
/// agent is not lifecycle-trusted, in words (empty when it is).
///
/// # Errors
/// As [`run`].
pub async fn run_with_card(
    agent: &str,
    card: &Value,
    bearer: Option<&str>,
) -> anyhow::Result<Value> {
    let http = client()?;
    let agent_url = agent;
    let card = a2a_types::v03::card_to_v1(card.clone());
    let iface = card["supportedInterfaces"]
        .as_array()
        .and_then(|l| l.iter().find(|i| i["protocolBinding"] == "JSONRPC"))
        .context("the card names no JSONRPC interface")?;
    let endpoint = iface["url"]
        .as_str()
        .context("the interface has no url")?
        .to_owned();
    let version = iface["protocolVersion"]
        .as_str()
        .unwrap_or("1.0")
        .to_owned();
    let push_capable = card["capabilities"]["pushNotifications"] == json!(true);

    // The webhook the agent pushes to.
    let pushes: Pushes = Arc::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let webhook = format!("http://{}/probe", listener.local_addr()?);
    let app = Router::new()
        .route("/probe", post(collect))
        .with_state(pushes.clone());
    let server = tokio::spawn(async move { axum::serve(listener, app).await });

    let now = jiff::Timestamp::now();
    let mut configuration = json!({ "returnImmediately": true });
    if push_capable {
        configuration["taskPushNotificationConfig"] = json!({ "url": webhook, "token": "probe" });
    }
    let params = json!({
        "message": {
            "messageId": format!("probe:{}", now.as_nanosecond()),
            "role": "ROLE_USER",
            "parts": [{ "text": "probe" }],
        },
        "configuration": configuration,
    });
    let sent = rpc(&http, &endpoint, bearer, "SendMessage", params).await?;
    let sent = sent.map_err(|e| anyhow::anyhow!("SendMessage answered an error: {e}"))?;
    let task = a2a_types::v03::result_to_v1(&sent);
    let task = task.get("task").cloned().unwrap_or(task);
    let task_id = task["id"]
        .as_str()
        .context("SendMessage answered no Task")?
        .to_owned();
    let mut statuses = vec![status("SendMessage", &task["status"])];

    // Follow with GetTask until it settles.
    let mut get_task = true;
    let deadline = tokio::time::Instant::now() + LIFECYCLE_TIMEOUT;
    loop {
        let settled = statuses.last().is_some_and(|s| settles(&s["state"]));
        if settled || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
        match rpc(
            &http,
            &endpoint,
            bearer,
            "GetTask",
            json!({ "id": task_id }),
        )
        .await?
        {
            Ok(t) => {
                let t = a2a_types::v03::result_to_v1(&t);
                let t = t.get("task").cloned().unwrap_or(t);
                let s = status("GetTask", &t["status"]);
                if statuses.last().map(|l| (&l["state"], &l["timestamp"]))
                    != Some((&s["state"], &s["timestamp"]))
                {
                    statuses.push(s);
                }
            }
            Err(_) => {
                get_task = false;
                break;
            }
        }
    }
    let list_tasks = rpc(
        &http,
        &endpoint,
        bearer,
        "ListTasks",
        json!({ "pageSize": 1 }),
    )
    .await?
    .is_ok();
    tokio::time::sleep(PUSH_GRACE).await;
    server.abort();

    let pushed: Vec<Value> = pushes.lock().map(|p| p.clone()).unwrap_or_default();
    for body in &pushed {
        let body = a2a_types::v03::event_to_v1(body).unwrap_or_else(|| body.clone());
        let s = body
            .get("task")
            .or(body.get("statusUpdate"))
            .map(|e| &e["status"])
            .or_else(|| body.get("status").filter(|_| body.get("id").is_some()));
        if let Some(s) = s {
            statuses.push(status("push", s));
        }
    }
    let timestamps = statuses.iter().all(|s| s.get("timestamp").is_some());
    let terminal_events = (!pushed.is_empty()).then(|| {
        statuses
            .iter()
            .filter(|s| s["from"] == "push" && terminal(&s["state"]))
            .count()
    });
    let exactly_one = terminal_events == Some(1);
    // The conformance note's demotion rules, each in words; trusted only when none applies.
    let mut demotions = Vec::new();
    if !timestamps {
        demotions.push(
            "a status without `timestamp`: duplicate terminal events cannot be told apart"
                .to_owned(),
        );
    }
    match terminal_events {
        None if push_capable => {
            demotions.push("the card says pushNotifications: true, but no push arrived".to_owned())
        }
        None => demotions.push(
            "no push arrived (the card offers none): terminal events cannot be counted".to_owned(),
        ),
        Some(1) => {}
        Some(n) => demotions.push(format!(
            "{n} terminal events pushed for one task, not exactly one"
        )),
    }
    if !get_task {
        demotions.push("GetTask is not served".to_owned());
    }
    let trusted = timestamps && exactly_one && get_task && (!push_capable || !pushed.is_empty());
    debug_assert_eq!(trusted, demotions.is_empty());
    Ok(json!({
        "agent": agent_url,
        "protocolVersion": version,
        "endpoint": endpoint,
        "card": { "pushNotifications": push_capable,
                  "streaming": card["capabilities"]["streaming"] == json!(true) },
        "taskId": task_id,
        "statuses": statuses,
        "timestampsOnEveryStatus": timestamps,
        "terminalEvents": terminal_events,
        "exactlyOneTerminal": exactly_one,
        "pushesArrived": pushed.len(),
        "getTask": get_task,
        "listTasks": list_tasks,
        "lifecycleTrusted": trusted,
        "demotions": demotions,
    }))
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

/// The card at `url` (as given when it ends in `.json`, else at `/.well-known/agent-card.json`,
/// then the legacy `/.well-known/agent.json`), in 1.0 shape.
async fn fetch_card(http: &reqwest::Client, url: &str) -> anyhow::Result<Value> {
    let base = url.trim_end_matches('/');
    let candidates = if base.ends_with(".json") {
        vec![base.to_owned()]
    } else {
        vec![
            format!("{base}/.well-known/agent-card.json"),
            format!("{base}/.well-known/agent.json"),
        ]
    };
    let mut last = String::new();
    for c in candidates {
        match http.get(&c).send().await {
            Ok(r) if r.status().is_success() => {
                let card: Value = r.json().await.with_context(|| format!("{c} is not JSON"))?;
                return Ok(a2a_types::v03::card_to_v1(card));
            }
            Ok(r) => last = format!("{c} answered {}", r.status()),
            Err(e) => last = format!("{c}: {e}"),
        }
    }
    bail!("no agent card: {last}")
}

/// One JSON-RPC call: `Ok(result)` or `Err(error object)`; transport failures are errors of the
/// outer result.
async fn rpc(
    http: &reqwest::Client,
    endpoint: &str,
    bearer: Option<&str>,
    method: &str,
    params: Value,
) -> anyhow::Result<Result<Value, Value>> {
    let body = json!({ "jsonrpc": "2.0", "id": method, "method": method, "params": params });
    let mut request = http.post(endpoint).header("A2A-Version", "1.0");
    if let Some(b) = bearer {
        request = request.bearer_auth(b);
    }
    let answer: Value = request
        .json(&body)
        .send()
        .await
        .with_context(|| format!("{method} to {endpoint}"))?
        .json()
        .await
        .with_context(|| format!("{method} to {endpoint} answered no JSON"))?;
    Ok(match answer.get("result") {
        Some(r) => Ok(r.clone()),
        None => Err(answer.get("error").cloned().unwrap_or(answer)),
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
    let (Ok(tenant), Ok(id)) = (
        watcher_core::ids::Tenant::parse(agent.tenant.clone()),
        watcher_core::ids::AgentId::parse(agent.id.clone()),
    ) else {
        return;
    };
    let card = match store.agent_card(&tenant, &id).await {
        Ok(Some((card, _))) => card,
        Ok(None) => return,
        Err(e) => {
            tracing::warn!(agent = %id, error = %e, "lifecycle probe: could not read the kept card");
            return;
        }
    };
    let descriptor = match run_with_card(id.as_str(), &card, agent.bearer.as_deref()).await {
        Ok(d) => d,
        Err(e) => {
            tracing::warn!(agent = %id, error = %format!("{e:#}"), "lifecycle probe failed; the agent stays untrusted");
            return;
        }
    };
    let now = clock.now();
    let version = descriptor["protocolVersion"]
        .as_str()
        .unwrap_or("1.0")
        .to_owned();
    if let Err(e) = store
        .put_lifecycle_descriptor(&tenant, &id, &version, &descriptor, now)
        .await
    {
        tracing::warn!(agent = %id, error = %e, "could not keep the lifecycle descriptor");
    }
    let lifecycle = watcher_runtime::directory::Lifecycle::from_descriptor(descriptor, now);
    tracing::info!(agent = %id, protocol_version = %version, trusted = lifecycle.lifecycle_trusted,
        demotions = ?lifecycle.demotions, "lifecycle probe");
    directory.set_lifecycle(&tenant, &id, lifecycle);
}
