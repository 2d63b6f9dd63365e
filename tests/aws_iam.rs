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
//! A second test runs `template.yaml` alone through the timers more than 15 minutes ahead
//! (schedules armed, re-armed after an early fire, disarmed) by the api, timer and lesson-write
//! roles: infra/iam_coverage.py counts on it for those statements.
//!
//! Needs what tests/aws_local.rs needs, and the IAM evaluator (`bash infra/iam.sh`: node and
//! npm); without it the test says so and passes, unless `CI=true`, where it fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use a2a_types::TaskState;
use serde_json::{json, Value};
use watcher_delivery::testing::{Behaviour, CaptureAgent, Reply};

use common::aws_stack::{aws_missing, root, Proc};
use common::{fmt, one_expectation, origin, wait_until, TEACHER_TOKEN};

const PUSH_TOKEN: &str = "push-token-iam";
const OPERATOR_TOKEN: &str = "ops-token-iam";
const GROUP: &str = "a2a-watcher-local-timers";
/// The teacher of [`common::TEACHER_TOML`].
const TEACHER_ID: &str = "dana";

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

/// Starts the stack on `template` with `config`; the process and its API URL and emulator URL.
fn start_stack(template: &Path, config: &Path) -> (Proc, String, String) {
    let template = template.to_string_lossy();
    let stack = common::aws_stack::start(
        &["--iam", "on", "--rate-cap", "5", "--template", &template],
        config,
    );
    (stack.proc, stack.api, stack.emulator)
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
                Reply::rpc_result(
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
    let config = dir.path().join("watcher.toml");
    std::fs::write(
        &config,
        format!(
            "allow_private_endpoints = true\n\n{agent}\n{operator}",
            agent = common::agent_with_card(
                dir.path(),
                "recon",
                &agent.url(),
                PUSH_TOKEN,
                "reconcile = true"
            ),
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
            // The four functions', the scheduler's and CodeDeploy's (DeploymentPreference).
            l.starts_with("[aws-local] IAM enforced for 6 roles")
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
    // The sweep's duties (every 5 s here) are denied to Scheduler: lambda:InvokeFunction as
    // SchedulerRole, retried (a duty's tick has no dead-letter queue: a missed tick is harmless).
    bare.wait_for(
        "the sweep's denied invocation",
        Duration::from_secs(60),
        |l| {
            l.contains("schedule sweep-timers: invocation failed")
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
            // The alias the sweep's schedules invoke (template.yaml, AutoPublishAlias).
            ":function:a2a-watcher-local-timer:live"
        ),
        "{state:#}"
    );
    assert!(stack.terminate(Duration::from_secs(30)));
    assert!(bare.terminate(Duration::from_secs(30)));
}

/// An `Authorization` header naming the deployer (`test`) for `service`: the model lets the
/// deployer through, and the emulator routes the request by the service it names.
pub(crate) fn as_deployer(service: &str) -> String {
    format!(
        "AWS4-HMAC-SHA256 Credential=test/20260101/us-east-1/{service}/aws4_request, \
         SignedHeaders=host, Signature=0"
    )
}

/// Schedule `name` of the timers' group as `GetSchedule` answers it (`None` when it is gone).
pub(crate) async fn schedule(http: &reqwest::Client, emulator: &str, name: &str) -> Option<Value> {
    let answer = http
        .get(format!("{emulator}/schedules/{name}?groupName={GROUP}"))
        .header("Authorization", as_deployer("scheduler"))
        .send()
        .await
        .expect("the emulator answers");
    if !answer.status().is_success() {
        return None;
    }
    answer.json().await.ok()
}

/// The one-time schedules of the timers' group, each with the timer input it hands the timer
/// function (`{"tenant", "timer": {"subject", "expectation", "kind"}}`).
async fn armed(http: &reqwest::Client, emulator: &str) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for name in schedules(http, emulator).await {
        if !(name.starts_with("d-") || name.starts_with("h-")) {
            continue;
        }
        if let Some(s) = schedule(http, emulator, &name).await {
            let input = s["Target"]["Input"]
                .as_str()
                .and_then(|i| serde_json::from_str(i).ok())
                .unwrap_or(Value::Null);
            out.push((name, input));
        }
    }
    out
}

/// The name of the schedule armed for the `kind` timer of expectation `id`, if any.
async fn armed_for(http: &reqwest::Client, emulator: &str, id: &str, kind: &str) -> Option<String> {
    armed(http, emulator)
        .await
        .into_iter()
        .find(|(_, i)| i["timer"]["expectation"]["id"] == id && i["timer"]["kind"] == kind)
        .map(|(name, _)| name)
}

/// Creates, as the deployer, a one-time schedule `name` in the timers' group firing at the next
/// whole second but one with `target` (the timer function, as SchedulerRole, with `input`): the
/// early fire of a schedule, which on AWS comes a minute before its instant (the lead).
async fn fire_early(
    http: &reqwest::Client,
    emulator: &str,
    name: &str,
    target: &Value,
    input: &Value,
) {
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(2);
    let mut target = target.clone();
    target["Input"] = json!(input.to_string());
    let answer = http
        .post(format!("{emulator}/schedules/{name}"))
        .header("Authorization", as_deployer("scheduler"))
        .json(&json!({
            "GroupName": GROUP,
            "ScheduleExpression": format!("at({})", at.strftime("%Y-%m-%dT%H:%M:%S")),
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": { "Mode": "OFF" },
            "ActionAfterCompletion": "DELETE",
            "Target": target,
        }))
        .send()
        .await
        .expect("the emulator answers");
    let status = answer.status();
    assert!(
        status.is_success(),
        "CreateSchedule {name}: {status} {}",
        answer.text().await.unwrap_or_default()
    );
}

/// How many messages of the timer queue wait out their delay (`ApproximateNumberOfMessagesDelayed`).
async fn delayed_timer_messages(http: &reqwest::Client, emulator: &str) -> Option<u64> {
    let call = |target: &'static str, body: Value| {
        http.post(format!("{emulator}/"))
            .header("Authorization", as_deployer("sqs"))
            .header("X-Amz-Target", format!("AmazonSQS.{target}"))
            .header("Content-Type", "application/x-amz-json-1.0")
            .body(body.to_string())
            .send()
    };
    let url: Value = call(
        "GetQueueUrl",
        json!({ "QueueName": "a2a-watcher-local-TimerQueue" }),
    )
    .await
    .ok()?
    .json()
    .await
    .ok()?;
    let attributes: Value = call(
        "GetQueueAttributes",
        json!({ "QueueUrl": url["QueueUrl"], "AttributeNames": ["ApproximateNumberOfMessagesDelayed"] }),
    )
    .await
    .ok()?
    .json()
    .await
    .ok()?;
    attributes["Attributes"]["ApproximateNumberOfMessagesDelayed"]
        .as_str()?
        .parse()
        .ok()
}

/// Timers more than 15 minutes ahead (the timer queue takes the last 900 s), on `template.yaml`
/// under IAM, with nothing denied (infra/iam_coverage.py counts on this test for the statements
/// it reaches):
///
/// - the api arms a schedule for a deadline an hour ahead and one for a horizon 30 days ahead
///   (`CreateSchedule`, `iam:PassRole` of SchedulerRole); a fact meets that expectation and both
///   are disarmed (a timer-queue message; the timer function's `DeleteSchedule`);
/// - a schedule fires early while it still exists, as on AWS, where `ActionAfterCompletion:
///   DELETE` removes it only after the invocation: the timer function re-arms the deadline,
///   still an hour ahead (`CreateSchedule` answers Conflict, then `UpdateSchedule`; PassRole);
/// - a schedule's early fire for a deadline 10 minutes ahead re-arms it as a delayed timer-queue
///   message (the timer's `sqs:SendMessage`, FinishTimers);
/// - a lesson taught with `expiresAt` two hours ahead arms its lesson.review's schedule through
///   lesson-write (`CreateSchedule`, PassRole), and a later lesson into the entry closes the
///   review, whose schedule goes.
///
/// The early fires are schedules the test creates as the deployer with a timer's input: the
/// local Scheduler fires a one-time schedule at its instant only, and these deadlines are an
/// hour away.
#[tokio::test(flavor = "multi_thread")]
async fn timers_beyond_the_timer_queue_are_armed_and_disarmed_under_iam() {
    let test = "timers_beyond_the_timer_queue_are_armed_and_disarmed_under_iam";
    if common::aws_stack::skipped(test, aws_missing().or_else(evaluator_missing), true) {
        return;
    }
    let agent = CaptureAgent::spawn(Behaviour::accept())
        .await
        .expect("capture agent");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let config = dir.path().join("watcher.toml");
    std::fs::write(
        &config,
        format!(
            "allow_private_endpoints = true\n\n{agent}\n{operator}\n{source}\n{teacher}",
            agent = common::agent_with_card(dir.path(), "booking", &agent.url(), PUSH_TOKEN, ""),
            operator = common::entry_toml("operators", "ops", OPERATOR_TOKEN),
            source = common::entry_toml("sources", common::SOURCE_ID, common::SOURCE_TOKEN),
            teacher = common::TEACHER_TOML,
        ),
    )
    .expect("write the configuration");
    let (stack, api, emulator) = start_stack(&root().join("template.yaml"), &config);
    stack.wait_for("ready line", Duration::from_secs(180), |l| {
        l.starts_with("[aws-local] ready at ")
    });
    let http = reqwest::Client::new();

    // f-met: due in an hour, horizon in 30 days; f-open: due in an hour; f-soon: due in 10
    // minutes (a delayed timer-queue message, no schedule).
    let hour = origin(Duration::from_secs(3600));
    let mut body = one_expectation("task-f", "f-met", "PA-f1", hour, "PT0S");
    let list = &mut body["artifactUpdate"]["artifact"]["metadata"][common::URI]["expectations"];
    list[0]["horizon"] = json!(fmt(origin(Duration::from_secs(30 * 86_400))));
    for (id, shipment, due) in [
        ("f-open", "PA-f2", hour),
        ("f-soon", "PA-f3", origin(Duration::from_secs(600))),
    ] {
        let mut e = list[0].clone();
        e.as_object_mut().expect("an object").remove("horizon");
        e["expectationId"] = json!(id);
        e["subject"]["id"] = json!(shipment);
        e["satisfiedBy"]["factKey"] = json!(format!("shipment.manifest.received:{shipment}"));
        e["dueAt"] = json!(fmt(due));
        list.as_array_mut().expect("a list").push(e);
    }
    let answer = http
        .post(format!("{api}/v1/agents/booking/push"))
        .header("X-A2A-Notification-Token", PUSH_TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the local HTTP API answers");
    assert_eq!(answer.status().as_u16(), 200, "{}", stack.tail());
    let pushed: Value = answer.json().await.expect("JSON");
    assert_eq!(
        pushed["raised"],
        json!(["f-met", "f-open", "f-soon"]),
        "{pushed}"
    );

    // The api armed three schedules (f-met's deadline and horizon, f-open's deadline), and
    // f-soon waits in the timer queue.
    let three = wait_until(
        || async { armed(&http, &emulator).await.len() == 3 },
        Duration::from_secs(20),
    )
    .await;
    let now_armed = armed(&http, &emulator).await;
    assert!(three, "{now_armed:?}");
    for (id, kind) in [
        ("f-met", "deadline"),
        ("f-met", "horizon"),
        ("f-open", "deadline"),
    ] {
        assert!(
            armed_for(&http, &emulator, id, kind).await.is_some(),
            "no {kind} schedule for {id}: {now_armed:?}"
        );
    }
    assert_eq!(delayed_timer_messages(&http, &emulator).await, Some(1));
    let open = armed_for(&http, &emulator, "f-open", "deadline")
        .await
        .expect("f-open's schedule");
    let open_schedule = schedule(&http, &emulator, &open)
        .await
        .expect("f-open's schedule");
    // Armed for the deadline less the lead (a minute): docs/aws-latency.md.
    let lead = hour - jiff::SignedDuration::from_secs(60);
    assert_eq!(
        open_schedule["ScheduleExpression"],
        format!("at({})", lead.strftime("%Y-%m-%dT%H:%M:%S")),
        "{open_schedule:#}"
    );
    assert_eq!(
        open_schedule["Target"]["RoleArn"]
            .as_str()
            .map(|r| r.ends_with("-SchedulerRole")),
        Some(true),
        "{open_schedule:#}"
    );

    // A fact meets f-met: both its schedules are disarmed.
    let fact = json!({
        "factKey": "shipment.manifest.received:PA-f1",
        "observedAt": fmt(jiff::Timestamp::now()),
        "subject": { "type": "shipment", "id": "PA-f1" },
    });
    let answer = http
        .post(format!("{api}/v1/facts"))
        .bearer_auth(common::SOURCE_TOKEN)
        .json(&fact)
        .send()
        .await
        .expect("the local HTTP API answers");
    assert_eq!(answer.status().as_u16(), 200, "{}", stack.tail());
    let reported: Value = answer.json().await.expect("JSON");
    assert_eq!(
        reported["results"][0]["satisfied"],
        json!(["f-met"]),
        "{reported}"
    );
    let disarmed = wait_until(
        || async {
            let left = armed(&http, &emulator).await;
            left.len() == 1 && left[0].0 == open
        },
        Duration::from_secs(30),
    )
    .await;
    assert!(
        disarmed,
        "f-met's schedules stayed: {:?}",
        armed(&http, &emulator).await
    );

    // f-open's schedule fires early while it exists: the timer re-arms the deadline an hour
    // ahead, and updates the schedule that is there.
    let before = open_schedule["LastModificationDate"]
        .as_f64()
        .unwrap_or_default();
    let input: Value =
        serde_json::from_str(open_schedule["Target"]["Input"].as_str().unwrap_or(""))
            .expect("the schedule's input is JSON");
    fire_early(
        &http,
        &emulator,
        "early-f-open",
        &open_schedule["Target"],
        &input,
    )
    .await;
    // And f-soon's: ten minutes ahead, the timer re-arms it as a delayed message.
    let mut soon = input.clone();
    soon["timer"]["subject"]["id"] = json!("PA-f3");
    soon["timer"]["expectation"]["id"] = json!("f-soon");
    fire_early(
        &http,
        &emulator,
        "early-f-soon",
        &open_schedule["Target"],
        &soon,
    )
    .await;
    let updated = wait_until(
        || async {
            schedule(&http, &emulator, &open)
                .await
                .and_then(|s| s["LastModificationDate"].as_f64())
                .is_some_and(|t| t > before)
        },
        Duration::from_secs(30),
    )
    .await;
    assert!(
        updated,
        "the timer did not re-arm f-open's schedule: {}",
        stack.tail()
    );
    let after = schedule(&http, &emulator, &open)
        .await
        .expect("f-open's schedule");
    assert_eq!(
        after["ScheduleExpression"], open_schedule["ScheduleExpression"],
        "{after:#}"
    );
    let requeued = wait_until(
        || async { delayed_timer_messages(&http, &emulator).await == Some(2) },
        Duration::from_secs(30),
    )
    .await;
    assert!(
        requeued,
        "f-soon not re-armed in the timer queue: {}",
        stack.tail()
    );
    assert_eq!(
        status_of(&http, &api, "PA-f2", "f-open").await.as_deref(),
        Some("open")
    );

    // A lesson ending in two hours: lesson-write arms its review's schedule; a later lesson
    // into the entry closes the review, and the schedule goes.
    let definition = format!("{api}/v1/definitions/iam-desk");
    let put = http
        .put(&definition)
        .bearer_auth(TEACHER_TOKEN)
        .json(&json!({
            "collections": { "customers": {
                "learnable": "marks", "entry": "customer",
                "teaches": "which customer a message belongs to",
                "entries": { "northgate": { "label": "Northgate Motors", "value": { "marks": [
                    { "pattern": "@northgate-motors\\.example", "where": "from" } ] } } }
            } },
            "taughtBy": TEACHER_ID,
            "reason": "the customer of the pre-alert desk"
        }))
        .send()
        .await
        .expect("the local HTTP API answers");
    assert_eq!(put.status().as_u16(), 201, "{}", stack.tail());
    let expires = origin(Duration::from_secs(7200));
    let teach = |pattern: &str, expires: Option<jiff::Timestamp>| {
        let mut lesson = json!({
            "collection": "customers", "entry": "northgate",
            "value": { "pattern": pattern, "where": "from" },
            "taughtBy": TEACHER_ID,
            "reason": "until the new billing desk takes over",
        });
        if let Some(at) = expires {
            lesson["expiresAt"] = json!(fmt(at));
        }
        http.post(format!("{definition}/lessons"))
            .bearer_auth(TEACHER_TOKEN)
            .json(&lesson)
            .send()
    };
    let taught = teach("billing@origin\\.example", Some(expires))
        .await
        .expect("the local HTTP API answers");
    assert_eq!(taught.status().as_u16(), 200, "{}", stack.tail());
    let review = |http: &reqwest::Client| {
        let (http, emulator) = (http.clone(), emulator.clone());
        async move {
            armed(&http, &emulator)
                .await
                .into_iter()
                .find(|(_, i)| {
                    i["timer"]["subject"]["type"] == "lesson" && i["timer"]["kind"] == "deadline"
                })
                .map(|(name, _)| name)
        }
    };
    let reviewed = wait_until(
        || async { review(&http).await.is_some() },
        Duration::from_secs(20),
    )
    .await;
    assert!(
        reviewed,
        "no lesson.review schedule: {:?}",
        armed(&http, &emulator).await
    );
    let again = teach("ops@origin\\.example", None)
        .await
        .expect("the local HTTP API answers");
    assert_eq!(again.status().as_u16(), 200, "{}", stack.tail());
    let closed = wait_until(
        || async { review(&http).await.is_none() },
        Duration::from_secs(30),
    )
    .await;
    assert!(
        closed,
        "the closed review's schedule stayed: {:?}",
        armed(&http, &emulator).await
    );

    let state = iam_state(&http, &emulator).await;
    assert_eq!(state["counts"]["denied"], 0, "{state:#}");
    assert!(state["counts"]["allowed"].as_u64() > Some(0), "{state:#}");
    assert!(stack.terminate(Duration::from_secs(30)));
}
