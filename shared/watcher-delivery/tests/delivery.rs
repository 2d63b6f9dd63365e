//! Lapse-task delivery against a real HTTP agent on 127.0.0.1 (serve.md, semantics.md "The lapse
//! task"). Time is driven by passing `now`; the only waits are HTTP round trips (and one client
//! timeout).

use crate::common;

use std::time::Duration;

use a2a_types::TaskState;
use common::*;
use watcher_delivery::{
    deliver_due, A2aClient, AgentEndpoint, ClientConfig, DeliveryReport, EntryOutcome, RateLimit,
    RateLimiter, RetryPolicy, SendOutcome,
};
use watcher_runtime::store::DeliveryState;

const LIMIT: usize = 100;

#[tokio::test]
async fn two_503s_then_a_task_is_delivered_exactly_once() {
    let agent = spawn_capture_agent(Behaviour::sequence(vec![
        Reply::status(503),
        Reply::http(503, "<html>busy</html>"),
        Reply::task("task-lapse-1", TaskState::Submitted),
    ]))
    .await;
    let entry = lapse_entry("exp-01J8Q0MANIFEST");
    let store = store_with(vec![entry.clone()]).await;
    let endpoints = endpoints(agent.endpoint(Some(BEARER.into())));
    let sub = submitter(RetryPolicy::default(), None);

    // First attempt: 503, rescheduled with backoff.
    let r = sub
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!((r.sent, r.retried, r.failed), (0, 1, 0));
    let after1 = get(&store, &entry).await;
    assert_eq!(after1.delivery, DeliveryState::Queued);
    assert_eq!(after1.attempts, 1);
    assert!(after1.next_attempt_at > t0());
    assert!(after1.last_error.as_deref().unwrap().contains("503"));

    // Not due yet: nothing is posted.
    let r = sub
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r, DeliveryReport::default());
    assert_eq!(agent.request_count(), 1);

    // Second attempt at the scheduled instant: 503 again, backoff grows.
    let r = sub
        .deliver_due(&store, &endpoints, after1.next_attempt_at, LIMIT)
        .await
        .unwrap();
    assert_eq!(r.retried, 1);
    let after2 = get(&store, &entry).await;
    assert_eq!(after2.attempts, 2);
    assert!(after2.next_attempt_at > after1.next_attempt_at);
    assert!(after2.last_error.as_deref().unwrap().contains("busy"));

    // Third attempt: the task.
    let r = sub
        .deliver_due(&store, &endpoints, after2.next_attempt_at, LIMIT)
        .await
        .unwrap();
    assert_eq!((r.sent, r.retried, r.failed), (1, 0, 0));
    let done = get(&store, &entry).await;
    assert_eq!(done.delivery, DeliveryState::Sent);
    assert_eq!(done.attempts, 3);
    assert_eq!(done.task_id.as_deref(), Some("task-lapse-1"));
    assert_eq!(done.task_state.as_deref(), Some("TASK_STATE_SUBMITTED"));
    assert!(!done.answered_with_message);
    assert_eq!(done.last_error, None);

    // Later passes post nothing.
    let r = sub
        .deliver_due(&store, &endpoints, plus_secs(t0(), 86_400), LIMIT)
        .await
        .unwrap();
    assert_eq!(r, DeliveryReport::default());

    let requests = agent.requests();
    assert_eq!(requests.len(), 3);
    for req in &requests {
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
    let entry = lapse_entry("exp-msg");
    let store = store_with(vec![entry.clone()]).await;
    let endpoints = endpoints(agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);

    let r = sub
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!((r.sent, r.retried, r.failed), (1, 0, 0));
    let done = get(&store, &entry).await;
    assert_eq!(done.delivery, DeliveryState::Sent);
    assert!(done.answered_with_message);
    assert_eq!(done.task_id, None);
    assert_eq!(done.attempts, 1);

    let r = sub
        .deliver_due(&store, &endpoints, plus_secs(t0(), 3600), LIMIT)
        .await
        .unwrap();
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
    let entry = lapse_entry("exp-bad");
    let store = store_with(vec![entry.clone()]).await;
    let endpoints = endpoints(agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);

    let r = sub
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!((r.sent, r.retried, r.failed), (0, 0, 1));
    let failed = get(&store, &entry).await;
    assert_eq!(failed.delivery, DeliveryState::Failed);
    assert_eq!(failed.attempts, 1);
    let error = failed.last_error.unwrap();
    assert!(error.contains("-32602"), "{error}");
    assert!(error.contains("Validation failed: message.role"), "{error}");

    let r = sub
        .deliver_due(&store, &endpoints, plus_secs(t0(), 3600), LIMIT)
        .await
        .unwrap();
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
    let entry = lapse_entry("exp-flaky");
    let store = store_with(vec![entry.clone()]).await;
    let endpoints = endpoints(agent.endpoint(None));
    // base 1 s: attempts at 0, ~0.5–1, ~1.5–3, … ; 10 s of retrying is several attempts.
    let policy = RetryPolicy {
        give_up_after: std::time::Duration::from_secs(10),
        ..RetryPolicy::default()
    };
    let sub = submitter(policy, None);

    let mut now = t0();
    let mut reports = Vec::new();
    loop {
        reports.push(
            sub.deliver_due(&store, &endpoints, now, LIMIT)
                .await
                .unwrap(),
        );
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
    assert_eq!(agent.request_count(), retried + 1);
    let ids: Vec<_> = agent.requests().iter().map(|r| r.rpc_id()).collect();
    assert!(ids.iter().all(|id| id == entry.message_id.as_str()));
}

#[tokio::test]
async fn a_sent_entry_is_never_sent_again_even_after_a_restart() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let entry = lapse_entry("exp-once");
    let store = store_with(vec![entry.clone()]).await;
    let endpoints = endpoints(agent.endpoint(None));

    let first = submitter(RetryPolicy::default(), None);
    let r = first
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r.sent, 1);
    let r = first
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r, DeliveryReport::default());

    // A new process (fresh limiter and client) over the same store.
    let restarted = submitter(RetryPolicy::default(), None);
    let later = plus_secs(t0(), 600);
    let r = restarted
        .deliver_due(&store, &endpoints, later, LIMIT)
        .await
        .unwrap();
    assert_eq!(r, DeliveryReport::default());
    assert_eq!(
        restarted
            .deliver_one(
                &store,
                &endpoints,
                &entry.tenant,
                &entry.agent,
                &entry.message_id,
                later,
            )
            .await
            .unwrap(),
        EntryOutcome::Skipped {
            delivery: Some(DeliveryState::Sent)
        }
    );
    assert_eq!(agent.request_count(), 1);
    assert_eq!(get(&store, &entry).await.task_id.as_deref(), Some("task-1"));
}

