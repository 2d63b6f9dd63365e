//! The goal load against the scale model (issue 40, item 4): starts the local AWS stack with every
//! limit divided by K (`bash infra/aws-local.sh --scale K`), answers as its agents, and runs at
//! 1/K of the goal
//!
//! - 10,000 raises and 10,000 facts a second over 10,000 agents of several tenants;
//! - a million lapses due within one hour (the same rate over `--duration`);
//! - a burst of 100,000 lapses due in the same minute (all at its first second);
//! - one agent with a backlog of 200,000 lapse tasks (all due at once) while the others go on.
//!
//! Everything it prints is measured in the run: the answers of the API, the arrival of each
//! lapse task at its agent (lateness = arrival − `dueAt`, lost = due and never arrived, sent
//! twice = one `messageId` arriving twice), each resource's calls, refusals and peak rate
//! against its limit as the model counted them (`GET /_model/limits` on each emulator, read
//! once a second), the function runs and their billed durations from the stack's `REPORT`
//! lines, and the cost of what was counted at `docs/prices.toml`.
//!
//! Shared by the bench target (`benches/goal_load/main.rs`) and its smoke test
//! (`tests/goal_load.rs`, which includes this file).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context};
use axum::extract::{Path as UrlPath, State};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{json, Value};

/// The extension's URI: the lapse block is `params.message.metadata[URI].lapse`.
const URI: &str = "https://rsaxb.com/a2a/expectations/v1";

/// The goal (issue 40): inputs a second, agents, lapses an hour, the burst, the backlog.
const GOAL_RATE: f64 = 10_000.0;
const GOAL_AGENTS: u64 = 10_000;
const GOAL_LAPSES_PER_HOUR: f64 = 1_000_000.0;
const GOAL_BURST: u64 = 100_000;
const GOAL_BACKLOG: u64 = 200_000;

/// Expectations per push of the preload (the burst and the backlog): as the burst test.
const PER_PUSH: usize = 10;

/// The command line.
pub const USAGE: &str = "\
cargo bench --bench goal_load -- [OPTIONS]

  --scale K          the model's factor: limits and load at 1/K of AWS's and the goal's
                     (default 100)
  --duration SECS    the steady window: raises, facts and lapses at their rates (default 3600,
                     the goal's hour). Shorter keeps the rates
  --short            the CI's version: K 100, a 20 s window, burst 50 and backlog 50,
                     visibility timeouts capped at 30 s, the sweep every 10 s, patience 300 s
  --burst N --backlog N
                     the burst's lapses and the backlog's lapse tasks (default: the goal's / K)
  --visibility-timeout-cap SECS, --rate-cap SECS
                     passed to aws-local (default: the template's timeouts and sweep)
  --tenants N        tenants the agents and sources are spread over (default 4)
  --debug | --release  the function binaries' build (default: release when built, else debug)
  --bin-dir DIR      the function binaries' folder (overrides the two above)
  --patience SECS    how long to wait for lapse tasks after the last is due (default 900;
                     --short: 240)
  --in-flight N      API requests in flight at once, per stream (default 64)
  --api-port N --agents-port N --moto-port N --dynamodb-port N
                     ports on 127.0.0.1 (defaults 3500, 3501, 5500, 5501; 0: any free one)
  --log FILE         the stack's log (default TARGET/goal-load-aws-local.log)";

/// The function binaries' build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// Release when `TARGET/release/api` exists, else debug.
    Auto,
    /// `TARGET/debug`.
    Debug,
    /// `TARGET/release` (`--release` to aws-local).
    Release,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// K: the model's limits and the load are 1/K of AWS's and the goal's.
    pub scale: u64,
    /// Seconds of the steady window.
    pub duration: u64,
    /// Tenants the agents are spread over.
    pub tenants: usize,
    /// The short (CI) version.
    pub short: bool,
    /// Which function binaries.
    pub build: Build,
    /// Their folder, when given.
    pub bin_dir: Option<PathBuf>,
    /// Seconds to wait for lapse tasks after the last due.
    pub patience: u64,
    /// API requests in flight per stream.
    pub in_flight: usize,
    /// The HTTP API's port (0: free).
    pub api_port: u16,
    /// The agents' port (0: free).
    pub agents_port: u16,
    /// The first emulator's port (0: free).
    pub moto_port: u16,
    /// The DynamoDB emulator's port (0: free).
    pub dynamodb_port: u16,
    /// The stack's log.
    pub log: Option<PathBuf>,
    /// `--visibility-timeout-cap` for aws-local (the short version: 30 s, so that work a
    /// throttled or killed instance held comes back within the run, as in the deployment tests).
    pub visibility_cap: Option<u64>,
    /// `--rate-cap` for aws-local: the sweep every so many seconds (the short version: 10 s,
    /// so that a timer whose firing the model throttled, which the next sweep fires, is fired
    /// within the run; the template's 5 minutes otherwise).
    pub rate_cap: Option<u64>,
    /// Lapses of the burst, when not the goal's / K (the short version: a tenth of it).
    pub burst: Option<usize>,
    /// Lapse tasks of the backlog, when not the goal's / K (the short version: a tenth).
    pub backlog: Option<usize>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scale: 100,
            duration: 3600,
            tenants: 4,
            short: false,
            build: Build::Auto,
            bin_dir: None,
            patience: 900,
            in_flight: 64,
            api_port: 3500,
            agents_port: 3501,
            moto_port: 5500,
            dynamodb_port: 5501,
            log: None,
            visibility_cap: None,
            rate_cap: None,
            burst: None,
            backlog: None,
        }
    }
}

impl Options {
    /// The short version CI runs: K 100 with shorter phases: a 20 s window at the rates of
    /// 1/K, the burst and the backlog a twentieth and a fortieth of theirs at 1/K (50 each),
    /// visibility timeouts capped at 30 s, patience 300 s. (K 1000 is past what the model can scale: a
    /// partition would take 1 write unit a second, less than one subject's commit, and the
    /// account's Lambda concurrency would be 1 for all four functions.)
    pub fn short() -> Options {
        Options {
            scale: 100,
            duration: 20,
            short: true,
            patience: 300,
            visibility_cap: Some(30),
            rate_cap: Some(10),
            burst: Some(50),
            backlog: Some(50),
            ..Options::default()
        }
    }

