//! Helpers for the `serve` integration tests: a real `a2a-watcher serve` child process per test
//! (its own temporary folder, SQLite file and port), a capture agent standing in for the booking
//! agent, polling helpers instead of sleeps, and builders for artifacts due a few seconds from now.
//!
//! Each test binary uses a different subset of these helpers.
#![allow(
    dead_code,
    reason = "each test binary uses its own part of this module"
)]

pub mod aws_stack;
pub mod skip;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use reqwest::header::CONTENT_TYPE;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use watcher_delivery::testing::{CaptureAgent, CapturedRequest};

/// The expectations extension's URI.
pub const URI: &str = "https://rsaxb.com/a2a/expectations/v1";
/// The booking agent's push token.
pub const PUSH_TOKEN: &str = "push-token-booking";
/// The carrier feed's source token.
pub const SOURCE_TOKEN: &str = "src-token-carrier";
/// The source id recorded on facts reported with [`SOURCE_TOKEN`].
pub const SOURCE_ID: &str = "carrier-feed:emirates";
/// The operator's token.
pub const OPERATOR_TOKEN: &str = "ops-token-desk";
/// The subject of the booking artifact.
pub const SHIPMENT: &str = "PA-2026-0901";

/// The teacher `dana`'s token in [`TEACHER_TOML`].
pub const TEACHER_TOKEN: &str = "teacher-token-dana";
/// The teacher `dana` (bearer [`TEACHER_TOKEN`]), as configuration.
pub const TEACHER_TOML: &str = "[[teachers]]\nid = \"dana\"\ntoken = \"teacher-token-dana\"\n";

/// A `[[table]]` entry (TOML) with `id` and the bearer `token`: a source, an operator or a
/// teacher. Keys and tables of its own may follow.
pub fn entry_toml(table: &str, id: &str, token: &str) -> String {
    format!("[[{table}]]\nid = \"{id}\"\ntoken = \"{token}\"\n")
}

/// An `[[agents]]` entry (TOML) for agent `id` with the card [`spawn_watcher`] writes
/// (`booking-card.json`), at `endpoint`, pushing with `push_token`. Keys of its own may follow.
pub fn agent_toml(id: &str, endpoint: &str, push_token: &str) -> String {
    format!(
        "[[agents]]\nid = \"{id}\"\ncard = \"booking-card.json\"\nendpoint = \"{endpoint}\"\npush_token = \"{push_token}\"\n"
    )
}

/// Writes `examples/booking-card.json`, its JSONRPC interface at `url`, to `dir/{id}-card.json`,
/// and returns the file's path.
///
/// # Panics
/// When the folder cannot be written (a test's own temporary folder).
pub fn card_file(dir: &Path, id: &str, url: &str) -> PathBuf {
    let mut card: Value = serde_json::from_str(include_str!("../../examples/booking-card.json"))
        .expect("examples/booking-card.json is JSON");
    card["supportedInterfaces"][0]["url"] = json!(url);
    let path = dir.join(format!("{id}-card.json"));
    std::fs::write(&path, card.to_string()).expect("write the card");
    path
}

/// An `[[agents]]` entry (TOML) for agent `id` answering at `url`: its card written by
/// [`card_file`] into `dir`, `endpoint` = `url`, pushing with `push_token`, then `extra` (keys,
/// one per line, or empty).
pub fn agent_with_card(dir: &Path, id: &str, url: &str, push_token: &str, extra: &str) -> String {
    format!(
        "[[agents]]\nid = \"{id}\"\ncard = \"{card}\"\nendpoint = \"{url}\"\npush_token = \"{push_token}\"\n{extra}\n",
        card = card_file(dir, id, url).display(),
    )
}

/// A source's webhook mapping (TOML, for the source table above it) that turns
/// `{"event": "departed", "shipment": ID, "at": INSTANT}` into the departure fact of shipment ID.
pub const DEPARTED_MAPPING: &str = r#"[[sources.mappings]]
name = "departed"
when = { pointer = "/event", equals = "departed" }
fact_key = "shipment.departed:{/shipment}"
observed_at = "/at"
subject = { type = "shipment", id = "{/shipment}" }
"#;

