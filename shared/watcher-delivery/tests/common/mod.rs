//! Fixtures shared by the delivery tests: a seeded memory store, lapse-task entries, the
//! capture agent (re-exported from `watcher_delivery::testing`, where serve's tests find it too)
//! and what origin-task reconciliation runs over ([`reconciling`]).

#![allow(dead_code, reason = "each test binary uses a different part")]

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;
use watcher_runtime::store::{Outbox as _, Records as _};

use serde_json::{json, Value};
use tokio::sync::Notify;
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_delivery::reconcile::Reconciler;
use watcher_delivery::testing::{agent_entry, CaptureAgent};
use watcher_delivery::{
    A2aClient, AgentEndpoint, ClientConfig, RateLimit, RetryPolicy, Submitter, SubmitterConfig,
};
use watcher_runtime::clock::FakeClock;
use watcher_runtime::directory::Directory;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Commit, OutboxEntry, Store};
use watcher_runtime::watcher::Watcher;

#[allow(unused_imports, reason = "not every test binary replies by hand")]
pub use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};

/// The bearer the watcher presents to agents in these tests.
pub const BEARER: &str = "watcher-token";

/// 2026-09-10T22:15:00Z: when the worked example's first lapse is determined.
pub fn t0() -> Instant {
    Instant::parse("2026-09-10T22:15:00Z").unwrap()
}

/// `at` plus whole seconds.
pub fn plus_secs(at: Instant, secs: u64) -> Instant {
    at.checked_add(jiff::SignedDuration::from_secs(secs as i64))
        .unwrap()
}

pub fn tenant() -> Tenant {
    Tenant::default_tenant()
}

pub fn booking() -> AgentId {
    AgentId::parse("booking").unwrap()
}

/// The `SendMessage` params of a lapse task (semantics.md "The lapse task"), abridged.
pub fn lapse_request(message_id: &str, expectation: &str) -> Value {
    json!({
        "message": {
            "messageId": message_id,
            "contextId": "ctx-northgate-sep",
            "role": "ROLE_USER",
            "referenceTaskIds": ["task-booking-7f3a"],
            "extensions": ["https://rsaxb.com/a2a/expectations/v1"],
            "parts": [{"text": format!("Expectation {expectation} is overdue.")}],
            "metadata": {"https://rsaxb.com/a2a/expectations/v1": {"lapse": {
                "expectationId": expectation,
                "lapse": "overdue",
                "dueAt": "2026-09-10T20:15:00Z",
                "lapsedAt": "2026-09-10T22:15:00Z"
            }}}
        },
        "configuration": {"returnImmediately": true}
    })
}

/// A queued lapse task for `booking`, due at [`t0`].
pub fn lapse_entry(expectation: &str) -> OutboxEntry {
    let message_id = format!("lapse:{expectation}:overdue:2026-09-10T20:15:00Z");
    let request = lapse_request(&message_id, expectation);
    OutboxEntry::queued(
        tenant(),
        booking(),
        message_id,
        ExpectationId::parse(expectation).unwrap(),
        LapseKind::Overdue,
        t0(),
        request,
    )
}

/// A memory store holding `entries`, committed one by one (so in this order).
pub async fn store_with(entries: Vec<OutboxEntry>) -> MemoryStore {
    let store = MemoryStore::new();
    for entry in entries {
        let tenant = entry.tenant.clone();
        store
            .commit(
                &tenant,
                Commit {
                    outbox: vec![entry],
                    ..Default::default()
                },
            )
            .await
            .unwrap();
    }
    store
}

/// Reads an entry back.
pub async fn get(store: &MemoryStore, entry: &OutboxEntry) -> OutboxEntry {
    store
        .outbox_get(&entry.tenant, &entry.agent, &entry.message_id)
        .await
        .unwrap()
        .expect("entry is stored")
}

/// `booking` of the default tenant at `endpoint`.
pub fn endpoints(endpoint: AgentEndpoint) -> HashMap<(Tenant, AgentId), AgentEndpoint> {
    HashMap::from([((tenant(), booking()), endpoint)])
}

/// A client with short timeouts.
pub fn client() -> A2aClient {
    A2aClient::new(&ClientConfig {
        connect_timeout: Duration::from_secs(2),
        request_timeout: Duration::from_secs(2),
        ..ClientConfig::default()
    })
    .unwrap()
}

/// A submitter with `retry`, no rate limit unless `rate` says so.
pub fn submitter(retry: RetryPolicy, rate: Option<RateLimit>) -> Submitter {
    Submitter::new(
        client(),
        SubmitterConfig {
            retry,
            rate_limit: rate.unwrap_or_else(RateLimit::unlimited),
        },
    )
}

/// What origin-task reconciliation runs over in these tests: `booking` booked in a directory
/// that follows origin tasks in the store (and, with `origin_checks`, checks a lapse task's
/// origin before its first send), a memory store, the watcher over both, a fake clock at
/// [`t0`], and a reconciler asking the agent.
pub struct Reconciling {
    pub store: Arc<MemoryStore>,
    pub directory: Directory,
    pub watcher: Arc<Watcher<dyn Store>>,
    pub clock: Arc<FakeClock>,
    pub reconciler: Reconciler,
}

/// [`Reconciling`] for `agent` (its endpoint without a bearer), origin checks on or off.
pub fn reconciling(agent: &CaptureAgent, origin_checks: bool) -> Reconciling {
    let store = Arc::new(MemoryStore::new());
    let directory = Directory::new();
    directory.insert(agent_entry(&tenant(), &booking()));
    directory.set_origins_in_store(true);
    directory.set_origin_checks(origin_checks);
    let dyn_store: Arc<dyn Store> = store.clone();
    let watcher: Arc<Watcher<dyn Store>> = Arc::new(Watcher::new(
        dyn_store,
        directory.clone(),
        Settings::default(),
    ));
    let clock = Arc::new(FakeClock::new(t0()));
    let reconciler = Reconciler::new(
        watcher.clone(),
        client(),
        Arc::new(endpoints(agent.endpoint(None))),
        RetryPolicy::default(),
        clock.clone(),
        Arc::new(Notify::new()),
    );
    Reconciling {
        store,
        directory,
        watcher,
        clock,
        reconciler,
    }
}
