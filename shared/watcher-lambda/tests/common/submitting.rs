//! What the submitter's tests share: lapse tasks queued in the outbox, the SQS event that hands
//! them over, and a submitter.

use aws_lambda_events::event::sqs::SqsEvent;
use serde_json::{json, Value};
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_delivery::{A2aClient, RateLimit, RetryPolicy, Submitter, SubmitterConfig};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Commit, OutboxEntry, Records as _};

/// When the lapse tasks are due and the submitter runs: 2026-09-10T12:00:00Z.
pub fn t0() -> Instant {
    Instant::parse("2026-09-10T12:00:00Z").unwrap()
}

/// Lapse task `id` (its `messageId`) for `agent` about `expectation`, queued, due at [`t0`].
pub fn queued(agent: &str, id: &str, expectation: &str) -> OutboxEntry {
    OutboxEntry::queued(
        Tenant::default_tenant(),
        AgentId::parse(agent).unwrap(),
        id.into(),
        ExpectationId::parse(expectation).unwrap(),
        LapseKind::Overdue,
        t0(),
        json!({ "message": { "messageId": id, "role": "ROLE_USER", "parts": [{ "text": "lapse" }] } }),
    )
}

/// The lapse queue's SQS event handing over each `(agent, messageId)` of `messages`, in order
/// (SQS `messageId` `sqs-{id}`, receipt handle `r-{id}`).
pub fn sqs_event(messages: &[(&str, &str)]) -> SqsEvent {
    let records: Vec<Value> = messages
        .iter()
        .map(|(agent, id)| {
            json!({ "messageId": format!("sqs-{id}"), "receiptHandle": format!("r-{id}"),
                    "body": json!({ "tenant": "default", "agent": agent, "messageId": id }).to_string(),
                    "attributes": {}, "messageAttributes": {}, "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lapses.fifo", "awsRegion": "us-east-1" })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap()
}

/// A submitter with the default retry policy, `rate_limit`, and four sends at once.
pub fn submitter(rate_limit: RateLimit) -> Submitter {
    Submitter::new(
        A2aClient::with_defaults().unwrap(),
        SubmitterConfig {
            retry: RetryPolicy::default(),
            rate_limit,
            concurrency: 4,
        },
    )
}

/// A memory store whose outbox holds `entries` (the default tenant's).
pub async fn stored(entries: Vec<OutboxEntry>) -> MemoryStore {
    let store = MemoryStore::new();
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
    store
}