#[tokio::test]
async fn the_rate_limit_defers_the_third_entry_without_counting_an_attempt() {
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

    let r = sub
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!((r.sent, r.deferred, r.retried, r.failed), (2, 1, 0, 0));
    assert_eq!(get(&store, &entries[0]).await.delivery, DeliveryState::Sent);
    assert_eq!(get(&store, &entries[1]).await.delivery, DeliveryState::Sent);
    let third = get(&store, &entries[2]).await;
    assert_eq!(third.delivery, DeliveryState::Queued);
    assert_eq!(third.attempts, 0);
    assert_eq!(third.last_error, None);
    // 2 per minute: the next token frees 30 s later.
    assert_eq!(third.next_attempt_at, plus_secs(t0(), 30));
    assert_eq!(agent.request_count(), 2);

    // Not before then.
    let r = sub
        .deliver_due(&store, &endpoints, plus_secs(t0(), 29), LIMIT)
        .await
        .unwrap();
    assert_eq!(r, DeliveryReport::default());

    let r = sub
        .deliver_due(&store, &endpoints, plus_secs(t0(), 30), LIMIT)
        .await
        .unwrap();
    assert_eq!((r.sent, r.deferred), (1, 0));
    let third = get(&store, &entries[2]).await;
    assert_eq!(third.delivery, DeliveryState::Sent);
    assert_eq!(third.attempts, 1);
    let sent_ids: Vec<_> = agent
        .requests()
        .iter()
        .map(|r| r.message_id().unwrap())
        .collect();
    let expected: Vec<_> = entries.iter().map(|e| e.message_id.clone()).collect();
    assert_eq!(sent_ids, expected);
}

