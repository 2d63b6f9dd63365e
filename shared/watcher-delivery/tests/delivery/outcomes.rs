//! What each answer does to a lapse task: delivered once, a Message, permanent and retryable errors, never sent twice, the rate limit, no endpoint.

use super::*;

/// Two 503s, then a Task: each 503 leaves the attempt ambiguous, so each retry first asks
/// `ListTasks` (this agent lists no such task) and then posts again, the same request each time.
#[tokio::test]
async fn two_503s_then_a_task_is_delivered_exactly_once() {
    let sends = std::sync::atomic::AtomicUsize::new(0);
    let agent = spawn_capture_agent(Behaviour::from_fn(move |_, request| {
        if request.rpc_method().as_deref() == Some("ListTasks") {
            return Reply::http(
                200,
                serde_json::json!({"jsonrpc": "2.0", "id": request.rpc_id(), "result": {
                    "tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0
                }})
                .to_string(),
            );
        }
        match sends.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 => Reply::status(503),
            1 => Reply::http(503, "<html>busy</html>"),
            _ => Reply::task("task-lapse-1", TaskState::Submitted),
        }
    }))
    .await;
    let (entry, store) = one_lapse_task("exp-01J8Q0MANIFEST").await;
    let endpoints = endpoints(agent.endpoint(Some(BEARER.into())));
    let sub = submitter(RetryPolicy::default(), None);

    // First attempt: 503, rescheduled with backoff.
    let r = pass(&sub, &store, &endpoints, t0()).await;
    assert_eq!((r.sent, r.retried, r.failed), (0, 1, 0));
    let after1 = get(&store, &entry).await;
    assert_eq!(after1.delivery, DeliveryState::Queued);
    assert_eq!(after1.attempts, 1);
    assert!(after1.next_attempt_at > t0());
    assert!(after1.last_error.as_deref().unwrap().contains("503"));

    // Not due yet: nothing is posted.
    let r = pass(&sub, &store, &endpoints, t0()).await;
    assert_eq!(r, DeliveryReport::default());
    assert_eq!(agent.request_count(), 1);

    // Second attempt at the scheduled instant: 503 again, backoff grows.
    let r = pass(&sub, &store, &endpoints, after1.next_attempt_at).await;
    assert_eq!(r.retried, 1);
    let after2 = get(&store, &entry).await;
    assert_eq!(after2.attempts, 2);
    assert!(after2.next_attempt_at > after1.next_attempt_at);
    assert!(after2.last_error.as_deref().unwrap().contains("busy"));

    // Third attempt: the task.
    let r = pass(&sub, &store, &endpoints, after2.next_attempt_at).await;
    assert_eq!((r.sent, r.retried, r.failed), (1, 0, 0));
    let done = get(&store, &entry).await;
    assert_eq!(done.delivery, DeliveryState::Sent);
    assert_eq!(done.attempts, 3);
    assert_eq!(done.task_id.as_deref(), Some("task-lapse-1"));
    assert_eq!(done.task_state.as_deref(), Some("TASK_STATE_SUBMITTED"));
    assert!(!done.answered_with_message);
    assert_eq!(done.last_error, None);

    // Later passes post nothing.
    let r = pass(&sub, &store, &endpoints, plus_secs(t0(), 86_400)).await;
    assert_eq!(r, DeliveryReport::default());

    // The lane follows the delivered task with `GetTask`: only sends and look-ups count here.
    let sends: Vec<_> = agent
        .requests()
        .into_iter()
        .filter(|r| r.rpc_method().as_deref() == Some("SendMessage"))
        .collect();
    let lists = agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("ListTasks"))
        .count();
    assert_eq!(sends.len(), 3);
    assert_eq!(lists, 2, "one look-up before each retry");
    for req in &sends {
        assert_eq!(req.method, "POST");
        assert_eq!(req.header("a2a-version"), Some("1.0"));
        assert_eq!(
            req.header("A2A-Extensions"),
            Some("https://rsaxb.com/a2a/expectations/v1")
        );
        assert_eq!(req.header("content-type"), Some("application/json"));
        assert_eq!(
            req.header("authorization"),
            Some(format!("Bearer {BEARER}").as_str())
        );
        let body = req.json().expect("JSON body");
        assert_eq!(body["jsonrpc"], "2.0");
        assert_eq!(body["method"], "SendMessage");
        assert_eq!(body["id"], entry.message_id.as_str());
        assert_eq!(body["params"], entry.request);
        assert_eq!(req.message_id().as_deref(), Some(entry.message_id.as_str()));
    }
}

