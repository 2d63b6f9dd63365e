//! `a2a-watcher rearm` on the local AWS stack (`bash infra/aws-local.sh`; docs/howto/recovery.md):
//! expectations are raised through the HTTP API, then every schedule of the timers' group is
//! deleted and the timer queue purged (what a restore or a stack replacement leaves: the table
//! holds the timers, nothing will wake them). A deadline passes with no lapse. The re-arm reads
//! the open timers from the table and arms each as the functions do: the passed one fires at
//! once, the one due within 900 s goes on the timer queue delayed to its instant, the one two
//! hours ahead gets its schedule back (a minute early, the scheduler's lead). Run twice, it
//! leaves the same one schedule per timer, and every lapse arrives once.
//!
//! Also here: the template's data safety (deletion protection on both tables, the optional
//! backup plan with its cross-region copy).
//!
//! Needs what tests/aws_local.rs needs (`.venv` with moto, the function binaries built); without
//! them the stack test says so and passes, unless `CI=true`, where it fails.

use crate::common;

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use watcher_delivery::testing::{Behaviour, CaptureAgent};

use common::aws_stack::{aws_missing, root};
use common::{one_expectation, origin};

const PUSH_TOKEN: &str = "push-token-rearm";
const OPERATOR_TOKEN: &str = "ops-token-rearm";
/// The local stack's name (`python -m aws_local --stack-name`'s default) and the physical names
/// infra/aws_local/template.py gives its resources: `{stack}-{logical id}`, or the template's
/// own `Name` / `FunctionName`, in moto's account.
const TABLE: &str = "a2a-watcher-local-WatcherTable";
const GROUP: &str = "a2a-watcher-local-timers";
/// The timer's alias (`live`), as the stack's `TimerFunctionArn` output gives it: the scheduler
/// role may invoke that alone.
const TIMER_FUNCTION: &str =
    "arn:aws:lambda:us-east-1:123456789012:function:a2a-watcher-local-timer:live";
const SCHEDULER_ROLE: &str = "arn:aws:iam::123456789012:role/a2a-watcher-local-SchedulerRole";
const SCHEDULER_DLQ: &str =
    "arn:aws:sqs:us-east-1:123456789012:a2a-watcher-local-SchedulerDeadLetterQueue";
const TIMER_QUEUE: &str = "a2a-watcher-local-TimerQueue";

/// The lapse tasks `agent` accepted for expectation `id` (their `messageId`s).
fn lapses_for(agent: &CaptureAgent, id: &str) -> usize {
    let prefix = format!("lapse:{id}:");
    agent
        .sent_message_ids()
        .iter()
        .filter(|m| m.starts_with(&prefix))
        .count()
}

/// Every schedule of the timers' group: name to (expression, target input).
async fn schedules(client: &aws_sdk_scheduler::Client) -> BTreeMap<String, (String, String)> {
    let mut out = BTreeMap::new();
    let mut token = None;
    loop {
        let page = client
            .list_schedules()
            .group_name(GROUP)
            .set_next_token(token)
            .send()
            .await
            .expect("ListSchedules");
        for s in page.schedules() {
            let name = s.name().unwrap_or_default().to_owned();
            let got = client
                .get_schedule()
                .group_name(GROUP)
                .name(&name)
                .send()
                .await
                .expect("GetSchedule");
            let input = got
                .target()
                .and_then(|t| t.input())
                .unwrap_or_default()
                .to_owned();
            out.insert(
                name,
                (
                    got.schedule_expression().unwrap_or_default().to_owned(),
                    input,
                ),
            );
        }
        token = page.next_token().map(str::to_owned);
        if token.is_none() {
            return out;
        }
    }
}

/// `a2a-watcher rearm ARGS` against the stack's emulators, as the operator `test`.
fn rearm(emulator: &str, dynamodb_port: u16, queue_url: &str, extra: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .arg("rearm")
        .args(["--table", TABLE, "--schedule-group", GROUP])
        .args(["--timer-function-arn", TIMER_FUNCTION])
        .args(["--scheduler-role-arn", SCHEDULER_ROLE])
        .args(["--scheduler-dlq-arn", SCHEDULER_DLQ])
        .args(["--timer-queue-url", queue_url])
        .args(extra)
        .env("AWS_REGION", "us-east-1")
        .env("AWS_ACCESS_KEY_ID", "test")
        .env("AWS_SECRET_ACCESS_KEY", "test")
        .env_remove("AWS_SESSION_TOKEN")
        .env("AWS_ENDPOINT_URL", emulator)
        .env(
            "AWS_ENDPOINT_URL_DYNAMODB",
            format!("http://127.0.0.1:{dynamodb_port}"),
        )
        .output()
        .expect("a2a-watcher rearm runs")
}

