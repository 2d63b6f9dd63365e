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

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use watcher_delivery::testing::{Behaviour, CaptureAgent};

use common::aws_stack::{
    aws_missing, instance_pids, kill_every_instance, missing_python, root, Proc, FUNCTIONS,
};
use common::{one_expectation, origin};

const PUSH_TOKEN: &str = "push-token-aws-local";
const HELD_TOKEN: &str = "push-token-held";
const OPERATOR_TOKEN: &str = "ops-token-aws-local";
/// Seconds a record held by a dead submitter instance takes to come back
/// (`--visibility-timeout-cap`; the template's 360 s would make the test six minutes long).
const VISIBILITY_CAP: u64 = 4;

fn alive(pid: u32) -> bool {
    // A zombie has exited: only a running or sleeping process counts.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| {
        s.rsplit(')')
            .next()
            .is_some_and(|r| !r.trim_start().starts_with('Z'))
    })
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
    common::aws_stack::skipped(test, why, true)
}

/// The stand-ins' own unit tests (infra/aws_local/test_units.py): template loading and
/// resolution, route matching, the 2.0 event and response, schedule expressions, and, on
/// moto's in-process mock, queues made as the template says, a one-time schedule fired once at
/// its time and deleted, each sweep duty at its own minute (and at its place in a capped
/// period), and a batch keeping only its failed records.
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

/// The scale model's own unit tests (infra/aws_model/test_*.py): how a call is read and
/// refused in each protocol, and each part (IAM, faults, limits) on calls built by hand.
#[test]
fn the_model_of_aws_passes_its_unit_tests() {
    if skip("the_model_of_aws_passes_its_unit_tests", missing_python()) {
        return;
    }
    let out = Command::new(root().join(".venv/bin/python"))
        .args([
            "-m",
            "unittest",
            "discover",
            "-v",
            "-s",
            "aws_model",
            "-t",
            ".",
        ])
        .current_dir(root().join("infra"))
        .env_remove("AWS_ENDPOINT_URL")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .output()
        .expect("run python");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{text}");
    // Discovery that finds nothing also succeeds: the calls' own tests must have run.
    assert!(
        text.contains("test_a_json_protocol_call_names_its_operation_and_caller"),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn lapse_tasks_travel_through_the_function_processes_once() {
    if skip(
        "lapse_tasks_travel_through_the_function_processes_once",
        aws_missing(),
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
        .to_owned();

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

{operator}"#,
            operator = common::entry_toml("operators", "ops", OPERATOR_TOKEN),
            card = card_path.display(),
            held_url = held.url(),
        ),
    )
    .expect("write the configuration");

    // Every function's lines on the stack's stdout, where the test reads them.
    let cap = VISIBILITY_CAP.to_string();
    let common::aws_stack::Stack {
        proc: stack, api, ..
    } = common::aws_stack::start(&["--visibility-timeout-cap", &cap], &config);
    let ready = common::aws_stack::wait_ready(&stack, Duration::from_secs(120));
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
        vec![lapse["messageId"].as_str().unwrap().to_owned()],
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
    // Each function's instances are told at once and given 5 s each (infra/aws_local/runtime.py):
    // a bound well over that, for a loaded machine.
    assert!(
        stack.terminate(Duration::from_secs(60)),
        "aws-local did not stop on SIGTERM: {}",
        stack.tail()
    );
    std::thread::sleep(Duration::from_millis(300));
    let left: Vec<u32> = pids.into_iter().filter(|p| alive(*p)).collect();
    assert!(left.is_empty(), "function processes left running: {left:?}");
}
