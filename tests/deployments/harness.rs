//! The deployment under test: `a2a-watcher serve` (SQLite) or the local AWS stack
//! (`bash infra/aws-local.sh`: the function binaries over moto), behind one [`Deployment`]
//! type the scenarios talk to over HTTP only.
//!
//! Every scenario's agents are known before the deployment starts (the AWS functions read the
//! configuration secret at cold start), so a [`Fixture`] spawns them all, writes one watcher.toml
//! naming them, and the deployment starts on it.

use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use a2a_types::TaskState;
use serde_json::{json, Value};
use watcher_delivery::testing::{Behaviour, CaptureAgent, CapturedRequest, Reply};
use watcher_notify::testing::{VendorReceiver, VendorRequest};

use crate::common::aws_stack::{
    bin_dir, free_port, instance_pids, kill_every_instance, root, Proc,
};
use crate::common::{entry_toml, Answer, Watcher, OPERATOR_TOKEN, SOURCE_ID, SOURCE_TOKEN};

/// The source whose webhook has a mapping (scenario `carrier_webhook`).
pub const HOOK_SOURCE: &str = "carrier-feed:hooks";
/// Its bearer token.
pub const HOOK_TOKEN: &str = "src-token-hooks";
/// Seconds a record held by a dead submitter instance takes to come back on AWS
/// (`--visibility-timeout-cap`; the template's minutes would make the suite minutes longer).
/// The send lease sits just below it, and a live send must never outlast its lease (on AWS the
/// function's timeout keeps it under; the local stack caps the submitter's timeout below the
/// capped lease likewise): the scenarios hold an agent's answer for a few seconds
/// (a slow neighbour) while the local stack, whose emulator serves one request at a time,
/// delivers the others: 12 s was too short once in CI with both deployments' suites running,
/// so the cap leaves them half a minute.
const VISIBILITY_CAP: u64 = 30;

/// Seconds between sweeps on AWS (`--rate-cap`; the template's 5 minutes would make the
/// scenarios that rest on the sweep, following without push, minutes long).
const SWEEP_EVERY: u64 = 5;

/// The notifier's settle on aws-local, in seconds (300 on AWS).
const NOTIFY_SETTLE_SECS: u64 = 3;

/// The routing key of the `[[notify]]` channel `pager` (32 characters, as PagerDuty's
/// integration keys are).
pub const PAGERDUTY_ROUTING_KEY: &str = "R0UT1NGKEYDEPL0YMENTS00000000000";

/// The API key of the `[[notify]]` channel `genie` (Opsgenie), sent as `Authorization: GenieKey
/// {key}`.
pub const OPSGENIE_API_KEY: &str = "0ps6en1e-dep1oyments-key-000000000000";

/// The routing key of the `[[notify]]` channel `patient` (PagerDuty, with a grace), posting to
/// the same stand-in as `pager`: its events are told apart by it.
pub const PATIENT_ROUTING_KEY: &str = "R0UT1NGKEYGRACEPAT1ENT0000000000";

/// The grace of the channel `patient`: a lapse is told only once this old, and only if still
/// unresolved then (`a_grace_swallows_a_short_delay`).
pub const PATIENT_GRACE: Duration = Duration::from_secs(15);

/// How many agents the burst measurement spreads its lapse tasks over ([`Fixture::burst`]).
pub const BURST_AGENTS: usize = 20;

/// The id of the `i`th burst agent: `burst-00` … `burst-19`.
pub fn burst_agent(i: usize) -> String {
    format!("burst-{i:02}")
}

/// What a vendor's stand-in took about the incident `key` (a lapse's event id), in order:
/// PagerDuty events whose `dedup_key` is it, Opsgenie creates whose `alias` is it and requests
/// on `/v2/alerts/{key}/…` (its close; the path read [`decoded`]), Alertmanager posts whose
/// alert's `lapse` label is it.
pub fn about(vendor: &VendorReceiver, key: &str) -> Vec<VendorRequest> {
    let on_alias = format!("/v2/alerts/{key}/");
    vendor
        .seen()
        .into_iter()
        .filter(|r| {
            r.body["dedup_key"] == key
                || r.body["alias"] == key
                || decoded(&r.path).starts_with(&on_alias)
                || r.body.pointer("/0/labels/lapse").is_some_and(|l| l == key)
        })
        .collect()
}

