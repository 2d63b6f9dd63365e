//! The backlog phase of the bench (issue 41 item 4): one agent's backlog drained by `serve`
//! after a restart, with the agent its own process holding the origin tasks it is asked about.

use super::*;

/// Lapse tasks queued for the one agent of the backlog phase.
pub(crate) const BACKLOG: usize = 5000;

/// The backlog trial: [`BACKLOG`] lapse tasks already queued and due for one agent
/// (written into the store before `serve` starts, as a restart after a kill -9 under load finds
/// them), `per_origin` of them about each origin task (the burst's pushes raise 10 per task; 1
/// is the worst case for grouped origin checks), each origin in its own context. The agent is a
/// `bench-agent` process (a connection per request) answering `opts.agent_answer_ms` after
/// each request, holding every origin task (`GetTask` and `ListTasks` answer it as a real agent
/// would), with the default delivery settings but no rate limit. Answers the drain rate (lapse
/// tasks received over the seconds from the first arrival to the last, and from `serve`'s
/// start), and the `GetTask` and `ListTasks` calls the agent received meanwhile (origin checks,
/// plus polls of followed lapse tasks, first due 10 s after each send). Target: ≥ 200 a second.
pub(crate) async fn backlog(opts: &Options, per_origin: usize) -> anyhow::Result<Value> {
    let per_origin = per_origin.max(1);
    let dir = TempDir::fresh(opts, &format!("backlog-{per_origin}"))?;
    let exe = std::env::current_exe().context("the running executable, to start the agent")?;
    let origins = BACKLOG.div_ceil(per_origin);
    let http = reqwest::Client::new();
    let (agent, held, name): (Box<dyn Observed>, Vec<(String, String)>, &str) = match &opts
        .sdk_agent
    {
        None => {
            let agent = crate::bench_agent::AgentProcess::spawn(&exe, opts.agent_answer_ms).await?;
            let held: Vec<(String, String)> = (0..origins)
                .map(|o| (format!("task-K{o}"), format!("ctx-K{o}")))
                .collect();
            agent.hold(&http, &held).await?;
            (Box::new(agent), held, "bench-agent process")
        }
        Some((python, script)) => {
            let agent = SdkAgent::start(python, script).await?;
            let held = agent.create_origins(&http, origins).await?;
            (Box::new(agent), held, "a2a-sdk agent process")
        }
    };
    let url = agent.url();
    let mut card: Value = serde_json::from_str(include_str!("../../examples/booking-card.json"))?;
    card["supportedInterfaces"][0]["url"] = json!(url);
    std::fs::write(dir.0.join("a0.json"), card.to_string())?;
    let toml = format!(
        r#"listen = "127.0.0.1:0"
database = "bench.db"
allow_private_endpoints = true
retention_days = 0

[delivery]
per_minute = 1000000

[[agents]]
id = "a0"
card = "a0.json"
endpoint = "{url}"
push_token = "push-a0"
"#
    );
    let path = dir.0.join("watcher.toml");
    std::fs::write(&path, toml)?;
    let config = watcher_config::Config::load(&path)?;

    {
        let store = SqliteStore::open(&config.database)?;
        let tenant = Tenant::parse("default").map_err(anyhow::Error::msg)?;
        let agent_id = AgentId::parse("a0").map_err(anyhow::Error::msg)?;
        let now = SystemClock.now();
        let entries: Vec<watcher_runtime::store::OutboxEntry> = (0..BACKLOG)
            .map(|i| {
                let (origin, context) = &held[i / per_origin];
                queued_lapse_task(&tenant, &agent_id, i, origin, context, now)
            })
            .collect::<anyhow::Result<_>>()?;
        for chunk in entries.chunks(PRELOAD_BATCH) {
            store
                .commit(
                    &tenant,
                    Commit {
                        outbox: chunk.to_vec(),
                        ..Commit::default()
                    },
                )
                .await?;
        }
    }
    let started = SystemTime::now();
    let running = watcher_host::serve::start(config).await?;
    let give_up = started + opts.latency_wait.max(Duration::from_secs(60));
    while agent.received() < BACKLOG && SystemTime::now() < give_up {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (gets, lists) = agent.asked();
    running.shutdown().await;
    let mut arrived = agent.arrivals();
    drop(agent);
    arrived.sort();
    let secs = |a: SystemTime, b: SystemTime| b.duration_since(a).map_or(0.0, |d| d.as_secs_f64());
    let (first, last) = match (arrived.first(), arrived.last()) {
        (Some(f), Some(l)) => (secs(started, *f), secs(started, *l)),
        _ => (0.0, 0.0),
    };
    let n = arrived.len();
    let rate = |span: f64| {
        if span > 0.0 {
            json!(round(n as f64 / span, 1))
        } else {
            Value::Null
        }
    };
    Ok(json!({
        "backlog": BACKLOG,
        "lapseTasksPerOrigin": per_origin,
        "agent": name,
        "agentAnswerMs": if opts.sdk_agent.is_some() { Value::Null } else { json!(opts.agent_answer_ms) },
        "received": n,
        "firstArrivalSeconds": round(first, 2),
        "lastArrivalSeconds": round(last, 2),
        "perSecond": rate(last - first),
        "perSecondFromStart": rate(last),
        "getTaskCalls": gets,
        "listTasksCalls": lists,
        "targetPerSecond": 200,
    }))
}

/// What the backlog phase reads of its agent.
trait Observed: Send + Sync {
    /// The agent's JSON-RPC URL.
    fn url(&self) -> String;
    /// When each `SendMessage` arrived.
    fn arrivals(&self) -> Vec<SystemTime>;
    /// How many it has received.
    fn received(&self) -> usize {
        self.arrivals().len()
    }
    /// `GetTask` and `ListTasks` received.
    fn asked(&self) -> (u64, u64);
}

impl Observed for crate::bench_agent::AgentProcess {
    fn url(&self) -> String {
        self.url.clone()
    }
    fn arrivals(&self) -> Vec<SystemTime> {
        self.arrivals.lock().map(|v| v.clone()).unwrap_or_default()
    }
    fn received(&self) -> usize {
        crate::bench_agent::AgentProcess::received(self)
    }
    fn asked(&self) -> (u64, u64) {
        (
            self.get_tasks.load(Ordering::Relaxed),
            self.list_tasks.load(Ordering::Relaxed),
        )
    }
}

/// examples/sdk-agent/agent.py on the official A2A Python SDK (`--sdk-agent PYTHON SCRIPT`),
/// its own process, behind a proxy in the bench that forwards every request unchanged and notes
/// each `SendMessage`'s arrival and each `GetTask` and `ListTasks` (the SDK agent prints
/// nothing per request). Killed when dropped.
struct SdkAgent {
    /// The proxy's JSON-RPC URL (`/a2a/jsonrpc`).
    url: String,
    /// The agent's own base URL.
    upstream: String,
    seen: Arc<Seen>,
    proxy: tokio::task::JoinHandle<()>,
    _child: tokio::process::Child,
}

#[derive(Default)]
struct Seen {
    arrivals: Mutex<Vec<SystemTime>>,
    gets: std::sync::atomic::AtomicU64,
    lists: std::sync::atomic::AtomicU64,
}

/// The proxy's state: where to forward, the client, what it saw.
struct Proxy {
    upstream: String,
    http: reqwest::Client,
    seen: Arc<Seen>,
}

impl SdkAgent {
    async fn start(python: &Path, script: &Path) -> anyhow::Result<SdkAgent> {
        use tokio::io::AsyncBufReadExt as _;
        // Run from a neutral folder: the SDK's `a2a/types` must not shadow anything.
        let mut child = tokio::process::Command::new(python)
            .arg(script)
            .current_dir(std::env::temp_dir())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .with_context(|| {
                format!("Failed to start {} {}", python.display(), script.display())
            })?;
        let stdout = child
            .stdout
            .take()
            .context("the SDK agent's standard output")?;
        let mut lines = tokio::io::BufReader::new(stdout).lines();
        let upstream = tokio::time::timeout(Duration::from_secs(30), async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("listening on ") {
                    return Some(url.trim().to_owned());
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .context("the SDK agent did not print `listening on` within 30 s")?;
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let seen = Arc::new(Seen::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let url = format!("http://{}/a2a/jsonrpc", listener.local_addr()?);
        let app = axum::Router::new()
            .route("/a2a/jsonrpc", axum::routing::post(forward))
            .with_state(Arc::new(Proxy {
                upstream: format!("{upstream}/a2a/jsonrpc"),
                http: reqwest::Client::new(),
                seen: seen.clone(),
            }));
        let proxy = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(SdkAgent {
            url,
            upstream,
            seen,
            proxy,
            _child: child,
        })
    }

    /// Creates `n` origin tasks on the agent (`probe`, which completes; each in a context of
    /// its own), eight at a time, and answers their (id, contextId) as the agent gave them.
    async fn create_origins(
        &self,
        http: &reqwest::Client,
        n: usize,
    ) -> anyhow::Result<Vec<(String, String)>> {
        let rpc = format!("{}/a2a/jsonrpc", self.upstream);
        let gate = Arc::new(tokio::sync::Semaphore::new(8));
        let mut tasks = tokio::task::JoinSet::new();
        for o in 0..n {
            let (http, rpc, gate) = (http.clone(), rpc.clone(), gate.clone());
            tasks.spawn(async move {
                let _permit = gate.acquire_owned().await?;
                let body = json!({ "jsonrpc": "2.0", "id": o, "method": "SendMessage",
                    "params": { "message": { "messageId": format!("origin-{o}"),
                        "role": "ROLE_USER", "parts": [{ "text": "probe" }] } } });
                let answer: Value = http
                    .post(&rpc)
                    .header("A2A-Version", "1.0")
                    .json(&body)
                    .send()
                    .await?
                    .json()
                    .await?;
                let task = &answer["result"]["task"];
                match (task["id"].as_str(), task["contextId"].as_str()) {
                    (Some(id), Some(context)) => Ok((o, id.to_owned(), context.to_owned())),
                    _ => bail!("the SDK agent answered {answer} to an origin's SendMessage"),
                }
            });
        }
        let mut origins = vec![(String::new(), String::new()); n];
        while let Some(done) = tasks.join_next().await {
            let (o, id, context) = done??;
            origins[o] = (id, context);
        }
        Ok(origins)
    }
}

impl Drop for SdkAgent {
    fn drop(&mut self) {
        self.proxy.abort();
    }
}

impl Observed for SdkAgent {
    fn url(&self) -> String {
        self.url.clone()
    }
    fn arrivals(&self) -> Vec<SystemTime> {
        self.seen
            .arrivals
            .lock()
            .map(|v| v.clone())
            .unwrap_or_default()
    }
    fn asked(&self) -> (u64, u64) {
        (
            self.seen.gets.load(Ordering::Relaxed),
            self.seen.lists.load(Ordering::Relaxed),
        )
    }
}

/// Forwards one JSON-RPC request to the SDK agent, noting what it is.
async fn forward(
    axum::extract::State(proxy): axum::extract::State<Arc<Proxy>>,
    headers: axum::http::HeaderMap,
    body: axum::body::Bytes,
) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    let method = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|v| v.get("method").and_then(Value::as_str).map(str::to_owned));
    match method.as_deref() {
        Some("SendMessage") => proxy
            .seen
            .arrivals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(SystemTime::now()),
        Some("GetTask") => {
            proxy.seen.gets.fetch_add(1, Ordering::Relaxed);
        }
        Some("ListTasks") => {
            proxy.seen.lists.fetch_add(1, Ordering::Relaxed);
        }
        _ => {}
    }
    let mut req = proxy.http.post(&proxy.upstream).body(body);
    for name in [
        "content-type",
        "a2a-version",
        "a2a-extensions",
        "authorization",
    ] {
        if let Some(v) = headers.get(name) {
            req = req.header(name, v.clone());
        }
    }
    match req.send().await {
        Ok(resp) => {
            let status = resp.status();
            let kind = resp.headers().get("content-type").cloned();
            let bytes = resp.bytes().await.unwrap_or_default();
            let mut out = (status, bytes).into_response();
            if let Some(kind) = kind {
                out.headers_mut().insert("content-type", kind);
            }
            out
        }
        Err(_) => axum::http::StatusCode::BAD_GATEWAY.into_response(),
    }
}

/// A lapse task queued and due at `now` for `agent`, about the origin task `origin` in
/// `context` (the request as the watcher builds it: semantics.md "The lapse task").
fn queued_lapse_task(
    tenant: &Tenant,
    agent: &AgentId,
    i: usize,
    origin: &str,
    context: &str,
    now: Instant,
) -> anyhow::Result<watcher_runtime::store::OutboxEntry> {
    let expectation = format!("exp-K{i}");
    let message_id = format!("lapse:{expectation}:overdue:{now}");
    let request = json!({
        "message": {
            "messageId": message_id,
            "contextId": context,
            "role": "ROLE_USER",
            "referenceTaskIds": [origin],
            "extensions": [URI],
            "parts": [{ "text": format!("Expectation {expectation} is overdue.") }],
            "metadata": { URI: { "lapse": {
                "expectationId": expectation, "lapse": "overdue",
                "dueAt": now.to_string(), "lapsedAt": now.to_string()
            } } }
        },
        "configuration": { "returnImmediately": true }
    });
    Ok(watcher_runtime::store::OutboxEntry::queued(
        tenant.clone(),
        agent.clone(),
        message_id,
        watcher_core::ids::ExpectationId::parse(expectation).map_err(anyhow::Error::msg)?,
        watcher_core::record::LapseKind::Overdue,
        now,
        request,
    ))
}

/// The backlog phase's lines of the table.
pub(crate) fn print_backlog(runs: &[Value]) {
    for r in runs {
        println!(
            "{:<24} {:>14}   (target >= 200; {} lapse tasks of one {} (answer delay {} ms), {} per origin; {} received, last after {} s; {} GetTask, {} ListTasks)",
            "backlog drain per s",
            r["perSecond"],
            r["backlog"],
            r["agent"].as_str().unwrap_or("?"),
            r["agentAnswerMs"],
            r["lapseTasksPerOrigin"],
            r["received"],
            r["lastArrivalSeconds"],
            r["getTaskCalls"],
            r["listTasksCalls"],
        );
    }
}

/// The backlog phase with 10 lapse tasks per origin task (as the burst's pushes raise them),
/// then with one each (the worst case for grouped origin checks): `opts.backlog_per_origin`.
pub(crate) async fn backlog_runs(opts: &Options) -> anyhow::Result<Vec<Value>> {
    let mut runs = Vec::new();
    for &per_origin in &opts.backlog_per_origin {
        eprintln!(
            "bench: a backlog of {BACKLOG} lapse tasks for one agent process, {per_origin} per origin ..."
        );
        runs.push(
            backlog(opts, per_origin)
                .await
                .context("the backlog phase failed")?,
        );
    }
    Ok(runs)
}
