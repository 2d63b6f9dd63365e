//! A send whose outcome is unknown is looked for before it is posted again (serve.md "never sends
//! a second one for a delivered `messageId`"; docs/interpretation.md "An ambiguous attempt is
//! looked for, not assumed"): a 5xx, or a timeout once the request was written, leaves the
//! attempt ambiguous and the next attempt asks `ListTasks` (with `historyLength`) first; a
//! refused connection does not, and the next attempt posts at once.

use super::*;

use serde_json::{json, Value};
use watcher_delivery::testing::CapturedRequest;
use watcher_delivery::SubmitterConfig;

/// The task an agent created for `message_id` in the lapse's context, as `ListTasks` lists it
/// (a2a-v1.md §1; the shape of wire/05): the lapse task's message first in its history, the
/// agent's later messages after it.
fn listed_task(id: &str, message_id: &str) -> Value {
    json!({
        "id": id,
        "contextId": "ctx-northgate-sep",
        "status": {"state": "TASK_STATE_WORKING", "timestamp": "2026-09-10T22:15:01Z"},
        "history": [
            {"messageId": message_id, "contextId": "ctx-northgate-sep", "taskId": id,
             "role": "ROLE_USER", "parts": [{"text": "Expectation is overdue."}]},
            {"messageId": "agent-msg-1", "contextId": "ctx-northgate-sep", "taskId": id,
             "role": "ROLE_AGENT", "parts": [{"text": "working..."}]}
        ]
    })
}

/// A `ListTasks` answer holding `task`, cut to the `historyLength` asked for, as the official
/// SDKs cut it: absent or `0`, no history (the Java SDK's default); `n`, the n most recent
/// messages.
fn list_answer(request: &CapturedRequest, task: &Value) -> Reply {
    let asked = request
        .json()
        .and_then(|b| b.pointer("/params/historyLength").and_then(Value::as_u64))
        .unwrap_or(0);
    let mut task = task.clone();
    let history = task["history"].as_array().cloned().unwrap_or_default();
    let keep = usize::try_from(asked)
        .unwrap_or(usize::MAX)
        .min(history.len());
    task["history"] = Value::Array(history[history.len() - keep..].to_vec());
    Reply::http(
        200,
        json!({"jsonrpc": "2.0", "id": request.rpc_id(), "result": {
            "tasks": [task], "nextPageToken": "", "pageSize": 1, "totalSize": 1
        }})
        .to_string(),
    )
}

/// The requests of `agent` with JSON-RPC method `method`.
fn calls(agent: &watcher_delivery::testing::CaptureAgent, method: &str) -> Vec<CapturedRequest> {
    agent
        .requests()
        .into_iter()
        .filter(|r| r.rpc_method().as_deref() == Some(method))
        .collect()
}

/// An agent that answers `SendMessage` with `first` and lists the task it created anyway.
async fn agent_failing_with(
    first: Reply,
    entry: &OutboxEntry,
) -> watcher_delivery::testing::CaptureAgent {
    let task = listed_task("task-created", &entry.message_id);
    spawn_capture_agent(Behaviour::from_fn(move |_, request| {
        match request.rpc_method().as_deref() {
            Some("ListTasks") => list_answer(request, &task),
            _ => first.clone(),
        }
    }))
    .await
}

/// The stored entry after an ambiguous attempt: queued, the attempt counted, still marked.
async fn assert_left_ambiguous(
    store: &MemoryStore,
    entry: &OutboxEntry,
    error: &str,
) -> OutboxEntry {
    let after = get(store, entry).await;
    assert_eq!(after.delivery, DeliveryState::Queued);
    assert_eq!(after.attempts, 1);
    assert_eq!(
        after.attempt_started_at,
        Some(t0()),
        "the outcome is unknown"
    );
    assert_eq!(after.lease, None, "the holder's outcome released its claim");
    let last = after.last_error.clone().unwrap();
    assert!(last.contains(error), "{last}");
    assert!(last.contains("looked for with ListTasks"), "{last}");
    after
}

/// The stored entry once the look-up found the task: sent with it, no second send.
async fn assert_found(
    store: &MemoryStore,
    agent: &watcher_delivery::testing::CaptureAgent,
    entry: &OutboxEntry,
    outcome: &EntryOutcome,
) {
    assert!(
        matches!(outcome, EntryOutcome::Sent(SendOutcome::Task { id, state })
            if id == "task-created" && *state == TaskState::Working),
        "{outcome:?}"
    );
    assert_eq!(
        agent.sent_message_ids(),
        std::slice::from_ref(&entry.message_id),
        "one SendMessage: the look-up found the first"
    );
    let stored = get(store, entry).await;
    assert_eq!(stored.delivery, DeliveryState::Sent);
    assert_eq!(stored.task_id.as_deref(), Some("task-created"));
    assert_eq!(stored.task_state.as_deref(), Some("TASK_STATE_WORKING"));
    assert_eq!(stored.attempts, 1, "the look-up is not an attempt");
    assert_eq!(
        (
            stored.attempt_started_at,
            stored.retrying_since,
            stored.last_error
        ),
        (None, None, None)
    );
}

