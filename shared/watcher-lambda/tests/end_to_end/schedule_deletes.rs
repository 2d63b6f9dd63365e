//! A fact's answer leaves the schedule's delete to the timer function; a deferred delete of a timer still held arms it again.

use super::*;

/// expectations-v1 §9.3 on AWS, the fact's answer: the commit's schedule delete goes to the timer
/// queue, and the timer function makes it; a delete SQS hands over twice changes nothing more.
#[tokio::test(flavor = "multi_thread")]
async fn a_facts_answer_leaves_the_schedule_delete_to_the_timer_function() {
    let d = deploy_with("e2e-defer", true).await;
    d.push_booking("").await;
    assert_eq!(d.schedules().await.len(), 1);
    d.clock.set(t("2026-09-10T10:00:00Z"));
    d.requests.take();
    d.report_manifest().await;
    let answered = d.requests.take();
    assert_eq!(
        answered.get("Scheduler DeleteSchedule"),
        None,
        "{answered:?}"
    );
    assert_eq!(
        answered.get("SQS SendMessageBatch"),
        Some(&1),
        "{answered:?}"
    );
    assert_eq!(
        d.schedules().await.len(),
        1,
        "deleted after the answer, not before"
    );

    let event = d.timer_messages().await;
    assert_eq!(
        event["Records"].as_array().map(Vec::len),
        Some(1),
        "{event}"
    );
    let report = d.fire(&event, t("2026-09-10T10:00:01Z")).await;
    assert_eq!((report.disarmed, report.lapses), (1, 0));
    assert!(report.batch_item_failures.is_empty());
    assert!(d.schedules().await.is_empty());
    // Redelivered: the delete of a schedule already gone is success, and nothing is armed.
    let again = d.fire(&event, t("2026-09-10T10:00:02Z")).await;
    assert_eq!((again.disarmed, again.lapses), (1, 0));
    assert!(d.schedules().await.is_empty());
}

/// A deferred delete that reaches the timer function after the record armed the timer again
/// (here: a delete for a timer that is still pending) deletes the schedule and arms it again:
/// the record decides, never the message.
#[tokio::test(flavor = "multi_thread")]
async fn a_deferred_delete_of_a_timer_the_record_still_holds_arms_it_again() {
    let d = deploy_with("e2e-defer-race", true).await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, expression) = d.schedule_input(&names[0]).await;
    let body = json!({ "tenant": input["tenant"], "disarm": input["timer"] }).to_string();
    let event =
        json!({ "Records": [{ "messageId": "m-1", "body": body, "eventSource": "aws:sqs" }] });
    let report = d.fire(&event, t("2026-09-10T10:00:00Z")).await;
    assert_eq!((report.disarmed, report.lapses), (1, 0));
    assert!(report.batch_item_failures.is_empty());
    let after = d.schedules().await;
    assert_eq!(after.len(), 1, "armed again");
    assert_eq!(d.schedule_input(&after[0]).await, (input, expression));
}

/// Timers whose every call is denied (as IAM denies `scheduler:DeleteSchedule` to a role
/// without it).
struct Denied;

fn denied(what: &str) -> watcher_runtime::ports::PortError {
    watcher_runtime::ports::PortError::new(
        false,
        format!("{what} (AccessDeniedException: not authorized)"),
        None,
    )
}

#[async_trait::async_trait]
impl watcher_runtime::ports::Timers for Denied {
    async fn arm(
        &self,
        _: &Tenant,
        _: &watcher_core::engine::TimerKey,
        _: Instant,
    ) -> Result<(), watcher_runtime::ports::PortError> {
        Err(denied("create schedule"))
    }
    async fn disarm(
        &self,
        _: &Tenant,
        _: &watcher_core::engine::TimerKey,
    ) -> Result<(), watcher_runtime::ports::PortError> {
        Err(denied("delete schedule"))
    }
}

#[async_trait::async_trait]
impl watcher_aws::TimerQueue for Denied {
    async fn send_at(
        &self,
        _: &Tenant,
        _: &watcher_core::engine::TimerKey,
        _: Instant,
        _: Instant,
    ) -> Result<(), watcher_runtime::ports::PortError> {
        Err(denied("send message"))
    }
    // `send_disarms`: the default, every key failed (as a denied `sqs:SendMessage`).
}

