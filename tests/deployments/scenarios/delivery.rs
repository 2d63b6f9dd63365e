//! The scenarios after a lapse task is handed over: a failed send retried, a slow agent beside a
//! quick one, a sender killed mid-send, agents that do not wait for each other, origin tasks
//! reconciled and followed, and a person told. Written once against [`Deployment`] like the
//! others (`scenarios.rs`, whose helpers they use).

use super::super::harness::{about, OPSGENIE_API_KEY};
use super::*;

/// A lapse task the agent refuses permanently is `failed` (serve.md "Routes"); once the agent
/// is fixed, `POST /v1/lapses/retry` re-queues it and it is delivered with the same messageId.
/// A malformed retry body is 400 problem+json naming the field.
pub(super) async fn retry_a_failed_lapse_task(d: Arc<Deployment>, f: Arc<Fixture>) {
    let due = origin(Duration::from_secs(2));
    raise_one(&d, "retry", ("task-retry", "exp-retry", "PA-retry"), due).await;
    let failed = lapse_in(&d, "retry", "exp-retry", "failed").await;
    assert!(
        failed["lastError"]
            .as_str()
            .is_some_and(|e| e.contains("-32602")),
        "{failed:#}"
    );
    let mid = failed["messageId"].as_str().unwrap().to_owned();
    assert_eq!(mid, format!("lapse:exp-retry:overdue:{}", fmt(due)));

    let bad = d
        .post_as_operator(
            "/v1/lapses/retry",
            &json!({ "agent": "retry", "messageIds": "all" }),
        )
        .await;
    assert!(bad.assert_problem(400).contains("messageIds"), "{bad:?}");

    f.retry_broken.store(false, Ordering::SeqCst);
    let a = d
        .post_as_operator(
            "/v1/lapses/retry",
            &json!({ "agent": "retry", "messageIds": [mid] }),
        )
        .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["requeued"], json!(1), "{a:?}");
    assert_eq!(a.body["messageIds"], json!([mid]), "{a:?}");
    let sent = lapse_in(&d, "retry", "exp-retry", "sent").await;
    assert!(sent["taskId"].is_string(), "{sent:#}");
    assert_eq!(f.retry.sent_message_ids(), [mid.clone(), mid]);
}

/// A slow agent does not delay another agent's lapse task: with the slow agent holding its
/// answer, the quick agent's lapse task, due at the same instant, is delivered; the slow one's
/// is delivered once it answers, each once. The slow agent keeps its tasks (`ListTasks`): on a
/// machine slow enough that the hold outlasts the sender's timeout, the send's outcome is lost
/// and the next sender looks the task up instead of sending again (an agent without
/// `ListTasks` would get the same messageId twice, as docs/interpretation.md says).
pub(super) async fn slow_neighbour(d: Arc<Deployment>, f: Arc<Fixture>) {
    f.slow.hold(true);
    let due = origin(Duration::from_secs(2));
    for (agent, id) in [("slow", "exp-slow"), ("quick", "exp-quick")] {
        let (task, shipment) = (format!("task-{id}"), format!("PA-{id}"));
        raise_one(&d, agent, (&task, id, &shipment), due).await;
    }
    // The slow agent has the lapse task and holds its answer.
    first_sent(&d, &f.slow, "exp-slow").await;
    let quick = lapse_in(&d, "quick", "exp-quick", "sent").await;
    let slow = d.lapses_of("slow").await;
    assert!(
        slow.iter().all(|l| l["delivery"] == "queued"),
        "the slow agent has answered nothing yet: {slow:#?} (quick: {quick:#})"
    );
    f.slow.hold(false);
    lapse_in(&d, "slow", "exp-slow", "sent").await;
    assert_eq!(f.quick.sent_message_ids().len(), 1);
    assert_eq!(f.slow.sent_message_ids().len(), 1);
}

