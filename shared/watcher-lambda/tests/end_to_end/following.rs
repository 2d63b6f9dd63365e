//! Following with `GetTask` on AWS: a cancel never pushed, a lapse task never pushed, origins in the table, the sweep's budget.

use super::*;

/// A capture agent whose origin task `GetTask` finds canceled at `canceled_at` (the cancel never
/// pushed), and which accepts lapse tasks.
async fn canceled_unpushed(canceled_at: &'static str) -> CaptureAgent {
    CaptureAgent::spawn(Behaviour::from_fn(move |_, req| {
        match req.rpc_method().as_deref() {
            Some("GetTask") => Reply::rpc_result(
                req,
                json!({ "id": req.json().unwrap_or_default()["params"]["id"],
                        "contextId": "ctx-northgate-sep",
                        "status": { "state": "TASK_STATE_CANCELED",
                                    "timestamp": canceled_at } }),
            ),
            _ => Reply::task("lapse-task-1", TaskState::Submitted),
        }
    }))
    .await
    .expect("capture agent")
}

/// The methods the agent was called with, in order.
fn methods(agent: &CaptureAgent) -> Vec<String> {
    agent
        .requests()
        .iter()
        .filter_map(watcher_delivery::testing::CapturedRequest::rpc_method)
        .collect()
}

/// The origin task is canceled and the cancel is never pushed: when the lapse message reaches
/// the submitter, `GetTask` on the origin finds it canceled, the expectation is withdrawn and the
/// lapse task is marked `withdrawn`, never sent (serve's origin check before the first send).
#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_never_pushed_gives_no_lapse_task_on_aws() {
    let agent = canceled_unpushed("2026-09-10T02:00:00Z").await;
    let d = deploy_to("e2e-origin-check", false, agent).await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    d.clock.set(t("2026-09-10T22:15:20Z"));
    assert_eq!(d.fire(&input, t("2026-09-10T22:15:20Z")).await.lapses, 1);
    let event = d.receive().await;
    assert_eq!(event.records.len(), 1);
    d.clock.set(t("2026-09-10T22:15:21Z"));
    assert_eq!(d.submit(event, t("2026-09-10T22:15:21Z")).await, 0);

    assert_eq!(
        methods(&d.agent),
        ["GetTask"],
        "asked for the origin, sent nothing"
    );
    assert!(d.delivered().is_empty());
    let tenant = Tenant::default_tenant();
    let store = &d.parts.watcher.store;
    let entry = store
        .outbox_get(
            &tenant,
            &watcher_core::ids::AgentId::parse("booking").unwrap(),
            OVERDUE,
        )
        .await
        .unwrap()
        .expect("outbox entry");
    assert_eq!(entry.delivery, DeliveryState::Withdrawn);
    let subject = watcher_core::ids::Subject::parse("shipment", "PA-2026-0901").unwrap();
    let state = store.subject(&tenant, &subject).await.unwrap().unwrap();
    assert_eq!(state.records[0].status, Status::Withdrawn);
}

/// The agent was asked for no push notifications and never pushes: the sweep asks for the
/// delivered lapse task with `GetTask` once its next poll is due, and its state follows the
/// agent's answer to `TASK_STATE_COMPLETED`, after which it is no longer followed.
#[tokio::test(flavor = "multi_thread")]
async fn a_lapse_task_never_pushed_follows_get_task_to_completed_at_the_sweep() {
    let agent = CaptureAgent::spawn_keeping_tasks(Behaviour::always(Reply::task(
        "lapse-task-1",
        TaskState::Working,
    )))
    .await
    .expect("capture agent");
    let d = deploy_to("e2e-follow", false, agent).await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    d.clock.set(t("2026-09-10T22:15:20Z"));
    d.fire(&input, t("2026-09-10T22:15:20Z")).await;
    d.clock.set(t("2026-09-10T22:15:21Z"));
    assert_eq!(
        d.submit(d.receive().await, t("2026-09-10T22:15:21Z")).await,
        0
    );
    assert_eq!(d.delivered(), [OVERDUE]);
    let tenant = Tenant::default_tenant();
    let booking: watcher_core::ids::AgentId = watcher_core::ids::AgentId::parse("booking").unwrap();
    let entry = |d: &Deployment| {
        let store = d.parts.watcher.store.clone();
        let (tenant, booking) = (tenant.clone(), booking.clone());
        async move {
            store
                .outbox_get(&tenant, &booking, OVERDUE)
                .await
                .unwrap()
                .expect("outbox entry")
        }
    };
    let sent = entry(&d).await;
    assert_eq!(sent.task_state.as_deref(), Some("TASK_STATE_WORKING"));
    assert!(sent.follow_at.is_some(), "followed: no push was asked for");

    // The agent finishes the task and pushes nothing. Within FOLLOW_MARGIN of its next poll
    // the follow duty leaves it to the lanes (which poll it on time when woken); past it, the
    // duty asks.
    d.agent.set_task_state("lapse-task-1", TaskState::Completed);
    let due = sent.follow_at.expect("followed");
    let inside = due
        .checked_add(jiff::SignedDuration::from_secs(59))
        .unwrap();
    let lanes_turn = d.fire(&json!({ "sweep": "follow" }), inside).await;
    assert_eq!(lanes_turn.followed, 0, "the lanes' turn: {lanes_turn:?}");
    let past = due
        .checked_add(watcher_lambda::timer::FOLLOW_MARGIN)
        .unwrap();
    assert!(past < t("2026-09-10T22:20:00Z"));
    d.clock.set(t("2026-09-10T22:20:00Z"));
    let report = d
        .fire(&json!({ "sweep": "follow" }), t("2026-09-10T22:20:00Z"))
        .await;
    assert_eq!(report.followed, 1);
    let followed = entry(&d).await;
    assert_eq!(followed.task_state.as_deref(), Some("TASK_STATE_COMPLETED"));
    assert_eq!(followed.follow_at, None, "no longer followed");
    let asked = d
        .agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("GetTask"))
        .filter_map(|r| r.json()?["params"]["id"].as_str().map(str::to_owned))
        .collect::<Vec<_>>();
    assert!(asked.contains(&"lapse-task-1".to_owned()), "{asked:?}");

    // A later sweep polls nothing more.
    let report = d
        .fire(&json!({ "sweep": true }), t("2026-09-10T22:25:00Z"))
        .await;
    assert_eq!(report.followed, 0);
}