    /// Reads the command line ([`USAGE`]).
    ///
    /// # Errors
    /// An unknown option, a missing or unreadable value, K or a duration of 0.
    pub fn parse(args: &[String]) -> anyhow::Result<Options> {
        let mut o = if args.iter().any(|a| a == "--short") {
            Options::short()
        } else {
            Options::default()
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .with_context(|| format!("{name} needs a value"))
            };
            fn num<T: std::str::FromStr>(name: &str, v: &str) -> anyhow::Result<T> {
                v.parse()
                    .map_err(|_| anyhow::anyhow!("{name} {v}: not a number"))
            }
            match a.as_str() {
                "--short" => {}
                "--scale" => o.scale = num("--scale", &value("--scale")?)?,
                "--duration" => o.duration = num("--duration", &value("--duration")?)?,
                "--burst" => o.burst = Some(num("--burst", &value("--burst")?)?),
                "--backlog" => o.backlog = Some(num("--backlog", &value("--backlog")?)?),
                "--tenants" => o.tenants = num("--tenants", &value("--tenants")?)?,
                "--patience" => o.patience = num("--patience", &value("--patience")?)?,
                "--in-flight" => o.in_flight = num("--in-flight", &value("--in-flight")?)?,
                "--api-port" => o.api_port = num("--api-port", &value("--api-port")?)?,
                "--agents-port" => o.agents_port = num("--agents-port", &value("--agents-port")?)?,
                "--moto-port" => o.moto_port = num("--moto-port", &value("--moto-port")?)?,
                "--dynamodb-port" => {
                    o.dynamodb_port = num("--dynamodb-port", &value("--dynamodb-port")?)?;
                }
                "--debug" => o.build = Build::Debug,
                "--release" => o.build = Build::Release,
                "--bin-dir" => o.bin_dir = Some(PathBuf::from(value("--bin-dir")?)),
                "--log" => o.log = Some(PathBuf::from(value("--log")?)),
                "--rate-cap" => o.rate_cap = Some(num("--rate-cap", &value("--rate-cap")?)?),
                "--visibility-timeout-cap" => {
                    o.visibility_cap = Some(num(
                        "--visibility-timeout-cap",
                        &value("--visibility-timeout-cap")?,
                    )?);
                }
                other => bail!("unknown option {other}"),
            }
        }
        if o.scale == 0 || o.duration == 0 || o.tenants == 0 || o.in_flight == 0 {
            bail!("--scale, --duration, --tenants and --in-flight must be above 0");
        }
        Ok(o)
    }

    /// Agents (the goal's 10,000 / K, at least 2: one carries the backlog).
    pub fn agents(&self) -> usize {
        usize::try_from((GOAL_AGENTS / self.scale).max(2)).unwrap_or(2)
    }

    /// Raises a second, and facts a second.
    pub fn rate(&self) -> f64 {
        GOAL_RATE / self.scale as f64
    }

    /// Lapses a second in the steady window.
    pub fn lapse_rate(&self) -> f64 {
        GOAL_LAPSES_PER_HOUR / self.scale as f64 / 3600.0
    }

    /// Lapses due in the burst's minute.
    pub fn burst(&self) -> usize {
        self.burst
            .unwrap_or_else(|| usize::try_from((GOAL_BURST / self.scale).max(1)).unwrap_or(1))
    }

    /// Lapse tasks of the one agent's backlog.
    pub fn backlog(&self) -> usize {
        self.backlog
            .unwrap_or_else(|| usize::try_from((GOAL_BACKLOG / self.scale).max(1)).unwrap_or(1))
    }
}

/// The workspace root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The target folder: `CARGO_TARGET_DIR`, else the one this executable was built into
/// (`TARGET/{profile}/deps/exe`), else `target`.
fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return if dir.is_absolute() {
            dir
        } else {
            root().join(dir)
        };
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
        .filter(|t| t.join("debug").is_dir() || t.join("release").is_dir())
        .unwrap_or_else(|| root().join("target"))
}

