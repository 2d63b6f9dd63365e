//! Lapse-task delivery against a real HTTP agent on 127.0.0.1 (serve.md, semantics.md "The lapse
//! task"). Time is driven by passing `now`; the only waits are HTTP round trips (and one client
//! timeout).

use crate::common;

use std::time::Duration;

use a2a_types::TaskState;
use common::*;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_delivery::{
    A2aClient, AgentEndpoint, ClientConfig, DeliveryReport, Endpoints, EntryOutcome, Lane, PassEnd,
    PassReport, RateLimit, RetryPolicy, SendOutcome, Submitter,
};
use watcher_runtime::clock::FakeClock;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{DeliveryState, Outbox, OutboxEntry};

/// Lapse tasks one lane's pass reads ([`Lane::batch`]).
const BATCH: usize = 100;

/// A fresh store holding one queued lapse task for `expectation`, and that lapse task.
async fn one_lapse_task(expectation: &str) -> (OutboxEntry, MemoryStore) {
    let entry = lapse_entry(expectation);
    let store = store_with(vec![entry.clone()]).await;
    (entry, store)
}

/// One pass at `now` of the lane of each of `agents` (tenant, agent), as `serve` and the
/// submitter function run it ([`Lane::pass`]: no origin check, four in flight per agent, up to
/// [`BATCH`] lapse tasks read), in order; their reports.
async fn lane_passes(
    sub: &Submitter,
    store: &dyn Outbox,
    endpoints: &dyn Endpoints,
    now: Instant,
    agents: &[(Tenant, AgentId)],
) -> Vec<PassReport> {
    let clock = FakeClock::new(now);
    let mut reports = Vec::new();
    for (tenant, agent) in agents {
        let lane = Lane {
            tenant,
            agent,
            store,
            submitter: sub,
            endpoints,
            reconciler: None,
            slots: None,
            per_agent: 4,
            batch: BATCH,
        };
        let report = lane.pass(&clock, None).await;
        assert_ne!(report.end, PassEnd::StoreFailed, "{report:?}");
        reports.push(report);
    }
    reports
}

/// One pass of `booking`'s lane at `now` ([`lane_passes`]); what it did to the lapse tasks.
async fn pass(
    sub: &Submitter,
    store: &dyn Outbox,
    endpoints: &dyn Endpoints,
    now: Instant,
) -> DeliveryReport {
    lane_passes(sub, store, endpoints, now, &[(tenant(), booking())]).await[0].delivery
}

/// `sub` delivering the lapse task `entry` at `now`: read, then sent by the one send entry point
/// ([`Submitter::deliver_read_with`]) with `sub`'s own rate buckets.
async fn deliver_entry(
    sub: &Submitter,
    store: &dyn Outbox,
    endpoints: &dyn Endpoints,
    entry: &OutboxEntry,
    now: Instant,
) -> EntryOutcome {
    deliver_named(
        sub,
        store,
        endpoints,
        (&entry.tenant, &entry.agent, &entry.message_id),
        now,
    )
    .await
}

/// [`deliver_entry`] of the entry (tenant, agent, messageId), whether or not it is stored.
async fn deliver_named(
    sub: &Submitter,
    store: &dyn Outbox,
    endpoints: &dyn Endpoints,
    (tenant, agent, message_id): (&Tenant, &AgentId, &str),
    now: Instant,
) -> EntryOutcome {
    let found = store.outbox_get(tenant, agent, message_id).await.unwrap();
    sub.deliver_read_with(
        store,
        endpoints,
        sub.buckets(),
        (tenant, agent, message_id),
        found,
        watcher_delivery::deliver::Places::none(),
        now,
    )
    .await
    .unwrap()
}

mod ambiguity;
mod exactly_once;
mod http;
mod outcomes;
mod routing;
