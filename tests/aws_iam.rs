//! IAM on the local AWS stack (docs/howto/aws-local.md, "IAM on the local stack"): every call a
//! function makes is evaluated against its role in `template.yaml`, and a statement the
//! template lacks surfaces as AWS's denial.
//!
//! The path is the submitter's origin-check withdrawal (expectations-v1 §7), the one IAM found
//! denied (issue 40): task `task-w` raises `w-soon`, due in seconds, and `w-later`, due in
//! 30 minutes and so armed as a schedule. At `w-soon`'s lapse the submitter asks the agent for
//! the task (`GetTask`), finds it canceled, and withdraws both; `w-later`'s schedule is
//! disarmed by a message to the timer queue (the timer function deletes it), or, when that
//! send fails, by the submitter's own `DeleteSchedule`.
//!
//! Two stacks run at once on the same configuration. On `template.yaml` the schedule goes and
//! nothing is denied. On a copy without the submitter's `DisarmWithdrawnTimers` (sqs:SendMessage
//! to the timer queue) and SchedulerRole's `InvokeTimer` (lambda:InvokeFunction on the timer),
//! the emulator answers the submitter's send with `AccessDenied` (its log says so, and the
//! model lists the denial), the fallback `DeleteSchedule` still removes the schedule, and the
//! sweep's invocation is denied to Scheduler, which says so and retries.
//!
//! Needs what tests/aws_local.rs needs, and the IAM evaluator (`bash infra/iam.sh`: node and
//! npm); without it the test says so and passes, unless `CI=true`, where it fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use a2a_types::TaskState;
use serde_json::{json, Value};
use watcher_delivery::testing::{Behaviour, CaptureAgent, CapturedRequest, Reply};

use common::aws_stack::{aws_missing, bin_dir, free_port, root, Proc};
use common::{fmt, one_expectation, origin, wait_until};

const PUSH_TOKEN: &str = "push-token-iam";
const OPERATOR_TOKEN: &str = "ops-token-iam";
const GROUP: &str = "a2a-watcher-local-timers";

/// Why the IAM evaluator cannot run here, if it cannot.
fn evaluator_missing() -> Option<String> {
    let node = Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !node {
        return Some("node is not installed (bash infra/iam.sh says what is needed)".into());
    }
    let module = root().join("infra/iam/node_modules/@cloud-copilot/iam-simulate/package.json");
    (!module.is_file()).then(|| "the IAM evaluator is not installed (bash infra/iam.sh)".into())
}

/// `template` with the statement whose `Sid` is `sid` removed: its lines, from `- Sid: {sid}`
/// to the next statement or comment at the same indentation.
fn without_statement(template: &str, sid: &str) -> String {
    let lines: Vec<&str> = template.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with(&format!("- Sid: {sid}")))
        .unwrap_or_else(|| panic!("template.yaml has no statement {sid}"));
    let indent = lines[start].len() - lines[start].trim_start().len();
    let end = lines[start + 1..]
        .iter()
        .position(|l| {
            let i = l.len() - l.trim_start().len();
            !l.trim().is_empty()
                && (i < indent || (i == indent && !l.trim_start().starts_with("Effect")))
        })
        .map_or(lines.len(), |n| start + 1 + n);
    let mut out: Vec<&str> = lines[..start].to_vec();
    out.extend_from_slice(&lines[end..]);
    out.join("\n") + "\n"
}

/// A JSON-RPC answer with `result`.
fn rpc_result(req: &CapturedRequest, result: Value) -> Reply {
    Reply::Http {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: json!({ "jsonrpc": "2.0", "id": req.rpc_id(), "result": result }).to_string(),
    }
}

/// Starts the stack on `template` with `config`; the process and its API URL and emulator URL.
fn start_stack(template: &Path, config: &Path) -> (Proc, String, String) {
    let (api_port, moto_port, dynamodb_port) = (free_port(), free_port(), free_port());
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("infra/aws-local.sh"))
        .args(["--no-build", "--log", "-", "--port", &api_port.to_string()])
        .args(["--moto-port", &moto_port.to_string()])
        .args(["--dynamodb-port", &dynamodb_port.to_string()])
        .args(["--iam", "on", "--rate-cap", "5"])
        .arg("--template")
        .arg(template)
        .arg("--config")
        .arg(config)
        .env(
            "CARGO_TARGET_DIR",
            bin_dir().parent().expect("the target folder"),
        );
    let stack = Proc::spawn(cmd);
    (
        stack,
        format!("http://127.0.0.1:{api_port}"),
        format!("http://127.0.0.1:{moto_port}"),
    )
}

