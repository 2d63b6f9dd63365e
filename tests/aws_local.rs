//! The serverless shape run as processes (`bash infra/aws-local.sh`): the real function binaries
//! behind local Lambda Runtime APIs, over the moto emulator with the resources of template.yaml,
//! behind the local HTTP API, Scheduler and SQS event sources (infra/aws_local/).
//!
//! An artifact pushed through the local HTTP API raises an expectation due a few seconds ahead;
//! the lapse task reaches the example agent (`a2a-watcher example-agent`) through the timer,
//! the timer queue, the lapse queue and the submitter binaries, once. A submitter instance
//! killed while idle is replaced and the lapse still arrives once; one killed while the agent
//! holds its answer leaves the record to come back (after `--visibility-timeout-cap`) to a new
//! instance, which finds the agent's task with `ListTasks`: the agent gets the `messageId`
//! once, and the lapse is recorded as sent with that task. Stopping the stack leaves no
//! function process behind.
//!
//! Needs `.venv` with moto (`bash infra/moto.sh` installs it) and the function binaries in the
//! target folder (`cargo build -p watcher-fn-api -p watcher-fn-timer -p watcher-fn-submitter
//! -p watcher-fn-lesson-write`; infra/test-all.sh builds them). Without them the test says so
//! and passes, unless `CI=true`, where it fails.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use watcher_delivery::testing::{Behaviour, CaptureAgent};

use common::{one_expectation, origin};

const FUNCTIONS: [&str; 4] = ["api", "timer", "submitter", "lesson-write"];
const PUSH_TOKEN: &str = "push-token-aws-local";
const HELD_TOKEN: &str = "push-token-held";
const OPERATOR_TOKEN: &str = "ops-token-aws-local";
/// Seconds a record held by a dead submitter instance takes to come back
/// (`--visibility-timeout-cap`; the template's 360 s would make the test six minutes long).
const VISIBILITY_CAP: u64 = 4;

/// The workspace root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder `cargo test` built into (target/debug, or $CARGO_TARGET_DIR/debug).
fn bin_dir() -> PathBuf {
    Path::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .parent()
        .expect("the binary's folder")
        .to_path_buf()
}

/// Why `.venv`'s python with moto, boto3 and PyYAML is not usable here, if it is not.
fn missing_python() -> Option<String> {
    let python = root().join(".venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import moto, boto3, yaml"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        return Some(format!(
            "{} with moto is missing (bash infra/moto.sh installs it)",
            python.display()
        ));
    }
    None
}

/// Why the stack cannot run here, if it cannot.
fn missing_prerequisite() -> Option<String> {
    if let Some(why) = missing_python() {
        return Some(why);
    }
    let absent: Vec<&str> = FUNCTIONS
        .iter()
        .copied()
        .filter(|f| !bin_dir().join(f).is_file())
        .collect();
    if !absent.is_empty() {
        return Some(format!(
            "the function binaries {absent:?} are not built in {} (cargo build -p watcher-fn-api \
             -p watcher-fn-timer -p watcher-fn-submitter -p watcher-fn-lesson-write)",
            bin_dir().display()
        ));
    }
    None
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// A child whose output lines are collected, and which is stopped (SIGTERM, then SIGKILL) when
/// dropped.
struct Proc {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    new_line: mpsc::Receiver<()>,
}

impl Proc {
    fn spawn(mut cmd: Command) -> Proc {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn");
        let out = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, new_line) = mpsc::channel();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
                let _ = tx.send(());
            }
        });
        Proc {
            child,
            lines,
            new_line,
        }
    }

    fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits until a line satisfies `pred` and returns it; panics with the output after
    /// `timeout`.
    fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + timeout;
        loop {
            if let Some(l) = self.lines().into_iter().find(|l| pred(l)) {
                return l;
            }
            let left = end.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no {what} within {timeout:?}; output:\n{}",
                self.tail()
            );
            let _ = self
                .new_line
                .recv_timeout(left.min(Duration::from_millis(200)));
        }
    }

    fn tail(&self) -> String {
        let lines = self.lines();
        let from = lines.len().saturating_sub(60);
        lines[from..]
            .iter()
            .map(|l| l.chars().take(400).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// SIGTERM, and the exit within `timeout` (SIGKILL after it).
    fn terminate(&mut self, timeout: Duration) -> bool {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        false
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate(Duration::from_secs(10));
        }
    }
}

fn alive(pid: u32) -> bool {
    // A zombie has exited: only a running or sleeping process counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
}

/// The pids of the instances of function `name` started so far ("[name] started (pid N)").
fn instance_pids(stack: &Proc, name: &str) -> Vec<u32> {
    let prefix = format!("[{name}] started (pid ");
    stack
        .lines()
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|r| r.trim_end_matches(')').parse().ok())
        .collect()
}