/// How long `serve` may take to print `listening on`.
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `a2a-watcher serve` child. Killed (SIGKILL) when dropped; its stderr (the logs) is
/// kept in `dir/serve.log` and printed when the test panics.
pub struct Watcher {
    /// `http://127.0.0.1:PORT`.
    pub base_url: String,
    /// The child process; `None` after [`Watcher::kill`].
    pub child: Option<Child>,
    /// The temporary folder holding the configuration, the card, the database and the log.
    pub dir: tempfile::TempDir,
    config: PathBuf,
    http: reqwest::Client,
    /// Environment variables `serve` is started with (from the next [`Watcher::start`] on).
    pub env: Vec<(String, String)>,
}

/// Writes a configuration into a new temporary folder and starts `serve` on it.
///
/// The configuration: `listen = "127.0.0.1:0"`, the database in the folder, `config_toml_extra`
/// (top-level keys or whole tables, e.g. another `[[agents]]`), the source [`SOURCE_TOKEN`], the
/// booking agent (the card `booking-card.json` written into the folder with its JSONRPC
/// interface at `agent`, `endpoint` = `agent`'s URL, push token [`PUSH_TOKEN`]) and the operator
/// [`OPERATOR_TOKEN`].
///
/// The booking agent has `reconcile = false`: the capture agent answers `GetTask` as its
/// behaviour says, so origin-task reconciliation would add requests these tests do not expect.
/// [`spawn_watcher_with`] gives the booking entry other settings (tests/serve_reconcile.rs).
pub async fn spawn_watcher(agent: &CaptureAgent, config_toml_extra: &str) -> Watcher {
    spawn_watcher_with(agent, config_toml_extra, "reconcile = false").await
}

/// [`spawn_watcher`] with `booking_extra` (keys) in the booking agent's `[[agents]]` entry
/// instead of `reconcile = false`.
pub async fn spawn_watcher_with(
    agent: &CaptureAgent,
    config_toml_extra: &str,
    booking_extra: &str,
) -> Watcher {
    let dir = temp_dir();
    card_file(dir.path(), "booking", &agent.url());
    let config = format!(
        r#"listen = "127.0.0.1:0"
database = "watcher.db"

{config_toml_extra}

{source}
{booking}{booking_extra}

{operator}"#,
        source = entry_toml("sources", SOURCE_ID, SOURCE_TOKEN),
        booking = agent_toml("booking", &agent.url(), PUSH_TOKEN),
        operator = entry_toml("operators", "ops-desk", OPERATOR_TOKEN),
    );
    Watcher::spawn_in(dir, &config).await
}

/// Starts `serve` on `config` (a whole watcher.toml, relative paths against a new temporary
/// folder), for tests whose agents are not the capture agent (tests/interop_sdk.rs).
pub async fn spawn_watcher_with_config(config: &str) -> Watcher {
    Watcher::spawn_in(temp_dir(), config).await
}

/// A new temporary folder for one `serve`.
fn temp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("a2a-watcher-serve-test")
        .tempdir()
        .expect("create a temporary folder")
}

impl Watcher {
    /// Writes `config` as `dir/watcher.toml` and starts `serve` on it.
    async fn spawn_in(dir: tempfile::TempDir, config: &str) -> Watcher {
        let config_path = dir.path().join("watcher.toml");
        std::fs::write(&config_path, config).expect("write the configuration");
        let mut watcher = Watcher {
            base_url: String::new(),
            child: None,
            dir,
            config: config_path,
            http: reqwest::Client::new(),
            env: Vec::new(),
        };
        watcher.start().await;
        watcher
    }

