//! The SQS submitter keeps agents independent: a lapse task that must wait holds back only the
//! later messages of its own agent (its FIFO message group) in a batch, never another agent's; a
//! slow agent never delays another agent's lapse task in the same batch; a handed-back message
//! returns at its lapse task's next attempt, not after the queue's visibility timeout.

use crate::common::emulator_table;
use crate::common::submitting::{queued, sqs_event, stored, submitter, t0};

use std::collections::HashMap;
use watcher_runtime::store::{Outbox as _, Records as _};

use a2a_types::TaskState;
use aws_lambda_events::event::sqs::SqsEvent;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};
use watcher_delivery::{AgentEndpoint, RateLimit};
use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry};

fn entry(agent: &str, id: &str) -> OutboxEntry {
    queued(agent, id, "exp-1")
}

#[tokio::test]
async fn one_agents_retry_holds_back_only_its_own_later_messages() {
    let down = spawn_capture_agent(Behaviour::always(Reply::status(503))).await;
    let up = spawn_capture_agent(Behaviour::always(Reply::task("t-1", TaskState::Submitted))).await;
    let store = stored(vec![
        entry("down", "d1"),
        entry("up", "u1"),
        entry("down", "d2"),
        entry("up", "u2"),
    ])
    .await;
    let mut endpoints = HashMap::new();
    endpoints.insert(
        (Tenant::default_tenant(), AgentId::parse("down").unwrap()),
        AgentEndpoint::configured(down.url(), None),
    );
    endpoints.insert(
        (Tenant::default_tenant(), AgentId::parse("up").unwrap()),
        AgentEndpoint::configured(up.url(), None),
    );
    let submitter = submitter(RateLimit::unlimited());
    let outcome = watcher_lambda::submitter::handle_batch(
        &store,
        &submitter,
        &endpoints,
        None,
        sqs_event(&[("down", "d1"), ("up", "u1"), ("down", "d2"), ("up", "u2")]),
        t0(),
    )
    .await;
    // The first retry waits the backoff's first step (1 s); d2, held back behind d1, with it.
    assert_eq!(
        outcome.redeliver_after,
        [("r-d1".to_owned(), 1), ("r-d2".to_owned(), 1)]
    );
    let failed: Vec<&str> = outcome
        .response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(
        failed,
        ["sqs-d1", "sqs-d2"],
        "only the down agent's messages come back"
    );
    assert_eq!(down.request_count(), 1, "d2 waits behind d1, unsent");
    assert_eq!(up.request_count(), 2, "the other agent's lapse tasks went");
    let t = Tenant::default_tenant();
    let up_id = AgentId::parse("up").unwrap();
    for id in ["u1", "u2"] {
        assert_eq!(
            store
                .outbox_get(&t, &up_id, id)
                .await
                .unwrap()
                .unwrap()
                .delivery,
            DeliveryState::Sent
        );
    }
}

#[tokio::test]
async fn a_slow_agent_never_delays_another_agents_lapse_task_in_the_batch() {
    let slow =
        spawn_capture_agent(Behaviour::always(Reply::task("t-s", TaskState::Submitted))).await;
    let fast =
        spawn_capture_agent(Behaviour::always(Reply::task("t-f", TaskState::Submitted))).await;
    // The slow agent answers nothing until released.
    slow.hold(true);
    let store = stored(vec![
        entry("slow", "s1"),
        entry("fast", "f1"),
        entry("fast", "f2"),
    ])
    .await;
    let mut endpoints = HashMap::new();
    for (id, agent) in [("slow", &slow), ("fast", &fast)] {
        endpoints.insert(
            (Tenant::default_tenant(), AgentId::parse(id).unwrap()),
            AgentEndpoint::configured(agent.url(), None),
        );
    }
    let submitter = submitter(RateLimit::unlimited());
    let batch = watcher_lambda::submitter::handle_batch(
        &store,
        &submitter,
        &endpoints,
        None,
        sqs_event(&[("slow", "s1"), ("fast", "f1"), ("fast", "f2")]),
        t0(),
    );
    let watch = async {
        // Both of the fast agent's lapse tasks arrive, in order, while the slow agent still holds
        // its answer; handled one after another they would wait behind it for ever.
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        while fast.request_count() < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the fast agent's lapse tasks waited behind the slow agent"
            );
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert_eq!(fast.sent_message_ids(), ["f1", "f2"]);
        assert_eq!(slow.request_count(), 1, "the slow agent has its request");
        slow.hold(false);
    };
    let (outcome, ()) = tokio::join!(batch, watch);
    assert!(outcome.response.batch_item_failures.is_empty());
    let t = Tenant::default_tenant();
    for (agent, id) in [("slow", "s1"), ("fast", "f1"), ("fast", "f2")] {
        let entry = store
            .outbox_get(&t, &AgentId::parse(agent).unwrap(), id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(entry.delivery, DeliveryState::Sent, "{id}");
    }
}

