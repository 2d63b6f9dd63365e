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
//!    `bench_agent.rs`), from the deadline to each lapse task's arrival (first, p50, p99);
//! 9. a backlog (once): 5,000 lapse tasks queued for one agent process when `serve` starts, the
//!    drain rate (`backlog.rs`).
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
use watcher_runtime::clock::{Clock as _, SystemClock};
use watcher_runtime::index::subject_index;
use watcher_runtime::store::Commit;
use watcher_runtime::watcher::Watcher;
use watcher_store_sqlite::SqliteStore;

mod agent;
mod backlog;
mod delivery;
mod inputs;
mod measure;

use backlog::*;
use delivery::*;
use inputs::*;
use measure::*;

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
    /// Run the backlog phase alone (`--backlog-only`).
    pub backlog_only: bool,
    /// Milliseconds the agent processes of the burst and backlog phases wait before each answer
    /// (`--agent-answer-ms`, default 2: agents answering in a few milliseconds).
    pub agent_answer_ms: u64,
    /// The backlog phase's agent: examples/sdk-agent/agent.py run by this Python
    /// (`--sdk-agent PYTHON SCRIPT`), instead of a `bench-agent` process.
    pub sdk_agent: Option<(PathBuf, PathBuf)>,
    /// Lapse tasks per origin task in each run of the backlog phase: 10 then 1 (10 only with
    /// `--quick`).
    pub backlog_per_origin: Vec<usize>,
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
            backlog_only: false,
            agent_answer_ms: 2,
            sdk_agent: None,
            backlog_per_origin: if quick { vec![10] } else { vec![10, 1] },
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
    if opts.backlog_only {
        let runs = backlog_runs(&opts).await?;
        print_backlog(&runs);
        println!("{}", json!({ "bench": "a2a-watcher", "backlog": runs }));
        return Ok(());
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
    let backlog = backlog_runs(&opts).await?;
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
    print_backlog(&backlog);
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
        "backlog": backlog,
    });
    println!("{doc}");
    Ok(())
}

/// A temporary folder removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    /// A new folder `a2a-watcher-bench-{name}-{pid}-{ms}` in `opts.dir` (else the system's
    /// temporary folder), for one phase's `serve`.
    fn fresh(opts: &Options, name: &str) -> anyhow::Result<TempDir> {
        let base = opts.dir.clone().unwrap_or_else(std::env::temp_dir);
        let dir = TempDir(base.join(format!(
            "a2a-watcher-bench-{name}-{}-{}",
            std::process::id(),
            jiff::Timestamp::now().as_millisecond()
        )));
        std::fs::create_dir_all(&dir.0)
            .with_context(|| format!("Failed to create {}", dir.0.display()))?;
        Ok(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

async fn run_size(n: u64, opts: &Options, measure_latency: bool) -> anyhow::Result<Value> {
    let dir = TempDir::fresh(opts, &n.to_string())?;

    // The capture agent records when each lapse task arrives.
    let arrivals: Arc<Mutex<Vec<SystemTime>>> = Arc::default();
    let seen = arrivals.clone();
    let agent = agent::BenchAgent::spawn(Some(seen)).await?;
    let config = write_config(&dir.0, &agent.url(), n)?;

    let raw_tps = raw_durable_rate(&dir.0, opts).context("the raw SQLite rate")?;

    // Engine + store.
    let tenant = Tenant::parse("default").map_err(anyhow::Error::msg)?;
    let agent_id = AgentId::parse("booking").map_err(anyhow::Error::msg)?;
    let store = Arc::new(SqliteStore::open(&config.database)?);
    let deployment = watcher_host::load_deployment(
        &config,
        &*store,
        watcher_runtime::clock::Clock::now(&SystemClock),
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
    let source = Source::parse(SOURCE_ID.to_owned()).map_err(anyhow::Error::msg)?;
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
            trace: None,
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
                    Need::Tasks(ts) => {
                        for t in ts {
                            slice.tasks.insert(t, None);
                        }
                    }
                    Need::Subjects(ss) => {
                        for s in ss {
                            slice.subjects.insert(s.clone(), SubjectState::new(s));
                        }
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
        let (http, base) = (http.clone(), base.to_owned());
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
    let ms = latencies_ms(
        &arrivals
            .lock()
            .map(|a| a[before..].to_vec())
            .unwrap_or_default(),
        due_at,
    );
    let pct = |p: f64| percentile(&ms, LAPSES, p);
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