/// A 503 after the request arrived: the next attempt asks `ListTasks` in the lapse's context,
/// with a `historyLength` that reaches the lapse task's message (the first of its task's
/// history: an agent defaulting to no history, or cutting to the latest messages, would hide
/// it), finds the task the agent created, and records it `sent` without a second `SendMessage`.
#[tokio::test]
async fn a_5xx_then_a_lookup_that_finds_the_task_records_it_sent_without_a_second_send() {
    let (entry, store) = one_lapse_task("exp-5xx").await;
    let agent = agent_failing_with(Reply::status(503), &entry).await;
    let endpoints = endpoints(agent.endpoint(Some(BEARER.into())));
    let sub = submitter(RetryPolicy::default(), None);

    let first = deliver_entry(&sub, &store, &endpoints, &entry, t0()).await;
    assert!(
        matches!(first, EntryOutcome::Retried { attempts: 1, .. }),
        "{first:?}"
    );
    assert!(
        calls(&agent, "ListTasks").is_empty(),
        "a first send looks for nothing"
    );
    let after = assert_left_ambiguous(&store, &entry, "503").await;

    let second = deliver_entry(&sub, &store, &endpoints, &entry, after.next_attempt_at).await;
    assert_found(&store, &agent, &entry, &second).await;
    let lists = calls(&agent, "ListTasks");
    assert_eq!(lists.len(), 1);
    let params = lists[0].json().unwrap()["params"].clone();
    assert_eq!(params["contextId"], "ctx-northgate-sep");
    assert_eq!(params["pageSize"], 100);
    assert_eq!(
        params["historyLength"],
        json!(i32::MAX),
        "every message of each task's history: {params}"
    );
    assert_eq!(
        lists[0].header("authorization"),
        Some(format!("Bearer {BEARER}").as_str())
    );
}

/// A timeout once the request was written (the agent took it and never answered): ambiguous
/// like a 5xx, so the next attempt finds the task instead of posting it again.
#[tokio::test]
async fn a_timeout_after_the_request_was_written_is_looked_for_before_a_second_send() {
    let (entry, store) = one_lapse_task("exp-timeout").await;
    let agent = agent_failing_with(Reply::Hang, &entry).await;
    let endpoints = endpoints(agent.endpoint(Some(BEARER.into())));
    let impatient = A2aClient::new(&ClientConfig {
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_millis(300),
        ..ClientConfig::default()
    })
    .unwrap();
    let sub = Submitter::new(
        impatient,
        SubmitterConfig {
            rate_limit: RateLimit::unlimited(),
            ..SubmitterConfig::default()
        },
    );

    let first = deliver_entry(&sub, &store, &endpoints, &entry, t0()).await;
    assert!(
        matches!(first, EntryOutcome::Retried { attempts: 1, .. }),
        "{first:?}"
    );
    let after = assert_left_ambiguous(&store, &entry, "did not answer in time").await;

    let second = deliver_entry(&sub, &store, &endpoints, &entry, after.next_attempt_at).await;
    assert_found(&store, &agent, &entry, &second).await;
    assert_eq!(calls(&agent, "ListTasks").len(), 1);
}

/// A refused connection: nothing was written, so the agent cannot have the lapse task. The
/// attempt is not ambiguous and the next one posts at once, with no `ListTasks`.
#[tokio::test]
async fn a_refused_connection_is_posted_again_without_a_lookup() {
    // A port with nothing listening.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap()
    };
    let (entry, store) = one_lapse_task("exp-refused-again").await;
    let sub = submitter(RetryPolicy::default(), None);
    let refused = AgentEndpoint::configured(format!("http://{closed}/"), None);
    let first = deliver_entry(&sub, &store, &endpoints(refused), &entry, t0()).await;
    assert!(
        matches!(first, EntryOutcome::Retried { attempts: 1, .. }),
        "{first:?}"
    );
    let after = get(&store, &entry).await;
    assert_eq!(after.attempt_started_at, None, "not ambiguous");
    let last = after.last_error.unwrap();
    assert!(last.contains("could not connect"), "{last}");
    assert!(!last.contains("ListTasks"), "{last}");

    // The agent is back (at another address): posted at once.
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let back = endpoints(agent.endpoint(Some(BEARER.into())));
    let second = deliver_entry(&sub, &store, &back, &entry, after.next_attempt_at).await;
    assert!(matches!(second, EntryOutcome::Sent(_)), "{second:?}");
    let methods: Vec<_> = agent
        .requests()
        .iter()
        .map(CapturedRequest::rpc_method)
        .collect();
    assert_eq!(methods, [Some("SendMessage".to_owned())], "no look-up");
    assert_eq!(get(&store, &entry).await.attempts, 2);
}

/// 429 refuses the request unhandled: the retry posts at once (after the wait asked), with no
/// look-up.
#[tokio::test]
async fn a_429_is_posted_again_without_a_lookup() {
    let agent = spawn_capture_agent(Behaviour::sequence(vec![
        Reply::status(429),
        Reply::task("task-after-429", TaskState::Submitted),
    ]))
    .await;
    let (entry, store) = one_lapse_task("exp-429").await;
    let endpoints = endpoints(agent.endpoint(Some(BEARER.into())));
    let sub = submitter(RetryPolicy::default(), None);
    deliver_entry(&sub, &store, &endpoints, &entry, t0()).await;
    let after = get(&store, &entry).await;
    assert_eq!(after.attempt_started_at, None);
    let second = deliver_entry(&sub, &store, &endpoints, &entry, after.next_attempt_at).await;
    assert!(matches!(second, EntryOutcome::Sent(_)), "{second:?}");
    assert!(calls(&agent, "ListTasks").is_empty());
    assert_eq!(agent.sent_message_ids().len(), 2);
}
