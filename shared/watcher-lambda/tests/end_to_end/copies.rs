//! A lapse message carries its entry as queued: the submitter sends by that copy with no read
//! of the table, and a copy that is no longer the stored entry decides nothing.

use std::sync::atomic::{AtomicUsize, Ordering};

use watcher_delivery::testing::CapturedRequest;

use super::*;

/// The deployment's expectation lapsed at its deadline, its lapse message received once (as the
/// event source mapping hands it over, `ApproximateReceiveCount` 1).
async fn lapsed(d: &Deployment) -> SqsEvent {
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    assert_eq!(d.fire(&input, t("2026-09-10T22:15:20Z")).await.lapses, 1);
    let event = d.receive().await;
    assert_eq!(event.records.len(), 1);
    let record = &event.records[0];
    assert_eq!(
        record
            .attributes
            .get("ApproximateReceiveCount")
            .map(String::as_str),
        Some("1")
    );
    let body: Value = serde_json::from_str(record.body.as_deref().unwrap()).unwrap();
    assert_eq!(body["entry"]["messageId"], OVERDUE, "{body}");
    assert_eq!(body["entry"]["delivery"], "queued");
    event
}

/// `event` as a first receive of another message with the same body (a second message for
/// the same lapse task, as the sweep queues one for an entry it finds still queued).
fn received_first(mut event: SqsEvent) -> SqsEvent {
    for record in &mut event.records {
        record
            .attributes
            .insert("ApproximateReceiveCount".into(), "1".into());
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

/// The message's first receive sends the lapse task by its copy: the submitter reads nothing
/// from the table (the claim and the outcome are conditional writes), and the entry is `sent`.
#[tokio::test(flavor = "multi_thread")]
async fn a_first_receive_sends_by_the_copy_with_no_read() {
    let d = deploy("e2e-copy").await;
    let event = lapsed(&d).await;
    d.requests.take();
    assert_eq!(d.submit(event, t("2026-09-10T22:15:21Z")).await, 0);
    let made = d.requests.take();
    assert_eq!(d.delivered(), [OVERDUE]);
    assert_eq!(made.get("DynamoDB GetItem"), None, "{made:?}");
    assert_eq!(made.get("DynamoDB UpdateItem"), Some(&2), "{made:?}");
    let entry = stored(&d).await;
    assert_eq!(entry.delivery, DeliveryState::Sent);
    assert_eq!(entry.attempts, 1);
}

/// A copy of a lapse task already sent (another message of the same lapse task, received for
/// the first time) is not sent again: its claim finds the stored entry changed, reads it, and
/// finds it `sent`.
#[tokio::test(flavor = "multi_thread")]
async fn a_stale_copy_of_a_sent_lapse_task_is_not_sent_again() {
    let d = deploy("e2e-copy-sent").await;
    let event = lapsed(&d).await;
    assert_eq!(d.submit(event.clone(), t("2026-09-10T22:15:21Z")).await, 0);
    assert_eq!(
        d.submit(received_first(event), t("2026-09-10T22:21:00Z"))
            .await,
        0
    );
    assert_eq!(d.delivered(), [OVERDUE]);
    assert_eq!(sends(&d), 1);
}

/// A copy of a lapse task whose first send failed (retried later, its attempt counted) is not
/// sent before the retry is due, and the retry's record is kept: a stale copy decides nothing,
/// neither the send nor what is written.
#[tokio::test(flavor = "multi_thread")]
async fn a_stale_copy_of_a_retried_lapse_task_waits_for_its_retry() {
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
    let d = deploy_to("e2e-copy-retry", false, agent).await;
    let event = lapsed(&d).await;
    // The first send fails: handed back for its retry.
    assert_eq!(d.submit(event.clone(), t("2026-09-10T22:15:21Z")).await, 1);
    let retried = stored(&d).await;
    assert_eq!(
        (retried.delivery, retried.attempts),
        (DeliveryState::Queued, 1)
    );
    assert!(retried.next_attempt_at > t("2026-09-10T22:15:21Z"));
    assert_eq!(failed_once.load(Ordering::SeqCst), 1);

    // The copy (never attempted, due at the lapse) arrives again before the retry is due: not
    // sent, handed back, and the entry is as the failed attempt left it.
    assert_eq!(
        d.submit(received_first(event.clone()), t("2026-09-10T22:15:21Z"))
            .await,
        1
    );
    assert_eq!(
        failed_once.load(Ordering::SeqCst),
        1,
        "not sent before its retry"
    );
    let kept = stored(&d).await;
    assert_eq!(kept, retried);

    // At its retry, sent once.
    assert_eq!(
        d.submit(received_first(event), retried.next_attempt_at)
            .await,
        0
    );
    assert_eq!(failed_once.load(Ordering::SeqCst), 2);
    assert_eq!(
        d.delivered(),
        [OVERDUE, OVERDUE],
        "the failed send, then the retry"
    );
}