#[tokio::test]
async fn an_agent_without_an_endpoint_fails_with_a_clear_error() {
    let entry = lapse_entry("exp-nowhere");
    let store = store_with(vec![entry.clone()]).await;
    let none: std::collections::HashMap<_, AgentEndpoint> = Default::default();
    let sub = submitter(RetryPolicy::default(), None);

    let r = sub.deliver_due(&store, &none, t0(), LIMIT).await.unwrap();
    assert_eq!(r.failed, 1);
    let e = get(&store, &entry).await;
    assert_eq!(e.delivery, DeliveryState::Failed);
    assert_eq!(e.attempts, 0);
    let error = e.last_error.unwrap();
    assert!(error.contains("no endpoint"), "{error}");
    assert!(error.contains("booking"), "{error}");
}

#[tokio::test]
async fn http_4xx_is_permanent_but_429_is_retried_after_the_agent_asks() {
    let agent = spawn_capture_agent(Behaviour::sequence(vec![
        Reply::Http {
            status: 429,
            headers: vec![("retry-after".into(), "120".into())],
            body: String::new(),
        },
        Reply::http(401, "unknown token"),
    ]))
    .await;
    let entry = lapse_entry("exp-auth");
    let store = store_with(vec![entry.clone()]).await;
    let endpoints = endpoints(agent.endpoint(Some("wrong".into())));
    let sub = submitter(RetryPolicy::default(), None);

    let r = sub
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r.retried, 1);
    let e = get(&store, &entry).await;
    assert_eq!(e.next_attempt_at, plus_secs(t0(), 120));

    let r = sub
        .deliver_due(&store, &endpoints, e.next_attempt_at, LIMIT)
        .await
        .unwrap();
    assert_eq!(r.failed, 1);
    let e = get(&store, &entry).await;
    assert_eq!(e.delivery, DeliveryState::Failed);
    let error = e.last_error.unwrap();
    assert!(
        error.contains("401") && error.contains("unknown token"),
        "{error}"
    );
}

/// `Retry-After` as an HTTP-date (RFC 9110 §10.2.3): the lapse task waits until that date, an
/// hour away, not the backoff's second.
#[tokio::test]
async fn an_http_date_retry_after_is_waited_for() {
    let in_an_hour = std::time::SystemTime::now() + Duration::from_secs(3600);
    let agent = spawn_capture_agent(Behaviour::always(Reply::Http {
        status: 503,
        headers: vec![("retry-after".into(), httpdate::fmt_http_date(in_an_hour))],
        body: String::new(),
    }))
    .await;
    let entry = lapse_entry("exp-date");
    let store = store_with(vec![entry.clone()]).await;
    let sub = submitter(RetryPolicy::default(), None);
    let r = sub
        .deliver_due(&store, &endpoints(agent.endpoint(None)), t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r.retried, 1);
    let e = get(&store, &entry).await;
    // The date has whole seconds and the answer took a moment: within a few seconds of an hour.
    assert!(
        e.next_attempt_at > plus_secs(t0(), 3590) && e.next_attempt_at <= plus_secs(t0(), 3600),
        "{} after {}",
        e.next_attempt_at,
        t0()
    );
}

#[tokio::test]
async fn a_2xx_that_is_not_json_rpc_fails() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::http(200, "<html>ok</html>"))).await;
    let entry = lapse_entry("exp-html");
    let store = store_with(vec![entry.clone()]).await;
    let sub = submitter(RetryPolicy::default(), None);
    let r = sub
        .deliver_due(&store, &endpoints(agent.endpoint(None)), t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r.failed, 1);
    let error = get(&store, &entry).await.last_error.unwrap();
    assert!(error.contains("not a JSON-RPC response"), "{error}");
}

