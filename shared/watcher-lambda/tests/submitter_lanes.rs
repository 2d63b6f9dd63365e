//! The SQS submitter keeps agents independent: a lapse task that must wait holds back only the
//! later messages of its own agent (its FIFO message group) in a batch, never another agent's.

use std::collections::HashMap;

use a2a_types::TaskState;
use aws_lambda_events::event::sqs::SqsEvent;
use serde_json::{json, Value};
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};
use watcher_delivery::{
    A2aClient, AgentEndpoint, RateLimit, RetryPolicy, Submitter, SubmitterConfig,
};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry, Store};

fn t0() -> Instant {
    Instant::parse("2026-09-10T12:00:00Z").unwrap()
}

fn entry(agent: &str, id: &str) -> OutboxEntry {
    OutboxEntry {
        tenant: Tenant::default_tenant(),
        agent: AgentId::parse(agent).unwrap(),
        message_id: id.into(),
        expectation_id: ExpectationId::parse("exp-1").unwrap(),
        lapse: LapseKind::Overdue,
        lapsed_at: t0(),
        request: json!({ "message": { "messageId": id, "role": "ROLE_USER", "parts": [{ "text": "lapse" }] } }),
        delivery: DeliveryState::Queued,
        attempts: 0,
        next_attempt_at: t0(),
        task_id: None,
        task_state: None,
        answered_with_message: false,
        last_error: None,
        retrying_since: None,
        attempt_started_at: None,
        follow_at: None,
        follow_since: None,
    }
}

fn event(messages: &[(&str, &str)]) -> SqsEvent {
    let records: Vec<Value> = messages
        .iter()
        .map(|(agent, id)| {
            json!({ "messageId": format!("sqs-{id}"), "receiptHandle": "r",
                    "body": json!({ "tenant": "default", "agent": agent, "messageId": id }).to_string(),
                    "attributes": {}, "messageAttributes": {}, "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lapses.fifo", "awsRegion": "us-east-1" })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap()
}

#[tokio::test]
async fn one_agents_retry_holds_back_only_its_own_later_messages() {
    let down = spawn_capture_agent(Behaviour::always(Reply::status(503))).await;
    let up = spawn_capture_agent(Behaviour::always(Reply::task("t-1", TaskState::Submitted))).await;
    let store = MemoryStore::new();
    let entries = vec![
        entry("down", "d1"),
        entry("up", "u1"),
        entry("down", "d2"),
        entry("up", "u2"),
    ];
    store
        .commit(
            &Tenant::default_tenant(),
            Commit {
                outbox: entries,
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let mut endpoints = HashMap::new();
    endpoints.insert(
        (Tenant::default_tenant(), AgentId::parse("down").unwrap()),
        AgentEndpoint::configured(down.url(), None),
    );
    endpoints.insert(
        (Tenant::default_tenant(), AgentId::parse("up").unwrap()),
        AgentEndpoint::configured(up.url(), None),
    );
    let submitter = Submitter::new(
        A2aClient::with_defaults().unwrap(),
        SubmitterConfig {
            retry: RetryPolicy::default(),
            rate_limit: RateLimit::unlimited(),
            concurrency: 4,
        },
    );
    let response = watcher_lambda::submitter::handle(
        &store,
        &submitter,
        &endpoints,
        event(&[("down", "d1"), ("up", "u1"), ("down", "d2"), ("up", "u2")]),
        t0(),
    )
    .await;
    let failed: Vec<&str> = response
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