    /// Starts `serve` on this watcher's configuration (and so its database), on a new port, and
    /// waits for its `listening on` line.
    ///
    /// # Panics
    /// When a child is still running, or `serve` does not print the line within 30 s.
    pub async fn start(&mut self) {
        assert!(self.child.is_none(), "serve is already running");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("serve.log"))
            .expect("open serve.log");
        let mut child = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
            .arg("serve")
            .arg("--config")
            .arg(&self.config)
            // A test may ask for more (tests/serve_secrets.rs runs at trace).
            .env(
                "RUST_LOG",
                std::env::var("A2A_TEST_SERVE_LOG").unwrap_or("info,tower_http=warn".into()),
            )
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(log))
            .kill_on_drop(true)
            .spawn()
            .expect("start a2a-watcher serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let found = tokio::time::timeout(START_TIMEOUT, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("listening on ") {
                    return Some(url.trim().to_owned());
                }
            }
            None
        })
        .await;
        let url = match found {
            Ok(Some(url)) => url,
            Ok(None) => panic!("serve exited before listening:\n{}", self.log()),
            Err(_) => panic!(
                "serve did not print `listening on` within {START_TIMEOUT:?}:\n{}",
                self.log()
            ),
        };
        // Keep reading stdout so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.base_url = url;
        self.child = Some(child);
    }

    /// Kills the child with SIGKILL (no graceful shutdown) and reaps it.
    pub async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().await.expect("kill serve");
        }
    }

    /// Kills the child and starts `serve` again on the same configuration and database.
    pub async fn restart(&mut self) {
        self.kill().await;
        self.start().await;
    }

    /// What `serve` wrote on stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("serve.log")).unwrap_or_default()
    }

    /// `base_url` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url)
    }

    /// The HTTP client.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// `POST /v1/agents/booking/push` with the push token in `X-A2A-Notification-Token`.
    pub async fn push(&self, body: &Value) -> Answer {
        let req = self
            .http
            .post(self.url("/v1/agents/booking/push"))
            .header("X-A2A-Notification-Token", PUSH_TOKEN)
            .json(body);
        Answer::of(req).await
    }

    /// `POST /v1/agents/{agent}/push` with `token` in `X-A2A-Notification-Token`.
    pub async fn push_as(&self, agent: &str, token: &str, body: &Value) -> Answer {
        let req = self
            .http
            .post(self.url(&format!("/v1/agents/{agent}/push")))
            .header("X-A2A-Notification-Token", token)
            .json(body);
        Answer::of(req).await
    }

    /// `POST /v1/facts` as the carrier feed.
    pub async fn report(&self, body: &Value) -> Answer {
        self.send_as(reqwest::Method::POST, "/v1/facts", SOURCE_TOKEN, body)
            .await
    }

    /// `method path` with `token` as the bearer and the JSON `body`.
    pub async fn send_as(
        &self,
        method: reqwest::Method,
        path: &str,
        token: &str,
        body: &Value,
    ) -> Answer {
        let req = self
            .http
            .request(method, self.url(path))
            .bearer_auth(token)
            .json(body);
        Answer::of(req).await
    }

    /// `GET path` as the operator.
    pub async fn get(&self, path: &str) -> Answer {
        Answer::of(self.http.get(self.url(path)).bearer_auth(OPERATOR_TOKEN)).await
    }

    /// `GET /v1/subjects/shipment/{id}` as the operator: the body, or `None` when not 200.
    pub async fn shipment(&self, id: &str) -> Option<Value> {
        let a = self.get(&format!("/v1/subjects/shipment/{id}")).await;
        (a.status == 200).then_some(a.body)
    }

    /// `GET /v1/lapses` as the operator: the `lapses` array.
    pub async fn lapses(&self) -> Vec<Value> {
        let a = self.get("/v1/lapses").await;
        assert_eq!(a.status, 200, "GET /v1/lapses: {a:?}");
        a.body["lapses"].as_array().cloned().unwrap_or_default()
    }

    /// Waits until `GET /v1/lapses` lists exactly `n` lapse tasks, all `sent` (panics, showing
    /// them, after `patience`); the lapse tasks then.
    pub async fn all_sent(&self, n: usize, patience: Duration) -> Vec<Value> {
        let sent = wait_until(
            || async {
                let l = self.lapses().await;
                l.len() == n && l.iter().all(|x| x["delivery"] == "sent")
            },
            patience,
        )
        .await;
        let lapses = self.lapses().await;
        assert!(
            sent,
            "not {n} lapse tasks, all sent, within {patience:?}: {lapses:#?}"
        );
        lapses
    }

    /// Waits until the first lapse task of `GET /v1/lapses` is `sent` (panics, showing the
    /// lapse tasks, after `patience`); the lapse tasks then.
    pub async fn first_lapse_sent(&self, patience: Duration) -> Vec<Value> {
        self.first_lapse_in("sent", patience).await
    }

    /// Waits until the first lapse task of `GET /v1/lapses` has `delivery` (panics, showing the
    /// lapse tasks, after `patience`); the lapse tasks then.
    pub async fn first_lapse_in(&self, delivery: &str, patience: Duration) -> Vec<Value> {
        let reached = wait_until(
            || async {
                self.lapses()
                    .await
                    .first()
                    .is_some_and(|l| l["delivery"] == delivery)
            },
            patience,
        )
        .await;
        let lapses = self.lapses().await;
        assert!(
            reached,
            "no lapse task {delivery} within {patience:?}: {lapses:#?}"
        );
        lapses
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        if let Some(child) = self.child.as_mut() {
            let _ = child.start_kill();
        }
        if std::thread::panicking() {
            eprintln!(
                "--- serve's log ({}) ---\n{}",
                self.dir.path().display(),
                self.log()
            );
        }
    }
}