/// The process sending lapse tasks is killed while the agent holds its answer: a new one takes
/// over, finds the agent's task (`ListTasks`) instead of sending again, and records the lapse as
/// sent with that task: exactly one lapse task reaches the agent.
pub(super) async fn kill_the_sender_mid_send(d: Arc<Deployment>, f: Arc<Fixture>) {
    f.crash.hold(true);
    let due = origin(Duration::from_secs(2));
    raise_one(&d, "crash", ("task-crash", "exp-crash", "PA-crash"), due).await;
    let mid = first_sent(&d, &f.crash, "exp-crash").await;
    d.kill_sender().await;
    f.crash.hold(false);
    let lapse = lapse_within(&d, "crash", "exp-crash", "sent", d.patience_after_a_kill()).await;
    assert!(
        holds_for(
            || async { f.crash.sent_message_ids().len() == 1 },
            Duration::from_secs(2)
        )
        .await,
        "one lapse task, not two: {:?}",
        f.crash.sent_message_ids()
    );
    assert_eq!(lapse["messageId"], json!(mid));
    assert_eq!(f.crash.sent_message_ids(), [mid]);
    let task = f
        .crash
        .tasks()
        .into_iter()
        .next()
        .expect("the agent's task");
    assert_eq!(lapse["taskId"], task["id"], "{lapse:#}");
}

/// Agents are independent (serve.md "Routes"): an agent whose card cannot be read answers its
/// pushes 503 problem+json with `Retry-After` and is reported `unavailable`, while another
/// agent's expectation is raised and its lapse task delivered.
pub(super) async fn agents_independent(d: Arc<Deployment>, f: Arc<Fixture>) {
    let due = origin(Duration::from_secs(2));
    let refused = d
        .http()
        .post(d.url("/v1/agents/partner/push"))
        .header(
            "X-A2A-Notification-Token",
            super::super::harness::push_token("partner"),
        )
        .json(&one_expectation("task-p", "exp-p", "PA-p", due, "PT0S"))
        .send()
        .await
        .expect("the watcher answers");
    assert_come_back_later(&refused);

    raise_one(&d, "indep", ("task-indep", "exp-indep", "PA-indep"), due).await;
    lapse_in(&d, "indep", "exp-indep", "sent").await;
    assert_eq!(f.indep.sent_message_ids().len(), 1);

    let agents = d.get("/v1/agents?limit=100").await;
    let partner = agents.body["agents"]
        .as_array()
        .and_then(|l| l.iter().find(|a| a["agentId"] == "partner").cloned())
        .unwrap_or_else(|| panic!("partner is not listed: {agents:?}"));
    assert_eq!(partner["card"]["state"], "unavailable", "{partner:#}");
    assert!(
        partner["card"]["error"]
            .as_str()
            .is_some_and(|e| e.contains(&f.partner_port.to_string())),
        "{partner:#}"
    );
}

/// An origin task canceled without a push (the agent only answers `GetTask`) is found by
/// reconciliation: the expectation is withdrawn and no lapse task is sent.
pub(super) async fn reconcile_a_cancel_never_pushed(d: Arc<Deployment>, f: Arc<Fixture>) {
    let due = origin(Duration::from_secs(2));
    raise_one(&d, "recon", ("task-recon", "exp-recon", "PA-recon"), due).await;
    let withdrawn = wait_until(
        || async {
            d.shipment("PA-recon")
                .await
                .is_some_and(|s| expectation(&s, "exp-recon")["status"] == "withdrawn")
        },
        d.patience(),
    )
    .await;
    assert!(withdrawn, "{:#?}", d.shipment("PA-recon").await);
    wait_past(plus(due, 1)).await;
    assert!(
        holds_for(
            || async { f.recon.sent_message_ids().is_empty() },
            Duration::from_secs(1)
        )
        .await,
        "no lapse task for canceled work: {:?}",
        f.recon.sent_message_ids()
    );
    assert!(
        d.lapses_of("recon")
            .await
            .iter()
            .all(|l| l["delivery"] == "withdrawn"),
        "{:#?}",
        d.lapses_of("recon").await
    );
}

