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

/// A submitter with the default retry policy and `rate_limit`.
pub fn submitter(rate_limit: RateLimit) -> Submitter {
    Submitter::new(
        A2aClient::with_defaults().unwrap(),
        SubmitterConfig {
            retry: RetryPolicy::default(),
            rate_limit,
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

/// The lapse queue's SQS event waking each agent of `agents`, in order (SQS `messageId`
/// `wake-{n}`, receipt handle `r-wake-{n}`, `n` its place), each `{"tenant","agent"}` with no
/// second (as a continuation is).
pub fn wake_event(agents: &[&str]) -> SqsEvent {
    let records: Vec<Value> = agents
        .iter()
        .enumerate()
        .map(|(n, agent)| {
            json!({ "messageId": format!("wake-{n}"), "receiptHandle": format!("r-wake-{n}"),
                    "body": json!({ "tenant": "default", "agent": agent }).to_string(),
                    "attributes": { "ApproximateReceiveCount": "1" }, "messageAttributes": {},
                    "eventSource": "aws:sqs",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lapses.fifo", "awsRegion": "us-east-1" })
        })
        .collect();
    serde_json::from_value(json!({ "Records": records })).unwrap()
}

/// The submitter function's lanes over `store`, `submitter` and `endpoints`: four in flight per
/// agent (serve's default), serve's batch of 32, no origin checks.
pub fn lanes<'a>(
    store: &'a dyn watcher_runtime::store::Outbox,
    submitter: &'a Submitter,
    endpoints: &'a dyn watcher_delivery::Endpoints,
) -> watcher_lambda::submitter::Lanes<'a> {
    watcher_lambda::submitter::Lanes {
        store,
        submitter,
        endpoints,
        reconciler: None,
        per_agent: 4,
        batch: 32,
    }
}

/// Runs the lanes `event` wakes at `now` (a stopped clock) with no deadline.
pub async fn run_at(
    lanes: &watcher_lambda::submitter::Lanes<'_>,
    event: SqsEvent,
    now: Instant,
) -> Vec<watcher_lambda::submitter::LaneRun> {
    let clock = watcher_runtime::clock::FakeClock::new(now);
    watcher_lambda::submitter::handle_batch(lanes, &clock, event, None).await
}

/// What a batch's settling asked of the queues: visibility changes, continuations and delayed
/// wake-ups, in order; `refuse` makes continuations and delayed wake-ups fail.
#[derive(Default)]
pub struct Recorded {
    /// `(receiptHandle, seconds)`.
    pub visibility: std::sync::Mutex<Vec<(String, u32)>>,
    /// `(agent, continued SQS messageId)`.
    pub continued: std::sync::Mutex<Vec<(String, String)>>,
    /// `(agent, at)`.
    pub woken_at: std::sync::Mutex<Vec<(String, Instant)>>,
    /// Refuse continuations and delayed wake-ups.
    pub refuse: bool,
}

#[async_trait::async_trait]
impl watcher_lambda::submitter::Redelivery for Recorded {
    async fn redeliver_after(
        &self,
        receipt_handle: &str,
        seconds: u32,
    ) -> Result<(), watcher_runtime::ports::PortError> {
        self.visibility
            .lock()
            .unwrap()
            .push((receipt_handle.to_owned(), seconds));
        Ok(())
    }

    async fn continue_lane(
        &self,
        _: &Tenant,
        agent: &AgentId,
        continues: &str,
    ) -> Result<(), watcher_runtime::ports::PortError> {
        if self.refuse {
            return Err(watcher_runtime::ports::PortError::new(
                true,
                "refused".into(),
                None,
            ));
        }
        self.continued
            .lock()
            .unwrap()
            .push((agent.to_string(), continues.to_owned()));
        Ok(())
    }
}

#[async_trait::async_trait]
impl watcher_lambda::submitter::LaneWakes for Recorded {
    async fn wake_lane_at(
        &self,
        _: &Tenant,
        agent: &AgentId,
        at: Instant,
    ) -> Result<(), watcher_runtime::ports::PortError> {
        if self.refuse {
            return Err(watcher_runtime::ports::PortError::new(
                true,
                "refused".into(),
                None,
            ));
        }
        self.woken_at.lock().unwrap().push((agent.to_string(), at));
        Ok(())
    }
}
