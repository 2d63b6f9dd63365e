//! A lapse is a wake-up of its agent's lane on the lapse queue, not the lapse task: the
//! submitter's lane reads the agent's due lapse tasks from the table and sends each once,
//! however often, and by however many wake-ups, it is woken.

use std::sync::atomic::{AtomicUsize, Ordering};

use watcher_delivery::testing::CapturedRequest;

use super::*;

/// The deployment's expectation lapsed at its deadline, its wake-up received once (as the
/// event source mapping hands it over, `ApproximateReceiveCount` 1).
async fn lapsed(d: &Deployment) -> SqsEvent {
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    assert_eq!(d.fire(&input, t("2026-09-10T22:15:20Z")).await.lapses, 1);
    let event = d.receive().await;
    assert_eq!(event.records.len(), 1);
    let body: Value = serde_json::from_str(event.records[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(body["tenant"], "default", "{body}");
    assert_eq!(body["agent"], "booking", "{body}");
    assert_eq!(
        body.get("messageId"),
        None,
        "a wake-up, not the lapse task: {body}"
    );
    event
}

/// `event` received again (a duplicate wake-up, or the same one redelivered).
fn again(mut event: SqsEvent) -> SqsEvent {
    for record in &mut event.records {
        record
            .attributes
            .insert("ApproximateReceiveCount".into(), "2".into());
    }
    event
}

/// The overdue lapse task of `booking` as the table holds it.
async fn stored(d: &Deployment) -> watcher_runtime::store::OutboxEntry {
    d.parts
        .watcher
        .store
        .outbox_get(
            &Tenant::default_tenant(),
            &watcher_core::ids::AgentId::parse("booking").unwrap(),
            OVERDUE,
        )
        .await
        .unwrap()
        .expect("entry")
}

fn sends(d: &Deployment) -> usize {
    d.agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("SendMessage"))
        .count()
}

/// A wake-up's lane reads the agent's due and followed lapse tasks from their indexes, and its
/// next ones when it is done (four `Query`s), and claims and records the lapse task with two
/// conditional writes: the entry is `sent`.
#[tokio::test(flavor = "multi_thread")]
async fn a_wake_up_sends_the_agents_due_lapse_task_from_its_index() {
    let d = deploy("e2e-wake").await;
    let event = lapsed(&d).await;
    d.requests.take();
    assert_eq!(d.submit(event, t("2026-09-10T22:15:21Z")).await, 0);
    let made = d.requests.take();
    assert_eq!(d.delivered(), [OVERDUE]);
    assert_eq!(made.get("DynamoDB Query"), Some(&4), "{made:?}");
    assert_eq!(
        made.get("DynamoDB UpdateItem"),
        Some(&2),
        "claim and record: {made:?}"
    );
    let entry = stored(&d).await;
    assert_eq!(entry.delivery, DeliveryState::Sent);
    assert_eq!(entry.attempts, 1);
}

/// A wake-up received again after its lane sent the lapse task (a duplicate, or the same
/// message redelivered after a crash before its delete) sends nothing: the lapse task is `sent`
/// in the table and no longer in the agent's queued index.
#[tokio::test(flavor = "multi_thread")]
async fn a_wake_up_received_again_sends_nothing_more() {
    let d = deploy("e2e-wake-again").await;
    let event = lapsed(&d).await;
    assert_eq!(d.submit(event.clone(), t("2026-09-10T22:15:21Z")).await, 0);
    assert_eq!(d.submit(again(event), t("2026-09-10T22:21:00Z")).await, 0);
    assert_eq!(d.delivered(), [OVERDUE]);
    assert_eq!(sends(&d), 1);
}

/// A lapse task whose first send failed is not sent again before its retry, however often its
/// agent is woken meanwhile, and the retry's record is kept. At its retry it is sent once.
#[tokio::test(flavor = "multi_thread")]
async fn a_retried_lapse_task_waits_for_its_retry_whatever_wakes_its_lane() {
    let failed_once = Arc::new(AtomicUsize::new(0));
    let seen = failed_once.clone();
    let agent = CaptureAgent::spawn(Behaviour::from_fn(move |n, r: &CapturedRequest| {
        if r.rpc_method().as_deref() == Some("SendMessage")
            && seen.fetch_add(1, Ordering::SeqCst) == 0
        {
            Reply::status(503)
        } else {
            Reply::task(format!("task-{}", n + 1), TaskState::Submitted)
        }
    }))
    .await
    .expect("capture agent");
    let d = deploy_to("e2e-wake-retry", false, agent).await;
    let event = lapsed(&d).await;
    // The first send fails: the lane asks to be woken at its retry.
    assert_eq!(d.submit(event.clone(), t("2026-09-10T22:15:21Z")).await, 0);
    let retried = stored(&d).await;
    assert_eq!(
        (retried.delivery, retried.attempts),
        (DeliveryState::Queued, 1)
    );
    assert!(retried.next_attempt_at > t("2026-09-10T22:15:21Z"));
    assert_eq!(failed_once.load(Ordering::SeqCst), 1);

    // Woken again before the retry is due: not sent, the entry as the failed attempt left it.
    assert_eq!(
        d.submit(again(event.clone()), t("2026-09-10T22:15:21Z"))
            .await,
        0
    );
    assert_eq!(
        failed_once.load(Ordering::SeqCst),
        1,
        "not sent before its retry"
    );
    assert_eq!(stored(&d).await, retried);

    // At its retry, sent once.
    assert_eq!(d.submit(again(event), retried.next_attempt_at).await, 0);
    assert_eq!(failed_once.load(Ordering::SeqCst), 2);
    assert_eq!(
        d.delivered(),
        [OVERDUE, OVERDUE],
        "the failed send, then the retry"
    );
}