/// An HTTP answer: status, `Content-Type`, and the body as JSON (`Value::Null` if it is not).
#[derive(Debug, Clone)]
pub struct Answer {
    /// Status code.
    pub status: u16,
    /// The `Content-Type` header, if any.
    pub content_type: Option<String>,
    /// The body as JSON.
    pub body: Value,
}

impl Answer {
    /// Sends `req` and reads the answer.
    pub async fn of(req: reqwest::RequestBuilder) -> Answer {
        let resp = req.send().await.expect("the watcher answers");
        let status = resp.status().as_u16();
        let content_type = resp
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = resp.bytes().await.expect("read the body");
        Answer {
            status,
            content_type,
            body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        }
    }

    /// Asserts an RFC 9457 problem with this status; returns its `detail`.
    #[track_caller]
    pub fn assert_problem(&self, status: u16) -> String {
        assert_eq!(self.status, status, "{self:?}");
        assert_eq!(
            self.content_type.as_deref(),
            Some("application/problem+json"),
            "{self:?}"
        );
        assert_eq!(self.body["status"], json!(status), "{self:?}");
        assert!(
            self.body["title"].as_str().is_some_and(|t| !t.is_empty()),
            "a problem has a title: {self:?}"
        );
        let detail = self.body["detail"].as_str().unwrap_or_default().to_owned();
        assert!(!detail.is_empty(), "a problem has a detail: {self:?}");
        detail
    }
}

/// Asserts that `refused` tells the caller to come back: 503, a `Retry-After` header, and
/// `application/problem+json`.
#[track_caller]
pub fn assert_come_back_later(refused: &reqwest::Response) {
    assert_eq!(refused.status().as_u16(), 503);
    assert!(
        refused.headers().get("retry-after").is_some(),
        "{refused:?}"
    );
    assert_eq!(
        refused
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok()),
        Some("application/problem+json")
    );
}

