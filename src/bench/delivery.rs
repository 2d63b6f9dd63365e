//! The delivery phases of the bench: a burst across agents, a slow or holding agent beside quick
//! ones, and status updates against a background of open expectations.

use super::agent::BenchAgent;
use super::*;

/// Agents of the burst phase, each its own process.
pub(crate) const BURST_AGENTS: usize = 10;

/// Issue 20's burst: [`LAPSES`] expectations due at one instant, spread evenly over
/// [`BURST_AGENTS`] agents that are separate processes on 127.0.0.1 answering every request on a
/// fresh connection (`a2a-watcher bench-agent`, [`crate::bench_agent`]), on a fresh `serve` with
/// the default delivery settings (no rate limit). Answers the latency from the deadline to the
/// arrival of each lapse task at its agent: the first, p50, p99 and max over all the deadlines
/// (a percentile among lapse tasks not received within `opts.latency_wait` is null), and the
/// `GetTask` and `ListTasks` calls the agents received. Each agent holds the origin tasks of
/// its pushes (as the agent that created them would) and answers `opts.agent_answer_ms` after
/// each request. Target: p99 ≤ 1 s.
pub(crate) async fn burst(opts: &Options) -> anyhow::Result<Value> {
    let dir = TempDir::fresh(opts, "burst")?;
    let exe = std::env::current_exe().context("the running executable, to start the agents")?;
    let mut agents = Vec::new();
    for _ in 0..BURST_AGENTS {
        agents.push(crate::bench_agent::AgentProcess::spawn(&exe, opts.agent_answer_ms).await?);
    }
    let mut card: Value = serde_json::from_str(include_str!("../../examples/booking-card.json"))?;
    let mut toml = String::from(
        r#"listen = "127.0.0.1:0"
database = "bench.db"
allow_private_endpoints = true
retention_days = 0

[delivery]
per_minute = 1000000
"#,
    );
    for (i, agent) in agents.iter().enumerate() {
        card["supportedInterfaces"][0]["url"] = json!(agent.url);
        std::fs::write(dir.0.join(format!("a{i}.json")), card.to_string())?;
        toml.push_str(&format!(
            "\n[[agents]]\nid = \"a{i}\"\ncard = \"a{i}.json\"\nendpoint = \"{url}\"\npush_token = \"push-a{i}\"\n",
            url = agent.url
        ));
    }
    let (running, base_url) = serve_on(&dir.0, &toml).await?;
    let http = reqwest::Client::new();
    let pushes = LAPSES / LAPSES_PER_PUSH / BURST_AGENTS;
    // Each agent holds the origin tasks its pushes name, as the agent that created them would:
    // the origin checks ask it for them.
    for (a, agent) in agents.iter().enumerate() {
        let origins: Vec<(String, String)> = (0..pushes)
            .map(|p| (format!("task-B-a{a}-{p}"), format!("ctx-B-a{a}-{p}")))
            .collect();
        agent.hold(&http, &origins).await?;
    }
    // Pushed ahead of the deadline, one client per agent.
    let due_second = jiff::Timestamp::now().as_second() + 4;
    let due = jiff::Timestamp::from_second(due_second)?;
    let mut handles = Vec::new();
    for a in 0..BURST_AGENTS {
        let (http, base_url) = (http.clone(), base_url.clone());
        handles.push(tokio::spawn(async move {
            for p in 0..pushes {
                let body = manifests_push(&format!("B-a{a}-{p}"), due);
                post_push_as(
                    &http,
                    &base_url,
                    &format!("a{a}"),
                    &format!("push-a{a}"),
                    &body,
                )
                .await?;
            }
            Ok::<(), anyhow::Error>(())
        }));
    }
    for h in handles {
        h.await??;
    }
    let pushed_before_due = jiff::Timestamp::now() < due;
    let due_at = SystemTime::UNIX_EPOCH + Duration::from_secs(due_second as u64);
    let give_up = due_at + opts.latency_wait;
    if let Ok(ahead) = due_at.duration_since(SystemTime::now()) {
        tokio::time::sleep(ahead).await;
    }
    // The watcher's CPU over the burst (this process: `serve` and the bench's polling).
    let cpu_at_due = cpu_seconds();
    loop {
        let got: usize = agents
            .iter()
            .map(super::super::bench_agent::AgentProcess::received)
            .sum();
        if got >= LAPSES || SystemTime::now() > give_up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cpu = cpu_seconds() - cpu_at_due;
    running.shutdown().await;
    let arrived: Vec<SystemTime> = agents
        .iter()
        .flat_map(|a| a.arrivals.lock().map(|v| v.clone()).unwrap_or_default())
        .collect();
    // What the origin checks (and follow-up polls) cost the agents.
    let asked = |of: fn(&crate::bench_agent::AgentProcess) -> &std::sync::atomic::AtomicU64| {
        agents
            .iter()
            .map(|a| of(a).load(Ordering::Relaxed))
            .sum::<u64>()
    };
    let (gets, lists) = (asked(|a| &a.get_tasks), asked(|a| &a.list_tasks));
    drop(agents);
    let ms = latencies_ms(&arrived, due_at);
    let pct = |p: f64| percentile(&ms, LAPSES, p);
    Ok(json!({
        "deadlines": LAPSES,
        "agents": BURST_AGENTS,
        "agentProcesses": true,
        "connectionPerRequest": true,
        "received": ms.len(),
        "waitedAtMostSeconds": opts.latency_wait.as_secs(),
        "pushedBeforeDeadline": pushed_before_due,
        "firstMs": ms.first().map_or(Value::Null, |v| json!(round(*v, 1))),
        "p50Ms": pct(0.50),
        "p99Ms": pct(0.99),
        "maxMs": pct(1.0),
        "targetP99Ms": 1000,
        "cpuMicrosPerLapse": round(cpu * 1e6 / ms.len().max(1) as f64, 0),
        "agentAnswerMs": opts.agent_answer_ms,
        "getTaskCalls": gets,
        "listTasksCalls": lists,
    }))
}

/// Writes `toml` as `dir/watcher.toml` and starts `serve` on it: the server and its base URL.
async fn serve_on(
    dir: &Path,
    toml: &str,
) -> anyhow::Result<(watcher_host::serve::Running, String)> {
    let path = dir.join("watcher.toml");
    std::fs::write(&path, toml)?;
    let config = watcher_config::Config::load(&path)?;
    let running = watcher_host::serve::start(config).await?;
    let base_url = format!("http://{}", running.addr);
    Ok((running, base_url))
}

/// The burst phase's line of the table.
pub(crate) fn print_burst(burst: &Value) {
    println!(
        "{:<24} {:>14}   (target <= 1000; first {} ms, p50 {} ms, max {} ms; {} lapses over {} agent processes answering after {} ms, a connection per request; {} received; {} GetTask, {} ListTasks; CPU {} us/lapse)",
        "burst p99 ms",
        burst["p99Ms"],
        burst["firstMs"],
        burst["p50Ms"],
        burst["maxMs"],
        burst["deadlines"],
        burst["agents"],
        burst["agentAnswerMs"],
        burst["received"],
        burst["getTaskCalls"],
        burst["listTasksCalls"],
        burst["cpuMicrosPerLapse"],
    );
}

/// Lapse tasks per agent in the slow-agent phase.
pub(crate) const SLOW_PHASE_LAPSES: usize = 20;

/// Issue 9's slow-agent figure: two agents on one `serve` with the default delivery settings,
/// `slow` answering every request only `opts.slow_answer` after its deadline and `fast` at
/// once. [`SLOW_PHASE_LAPSES`] expectations of the slow agent fall due first (so its lane is
/// full of requests it does not answer), as many of the fast agent's two seconds later, all in
/// the same second. Answers the latency from the fast agent's deadline to the arrival of each of
/// its lapse tasks (p50, p99, max), and how many of the slow agent's arrived. Target: fast p99
/// ≤ 250 ms. Few deadlines, so that the figure is the lanes' and not the rate at which the timer
/// loop fires deadlines (the lapse-latency phase measures that).
///
/// With `held` false the second agent answers at once: the same run without a slow agent, the
/// baseline the figure is compared with.
pub(crate) async fn slow_agent(opts: &Options, held: bool) -> anyhow::Result<Value> {
    let dir = TempDir::fresh(opts, "slow")?;
    let arrivals: Arc<Mutex<Vec<SystemTime>>> = Arc::default();
    let seen = arrivals.clone();
    let fast = BenchAgent::spawn(Some(seen)).await?;
    let slow = BenchAgent::spawn(None).await?;
    slow.hold(held);
    let mut card: Value = serde_json::from_str(include_str!("../../examples/booking-card.json"))?;
    for (name, agent) in [("fast", &fast), ("slow", &slow)] {
        card["supportedInterfaces"][0]["url"] = json!(agent.url());
        std::fs::write(dir.0.join(format!("{name}.json")), card.to_string())?;
    }
    let toml = format!(
        r#"listen = "127.0.0.1:0"
database = "bench.db"
allow_private_endpoints = true
retention_days = 0

[[agents]]
id = "fast"
card = "fast.json"
endpoint = "{fast}"
push_token = "push-fast"

[[agents]]
id = "slow"
card = "slow.json"
endpoint = "{slow}"
push_token = "push-slow"
"#,
        fast = fast.url(),
        slow = slow.url(),
    );
    let (running, base_url) = serve_on(&dir.0, &toml).await?;
    let http = reqwest::Client::new();
    let slow_second = jiff::Timestamp::now().as_second() + 3;
    let due_second = slow_second + 2;
    // The slow agent's fall due first, so its lane is busy when the fast agent's do.
    for (agent, second) in [("slow", slow_second), ("fast", due_second)] {
        let due = jiff::Timestamp::from_second(second)?;
        for p in 0..SLOW_PHASE_LAPSES / LAPSES_PER_PUSH {
            let body = manifests_push(&format!("S-{agent}-{p}"), due);
            post_push_as(&http, &base_url, agent, &format!("push-{agent}"), &body).await?;
        }
    }
    let pushed_before_due = jiff::Timestamp::now().as_second() < slow_second;
    let due_at = SystemTime::UNIX_EPOCH + Duration::from_secs(due_second as u64);
    // The slow agent answers `slow_answer` after its deadline; the fast one is measured meanwhile.
    let release =
        SystemTime::UNIX_EPOCH + Duration::from_secs(slow_second as u64) + opts.slow_answer;
    let give_up = release + Duration::from_secs(30);
    let mut released = false;
    loop {
        let now = SystemTime::now();
        if !released && (now >= release || !held) {
            slow.hold(false);
            released = true;
        }
        let got = arrivals.lock().map(|a| a.len()).unwrap_or(0);
        if (released && got >= SLOW_PHASE_LAPSES) || now > give_up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Held requests are recorded when they arrive: what the slow agent was asked meanwhile
    // (the origin check's GetTask, then SendMessage), none of it answered before `release`.
    let slow_requests = slow.request_count();
    running.shutdown().await;
    let ms = latencies_ms(
        &arrivals.lock().map(|a| a.clone()).unwrap_or_default(),
        due_at,
    );
    let pct = |p: f64| percentile(&ms, SLOW_PHASE_LAPSES, p);
    Ok(json!({
        "lapsesPerAgent": SLOW_PHASE_LAPSES,
        "slowAnswerSeconds": opts.slow_answer.as_secs(),
        "pushedBeforeDeadline": pushed_before_due,
        "fastReceived": ms.len(),
        "fastP50Ms": pct(0.50),
        "fastP99Ms": pct(0.99),
        "fastMaxMs": pct(1.0),
        "slowAgentHeld": held,
        "slowRequests": slow_requests,
        "targetP99Ms": 250,
    }))
}

/// Lapse tasks besides the measured ones in the status-update phase: issue 10's target is an
/// update at 20k lapse tasks within 2 × one at 0.
pub(crate) const STATUS_BACKGROUND: [usize; 2] = [0, 20_000];

/// Status updates timed at each size (each to its own lapse task, one at a time).
pub(crate) const STATUS_UPDATES: usize = 200;

/// Status-update latency (issue 10): a fresh `serve` whose outbox holds `STATUS_UPDATES`
/// lapse tasks the agent created plus 0 or 20,000 others (written into the store before it
/// starts), then one agent's `statusUpdate` push per measured lapse task, one at a time, timed
/// from request to answer. An update finds its lapse task by the task id (`track_lapse_task`);
/// the figure shows whether that grows with the outbox.
pub(crate) async fn status_updates(opts: &Options) -> anyhow::Result<Value> {
    let mut sizes = Vec::new();
    for background in STATUS_BACKGROUND {
        let dir = TempDir::fresh(opts, &format!("status-{background}"))?;
        let agent = BenchAgent::spawn(None).await?;
        let config = write_config(&dir.0, &agent.url(), 0)?;
        {
            let store = SqliteStore::open(&config.database)?;
            let tenant = Tenant::parse("default").map_err(anyhow::Error::msg)?;
            let agent_id = AgentId::parse("booking").map_err(anyhow::Error::msg)?;
            let now = SystemClock.now();
            let ids: Vec<String> = (0..STATUS_UPDATES)
                .map(|i| format!("measured-{i}"))
                .chain((0..background).map(|i| format!("other-{i}")))
                .collect();
            for chunk in ids.chunks(PRELOAD_BATCH) {
                let outbox = chunk
                    .iter()
                    .map(|id| sent_lapse_task(&tenant, &agent_id, id, now))
                    .collect::<anyhow::Result<Vec<_>>>()?;
                store
                    .commit(
                        &tenant,
                        Commit {
                            outbox,
                            ..Commit::default()
                        },
                    )
                    .await?;
            }
        }
        let config_db = config.database.clone();
        let running = watcher_host::serve::start(config).await?;
        let base_url = format!("http://{}", running.addr);
        let http = reqwest::Client::new();
        let mut ms = Vec::with_capacity(STATUS_UPDATES);
        for i in 0..STATUS_UPDATES {
            let body = json!({ "statusUpdate": {
                "taskId": format!("task-measured-{i}"), "contextId": "ctx-lapses",
                "status": { "state": "TASK_STATE_WORKING",
                    "timestamp": jiff::Timestamp::now().to_string() }
            } });
            let t = Clock::now();
            post_push(&http, &base_url, &body).await?;
            ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
        running.shutdown().await;
        drop(agent);
        // Every update reached its lapse task.
        let store = SqliteStore::open(&config_db)?;
        let tenant = Tenant::parse("default").map_err(anyhow::Error::msg)?;
        let agent_id = AgentId::parse("booking").map_err(anyhow::Error::msg)?;
        let mut working = 0;
        for i in 0..STATUS_UPDATES {
            let found = store
                .outbox_by_task(&tenant, &agent_id, &format!("task-measured-{i}"))
                .await?;
            working += found
                .iter()
                .filter(|e| e.task_state.as_deref() == Some("TASK_STATE_WORKING"))
                .count();
        }
        drop(store);
        ms.sort_by(f64::total_cmp);
        let pct = |p: f64| {
            let i = ((p * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1;
            round(ms[i], 2)
        };
        sizes.push(json!({
            "lapseTasks": STATUS_UPDATES + background,
            "updates": STATUS_UPDATES,
            "updatedSeen": working,
            "p50Ms": pct(0.5),
            "p99Ms": pct(0.99),
            "maxMs": pct(1.0),
        }));
    }
    let ratio = match (sizes.first(), sizes.last()) {
        (Some(a), Some(b)) => round(
            b["p50Ms"].as_f64().unwrap_or(0.0) / a["p50Ms"].as_f64().unwrap_or(1.0),
            2,
        ),
        _ => 0.0,
    };
    Ok(json!({ "sizes": sizes, "p50Ratio": ratio, "targetRatio": 2 }))
}

/// A lapse task already sent to `agent`, which created task `task-{id}` for it.
pub(crate) fn sent_lapse_task(
    tenant: &Tenant,
    agent: &AgentId,
    id: &str,
    now: Instant,
) -> anyhow::Result<watcher_runtime::store::OutboxEntry> {
    let message_id = format!("lapse:{id}:overdue:bench");
    Ok(watcher_runtime::store::OutboxEntry {
        delivery: watcher_runtime::store::DeliveryState::Sent,
        attempts: 1,
        task_id: Some(format!("task-{id}")),
        task_state: Some("TASK_STATE_SUBMITTED".into()),
        ..watcher_runtime::store::OutboxEntry::queued(
            tenant.clone(),
            agent.clone(),
            message_id.clone(),
            watcher_core::ids::ExpectationId::parse(id).map_err(anyhow::Error::msg)?,
            watcher_core::record::LapseKind::Overdue,
            now,
            json!({ "message": { "messageId": message_id } }),
        )
    })
}