/// `path` with its percent-escapes decoded (`%5F` → `_`): a URL names the same resource
/// either way (RFC 3986 §6.2.2.2), so an alias percent-encoded in a path is read as the alias.
/// An escape that is not two hex digits is kept as it is.
pub fn decoded(path: &str) -> String {
    let b = path.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let byte = (b[i] == b'%')
            .then(|| b.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match byte {
            Some(v) => {
                out.push(v);
                i += 3;
            }
            None => {
                out.push(b[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Which deployment runs the scenarios.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// `a2a-watcher serve` on SQLite.
    Serve,
    /// The local AWS stack: api, timer, submitter and lesson-write processes over moto.
    AwsLocal,
}

impl Backend {
    /// `serve` or `aws-local`, as the skip lines and timings print it.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Serve => "serve",
            Backend::AwsLocal => "aws-local",
        }
    }
}

/// The push token of agent `id` (`push-token-{id}`).
/// The teacher of the deployment's configuration: `taughtBy` of its lessons.
pub const TEACHER_ID: &str = "dana@warehouse.example";
/// Its token.
pub const TEACHER_TOKEN: &str = "teacher-token-deployments";

pub fn push_token(id: &str) -> String {
    format!("push-token-{id}")
}

/// How an agent of the fixture is reached.
enum Card {
    /// A capture agent: its card is a file naming its URL, and `endpoint` is its URL.
    Capture(Arc<CaptureAgent>),
    /// A card URL: the agent's card is fetched from it (the example agent's), or nothing
    /// answers there (an unreadable card).
    Url(String),
}

/// One `[[agents]]` entry.
struct AgentEntry {
    id: String,
    card: Card,
    /// `reconcile = true` (origin tasks checked with `GetTask`); the others say `false`.
    reconcile: bool,
}

/// A JSON-RPC answer with `result`.
pub fn rpc_result(req: &CapturedRequest, result: Value) -> Reply {
    Reply::Http {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: json!({ "jsonrpc": "2.0", "id": req.rpc_id(), "result": result }).to_string(),
    }
}

/// How long the pace agent thinks before it answers each lapse task. One agent's ceiling is
/// `in_flight_per_agent` over this (4 / 0.4 s = 10 a second) on both deployments, so the pace
/// scenario compares how many each keeps in flight, as an agent that takes its time sees it; an
/// agent answering in 50 ms measures instead the store calls around each send, which on the
/// local stack wait their turn at an emulator serving one request at a time
/// (docs/performance.md, "One agent's pace and the lapse task beside a backlog, measured").
pub const PACE_ANSWER: Duration = Duration::from_millis(400);

/// Every agent the scenarios use, one per scenario (so each asserts on its own requests), and
/// the switches scripted agents read.
pub struct Fixture {
    /// Accepts everything; `raise`, `lapse_each_kind`.
    pub kinds: Arc<CaptureAgent>,
    /// Accepts everything; `satisfy_in_time`.
    pub timely: Arc<CaptureAgent>,
    /// Accepts everything; `withdraw`.
    pub withdraw: Arc<CaptureAgent>,
    /// Answers `SendMessage` with a permanent JSON-RPC error while [`Fixture::retry_broken`].
    pub retry: Arc<CaptureAgent>,
    /// While set, the `retry` agent refuses lapse tasks permanently (`-32602`).
    pub retry_broken: Arc<AtomicBool>,
    /// The slow neighbour (answers held; keeps its tasks, so a hold past the sender's timeout is
    /// looked up, not sent again).
    pub slow: Arc<CaptureAgent>,
    /// The agent beside the slow one.
    pub quick: Arc<CaptureAgent>,
    /// Keeps its tasks (answers `ListTasks`); `kill_sender_mid_send`.
    pub crash: Arc<CaptureAgent>,
    /// Accepts everything; `carrier_webhook`.
    pub hooks: Arc<CaptureAgent>,
    /// Accepts everything; `operator_routes`.
    pub ops: Arc<CaptureAgent>,
    /// Accepts everything; served while `partner`'s card cannot be read.
    pub indep: Arc<CaptureAgent>,
    /// Its origin tasks are canceled as `GetTask` sees them; never pushes (`reconcile` on).
    pub recon: Arc<CaptureAgent>,
    /// Keeps its tasks; `follow_without_push`.
    pub follow: Arc<CaptureAgent>,
    /// `withdraw_along_the_lineage` (`reconcile` on, never pushes): `GetTask` answers every task
    /// working, except `task-lin-1` failed once [`Fixture::lineage_failed`] is set; `SendMessage`
    /// creates `lin-lapse-{n}`.
    pub lineage: Arc<CaptureAgent>,
    /// While set, the `lineage` agent's `task-lin-1` is failed as `GetTask` sees it.
    pub lineage_failed: Arc<AtomicBool>,
    /// Accepts everything (its lapse tasks stay open: only a late fact resolves their lapse);
    /// the on-call channels' only agent: `notify_a_person`, then
    /// `page_and_resolve_through_a_restart`. One agent, so that those channels read its lapses
    /// only, not every lapse of the suite (on aws-local each full read competes with the
    /// measurements for an emulator serving one request at a time).
    pub tell: Arc<CaptureAgent>,
    /// Accepts everything: `a_grace_swallows_a_short_delay` (the channel `patient`'s only agent).
    pub graced: Arc<CaptureAgent>,
    /// Answers every lapse task with a completed task after [`PACE_ANSWER`]:
    /// `one_agent_at_serves_pace`.
    pub pace: Arc<CaptureAgent>,
    /// Answers with a completed task, as slowly as `a_backlog_leaves_others_on_time` sets: its
    /// large backlog.
    pub backlog: Arc<CaptureAgent>,
    /// Accepts everything: the agent beside the backlog.
    pub beside: Arc<CaptureAgent>,
    /// Keeps its tasks, never pushes: `a_followed_lapse_task_ends_without_push`.
    pub ends: Arc<CaptureAgent>,
    /// Twenty agents whose answers take 300 ms, `burst-00` … `burst-19`: the burst measurement
    /// (`burst.rs`), by hand.
    pub burst: Vec<Arc<CaptureAgent>>,
    /// The port `partner`'s card URL names, where nothing listens.
    pub partner_port: u16,
    /// The example agent (`a2a-watcher example-agent`), registered by its card URL: it prints
    /// `agent <- lapse task {messageId} …` for each lapse task it accepts.
    pub example: Proc,
    /// The `[[notify]]` channel `ops`'s receiver (Standard Webhooks, signed, lapses only):
    /// `notify_a_person`.
    pub notified: watcher_notify::testing::Receiver,
    /// The `[[notify]]` channel `pager`'s receiver, standing in for PagerDuty's Events API v2
    /// (`format = "pagerduty"`, agent `tell`'s lapses only): `notify_a_person`,
    /// `page_and_resolve_through_a_restart`; also the channel `patient`'s (PagerDuty with a grace
    /// of [`PATIENT_GRACE`], agent `graced`'s lapses only, [`PATIENT_ROUTING_KEY`]):
    /// `a_grace_swallows_a_short_delay`.
    pub paged: VendorReceiver,
    /// The `[[notify]]` channel `alerts`'s receiver, standing in for an Alertmanager
    /// (`format = "alertmanager"` with `redact = ["subject", "agent_text"]`, agent `tell`'s
    /// lapses only): `notify_a_person`, `page_and_resolve_through_a_restart`.
    pub alerted: VendorReceiver,
    /// The `[[notify]]` channel `genie`'s receiver, standing in for Opsgenie's Alert API
    /// (`format = "opsgenie"`, agent `tell`'s lapses only): `notify_a_person`,
    /// `page_and_resolve_through_a_restart`.
    pub opsgenie: VendorReceiver,
    dir: tempfile::TempDir,
}

impl Fixture {
    /// Spawns every agent.
    pub async fn spawn() -> Fixture {
        let accept = || async {
            Arc::new(
                CaptureAgent::spawn(Behaviour::accept())
                    .await
                    .expect("capture agent"),
            )
        };
        let keeping = || async {
            Arc::new(
                CaptureAgent::spawn_keeping_tasks(Behaviour::accept())
                    .await
                    .expect("capture agent"),
            )
        };
        let retry_broken = Arc::new(AtomicBool::new(true));
        let broken = retry_broken.clone();
        let retry = Arc::new(
            CaptureAgent::spawn(Behaviour::from_fn(move |n, req| {
                if req.rpc_method().as_deref() == Some("SendMessage")
                    && broken.load(Ordering::SeqCst)
                {
                    Reply::rpc_error(-32602, "the agent refuses this message")
                } else {
                    Reply::task(format!("task-retry-{n}"), TaskState::Submitted)
                }
            }))
            .await
            .expect("capture agent"),
        );
        let recon = Arc::new(
            CaptureAgent::spawn(Behaviour::from_fn(|n, req| {
                match req.rpc_method().as_deref() {
                    Some("GetTask") => {
                        let id = req
                            .json()
                            .and_then(|v| v.pointer("/params/id").cloned())
                            .unwrap_or(Value::Null);
                        rpc_result(
                            req,
                            json!({ "id": id, "contextId": format!("ctx-{}", id.as_str().unwrap_or("")),
                                    "status": { "state": "TASK_STATE_CANCELED",
                                                "timestamp": "2026-11-30T00:00:00Z" } }),
                        )
                    }
                    _ => Reply::task(format!("lapse-task-{n}"), TaskState::Submitted),
                }
            }))
            .await
            .expect("capture agent"),
        );
        let lineage_failed = Arc::new(AtomicBool::new(false));
        let failed = lineage_failed.clone();
        let lineage = Arc::new(
            CaptureAgent::spawn(Behaviour::from_fn(move |n, req| {
                match req.rpc_method().as_deref() {
                    Some("GetTask") => {
                        let id = req
                            .json()
                            .and_then(|v| v.pointer("/params/id").cloned())
                            .unwrap_or(Value::Null);
                        let state = if id == "task-lin-1" && failed.load(Ordering::SeqCst) {
                            "TASK_STATE_FAILED"
                        } else {
                            "TASK_STATE_WORKING"
                        };
                        rpc_result(
                            req,
                            json!({ "id": id, "contextId": format!("ctx-{}", id.as_str().unwrap_or("")),
                                    "status": { "state": state } }),
                        )
                    }
                    _ => Reply::task(format!("lin-lapse-{n}"), TaskState::Submitted),
                }
            }))
            .await
            .expect("capture agent"),
        );
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"));
        cmd.args(["example-agent", "--listen", "127.0.0.1:0"]);
        let example = Proc::spawn(cmd);
        tokio::task::block_in_place(|| {
            example.wait_for("the example agent", Duration::from_secs(30), |l| {
                l.starts_with("example agent listening on ")
            })
        });
        let partner_port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut burst = Vec::new();
        for _ in 0..BURST_AGENTS {
            let agent = accept().await;
            agent.set_answer_delay(Duration::from_millis(300));
            burst.push(agent);
        }
        let completing = || async {
            Arc::new(
                CaptureAgent::spawn(Behaviour::always(Reply::task(
                    "lapse-done",
                    TaskState::Completed,
                )))
                .await
                .expect("capture agent"),
            )
        };
        let pace = completing().await;
        pace.set_answer_delay(PACE_ANSWER);
        Fixture {
            pace,
            backlog: completing().await,
            beside: accept().await,
            ends: keeping().await,
            burst,
            kinds: accept().await,
            timely: accept().await,
            withdraw: accept().await,
            retry,
            retry_broken,
            slow: keeping().await,
            quick: accept().await,
            crash: keeping().await,
            hooks: accept().await,
            ops: accept().await,
            indep: accept().await,
            recon,
            follow: keeping().await,
            lineage,
            lineage_failed,
            tell: accept().await,
            graced: accept().await,
            partner_port,
            example,
            notified: watcher_notify::testing::Receiver::start().await,
            paged: VendorReceiver::start().await,
            alerted: VendorReceiver::start().await,
            opsgenie: VendorReceiver::start().await,
            dir: tempfile::Builder::new()
                .prefix("a2a-watcher-deployments")
                .tempdir()
                .expect("a temporary folder"),
        }
    }

    fn entries(&self) -> Vec<AgentEntry> {
        let c = |id: &str, a: &Arc<CaptureAgent>| AgentEntry {
            id: id.to_owned(),
            card: Card::Capture(a.clone()),
            reconcile: false,
        };
        let burst = self
            .burst
            .iter()
            .enumerate()
            .map(|(i, a)| c(&burst_agent(i), a));
        let mut entries = vec![
            c("kinds", &self.kinds),
            c("timely", &self.timely),
            c("withdraw", &self.withdraw),
            c("retry", &self.retry),
            c("slow", &self.slow),
            c("quick", &self.quick),
            c("crash", &self.crash),
            c("hooks", &self.hooks),
            c("ops", &self.ops),
            c("indep", &self.indep),
            AgentEntry {
                reconcile: true,
                ..c("recon", &self.recon)
            },
            c("follow", &self.follow),
            AgentEntry {
                reconcile: true,
                ..c("lineage", &self.lineage)
            },
            c("tell", &self.tell),
            c("graced", &self.graced),
            c("pace", &self.pace),
            c("backlog", &self.backlog),
            c("beside", &self.beside),
            c("ends", &self.ends),
            AgentEntry {
                id: "example".into(),
                card: Card::Url(self.example_url()),
                reconcile: false,
            },
            AgentEntry {
                id: "partner".into(),
                card: Card::Url(format!("http://127.0.0.1:{}", self.partner_port)),
                reconcile: false,
            },
        ];
        entries.extend(burst);
        entries
    }

    /// The `lapse.recorded` notifications the channel's receiver accepted for the lapse task
    /// `message_id`.
    pub fn lapses_told(&self, message_id: &str) -> Vec<watcher_notify::testing::Received> {
        self.notified
            .accepted()
            .into_iter()
            .filter(|n| {
                n.body["type"] == "lapse.recorded" && n.body["data"]["messageId"] == message_id
            })
            .collect()
    }

    /// The example agent's base URL, from its `example agent listening on URL (…)` line.
    pub fn example_url(&self) -> String {
        let line = self
            .example
            .lines()
            .into_iter()
            .find(|l| l.starts_with("example agent listening on "))
            .expect("the example agent is listening");
        line["example agent listening on ".len()..]
            .split_whitespace()
            .next()
            .expect("its URL")
            .to_owned()
    }

    /// The watcher.toml both deployments read (serve adds `listen` and `database`): short
    /// backoffs and polls, requests that outlast a held answer, two sources (one with a webhook
    /// mapping), every agent, one operator, and five `[[notify]]` channels: `ops` (Standard
    /// Webhooks, every lapse, not their ends), `pager` (PagerDuty), `alerts` (Alertmanager,
    /// redacted) and `genie` (Opsgenie), those three for agent `tell` only, each lapse and its
    /// end; and `patient` (PagerDuty with a grace) for agent `graced` only.
    fn config(&self) -> String {
        let mut out = String::from(
            r#"allow_private_endpoints = true

[delivery]
# A held answer (the slow neighbour, the kill mid-send) stays within one request.
timeout_secs = 30
backoff_base = "PT0.1S"
backoff_max = "PT0.5S"
poll_first = "PT0.3S"
# The per-agent pace scenarios measure the lanes, not the rate limit (600 a minute by default).
per_minute = 60000
burst = 2000

"#,
        );
        out.push_str(&format!(
            r#"{source}
{hook_source}[[sources.mappings]]
name = "manifest"
when = {{ pointer = "/event", equals = "manifest.received" }}
fact_key = "shipment.manifest.received:{{/shipment}}"
observed_at = "/at"
subject = {{ type = "shipment", id = "{{/shipment}}" }}

{operator}
{teacher}
[[notify]]
id = "ops"
url = "{notify_url}"
secret = "{notify_secret}"
events = ["lapse.recorded"]

[[notify]]
id = "pager"
format = "pagerduty"
url = "{paged_url}/v2/enqueue"
routing_key = "{routing_key}"
severity = {{ overdue = "critical" }}
agents = ["tell"]
events = ["lapse.recorded", "lapse.resolved"]

[[notify]]
id = "alerts"
format = "alertmanager"
url = "{alerted_url}"
redact = ["subject", "agent_text"]
agents = ["tell"]
events = ["lapse.recorded", "lapse.resolved"]

[[notify]]
id = "genie"
format = "opsgenie"
url = "{opsgenie_url}"
api_key = "{opsgenie_key}"
priority = {{ overdue = "P1" }}
agents = ["tell"]
events = ["lapse.recorded", "lapse.resolved"]

[[notify]]
id = "patient"
format = "pagerduty"
url = "{paged_url}/v2/enqueue"
routing_key = "{patient_key}"
grace = "PT{patient_grace}S"
agents = ["graced"]
events = ["lapse.recorded", "lapse.resolved"]

"#,
            source = entry_toml("sources", SOURCE_ID, SOURCE_TOKEN),
            hook_source = entry_toml("sources", HOOK_SOURCE, HOOK_TOKEN),
            operator = entry_toml("operators", "ops-desk", OPERATOR_TOKEN),
            teacher = entry_toml("teachers", TEACHER_ID, TEACHER_TOKEN),
            notify_url = self.notified.url,
            notify_secret = watcher_notify::testing::SECRET,
            paged_url = self.paged.url,
            routing_key = PAGERDUTY_ROUTING_KEY,
            patient_key = PATIENT_ROUTING_KEY,
            patient_grace = PATIENT_GRACE.as_secs(),
            alerted_url = self.alerted.url,
            opsgenie_url = self.opsgenie.url,
            opsgenie_key = OPSGENIE_API_KEY,
        ));
        for e in self.entries() {
            let (card, endpoint) = match &e.card {
                Card::Capture(agent) => {
                    let path = crate::common::card_file(self.dir.path(), &e.id, &agent.url());
                    (
                        path.display().to_string(),
                        format!("endpoint = \"{}\"\n", agent.url()),
                    )
                }
                Card::Url(url) => (url.clone(), String::new()),
            };
            out.push_str(&format!(
                "[[agents]]\nid = \"{id}\"\ncard = \"{card}\"\n{endpoint}push_token = \"{token}\"\nreconcile = {reconcile}\n\n",
                id = e.id,
                token = push_token(&e.id),
                reconcile = e.reconcile,
            ));
        }
        out
    }
}

/// A running deployment. Scenarios reach it over HTTP at [`Deployment::base_url`], which may
/// change when [`Deployment::kill_sender`] restarts `serve`.
pub struct Deployment {
    /// Which one.
    pub backend: Backend,
    base: Mutex<String>,
    http: reqwest::Client,
    running: Running,
}

enum Running {
    Serve(Box<tokio::sync::Mutex<Watcher>>),
    Aws(Proc),
}

impl Deployment {
    /// Starts `backend` on the fixture's configuration and waits until it answers; on aws-local
    /// the sweep runs every [`SWEEP_EVERY`] seconds.
    pub async fn start(backend: Backend, fixture: &Fixture) -> Deployment {
        Self::start_sweeping(backend, fixture, Some(SWEEP_EVERY)).await
    }

    /// [`Deployment::start`], with the sweep every `sweep_every` seconds on aws-local (`None`:
    /// the template's 5 minutes, as deployed).
    pub async fn start_sweeping(
        backend: Backend,
        fixture: &Fixture,
        sweep_every: Option<u64>,
    ) -> Deployment {
        let config = fixture.config();
        let api_port = free_port();
        let running = match backend {
            Backend::Serve => {
                let w = crate::common::spawn_watcher_with_config(&format!(
                    "listen = \"127.0.0.1:0\"\ndatabase = \"watcher.db\"\n{config}"
                ))
                .await;
                Running::Serve(Box::new(tokio::sync::Mutex::new(w)))
            }
            Backend::AwsLocal => {
                let path = fixture.dir.path().join("watcher.toml");
                std::fs::write(&path, &config).expect("write the configuration");
                let (moto_port, dynamodb_port) = (free_port(), free_port());
                let mut cmd = Command::new("bash");
                // `--log -`: the functions' lines on stdout, where the harness reads them.
                cmd.arg(root().join("infra/aws-local.sh"))
                    .args(["--no-build", "--log", "-", "--port", &api_port.to_string()])
                    .args(["--moto-port", &moto_port.to_string()])
                    .args(["--dynamodb-port", &dynamodb_port.to_string()])
                    .args(["--visibility-timeout-cap", &VISIBILITY_CAP.to_string()])
                    .args(
                        sweep_every
                            .iter()
                            .flat_map(|s| ["--rate-cap".to_owned(), s.to_string()]),
                    )
                    .args(
                        // Release binaries when the measurement asks for them
                        // (`A2A_FUNCTIONS_DIR`).
                        (bin_dir().file_name() == Some(std::ffi::OsStr::new("release")))
                            .then_some("--release"),
                    )
                    .arg("--config")
                    .arg(&path)
                    .env(
                        "CARGO_TARGET_DIR",
                        bin_dir().parent().expect("the target folder"),
                    )
                    // The notifier's settle, shortened for a stack whose functions end in
                    // milliseconds (watcher_host::aws::NOTIFY_SETTLE_ENV).
                    .env("A2A_NOTIFY_SETTLE_SECS", NOTIFY_SETTLE_SECS.to_string());
                let stack = Proc::spawn(cmd);
                tokio::task::block_in_place(|| {
                    stack.wait_for("ready line", Duration::from_secs(120), |l| {
                        l.starts_with("[aws-local] ready at ")
                    })
                });
                if sweep_every.is_some() && config.contains("[[notify]]") {
                    // A channel starts after the newest lapse task there is when it first runs,
                    // at the end of the first sweep (docs/howto/notifications.md, "History is
                    // not told"): the scenarios start once it has, or a lapse of theirs before
                    // a slow first sweep would be history to the channel.
                    tokio::task::block_in_place(|| {
                        stack.wait_for("the notifier's first run", Duration::from_secs(120), |l| {
                            // The sweep's `notify` duty's own invocation (issue 41 split
                            // the sweep; earlier the whole sweep logged the channels told).
                            l.starts_with("[timer]")
                                && (l.contains("notification channels told")
                                    || l.contains(r#""duty":"notify""#))
                        })
                    });
                }
                Running::Aws(stack)
            }
        };
        let base = match &running {
            Running::Serve(w) => w.lock().await.base_url.clone(),
            Running::Aws(_) => format!("http://127.0.0.1:{api_port}"),
        };
        Deployment {
            backend,
            base: Mutex::new(base),
            http: reqwest::Client::new(),
            running,
        }
    }

    /// `http://127.0.0.1:PORT` of the HTTP API (serve's listener, or the local API Gateway).
    pub fn base_url(&self) -> String {
        self.base.lock().unwrap().clone()
    }

    /// How long a timer-driven lapse task may take to reach an agent after its deadline: the
    /// AWS shape adds a schedule, two queues and process start-ups to the path.
    pub fn patience(&self) -> Duration {
        match self.backend {
            Backend::Serve => Duration::from_secs(20),
            Backend::AwsLocal => Duration::from_secs(60),
        }
    }

    /// How long a lapse task may take to be recorded after the process sending it was killed
    /// ([`Deployment::kill_sender`]): [`Deployment::patience`] plus the time the killed send's
    /// record takes to come back (serve restarts on its database at once; on AWS the lapse
    /// message returns only after the queue's visibility timeout, capped here at
    /// `VISIBILITY_CAP`).
    pub fn patience_after_a_kill(&self) -> Duration {
        match self.backend {
            Backend::Serve => self.patience(),
            Backend::AwsLocal => self.patience() + Duration::from_secs(VISIBILITY_CAP),
        }
    }

    /// The HTTP client.
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// `base_url` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base_url())
    }

    /// `POST /v1/agents/{agent}/push` with the agent's push token.
    pub async fn push(&self, agent: &str, body: &Value) -> Answer {
        Answer::of(
            self.http
                .post(self.url(&format!("/v1/agents/{agent}/push")))
                .header("X-A2A-Notification-Token", push_token(agent))
                .json(body),
        )
        .await
    }

    /// `POST /v1/facts` as the carrier feed.
    pub async fn report(&self, body: &Value) -> Answer {
        Answer::of(
            self.http
                .post(self.url("/v1/facts"))
                .bearer_auth(SOURCE_TOKEN)
                .json(body),
        )
        .await
    }

    /// `GET path` as the operator.
    pub async fn get(&self, path: &str) -> Answer {
        Answer::of(self.http.get(self.url(path)).bearer_auth(OPERATOR_TOKEN)).await
    }

    /// `POST path` with `body` as the operator.
    pub async fn post_as_operator(&self, path: &str, body: &Value) -> Answer {
        Answer::of(
            self.http
                .post(self.url(path))
                .bearer_auth(OPERATOR_TOKEN)
                .json(body),
        )
        .await
    }

    /// `method path` with `body` as the teacher (the Learnables authority's writes).
    pub async fn as_teacher(&self, method: reqwest::Method, path: &str, body: &Value) -> Answer {
        Answer::of(
            self.http
                .request(method, self.url(path))
                .bearer_auth(TEACHER_TOKEN)
                .json(body),
        )
        .await
    }

    /// `GET /v1/subjects/shipment/{id}`: the body, or `None` when not 200.
    pub async fn shipment(&self, id: &str) -> Option<Value> {
        let a = self.get(&format!("/v1/subjects/shipment/{id}")).await;
        (a.status == 200).then_some(a.body)
    }

    /// `GET /v1/lapses?agent={agent}`: the agent's lapses (one page of up to 100; a scenario
    /// makes a handful).
    pub async fn lapses_of(&self, agent: &str) -> Vec<Value> {
        let a = self
            .get(&format!("/v1/lapses?agent={agent}&limit=100"))
            .await;
        assert_eq!(a.status, 200, "GET /v1/lapses: {a:?}");
        a.body["lapses"].as_array().cloned().unwrap_or_default()
    }

    /// The lapse of expectation `id` at `GET /v1/lapses`, once `pred` holds for it (`None` if
    /// it does not within [`Deployment::patience`]).
    pub async fn lapse_when(
        &self,
        agent: &str,
        id: &str,
        pred: impl Fn(&Value) -> bool,
    ) -> Option<Value> {
        self.lapse_within(agent, id, pred, self.patience()).await
    }

    /// [`Deployment::lapse_when`] waiting up to `patience`.
    pub async fn lapse_within(
        &self,
        agent: &str,
        id: &str,
        pred: impl Fn(&Value) -> bool,
        patience: Duration,
    ) -> Option<Value> {
        let end = Instant::now() + patience;
        loop {
            if let Some(l) = self
                .lapses_of(agent)
                .await
                .into_iter()
                .find(|l| l["expectationId"] == id && pred(l))
            {
                return Some(l);
            }
            if Instant::now() > end {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Kills the process that sends lapse tasks (SIGKILL) and returns once another one runs:
    /// `serve` itself, restarted on the same database; on AWS the submitter instance, which
    /// the stand-in replaces.
    pub async fn kill_sender(&self) {
        match &self.running {
            Running::Serve(w) => {
                let mut w = w.lock().await;
                w.restart().await;
                *self.base.lock().unwrap() = w.base_url.clone();
            }
            Running::Aws(stack) => {
                // Every instance: whichever holds the lapse task.
                let before = kill_every_instance(stack, "submitter");
                tokio::task::block_in_place(|| {
                    stack.wait_for("a new submitter instance", Duration::from_secs(30), |_| {
                        instance_pids(stack, "submitter").len() > before
                    })
                });
            }
        }
    }

    /// Kills the process that holds the notifier (SIGKILL) and returns once another one runs:
    /// `serve`, restarted on the same database ([`Deployment::kill_sender`]); on AWS every
    /// instance of the timer function, whose sweep's `notify` duty tells the channels: the
    /// stand-in starts a new instance (a cold start, as Lambda starts a new execution
    /// environment), so whatever an instance kept in memory between invocations is gone and the
    /// channels go on from what the store holds. On AWS the kill waits first until the
    /// invocation that told the last notification has ended (its `notify` duty's summary line):
    /// each channel writes its cursor after each post, and a kill between the two would tell
    /// that notification again (at least once), which is not the restart this stands for.
    pub async fn kill_notifier(&self) {
        match &self.running {
            Running::Serve(_) => self.kill_sender().await,
            Running::Aws(stack) => {
                let timer = |l: &str, what: &str| l.starts_with("[timer]") && l.contains(what);
                let ended = || {
                    let lines = stack.lines();
                    lines
                        .iter()
                        .rposition(|l| timer(l, "notification delivered"))
                        .is_none_or(|i| lines[i..].iter().any(|l| timer(l, r#""duty":"notify""#)))
                };
                let end = Instant::now() + Duration::from_secs(60);
                while !ended() {
                    assert!(
                        Instant::now() < end,
                        "the notify duty did not end within 60 s:\n{}",
                        stack.tail()
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
                let before = kill_every_instance(stack, "timer");
                tokio::task::block_in_place(|| {
                    stack.wait_for("a new timer instance", Duration::from_secs(30), |_| {
                        instance_pids(stack, "timer").len() > before
                    })
                });
            }
        }
    }

    /// Everything the deployment logged so far: serve's log, or the stack's output (its own
    /// lines and each function process's, prefixed with the function's name).
    pub async fn full_log(&self) -> String {
        match &self.running {
            Running::Serve(w) => w.lock().await.log(),
            Running::Aws(stack) => stack.lines().join("\n"),
        }
    }

    /// On aws-local, runs the recurring schedules (the sweep's duties) at their own periods, as
    /// deployed (`on`), or back at the suite's [`SWEEP_EVERY`]: the local stack's SIGUSR1 and
    /// SIGUSR2 (infra/aws_local/__main__.py). A measurement of a lane's pace turns it on for its
    /// run: capped, the duties put 60 times AWS's sweep load on the emulator, which serves one
    /// request at a time. Waits until the stack has logged the change. Nothing on serve, whose
    /// duties always run at their own periods.
    pub async fn sweep_as_deployed(&self, on: bool) {
        if let Running::Aws(stack) = &self.running {
            let (signal, line) = if on {
                ("USR1", "recurring schedules at their own periods")
            } else {
                ("USR2", "recurring schedules capped at")
            };
            let seen = stack.lines().iter().filter(|l| l.contains(line)).count();
            assert!(stack.signal(signal), "the local stack is not running");
            tokio::task::block_in_place(|| {
                stack.wait_for(line, Duration::from_secs(60), |_| {
                    stack.lines().iter().filter(|l| l.contains(line)).count() > seen
                })
            });
        }
    }

    /// What the deployment logged, for failure messages.
    pub async fn log_tail(&self) -> String {
        match &self.running {
            Running::Serve(w) => {
                let log = w.lock().await.log();
                let skip = log.chars().count().saturating_sub(6000);
                log.chars().skip(skip).collect()
            }
            Running::Aws(stack) => stack.tail(),
        }
    }
}