#[tokio::test]
async fn redirects_are_not_followed() {
    let elsewhere = spawn_capture_agent(Behaviour::accept()).await;
    let agent = spawn_capture_agent(Behaviour::always(Reply::Http {
        status: 307,
        headers: vec![("location".into(), elsewhere.url())],
        body: String::new(),
    }))
    .await;
    let entry = lapse_entry("exp-redirect");
    let store = store_with(vec![entry.clone()]).await;
    let sub = submitter(RetryPolicy::default(), None);
    let r = sub
        .deliver_due(&store, &endpoints(agent.endpoint(None)), t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r.failed, 1);
    assert_eq!(elsewhere.request_count(), 0);
    let error = get(&store, &entry).await.last_error.unwrap();
    assert!(error.contains("not followed"), "{error}");
}

#[tokio::test]
async fn transport_failures_are_retried() {
    // A port with nothing listening.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let entry = lapse_entry("exp-refused");
    let store = store_with(vec![entry.clone()]).await;
    let sub = submitter(RetryPolicy::default(), None);
    let ep = AgentEndpoint::configured(format!("http://{closed}/"), None);
    let r = sub
        .deliver_due(&store, &endpoints(ep), t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r.retried, 1);
    let error = get(&store, &entry).await.last_error.unwrap();
    assert!(error.contains("could not connect"), "{error}");
}

#[tokio::test]
async fn a_silent_agent_times_out_and_is_retried() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::Hang)).await;
    let client = A2aClient::new(&ClientConfig {
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    })
    .unwrap();
    let entry = lapse_entry("exp-silent");
    let store = store_with(vec![entry.clone()]).await;
    let limiter = RateLimiter::new(RateLimit::unlimited());
    let r = deliver_due(
        &store,
        &client,
        &endpoints(agent.endpoint(None)),
        &RetryPolicy::default(),
        &limiter,
        t0(),
        LIMIT,
    )
    .await
    .unwrap();
    assert_eq!(r.retried, 1);
    assert_eq!(agent.request_count(), 1);
    let error = get(&store, &entry).await.last_error.unwrap();
    assert!(error.contains("did not answer in time"), "{error}");
}

#[tokio::test]
async fn card_endpoints_must_be_public() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let port = agent.addr().port();
    for url in [
        agent.url(),                         // an IP literal on loopback
        format!("http://localhost:{port}/"), // a name resolving to loopback
    ] {
        let entry = lapse_entry("exp-ssrf");
        let store = store_with(vec![entry.clone()]).await;
        let sub = submitter(RetryPolicy::default(), None);
        let ep = AgentEndpoint::from_card(url.clone(), None);
        let r = sub
            .deliver_due(&store, &endpoints(ep), t0(), LIMIT)
            .await
            .unwrap();
        assert_eq!(r.failed, 1, "{url}");
        let error = get(&store, &entry).await.last_error.unwrap();
        assert!(error.contains("outbound address policy"), "{url}: {error}");
    }
    assert_eq!(agent.request_count(), 0);
}

#[tokio::test]
async fn deliver_one_posts_a_named_entry_when_due() {
    let agent =
        spawn_capture_agent(Behaviour::always(Reply::task("task-9", TaskState::Working))).await;
    let mut entry = lapse_entry("exp-one");
    entry.next_attempt_at = plus_secs(t0(), 60);
    let store = store_with(vec![entry.clone()]).await;
    let endpoints = endpoints(agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);

    let early = sub
        .deliver_one(
            &store,
            &endpoints,
            &entry.tenant,
            &entry.agent,
            &entry.message_id,
            t0(),
        )
        .await
        .unwrap();
    assert_eq!(
        early,
        EntryOutcome::NotDue {
            at: plus_secs(t0(), 60)
        }
    );
    let missing = sub
        .deliver_one(
            &store,
            &endpoints,
            &entry.tenant,
            &entry.agent,
            "lapse:nope",
            t0(),
        )
        .await
        .unwrap();
    assert_eq!(missing, EntryOutcome::Skipped { delivery: None });
    assert_eq!(agent.request_count(), 0);

    let sent = sub
        .deliver_one(
            &store,
            &endpoints,
            &entry.tenant,
            &entry.agent,
            &entry.message_id,
            plus_secs(t0(), 60),
        )
        .await
        .unwrap();
    assert_eq!(
        sent,
        EntryOutcome::Sent(SendOutcome::Task {
            id: "task-9".into(),
            state: TaskState::Working
        })
    );
    assert_eq!(
        get(&store, &entry).await.task_state.as_deref(),
        Some("TASK_STATE_WORKING")
    );
}