/// Withdrawal follows the lineage (docs/interpretation.md "Withdrawal follows the lineage"):
/// `task-lin-1` raises A, whose lapse task the agent takes as `lin-lapse-{n}`; while handling
/// it, the agent starts `task-lin-3` (its request names the lapse task in `referenceTaskIds`),
/// which raises C. `task-lin-1` then fails without a push: whether the watcher finds it by
/// following `task-lin-1` or by the check before C's first send, C is withdrawn and its lapse
/// task never sent.
pub(super) async fn withdraw_along_the_lineage(d: Arc<Deployment>, f: Arc<Fixture>) {
    let due = origin(Duration::from_secs(2));
    raise_one(&d, "lineage", ("task-lin-1", "exp-lin-a", "PA-lin-a"), due).await;
    let sent = lapse_in(&d, "lineage", "exp-lin-a", "sent").await;
    let lapse_task = sent["taskId"].as_str().expect("the lapse task's task");
    let due_c = origin(Duration::from_secs(3));
    let mut raised = one_expectation("task-lin-3", "exp-lin-c", "PA-lin-c", due_c, "PT0S");
    let artifact = raised["artifactUpdate"]["artifact"].take();
    let c = d
        .push(
            "lineage",
            &json!({ "task": {
                "id": "task-lin-3", "contextId": "ctx-task-lin-1",
                "status": { "state": "TASK_STATE_WORKING" },
                "history": [{ "messageId": "m-lin-3", "role": "ROLE_USER",
                              "parts": [{ "text": "while handling the lapse task" }],
                              "referenceTaskIds": [lapse_task] }],
                "artifacts": [artifact],
            } }),
        )
        .await;
    assert_eq!(c.body["raised"], json!(["exp-lin-c"]), "{c:?}");
    f.lineage_failed.store(true, Ordering::SeqCst);
    let withdrawn = wait_until(
        || async {
            d.shipment("PA-lin-c")
                .await
                .is_some_and(|s| expectation(&s, "exp-lin-c")["status"] == "withdrawn")
        },
        d.patience(),
    )
    .await;
    assert!(
        withdrawn,
        "{:#?}\n{}",
        d.shipment("PA-lin-c").await,
        d.log_tail().await
    );
    wait_past(plus(due_c, 1)).await;
    assert!(
        holds_for(
            || async { sent_for(&f.lineage, "exp-lin-c").is_empty() },
            Duration::from_secs(1)
        )
        .await,
        "no lapse task for work whose original failed: {:?}",
        f.lineage.sent_message_ids()
    );
    assert!(
        d.lapses_of("lineage")
            .await
            .iter()
            .filter(|l| l["expectationId"] == "exp-lin-c")
            .all(|l| l["delivery"] == "withdrawn"),
        "{:#?}",
        d.lapses_of("lineage").await
    );
}

/// A lapse task sent to an agent that pushes nothing is followed with `GetTask`: its state shows
/// at `GET /v1/lapses`, and once it needs a person that is marked.
pub(super) async fn follow_without_push(d: Arc<Deployment>, f: Arc<Fixture>) {
    let due = origin(Duration::from_secs(2));
    raise_one(
        &d,
        "follow",
        ("task-follow", "exp-follow", "PA-follow"),
        due,
    )
    .await;
    let sent = lapse_in(&d, "follow", "exp-follow", "sent").await;
    let task = sent["taskId"].as_str().expect("the task").to_owned();
    f.follow.set_task_state(&task, TaskState::InputRequired);
    let marked = d
        .lapse_when("follow", "exp-follow", |l| l["needsPerson"] == true)
        .await
        .unwrap_or_else(|| panic!("not marked: {:#?}", f.follow.tasks()));
    assert_eq!(marked["taskState"], "TASK_STATE_INPUT_REQUIRED");
    assert!(
        f.follow
            .requests()
            .iter()
            .any(|r| r.rpc_method().as_deref() == Some("GetTask")),
        "followed with GetTask"
    );
}

