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
        [("r-d1".to_string(), 1), ("r-d2".to_string(), 1)]
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
    let (ddb, table) = emulator_table("two-submitters").await;
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
    let a = invocation(sqs_event(&batch));
    let b = invocation(sqs_event(&batch));
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
