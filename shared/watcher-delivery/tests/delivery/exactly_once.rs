//! Exactly once when a send's outcome is lost: the ListTasks lookup behind many newer tasks, its page bound, two submitters handed the same entries.

use super::*;

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
    let sub = submitter(RetryPolicy::default(), None);
    let outcome = deliver_entry(&sub, &store, &endpoints(endpoint), &entry, t0()).await;
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
    let sub = submitter(RetryPolicy::default(), None);
    let endpoints = endpoints(agent.endpoint(Some(BEARER.into())));
    let outcome = deliver_entry(&sub, &store, &endpoints, &entry, t0()).await;
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
    let run = |sub: Submitter| {
        let (store, endpoints, entries) = (store.clone(), endpoints.clone(), entries.clone());
        tokio::spawn(async move {
            let mut outcomes = Vec::new();
            for e in &entries {
                outcomes.push(deliver_entry(&sub, &*store, &*endpoints, e, t0()).await);
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