#[tokio::test]
async fn a_message_answer_is_recorded_and_not_retried() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::message("reply-1"))).await;
    let (entry, store) = one_lapse_task("exp-msg").await;
    let endpoints = endpoints(agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);

    let r = pass(&sub, &store, &endpoints, t0()).await;
    assert_eq!((r.sent, r.retried, r.failed), (1, 0, 0));
    let done = get(&store, &entry).await;
    assert_eq!(done.delivery, DeliveryState::Sent);
    assert!(done.answered_with_message);
    assert_eq!(done.task_id, None);
    assert_eq!(done.attempts, 1);

    let r = pass(&sub, &store, &endpoints, plus_secs(t0(), 3600)).await;
    assert_eq!(r, DeliveryReport::default());
    assert_eq!(agent.request_count(), 1);
    // No bearer configured: no Authorization header.
    assert_eq!(agent.requests()[0].header("authorization"), None);
}

#[tokio::test]
async fn a_permanent_json_rpc_error_fails_at_once() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::rpc_error(
        -32602,
        "Validation failed: message.role Field is required",
    )))
    .await;
    let (entry, store) = one_lapse_task("exp-bad").await;
    let endpoints = endpoints(agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);

    let r = pass(&sub, &store, &endpoints, t0()).await;
    assert_eq!((r.sent, r.retried, r.failed), (0, 0, 1));
    let failed = get(&store, &entry).await;
    assert_eq!(failed.delivery, DeliveryState::Failed);
    assert_eq!(failed.attempts, 1);
    let error = failed.last_error.unwrap();
    assert!(error.contains("-32602"), "{error}");
    assert!(error.contains("Validation failed: message.role"), "{error}");

    let r = pass(&sub, &store, &endpoints, plus_secs(t0(), 3600)).await;
    assert_eq!(r, DeliveryReport::default());
    assert_eq!(agent.request_count(), 1);
}

#[tokio::test]
async fn a_retryable_error_fails_once_it_is_give_up_after_old() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::rpc_error(
        -32603,
        "internal error",
    )))
    .await;
    let (entry, store) = one_lapse_task("exp-flaky").await;
    let endpoints = endpoints(agent.endpoint(None));
    // base 1 s: attempts at 0, ~0.5–1, ~1.5–3, … ; 10 s of retrying is several attempts.
    let policy = RetryPolicy {
        give_up_after: Duration::from_secs(10),
        ..RetryPolicy::default()
    };
    let sub = submitter(policy, None);

    let mut now = t0();
    let mut reports = Vec::new();
    loop {
        reports.push(pass(&sub, &store, &endpoints, now).await);
        let e = get(&store, &entry).await;
        if e.delivery != DeliveryState::Queued {
            break;
        }
        assert!(e.next_attempt_at > now);
        assert!(e.next_attempt_at <= plus_secs(now, policy.max_backoff.as_secs()));
        now = e.next_attempt_at;
        assert!(
            e.next_attempt_at <= plus_secs(t0(), 10),
            "never past the give-up age"
        );
        assert!(reports.len() < 20, "never gave up");
    }
    let retried: usize = reports.iter().map(|r| r.retried).sum();
    let failed: usize = reports.iter().map(|r| r.failed).sum();
    assert_eq!(failed, 1);
    assert!(retried >= 3, "{retried}");
    assert_eq!(
        now,
        plus_secs(t0(), 10),
        "the last attempt is made at the give-up age"
    );
    let e = get(&store, &entry).await;
    assert_eq!(e.delivery, DeliveryState::Failed);
    assert_eq!(e.attempts as usize, retried + 1);
    let error = e.last_error.unwrap();
    assert!(
        error.starts_with("gave up after retrying for 10.000s"),
        "{error}"
    );
    assert!(error.contains("-32603"), "{error}");
    // `-32603` is the agent failing partway: each retry looks first (its ListTasks failing
    // alike), then posts again.
    let (sends, lists): (Vec<_>, Vec<_>) = agent
        .requests()
        .into_iter()
        .partition(|r| r.rpc_method().as_deref() == Some("SendMessage"));
    assert_eq!(sends.len(), retried + 1);
    assert_eq!(lists.len(), retried);
    assert!(sends
        .iter()
        .all(|r| r.rpc_id() == entry.message_id.as_str()));
}

#[tokio::test]
async fn a_sent_entry_is_never_sent_again_even_after_a_restart() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let (entry, store) = one_lapse_task("exp-once").await;
    let endpoints = endpoints(agent.endpoint(None));

    let first = submitter(RetryPolicy::default(), None);
    let r = pass(&first, &store, &endpoints, t0()).await;
    assert_eq!(r.sent, 1);
    let r = pass(&first, &store, &endpoints, t0()).await;
    assert_eq!(r, DeliveryReport::default());

    // A new process (fresh limiter and client) over the same store.
    let restarted = submitter(RetryPolicy::default(), None);
    let later = plus_secs(t0(), 600);
    let r = pass(&restarted, &store, &endpoints, later).await;
    assert_eq!(r, DeliveryReport::default());
    assert_eq!(
        deliver_entry(&restarted, &store, &endpoints, &entry, later).await,
        EntryOutcome::Skipped {
            delivery: Some(DeliveryState::Sent)
        }
    );
    assert_eq!(agent.sent_message_ids().len(), 1);
    assert_eq!(get(&store, &entry).await.task_id.as_deref(), Some("task-1"));
}