fn text(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_rearm_brings_back_every_lost_timer_once() {
    if common::aws_stack::skipped(
        "the_rearm_brings_back_every_lost_timer_once",
        aws_missing(),
        true,
    ) {
        return;
    }
    let agent = CaptureAgent::spawn(Behaviour::accept())
        .await
        .expect("capture agent");
    let dir = tempfile::tempdir().expect("a temporary folder");
    let card = common::card_file(dir.path(), "booking", &agent.url());
    let config = dir.path().join("watcher.toml");
    std::fs::write(
        &config,
        format!(
            "allow_private_endpoints = true\n\n[[agents]]\nid = \"booking\"\ncard = \"{}\"\n\
             endpoint = \"{}\"\npush_token = \"{PUSH_TOKEN}\"\nreconcile = false\n\n{}",
            card.display(),
            agent.url(),
            common::entry_toml("operators", "ops", OPERATOR_TOKEN),
        ),
    )
    .expect("write the configuration");
    let stack = common::aws_stack::start(&[], &config);
    common::aws_stack::wait_ready(&stack.proc, Duration::from_secs(120));
    // The emulator, as the deployer `test` (whom the local IAM lets through).
    let aws = watcher_aws::sdk_env::sdk_config_with(&|name| match name {
        "AWS_REGION" => Some("us-east-1".into()),
        "AWS_ACCESS_KEY_ID" | "AWS_SECRET_ACCESS_KEY" => Some("test".into()),
        "AWS_ENDPOINT_URL" => Some(stack.emulator.clone()),
        _ => None,
    })
    .expect("an emulator configuration");
    let scheduler = aws_sdk_scheduler::Client::new(&aws);
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let queue_url = sqs
        .get_queue_url()
        .queue_name(TIMER_QUEUE)
        .send()
        .await
        .expect("the timer queue")
        .queue_url()
        .expect("its URL")
        .to_owned();

    // Three expectations: one whose deadline passes while its timer is lost (10 s + 1 s grace),
    // one due within the timer queue's 900 s (50 s), one two hours ahead (a schedule).
    let http = reqwest::Client::new();
    let push_url = format!("{}/v1/agents/booking/push", stack.api);
    for (task, id, shipment, lead) in [
        ("t-past", "m-past", "S-PAST", 10),
        ("t-soon", "m-soon", "S-SOON", 50),
        ("t-far", "m-far", "S-FAR", 7200),
    ] {
        let due = origin(Duration::from_secs(lead));
        let answer = http
            .post(&push_url)
            .bearer_auth(PUSH_TOKEN)
            .json(&one_expectation(task, id, shipment, due, "PT1S"))
            .send()
            .await
            .expect("push");
        let status = answer.status().as_u16();
        let body: Value = answer.json().await.unwrap_or(Value::Null);
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["raised"], json!([id]), "{body}");
    }
    let armed = schedules(&scheduler).await;
    let far: Vec<&String> = armed
        .iter()
        .filter(|(_, (expr, _))| expr.starts_with("at("))
        .map(|(name, _)| name)
        .collect();
    assert_eq!(far.len(), 1, "m-far's one schedule: {armed:#?}");
    let far_schedule = (far[0].clone(), armed[far[0]].clone());

    // What a restore or a replaced stack leaves: no schedule (the sweep's too), no message.
    for name in armed.keys() {
        scheduler
            .delete_schedule()
            .group_name(GROUP)
            .name(name)
            .send()
            .await
            .expect("DeleteSchedule");
    }
    sqs.purge_queue()
        .queue_url(&queue_url)
        .send()
        .await
        .expect("PurgeQueue");
    assert!(schedules(&scheduler).await.is_empty());

    // m-past's deadline (about 11 s) passes, and 6 s more: nothing wakes its timer.
    tokio::time::sleep(Duration::from_secs(17)).await;
    assert_eq!(lapses_for(&agent, "m-past"), 0, "the timer was not lost");

    // The dry run says what it would arm and arms nothing.
    let dry = rearm(
        &stack.emulator,
        stack.dynamodb_port,
        &queue_url,
        &["--dry-run"],
    );
    let said = text(&dry);
    assert!(dry.status.success(), "{said}");
    assert!(
        said.contains("would arm 3 timer(s) of 3 subject(s)"),
        "{said}"
    );
    assert!(
        said.contains("of booking/m-past on shipment S-PAST"),
        "{said}"
    );
    assert!(
        said.contains("on the timer queue, 0 s delay"),
        "the passed timer fires at once: {said}"
    );
    assert!(
        said.contains(&format!("as schedule {}", far_schedule.0)),
        "{said}"
    );
    assert!(
        schedules(&scheduler).await.is_empty(),
        "a dry run arms nothing"
    );

    // The re-arm, in pages of one subject: 65 partitions of the timers index, 3 subjects.
    let started = Instant::now();
    let first = rearm(
        &stack.emulator,
        stack.dynamodb_port,
        &queue_url,
        &["--page-size", "1"],
    );
    let said = text(&first);
    assert!(first.status.success(), "{said}");
    assert!(
        said.contains(
            "armed 3 timer(s) of 3 subject(s): 2 on the timer queue, 1 as schedules; 0 failed"
        ),
        "{said}"
    );
    assert!(said.contains("resume: none (done)"), "{said}");
    // m-far's schedule is back as the API had made it: same name, instant and input.
    let back = schedules(&scheduler).await;
    assert_eq!(
        back,
        BTreeMap::from([far_schedule.clone()]),
        "the schedule the API made, made again"
    );
    // The passed deadline fires at once.
    let end = Instant::now() + Duration::from_secs(30);
    while lapses_for(&agent, "m-past") == 0 {
        assert!(
            Instant::now() < end,
            "m-past did not lapse after the re-arm: {}",
            stack.proc.tail()
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let fired_after = started.elapsed();
    let again = Instant::now();

    // Again: the same one schedule, no other; m-soon gets a second wake-up, still one lapse.
    let second = rearm(&stack.emulator, stack.dynamodb_port, &queue_url, &[]);
    let second_took = again.elapsed();
    let said = text(&second);
    assert!(second.status.success(), "{said}");
    assert!(said.contains("0 failed"), "{said}");
    assert_eq!(schedules(&scheduler).await, BTreeMap::from([far_schedule]));

    let end = Instant::now() + Duration::from_secs(90);
    while lapses_for(&agent, "m-soon") == 0 {
        assert!(
            Instant::now() < end,
            "m-soon did not lapse: {}",
            stack.proc.tail()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    // A second delivery would come within seconds (the queue sources poll every 0.25 s).
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        lapses_for(&agent, "m-past"),
        1,
        "{:?}",
        agent.sent_message_ids()
    );
    assert_eq!(
        lapses_for(&agent, "m-soon"),
        1,
        "{:?}",
        agent.sent_message_ids()
    );
    assert_eq!(lapses_for(&agent, "m-far"), 0);
    eprintln!(
        "rearm: the passed deadline's lapse arrived {fired_after:?} after the re-arm started; \
         the second run (65 partitions in pages of 100) took {second_took:?}"
    );
}

#[test]
fn the_rearm_refuses_bad_input_with_a_reason() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
            .arg("rearm")
            .args(args)
            .env_remove("TABLE_NAME")
            .env("AWS_REGION", "us-east-1")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .output()
            .expect("a2a-watcher runs")
    };
    let out = run(&[]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("give --table or set TABLE_NAME"),
        "{}",
        text(&out)
    );
    let out = run(&["--table", "t", "--dry-run", "--resume", "99"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("partition 99 is past the last (64)"),
        "{}",
        text(&out)
    );
    let out = run(&["--table", "t", "--page-size", "0"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "clap refuses it: {}",
        text(&out)
    );
}

/// The top-level entry `name` of template.yaml (two spaces of indentation) and the lines below
/// it, up to the next entry.
fn template_entry(name: &str) -> String {
    let text = std::fs::read_to_string(root().join("template.yaml")).expect("template.yaml");
    let head = format!("  {name}:");
    let mut out = String::new();
    let mut inside = false;
    for line in text.lines() {
        let top = line.starts_with("  ") && !line.starts_with("   ") && !line.starts_with("  #");
        if top {
            inside = line == head;
        }
        if inside {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

#[test]
fn the_tables_are_protected_and_backed_up_across_regions_when_asked() {
    for table in ["WatcherTable", "DefinitionsTable"] {
        let entry = template_entry(table);
        assert!(entry.contains("Type: AWS::DynamoDB::Table"), "{entry}");
        for line in [
            "DeletionProtectionEnabled: true",
            "PointInTimeRecoveryEnabled: true",
            "DeletionPolicy: Retain",
        ] {
            assert!(entry.contains(line), "{table} lacks {line}");
        }
    }
    let parameter = template_entry("BackupCopyVaultArn");
    assert!(parameter.contains("Default: \"\""), "{parameter}");
    for resource in ["BackupVault", "BackupPlan", "BackupSelection", "BackupRole"] {
        let entry = template_entry(resource);
        assert!(
            entry.contains("Condition: HasBackupPlan"),
            "{resource} only with a copy vault: {entry}"
        );
    }
    let plan = template_entry("BackupPlan");
    assert!(
        plan.contains("ScheduleExpression: cron(0 5 * * ? *)"),
        "daily: {plan}"
    );
    assert!(
        plan.contains("- DestinationBackupVaultArn: !Ref BackupCopyVaultArn"),
        "{plan}"
    );
    let selection = template_entry("BackupSelection");
    for arn in ["!GetAtt WatcherTable.Arn", "!GetAtt DefinitionsTable.Arn"] {
        assert!(selection.contains(arn), "{selection}");
    }
    assert!(template_entry("BackupRole").contains("Service: backup.amazonaws.com"));
    // What `a2a-watcher rearm` needs, as outputs.
    for output in [
        "TableName",
        "ScheduleGroup",
        "TimerFunctionArn",
        "SchedulerRoleArn",
        "SchedulerDeadLetterQueueArn",
        "TimerQueueUrl",
    ] {
        assert!(
            !template_entry(output).is_empty(),
            "output {output} is missing"
        );
    }
}