/// A person is told of a lapse (expectations-v1 §13.1; docs/howto/notifications.md): the
/// `[[notify]]` channel's receiver gets one signed `lapse.recorded` for it, on `serve` within a
/// second, on AWS at the first sweep after it settled (the local stack settles in seconds).
/// The same lapse reaches the on-call formats ("On-call tools"): the `pager` channel's stand-in
/// for PagerDuty gets exactly one Events API v2 `trigger` whose `dedup_key` is the lapse's event
/// id (the `webhook-id` the Standard Webhooks channel sent), the `genie` channel's Opsgenie
/// stand-in one Alert API create whose `alias` is that id, and the `alerts` channel's
/// Alertmanager stand-in one alert keyed by it whose body, under `redact = ["subject",
/// "agent_text"]` ("Redaction"), holds neither the subject's id nor what the agent wrote.
pub(super) async fn notify_a_person(d: Arc<Deployment>, f: Arc<Fixture>) {
    // A channel tells what lapses after it first ran (on AWS, at the timer function's first
    // sweep, within seconds of the start): the lapse comes well after.
    let due = origin(Duration::from_secs(15));
    raise_one(&d, "tell", ("task-tell", "exp-tell", "PA-tell"), due).await;
    let mid = format!("lapse:exp-tell:overdue:{}", fmt(due));
    let told = || f.lapses_told(&mid);
    let patience = d.patience() + Duration::from_secs(30);
    assert!(
        wait_until(|| async { !told().is_empty() }, patience).await,
        "no notification of {mid} within {patience:?}: {:?}\n{}",
        f.notified.seen(),
        d.log_tail().await
    );
    let n = &told()[0];
    assert!(n.verified, "signed with the channel's secret");
    assert_eq!(n.body["data"]["agent"], "tell");
    assert_eq!(n.body["data"]["block"]["subject"]["id"], "PA-tell");
    let lapsed_at: Timestamp = n.body["data"]["lapsedAt"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("lapsedAt: {:#}", n.body));
    assert!(lapsed_at >= due, "{:#}", n.body);
    // The lapse's event id: `msg_` and 32 hex digits, the same in every format.
    let event_id = n.id.clone();
    assert!(
        event_id.len() == 36
            && event_id
                .strip_prefix("msg_")
                .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit())),
        "{event_id:?}"
    );

    // Every channel of a round is run at once (serve: a loop each; AWS: the same sweep duty),
    // so the on-call channels are waited for with the same patience.
    // The on-call stand-ins take other lapses too (`page_and_resolve_through_a_restart`'s,
    // `a_grace_swallows_a_short_delay`'s): each is read by this lapse's key.
    let vendors = [
        ("pager", &f.paged),
        ("alerts", &f.alerted),
        ("genie", &f.opsgenie),
    ];
    for (name, vendor) in vendors {
        assert!(
            wait_until(|| async { !about(vendor, &event_id).is_empty() }, patience).await,
            "nothing about {event_id} reached the {name} channel's receiver within \
             {patience:?}: {:?}\n{}",
            vendor.seen(),
            d.log_tail().await
        );
    }
    assert!(
        holds_for(
            || async {
                told().len() == 1 && vendors.iter().all(|(_, v)| about(v, &event_id).len() == 1)
            },
            Duration::from_secs(3)
        )
        .await,
        "told once on each channel: {:?}\n{:?}\n{:?}\n{:?}",
        told(),
        f.paged.seen(),
        f.alerted.seen(),
        f.opsgenie.seen()
    );

    // PagerDuty Events API v2: one trigger, keyed by the lapse's event id.
    let pd = &about(&f.paged, &event_id)[0];
    assert_eq!(pd.path, "/v2/enqueue", "{pd:?}");
    assert_eq!(
        pd.content_type.as_deref(),
        Some("application/json"),
        "{pd:?}"
    );
    assert!(!pd.webhook_headers, "no Standard Webhooks headers: {pd:?}");
    let b = &pd.body;
    assert_eq!(
        b["routing_key"],
        super::super::harness::PAGERDUTY_ROUTING_KEY
    );
    assert_eq!(b["event_action"], "trigger", "{b:#}");
    assert_eq!(b["dedup_key"], json!(event_id), "{b:#}");
    let p = &b["payload"];
    assert_eq!(
        p["summary"],
        "Overdue: shipment.manifest for shipment PA-tell (agent tell)"
    );
    // No `public_url` in the suite's configuration: the source is the watcher's name.
    assert_eq!(p["source"], "a2a-watcher", "{b:#}");
    assert_eq!(
        p["severity"], "critical",
        "the channel's severity for overdue: {b:#}"
    );
    // `lapsedAt` (the instant the lapse was determined, at or after the due instant), RFC 3339
    // UTC, as the Standard Webhooks channel sent it.
    let at = p["timestamp"].as_str().unwrap_or_default();
    assert!(at.ends_with('Z'), "{b:#}");
    assert_eq!(at.parse::<Timestamp>().ok(), Some(lapsed_at), "{b:#}");
    assert_eq!(p["component"], "tell");
    assert_eq!(p["group"], "default");
    assert_eq!(p["class"], "overdue");
    assert_eq!(p["custom_details"]["message_id"], json!(mid), "{b:#}");

    // Opsgenie Alert API: one create (`POST /v2/alerts`), its alias the lapse's event id.
    let og = &about(&f.opsgenie, &event_id)[0];
    assert_eq!(og.path, "/v2/alerts", "{og:?}");
    assert_eq!(
        og.authorization,
        Some(format!("GenieKey {OPSGENIE_API_KEY}")),
        "{og:?}"
    );
    assert_eq!(
        og.content_type.as_deref(),
        Some("application/json"),
        "{og:?}"
    );
    assert!(!og.webhook_headers, "no Standard Webhooks headers: {og:?}");
    let b = &og.body;
    assert_eq!(b["alias"], json!(event_id), "{b:#}");
    assert_eq!(
        b["message"], "Overdue: shipment.manifest for shipment PA-tell (agent tell)",
        "{b:#}"
    );
    assert!(
        b["description"].as_str().is_some_and(|t| !t.is_empty()),
        "{b:#}"
    );
    assert_eq!(
        b["priority"], "P1",
        "the channel's priority for overdue: {b:#}"
    );
    assert_eq!(
        b["tags"],
        json!(["a2a-watcher", "overdue", "agent:tell", "tenant:default"]),
        "{b:#}"
    );
    assert_eq!(b["entity"], "shipment PA-tell", "{b:#}");
    assert_eq!(b["source"], "a2a-watcher", "{b:#}");
    let details = b["details"].as_object().expect("details: an object");
    assert!(
        details.values().all(Value::is_string),
        "strings only: {b:#}"
    );
    assert_eq!(details["message_id"], json!(mid), "{b:#}");
    assert_eq!(details["event_id"], json!(event_id), "{b:#}");
    assert_eq!(details["subject_id"], "PA-tell", "{b:#}");

    // Alertmanager, redacted: one alert keyed by the same id, and no subject id anywhere.
    let am = &about(&f.alerted, &event_id)[0];
    assert_eq!(am.path, "/api/v2/alerts", "{am:?}");
    assert_eq!(am.authorization, None, "{am:?}");
    let sent = am.body.to_string();
    assert!(!sent.contains("PA-tell"), "the subject's id left: {sent}");
    assert!(
        !sent.contains("airline manifest"),
        "the agent's words left: {sent}"
    );
    let alerts = am.body.as_array().expect("a JSON array of alerts");
    assert_eq!(alerts.len(), 1, "{sent}");
    let a = &alerts[0];
    assert!(
        a["labels"]
            .as_object()
            .is_some_and(|l| l.values().all(Value::is_string)),
        "{a:#}"
    );
    for (label, want) in [
        ("alertname", "A2AWatcherLapse"),
        ("tenant", "default"),
        ("agent", "tell"),
        ("kind", "overdue"),
        ("lapse", event_id.as_str()),
        ("subject_type", "shipment"),
        ("severity", "error"),
    ] {
        assert_eq!(a["labels"][label], want, "label {label}: {a:#}");
    }
    assert_eq!(
        a["annotations"]["summary"],
        "Overdue: shipment.manifest for shipment [redacted] (agent tell)"
    );
    assert_eq!(
        a["startsAt"]
            .as_str()
            .and_then(|s| s.parse::<Timestamp>().ok()),
        Some(lapsed_at),
        "{a:#}"
    );
    // No `horizon` on the channel: the alert fires a day (`PT24H`), then ends on its own.
    let ends = a["endsAt"]
        .as_str()
        .and_then(|s| s.parse::<Timestamp>().ok());
    assert_eq!(
        ends.map(|e| e.duration_since(lapsed_at).as_secs()),
        Some(86_400),
        "{a:#}"
    );
    assert!(a.get("generatorURL").is_none(), "{a:#}");
}