/// The agent's rate limit (expectations-v1 §13.2) holds back what its bucket cannot cover: a
/// lane's pass takes two tokens for three due lapse tasks, sends two and ends `Limited` until
/// the next token frees (2 a minute: 30 s later), the third untouched (no attempt counted,
/// nothing written); a pass before then sends nothing, one at that instant sends it, in order.
#[tokio::test]
async fn the_rate_limit_holds_back_the_third_entry_without_counting_an_attempt() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let entries = vec![
        lapse_entry("exp-a"),
        lapse_entry("exp-b"),
        lapse_entry("exp-c"),
    ];
    let store = store_with(entries.clone()).await;
    let endpoints = endpoints(agent.endpoint(None));
    let sub = submitter(
        RetryPolicy::default(),
        Some(RateLimit {
            per_minute: 2,
            burst: 2,
        }),
    );
    let booking_lane = [(tenant(), booking())];
    let before = get(&store, &entries[2]).await;

    let r = lane_passes(&sub, &store, &endpoints, t0(), &booking_lane).await;
    assert_eq!(
        r[0].end,
        PassEnd::Limited {
            until: plus_secs(t0(), 30)
        }
    );
    let r = r[0].delivery;
    assert_eq!((r.sent, r.deferred, r.retried, r.failed), (2, 0, 0, 0));
    assert_eq!(get(&store, &entries[0]).await.delivery, DeliveryState::Sent);
    assert_eq!(get(&store, &entries[1]).await.delivery, DeliveryState::Sent);
    let third = get(&store, &entries[2]).await;
    assert_eq!(third, before, "held back without a write");
    assert_eq!((third.attempts, third.next_attempt_at), (0, t0()));
    assert_eq!(agent.sent_message_ids().len(), 2);

    // Not before then.
    let r = lane_passes(&sub, &store, &endpoints, plus_secs(t0(), 29), &booking_lane).await;
    assert_eq!(r[0].delivery, DeliveryReport::default());
    assert_eq!(
        r[0].end,
        PassEnd::Limited {
            until: plus_secs(t0(), 30)
        }
    );
    assert_eq!(agent.sent_message_ids().len(), 2);

    let r = pass(&sub, &store, &endpoints, plus_secs(t0(), 30)).await;
    assert_eq!((r.sent, r.deferred), (1, 0));
    let third = get(&store, &entries[2]).await;
    assert_eq!(third.delivery, DeliveryState::Sent);
    assert_eq!(third.attempts, 1);
    let expected: Vec<_> = entries.iter().map(|e| e.message_id.clone()).collect();
    assert_eq!(agent.sent_message_ids(), expected);
}

/// Sent by the one send entry point with no token left, a lapse task is deferred: it stays
/// queued with `next_attempt_at` at the next free token (2 a minute: 30 s later), no attempt
/// counted and no error recorded.
#[tokio::test]
async fn over_the_rate_the_send_entry_point_defers_without_counting_an_attempt() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let entries = vec![
        lapse_entry("exp-a"),
        lapse_entry("exp-b"),
        lapse_entry("exp-c"),
    ];
    let store = store_with(entries.clone()).await;
    let endpoints = endpoints(agent.endpoint(None));
    let sub = submitter(
        RetryPolicy::default(),
        Some(RateLimit {
            per_minute: 2,
            burst: 2,
        }),
    );
    for e in &entries[..2] {
        let outcome = deliver_entry(&sub, &store, &endpoints, e, t0()).await;
        assert!(matches!(outcome, EntryOutcome::Sent(_)), "{outcome:?}");
    }
    assert_eq!(
        deliver_entry(&sub, &store, &endpoints, &entries[2], t0()).await,
        EntryOutcome::Deferred {
            until: plus_secs(t0(), 30)
        }
    );
    let third = get(&store, &entries[2]).await;
    assert_eq!(third.delivery, DeliveryState::Queued);
    assert_eq!(third.attempts, 0);
    assert_eq!(third.last_error, None);
    assert_eq!(third.next_attempt_at, plus_secs(t0(), 30));
    assert_eq!(agent.request_count(), 2);
}

#[tokio::test]
async fn an_agent_without_an_endpoint_fails_with_a_clear_error() {
    let (entry, store) = one_lapse_task("exp-nowhere").await;
    let none: std::collections::HashMap<_, AgentEndpoint> = Default::default();
    let sub = submitter(RetryPolicy::default(), None);

    let r = pass(&sub, &store, &none, t0()).await;
    assert_eq!(r.failed, 1);
    let e = get(&store, &entry).await;
    assert_eq!(e.delivery, DeliveryState::Failed);
    assert_eq!(e.attempts, 0);
    let error = e.last_error.unwrap();
    assert!(error.contains("no endpoint"), "{error}");
    assert!(error.contains("booking"), "{error}");
}