/// A free port on 127.0.0.1 when `port` is 0.
fn port_or_free(port: u16) -> anyhow::Result<u16> {
    if port != 0 {
        return Ok(port);
    }
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Seconds since the epoch, as a float.
fn epoch(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// An instant (whole seconds since the epoch) as the API takes it.
fn instant(secs: i64) -> String {
    jiff::Timestamp::from_second(secs)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

// ------------------------------------------------------------------------------------------
// The agents: one HTTP server, each agent at `/a/{id}`, recording every lapse task.

/// One lapse task as it arrived.
#[derive(Debug, Clone)]
struct Arrival {
    message_id: String,
    expectation_id: String,
    at: SystemTime,
}

/// What the agents' server shares.
#[derive(Default)]
struct Agents {
    arrivals: Mutex<Vec<Arrival>>,
    /// Each agent's tasks, oldest first: the task each lapse task created, completed, with the
    /// lapse task as its history (what `ListTasks` and `GetTask` answer from).
    tasks: Mutex<HashMap<String, Vec<Value>>>,
    /// JSON-RPC requests other than `SendMessage`, `ListTasks` and `GetTask`.
    other: AtomicUsize,
    /// `ListTasks` and `GetTask` requests.
    lookups: AtomicUsize,
}

/// `POST /a/{agent}`, as an A2A 1.0 agent offering `ListTasks`: a `SendMessage` is recorded
/// and answered with a new task, completed (nothing to follow), kept with the message as its
/// history; `ListTasks` (by `contextId`, newest first, one page of up to 100) and `GetTask`
/// answer from the kept tasks (the watcher asks them when it could not record a delivery, before
/// posting again); anything else gets "method not found".
async fn agent_rpc(
    State(agents): State<Arc<Agents>>,
    UrlPath(agent): UrlPath<String>,
    Json(req): Json<Value>,
) -> Json<Value> {
    let at = SystemTime::now();
    let id = req.get("id").cloned().unwrap_or(Value::Null);
    let params = &req["params"];
    match req.get("method").and_then(Value::as_str) {
        Some("SendMessage") => {}
        Some("ListTasks") => {
            agents.lookups.fetch_add(1, Ordering::Relaxed);
            let context = params.get("contextId").and_then(Value::as_str);
            let tasks = agents.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            let found: Vec<&Value> = tasks
                .get(&agent)
                .map(|l| {
                    l.iter()
                        .rev()
                        .filter(|t| context.is_none() || t["contextId"].as_str() == context)
                        .take(100)
                        .collect()
                })
                .unwrap_or_default();
            return Json(json!({ "jsonrpc": "2.0", "id": id, "result": {
                "tasks": found, "nextPageToken": "", "pageSize": found.len(),
                "totalSize": found.len() } }));
        }
        Some("GetTask") => {
            agents.lookups.fetch_add(1, Ordering::Relaxed);
            let want = params.get("id").and_then(Value::as_str);
            let tasks = agents.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            return Json(
                match tasks
                    .get(&agent)
                    .and_then(|l| l.iter().rev().find(|t| t["id"].as_str() == want))
                {
                    Some(t) => json!({ "jsonrpc": "2.0", "id": id, "result": t }),
                    None => json!({ "jsonrpc": "2.0", "id": id,
                        "error": { "code": -32001, "message": "Task not found" } }),
                },
            );
        }
        _ => {
            agents.other.fetch_add(1, Ordering::Relaxed);
            return Json(json!({ "jsonrpc": "2.0", "id": id,
                "error": { "code": -32601, "message": "Method not found" } }));
        }
    }
    let message = &params["message"];
    let message_id = message["messageId"].as_str().unwrap_or_default().to_owned();
    let expectation_id = message["metadata"][URI]["lapse"]["expectationId"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    agents
        .arrivals
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .push(Arrival {
            message_id,
            expectation_id,
            at,
        });
    let mut tasks = agents.tasks.lock().unwrap_or_else(PoisonError::into_inner);
    let kept = tasks.entry(agent.clone()).or_default();
    let task = json!({
        "id": format!("task-{agent}-{}", kept.len() + 1),
        "contextId": message.get("contextId").and_then(Value::as_str).unwrap_or("ctx-goal-load"),
        "status": { "state": "TASK_STATE_COMPLETED" },
        "history": [message],
    });
    kept.push(task.clone());
    Json(json!({ "jsonrpc": "2.0", "id": id, "result": { "task": task } }))
}

/// The id of the `i`th agent.
fn agent_id(i: usize) -> String {
    format!("g{i:05}")
}

/// The tenant of the `i`th agent.
fn tenant_of(i: usize, tenants: usize) -> String {
    format!("t{}", i % tenants)
}

/// The watcher's configuration: one source per tenant, the agents (cards as files naming the
/// agents' server), reconciliation off (the load is facts, raises and lapses).
fn config(o: &Options, dir: &Path, agents_url: &str) -> anyhow::Result<String> {
    let card: Value = serde_json::from_str(&std::fs::read_to_string(
        root().join("examples/booking-card.json"),
    )?)?;
    let mut out = String::from("allow_private_endpoints = true\n\n");
    for t in 0..o.tenants.min(o.agents()) {
        let _ = write!(
            out,
            "[[sources]]\nid = \"feed-t{t}\"\ntoken = \"src-goal-t{t}\"\ntenant = \"t{t}\"\n\n"
        );
    }
    let _ = write!(
        out,
        "[[operators]]\nid = \"ops\"\ntoken = \"ops-goal\"\ntenant = \"t0\"\n\n"
    );
    for i in 0..o.agents() {
        let id = agent_id(i);
        let url = format!("{agents_url}/a/{id}");
        let mut c = card.clone();
        c["supportedInterfaces"][0]["url"] = json!(url);
        let path = dir.join(format!("{id}-card.json"));
        std::fs::write(&path, c.to_string())?;
        let _ = write!(
            out,
            "[[agents]]\nid = \"{id}\"\ncard = \"{}\"\nendpoint = \"{url}\"\npush_token = \"push-{id}\"\ntenant = \"{}\"\nreconcile = false\n\n",
            path.display(),
            tenant_of(i, o.tenants),
        );
    }
    Ok(out)
}

// ------------------------------------------------------------------------------------------
// The stack.

/// The local AWS stack as a child process, stopped (SIGTERM, then SIGKILL) when dropped.
struct Stack {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Stack {
    fn start(o: &Options, config: &Path, ports: &Ports, log: &Path) -> anyhow::Result<Stack> {
        let target = target_dir();
        let (bin_dir, release) = match (&o.bin_dir, o.build) {
            (Some(d), _) => (
                d.clone(),
                d.file_name() == Some(std::ffi::OsStr::new("release")),
            ),
            (None, Build::Release) => (target.join("release"), true),
            (None, Build::Debug) => (target.join("debug"), false),
            (None, Build::Auto) => {
                if target.join("release/api").is_file() {
                    (target.join("release"), true)
                } else {
                    (target.join("debug"), false)
                }
            }
        };
        for f in ["api", "timer", "submitter", "lesson-write"] {
            if !bin_dir.join(f).is_file() {
                bail!(
                    "{} is not built (cargo build {}-p watcher-fn-api -p watcher-fn-timer \
                     -p watcher-fn-submitter -p watcher-fn-lesson-write)",
                    bin_dir.join(f).display(),
                    if release { "--release " } else { "" }
                );
            }
        }
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("infra/aws-local.sh"))
            .args(["--no-build", "--log"])
            .arg(log)
            .args(["--port", &ports.api.to_string()])
            .args(["--moto-port", &ports.moto.to_string()])
            .args(["--dynamodb-port", &ports.dynamodb.to_string()])
            .args(release.then_some("--release"))
            .args(
                o.visibility_cap
                    .iter()
                    .flat_map(|c| ["--visibility-timeout-cap".to_owned(), c.to_string()]),
            )
            .args(
                o.rate_cap
                    .iter()
                    .flat_map(|c| ["--rate-cap".to_owned(), c.to_string()]),
            )
            .arg("--config")
            .arg(config)
            .env(
                "CARGO_TARGET_DIR",
                bin_dir
                    .parent()
                    .context("the binaries' folder has a parent")?,
            );
        if scale_supported() {
            cmd.args(["--scale", &o.scale.to_string()]);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("Failed to start bash infra/aws-local.sh")?;
        let out = child.stdout.take().context("the stack's output")?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
            }
        });
        let stack = Stack { child, lines };
        let end = Instant::now() + Duration::from_secs(180);
        loop {
            let lines = stack
                .lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if lines.iter().any(|l| l.starts_with("[aws-local] ready at ")) {
                return Ok(stack);
            }
            if lines
                .iter()
                .any(|l| l.contains("error:") || l.contains("failed:"))
                || Instant::now() > end
            {
                bail!(
                    "the local AWS stack did not start (log: {}):\n{}",
                    log.display(),
                    lines.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether this checkout's aws-local takes `--scale` (the limits part of the model).
fn scale_supported() -> bool {
    Command::new(root().join(".venv/bin/python"))
        .args(["-m", "aws_local", "--help"])
        .env("PYTHONPATH", root().join("infra"))
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("--scale"))
}

/// The ports of one run.
#[derive(Debug, Clone, Copy)]
struct Ports {
    api: u16,
    agents: u16,
    moto: u16,
    dynamodb: u16,
}

// ------------------------------------------------------------------------------------------
// The model's counts, read once a second.

/// One resource as `GET /_model/limits` counts it.
#[derive(Debug, Clone, Default)]
pub struct Resource {
    /// Calls (or units) it counted.
    pub calls: f64,
    /// Calls it refused.
    pub refusals: f64,
    /// The highest rate it saw, per second.
    pub peak: f64,
    /// Its limit at 1/K, per second (or the quota's own unit).
    pub limit: f64,
    /// What it counted in all (units, for DynamoDB's tables), when the model says.
    pub total: Option<f64>,
    /// The unit of `peak` and `limit`.
    pub unit: String,
    /// Seconds into the run when the driver first saw a refusal of it.
    pub first_refusal: Option<f64>,
}

/// Every resource of every `/_model/limits` state, by `emulator:name`, and the raw states.
#[derive(Debug, Default)]
struct Model {
    resources: BTreeMap<String, Resource>,
    states: BTreeMap<String, Value>,
}

/// A number from `v[key]` for the first of `keys` present.
fn number(v: &Value, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_f64))
}

/// A count that is a number, or an object of counts by kind (summed).
fn count(v: Option<&Value>) -> f64 {
    match v {
        // `+ 0.0`: an empty sum is -0.0.
        Some(Value::Object(m)) => m.values().filter_map(Value::as_f64).sum::<f64>() + 0.0,
        Some(v) => v.as_f64().unwrap_or(0.0),
        None => 0.0,
    }
}

/// The resources of one `/_model/limits` state (infra/aws_model/limits.py `state()`):
/// `resources`, an object of name → `{calls, refusals: {kind: n}, limit, unit, peak,
/// peak_share}`; the total amount used, when the state gives one (`total` or `used`).
fn resources_of(state: &Value) -> Vec<(String, Resource)> {
    let Some(Value::Object(m)) = state.get("resources") else {
        return Vec::new();
    };
    m.iter()
        .map(|(name, e)| {
            (
                name.clone(),
                Resource {
                    calls: count(e.get("calls")),
                    refusals: count(e.get("refusals")),
                    peak: number(e, &["peak", "peak_rate"]).unwrap_or(0.0),
                    limit: number(e, &["limit"]).unwrap_or(0.0),
                    total: number(e, &["total", "used"]),
                    unit: e
                        .get("unit")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    first_refusal: None,
                },
            )
        })
        .collect()
}

/// Reads `/_model/limits` at each of `bases` into `model`, noting resources refused for the
/// first time at `since` seconds.
async fn read_model(
    http: &reqwest::Client,
    bases: &[(String, String)],
    model: &Mutex<Model>,
    since: f64,
) {
    for (name, base) in bases {
        let Ok(resp) = http
            .get(format!("{base}/_model/limits"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
        else {
            continue;
        };
        if !resp.status().is_success() {
            continue;
        }
        let Ok(state) = resp.json::<Value>().await else {
            continue;
        };
        let mut m = model.lock().unwrap_or_else(PoisonError::into_inner);
        for (r, mut now) in resources_of(&state) {
            // The model's names start with their service (`dynamodb:…`, `sqs:…`, `scheduler:…`),
            // and each service is in one emulator.
            let key = r;
            let first = m.resources.get(&key).and_then(|old| old.first_refusal);
            now.first_refusal = first.or((now.refusals > 0.0).then_some(since));
            m.resources.insert(key, now);
        }
        m.states.insert(name.clone(), state);
    }
}

// ------------------------------------------------------------------------------------------
// The load.

/// What the API answered one stream (raises or facts).
#[derive(Debug, Default)]
struct Stream {
    offered: AtomicUsize,
    /// Offered while `in_flight` requests were unanswered, so not sent.
    skipped: AtomicUsize,
    /// Whether a 500 is sent again too (the preload's: the local HTTP API answers a throttled
    /// Lambda invocation 500, as API Gateway does, and the burst and backlog must be raised).
    retry_500: bool,
    /// Requests sent (attempts, retries included): API Gateway requests.
    requests: AtomicUsize,
    accepted: AtomicUsize,
    /// Answers sent again after `Retry-After`: 429 and 503, and 500 where retried.
    refused: AtomicUsize,
    /// Other answers and transport errors (not retried).
    failed: AtomicUsize,
    /// Microseconds of each accepted request, first attempt to answer.
    latencies: Mutex<Vec<f64>>,
    statuses: Mutex<BTreeMap<u16, usize>>,
}

impl Stream {
    fn summary(&self, seconds: f64) -> Value {
        let mut l = self
            .latencies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        l.sort_by(f64::total_cmp);
        let accepted = self.accepted.load(Ordering::Relaxed);
        json!({
            "offered": self.offered.load(Ordering::Relaxed),
            "skipped_api_busy": self.skipped.load(Ordering::Relaxed),
            "requests": self.requests.load(Ordering::Relaxed),
            "accepted": accepted,
            "accepted_per_second": round(accepted as f64 / seconds.max(1e-9), 2),
            "refused_then_retried": self.refused.load(Ordering::Relaxed),
            "retries_500": self.retry_500,
            "failed": self.failed.load(Ordering::Relaxed),
            "statuses": self.statuses.lock().unwrap_or_else(PoisonError::into_inner).clone(),
            "answer_ms_p50": round(quantile(&l, 0.5) / 1000.0, 1),
            "answer_ms_p99": round(quantile(&l, 0.99) / 1000.0, 1),
        })
    }
}

/// `x` to `digits` decimals (NaN stays NaN, printed as null).
fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The `q` quantile of sorted `v` (nearest rank), NaN when empty.
fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// Sends `body` to `url` with `auth` (a header name and value), retrying a 429 or 503 after its
/// `Retry-After` (1 s when it has none, at most 5 s; a 500 too with `retry_500` or for a stream
/// that says so: the lapsing raises and the preload, which must be raised to be measured) while
/// the next attempt would start before `until`; answers whether it was accepted (200).
async fn send(
    http: &reqwest::Client,
    url: &str,
    auth: (&str, &str),
    body: &Value,
    stream: &Stream,
    until: Instant,
    retry_500: bool,
) -> bool {
    let started = Instant::now();
    loop {
        stream.requests.fetch_add(1, Ordering::Relaxed);
        let answer = http
            .post(url)
            .header(auth.0, auth.1)
            .json(body)
            .timeout(Duration::from_secs(60))
            .send()
            .await;
        let status = answer.as_ref().map_or(0, |a| a.status().as_u16());
        *stream
            .statuses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(status)
            .or_default() += 1;
        match answer {
            Ok(a) if a.status().as_u16() == 200 => {
                stream.accepted.fetch_add(1, Ordering::Relaxed);
                stream
                    .latencies
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(started.elapsed().as_secs_f64() * 1e6);
                return true;
            }
            Ok(a)
                if matches!(a.status().as_u16(), 429 | 503)
                    || (a.status().as_u16() == 500 && (stream.retry_500 || retry_500)) =>
            {
                stream.refused.fetch_add(1, Ordering::Relaxed);
                let wait = Duration::from_secs(
                    a.headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<u64>().ok())
                        .unwrap_or(1)
                        .clamp(1, 5),
                );
                if Instant::now() + wait >= until {
                    stream.failed.fetch_add(1, Ordering::Relaxed);
                    return false;
                }
                tokio::time::sleep(wait).await;
            }
            Ok(_) | Err(_) => {
                stream.failed.fetch_add(1, Ordering::Relaxed);
                return false;
            }
        }
    }
}

/// A push from agent `agent`'s task `task` raising `each` (expectation id, shipment), all due at
/// `due` (epoch seconds) with no grace, each satisfied by its shipment's manifest.
fn push_body(task: &str, each: &[(String, String)], due: i64) -> Value {
    let expectations: Vec<Value> = each
        .iter()
        .map(|(id, shipment)| {
            json!({
                "expectationId": id, "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": shipment },
                "expects": format!("the airline manifest for {shipment}"),
                "satisfiedBy": { "factKey": format!("shipment.manifest.received:{shipment}") },
                "dueAt": instant(due), "grace": "PT0S", "basis": "observed"
            })
        })
        .collect();
    json!({ "artifactUpdate": {
        "taskId": task, "contextId": format!("ctx-{task}"),
        "artifact": {
            "artifactId": format!("artifact-{task}"),
            "parts": [{ "text": "booked" }],
            "extensions": [URI],
            "metadata": { URI: { "expectations": expectations } }
        }
    } })
}

/// The manifest fact of `shipment`, observed at `observed` (epoch seconds).
fn fact_body(shipment: &str, observed: i64) -> Value {
    json!({
        "factKey": format!("shipment.manifest.received:{shipment}"),
        "observedAt": instant(observed),
        "subject": { "type": "shipment", "id": shipment },
    })
}

/// An expectation id carrying its group (`s` steady, `b` burst, `k` backlog), a number and its
/// `dueAt` in epoch seconds, so each arrival is matched without a table.
fn lapsing_id(group: char, n: usize, due: i64) -> String {
    format!("{group}{n}-{due}")
}

/// The lapses due: expectation id → (group, dueAt).
type Due = Mutex<HashMap<String, (char, i64)>>;

/// Pushes `count` expectations for `agents` (round robin), `PER_PUSH` a push, all due at `due`,
/// group `group`; every accepted one is added to `due_set`.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site per group, each spelled out"
)]
async fn preload(
    http: &reqwest::Client,
    api: &str,
    group: char,
    count: usize,
    agents: &[usize],
    due: i64,
    due_set: &Arc<Due>,
    stream: &Arc<Stream>,
    in_flight: usize,
) {
    let sem = Arc::new(tokio::sync::Semaphore::new(in_flight.min(16)));
    // Retried until two seconds before the due instant: raised later, it would lapse late.
    let until = Instant::now()
        + Duration::from_secs_f64((due as f64 - epoch(SystemTime::now()) - 2.0).max(0.0));
    let mut tasks = Vec::new();
    let mut n = 0;
    let mut push_no = 0;
    while n < count {
        let agent = agent_id(agents[push_no % agents.len()]);
        let each: Vec<(String, String)> = (n..(n + PER_PUSH).min(count))
            .map(|j| (lapsing_id(group, j, due), format!("{group}-{j}")))
            .collect();
        n += each.len();
        let body = push_body(&format!("task-{group}-{push_no}"), &each, due);
        push_no += 1;
        let permit = sem.clone().acquire_owned().await;
        let (http, url, due_set, stream) = (
            http.clone(),
            format!("{api}/v1/agents/{agent}/push"),
            due_set.clone(),
            stream.clone(),
        );
        stream.offered.fetch_add(1, Ordering::Relaxed);
        tasks.push(tokio::spawn(async move {
            let _permit = permit;
            let token = format!("push-{agent}");
            if send(
                &http,
                &url,
                ("X-A2A-Notification-Token", &token),
                &body,
                &stream,
                until,
                false,
            )
            .await
            {
                let mut d = due_set.lock().unwrap_or_else(PoisonError::into_inner);
                for (id, _) in each {
                    d.insert(id, (group, due));
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}

/// The steady window: `rate` raises and `rate` facts a second for `seconds` over `agents`
/// (round robin), `lapse_rate` of the raises a second due `lead` seconds after they are sent
/// (the others due a day on, each satisfied by a fact about two seconds later); the lapsing
/// ones accepted go into `due_set`. Each stream keeps at most `in_flight` requests in flight:
/// when the API cannot keep up, the offered rate falls and the report says so.
#[allow(
    clippy::too_many_arguments,
    reason = "the window's parameters, each spelled out"
)]
async fn steady(
    http: &reqwest::Client,
    api: &str,
    o: &Options,
    agents: &[usize],
    due_set: &Arc<Due>,
    raises: &Arc<Stream>,
    facts: &Arc<Stream>,
    lead: i64,
) {
    let rate = o.rate();
    let lapse_every = rate / o.lapse_rate();
    let total = (rate * o.duration as f64).round() as usize;
    let start = Instant::now();
    // Which raises were accepted and satisfiable: the fact about them is sent then.
    let satisfiable: Arc<Mutex<HashSet<usize>>> = Arc::default();
    let raise_sem = Arc::new(tokio::sync::Semaphore::new(o.in_flight));
    let fact_sem = Arc::new(tokio::sync::Semaphore::new(o.in_flight));
    let fact_lag = 2.0;
    // Refused requests are retried until the window ends (a lapsing raise: until 2 s before
    // its due instant, below `lead`).
    let window_end = start + Duration::from_secs(o.duration);
    let mut tasks = Vec::new();
    let mut next_raise = 0usize;
    let mut next_fact = 0usize;
    while next_raise < total || next_fact < total {
        let t = start.elapsed().as_secs_f64();
        let raise_at = next_raise as f64 / rate;
        let fact_at = next_fact as f64 / rate + fact_lag;
        if next_raise < total && raise_at <= t {
            let i = next_raise;
            next_raise += 1;
            let agent_i = agents[i % agents.len()];
            let agent = agent_id(agent_i);
            let now = SystemTime::now();
            let now_s = epoch(now).floor() as i64;
            // The i-th raise lapses when it crosses a multiple of `lapse_every`.
            let lapsing = (i as f64 / lapse_every).floor() < ((i + 1) as f64 / lapse_every).floor();
            let (id, shipment, due) = if lapsing {
                let due = now_s + lead;
                (lapsing_id('s', i, due), format!("s-{i}"), due)
            } else {
                (format!("f{i}"), format!("f-{i}"), now_s + 86_400)
            };
            let body = push_body(&format!("task-s-{i}"), &[(id.clone(), shipment)], due);
            let until = if lapsing {
                Instant::now() + Duration::from_secs(u64::try_from(lead - 2).unwrap_or(0))
            } else {
                window_end
            };
            let Ok(permit) = raise_sem.clone().try_acquire_owned() else {
                // The API has `in_flight` raises unanswered: this one is not sent.
                raises.offered.fetch_add(1, Ordering::Relaxed);
                raises.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let (http, url, due_set, stream, sat) = (
                http.clone(),
                format!("{api}/v1/agents/{agent}/push"),
                due_set.clone(),
                raises.clone(),
                satisfiable.clone(),
            );
            stream.offered.fetch_add(1, Ordering::Relaxed);
            tasks.push(tokio::spawn(async move {
                let _permit = permit;
                let token = format!("push-{agent}");
                if send(
                    &http,
                    &url,
                    ("X-A2A-Notification-Token", &token),
                    &body,
                    &stream,
                    until,
                    lapsing,
                )
                .await
                {
                    if lapsing {
                        due_set
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(id, ('s', due));
                    } else {
                        sat.lock().unwrap_or_else(PoisonError::into_inner).insert(i);
                    }
                }
            }));
            continue;
        }
        if next_fact < total && fact_at <= t {
            let j = next_fact;
            next_fact += 1;
            let agent_j = agents[j % agents.len()];
            let tenant = agent_j % o.tenants;
            // The fact about raise j when it was accepted and is to be met; else a fact about a
            // shipment nothing expects (the same request, satisfying nothing).
            let shipment = if satisfiable
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&j)
            {
                format!("f-{j}")
            } else {
                format!("n-{j}")
            };
            let body = fact_body(&shipment, epoch(SystemTime::now()).floor() as i64);
            let until = window_end;
            let Ok(permit) = fact_sem.clone().try_acquire_owned() else {
                facts.offered.fetch_add(1, Ordering::Relaxed);
                facts.skipped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            let (http, url, stream) = (http.clone(), format!("{api}/v1/facts"), facts.clone());
            stream.offered.fetch_add(1, Ordering::Relaxed);
            tasks.push(tokio::spawn(async move {
                let _permit = permit;
                let token = format!("Bearer src-goal-t{tenant}");
                send(
                    &http,
                    &url,
                    ("Authorization", &token),
                    &body,
                    &stream,
                    until,
                    false,
                )
                .await;
            }));
            continue;
        }
        let next = raise_at.min(fact_at);
        let wait = (next - start.elapsed().as_secs_f64()).clamp(0.0, 0.05);
        tokio::time::sleep(Duration::from_secs_f64(wait.max(0.0005))).await;
        tasks.retain(|t| !t.is_finished());
    }
    for t in tasks {
        let _ = t.await;
    }
}

// ------------------------------------------------------------------------------------------
// The report.

/// Lateness figures of one group of lapses, seconds after `dueAt`.
#[derive(Debug, Clone)]
pub struct Lateness {
    /// Lapses due (accepted raises whose `dueAt` passed).
    pub due: usize,
    /// Of them, arrived at their agent.
    pub arrived: usize,
    /// p50, p99 and max of arrival − `dueAt` (first arrival of each), seconds.
    pub p50: f64,
    /// p99.
    pub p99: f64,
    /// max.
    pub max: f64,
}

/// Everything one run measured.
#[derive(Debug)]
pub struct Report {
    /// The whole report as JSON (the JSON line's `goal_load`).
    pub json: Value,
    lost: usize,
    twice: usize,
    text: String,
}

impl Report {
    /// Due lapses that never arrived.
    pub fn lost(&self) -> usize {
        self.lost
    }

    /// `messageId`s that arrived more than once (each extra arrival counted).
    pub fn sent_twice(&self) -> usize {
        self.twice
    }

    /// The human table.
    pub fn table(&self) -> String {
        self.text.clone()
    }

    /// `{"goal_load": {...}}`, one line.
    pub fn json_line(&self) -> String {
        json!({ "goal_load": self.json }).to_string()
    }
}

/// From the stack's log: each function's runs and billed milliseconds (its `REPORT` lines), the
/// runs Scheduler invoked (`Event: schedule`: the deadlines' schedules and the sweep), and the
/// bytes the functions logged.
fn runs_of(log: &Path) -> (BTreeMap<String, (usize, f64)>, usize, u64) {
    let mut runs: BTreeMap<String, (usize, f64)> = BTreeMap::new();
    let mut bytes = 0u64;
    let mut scheduled = 0;
    let Ok(f) = std::fs::File::open(log) else {
        return (runs, scheduled, bytes);
    };
    for line in BufReader::new(f).lines().map_while(Result::ok) {
        let Some(rest) = line.strip_prefix('[') else {
            continue;
        };
        let Some((name, text)) = rest.split_once("] ") else {
            continue;
        };
        if name == "aws-local" {
            continue;
        }
        bytes += line.len() as u64 + 1;
        if let Some(r) = text.strip_prefix("REPORT ") {
            let billed = r
                .split("Billed Duration: ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|s| s.parse::<f64>().ok())
                .unwrap_or(0.0);
            let e = runs.entry(name.to_owned()).or_default();
            e.0 += 1;
            e.1 += billed;
            if r.ends_with("Event: schedule") {
                scheduled += 1;
            }
        }
    }
    (runs, scheduled, bytes)
}

/// Lambda's concurrency as the stack said when it stopped (infra/aws_local/scale.py `report`:
/// `Lambda: peak concurrency P of A; throttles {...}`), as the resource
/// `aws-local:lambda:concurrency` (its limit the account's concurrency at 1/K).
fn lambda_of(log: &Path, model: &mut Model) {
    let Ok(text) = std::fs::read_to_string(log) else {
        return;
    };
    let Some(line) = text
        .lines()
        .rev()
        .find_map(|l| l.split_once("Lambda: peak concurrency ").map(|(_, r)| r))
    else {
        return;
    };
    let mut words = line.split_whitespace();
    let peak = words.next().and_then(|w| w.parse::<f64>().ok());
    let limit = words
        .nth(1)
        .and_then(|w| w.trim_end_matches(';').parse::<f64>().ok());
    // `{'api': 3877, 'timer': 11}`, or `none`; then `first ('api', 26.984)` when any.
    let throttles: f64 = line
        .split_once("throttles {")
        .and_then(|(_, t)| t.split_once('}'))
        .map(|(t, _)| {
            t.split(',')
                .filter_map(|kv| kv.rsplit(':').next()?.trim().parse::<f64>().ok())
                .sum()
        })
        .unwrap_or(0.0);
    let first = line
        .split_once("first (")
        .and_then(|(_, f)| f.split_once(')'))
        .and_then(|(f, _)| f.rsplit(',').next()?.trim().parse::<f64>().ok());
    if let (Some(peak), Some(limit)) = (peak, limit) {
        model.resources.insert(
            "aws-local:lambda:concurrency".to_owned(),
            Resource {
                calls: 0.0,
                refusals: throttles,
                peak,
                limit,
                total: None,
                unit: "concurrent executions".to_owned(),
                // Seconds after the stack set its limits up, as the emulators' `first_refusal`.
                first_refusal: first,
            },
        );
    }
}

/// The functions' memory in GB: `template.yaml`'s `MemorySize` (Globals), else 0.128.
fn memory_gb() -> f64 {
    std::fs::read_to_string(root().join("template.yaml"))
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.trim()
                    .strip_prefix("MemorySize:")?
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
        })
        .map_or(0.128, |mb| mb / 1024.0)
}

/// The cost of what was counted, at `docs/prices.toml`: each line, the total, and the total per
/// million expectations raised.
fn cost(
    model: &Model,
    api_requests: usize,
    runs: &BTreeMap<String, (usize, f64)>,
    scheduled: usize,
    log_bytes: u64,
    expectations: usize,
) -> anyhow::Result<Value> {
    let prices: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join("docs/prices.toml"))?)?;
    let p = |k: &str| {
        prices["price"]
            .get(k)
            .and_then(toml::Value::as_float)
            .unwrap_or(f64::NAN)
    };
    // What the model counted, by what it prices: DynamoDB units (each table's read and write
    // meters, when the state gives their totals), SQS requests (every queue's actions).
    let units = |suffix: &str| -> Option<f64> {
        let tables: Vec<&Resource> = model
            .resources
            .iter()
            .filter(|(k, _)| k.starts_with("dynamodb:") && k.ends_with(suffix))
            .map(|(_, r)| r)
            .collect();
        (!tables.is_empty() && tables.iter().all(|r| r.total.is_some()))
            .then(|| tables.iter().filter_map(|r| r.total).sum())
    };
    let wru = units(":write");
    let rru = units(":read");
    let sqs_meters: Vec<&Resource> = model
        .resources
        .iter()
        .filter(|(k, _)| k.starts_with("sqs:") && !k.ends_with(":backlog-window"))
        .map(|(_, r)| r)
        .collect();
    let sqs = (!sqs_meters.is_empty()).then(|| sqs_meters.iter().map(|r| r.calls).sum());
    // Scheduler's invocations: the deadlines' schedules deliver to the timer queue (their
    // target in template.yaml), so each is one `SendMessage` there (the functions send batches,
    // `SendMessageBatch`); the sweep's invokes the timer function (`Event: schedule` runs).
    let to_timer_queue: f64 = model
        .resources
        .iter()
        .filter(|(k, _)| k.starts_with("sqs:") && k.ends_with("TimerQueue:SendMessage"))
        .map(|(_, r)| r.calls)
        .sum();
    let sched = Some(to_timer_queue + scheduled as f64);
    let lambda_runs: usize = runs.values().map(|r| r.0).sum();
    let gb_s: f64 = runs.values().map(|r| r.1 / 1000.0).sum::<f64>() * memory_gb();
    let mut lines = vec![
        (
            "api_gateway",
            Some(api_requests as f64),
            p("api_gateway_per_million_requests") / 1e6,
        ),
        (
            "lambda_requests",
            Some(lambda_runs as f64),
            p("lambda_per_million_requests") / 1e6,
        ),
        ("lambda_gb_seconds", Some(gb_s), p("lambda_per_gb_second")),
        ("dynamodb_wru", wru, p("dynamodb_per_million_wru") / 1e6),
        ("dynamodb_rru", rru, p("dynamodb_per_million_rru") / 1e6),
        (
            "scheduler_invocations",
            sched,
            p("scheduler_per_million_invocations") / 1e6,
        ),
        (
            "sqs_requests",
            sqs,
            p("sqs_fifo_per_million_requests") / 1e6,
        ),
    ];
    lines.push(("logs_gb", Some(log_bytes as f64 / 1e9), p("logs_per_gb")));
    let mut out = serde_json::Map::new();
    let mut total = 0.0;
    let mut missing = Vec::new();
    for (name, count, price) in lines {
        match count {
            Some(c) => {
                total += c * price;
                out.insert(
                    name.into(),
                    json!({ "counted": round(c, 3), "usd": round(c * price, 6) }),
                );
            }
            None => missing.push(name),
        }
    }
    Ok(json!({
        "lines": out,
        "not_counted": missing,
        "total_usd": round(total, 6),
        "expectations_raised": expectations,
        "usd_per_million_expectations": if expectations > 0 { json!(round(total / expectations as f64 * 1e6, 2)) } else { Value::Null },
    }))
}

/// Runs the goal load once and answers what it measured.
///
/// # Errors
/// The stack not starting, a port taken, the configuration not written.
pub async fn run(o: &Options) -> anyhow::Result<Report> {
    let ports = Ports {
        api: port_or_free(o.api_port)?,
        agents: port_or_free(o.agents_port)?,
        moto: port_or_free(o.moto_port)?,
        dynamodb: port_or_free(o.dynamodb_port)?,
    };
    let dir = tempfile::Builder::new().prefix("goal-load").tempdir()?;
    // The agents first: the functions read their cards when they start.
    let agents = Arc::new(Agents::default());
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", ports.agents))
        .await
        .with_context(|| format!("the agents' port {} is taken", ports.agents))?;
    let app = Router::new()
        .route("/a/{agent}", post(agent_rpc))
        .with_state(agents.clone());
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    let agents_url = format!("http://127.0.0.1:{}", ports.agents);
    let config_path = dir.path().join("watcher.toml");
    std::fs::write(&config_path, config(o, dir.path(), &agents_url)?)?;
    let log = o
        .log
        .clone()
        .unwrap_or_else(|| target_dir().join("goal-load-aws-local.log"));
    let machine = machine();
    eprintln!(
        "goal_load: K {}, {} agents over {} tenants, {}/s raises and facts for {} s, {:.3} lapses/s, \
         burst {}, backlog {}; starting the local AWS stack (log {})",
        o.scale,
        o.agents(),
        o.tenants,
        o.rate(),
        o.duration,
        o.lapse_rate(),
        o.burst(),
        o.backlog(),
        log.display()
    );
    let scaled = scale_supported();
    let stack = {
        let (o, config_path, log) = (o.clone(), config_path.clone(), log.clone());
        tokio::task::spawn_blocking(move || Stack::start(&o, &config_path, &ports, &log)).await??
    };
    let api = format!("http://127.0.0.1:{}", ports.api);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let bases = vec![
        (
            "sqs-scheduler".to_owned(),
            format!("http://127.0.0.1:{}", ports.moto),
        ),
        (
            "dynamodb".to_owned(),
            format!("http://127.0.0.1:{}", ports.dynamodb),
        ),
    ];
    if !scaled {
        // This aws-local has no `--scale`: the limits part is configured here, on each emulator
        // (`POST /_model/limits`, infra/aws_model/limits.py), as `--scale` would.
        for (name, base) in &bases {
            let answer = http
                .post(format!("{base}/_model/limits"))
                .json(&json!({ "k": o.scale }))
                .send()
                .await;
            match answer {
                Ok(a) if a.status().is_success() => {}
                Ok(a) => eprintln!(
                    "goal_load: the {name} emulator's limits part answered {}",
                    a.status()
                ),
                Err(e) => eprintln!("goal_load: the {name} emulator's limits part: {e}"),
            }
        }
    }
    let run_start = Instant::now();
    let model = Arc::new(Mutex::new(Model::default()));
    let reading = {
        let (http, model, bases) = (http.clone(), model.clone(), bases.clone());
        tokio::spawn(async move {
            loop {
                read_model(&http, &bases, &model, run_start.elapsed().as_secs_f64()).await;
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        })
    };

    // The backlog's agent is the last; the others take the steady load and the burst.
    let n = o.agents();
    let backlog_agent = n - 1;
    let others: Vec<usize> = (0..backlog_agent).collect();
    let due_set: Arc<Due> = Arc::default();
    let raises = Arc::new(Stream::default());
    let facts = Arc::new(Stream::default());
    let preload_stream = Arc::new(Stream {
        retry_500: true,
        ..Stream::default()
    });

    // The preload: the burst's and the backlog's expectations. Their dues are set from how
    // long one push of `PER_PUSH` takes, measured first, so that every one is raised before it
    // is due: the backlog 20 s into the steady window, the burst halfway (at least 30 s in).
    let probe_start = Instant::now();
    let probe = Arc::new(Stream::default());
    send(
        &http,
        &format!("{api}/v1/agents/{}/push", agent_id(0)),
        ("X-A2A-Notification-Token", &format!("push-{}", agent_id(0))),
        &push_body(
            "task-probe",
            &(0..PER_PUSH)
                .map(|j| (format!("p{j}"), format!("p-{j}")))
                .collect::<Vec<_>>(),
            epoch(SystemTime::now()) as i64 + 86_400,
        ),
        &probe,
        Instant::now() + Duration::from_secs(30),
        false,
    )
    .await;
    let per_push = probe_start.elapsed().as_secs_f64();
    let pushes = (o.burst() + o.backlog()).div_ceil(PER_PUSH) as f64;
    // Pushes run 16 at a time, but the stack serves them about two at a time on this machine.
    let estimate = pushes * per_push / 2.0 + 20.0;
    let t0 = epoch(SystemTime::now()) + estimate;
    let backlog_due = (t0 + 20.0).ceil() as i64;
    let burst_due = (t0 + (o.duration as f64 / 2.0).max(30.0)).ceil() as i64;
    eprintln!(
        "goal_load: preload of {} pushes (one took {:.2} s): backlog due at {}, burst at {}",
        pushes,
        per_push,
        instant(backlog_due),
        instant(burst_due)
    );
    let preload_start = Instant::now();
    preload(
        &http,
        &api,
        'b',
        o.burst(),
        &others,
        burst_due,
        &due_set,
        &preload_stream,
        o.in_flight,
    )
    .await;
    preload(
        &http,
        &api,
        'k',
        o.backlog(),
        &[backlog_agent],
        backlog_due,
        &due_set,
        &preload_stream,
        o.in_flight,
    )
    .await;
    let preload_secs = preload_start.elapsed().as_secs_f64();
    // Raised after its `dueAt`: the backlog's lateness would then include the raise's.
    let late_raised = epoch(SystemTime::now()) > backlog_due as f64;

    // The steady window.
    eprintln!(
        "goal_load: preload done in {preload_secs:.1} s; the steady window ({} s)",
        o.duration
    );
    let steady_start = Instant::now();
    steady(&http, &api, o, &others, &due_set, &raises, &facts, 20).await;
    let steady_secs = steady_start.elapsed().as_secs_f64();

    // Waiting for the lapses: until every due one arrived, or `patience` after the last due.
    let last_due = due_set
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .values()
        .map(|(_, d)| *d)
        .max()
        .unwrap_or(0);
    eprintln!("goal_load: steady window done in {steady_secs:.1} s; waiting for the lapse tasks");
    let give_up = last_due as f64 + o.patience as f64;
    loop {
        let arrived: HashSet<String> = agents
            .arrivals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|a| a.expectation_id.clone())
            .collect();
        let missing = due_set
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .filter(|id| !arrived.contains(*id))
            .count();
        let now = epoch(SystemTime::now());
        if (missing == 0 && now > last_due as f64) || now > give_up {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // A little longer, so a second sending of the last ones would be seen.
    tokio::time::sleep(Duration::from_secs(10)).await;
    read_model(&http, &bases, &model, run_start.elapsed().as_secs_f64()).await;
    reading.abort();
    let run_secs = run_start.elapsed().as_secs_f64();
    drop(stack);
    server.abort();

    // Lateness, lost, twice.
    let arrivals = agents
        .arrivals
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let due = due_set
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let mut first: HashMap<&str, SystemTime> = HashMap::new();
    let mut ids: HashMap<&str, usize> = HashMap::new();
    for a in &arrivals {
        *ids.entry(a.message_id.as_str()).or_default() += 1;
        let e = first.entry(a.expectation_id.as_str()).or_insert(a.at);
        if a.at < *e {
            *e = a.at;
        }
    }
    let twice: usize = ids.values().map(|c| c - 1).sum();
    let unexpected = first.keys().filter(|id| !due.contains_key(**id)).count();
    let mut groups: BTreeMap<char, (usize, Vec<f64>)> = BTreeMap::new();
    for (id, (g, d)) in &due {
        let e = groups.entry(*g).or_default();
        e.0 += 1;
        if let Some(at) = first.get(id.as_str()) {
            e.1.push(epoch(*at) - *d as f64);
        }
    }
    let mut all = Vec::new();
    let mut lateness = BTreeMap::new();
    let mut lost = 0;
    for (g, (n_due, mut l)) in groups {
        l.sort_by(f64::total_cmp);
        lost += n_due - l.len();
        all.extend_from_slice(&l);
        let name = match g {
            's' => "steady",
            'b' => "burst",
            _ => "backlog",
        };
        lateness.insert(
            name.to_owned(),
            Lateness {
                due: n_due,
                arrived: l.len(),
                p50: quantile(&l, 0.5),
                p99: quantile(&l, 0.99),
                max: l.last().copied().unwrap_or(f64::NAN),
            },
        );
    }
    all.sort_by(f64::total_cmp);
    lateness.insert(
        "all".to_owned(),
        Lateness {
            due: due.len(),
            arrived: all.len(),
            p50: quantile(&all, 0.5),
            p99: quantile(&all, 0.99),
            max: all.last().copied().unwrap_or(f64::NAN),
        },
    );

    // The model: every resource's share of its limit, and which was refused first.
    let mut model = std::mem::take(&mut *model.lock().unwrap_or_else(PoisonError::into_inner));
    lambda_of(&log, &mut model);
    let mut resources: Vec<(&String, &Resource)> = model.resources.iter().collect();
    resources.sort_by(|a, b| {
        let share = |r: &Resource| if r.limit > 0.0 { r.peak / r.limit } else { 0.0 };
        share(b.1).total_cmp(&share(a.1))
    });
    // What was refused first: the earliest `first_refusal` of the emulators' states (seconds
    // since the stack configured the model, at its start); else the first the driver saw in
    // its reads once a second (seconds since the load began).
    let lambda_name = "aws-local".to_owned();
    let first_throttled = model
        .states
        .iter()
        .filter_map(|(emulator, st)| {
            let f = st.get("first_refusal").filter(|f| f.is_object())?;
            Some((emulator, f.clone(), f["seconds"].as_f64()?))
        })
        .chain(
            model
                .resources
                .get("aws-local:lambda:concurrency")
                .and_then(|r| r.first_refusal)
                .map(|t| {
                    (
                        &lambda_name,
                        json!({ "resource": "lambda:concurrency", "kind": "throttle",
                                "seconds": t }),
                        t,
                    )
                }),
        )
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(emulator, f, _)| {
            json!({ "emulator": emulator, "resource": f["resource"], "kind": f["kind"],
                    "seconds_after_start": f["seconds"] })
        })
        .or_else(|| {
            model
                .resources
                .iter()
                .filter_map(|(k, r)| Some((k, r.first_refusal?)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(k, t)| json!({ "resource": k, "seconds_into_load": round(t, 1) }))
        });
    let (runs, scheduled, log_bytes) = runs_of(&log);
    let api_requests = raises.requests.load(Ordering::Relaxed)
        + facts.requests.load(Ordering::Relaxed)
        + preload_stream.requests.load(Ordering::Relaxed)
        + probe.requests.load(Ordering::Relaxed);
    let expectations = raises.accepted.load(Ordering::Relaxed)
        + (preload_stream.accepted.load(Ordering::Relaxed)
            + probe.accepted.load(Ordering::Relaxed))
            * PER_PUSH;
    let cost = cost(
        &model,
        api_requests,
        &runs,
        scheduled,
        log_bytes,
        expectations,
    )?;

    let lat_json: serde_json::Map<String, Value> = lateness
        .iter()
        .map(|(k, l)| {
            (
                k.clone(),
                json!({ "due": l.due, "arrived": l.arrived, "p50_s": round(l.p50, 3),
                        "p99_s": round(l.p99, 3), "max_s": round(l.max, 3) }),
            )
        })
        .collect();
    let res_json: Vec<Value> = resources
        .iter()
        .map(|(k, r)| {
            json!({ "resource": k, "calls": r.calls, "refusals": r.refusals,
                    "peak_per_s": round(r.peak, 3), "limit_per_s": r.limit, "unit": r.unit,
                    "share": if r.limit > 0.0 { json!(round(r.peak / r.limit, 4)) } else { Value::Null },
                    "first_refusal_s": r.first_refusal.map(|t| round(t, 1)) })
        })
        .collect();
    let json = json!({
        "date": jiff::Timestamp::now().strftime("%Y-%m-%d").to_string(),
        "machine": machine,
        "scale": o.scale,
        "model_limits_on": !model.states.is_empty()
            && model.states.values().all(|s| s["configured"] == true),
        "scale_flag": scaled,
        "short": o.short,
        "agents": n,
        "tenants": o.tenants.min(n),
        "goal_at_scale": { "raises_per_s": o.rate(), "facts_per_s": o.rate(),
                            "lapses_per_s": round(o.lapse_rate(), 4), "burst": o.burst(),
                            "backlog": o.backlog(), "duration_s": o.duration },
        "visibility_timeout_cap_s": o.visibility_cap,
        "sweep_every_s": o.rate_cap.unwrap_or(300),
        "seconds": { "preload": round(preload_secs, 1), "steady": round(steady_secs, 1), "run": round(run_secs, 1) },
        "raises": raises.summary(steady_secs),
        "facts": facts.summary(steady_secs),
        "preload": preload_stream.summary(preload_secs),
        "raised_after_due": late_raised,
        "lateness": lat_json,
        "lost": lost,
        "sent_twice": twice,
        "unexpected_lapses": unexpected,
        "other_agent_requests": agents.other.load(Ordering::Relaxed),
        "agent_lookups": agents.lookups.load(Ordering::Relaxed),
        "resources": res_json,
        "throttled_first": first_throttled,
        "function_runs": runs.iter().map(|(k, v)| (k.clone(), json!({ "runs": v.0, "billed_s": round(v.1 / 1000.0, 2) }))).collect::<serde_json::Map<_, _>>(),
        "cost": cost,
        "model_states": model.states,
    });
    let text = table(&json);
    Ok(Report {
        json,
        lost,
        twice,
        text,
    })
}

/// `nproc` and `lscpu`'s model name.
fn machine() -> Value {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|(_, m)| m.trim().to_owned())
            })
        })
        .unwrap_or_default();
    json!({ "cores": cores, "cpu": model })
}

/// The human table of a report's JSON.
fn table(j: &Value) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "goal load at K = {} ({} agents, {} tenants; model limits {}): {} on {} cores ({})",
        j["scale"],
        j["agents"],
        j["tenants"],
        if j["model_limits_on"] == true {
            "on"
        } else {
            "NOT on"
        },
        j["date"].as_str().unwrap_or(""),
        j["machine"]["cores"],
        j["machine"]["cpu"].as_str().unwrap_or("")
    );
    for k in ["raises", "facts", "preload"] {
        let r = &j[k];
        let _ = writeln!(
            s,
            "  {k:8} offered {:>7} accepted {:>7} ({}/s) refused, sent again {:>5} failed {:>5} answer p50 {} ms p99 {} ms",
            r["offered"], r["accepted"], r["accepted_per_second"], r["refused_then_retried"], r["failed"],
            r["answer_ms_p50"], r["answer_ms_p99"]
        );
    }
    let _ = writeln!(s, "  lapse lateness (arrival − dueAt), seconds:");
    if let Some(m) = j["lateness"].as_object() {
        for (k, l) in m {
            let _ = writeln!(
                s,
                "    {k:8} due {:>6} arrived {:>6}  p50 {:>8} p99 {:>8} max {:>8}",
                l["due"], l["arrived"], l["p50_s"], l["p99_s"], l["max_s"]
            );
        }
    }
    let _ = writeln!(s, "  lost {}  sent twice {}", j["lost"], j["sent_twice"]);
    let _ = writeln!(s, "  resources (peak rate / limit at 1/K; refusals):");
    if let Some(l) = j["resources"].as_array() {
        for r in l {
            let _ = writeln!(
                s,
                "    {:56} share {:>8} peak {:>9}/s limit {:>9} calls {:>8} refusals {:>6}",
                r["resource"].as_str().unwrap_or(""),
                r["share"],
                r["peak_per_s"],
                r["limit_per_s"],
                r["calls"],
                r["refusals"]
            );
        }
    }
    let _ = writeln!(s, "  throttled first: {}", j["throttled_first"]);
    let _ = writeln!(
        s,
        "  cost: ${} for {} expectations = ${} per million (not counted: {})",
        j["cost"]["total_usd"],
        j["cost"]["expectations_raised"],
        j["cost"]["usd_per_million_expectations"],
        j["cost"]["not_counted"]
    );
    s
}
