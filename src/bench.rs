//! `a2a-watcher bench`: measures the watcher at 10k, 100k and 1M open expectations (issue 10,
//! docs/performance.md) and prints a table and, last, one JSON line with every figure.
//!
//! Each size runs in its own temporary folder (or under `--dir`), on the same disk and SQLite
//! configuration as `serve` (WAL, `synchronous = FULL`):
//!
//! 1. the raw durable rate: single-row SQLite transactions on a file beside the store's;
//! 2. N open expectations preloaded in the worked example's shape (manifest, departure after it,
//!    arrival anchored on the departure), written in large commits straight through the engine
//!    (one `step` per booking over the pure core, many bookings per store commit) so that 1M
//!    does not take hours — the measured phases then go through the ordinary paths;
//! 3. raise and fact throughput through `Watcher` over `SqliteStore` (`clients` concurrent
//!    callers, bounded in count and time), with bytes written per request (`/proc/self/io`);
//! 4. finding what is due: the deadline index (`TimerIndex::due_timers`, `TimerIndex::next_timer`)
//!    against a cron-style sweep that reads every subject and derives its timers;
//! 5. the same raise and fact load over HTTP: `serve`'s router on 127.0.0.1 and a bounded load
//!    generator of `clients` concurrent clients;
//! 6. lapse latency: 1,000 expectations due in the same second, from the deadline to the
//!    arrival of their lapse tasks at a local capture agent;
//! 7. bytes on disk and resident memory (`/proc/self/status` VmRSS) per open expectation;
//! 8. a burst (once, after the sizes): 1,000 lapses due at one instant over 10 agents that are
//!    separate processes answering each request on a fresh connection (`bench-agent`,
//!    `bench_agent.rs`), from the deadline to each lapse task's arrival (first, p50, p99).
//!
//! Nothing here is asserted: the figures are printed for people (docs/performance.md) and the
//! smoke test only checks that the JSON line is printed.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant as Clock, SystemTime};
use watcher_runtime::store::{Outbox as _, Records as _, TimerIndex as _};

use anyhow::{bail, Context};
use serde_json::{json, Value};
use watcher_core::engine::{initial_scope, step, Effect, Input, StepContext};
use watcher_core::ids::{AgentId, Source, Tenant};
use watcher_core::slice::{Need, Slice, SubjectState};
use watcher_core::time::Instant;
use watcher_delivery::testing::{Behaviour, CaptureAgent, Reply};
use watcher_runtime::clock::{Clock as _, SystemClock};
use watcher_runtime::index::subject_index;
use watcher_runtime::store::Commit;
use watcher_runtime::watcher::Watcher;
use watcher_store_sqlite::SqliteStore;

const URI: &str = "https://rsaxb.com/a2a/expectations/v1";
const PUSH_TOKEN: &str = "bench-push-token";
const SOURCE_TOKEN: &str = "bench-source-token";
const SOURCE_ID: &str = "bench-feed";
/// Bookings (three expectations each) per preload commit.
const PRELOAD_BATCH: usize = 2000;
/// Deadlines in the same second for the lapse-latency phase.
const LAPSES: usize = 1000;
/// Expectations per push in the lapse-latency phase (each on its own subject).
const LAPSES_PER_PUSH: usize = 10;

/// What `bench` measures and how hard.
#[derive(Debug, Clone)]
pub struct Options {
    /// Open expectations to measure at, in order.
    pub sizes: Vec<u64>,
    /// Concurrent callers in the throughput phases.
    pub clients: usize,
    /// Most requests per throughput phase.
    pub count: usize,
    /// Longest a throughput phase runs.
    pub limit: Duration,
    /// Longest wait for the lapse tasks after their deadline.
    pub latency_wait: Duration,
    /// Measure lapse latency at the largest size only (`--quick`).
    pub latency_at_largest_only: bool,
    /// Where the temporary folders go (the disk measured); the system's temporary folder if
    /// absent.
    pub dir: Option<PathBuf>,
    /// How long the slow agent of the slow-agent phase takes to answer (20 s; 3 s with
    /// `--quick`).
    pub slow_answer: Duration,
    /// Run the burst phase alone (`--burst-only`).
    pub burst_only: bool,
}

impl Options {
    /// `--quick`: 10k and 100k; otherwise 10k, 100k and 1M.
    pub fn new(quick: bool) -> Options {
        Options {
            sizes: if quick {
                vec![10_000, 100_000]
            } else {
                vec![10_000, 100_000, 1_000_000]
            },
            clients: 32,
            count: if quick { 1500 } else { 5000 },
            limit: Duration::from_secs(if quick { 2 } else { 10 }),
            latency_wait: Duration::from_secs(if quick { 20 } else { 120 }),
            latency_at_largest_only: quick,
            dir: None,
            slow_answer: Duration::from_secs(if quick { 3 } else { 20 }),
            burst_only: false,
        }
    }
}