/// Kills every instance of function `name` (whichever holds the lapse task); answers how many
/// instances had started before, so a caller can wait for a new one.
fn kill_every_instance(stack: &Proc, name: &str) -> usize {
    let pids = instance_pids(stack, name);
    assert!(!pids.is_empty(), "no {name} instance started");
    for pid in &pids {
        // An instance replaced earlier is gone already; kill says so and nothing happens.
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
    pids.len()
}

/// The lapse tasks the example agent printed for expectation `id`.
fn lapses_for(agent: &Proc, id: &str) -> usize {
    let needle = format!("agent <- lapse task lapse:{id}:overdue:");
    agent
        .lines()
        .iter()
        .filter(|l| l.starts_with(&needle))
        .count()
}

async fn push(http: &reqwest::Client, api: &str, body: &Value) -> (u16, Value) {
    push_as(http, api, "booking", PUSH_TOKEN, body).await
}

async fn push_as(
    http: &reqwest::Client,
    api: &str,
    agent: &str,
    token: &str,
    body: &Value,
) -> (u16, Value) {
    let resp = http
        .post(format!("{api}/v1/agents/{agent}/push"))
        .header("X-A2A-Notification-Token", token)
        .json(body)
        .send()
        .await
        .expect("the local HTTP API answers");
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

/// Skips (with the reason) when `why` is set, except in CI, where it fails.
fn skip(test: &str, why: Option<String>) -> bool {
    let Some(why) = why else { return false };
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "{test} cannot run in CI: {why}"
    );
    eprintln!("SKIPPED {test}: {why}");
    true
}

/// The stand-ins' own unit tests (infra/aws_local/test_units.py): template loading and
/// resolution, route matching, the 2.0 event and response, schedule expressions, and, on
/// moto's in-process mock, queues made as the template says, a one-time schedule fired once at
/// its time and deleted, the sweep at its rate, and a batch keeping only its failed records.
#[test]
fn the_stand_ins_pass_their_unit_tests() {
    if skip("the_stand_ins_pass_their_unit_tests", missing_python()) {
        return;
    }
    let out = Command::new(root().join(".venv/bin/python"))
        .args(["-m", "unittest", "-v", "aws_local.test_units"])
        .current_dir(root().join("infra"))
        .env_remove("AWS_ENDPOINT_URL")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn lapse_tasks_travel_through_the_function_processes_once() {
    if skip(
        "lapse_tasks_travel_through_the_function_processes_once",
        missing_prerequisite(),
    ) {
        return;
    }

    // The example agent, a real A2A agent printing each lapse task it accepts.
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"));
    cmd.args(["example-agent", "--listen", "127.0.0.1:0"]);
    let agent = Proc::spawn(cmd);
    let listening = agent.wait_for("agent start", Duration::from_secs(20), |l| {
        l.starts_with("example agent listening on ")
    });
    let agent_url = listening["example agent listening on ".len()..]
        .split_whitespace()
        .next()
        .expect("the agent's URL")
        .to_string();

    // A second agent that keeps its tasks (ListTasks) and can hold its answers, for the crash
    // in flight. Its card is a file: the function processes run on this machine.
    let held = CaptureAgent::spawn_keeping_tasks(Behaviour::accept())
        .await
        .expect("capture agent");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut card: Value = serde_json::from_str(include_str!("../examples/booking-card.json"))
        .expect("examples/booking-card.json is JSON");
    card["supportedInterfaces"][0]["url"] = json!(held.url());
    let card_path = dir.path().join("held-card.json");
    std::fs::write(&card_path, card.to_string()).expect("write the card");
    let config = dir.path().join("watcher.toml");
    std::fs::write(
        &config,
        format!(
            r#"allow_private_endpoints = true

[[agents]]
id = "booking"
card = "{agent_url}"
push_token = "{PUSH_TOKEN}"

[[agents]]
id = "held"
card = "{card}"
endpoint = "{held_url}"
push_token = "{HELD_TOKEN}"
reconcile = false

[[operators]]
id = "ops"
token = "{OPERATOR_TOKEN}"
"#,
            card = card_path.display(),
            held_url = held.url(),
        ),
    )
    .expect("write the configuration");

    let (api_port, moto_port) = (free_port(), free_port());
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("infra/aws-local.sh"))
        .args(["--no-build", "--port", &api_port.to_string()])
        .args(["--moto-port", &moto_port.to_string()])
        .args(["--visibility-timeout-cap", &VISIBILITY_CAP.to_string()])
        .arg("--config")
        .arg(&config)
        .env(
            "CARGO_TARGET_DIR",
            bin_dir().parent().expect("the target folder"),
        );
    let mut stack = Proc::spawn(cmd);
    let ready = stack.wait_for("ready line", Duration::from_secs(120), |l| {
        l.starts_with("[aws-local] ready at ")
    });
    let api = format!("http://127.0.0.1:{api_port}");
    assert!(ready.contains(&api), "{ready}");
    // One instance a function, and the submitter as many as its event source's
    // MaximumConcurrency (several start as the stack comes up).
    for f in FUNCTIONS {
        assert!(
            !instance_pids(&stack, f).is_empty(),
            "{f}: {}",
            stack.tail()
        );
    }

    let http = reqwest::Client::new();
    let health = http
        .get(format!("{api}/healthz"))
        .send()
        .await
        .expect("healthz");
    assert_eq!(health.status().as_u16(), 200);
    // A path no route of the template matches: API Gateway's own 404.
    let none = http
        .get(format!("{api}/v1/no-such-route"))
        .send()
        .await
        .expect("404");
    assert_eq!(none.status().as_u16(), 404);

    // Scenario 1: due 3 s ahead, grace 1 s; the lapse arrives through timer → timer queue →
    // lapse queue → submitter, once.
    let due = origin(Duration::from_secs(3));
    let (status, body) = push(
        &http,
        &api,
        &one_expectation("t-1", "m-1", "S-1", due, "PT1S"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["raised"], serde_json::json!(["m-1"]), "{body}");
    agent.wait_for("lapse task of m-1", Duration::from_secs(60), |l| {
        l.starts_with("agent <- lapse task lapse:m-1:overdue:")
    });
    // The submitter process's own log says it delivered it.
    stack.wait_for("the submitter's delivery", Duration::from_secs(10), |l| {
        l.starts_with("[submitter]")
            && l.contains("lapse task delivered")
            && l.contains("lapse:m-1:overdue:")
    });

    // Scenario 2: the submitter instance is killed while the lapse waits for its deadline; a
    // new instance takes the lapse queue and the task arrives once.
    let due = origin(Duration::from_secs(4));
    let (status, body) = push(
        &http,
        &api,
        &one_expectation("t-2", "m-2", "S-2", due, "PT1S"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let before = kill_every_instance(&stack, "submitter");
    stack.wait_for("a new submitter instance", Duration::from_secs(30), |_| {
        instance_pids(&stack, "submitter").len() > before
    });
    agent.wait_for("lapse task of m-2", Duration::from_secs(60), |l| {
        l.starts_with("agent <- lapse task lapse:m-2:overdue:")
    });

    // Exactly once each, also a few seconds on (a second delivery would come within them: the
    // queue sources poll every 0.25 s).
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(lapses_for(&agent, "m-1"), 1, "{}", agent.tail());
    assert_eq!(lapses_for(&agent, "m-2"), 1, "{}", agent.tail());

    // Scenario 3: the submitter instance dies while the agent holds its answer to the lapse
    // task it accepted. The record comes back to a new instance, which finds the task with
    // ListTasks and records it as sent: the agent gets the messageId once.
    held.hold(true);
    let due = origin(Duration::from_secs(2));
    let (status, body) = push_as(
        &http,
        &api,
        "held",
        HELD_TOKEN,
        &one_expectation("t-3", "m-3", "S-3", due, "PT1S"),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let end = Instant::now() + Duration::from_secs(60);
    while held.sent_message_ids().is_empty() {
        assert!(
            Instant::now() < end,
            "no lapse task reached the held agent: {}",
            stack.tail()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let before = kill_every_instance(&stack, "submitter");
    stack.wait_for("a new submitter instance", Duration::from_secs(30), |_| {
        instance_pids(&stack, "submitter").len() > before
    });
    held.hold(false);
    let end = Instant::now() + Duration::from_secs(60);
    let lapse = loop {
        let lapses: Value = http
            .get(format!("{api}/v1/lapses"))
            .bearer_auth(OPERATOR_TOKEN)
            .send()
            .await
            .expect("GET /v1/lapses")
            .json()
            .await
            .expect("JSON");
        let found = lapses["lapses"]
            .as_array()
            .and_then(|l| l.iter().find(|x| x["expectationId"] == "m-3").cloned());
        if let Some(l) = found.filter(|l| l["delivery"] == "sent") {
            break l;
        }
        assert!(
            Instant::now() < end,
            "m-3 not recorded as sent: {lapses:#}\n{}",
            stack.tail()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    let sent = held.sent_message_ids();
    assert_eq!(
        sent,
        vec![lapse["messageId"].as_str().unwrap().to_string()],
        "{lapse:#}"
    );
    let listed = held
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("ListTasks"))
        .count();
    assert!(
        listed >= 1,
        "the new instance looked for the ambiguous task before sending again"
    );
    let task = held.tasks().into_iter().next().expect("the agent's task");
    assert_eq!(lapse["taskId"], task["id"], "{lapse:#}");

    // SIGTERM stops every instance it started.
    let pids: Vec<u32> = FUNCTIONS
        .iter()
        .flat_map(|f| instance_pids(&stack, f))
        .collect();
    assert!(
        stack.terminate(Duration::from_secs(20)),
        "aws-local did not stop on SIGTERM: {}",
        stack.tail()
    );
    std::thread::sleep(Duration::from_millis(300));
    let left: Vec<u32> = pids.into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "function processes left running: {left:?}");
}
