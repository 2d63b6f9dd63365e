//! `a2a-watcher serve` killed with SIGKILL and started again on the same SQLite file
//! (contracts/serve.md): a deadline that passed while the process was down is submitted late,
//! never skipped; a queued lapse task is never lost; a delivered one is never sent twice.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use a2a_types::TaskState;
use serde_json::json;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};

use common::*;

const PATIENCE: Duration = Duration::from_secs(20);

#[tokio::test]
async fn a_deadline_passed_while_down_is_submitted_late_once() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, "").await;
    let due = origin(Duration::from_secs(2)); // about 3 s ahead, grace PT0S
    let pushed = w
        .push(&one_expectation(
            "task-crash",
            "exp-crash",
            "PA-CRASH",
            due,
            "PT0S",
        ))
        .await;
    assert_eq!(pushed.status, 200, "{pushed:?}");
    assert_eq!(pushed.body["raised"], json!(["exp-crash"]));
    let recorded = wait_until(
        || async {
            w.shipment("PA-CRASH").await.is_some_and(|s| {
                s["expectations"][0]["expectationId"] == "exp-crash"
                    && s["expectations"][0]["dueAt"] == fmt(due)
            })
        },
        PATIENCE,
    )
    .await;
    assert!(recorded, "the expectation is recorded before the crash");

    w.kill().await;
    assert!(
        jiff::Timestamp::now() < due,
        "the crash must come before the deadline; the test machine is too slow"
    );
    assert_eq!(agent.request_count(), 0);
    wait_past(plus(due, 1)).await;

    w.start().await;
    wait_for_requests(&agent, 1, PATIENCE).await;
    w.first_lapse_sent(PATIENCE).await;

    let requests = agent.requests();
    assert_eq!(
        requests.len(),
        1,
        "{:#?}",
        requests.iter().map(summary).collect::<Vec<_>>()
    );
    let id = format!("lapse:exp-crash:overdue:{}", fmt(due));
    assert_eq!(requests[0].message_id().as_deref(), Some(id.as_str()));
    let block = lapse_block(&requests[0]);
    assert_eq!(block["lapse"], "overdue", "late, not skipped: {block:#}");
    assert_eq!(block["dueAt"], json!(fmt(due)));
    let lapsed_at = parse(&block["lapsedAt"]);
    assert!(
        lapsed_at > due,
        "lapsedAt {lapsed_at} is the restarted watcher's clock, after the deadline {due}"
    );
    assert!(lapsed_at >= plus(due, 1), "{lapsed_at} vs {due}");

    // Another crash and restart: the delivered messageId is never sent again.
    w.restart().await;
    let up = wait_until(|| async { w.lapses().await.len() == 1 }, PATIENCE).await;
    assert!(up);
    assert!(
        holds_for(
            || async { agent.request_count() == 1 },
            Duration::from_millis(2000)
        )
        .await,
        "no second lapse task after a restart: {:#?}",
        agent.requests().iter().map(summary).collect::<Vec<_>>()
    );
    let lapses = w.lapses().await;
    assert_eq!(lapses.len(), 1, "{lapses:#?}");
    assert_eq!(lapses[0]["messageId"], json!(id));
    assert_eq!(lapses[0]["delivery"], "sent");
    assert_eq!(lapses[0]["taskId"], "task-1");
}

/// A lapse task still queued (the agent was failing) when the process is killed is delivered
/// after the restart, exactly once.
#[tokio::test]
async fn a_queued_lapse_task_survives_a_crash() {
    let up = Arc::new(AtomicBool::new(false));
    let flag = up.clone();
    let agent = spawn_capture_agent(Behaviour::from_fn(move |n, _| {
        if flag.load(Ordering::SeqCst) {
            Reply::task(format!("task-{}", n + 1), TaskState::Submitted)
        } else {
            Reply::status(503)
        }
    }))
    .await;
    let mut w = spawn_watcher(&agent, "").await;
    let due = origin(Duration::from_millis(500));
    let pushed = w
        .push(&one_expectation("task-q", "exp-q", "PA-Q", due, "PT0S"))
        .await;
    assert_eq!(pushed.body["raised"], json!(["exp-q"]));

    // At least one failed attempt, recorded as such, then the crash.
    let failed_once = wait_until(
        || async {
            w.lapses()
                .await
                .first()
                .is_some_and(|l| l["delivery"] == "queued" && l["attempts"].as_u64() >= Some(1))
        },
        PATIENCE,
    )
    .await;
    assert!(failed_once, "{:#?}", w.lapses().await);
    w.kill().await;
    // A 503 may follow a request the agent took, so each retry asks `ListTasks` before it
    // posts again (docs/interpretation.md): count the posts.
    let failures = agent.sent_message_ids().len();
    assert!(failures >= 1);

    up.store(true, Ordering::SeqCst);
    w.start().await;
    let posted = wait_until(
        || async { agent.sent_message_ids().len() > failures },
        PATIENCE,
    )
    .await;
    assert!(
        posted,
        "{:#?}",
        agent.requests().iter().map(summary).collect::<Vec<_>>()
    );
    w.first_lapse_sent(PATIENCE).await;
    assert!(
        holds_for(
            || async { agent.sent_message_ids().len() == failures + 1 },
            Duration::from_millis(1500)
        )
        .await,
        "{:#?}",
        agent.requests().iter().map(summary).collect::<Vec<_>>()
    );
    let id = format!("lapse:exp-q:overdue:{}", fmt(due));
    for r in agent.requests() {
        match r.rpc_method().as_deref() {
            Some("SendMessage") => assert_eq!(r.message_id().as_deref(), Some(id.as_str())),
            other => assert_eq!(other, Some("ListTasks")),
        }
    }
}