/// Runs every size and prints the table, then the JSON line.
///
/// # Errors
/// A folder, the store, the capture agent or `serve` failing to start, or a request failing
/// (a benchmark with failed requests measures nothing).
pub async fn run(opts: Options) -> anyhow::Result<()> {
    let started = Clock::now();
    let mut results = Vec::new();
    let largest = opts.sizes.iter().copied().max().unwrap_or(0);
    for &n in &opts.sizes {
        eprintln!("bench: {n} open expectations ...");
        let latency = !opts.latency_at_largest_only || n == largest;
        let r = run_size(n, &opts, latency)
            .await
            .with_context(|| format!("the run at {n} open expectations failed"))?;
        results.push(r);
    }
    eprintln!(
        "bench: a burst of {LAPSES} lapses over {BURST_AGENTS} agents in their own processes ..."
    );
    let burst = burst(&opts).await.context("the burst phase failed")?;
    if opts.burst_only {
        print_burst(&burst);
        println!("{}", json!({ "bench": "a2a-watcher", "burst": burst }));
        return Ok(());
    }
    eprintln!("bench: a fast agent beside a slow one ...");
    let slow = slow_agent(&opts, true)
        .await
        .context("the slow-agent phase failed")?;
    let baseline = slow_agent(&opts, false)
        .await
        .context("the slow-agent baseline failed")?;
    eprintln!("bench: status updates at 0 and 20k other lapse tasks ...");
    let status = status_updates(&opts)
        .await
        .context("the status-update phase failed")?;
    if !results.is_empty() {
        print_table(&results);
    }
    println!(
        "{:<24} {:>14}   (target <= 250; the other agent answers after {} s; {} when it answers at once)",
        "beside a slow agent p99 ms",
        slow["fastP99Ms"],
        opts.slow_answer.as_secs(),
        baseline["fastP99Ms"],
    );
    println!(
        "{:<24} {:>14}   (p50 {} ms at {} lapse tasks, {} ms at {}; target ratio <= 2)",
        "status update p50 ratio",
        status["p50Ratio"],
        status["sizes"][0]["p50Ms"],
        status["sizes"][0]["lapseTasks"],
        status["sizes"][1]["p50Ms"],
        status["sizes"][1]["lapseTasks"],
    );
    print_burst(&burst);
    let doc = json!({
        "bench": "a2a-watcher",
        "version": env!("CARGO_PKG_VERSION"),
        "clients": opts.clients,
        "countPerPhase": opts.count,
        "secondsPerPhase": opts.limit.as_secs_f64(),
        "totalSeconds": round(started.elapsed().as_secs_f64(), 1),
        "sizes": results,
        "slowAgent": slow,
        "slowAgentBaseline": baseline,
        "statusUpdates": status,
        "burst": burst,
    });
    println!("{doc}");
    Ok(())
}

