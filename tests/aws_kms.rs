//! The customer's key on the local AWS stack (docs/security.md, "Encryption at rest"): with
//! `--customer-key` the stack makes a symmetric KMS key in the emulator and deploys
//! `template.yaml` with `KmsKeyArn` set to it, so both tables, the four queues and the two topics
//! are under that key, and IAM asks every call a role makes on one of them for the key's
//! actions too, through that service (`kms:ViaService`; infra/aws_model/iam.py `kms_checks`):
//! kms:Decrypt for an item read or write, kms:GenerateDataKey and kms:Decrypt for a send,
//! kms:Decrypt for a receive.
//!
//! The functions arm their EventBridge Scheduler schedules with `KmsKeyArn` too
//! (`SCHEDULE_KMS_KEY_ARN`), so a schedule's input (tenant, subject, expectation) is under the
//! key: the caller then needs kms:DescribeKey, kms:GenerateDataKey and kms:Decrypt on it, and
//! SchedulerRole kms:Decrypt when the schedule fires (EventBridge Scheduler user guide,
//! "Encryption at rest"; infra/aws_model/iam.py `SCHEDULE_KMS_FOR_CALLER`,
//! `schedule_fire_check`).
//!
//! The grants `template.yaml` adds under `HasCustomerKey` (`CustomerKeyFor...`) are enough: a
//! lapse is delivered end to end (a push through the api, the timer firing from the timer queue,
//! the submitter's wake-up from the lapse queue), and a lesson taught through lesson-write with
//! `expiresAt` ten minutes ahead arms its review on the timer queue; a deadline two hours ahead
//! (beyond the timer queue's 900 s) is armed by the api as a schedule under the key, as is a
//! lesson's review two hours ahead by lesson-write; a schedule under the key firing early
//! (decrypted as SchedulerRole) has the timer re-arm the deadline's schedule, still under the
//! key; nothing is denied. That
//! removing one of those grants denies the call it covers, in the service's own words, is the
//! model's test (infra/aws_model/test_iam.py `TemplateCustomerKeyTest`), and
//! infra/iam_coverage.py proves each grant needed from this run's decisions.
//!
//! Needs what tests/aws_local.rs needs, and the IAM evaluator (`bash infra/iam.sh`: node and
//! npm); without it the test says so and passes, unless `CI=true`, where it fails.

use crate::common;

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};
use watcher_delivery::testing::{Behaviour, CaptureAgent};

use common::aws_stack::{aws_missing, root};
use common::{fmt, one_expectation, origin, wait_until, TEACHER_TOKEN};

const PUSH_TOKEN: &str = "push-token-kms";
/// The timers' schedule group of the local stack (`{stack}-timers`).
const GROUP: &str = "a2a-watcher-local-timers";
/// The teacher of [`common::TEACHER_TOML`].
const TEACHER_ID: &str = "dana";

/// Why the IAM evaluator cannot run here, if it cannot (as tests/aws_iam.rs asks it).
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

/// The iam part's state at the emulator on `port` (`GET /_model/iam`).
async fn iam_state(http: &reqwest::Client, port: u16) -> Value {
    http.get(format!("http://127.0.0.1:{port}/_model/iam"))
        .send()
        .await
        .expect("the emulator answers")
        .json()
        .await
        .expect("JSON")
}

// The deployer's signature and `GetSchedule`, as the IAM tests make them.
use crate::aws_iam::{as_deployer, schedule};

/// The run-time schedules of the timers' group (deadlines `d-`, horizons `h-`), as GetSchedule
/// answers each.
async fn armed(http: &reqwest::Client, emulator: &str) -> Vec<Value> {
    let answer: Value = http
        .get(format!("{emulator}/schedules?ScheduleGroup={GROUP}"))
        .header("Authorization", as_deployer("scheduler"))
        .send()
        .await
        .expect("the emulator answers")
        .json()
        .await
        .expect("JSON");
    let mut out = Vec::new();
    for s in answer["Schedules"].as_array().cloned().unwrap_or_default() {
        let name = s["Name"].as_str().unwrap_or_default();
        if name.starts_with("d-") || name.starts_with("h-") {
            out.extend(schedule(http, emulator, name).await);
        }
    }
    out
}

/// The timer input a schedule hands the timer function.
fn input_of(schedule: &Value) -> Value {
    serde_json::from_str(schedule["Target"]["Input"].as_str().unwrap_or("")).unwrap_or_default()
}