/// Polls `check` every 50 ms until it is true or `timeout` has passed; `true` if it became true.
pub async fn wait_until<F, Fut>(mut check: F, timeout: Duration) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if check().await {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Polls `check` every 50 ms for `window`; `true` if it held every time. For asserting that
/// something does *not* happen (a retry, a duplicate), which no event can signal.
pub async fn holds_for<F, Fut>(mut check: F, window: Duration) -> bool
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + window;
    loop {
        if !check().await {
            return false;
        }
        if tokio::time::Instant::now() >= deadline {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the agent has received at least `n` requests (panics after `timeout`).
pub async fn wait_for_requests(agent: &CaptureAgent, n: usize, timeout: Duration) {
    let arrived = wait_until(|| async { agent.request_count() >= n }, timeout).await;
    assert!(
        arrived,
        "the agent received {} of {n} requests within {timeout:?}: {:#?}",
        agent.request_count(),
        agent.requests().iter().map(summary).collect::<Vec<_>>()
    );
}

/// Waits until the wall clock is past `t`.
pub async fn wait_past(t: Timestamp) {
    let left = t.duration_since(Timestamp::now());
    if left.is_positive() {
        tokio::time::sleep(left.unsigned_abs()).await;
    }
    while Timestamp::now() <= t {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `messageId`, lapse kind and `lapsedAt` of a captured request, for failure messages.
pub fn summary(r: &CapturedRequest) -> String {
    let lapse = lapse_block(r);
    format!(
        "{} {} {:?} lapsedAt {}",
        r.method,
        r.path,
        r.message_id(),
        lapse["lapsedAt"]
    )
}

/// `params.message.metadata[URI].lapse` of a captured lapse task.
pub fn lapse_block(r: &CapturedRequest) -> Value {
    r.json()
        .map(|v| v["params"]["message"]["metadata"][URI]["lapse"].clone())
        .unwrap_or(Value::Null)
}

/// A whole second at least `lead` from now: the origin of an artifact's due times.
pub fn origin(lead: Duration) -> Timestamp {
    let t = Timestamp::now() + SignedDuration::try_from(lead).expect("a short lead");
    Timestamp::from_second(t.as_second() + 1).expect("the clock is in range")
}

/// `base` + `secs`.
pub fn plus(base: Timestamp, secs: i64) -> Timestamp {
    base + SignedDuration::from_secs(secs)
}

/// An instant as the watcher prints it (whole seconds: `2026-09-10T20:15:00Z`).
pub fn fmt(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Parses an instant the watcher printed.
pub fn parse(s: &Value) -> Timestamp {
    s.as_str()
        .unwrap_or_else(|| panic!("{s} is not an instant"))
        .parse()
        .unwrap_or_else(|e| panic!("{s} is not an instant: {e}"))
}

/// Due times of [`booking_artifact`], as instants.
#[derive(Debug, Clone, Copy)]
pub struct BookingTimes {
    /// Manifest `dueAt` (grace PT1S).
    pub manifest_due: Timestamp,
    /// Departure `dueAt` (grace PT6S).
    pub departure_due: Timestamp,
    /// Arrival projected `dueAt` (grace PT1S; anchored PT1S after the departure).
    pub arrival_due: Timestamp,
    /// Arrival `horizon`.
    pub arrival_horizon: Timestamp,
}

impl BookingTimes {
    /// The worked example on compressed times, from `t0`: manifest due t0+1 s (lapses overdue at
    /// t0+2 s), departure due t0+10 s, arrival projected t0+5 s with horizon t0+6 s. A departure
    /// observed at about t0+2 s re-anchors the arrival to about t0+3 s (overdue about t0+4 s).
    pub fn compressed(t0: Timestamp) -> Self {
        BookingTimes {
            manifest_due: plus(t0, 1),
            departure_due: plus(t0, 10),
            arrival_due: plus(t0, 5),
            arrival_horizon: plus(t0, 6),
        }
    }

    /// Every due time a day from now: nothing lapses during a test.
    pub fn far() -> Self {
        let t0 = origin(Duration::from_secs(24 * 3600));
        BookingTimes {
            manifest_due: t0,
            departure_due: plus(t0, 3600),
            arrival_due: plus(t0, 7200),
            arrival_horizon: plus(t0, 3 * 86400),
        }
    }
}

/// The worked example on compressed times, from half a second from now: pushes
/// [`booking_artifact`] (200), waits for the agent's first lapse task (the manifest overdue) and
/// reports the departure of [`SHIPMENT`] observed now, to the whole second (200); answers that
/// instant. Four lapse tasks follow: overdue(manifest), skipped(manifest), overdue(arrival),
/// stalled(arrival).
pub async fn run_worked_example(
    w: &Watcher,
    agent: &CaptureAgent,
    patience: Duration,
) -> Timestamp {
    let times = BookingTimes::compressed(origin(Duration::from_millis(500)));
    assert_eq!(w.push(&booking_artifact(times)).await.status, 200);
    wait_for_requests(agent, 1, patience).await;
    let observed = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    assert_eq!(
        w.report(&departure_fact(SHIPMENT, observed)).await.status,
        200
    );
    observed
}

/// A capture agent and a `serve` over it that ran [`run_worked_example`] until its four lapse
/// tasks (overdue(manifest), skipped(manifest), overdue(arrival), stalled(arrival)) arrived at the
/// agent and are all recorded as sent.
pub async fn worked_example_delivered(patience: Duration) -> (CaptureAgent, Watcher) {
    let agent = watcher_delivery::testing::spawn_capture_agent(
        watcher_delivery::testing::Behaviour::accept(),
    )
    .await;
    let w = spawn_watcher(&agent, "").await;
    run_worked_example(&w, &agent, patience).await;
    wait_for_requests(&agent, 4, patience).await;
    w.all_sent(4, patience).await;
    (agent, w)
}

/// The booking artifact of expectations-v1 §8 (examples/booking-artifact.json: manifest,
/// departure after it, arrival anchored on the departure) with the given due times.
pub fn booking_artifact(t: BookingTimes) -> Value {
    let mut a: Value = serde_json::from_str(include_str!("../../examples/booking-artifact.json"))
        .expect("examples/booking-artifact.json is JSON");
    let exps = &mut a["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"];
    exps[0]["dueAt"] = json!(fmt(t.manifest_due));
    exps[0]["grace"] = json!("PT1S");
    exps[1]["dueAt"] = json!(fmt(t.departure_due));
    exps[1]["grace"] = json!("PT6S");
    exps[2]["dueAt"] = json!(fmt(t.arrival_due));
    exps[2]["grace"] = json!("PT1S");
    exps[2]["anchor"]["offset"] = json!("PT1S");
    exps[2]["horizon"] = json!(fmt(t.arrival_horizon));
    a
}

/// An artifact update from task `task_id` (context `ctx-{task_id}`) raising one
/// `shipment.manifest` expectation `exp_id` about shipment `shipment`, due at `due` with `grace`.
pub fn one_expectation(
    task_id: &str,
    exp_id: &str,
    shipment: &str,
    due: Timestamp,
    grace: &str,
) -> Value {
    json!({ "artifactUpdate": {
        "taskId": task_id, "contextId": format!("ctx-{task_id}"),
        "artifact": {
            "artifactId": format!("artifact-{task_id}"),
            "parts": [{ "text": "booked" }],
            "extensions": [URI],
            "metadata": { URI: { "expectations": [{
                "expectationId": exp_id, "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": shipment },
                "expects": format!("the airline manifest for {shipment}"),
                "satisfiedBy": { "factKey": format!("shipment.manifest.received:{shipment}") },
                "dueAt": fmt(due), "grace": grace, "basis": "observed"
            }] } }
        }
    } })
}

/// [`one_expectation`] raising one expectation per `(expectationId, shipment)` of `each`, all
/// due at `due` with `grace`, each satisfied by its shipment's manifest.
pub fn expectations_on(
    task_id: &str,
    each: &[(String, String)],
    due: Timestamp,
    grace: &str,
) -> Value {
    let mut body = one_expectation(task_id, "x", "x", due, grace);
    let template = body["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"][0].clone();
    let expectations: Vec<Value> = each
        .iter()
        .map(|(id, shipment)| {
            let mut e = template.clone();
            e["expectationId"] = json!(id);
            e["subject"]["id"] = json!(shipment);
            e["expects"] = json!(format!("the airline manifest for {shipment}"));
            e["satisfiedBy"]["factKey"] = json!(format!("shipment.manifest.received:{shipment}"));
            e
        })
        .collect();
    body["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"] = json!(expectations);
    body
}

/// The departure fact of §9.2 for `shipment`, observed at `observed`.
pub fn departure_fact(shipment: &str, observed: Timestamp) -> Value {
    json!({
        "factKey": format!("shipment.departed:{shipment}"),
        "observedAt": fmt(observed),
        "subject": { "type": "shipment", "id": shipment },
    })
}

/// The record of expectation `id` in a subject body.
#[track_caller]
pub fn expectation<'a>(subject: &'a Value, id: &str) -> &'a Value {
    subject["expectations"]
        .as_array()
        .and_then(|l| l.iter().find(|e| e["expectationId"] == id))
        .unwrap_or_else(|| panic!("{id} is not in {subject:#}"))
}

/// Runs `a2a-watcher probe url` against the agent `what` and answers the lifecycle descriptor
/// it prints.
pub async fn probe(url: &str, what: &str) -> Value {
    let out = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(["probe", url])
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run a2a-watcher probe");
    assert!(
        out.status.success(),
        "probe of {what} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("the descriptor is JSON")
}