#[tokio::test]
async fn tenants_reach_their_own_endpoints() {
    let agent_a = spawn_capture_agent(Behaviour::accept()).await;
    let agent_b = spawn_capture_agent(Behaviour::accept()).await;
    let acme = watcher_core::ids::Tenant::parse("acme").unwrap();
    let mut other = lapse_entry("exp-acme");
    other.tenant = acme.clone();
    let mine = lapse_entry("exp-default");
    let store = store_with(vec![mine.clone(), other.clone()]).await;
    let mut endpoints = endpoints(agent_a.endpoint(None));
    endpoints.insert((acme, booking()), agent_b.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);

    let r = sub
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r.sent, 2);
    assert_eq!(agent_a.requests()[0].message_id().unwrap(), mine.message_id);
    assert_eq!(
        agent_b.requests()[0].message_id().unwrap(),
        other.message_id
    );
    assert_eq!((agent_a.request_count(), agent_b.request_count()), (1, 1));
}

/// Expectation ids are scoped to the raising agent: two agents of one tenant may have lapse tasks
/// with the same `messageId`. Each goes to its own agent, and each is recorded on its own entry.
#[tokio::test]
async fn two_agents_with_the_same_message_id_each_get_their_lapse_task() {
    let agent_a = spawn_capture_agent(Behaviour::always(Reply::task(
        "task-booking",
        TaskState::Submitted,
    )))
    .await;
    let agent_b = spawn_capture_agent(Behaviour::always(Reply::task(
        "task-other",
        TaskState::Working,
    )))
    .await;
    let other_agent = watcher_core::ids::AgentId::parse("other").unwrap();
    let mine = lapse_entry("exp-shared");
    let mut theirs = lapse_entry("exp-shared");
    theirs.agent = other_agent.clone();
    assert_eq!(mine.message_id, theirs.message_id);
    let store = store_with(vec![mine.clone(), theirs.clone()]).await;
    let mut endpoints = endpoints(agent_a.endpoint(None));
    endpoints.insert((tenant(), other_agent), agent_b.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);

    let r = sub
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!(r.sent, 2, "{r:?}");
    assert_eq!((agent_a.request_count(), agent_b.request_count()), (1, 1));
    assert_eq!(agent_a.requests()[0].message_id().unwrap(), mine.message_id);
    assert_eq!(agent_b.requests()[0].message_id().unwrap(), mine.message_id);
    let (a, b) = (get(&store, &mine).await, get(&store, &theirs).await);
    assert_eq!(a.task_id.as_deref(), Some("task-booking"));
    assert_eq!(b.task_id.as_deref(), Some("task-other"));
    assert_eq!(b.task_state.as_deref(), Some("TASK_STATE_WORKING"));

    // Neither is sent again, by a pass or by name.
    let r = sub
        .deliver_due(&store, &endpoints, plus_secs(t0(), 600), LIMIT)
        .await
        .unwrap();
    assert_eq!(r, DeliveryReport::default());
    for e in [&mine, &theirs] {
        assert_eq!(
            sub.deliver_one(&store, &endpoints, &e.tenant, &e.agent, &e.message_id, t0())
                .await
                .unwrap(),
            EntryOutcome::Skipped {
                delivery: Some(DeliveryState::Sent)
            }
        );
    }
    assert_eq!((agent_a.request_count(), agent_b.request_count()), (1, 1));
}