#[test]
fn a_message_returns_at_its_next_attempt_rounded_up_within_sqs_bounds() {
    use watcher_lambda::submitter::seconds_until;
    let at = |s: &str| Instant::parse(s).unwrap();
    assert_eq!(seconds_until(t0(), at("2026-09-10T12:00:01Z")), 1);
    assert_eq!(seconds_until(t0(), at("2026-09-10T12:00:01.2Z")), 2);
    assert_eq!(seconds_until(t0(), at("2026-09-10T12:05:00Z")), 300);
    // Due already, or now: a second, never at once.
    assert_eq!(seconds_until(t0(), at("2026-09-10T11:00:00Z")), 1);
    assert_eq!(seconds_until(t0(), t0()), 1);
    // SQS takes at most 12 hours.
    assert_eq!(seconds_until(t0(), at("2026-09-12T12:00:00Z")), 43_200);
}

/// Two submitter invocations (two Lambda containers) handed the same batch at once, over the
/// DynamoDB outbox on the emulator: each lapse task is claimed by one of them, and every
/// `messageId` reaches the agent exactly once, whatever the queue delivered. Needs the emulator
/// (`bash infra/moto.sh`, `AWS_ENDPOINT_URL`).
#[tokio::test]
async fn two_submitters_handed_one_batch_send_each_message_once() {
    two_submitters_handed_one_batch("two-submitters", false).await;
}

/// The same with the batch's first receives, sent by their copies (a lapse task's record
/// written while the next is claimed).
#[tokio::test]
async fn two_submitters_handed_one_batch_of_copies_send_each_message_once() {
    two_submitters_handed_one_batch("two-submitters-copies", true).await;
}