/// The names of the schedules in the timers' group, read from the emulator (signed as the
/// deployer, `test`, whom the model lets through).
async fn schedules(http: &reqwest::Client, emulator: &str) -> Vec<String> {
    let answer = http
        .get(format!("{emulator}/schedules?ScheduleGroup={GROUP}"))
        .header(
            "Authorization",
            "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/scheduler/aws4_request, \
             SignedHeaders=host, Signature=0",
        )
        .send()
        .await
        .expect("the emulator answers");
    let body: Value = answer.json().await.unwrap_or(Value::Null);
    body["Schedules"]
        .as_array()
        .map(|l| {
            l.iter()
                .filter_map(|s| s["Name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// The iam part's state at the emulator (`GET /_model/iam`).
async fn iam_state(http: &reqwest::Client, emulator: &str) -> Value {
    http.get(format!("{emulator}/_model/iam"))
        .send()
        .await
        .expect("the emulator answers")
        .json()
        .await
        .expect("JSON")
}

/// The status of expectation `id` of shipment `shipment`, as the operator reads it.
async fn status_of(http: &reqwest::Client, api: &str, shipment: &str, id: &str) -> Option<String> {
    let answer = http
        .get(format!("{api}/v1/subjects/shipment/{shipment}"))
        .bearer_auth(OPERATOR_TOKEN)
        .send()
        .await
        .ok()?;
    let body: Value = answer.json().await.ok()?;
    body["expectations"]
        .as_array()?
        .iter()
        .find(|e| e["expectationId"] == id)
        .and_then(|e| e["status"].as_str().map(str::to_owned))
}

/// Pushes task `task-w`'s two expectations and waits until the origin check withdrew
/// `w-later`; the name of the schedule it had armed.
async fn withdraw_a_future_timer(http: &reqwest::Client, api: &str, emulator: &str, stack: &Proc) {
    let mut body = one_expectation(
        "task-w",
        "w-soon",
        "PA-w1",
        origin(Duration::from_secs(3)),
        "PT0S",
    );
    let list = &mut body["artifactUpdate"]["artifact"]["metadata"][common::URI]["expectations"];
    let mut later = list[0].clone();
    later["expectationId"] = json!("w-later");
    later["subject"]["id"] = json!("PA-w2");
    later["satisfiedBy"]["factKey"] = json!("shipment.manifest.received:PA-w2");
    later["dueAt"] = json!(fmt(origin(Duration::from_secs(1800))));
    list.as_array_mut().expect("a list").push(later);
    let answer = http
        .post(format!("{api}/v1/agents/recon/push"))
        .header("X-A2A-Notification-Token", PUSH_TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the local HTTP API answers");
    assert_eq!(answer.status().as_u16(), 200, "{}", stack.tail());
    // w-later is 30 minutes ahead: armed as a one-time schedule, beside the sweep.
    let armed = wait_until(
        || async {
            schedules(http, emulator)
                .await
                .iter()
                .any(|n| n.starts_with("d-"))
        },
        Duration::from_secs(20),
    )
    .await;
    assert!(
        armed,
        "no schedule armed for w-later: {:?}",
        schedules(http, emulator).await
    );
    let withdrawn = wait_until(
        || async { status_of(http, api, "PA-w2", "w-later").await.as_deref() == Some("withdrawn") },
        Duration::from_secs(90),
    )
    .await;
    assert!(withdrawn, "w-later not withdrawn; stack:\n{}", stack.tail());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_statement_removed_from_the_template_is_denied_as_aws_denies_it() {
    let test = "a_statement_removed_from_the_template_is_denied_as_aws_denies_it";
    if common::aws_stack::skipped(test, aws_missing().or_else(evaluator_missing), true) {
        return;
    }
    // The recon agent: every task canceled as GetTask sees it; never pushes.
    let agent = CaptureAgent::spawn(Behaviour::from_fn(|n, req| {
        match req.rpc_method().as_deref() {
            Some("GetTask") => {
                let id = req
                    .json()
                    .and_then(|v| v.pointer("/params/id").cloned())
                    .unwrap_or(Value::Null);
                rpc_result(
                    req,
                    json!({ "id": id, "contextId": "ctx-task-w",
                            "status": { "state": "TASK_STATE_CANCELED",
                                        "timestamp": "2026-11-30T00:00:00Z" } }),
                )
            }
            _ => Reply::task(format!("lapse-task-{n}"), TaskState::Submitted),
        }
    }))
    .await
    .expect("capture agent");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut card: Value = serde_json::from_str(include_str!("../examples/booking-card.json"))
        .expect("examples/booking-card.json is JSON");
    card["supportedInterfaces"][0]["url"] = json!(agent.url());
    let card_path = dir.path().join("recon-card.json");
    std::fs::write(&card_path, card.to_string()).expect("write the card");
    let config = dir.path().join("watcher.toml");
    std::fs::write(
        &config,
        format!(
            "allow_private_endpoints = true\n\n[[agents]]\nid = \"recon\"\ncard = \"{card}\"\n\
             endpoint = \"{url}\"\npush_token = \"{PUSH_TOKEN}\"\nreconcile = true\n\n{operator}",
            card = card_path.display(),
            url = agent.url(),
            operator = common::entry_toml("operators", "ops", OPERATOR_TOKEN),
        ),
    )
    .expect("write the configuration");
    let real: PathBuf = root().join("template.yaml");
    let text = std::fs::read_to_string(&real).expect("template.yaml");
    let stripped_text = without_statement(
        &without_statement(&text, "DisarmWithdrawnTimers"),
        "InvokeTimer",
    );
    assert!(
        !stripped_text.contains("DisarmWithdrawnTimers") && !stripped_text.contains("InvokeTimer")
    );
    assert!(
        stripped_text.contains("DeleteWithdrawnTimers")
            && stripped_text.contains("Sid: DeadLetter")
    );
    let stripped = dir.path().join("template.yaml");
    std::fs::write(&stripped, stripped_text).expect("write the template copy");

    let (stack, api, emulator) = start_stack(&real, &config);
    let (bare, bare_api, bare_emulator) = start_stack(&stripped, &config);
    for s in [&stack, &bare] {
        s.wait_for("ready line", Duration::from_secs(180), |l| {
            l.starts_with("[aws-local] ready at ")
        });
        s.wait_for("IAM enforced", Duration::from_secs(1), |l| {
            l.starts_with("[aws-local] IAM enforced for 5 roles")
        });
    }
    let http = reqwest::Client::new();
    let (real_run, bare_run) = tokio::join!(
        withdraw_a_future_timer(&http, &api, &emulator, &stack),
        withdraw_a_future_timer(&http, &bare_api, &bare_emulator, &bare),
    );
    let ((), ()) = (real_run, bare_run);

    // template.yaml: the timer function deletes the schedule the disarm message names, and
    // nothing any role did was denied.
    let gone = wait_until(
        || async {
            !schedules(&http, &emulator)
                .await
                .iter()
                .any(|n| n.starts_with("d-"))
        },
        Duration::from_secs(30),
    )
    .await;
    assert!(
        gone,
        "w-later's schedule stayed armed: {:?}",
        schedules(&http, &emulator).await
    );
    let state = iam_state(&http, &emulator).await;
    assert_eq!(state["counts"]["denied"], 0, "{state:#}");
    assert!(state["counts"]["allowed"].as_u64() > Some(0), "{state:#}");

    // The copy: the submitter's send to the timer queue is denied with AWS's message, in its
    // own log; its fallback DeleteSchedule (DeleteWithdrawnTimers) removes the schedule.
    bare.wait_for(
        "the submitter's denied disarm",
        Duration::from_secs(30),
        |l| {
            l.starts_with("[submitter]")
                && l.contains("queueing a schedule delete failed")
                && l.contains("AccessDenied")
        },
    );
    let gone = wait_until(
        || async {
            !schedules(&http, &bare_emulator)
                .await
                .iter()
                .any(|n| n.starts_with("d-"))
        },
        Duration::from_secs(30),
    )
    .await;
    assert!(
        gone,
        "the fallback DeleteSchedule did not run: {}",
        bare.tail()
    );
    // The sweep (every 5 s here) is denied to Scheduler: lambda:InvokeFunction as SchedulerRole,
    // retried (the sweep has no dead-letter queue: a missed sweep is harmless).
    bare.wait_for(
        "the sweep's denied invocation",
        Duration::from_secs(60),
        |l| {
            l.contains("schedule sweep: invocation failed")
                && l.contains("AccessDeniedException")
                && l.contains("is not authorized to perform: lambda:InvokeFunction")
        },
    );
    let state = iam_state(&http, &bare_emulator).await;
    let denials = state["denials"].as_array().cloned().unwrap_or_default();
    let denied = |action: &str, role: &str, resource: &str| {
        denials.iter().any(|d| {
            d["action"] == action
                && d["principal"].as_str().is_some_and(|p| p.contains(role))
                && d["resource"]
                    .as_str()
                    .is_some_and(|r| r.ends_with(resource))
                && d["decision"] == "ImplicitlyDenied"
        })
    };
    assert!(
        denied(
            "sqs:SendMessage",
            "SubmitterFunctionRole",
            ":a2a-watcher-local-TimerQueue"
        ),
        "{state:#}"
    );
    assert!(
        denied(
            "lambda:InvokeFunction",
            "SchedulerRole",
            ":function:a2a-watcher-local-timer"
        ),
        "{state:#}"
    );
    assert!(stack.terminate(Duration::from_secs(30)));
    assert!(bare.terminate(Duration::from_secs(30)));
}