/// serve spawns the submitter loop on tokio, and the Lambda holds `&dyn Store`: the passes'
/// futures must be `Send` with trait objects too.
#[test]
fn passes_are_send_over_trait_objects() {
    fn assert_send<T: Send>(_: &T) {}
    let store = watcher_runtime::memory::MemoryStore::new();
    let store: &dyn watcher_runtime::store::Store = &store;
    let endpoints: std::sync::Arc<dyn watcher_delivery::Endpoints> = std::sync::Arc::new(
        endpoints(AgentEndpoint::configured("http://127.0.0.1:9/", None)),
    );
    let sub = submitter(RetryPolicy::default(), None);
    let pass = sub.deliver_due(store, &*endpoints, t0(), LIMIT);
    assert_send(&pass);
    let tenant = tenant();
    let agent = booking();
    let one = sub.deliver_one(store, &endpoints, &tenant, &agent, "m", t0());
    assert_send(&one);
    let client = client();
    let limiter = RateLimiter::default();
    let policy = RetryPolicy::default();
    let free = deliver_due(store, &client, &endpoints, &policy, &limiter, t0(), LIMIT);
    assert_send(&free);
}

/// An agent whose card offers only A2A 0.3 is sent `message/send` with the 0.3 message shape,
/// and its bare-Task answer (with `kind`, a lowercase state) is a delivered task.
#[tokio::test]
async fn a_0_3_agent_is_sent_message_send() {
    let answer = serde_json::json!({ "jsonrpc": "2.0", "id": "x", "result": {
        "kind": "task", "id": "task-v03", "contextId": "ctx",
        "status": { "state": "submitted" } } });
    let agent = spawn_capture_agent(Behaviour::from_fn(move |_, req| {
        let mut a = answer.clone();
        a["id"] = req.rpc_id();
        Reply::http(200, a.to_string())
    }))
    .await;
    let entry = lapse_entry("exp-v03");
    let store = store_with(vec![entry.clone()]).await;
    let endpoint = agent
        .endpoint(None)
        .speaking(watcher_delivery::endpoint::Protocol::V03);
    let endpoints = endpoints(endpoint);
    let sub = submitter(RetryPolicy::default(), None);
    let r = sub
        .deliver_due(&store, &endpoints, t0(), LIMIT)
        .await
        .unwrap();
    assert_eq!((r.sent, r.retried, r.failed), (1, 0, 0));
    let done = get(&store, &entry).await;
    assert_eq!(done.delivery, DeliveryState::Sent);
    assert_eq!(done.task_id.as_deref(), Some("task-v03"));

    let req = &agent.requests()[0];
    assert_eq!(req.rpc_method().as_deref(), Some("message/send"));
    assert_eq!(req.header("a2a-version"), None, "0.3 has no version header");
    assert!(req.header("x-a2a-extensions").is_some());
    let body = req.json().expect("JSON");
    let message = &body["params"]["message"];
    assert_eq!(message["kind"], "message");
    assert_eq!(message["role"], "user");
    assert_eq!(message["messageId"], entry.message_id.as_str());
    assert_eq!(message["parts"][0]["kind"], "text");
    assert_eq!(body["params"]["configuration"]["blocking"], false);
}

/// An ambiguous lapse task (an attempt with no recorded outcome) whose task is older than 500
/// newer tasks of the same context is found by following `ListTasks`' pages (100 a page: the
/// sixth holds it) and recorded `sent` with that task; its `messageId` is not posted again.
#[tokio::test]
async fn an_ambiguous_lapse_task_behind_500_newer_tasks_is_found_not_sent_again() {
    let agent = watcher_delivery::testing::CaptureAgent::spawn_keeping_tasks(Behaviour::accept())
        .await
        .unwrap();
    let endpoint = agent.endpoint(Some(BEARER.into()));
    let entry = lapse_entry("exp-lost");
    let first = client()
        .send_message(&endpoint, &entry.request, &entry.message_id)
        .await
        .unwrap();
    let SendOutcome::Task { id: first_task, .. } = first else {
        panic!("the agent answers with a task");
    };
    for n in 0..500 {
        let newer = lapse_entry(&format!("exp-newer-{n}"));
        client()
            .send_message(&endpoint, &newer.request, &newer.message_id)
            .await
            .unwrap();
    }
    let mut ambiguous = entry.clone();
    ambiguous.attempt_started_at = Some(t0());
    let store = store_with(vec![ambiguous]).await;
    let outcome = submitter(RetryPolicy::default(), None)
        .deliver_one(
            &store,
            &endpoints(endpoint),
            &tenant(),
            &booking(),
            &entry.message_id,
            t0(),
        )
        .await
        .unwrap();
    assert!(
        matches!(&outcome, EntryOutcome::Sent(SendOutcome::Task { id, .. }) if *id == first_task),
        "{outcome:?}"
    );
    let posted = agent
        .sent_message_ids()
        .iter()
        .filter(|m| **m == entry.message_id)
        .count();
    assert_eq!(posted, 1, "the lapse task reached the agent once");
    let lists = agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("ListTasks"))
        .count();
    assert_eq!(lists, 6, "501 tasks at 100 a page");
    let stored = get(&store, &entry).await;
    assert_eq!(stored.delivery, DeliveryState::Sent);
    assert_eq!(stored.task_id.as_deref(), Some(first_task.as_str()));
    assert_eq!(
        stored.lease, None,
        "the holder's outcome released its claim"
    );
}

