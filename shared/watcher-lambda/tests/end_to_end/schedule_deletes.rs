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