/// Two invocations handed the same batch of ten lapse tasks of one agent at once (`copies`: as
/// first receives carrying their entries).
async fn two_submitters_handed_one_batch(name: &str, copies: bool) {
    let (ddb, table) = emulator_table(name).await;
    let store = std::sync::Arc::new(watcher_store_dynamodb::DynamoStore::new(ddb, &table, 30));
    let ids: Vec<String> = (0..10).map(|n| format!("lapse:e{n}")).collect();
    store
        .commit(
            &Tenant::default_tenant(),
            Commit {
                outbox: ids.iter().map(|id| entry("booking", id)).collect(),
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let agent = watcher_delivery::testing::CaptureAgent::spawn_keeping_tasks(Behaviour::accept())
        .await
        .unwrap();
    agent.hold(true);
    let endpoints = std::sync::Arc::new(HashMap::from([(
        (Tenant::default_tenant(), AgentId::parse("booking").unwrap()),
        AgentEndpoint::configured(agent.url(), None),
    )]));
    let batch: Vec<(&str, &str)> = ids.iter().map(|id| ("booking", id.as_str())).collect();
    let invocation = |batch: SqsEvent| {
        let (store, endpoints) = (store.clone(), endpoints.clone());
        tokio::spawn(async move {
            let submitter = submitter(RateLimit::unlimited());
            watcher_lambda::submitter::handle(
                &*store,
                &submitter,
                &*endpoints,
                None,
                &watcher_lambda::submitter::QueueTimeout,
                batch,
                t0(),
            )
            .await
        })
    };
    let event = || {
        if copies {
            first_receives(
                &ids.iter()
                    .map(|id| entry("booking", id))
                    .collect::<Vec<_>>(),
            )
        } else {
            sqs_event(&batch)
        }
    };
    let a = invocation(event());
    let b = invocation(event());
    // Both invocations are posting, or refused, before the agent answers anything.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    agent.hold(false);
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    let mut sent = agent.sent_message_ids();
    sent.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(sent, want, "each messageId sent exactly once");
    let handed_back = a.batch_item_failures.len() + b.batch_item_failures.len();
    assert_eq!(
        handed_back, 10,
        "the invocation that found the batch claimed hands it back, to find it sent"
    );
    for id in &ids {
        let stored = store
            .outbox_get(
                &Tenant::default_tenant(),
                &AgentId::parse("booking").unwrap(),
                id,
            )
            .await
            .unwrap()
            .unwrap();
        assert_eq!(stored.delivery, DeliveryState::Sent, "{id}");
        assert_eq!(stored.lease, None, "{id}: released");
    }
}

/// The lapse queue's SQS event handing over `entries` as their messages' first receives: each
/// body carries its entry as queued (`QueueMessage::entry`), `ApproximateReceiveCount` 1.
fn first_receives(entries: &[OutboxEntry]) -> SqsEvent {
    let records: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let body = serde_json::to_string(&watcher_aws::QueueMessage::from(e)).unwrap();
            serde_json::json!({ "messageId": format!("sqs-{}", e.message_id),
                    "receiptHandle": format!("r-{}", e.message_id), "body": body,
                    "attributes": { "ApproximateReceiveCount": "1" }, "messageAttributes": {},
                    "eventSource": "aws:sqs", "awsRegion": "us-east-1",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lapses.fifo" })
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "Records": records })).unwrap()
}

/// An agent's first receives take the lane's rate tokens at once, and each lapse task's record
/// is written while the next is claimed: within the burst they go in order and are recorded
/// `sent`; beyond it the next waits for a token (handed back to come back when one is free),
/// and so does every later one of the agent's. Needs the emulator (`bash infra/moto.sh`,
/// `AWS_ENDPOINT_URL`): the copies are claimed by DynamoDB's conditional writes.
#[tokio::test]
async fn a_lanes_tokens_are_taken_at_once_and_every_send_is_recorded() {
    let agent =
        spawn_capture_agent(Behaviour::always(Reply::task("t-1", TaskState::Submitted))).await;
    let entries: Vec<OutboxEntry> = ["m1", "m2", "m3", "m4"]
        .iter()
        .map(|id| entry("busy", id))
        .collect();
    let e = crate::common::emulator("lane-tokens").await;
    let store = watcher_store_dynamodb::DynamoStore::new(e.ddb.clone(), &e.name, 30);
    store
        .commit(
            &Tenant::default_tenant(),
            Commit {
                outbox: entries.clone(),
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let endpoints = HashMap::from([(
        (Tenant::default_tenant(), AgentId::parse("busy").unwrap()),
        AgentEndpoint::configured(agent.url(), None),
    )]);
    // Two at once, then one a second, in the agent's bucket in the table.
    let limit = RateLimit {
        per_minute: 60,
        burst: 2,
    };
    let submitter = submitter(limit).with_rate_buckets(std::sync::Arc::new(
        watcher_lambda::rate::DynamoRateBuckets::new(e.ddb.clone(), &e.name, limit),
    ));
    e.requests.take();
    let outcome = watcher_lambda::submitter::handle_batch(
        &store,
        &submitter,
        &endpoints,
        None,
        first_receives(&entries),
        t0(),
    )
    .await;
    assert_eq!(
        agent.sent_message_ids(),
        ["m1", "m2"],
        "the burst, in order: {outcome:?}"
    );
    // The bucket's writes: one for the lane's two tokens (an idle bucket), then m3's two
    // refusals, by its copy and by its read (one write each, answering the stored state). One at
    // a time, m1 and m2 would have taken three.
    assert_eq!(
        e.requests.take().get("DynamoDB PutItem"),
        Some(&3),
        "the lane's tokens in one write"
    );
    assert_eq!(
        outcome.redeliver_after,
        [("r-m3".to_owned(), 1), ("r-m4".to_owned(), 1)],
        "m3 waits a token's interval, m4 behind it"
    );
    let t = Tenant::default_tenant();
    let busy = AgentId::parse("busy").unwrap();
    for (id, delivery) in [
        ("m1", DeliveryState::Sent),
        ("m2", DeliveryState::Sent),
        ("m3", DeliveryState::Queued),
        ("m4", DeliveryState::Queued),
    ] {
        let stored = store.outbox_get(&t, &busy, id).await.unwrap().unwrap();
        assert_eq!(stored.delivery, delivery, "{id}");
        assert_eq!(stored.lease, None, "{id}: no claim left");
    }
}

/// A lapse task whose record cannot be written after its send (the store failing from the
/// agent's answer on): its message is handed back, and no later lapse task of the agent is
/// sent; the entry stays claimed with its attempt started, so that its next receive looks for
/// it with `ListTasks` before posting it again.
#[tokio::test]
async fn a_record_that_fails_hands_its_message_back_and_stops_the_lane() {
    let store = std::sync::Arc::new(
        stored(
            ["m1", "m2", "m3"]
                .iter()
                .map(|id| entry("busy", id))
                .collect(),
        )
        .await,
    );
    let failing = store.clone();
    let agent = spawn_capture_agent(Behaviour::from_fn(move |_, _| {
        failing.fail_writes(true);
        Reply::task("t-1", TaskState::Submitted)
    }))
    .await;
    let endpoints = HashMap::from([(
        (Tenant::default_tenant(), AgentId::parse("busy").unwrap()),
        AgentEndpoint::configured(agent.url(), None),
    )]);
    let entries: Vec<OutboxEntry> = ["m1", "m2", "m3"]
        .iter()
        .map(|id| entry("busy", id))
        .collect();
    let outcome = watcher_lambda::submitter::handle_batch(
        &*store,
        &submitter(RateLimit::unlimited()),
        &endpoints,
        None,
        first_receives(&entries),
        t0(),
    )
    .await;
    assert_eq!(agent.sent_message_ids(), ["m1"]);
    let failed: Vec<&str> = outcome
        .response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(failed, ["sqs-m1", "sqs-m2", "sqs-m3"], "all come back");
    // After a store failure each message returns after the backoff of its receive count (the
    // first: within 1 s), not the queue's 360 s visibility timeout, which would hold the agent's
    // message group that long.
    assert_eq!(
        outcome.redeliver_after.len(),
        3,
        "{:?}",
        outcome.redeliver_after
    );
    for (_, seconds) in &outcome.redeliver_after {
        assert!(*seconds <= 1, "first receive: within 1 s, got {seconds}");
    }
    store.fail_writes(false);
    let m1 = store
        .outbox_get(
            &Tenant::default_tenant(),
            &AgentId::parse("busy").unwrap(),
            "m1",
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m1.delivery, DeliveryState::Queued);
    assert_eq!(
        m1.attempt_started_at,
        Some(t0()),
        "claimed, its outcome unknown"
    );
}
