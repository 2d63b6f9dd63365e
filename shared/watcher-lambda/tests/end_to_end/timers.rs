//! Deadlines on AWS: exactly one lapse task per lapse through Scheduler, the sweep and the delayed timer queue; early and racing timers.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn push_schedule_fire_queue_submit_delivers_exactly_one_lapse_task() {
    let d = deploy("e2e").await;
    let pushed = d.push_booking("").await;
    assert_eq!(pushed["raised"], json!(["exp-01J8Q0MANIFEST"]));

    // Recorded in DynamoDB.
    let subject = watcher_core::ids::Subject::parse("shipment", "PA-2026-0901").unwrap();
    let state = d
        .parts
        .watcher
        .store
        .subject(&Tenant::default_tenant(), &subject)
        .await
        .unwrap()
        .expect("subject");
    assert_eq!(state.records.len(), 1);

    // One schedule, for the deadline 20:15 + 2h, in UTC.
    let names = d.schedules().await;
    assert_eq!(names.len(), 1, "{names:?}");
    let (input, expression) = d.schedule_input(&names[0]).await;
    assert_eq!(expression, "at(2026-09-10T22:15:00)");
    assert_eq!(input["timer"]["kind"], "deadline");

    // The schedule fires: the timer function lapses it and queues the task.
    let report = d.fire(&input, t("2026-09-10T22:15:20Z")).await;
    assert_eq!(report.lapses, 1);
    let event = d.receive().await;
    assert_eq!(event.records.len(), 1);
    assert_eq!(d.submit(event.clone(), t("2026-09-10T22:15:21Z")).await, 0);
    assert_eq!(d.delivered(), [OVERDUE]);

    // The timer fired twice: nothing more lapses, nothing more is sent.
    assert_eq!(d.fire(&input, t("2026-09-10T22:15:40Z")).await.lapses, 0);
    // The SQS message delivered twice: the outbox says sent; the agent sees one task.
    assert_eq!(d.submit(event, t("2026-09-10T22:16:00Z")).await, 0);
    let again = d.receive().await;
    d.submit(again, t("2026-09-10T22:16:01Z")).await;
    assert_eq!(d.delivered(), [OVERDUE]);

    // The lapse is visible to an operator, delivered.
    let (status, lapses) = d
        .call(api_event(
            "GET",
            "/v1/lapses",
            json!({ "authorization": "Bearer ops-1" }),
            &json!(null),
        ))
        .await;
    assert_eq!(status, 200);
    assert_eq!(lapses["lapses"][0]["delivery"], "sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schedule_deleted_behind_the_watchers_back_still_lapses_by_the_sweep() {
    let d = deploy("e2e-sweep").await;
    d.push_booking("").await;
    for name in d.schedules().await {
        d.scheduler
            .delete_schedule()
            .group_name(&d.group)
            .name(name)
            .send()
            .await
            .expect("delete");
    }
    assert!(d.schedules().await.is_empty());
    let report = watcher_lambda::timer::handle(
        &*d.parts.watcher,
        &*d.parts.queue,
        &*d.parts.timers,
        Some(&d.following()),
        &json!({ "sweep": true }),
        t("2026-09-10T22:20:00Z"),
    )
    .await
    .expect("sweep");
    assert_eq!(report.lapses, 1);
    let event = d.receive().await;
    d.submit(event, t("2026-09-10T22:20:01Z")).await;
    assert_eq!(d.delivered(), [OVERDUE]);
    // Late, never skipped: lapsedAt is the sweep's clock.
    let task = d.sent_lapse_task();
    assert_eq!(
        task["params"]["message"]["metadata"][URI]["lapse"]["lapsedAt"],
        "2026-09-10T22:20:00Z"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timer_woken_forty_seconds_early_lapses_nothing_and_re_arms() {
    let d = deploy("e2e-early").await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    // Scheduler deletes a schedule once it fires; an early wake must put it back.
    d.scheduler
        .delete_schedule()
        .group_name(&d.group)
        .name(&names[0])
        .send()
        .await
        .expect("delete");
    let report = d.fire(&input, t("2026-09-10T22:14:20Z")).await;
    assert_eq!(report.lapses, 0);
    assert_eq!(d.receive().await.records.len(), 0);
    let (again, expression) = d.schedule_input(&names[0]).await;
    assert_eq!(again, input);
    assert_eq!(expression, "at(2026-09-10T22:15:00)");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fact_and_a_timer_racing_on_one_expectation_give_one_lapse_at_most() {
    let d = deploy("e2e-race").await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    d.clock.set(t("2026-09-10T22:15:30Z"));
    let fact = json!({ "factKey": "shipment.manifest.received:PA-2026-0901", "observedAt": "2026-09-10T22:10:00Z",
                       "subject": { "type": "shipment", "id": "PA-2026-0901" } });
    let fact_call = d.call(api_event(
        "POST",
        "/v1/facts",
        json!({ "authorization": "Bearer src-1", "content-type": "application/json" }),
        &fact,
    ));
    let timer_call = d.fire(&input, t("2026-09-10T22:15:30Z"));
    let ((status, _), _) = tokio::join!(fact_call, timer_call);
    assert_eq!(status, 200);
    // Whichever won, the deadline had passed on the watcher's clock before the fact arrived:
    // exactly one overdue lapse, and the expectation is satisfied (late).
    let records = d
        .parts
        .watcher
        .store
        .subject(
            &Tenant::default_tenant(),
            &watcher_core::ids::Subject::parse("shipment", "PA-2026-0901").unwrap(),
        )
        .await
        .unwrap()
        .expect("subject")
        .records;
    assert_eq!(records[0].lapses.len(), 1);
    assert_eq!(records[0].status, Status::Satisfied);
    // A wake-up of the agent for each second its lapse task was handed over in (the two racing
    // commits may fall in two): its lane sends the lapse task once.
    let event = d.receive().await;
    assert!(
        (1..=2).contains(&event.records.len()),
        "{:?}",
        event.records
    );
    d.submit(event, t("2026-09-10T22:15:31Z")).await;
    assert_eq!(d.delivered(), [OVERDUE]);
    // Its schedule's time (a minute before the deadline) had passed: on AWS it fired and was
    // deleted (`ActionAfterCompletion: DELETE`), so neither commit deleted it (the emulator keeps
    // it, never firing it). A late firing evaluates the timer and lapses nothing more.
    assert_eq!(d.schedules().await.len(), 1);
    let late = d.fire(&input, t("2026-09-10T22:16:00Z")).await;
    assert_eq!((late.evaluated, late.lapses), (1, 0));
    assert_eq!(d.delivered(), [OVERDUE]);
}

/// `ApproximateNumberOfMessages` and `ApproximateNumberOfMessagesDelayed` of the queue at `url`.
async fn visible_and_delayed(sqs: &aws_sdk_sqs::Client, url: &str) -> (u32, u32) {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(A::ApproximateNumberOfMessages)
        .attribute_names(A::ApproximateNumberOfMessagesDelayed)
        .send()
        .await
        .expect("queue attributes");
    let get = |name: A| -> u32 {
        out.attributes()
            .and_then(|a| a.get(&name))
            .map(|v| v.parse().expect("count"))
            .unwrap_or_default()
    };
    (
        get(A::ApproximateNumberOfMessages),
        get(A::ApproximateNumberOfMessagesDelayed),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schedule_a_minute_early_then_a_delayed_message_lapses_at_the_deadline_never_before() {
    let d = deploy_with("e2e-lead", true).await;
    let timer_queue = d.timer_queue_url.clone().expect("timer queue");
    d.push_booking("").await;

    // The deadline 22:15:00 is far off: one schedule, armed a minute early, flexible window off.
    let names = d.schedules().await;
    assert_eq!(names.len(), 1, "{names:?}");
    let (input, expression) = d.schedule_input(&names[0]).await;
    assert_eq!(expression, "at(2026-09-10T22:14:00)");
    assert_eq!(visible_and_delayed(&d.sqs, &timer_queue).await, (0, 0));

    // Scheduler fires within its minute, here at 22:14:58.3: early, so nothing lapses and nothing
    // is queued for the submitter; the rest of the wait is one message delayed 2 s (1.7 s
    // rounded up), to the timer queue.
    let report = d.fire(&input, t("2026-09-10T22:14:58.3Z")).await;
    assert_eq!((report.evaluated, report.lapses), (1, 0));
    assert!(d.receive().await.records.is_empty());
    assert_eq!(visible_and_delayed(&d.sqs, &timer_queue).await, (0, 1));
    let sent = std::time::Instant::now();
    let message = loop {
        let out = d
            .sqs
            .receive_message()
            .queue_url(&timer_queue)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        if let Some(m) = out.messages().first() {
            break m.clone();
        }
        assert!(sent.elapsed().as_secs() < 10, "no delayed timer message");
    };
    // moto counts the delay in whole seconds from the send: at least about 2 s after it.
    assert!(
        sent.elapsed() >= std::time::Duration::from_millis(1500),
        "{:?}",
        sent.elapsed()
    );
    let body: Value = serde_json::from_str(message.body().expect("body")).expect("json");
    assert_eq!(body, input, "the message carries the schedule's own input");

    // The timer function receives it through its event source mapping, as an SQS event.
    let event = json!({ "Records": [{ "messageId": message.message_id(), "body": message.body(),
        "eventSource": "aws:sqs", "receiptHandle": message.receipt_handle() }] });
    // Delivered a little early on the function's clock (clock skew): still nothing lapses; the
    // remaining 0.4 s becomes another message, delayed 1 s.
    let early = d.fire(&event, t("2026-09-10T22:14:59.6Z")).await;
    assert_eq!((early.evaluated, early.lapses), (1, 0));
    assert!(early.batch_item_failures.is_empty());
    assert!(d.receive().await.records.is_empty());
    assert_eq!(visible_and_delayed(&d.sqs, &timer_queue).await.1, 1);
    // At the deadline: the lapse, once, within a second of it.
    let due = d.fire(&event, t("2026-09-10T22:15:00.4Z")).await;
    assert_eq!((due.evaluated, due.lapses), (1, 1));
    let lapse = d.receive().await;
    assert_eq!(lapse.records.len(), 1);
    assert_eq!(d.submit(lapse, t("2026-09-10T22:15:00.6Z")).await, 0);
    assert_eq!(d.delivered(), [OVERDUE]);
    // The second delayed message arrives late: lapses nothing more.
    assert_eq!(d.fire(&event, t("2026-09-10T22:15:01Z")).await.lapses, 0);
    let task = d.sent_lapse_task();
    assert_eq!(
        task["params"]["message"]["metadata"][URI]["lapse"]["lapsedAt"],
        "2026-09-10T22:15:00.4Z"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deadline_within_fifteen_minutes_goes_straight_to_a_delayed_message() {
    let d = deploy_with("e2e-short", true).await;
    let timer_queue = d.timer_queue_url.clone().expect("timer queue");
    // Pushed ten minutes before the deadline (22:15): no schedule, one delayed message.
    d.clock.set(t("2026-09-10T22:05:00Z"));
    d.push_booking("").await;
    assert!(d.schedules().await.is_empty());
    assert_eq!(visible_and_delayed(&d.sqs, &timer_queue).await, (0, 1));
}

/// A timer function that died between committing a lapse and sending its lapse task to the
/// lapse queue leaves the task in the table only. The timer's message comes back (Scheduler's
/// retry, the timer queue's visibility timeout); its evaluation finds the lapse recorded and
/// hands the unsent task over then, not a sweep later. A timer fired again after the task was
/// sent hands nothing over.
#[tokio::test(flavor = "multi_thread")]
async fn a_replayed_timer_hands_over_the_lapse_task_its_first_run_never_sent() {
    let d = deploy("e2e-handover").await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    let timer: watcher_core::engine::TimerKey =
        serde_json::from_value(input["timer"].clone()).expect("timer key");
    // The first run: committed, then killed before its send (a watcher with no sink commits
    // and carries out nothing).
    let first_run = watcher_runtime::watcher::Watcher::new(
        Arc::clone(&d.parts.watcher.store),
        d.parts.watcher.directory.clone(),
        d.parts.watcher.settings,
    );
    let applied = first_run
        .apply(
            &Tenant::default_tenant(),
            &watcher_core::engine::Input::Timer(timer),
            t("2026-09-10T22:15:20Z"),
        )
        .await
        .expect("the first run's commit");
    assert_eq!(applied.outbox.len(), 1);
    assert_eq!(d.receive().await.records.len(), 0, "nothing was sent");

    // The replay: nothing lapses again, the unsent task is handed over.
    let report = d.fire(&input, t("2026-09-10T22:15:50Z")).await;
    assert_eq!((report.lapses, report.handed_over), (0, 1));
    let event = d.receive().await;
    assert_eq!(event.records.len(), 1);
    d.submit(event, t("2026-09-10T22:15:51Z")).await;
    assert_eq!(d.delivered(), [OVERDUE]);

    // Fired once more after the send: nothing is handed over, nothing more is delivered.
    let report = d.fire(&input, t("2026-09-10T22:16:30Z")).await;
    assert_eq!((report.lapses, report.handed_over), (0, 0));
    assert_eq!(d.delivered(), [OVERDUE]);
}