/// The origin task is followed in the table from the push that raised its expectation: the
/// sweep after the first poll falls due asks for it with `GetTask`, finds it canceled (the
/// cancel never pushed) and withdraws the expectation long before its deadline; the task is no
/// longer followed, and the deadline lapses nothing.
#[tokio::test(flavor = "multi_thread")]
async fn an_origin_followed_in_the_table_is_found_canceled_by_the_sweep() {
    let agent = canceled_unpushed("2026-09-10T01:00:05Z").await;
    let d = deploy_to("e2e-origins", false, agent).await;
    d.push_booking("").await;
    let tenant = Tenant::default_tenant();
    let booking = watcher_core::ids::AgentId::parse("booking").unwrap();
    let followed = d
        .parts
        .watcher
        .store
        .origins_due(&tenant, &booking, t("2026-09-10T02:00:00Z"), 10)
        .await
        .unwrap();
    assert_eq!(
        followed
            .iter()
            .map(|o| o.task_id.as_str())
            .collect::<Vec<_>>(),
        ["task-booking-7f3a"],
        "the push that raised the expectation follows its task in the table"
    );
    assert_eq!(
        followed[0].next_at,
        t("2026-09-10T01:00:10Z"),
        "poll_first after"
    );

    // A sweep before the first poll is due asks nothing.
    let early = d
        .fire(&json!({ "sweep": true }), t("2026-09-10T01:00:05Z"))
        .await;
    assert_eq!(early.origins, 0);
    assert!(methods(&d.agent).is_empty());

    d.clock.set(t("2026-09-10T01:05:00Z"));
    let report = d
        .fire(&json!({ "sweep": true }), t("2026-09-10T01:05:00Z"))
        .await;
    assert_eq!(report.origins, 1);
    assert_eq!(methods(&d.agent), ["GetTask"]);
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
    assert!(
        d.parts
            .watcher
            .store
            .origins_due(&tenant, &booking, t("2026-09-11T00:00:00Z"), 10)
            .await
            .unwrap()
            .is_empty(),
        "a terminal origin is no longer followed"
    );
    let later = d
        .fire(&json!({ "sweep": true }), t("2026-09-10T23:00:00Z"))
        .await;
    assert_eq!((later.lapses, later.origins), (0, 0));
    assert!(d.delivered().is_empty());
}

/// An agent that holds every answer: the sweep's following passes end at their budget, the
/// sweep still returns (long before the function's timeout) with `cutShort`, and the poll it cut
/// short recorded nothing, so the origin is due again at the next sweep.
#[tokio::test(flavor = "multi_thread")]
async fn a_sweep_whose_agent_holds_its_answers_ends_at_its_budget() {
    let agent = CaptureAgent::spawn(Behaviour::accept())
        .await
        .expect("capture agent");
    let d = deploy_to("e2e-budget", false, agent).await;
    d.push_booking("").await;
    d.agent.hold(true);
    let budget = std::time::Duration::from_millis(500);
    let following = watcher_lambda::timer::Following {
        budget,
        ..d.following()
    };
    let started = std::time::Instant::now();
    let report = watcher_lambda::timer::handle(
        &*d.parts.watcher,
        &*d.parts.queue,
        &*d.parts.timers,
        Some(&following),
        &json!({ "sweep": true }),
        t("2026-09-10T01:05:00Z"),
    )
    .await
    .expect("sweep");
    let took = started.elapsed();
    assert!(report.cut_short, "{report:?}");
    assert!(took < budget * 4, "took {took:?}");
    let tenant = Tenant::default_tenant();
    let booking = watcher_core::ids::AgentId::parse("booking").unwrap();
    let still = d
        .parts
        .watcher
        .store
        .origins_due(&tenant, &booking, t("2026-09-10T01:05:00Z"), 10)
        .await
        .unwrap();
    assert_eq!(still.len(), 1, "due again at the next sweep");
    d.agent.hold(false);
}