/// The submitter withdraws an expectation (here as a push's `withdraw` would) in a function
/// whose disarm is denied twice: the timer queue's `SendMessage`, then its fallback
/// `DeleteSchedule`. Nothing catches up, and nothing needs to (the log says so:
/// `watcher_lambda::sink::effect_failed_note`): the schedule stays armed; when it fires at its
/// instant the timer function finds the record no longer holds the timer, lapses nothing, arms
/// nothing and sends nothing; and the schedule was made one-time with
/// `ActionAfterCompletion: DELETE`, so Scheduler removes it after that run.
#[tokio::test(flavor = "multi_thread")]
async fn a_withdrawal_whose_schedule_delete_is_denied_leaves_a_harmless_schedule() {
    let d = deploy("e2e-denied-disarm").await;
    d.push_booking("").await;
    let names = d.schedules().await;
    assert_eq!(names.len(), 1);
    let schedule = d
        .scheduler
        .get_schedule()
        .group_name(&d.group)
        .name(&names[0])
        .send()
        .await
        .expect("get schedule");
    assert_eq!(
        schedule.action_after_completion(),
        Some(&aws_sdk_scheduler::types::ActionAfterCompletion::Delete),
        "one-time: Scheduler deletes it after it fires"
    );
    let (input, _) = d.schedule_input(&names[0]).await;

    // A watcher over the same table whose sink cannot delete a schedule at all.
    let mut card: Value = serde_json::from_str(CARD).expect("card");
    card["supportedInterfaces"][0]["url"] = json!(d.agent.url());
    let config = Config::from_toml(&format!(
        "{}endpoint = \"{}\"\n{}{}",
        common::booking_toml(&card.to_string()),
        d.agent.url(),
        common::CARRIER_TOML,
        common::OPS_TOML,
    ))
    .expect("config");
    let submitter = assemble_for(
        &[Function::Submitter],
        d.parts.watcher.store.clone(),
        Arc::new(Denied),
        d.parts.queue.clone(),
        Some(Arc::new(Denied)),
        &config,
    )
    .await
    .expect("the submitter's parts");
    let tenant = Tenant::default_tenant();
    let agent = watcher_core::ids::AgentId::parse("booking").unwrap();
    let origin = watcher_core::engine::Origin {
        task_id: watcher_core::ids::TaskId::parse("task-booking-7f3a").unwrap(),
        context_id: Some(watcher_core::ids::ContextId::parse("ctx-northgate-sep").unwrap()),
    };
    let withdraw = watcher_core::engine::Input::Push {
        agent: submitter
            .watcher
            .directory
            .get(&tenant, &agent)
            .expect("booking is configured")
            .profile,
        items: vec![watcher_core::engine::PushItem::Withdraw {
            origin,
            ids: vec![watcher_core::ids::ExpectationId::parse("exp-01J8Q0MANIFEST").unwrap()],
            reason: Some("origin task canceled".into()),
        }],
    };
    submitter
        .watcher
        .apply(&tenant, &withdraw, t("2026-09-10T02:00:00Z"))
        .await
        .expect("withdrawn");
    let subject = watcher_core::ids::Subject::parse("shipment", "PA-2026-0901").unwrap();
    let state = d
        .parts
        .watcher
        .store
        .subject(&tenant, &subject)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.records[0].status, Status::Withdrawn);
    assert_eq!(
        d.schedules().await,
        names,
        "the delete was denied: still armed"
    );

    // It fires at its instant: nothing lapses, nothing is armed again, nothing is sent.
    d.clock.set(t("2026-09-10T22:15:20Z"));
    let fired = d.fire(&input, t("2026-09-10T22:15:20Z")).await;
    assert_eq!((fired.evaluated, fired.lapses), (1, 0));
    assert_eq!(d.schedules().await, names, "no schedule made again");
    assert!(d.receive().await.records.is_empty(), "no lapse message");
    assert!(d.delivered().is_empty());
}
