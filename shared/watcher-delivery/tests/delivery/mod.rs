//! Lapse-task delivery against a real HTTP agent on 127.0.0.1 (serve.md, semantics.md "The lapse
//! task"). Time is driven by passing `now`; the only waits are HTTP round trips (and one client
//! timeout).

use crate::common;

use std::time::Duration;

use a2a_types::TaskState;
use common::*;
use watcher_core::time::Instant;
use watcher_delivery::{
    deliver_due, A2aClient, AgentEndpoint, ClientConfig, DeliveryReport, Endpoints, EntryOutcome,
    RateLimit, RateLimiter, RetryPolicy, SendOutcome, Submitter,
};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{DeliveryState, Outbox, OutboxEntry};

const LIMIT: usize = 100;

/// A fresh store holding one queued lapse task for `expectation`, and that lapse task.
async fn one_lapse_task(expectation: &str) -> (OutboxEntry, MemoryStore) {
    let entry = lapse_entry(expectation);
    let store = store_with(vec![entry.clone()]).await;
    (entry, store)
}

/// One delivery pass of `sub` at `now` over the due lapse tasks of `store` (at most [`LIMIT`]).
async fn pass<S, E>(sub: &Submitter, store: &S, endpoints: &E, now: Instant) -> DeliveryReport
where
    S: Outbox + ?Sized,
    E: Endpoints + ?Sized,
{
    sub.deliver_due(store, endpoints, now, LIMIT).await.unwrap()
}

/// `sub` delivering the lapse task `entry` by name at `now`.
async fn deliver_entry<S, E>(
    sub: &Submitter,
    store: &S,
    endpoints: &E,
    entry: &OutboxEntry,
    now: Instant,
) -> EntryOutcome
where
    S: Outbox + ?Sized,
    E: Endpoints + ?Sized,
{
    let (tenant, agent) = (&entry.tenant, &entry.agent);
    sub.deliver_one(store, endpoints, tenant, agent, &entry.message_id, now)
        .await
        .unwrap()
}

mod ambiguity;
mod exactly_once;
mod http;
mod outcomes;
mod routing;