/// Through lesson-write: defines `id` (one `customers` collection whose `northgate` entry is
/// marked by its domain; `why` = (the definition's reason, the lesson's pattern)) and teaches it
/// a lesson expiring at `expires_at`, whose review is then armed. Errors name the call and its
/// status.
async fn teach_with_review(
    http: &reqwest::Client,
    api: &str,
    id: &str,
    why: (&str, &str),
    reason: &str,
    expires_at: jiff::Timestamp,
) -> Result<(), String> {
    let (defined_for, pattern) = why;
    let definition = format!("{api}/v1/definitions/{id}");
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
            "reason": defined_for
        }))
        .send()
        .await
        .map_err(|e| format!("PUT {definition}: {e}"))?;
    if put.status().as_u16() != 201 {
        return Err(format!("PUT {definition}: {}", put.status()));
    }
    let taught = http
        .post(format!("{definition}/lessons"))
        .bearer_auth(TEACHER_TOKEN)
        .json(&json!({
            "collection": "customers", "entry": "northgate",
            "value": { "pattern": pattern, "where": "from" },
            "taughtBy": TEACHER_ID,
            "reason": reason,
            "expiresAt": fmt(expires_at),
        }))
        .send()
        .await
        .map_err(|e| format!("POST {definition}/lessons: {e}"))?;
    if taught.status().as_u16() != 200 {
        return Err(format!("POST {definition}/lessons: {}", taught.status()));
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lapse_is_delivered_with_every_resource_under_the_customers_key() {
    let test = "a_lapse_is_delivered_with_every_resource_under_the_customers_key";
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
            "allow_private_endpoints = true\n\n{agent}\n{teacher}",
            agent = common::agent_with_card(dir.path(), "booking", &agent.url(), PUSH_TOKEN, ""),
            teacher = common::TEACHER_TOML,
        ),
    )
    .expect("write the configuration");
    let stack = common::aws_stack::start(
        &["--iam", "on", "--rate-cap", "5", "--customer-key"],
        &config,
    );
    let made = stack
        .proc
        .wait_for("the customer key", Duration::from_secs(120), |l| {
            l.starts_with("[aws-local] customer key made: KmsKeyArn=")
        });
    let key = made
        .rsplit_once("KmsKeyArn=")
        .map(|(_, k)| k.trim().to_owned())
        .expect("the key's ARN");
    assert!(
        key.starts_with("arn:aws:kms:us-east-1:123456789012:key/"),
        "{key}"
    );
    common::aws_stack::wait_ready(&stack.proc, Duration::from_secs(180));
    let http = reqwest::Client::new();

    // Every table, queue and topic is under the key, in both emulators (DynamoDB has its own).
    for port in [stack.moto_port, stack.dynamodb_port] {
        let state = iam_state(&http, port).await;
        let encrypted = state["encrypted"].as_object().cloned().unwrap_or_default();
        let mut names: Vec<String> = encrypted
            .keys()
            .map(|arn| arn.rsplit([':', '/']).next().unwrap_or("").to_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "a2a-watcher-local-AlarmTopic",
                "a2a-watcher-local-DefinitionsTable",
                "a2a-watcher-local-LapseDeadLetterQueue.fifo",
                "a2a-watcher-local-LapseQueue.fifo",
                "a2a-watcher-local-NotificationTopic",
                "a2a-watcher-local-SchedulerDeadLetterQueue",
                "a2a-watcher-local-TimerQueue",
                "a2a-watcher-local-WatcherTable",
            ],
            "{state:#}"
        );
        assert!(encrypted.values().all(|k| k == &json!(key)), "{state:#}");
    }

    // A lapse end to end: due in 3 s with no grace, pushed through the api (items written,
    // the deadline armed on the timer queue), fired by the timer from the timer queue, and
    // delivered by the submitter, woken from the lapse queue.
    let body = one_expectation(
        "task-k",
        "k-soon",
        "PA-k1",
        origin(Duration::from_secs(3)),
        "PT0S",
    );
    let answer = http
        .post(format!("{}/v1/agents/booking/push", stack.api))
        .header("X-A2A-Notification-Token", PUSH_TOKEN)
        .json(&body)
        .send()
        .await
        .expect("the local HTTP API answers");
    assert_eq!(answer.status().as_u16(), 200, "{}", stack.proc.tail());
    let delivered = wait_until(
        || async { !agent.sent_message_ids().is_empty() },
        Duration::from_secs(90),
    )
    .await;
    assert!(
        delivered,
        "no lapse task reached the agent: {}",
        stack.proc.tail()
    );
    let lapse = agent
        .requests()
        .into_iter()
        .find(|r| r.rpc_method().as_deref() == Some("SendMessage"))
        .and_then(|r| r.json())
        .expect("the lapse task");
    let text = lapse.to_string();
    assert!(text.contains("k-soon") && text.contains("PA-k1"), "{text}");

    // Through lesson-write: the definitions table and the watcher's table under the key, and
    // the lesson's review, due in ten minutes, armed on the timer queue.
    teach_with_review(
        &http,
        &stack.api,
        "kms-desk",
        (
            "the customer of the pre-alert desk",
            "billing@origin\\.example",
        ),
        "until the new billing desk takes over",
        origin(Duration::from_secs(600)),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", stack.proc.tail()));

    // Beyond the timer queue's reach: a deadline two hours ahead through the api, and a lesson's
    // review two hours ahead through lesson-write, each armed as a schedule under the key.
    let far = one_expectation(
        "task-k2",
        "k-far",
        "PA-k2",
        origin(Duration::from_secs(7200)),
        "PT0S",
    );
    let answer = http
        .post(format!("{}/v1/agents/booking/push", stack.api))
        .header("X-A2A-Notification-Token", PUSH_TOKEN)
        .json(&far)
        .send()
        .await
        .expect("the local HTTP API answers");
    assert_eq!(answer.status().as_u16(), 200, "{}", stack.proc.tail());
    teach_with_review(
        &http,
        &stack.api,
        "kms-desk-later",
        ("the customer of the night desk", "night@origin\\.example"),
        "until the night desk closes",
        origin(Duration::from_secs(7200)),
    )
    .await
    .unwrap_or_else(|e| panic!("{e}\n{}", stack.proc.tail()));
    let emulator = stack.emulator.clone();
    let both = wait_until(
        || async {
            let got = armed(&http, &emulator).await;
            let of = |kind: &str| {
                got.iter()
                    .any(|s| input_of(s)["timer"]["subject"]["type"] == kind)
            };
            of("shipment") && of("lesson")
        },
        Duration::from_secs(30),
    )
    .await;
    let schedules = armed(&http, &emulator).await;
    assert!(both, "not both armed as schedules: {schedules:#?}");
    for s in &schedules {
        assert_eq!(s["KmsKeyArn"], json!(key), "{s:#}");
    }
    let deadline = schedules
        .iter()
        .find(|s| input_of(s)["timer"]["expectation"]["id"] == "k-far")
        .expect("k-far's schedule")
        .clone();
    let name = deadline["Name"].as_str().expect("its name").to_owned();
    let before = deadline["LastModificationDate"]
        .as_f64()
        .unwrap_or_default();

    // A schedule under the key fires early with k-far's input (as the deadline's own fires a
    // minute early on AWS): Scheduler decrypts it as SchedulerRole, the timer finds the deadline
    // two hours off and re-arms it: its schedule is updated, still under the key.
    let at = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(2);
    let early = http
        .post(format!("{emulator}/schedules/early-k-far"))
        .header("Authorization", as_deployer("scheduler"))
        .json(&json!({
            "GroupName": GROUP,
            "ScheduleExpression": format!("at({})", at.strftime("%Y-%m-%dT%H:%M:%S")),
            "ScheduleExpressionTimezone": "UTC",
            "FlexibleTimeWindow": { "Mode": "OFF" },
            "ActionAfterCompletion": "DELETE",
            "KmsKeyArn": key,
            "Target": deadline["Target"],
        }))
        .send()
        .await
        .expect("the emulator answers");
    assert!(early.status().is_success(), "{}", early.status());
    let rearmed = wait_until(
        || async {
            schedule(&http, &emulator, &name)
                .await
                .and_then(|s| s["LastModificationDate"].as_f64())
                .is_some_and(|t| t > before)
        },
        Duration::from_secs(30),
    )
    .await;
    assert!(rearmed, "k-far not re-armed: {}", stack.proc.tail());
    let after = schedule(&http, &emulator, &name)
        .await
        .expect("k-far's schedule");
    assert_eq!(after["KmsKeyArn"], json!(key), "{after:#}");
    assert_eq!(
        after["ScheduleExpression"], deadline["ScheduleExpression"],
        "{after:#}"
    );

    // Nothing denied, and the key was asked: by DynamoDB for the items, by SQS for the sends
    // and receives, for the schedules by their callers and by SchedulerRole.
    for port in [stack.moto_port, stack.dynamodb_port] {
        let state = iam_state(&http, port).await;
        assert_eq!(state["counts"]["denied"], 0, "{state:#}");
        assert!(state["counts"]["kms"].as_u64() > Some(0), "{state:#}");
    }
    assert!(stack.proc.terminate(Duration::from_secs(30)));
}