/// An agent whose `ListTasks` always offers another page is read for at most `LIST_PAGES`
/// pages; the look-up could not tell, so the lapse task is posted again with the same
/// `messageId` (docs/interpretation.md).
#[tokio::test]
async fn an_endless_list_stops_at_the_page_bound_and_posts_again() {
    let agent = spawn_capture_agent(Behaviour::from_fn(|n, request| {
        if request.rpc_method().as_deref() == Some("ListTasks") {
            Reply::http(
                200,
                serde_json::json!({"jsonrpc": "2.0", "id": request.rpc_id(), "result": {
                    "tasks": [], "nextPageToken": format!("page-{n}")
                }})
                .to_string(),
            )
        } else {
            Reply::task("task-again", TaskState::Submitted)
        }
    }))
    .await;
    let entry = lapse_entry("exp-endless");
    let mut ambiguous = entry.clone();
    ambiguous.attempt_started_at = Some(t0());
    let store = store_with(vec![ambiguous]).await;
    let outcome = submitter(RetryPolicy::default(), None)
        .deliver_one(
            &store,
            &endpoints(agent.endpoint(Some(BEARER.into()))),
            &tenant(),
            &booking(),
            &entry.message_id,
            t0(),
        )
        .await
        .unwrap();
    assert!(matches!(outcome, EntryOutcome::Sent(_)), "{outcome:?}");
    let lists = agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("ListTasks"))
        .count();
    assert_eq!(lists, watcher_delivery::client::LIST_PAGES);
    assert_eq!(
        agent.sent_message_ids(),
        std::slice::from_ref(&entry.message_id)
    );
}

/// Two submitters (two processes) handed the same due lapse tasks at once: each entry is
/// claimed by one of them, and every `messageId` reaches the agent exactly once.
#[tokio::test]
async fn two_submitters_handed_the_same_entries_send_each_once() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    agent.hold(true);
    let entries: Vec<_> = (0..10).map(|n| lapse_entry(&format!("exp-{n}"))).collect();
    let store = std::sync::Arc::new(store_with(entries.clone()).await);
    let endpoints = std::sync::Arc::new(endpoints(agent.endpoint(Some(BEARER.into()))));
    let run = |sub: watcher_delivery::Submitter| {
        let (store, endpoints, entries) = (store.clone(), endpoints.clone(), entries.clone());
        tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for e in &entries {
                outcomes.push(
                    sub.deliver_one(
                        &*store,
                        &*endpoints,
                        &e.tenant,
                        &e.agent,
                        &e.message_id,
                        t0(),
                    )
                    .await
                    .unwrap(),
                );
            }
            outcomes
        })
    };
    let a = run(submitter(RetryPolicy::default(), None));
    let b = run(submitter(RetryPolicy::default(), None));
    // Both are posting or refused before any answer comes back.
    tokio::time::sleep(Duration::from_millis(300)).await;
    agent.hold(false);
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    let sent = a
        .iter()
        .chain(&b)
        .filter(|o| matches!(o, EntryOutcome::Sent(_)))
        .count();
    assert_eq!(sent, 10, "{a:?} {b:?}");
    let mut ids = agent.sent_message_ids();
    ids.sort();
    let mut want: Vec<String> = entries.iter().map(|e| e.message_id.clone()).collect();
    want.sort();
    assert_eq!(ids, want, "each messageId sent exactly once");
}