/// A temporary folder removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn run_size(n: u64, opts: &Options, measure_latency: bool) -> anyhow::Result<Value> {
    let base = opts.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = TempDir(base.join(format!(
        "a2a-watcher-bench-{}-{n}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    )));
    std::fs::create_dir_all(&dir.0)
        .with_context(|| format!("Failed to create {}", dir.0.display()))?;

    // The capture agent records when each lapse task arrives.
    let arrivals: Arc<Mutex<Vec<SystemTime>>> = Arc::default();
    let seen = arrivals.clone();
    let agent = CaptureAgent::spawn(Behaviour::from_fn(move |i, req| {
        if req.rpc_method().as_deref() == Some("SendMessage") {
            seen.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(SystemTime::now());
        }
        Reply::task(format!("task-{}", i + 1), a2a_types::TaskState::Submitted)
    }))
    .await
    .context("Failed to start the capture agent")?;
    let config = write_config(&dir.0, &agent.url(), n)?;

    let raw_tps = raw_durable_rate(&dir.0, opts).context("the raw SQLite rate")?;

    // Engine + store.
    let tenant = Tenant::parse("default").map_err(anyhow::Error::msg)?;
    let agent_id = AgentId::parse("booking").map_err(anyhow::Error::msg)?;
    let store = Arc::new(SqliteStore::open(&config.database)?);
    let deployment = watcher_host::load_deployment(
        &config,
        &*store,
        watcher_runtime::clock::Clock::now(&watcher_runtime::clock::SystemClock),
    )
    .await?;
    let watcher = Arc::new(Watcher::new(
        store.clone(),
        deployment.directory,
        deployment.settings,
    ));
    let rss_before = rss_bytes();
    let t = Clock::now();
    let bookings = n.div_ceil(3) as usize;
    preload(&watcher, &tenant, &agent_id, bookings, &config.database).await?;
    let preload_secs = t.elapsed().as_secs_f64();
    let rss_after = rss_bytes();
    let disk = disk_bytes(&config.database);
    let open = bookings as u64 * 3;

    let clock = SystemClock;
    let w = watcher.clone();
    let (t2, a2) = (tenant.clone(), agent_id.clone());
    let engine_raise = drive(opts, move |i| {
        let (w, t2, a2) = (w.clone(), t2.clone(), a2.clone());
        async move {
            let body = booking(&format!("E{i}"), far_due(i));
            let input = push_input(&w, &t2, &a2, body)?;
            w.apply(&t2, &input, clock.now()).await?;
            Ok(())
        }
    })
    .await?;
    let source = Source::parse(SOURCE_ID.to_string()).map_err(anyhow::Error::msg)?;
    let w = watcher.clone();
    let t2 = tenant.clone();
    let engine_fact = drive(opts, move |i| {
        let (w, t2, source) = (w.clone(), t2.clone(), source.clone());
        async move {
            let f = watcher_core::fact::parse_fact(&manifest_fact(i % bookings), &source)
                .map_err(|e| anyhow::anyhow!("{e}"))?;
            w.apply(&t2, &Input::Facts(vec![f]), clock.now()).await?;
            Ok(())
        }
    })
    .await?;
    let due = due_cost(&store, &config.database).await?;
    drop(watcher);
    drop(store);

    // HTTP: serve's router on loopback.
    let running = watcher_host::serve::start(config.clone()).await?;
    let base_url = format!("http://{}", running.addr);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(opts.clients)
        .build()?;
    let (h, u) = (http.clone(), base_url.clone());
    let http_raise = drive(opts, move |i| {
        let (h, u) = (h.clone(), u.clone());
        async move { post_push(&h, &u, &booking(&format!("H{i}"), far_due(i))).await }
    })
    .await?;
    let (h, u) = (http.clone(), base_url.clone());
    // The HTTP facts satisfy bookings the engine's facts left alone (first reports).
    let offset = opts.count;
    let http_fact = drive(opts, move |i| {
        let (h, u) = (h.clone(), u.clone());
        async move {
            let fact = manifest_fact((offset + i) % bookings);
            ok(h.post(format!("{u}/v1/facts"))
                .bearer_auth(SOURCE_TOKEN)
                .json(&fact)
                .send()
                .await?)
            .await
        }
    })
    .await?;
    let latency = if measure_latency {
        lapse_latency(
            &http,
            &base_url,
            &arrivals,
            http_raise.rate,
            opts.latency_wait,
        )
        .await?
    } else {
        json!({ "deadlines": 0, "received": 0, "note": "measured at the largest size only (--quick)" })
    };
    let rss_end = rss_bytes();
    let disk_end = disk_bytes(&config.database);
    running.shutdown().await;
    drop(agent);

    let fraction = |rate: f64| round(rate / raw_tps, 3);
    Ok(json!({
        "openExpectations": open,
        "preloadSeconds": round(preload_secs, 1),
        "rawDurableTxPerSec": round(raw_tps, 0),
        "engine": {
            "raisePerSec": round(engine_raise.rate, 0),
            "raiseFractionOfRaw": fraction(engine_raise.rate),
            "raiseBytesWrittenPerRequest": engine_raise.bytes_per_request,
            "raiseCpuMicrosPerRequest": engine_raise.cpu_us_per_request,
            "raiseRequests": engine_raise.done,
            "factPerSec": round(engine_fact.rate, 0),
            "factFractionOfRaw": fraction(engine_fact.rate),
            "factBytesWrittenPerRequest": engine_fact.bytes_per_request,
            "factCpuMicrosPerRequest": engine_fact.cpu_us_per_request,
            "factRequests": engine_fact.done,
        },
        "http": {
            "clients": opts.clients,
            "raisePerSec": round(http_raise.rate, 0),
            "raiseFractionOfRaw": fraction(http_raise.rate),
            "raiseBytesWrittenPerRequest": http_raise.bytes_per_request,
            "raiseCpuMicrosPerRequest": http_raise.cpu_us_per_request,
            "raiseRequests": http_raise.done,
            "factPerSec": round(http_fact.rate, 0),
            "factFractionOfRaw": fraction(http_fact.rate),
            "factBytesWrittenPerRequest": http_fact.bytes_per_request,
            "factCpuMicrosPerRequest": http_fact.cpu_us_per_request,
            "factRequests": http_fact.done,
        },
        "due": due,
        "lapseLatency": latency,
        "diskBytes": disk,
        "diskBytesPerOpen": round(disk as f64 / open as f64, 1),
        "diskBytesAtEnd": disk_end,
        "rssBytesBeforePreload": rss_before,
        "rssBytesAfterPreload": rss_after,
        "rssBytesPerOpen": round(rss_after.saturating_sub(rss_before) as f64 / open as f64, 2),
        "rssBytesAtEnd": rss_end,
    }))
}

fn write_config(dir: &Path, agent_url: &str, n: u64) -> anyhow::Result<watcher_config::Config> {
    let mut card: Value = serde_json::from_str(include_str!("../examples/booking-card.json"))
        .context("examples/booking-card.json is JSON")?;
    card["supportedInterfaces"][0]["url"] = json!(agent_url);
    std::fs::write(dir.join("card.json"), card.to_string())?;
    let toml = format!(
        r#"listen = "127.0.0.1:0"
database = "bench.db"
allow_private_endpoints = true
retention_days = 0

[limits]
max_open_per_agent = {max}

[delivery]
per_minute = 1000000

[[sources]]
id = "{SOURCE_ID}"
token = "{SOURCE_TOKEN}"

[[agents]]
id = "booking"
card = "card.json"
endpoint = "{agent_url}"
push_token = "{PUSH_TOKEN}"
"#,
        max = n * 2 + 10_000_000,
    );
    let path = dir.join("watcher.toml");
    std::fs::write(&path, toml)?;
    Ok(watcher_config::Config::load(&path)?)
}

/// Single-row durable transactions (WAL, `synchronous = FULL`, as `serve`'s store) on a file in
/// `dir`, for at most the phase's count and time. Transactions a second.
fn raw_durable_rate(dir: &Path, opts: &Options) -> anyhow::Result<f64> {
    let mut conn = rusqlite::Connection::open(dir.join("raw.db"))?;
    let _: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")?;
    let t = Clock::now();
    let mut done = 0usize;
    while done < opts.count * 2 && t.elapsed() < opts.limit {
        let tx = conn.transaction()?;
        tx.execute("INSERT INTO t (v) VALUES (?1)", [format!("row {done}")])?;
        tx.commit()?;
        done += 1;
    }
    Ok(done as f64 / t.elapsed().as_secs_f64())
}

/// A booking in the worked example's shape (examples/booking-artifact.json): manifest, the
/// departure after it, the arrival anchored on the departure; subject `shipment/B-{key}`.
fn booking(key: &str, due: jiff::Timestamp) -> Value {
    let at = |d: jiff::SignedDuration| (due + d).to_string();
    let h = jiff::SignedDuration::from_hours;
    json!({ "artifactUpdate": {
        "taskId": format!("task-{key}"), "contextId": format!("ctx-{key}"),
        "artifact": {
            "artifactId": format!("booking-{key}"),
            "parts": [{ "text": "Booked on EK203" }],
            "extensions": [URI],
            "metadata": { URI: { "expectations": [
                {
                    "expectationId": format!("exp-{key}-manifest"), "kind": "shipment.manifest",
                    "subject": { "type": "shipment", "id": format!("B-{key}") },
                    "expects": "the airline manifest",
                    "satisfiedBy": { "factKey": format!("shipment.manifest.received:B-{key}") },
                    "dueAt": at(h(0)), "grace": "PT2H", "basis": "observed"
                },
                {
                    "expectationId": format!("exp-{key}-departure"), "kind": "shipment.departure",
                    "subject": { "type": "shipment", "id": format!("B-{key}") },
                    "expects": "a departure event",
                    "satisfiedBy": { "factKey": format!("shipment.departed:B-{key}") },
                    "dueAt": at(h(7)), "grace": "PT6H", "basis": "observed",
                    "after": [format!("exp-{key}-manifest")]
                },
                {
                    "expectationId": format!("exp-{key}-arrival"), "kind": "shipment.arrival",
                    "subject": { "type": "shipment", "id": format!("B-{key}") },
                    "expects": "an arrival event",
                    "satisfiedBy": { "factKey": format!("shipment.arrived:B-{key}") },
                    "dueAt": at(h(9)), "grace": "PT6H", "basis": "observed",
                    "anchor": { "expectationId": format!("exp-{key}-departure"), "offset": "PT1H45M" },
                    "after": [format!("exp-{key}-departure")],
                    "horizon": at(h(57))
                }
            ] } }
        }
    } })
}

/// Bookings due a month from now, one second apart, so the deadline index is spread out.
fn far_due(i: usize) -> jiff::Timestamp {
    let now = jiff::Timestamp::now().as_second();
    let base = now - now % 86_400 + 30 * 86_400;
    jiff::Timestamp::from_second(base + i as i64 % 10_000_000).unwrap_or(jiff::Timestamp::MAX)
}

/// The manifest fact of booking `B-{i}` (one of the preloaded bookings when `i` is below their
/// count).
fn manifest_fact(i: usize) -> Value {
    json!({
        "factKey": format!("shipment.manifest.received:B-{i}"),
        "observedAt": jiff::Timestamp::now().to_string(),
        "subject": { "type": "shipment", "id": format!("B-{i}") },
    })
}

fn push_input(
    w: &Watcher<SqliteStore>,
    tenant: &Tenant,
    agent: &AgentId,
    body: Value,
) -> anyhow::Result<Input> {
    let event = a2a_types::StreamResponse::from_push_body(body)?;
    let profile = w
        .directory
        .get(tenant, agent)
        .context("the booking agent is registered")?
        .profile
        .clone();
    let items = watcher_core::ingest::push_items(&event, agent, SystemClock.now());
    Ok(Input::Push {
        agent: profile,
        items,
    })
}

/// Writes `bookings` bookings (three open expectations each) through the pure engine: each
/// booking is one `step` over a slice of fresh subjects, and `PRELOAD_BATCH` of them go into one
/// store commit. The raising-order sequence is taken per booking from a block reserved in the
/// store's `sequence` row, so later inputs still order after them.
async fn preload(
    w: &Watcher<SqliteStore>,
    tenant: &Tenant,
    agent: &AgentId,
    bookings: usize,
    db: &Path,
) -> anyhow::Result<()> {
    let first_seq = w.store.next_sequence().await?;
    {
        let conn = rusqlite::Connection::open(db)?;
        conn.busy_timeout(Duration::from_secs(5))?;
        conn.execute(
            "UPDATE sequence SET value = ?1 WHERE id = 1",
            [first_seq as i64 + bookings as i64 + 1],
        )?;
    }
    let now = SystemClock.now();
    let mut live = 0u64;
    let mut commit = Commit::default();
    for i in 0..bookings {
        let input = push_input(w, tenant, agent, booking(&i.to_string(), far_due(i)))?;
        let mut slice = Slice::new(tenant.clone());
        let scope = initial_scope(&input, &w.settings);
        for s in scope.subjects {
            slice.subjects.insert(s.clone(), SubjectState::new(s));
        }
        for k in scope.fact_keys {
            slice.fact_index.insert(k, Default::default());
        }
        for e in scope.expectations {
            slice.id_index.insert(e, None);
        }
        for t in scope.tasks {
            slice.tasks.insert(t, None);
        }
        for a in scope.agents {
            slice.agent_live.insert(a, live);
        }
        let ctx = StepContext {
            now,
            seq: first_seq + 1 + i as u64,
            settings: &w.settings,
        };
        let (mut done, effects) = loop {
            match step(slice.clone(), &input, &ctx) {
                Ok(out) => break out,
                Err(need) => match need {
                    Need::Subject(s) => {
                        slice.subjects.insert(s.clone(), SubjectState::new(s));
                    }
                    Need::FactKey(k) => {
                        slice.fact_index.insert(k, Default::default());
                    }
                    Need::Expectation(e) => {
                        slice.id_index.insert(e, None);
                    }
                    Need::Task(t) => {
                        slice.tasks.insert(t, None);
                    }
                    Need::AgentLive(a) => {
                        slice.agent_live.insert(a, live);
                    }
                },
            }
        };
        let raised = effects
            .iter()
            .filter(|e| matches!(e, Effect::Raised { .. }))
            .count();
        if raised != 3 {
            bail!("preloading booking {i} raised {raised} expectations, not 3: {effects:?}");
        }
        live += 3;
        for s in &done.dirty_subjects {
            if let Some(state) = done.subjects.remove(s) {
                commit.subjects.push(state);
            }
        }
        for t in &done.dirty_tasks {
            if let Some(Some(task)) = done.tasks.remove(t) {
                commit.tasks.push(task);
            }
        }
        if commit.subjects.len() >= PRELOAD_BATCH || i + 1 == bookings {
            w.store.commit(tenant, std::mem::take(&mut commit)).await?;
        }
    }
    Ok(())
}

/// What one bounded load did.
struct Load {
    done: usize,
    rate: f64,
    bytes_per_request: u64,
    /// CPU time of the whole process (every thread, user and system) per request, in µs:
    /// steadier than the rate from run to run, since it does not wait on the disk.
    cpu_us_per_request: f64,
}

/// Runs `f(0)`, `f(1)`, … from `opts.clients` concurrent callers until `opts.count` calls or
/// `opts.limit` has passed. Any failed call fails the phase.
async fn drive<F, Fut>(opts: &Options, f: F) -> anyhow::Result<Load>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    let f = Arc::new(f);
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let written = write_bytes();
    let cpu = cpu_seconds();
    let t = Clock::now();
    let mut tasks = Vec::new();
    for _ in 0..opts.clients {
        let (f, next, done) = (f.clone(), next.clone(), done.clone());
        let (count, limit) = (opts.count, opts.limit);
        tasks.push(tokio::spawn(async move {
            loop {
                if t.elapsed() >= limit {
                    return Ok::<(), anyhow::Error>(());
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= count {
                    return Ok(());
                }
                f(i).await?;
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for task in tasks {
        task.await??;
    }
    let secs = t.elapsed().as_secs_f64();
    let done = done.load(Ordering::Relaxed);
    let written = write_bytes().saturating_sub(written);
    let cpu = cpu_seconds() - cpu;
    Ok(Load {
        done,
        rate: done as f64 / secs,
        bytes_per_request: written / done.max(1) as u64,
        cpu_us_per_request: round(cpu * 1e6 / done.max(1) as f64, 1),
    })
}

async fn ok(resp: reqwest::Response) -> anyhow::Result<()> {
    let status = resp.status();
    if !status.is_success() {
        let body = resp.text().await.unwrap_or_default();
        bail!("the watcher answered {status}: {body}");
    }
    // Read the body, as a client would.
    resp.bytes().await?;
    Ok(())
}

/// A push of `LAPSES_PER_PUSH` manifest expectations due at `due`, each on its own subject
/// `shipment/{key}-{j}`, raised by task `task-{key}` (the lapse-latency and slow-agent phases).
fn manifests_push(key: &str, due: jiff::Timestamp) -> Value {
    let exps: Vec<Value> = (0..LAPSES_PER_PUSH)
        .map(|j| {
            let s = format!("{key}-{j}");
            json!({
                "expectationId": format!("exp-{s}"), "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": s },
                "expects": "the airline manifest",
                "satisfiedBy": { "factKey": format!("shipment.manifest.received:{s}") },
                "dueAt": due.to_string(), "basis": "observed"
            })
        })
        .collect();
    json!({ "artifactUpdate": {
        "taskId": format!("task-{key}"), "contextId": format!("ctx-{key}"),
        "artifact": {
            "artifactId": format!("booking-{key}"),
            "parts": [{ "text": "booked" }],
            "extensions": [URI],
            "metadata": { URI: { "expectations": exps } }
        }
    } })
}

async fn post_push(http: &reqwest::Client, base: &str, body: &Value) -> anyhow::Result<()> {
    ok(http
        .post(format!("{base}/v1/agents/booking/push"))
        .header("X-A2A-Notification-Token", PUSH_TOKEN)
        .json(body)
        .send()
        .await?)
    .await
}

/// The deadline index against a sweep over every open expectation, both finding the same
/// (up to) 1,000 earliest timers.
async fn due_cost(store: &SqliteStore, db: &Path) -> anyhow::Result<Value> {
    let far = Instant::MAX;
    let earliest = store.due_timers(far, LAPSES).await?;
    let Some(until) = earliest.last().map(|t| t.at) else {
        bail!("no pending timers after the preload");
    };
    let rounds = 20;
    let t = Clock::now();
    let mut found = 0;
    for _ in 0..rounds {
        found = store.due_timers(until, LAPSES).await?.len();
        store.next_timer().await?;
    }
    let index = t.elapsed().as_secs_f64() / f64::from(rounds);

    // A cron-style sweep: read every subject, derive its pending timers, keep those due.
    let conn = rusqlite::Connection::open_with_flags(
        db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    let t = Clock::now();
    let mut swept_due = 0usize;
    let mut swept_open = 0usize;
    {
        let mut stmt = conn.prepare("SELECT state FROM subjects")?;
        let mut rows = stmt.query([])?;
        while let Some(row) = rows.next()? {
            let text: String = row.get(0)?;
            let state: SubjectState = serde_json::from_str(&text)?;
            let ix = subject_index(&state);
            swept_open += ix.timers.len();
            swept_due += ix.timers.iter().filter(|(_, at, _)| *at <= until).count();
        }
    }
    let sweep = t.elapsed().as_secs_f64();
    if swept_due != found {
        bail!("the sweep found {swept_due} due timers, the index {found}");
    }
    let per = |s: f64| round(s * 1e6 / found.max(1) as f64, 3);
    Ok(json!({
        "due": found,
        "pendingTimersSwept": swept_open,
        "indexMsPerSweep": round(index * 1e3, 3),
        "indexUsPerLapse": per(index),
        "sweepMsPerSweep": round(sweep * 1e3, 1),
        "sweepUsPerLapse": per(sweep),
        "sweepOverIndex": round(sweep / index, 0),
    }))
}

/// 1,000 expectations due in the same second (pushed ahead of it over HTTP, `LAPSES_PER_PUSH`
/// per push, each on its own subject, no grace); latency from that deadline to the arrival of
/// each lapse task at the capture agent.
async fn lapse_latency(
    http: &reqwest::Client,
    base: &str,
    arrivals: &Arc<Mutex<Vec<SystemTime>>>,
    push_rate: f64,
    wait: Duration,
) -> anyhow::Result<Value> {
    let pushes = LAPSES / LAPSES_PER_PUSH;
    // Leave time to push them all (at half the measured rate) before the deadline.
    let lead = 1.0 + pushes as f64 / (push_rate / 2.0).max(1.0);
    let now = jiff::Timestamp::now().as_second();
    let due_second = now + lead.ceil() as i64 + 1;
    let due = jiff::Timestamp::from_second(due_second)?;
    let tag = jiff::Timestamp::now().as_millisecond();
    let before = arrivals.lock().map(|a| a.len()).unwrap_or(0);
    let mut handles = Vec::new();
    let clients = 8;
    for c in 0..clients {
        let (http, base) = (http.clone(), base.to_string());
        handles.push(tokio::spawn(async move {
            for p in (c..pushes).step_by(clients) {
                let body = manifests_push(&format!("L{tag}-{p}"), due);
                post_push(&http, &base, &body).await?;
            }
            Ok::<(), anyhow::Error>(())
        }));
    }
    for h in handles {
        h.await??;
    }
    let pushed_before_due = jiff::Timestamp::now() < due;
    let due_at = SystemTime::UNIX_EPOCH + Duration::from_secs(due_second as u64);
    let give_up = due_at + wait;
    loop {
        let got = arrivals.lock().map(|a| a.len() - before).unwrap_or(0);
        if got >= LAPSES || SystemTime::now() > give_up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut ms: Vec<f64> = arrivals
        .lock()
        .map(|a| {
            a[before..]
                .iter()
                .map(|t| match t.duration_since(due_at) {
                    Ok(d) => d.as_secs_f64() * 1e3,
                    Err(e) => -e.duration().as_secs_f64() * 1e3,
                })
                .collect()
        })
        .unwrap_or_default();
    ms.sort_by(f64::total_cmp);
    // Over all the deadlines: a percentile that falls among lapse tasks not received within
    // the wait is null (later than the wait), never the figure of those that did arrive.
    let pct = |p: f64| -> Value {
        let i = ((p * LAPSES as f64).ceil() as usize).clamp(1, LAPSES) - 1;
        ms.get(i).map_or(Value::Null, |v| json!(round(*v, 1)))
    };
    Ok(json!({
        "deadlines": LAPSES,
        "received": ms.len(),
        "waitedAtMostSeconds": wait.as_secs(),
        "pushedBeforeDeadline": pushed_before_due,
        "p50Ms": pct(0.50),
        "p99Ms": pct(0.99),
        "maxMs": pct(1.0),
    }))
}

/// Agents of the burst phase, each its own process.
const BURST_AGENTS: usize = 10;

/// Issue 20's burst: [`LAPSES`] expectations due at one instant, spread evenly over
/// [`BURST_AGENTS`] agents that are separate processes on 127.0.0.1 answering every request on a
/// fresh connection (`a2a-watcher bench-agent`, [`crate::bench_agent`]), on a fresh `serve` with
/// the default delivery settings (no rate limit). Answers the latency from the deadline to the
/// arrival of each lapse task at its agent: the first, p50, p99 and max over all the deadlines
/// (a percentile among lapse tasks not received within `opts.latency_wait` is null). Target:
/// p99 ≤ 1 s.
async fn burst(opts: &Options) -> anyhow::Result<Value> {
    let base = opts.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = TempDir(base.join(format!(
        "a2a-watcher-bench-burst-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    )));
    std::fs::create_dir_all(&dir.0)?;
    let exe = std::env::current_exe().context("the running executable, to start the agents")?;
    let mut agents = Vec::new();
    for _ in 0..BURST_AGENTS {
        agents.push(crate::bench_agent::AgentProcess::spawn(&exe).await?);
    }
    let mut card: Value = serde_json::from_str(include_str!("../examples/booking-card.json"))?;
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
    let path = dir.0.join("watcher.toml");
    std::fs::write(&path, toml)?;
    let config = watcher_config::Config::load(&path)?;
    let running = watcher_host::serve::start(config).await?;
    let base_url = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    // Pushed ahead of the deadline, one client per agent.
    let due_second = jiff::Timestamp::now().as_second() + 4;
    let due = jiff::Timestamp::from_second(due_second)?;
    let pushes = LAPSES / LAPSES_PER_PUSH / BURST_AGENTS;
    let mut handles = Vec::new();
    for a in 0..BURST_AGENTS {
        let (http, base_url) = (http.clone(), base_url.clone());
        handles.push(tokio::spawn(async move {
            for p in 0..pushes {
                let body = manifests_push(&format!("B-a{a}-{p}"), due);
                ok(http
                    .post(format!("{base_url}/v1/agents/a{a}/push"))
                    .header("X-A2A-Notification-Token", format!("push-a{a}"))
                    .json(&body)
                    .send()
                    .await?)
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
        let got: usize = agents.iter().map(|a| a.received()).sum();
        if got >= LAPSES || SystemTime::now() > give_up {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let cpu = cpu_seconds() - cpu_at_due;
    running.shutdown().await;
    let mut ms: Vec<f64> = agents
        .iter()
        .flat_map(|a| a.arrivals.lock().map(|v| v.clone()).unwrap_or_default())
        .map(|t| match t.duration_since(due_at) {
            Ok(d) => d.as_secs_f64() * 1e3,
            Err(e) => -e.duration().as_secs_f64() * 1e3,
        })
        .collect();
    drop(agents);
    ms.sort_by(f64::total_cmp);
    let pct = |p: f64| -> Value {
        let i = ((p * LAPSES as f64).ceil() as usize).clamp(1, LAPSES) - 1;
        ms.get(i).map_or(Value::Null, |v| json!(round(*v, 1)))
    };
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
    }))
}

/// The burst phase's line of the table.
fn print_burst(burst: &Value) {
    println!(
        "{:<24} {:>14}   (target <= 1000; first {} ms, p50 {} ms, max {} ms; {} lapses over {} agent processes, a connection per request; {} received; CPU {} us/lapse)",
        "burst p99 ms",
        burst["p99Ms"],
        burst["firstMs"],
        burst["p50Ms"],
        burst["maxMs"],
        burst["deadlines"],
        burst["agents"],
        burst["received"],
        burst["cpuMicrosPerLapse"],
    );
}

/// Lapse tasks per agent in the slow-agent phase.
const SLOW_PHASE_LAPSES: usize = 20;

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
async fn slow_agent(opts: &Options, held: bool) -> anyhow::Result<Value> {
    let base = opts.dir.clone().unwrap_or_else(std::env::temp_dir);
    let dir = TempDir(base.join(format!(
        "a2a-watcher-bench-slow-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    )));
    std::fs::create_dir_all(&dir.0)?;
    let arrivals: Arc<Mutex<Vec<SystemTime>>> = Arc::default();
    let seen = arrivals.clone();
    let fast = CaptureAgent::spawn(Behaviour::from_fn(move |i, req| {
        if req.rpc_method().as_deref() == Some("SendMessage") {
            seen.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(SystemTime::now());
        }
        Reply::task(format!("task-{}", i + 1), a2a_types::TaskState::Submitted)
    }))
    .await?;
    let slow = CaptureAgent::spawn(Behaviour::accept()).await?;
    slow.hold(held);
    let mut card: Value = serde_json::from_str(include_str!("../examples/booking-card.json"))?;
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
    let path = dir.0.join("watcher.toml");
    std::fs::write(&path, toml)?;
    let config = watcher_config::Config::load(&path)?;
    let running = watcher_host::serve::start(config).await?;
    let base_url = format!("http://{}", running.addr);
    let http = reqwest::Client::new();
    let slow_second = jiff::Timestamp::now().as_second() + 3;
    let due_second = slow_second + 2;
    // The slow agent's fall due first, so its lane is busy when the fast agent's do.
    for (agent, second) in [("slow", slow_second), ("fast", due_second)] {
        let due = jiff::Timestamp::from_second(second)?;
        for p in 0..SLOW_PHASE_LAPSES / LAPSES_PER_PUSH {
            let body = manifests_push(&format!("S-{agent}-{p}"), due);
            ok(http
                .post(format!("{base_url}/v1/agents/{agent}/push"))
                .header("X-A2A-Notification-Token", format!("push-{agent}"))
                .json(&body)
                .send()
                .await?)
            .await?;
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
    let mut ms: Vec<f64> = arrivals
        .lock()
        .map(|a| {
            a.iter()
                .map(|t| match t.duration_since(due_at) {
                    Ok(d) => d.as_secs_f64() * 1e3,
                    Err(e) => -e.duration().as_secs_f64() * 1e3,
                })
                .collect()
        })
        .unwrap_or_default();
    ms.sort_by(f64::total_cmp);
    let pct = |p: f64| -> Value {
        let i = ((p * SLOW_PHASE_LAPSES as f64).ceil() as usize).clamp(1, SLOW_PHASE_LAPSES) - 1;
        ms.get(i).map_or(Value::Null, |v| json!(round(*v, 1)))
    };
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
const STATUS_BACKGROUND: [usize; 2] = [0, 20_000];
/// Status updates timed at each size (each to its own lapse task, one at a time).
const STATUS_UPDATES: usize = 200;

/// Status-update latency (issue 10): a fresh `serve` whose outbox holds `STATUS_UPDATES`
/// lapse tasks the agent created plus 0 or 20,000 others (written into the store before it
/// starts), then one agent's `statusUpdate` push per measured lapse task, one at a time, timed
/// from request to answer. An update finds its lapse task by the task id (`track_lapse_task`);
/// the figure shows whether that grows with the outbox.
async fn status_updates(opts: &Options) -> anyhow::Result<Value> {
    let mut sizes = Vec::new();
    for background in STATUS_BACKGROUND {
        let base = opts.dir.clone().unwrap_or_else(std::env::temp_dir);
        let dir = TempDir(base.join(format!(
            "a2a-watcher-bench-status-{}-{background}-{}",
            std::process::id(),
            jiff::Timestamp::now().as_millisecond()
        )));
        std::fs::create_dir_all(&dir.0)?;
        let agent = CaptureAgent::spawn(Behaviour::accept()).await?;
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
fn sent_lapse_task(
    tenant: &Tenant,
    agent: &AgentId,
    id: &str,
    now: Instant,
) -> anyhow::Result<watcher_runtime::store::OutboxEntry> {
    Ok(watcher_runtime::store::OutboxEntry {
        tenant: tenant.clone(),
        agent: agent.clone(),
        message_id: format!("lapse:{id}:overdue:bench"),
        expectation_id: watcher_core::ids::ExpectationId::parse(id).map_err(anyhow::Error::msg)?,
        lapse: watcher_core::record::LapseKind::Overdue,
        lapsed_at: now,
        request: json!({ "message": { "messageId": format!("lapse:{id}:overdue:bench") } }),
        delivery: watcher_runtime::store::DeliveryState::Sent,
        attempts: 1,
        next_attempt_at: now,
        task_id: Some(format!("task-{id}")),
        task_state: Some("TASK_STATE_SUBMITTED".into()),
        answered_with_message: false,
        last_error: None,
        retrying_since: None,
        attempt_started_at: None,
        follow_at: None,
        follow_since: None,
        lease: None,
    })
}

/// `write_bytes` of /proc/self/io: bytes this process caused to be sent to storage (0 where
/// the file is missing).
fn write_bytes() -> u64 {
    proc_field("/proc/self/io", "write_bytes:")
}

/// CPU time this process has used so far, every thread's (live or ended) user and system
/// time, in seconds: fields 14 and 15 of /proc/self/stat, in clock ticks of USER_HZ (100 on
/// Linux, fixed by its /proc ABI whatever the kernel's own tick). 0 where the file is missing.
fn cpu_seconds() -> f64 {
    const USER_HZ: f64 = 100.0;
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // The command name (field 2) is in parentheses and may hold spaces: count after it.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return 0.0;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    // `rest` starts at field 3 (state): utime is field 14, stime field 15.
    (ticks(11) + ticks(12)) as f64 / USER_HZ
}

/// Resident memory, VmRSS of /proc/self/status, in bytes (0 where the file is missing).
fn rss_bytes() -> u64 {
    proc_field("/proc/self/status", "VmRSS:") * 1024
}

fn proc_field(path: &str, name: &str) -> u64 {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|v| v.split_whitespace().next()?.parse().ok())
        })
        .unwrap_or(0)
}

/// The database file with its WAL and shared-memory files.
fn disk_bytes(db: &Path) -> u64 {
    ["", "-wal", "-shm"]
        .iter()
        .filter_map(|suffix| {
            let mut p = db.as_os_str().to_owned();
            p.push(suffix);
            std::fs::metadata(PathBuf::from(p)).ok().map(|m| m.len())
        })
        .sum()
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

fn print_table(results: &[Value]) {
    let rows: Vec<(&str, Vec<&str>)> = vec![
        ("open expectations", vec!["openExpectations"]),
        ("raw durable tx/s", vec!["rawDurableTxPerSec"]),
        ("engine raise/s", vec!["engine", "raisePerSec"]),
        ("  fraction of raw", vec!["engine", "raiseFractionOfRaw"]),
        (
            "  bytes written/raise",
            vec!["engine", "raiseBytesWrittenPerRequest"],
        ),
        ("  CPU us/raise", vec!["engine", "raiseCpuMicrosPerRequest"]),
        ("engine fact/s", vec!["engine", "factPerSec"]),
        ("  fraction of raw", vec!["engine", "factFractionOfRaw"]),
        (
            "  bytes written/fact",
            vec!["engine", "factBytesWrittenPerRequest"],
        ),
        ("  CPU us/fact", vec!["engine", "factCpuMicrosPerRequest"]),
        ("HTTP push/s", vec!["http", "raisePerSec"]),
        ("  fraction of raw", vec!["http", "raiseFractionOfRaw"]),
        (
            "  bytes written/push",
            vec!["http", "raiseBytesWrittenPerRequest"],
        ),
        ("  CPU us/push", vec!["http", "raiseCpuMicrosPerRequest"]),
        ("HTTP fact/s", vec!["http", "factPerSec"]),
        ("  fraction of raw", vec!["http", "factFractionOfRaw"]),
        (
            "  bytes written/fact",
            vec!["http", "factBytesWrittenPerRequest"],
        ),
        ("  CPU us/fact", vec!["http", "factCpuMicrosPerRequest"]),
        ("due: index ms/sweep", vec!["due", "indexMsPerSweep"]),
        ("due: index us/lapse", vec!["due", "indexUsPerLapse"]),
        ("due: sweep ms/sweep", vec!["due", "sweepMsPerSweep"]),
        ("due: sweep us/lapse", vec!["due", "sweepUsPerLapse"]),
        ("due: sweep / index", vec!["due", "sweepOverIndex"]),
        ("lapse latency p50 ms", vec!["lapseLatency", "p50Ms"]),
        ("lapse latency p99 ms", vec!["lapseLatency", "p99Ms"]),
        ("lapse latency max ms", vec!["lapseLatency", "maxMs"]),
        ("lapse tasks received", vec!["lapseLatency", "received"]),
        ("disk bytes/open", vec!["diskBytesPerOpen"]),
        ("RSS bytes/open", vec!["rssBytesPerOpen"]),
        ("RSS at end (MiB)", vec!["rssBytesAtEnd"]),
        ("preload seconds", vec!["preloadSeconds"]),
    ];
    let mut out = String::new();
    for (label, path) in rows {
        out.push_str(&format!("{label:<24}"));
        for r in results {
            let mut v = r;
            for p in &path {
                v = &v[*p];
            }
            let text = match (label, v.as_u64()) {
                ("RSS at end (MiB)", Some(b)) => format!("{:.0}", b as f64 / 1048576.0),
                _ => v.to_string(),
            };
            out.push_str(&format!(" {text:>14}"));
        }
        out.push('\n');
    }
    print!("{out}");
}
