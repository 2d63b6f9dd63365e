//! The watcher's [`Store`](watcher_runtime::store::Store) over one DynamoDB table, for the AWS deployment.
//!
//! Single-table design (docs/dynamodb.md): subjects and tasks are items with a `version`
//! attribute; a commit is one `TransactWriteItems` whose every subject and task put is
//! conditional on the version it was loaded at, together with the index rows that changed,
//! the new lapse tasks (outbox) and the rejections. So the satisfaction, re-anchoring and skipped
//! lapses one fact causes commit together or not at all, and a concurrent writer makes the
//! commit fail with [`StoreError::Conflict`] (the watcher reloads and retries), never lose an
//! update. Due timers and due lapse tasks are found through sparse global secondary indexes;
//! closed records, delivered lapse tasks and rejections expire through the TTL attribute
//! `expiresAt` (expectations-v1 §14).
//!
//! ```no_run
//! # async fn example() -> Result<(), watcher_runtime::store::StoreError> {
//! use watcher_store_dynamodb::DynamoStore;
//! let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
//! let client = aws_sdk_dynamodb::Client::new(&config);
//! let store = DynamoStore::new(client, "watcher", 30);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod cards;
mod codec;
mod commit;
mod due;
mod error;
mod keys;
mod lapse_pages;
mod live;
mod loaded;
mod notify;
mod open_timers;
mod origins;
mod outbox;
mod outbox_items;
mod reads;
mod records;
mod rejections;
pub mod table;
mod timers;
mod upkeep;
mod writes;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use a2a_types::TaskState;
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{KeysAndAttributes, Put, Select, TransactWriteItem, Update};
use aws_sdk_dynamodb::Client;
use futures_util::stream::{self, StreamExt, TryStreamExt};
use watcher_core::engine::{Rejection, TimerKind};
use watcher_core::ids::{AgentId, ExpectationRef, FactKey, Subject, TaskRef, Tenant};
use watcher_core::record::{ExpectationRecord, RaiseOrder};
use watcher_core::slice::{Scope, Slice, SubjectState, TaskRecord};
use watcher_core::time::Instant;
use watcher_runtime::clock::{Clock, SystemClock};
use watcher_runtime::index::subject_index;
use watcher_runtime::lease::{claim, keep_lease, Lease};
use watcher_runtime::retry::{Backoff, Retry, Sleeper, TokioSleeper};
use watcher_runtime::sequence::TimeOrdered;
use watcher_runtime::store::{
    cut_page, lapse_scan_budget, Claim, Commit, DeliveryState, DueTimer, LapsePage, LapseQuery,
    OutboxEntry, PurgeReport, StoreError,
};
use watcher_runtime::task_progress::{keep_task_progress, with_task_state};

use crate::codec::{
    from_json, get_i64, get_s, get_u64, item_size, n, outbox_expiry, rejections_expiry, s,
    subject_expiry, task_expiry, to_json, Indexed, Item, StoredTimer,
};
pub use crate::error::{
    classify, sdk_failure, DynamoStoreError, MAX_ITEM_BYTES, MAX_TRANSACTION_BYTES,
    MAX_TRANSACTION_ITEMS,
};
pub use crate::keys::rate_pk;
use crate::keys::{
    agent_delivery, due_key, due_key_bound, expectation_pk, fact_pk, fact_sk, first_row_after,
    follow_agent, follow_keys, incident_keys, instant_key, lapses_agent_partitions,
    lapses_agent_shard, lapses_tenant_partitions, lapses_tenant_shard, legacy_outbox_pk,
    live_agent_partitions, live_agent_shard, live_count_shard_pk, open_agent, outbox_partitions,
    outbox_pk, outbox_sk, outbox_task, person_agent, position_in_item, rejections_pk,
    resolved_agent, row_of, row_sk, shard_of, subject_pk, task_pk, timers_partition,
    timers_partitions, COUNTER_PK, ITEM, LIVE_COUNT_SHARDS, REJECTION_STRIDE,
};
pub use crate::open_timers::{OpenTimersPage, TimersCursor};
pub use crate::table::create_table;
use crate::table::{
    AGENT_DELIVERY, DELIVERY, ENTRY, EXPIRES_AT, FOLLOW_AGENT, FOLLOW_AT, INCIDENT_AGENT,
    INCIDENT_AT, INDEXED, KIND, LAPSES_AGENT, LAPSES_AGENT_INDEX, LAPSES_TENANT,
    LAPSES_TENANT_INDEX, LIVE_AGENT, LIVE_INDEX, LIVE_UNTIL, NEXT_ATTEMPT, OUTBOX_AGENT_INDEX,
    OUTBOX_FOLLOW_INDEX, OUTBOX_INCIDENT_INDEX, OUTBOX_TASK_INDEX, PK, QUEUED, REJECTIONS, SEQ, SK,
    STATE, SUBJECT, TASK_KEY, TENANT, TIMERS, TIMERS_INDEX, TIMERS_PK, TIMERS_SK, VALUE, VERSION,
};

/// Rejections kept in one item (one item per commit and agent; more make several items).
const REJECTIONS_PER_ITEM: usize = 100;

// Every place in an item has its own rejection position (keys::rejection_position).
const _: () = assert!(REJECTIONS_PER_ITEM as u64 <= REJECTION_STRIDE);

/// Reads in flight at once for one call (a load's subjects, a commit's pre-read).
const READ_CONCURRENCY: usize = 16;

/// Most reads of one outbox item's read-modify-write ([`DynamoStore::update_outbox`]) before it
/// gives up with a conflict. A try is lost only when another writer's write landed, and each
/// writer's write lands once, so with fewer concurrent writers than this none gives up; the
/// writers of one lapse task are its submitter and its agent's pushes (sent one at a time).
const OUTBOX_CAS_TRIES: usize = 16;

/// The watcher's store over the DynamoDB table `table`.
///
/// Build the client once (in `main`) and pass it in; the table must have the layout of
/// [`create_table`] (docs/dynamodb.md).
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    retention_days: u32,
    /// Items read and written so far ([`Upkeep::work_done`](watcher_runtime::store::Upkeep::work_done)), while counted
    /// ([`DynamoStore::counting_work`]).
    work: Option<Arc<AtomicU64>>,
    /// Raising-order numbers and row ids, with no write ([`Records::next_sequence`](watcher_runtime::store::Records::next_sequence)).
    ids: TimeOrdered,
    /// What loads saw of subjects' index rows, so their commits need no read (`loaded.rs`;
    /// shared by this store's clones).
    loaded: Arc<loaded::Loaded>,
    /// How retry loops wait (`watcher_runtime::retry`: a batch read's unprocessed keys, a
    /// lapse task's read-merge-write lost to another writer): tokio's timer, or a recorder in
    /// tests ([`DynamoStore::with_sleeper`]).
    sleeper: Arc<dyn Sleeper>,
    /// Recent live counts of agents far below their bound, so that a raise need not read the
    /// counter shards each time (`live.rs`; shared by this store's clones).
    live_memo: Arc<live::LiveMemo>,
}

/// One write of a transaction, with what it is in words for a conflict message.
pub(crate) struct Write {
    pub(crate) op: TransactWriteItem,
    pub(crate) what: String,
    pub(crate) bytes: usize,
}

impl DynamoStore {
    /// A store over `table` through `client`. Satisfied, lapsed and withdrawn records,
    /// delivered or failed lapse tasks, finished tasks and rejections expire `retention_days`
    /// days after their last activity (serve.md `retention_days`, expectations-v1 §14).
    pub fn new(client: Client, table: impl Into<String>, retention_days: u32) -> Self {
        DynamoStore {
            client,
            table: table.into(),
            retention_days,
            work: None,
            // The one clock this store reads: the system clock of the process, for ids ordered
            // in time across function instances (docs/interpretation.md "Raising order without a
            // counter"); tests set another with `with_id_clock`.
            ids: TimeOrdered::new(Arc::new(SystemClock)),
            loaded: Arc::default(),
            sleeper: Arc::new(TokioSleeper),
            live_memo: Arc::default(),
        }
    }

    /// This store, its retry loops waiting through `sleeper` (tests: a
    /// [`RecordingSleeper`](watcher_runtime::retry::RecordingSleeper) sees each backoff).
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// A retry loop's policy `backoff`, waiting through this store's sleeper.
    pub(crate) fn retry(&self, backoff: Backoff) -> Retry {
        Retry::with_sleeper(backoff, self.sleeper.clone())
    }

    /// This store, numbering inputs and rows by `clock` (an instance number drawn at random)
    /// instead of the system clock: for tests of the order across processes.
    pub fn with_id_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.ids = TimeOrdered::new(clock);
        self
    }

    /// This store, numbering by `ids` (tests: a chosen instance number).
    pub fn with_ids(mut self, ids: TimeOrdered) -> Self {
        self.ids = ids;
        self
    }

    /// This store (and its clones made from now on), counting the items it reads and writes
    /// ([`Upkeep::work_done`](watcher_runtime::store::Upkeep::work_done)): each `GetItem`, each item a `Query` or `Scan` looked at (its
    /// `ScannedCount`, filtered out or not), each item of a `TransactWriteItems` and each
    /// `PutItem` and `UpdateItem`. For tests that check that a call's cost does not grow with
    /// the table; the deployed functions never turn it on.
    pub fn counting_work(mut self) -> Self {
        self.work = Some(Arc::new(AtomicU64::new(0)));
        self
    }

    /// Adds `items` to the work counted, when counting.
    fn count(&self, items: impl TryInto<u64>) {
        if let Some(work) = &self.work {
            work.fetch_add(items.try_into().unwrap_or(0), Ordering::Relaxed);
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The SDK client.
    pub fn client(&self) -> &Client {
        &self.client
    }
}

/// Runs `f` over `items` with at most [`READ_CONCURRENCY`] in flight, answers in input order.
async fn each<T, R, F, Fut>(items: Vec<T>, f: F) -> Result<Vec<R>, StoreError>
where
    F: FnMut(T) -> Fut,
    Fut: Future<Output = Result<R, StoreError>>,
{
    stream::iter(items)
        .map(f)
        .buffered(READ_CONCURRENCY)
        .try_collect()
        .await
}

/// Firing order: instant, then raising order, then deadline before horizon.
fn timer_order(t: &DueTimer) -> (Instant, RaiseOrder, TimerKind) {
    (t.at, t.order, t.key.kind)
}

/// The pending timers of a `timers` index item, in firing order.
fn timers_of(item: &Item) -> Result<Vec<DueTimer>, StoreError> {
    let what = "timers index entry";
    let tenant = Tenant::parse(get_s(item, TENANT, what)?)
        .map_err(|e| StoreError::Corrupt(format!("{what}: tenant {e}")))?;
    let stored: Vec<StoredTimer> = from_json(get_s(item, TIMERS, what)?, what)?;
    let mut timers: Vec<DueTimer> = stored
        .into_iter()
        .map(|t| DueTimer {
            at: t.at,
            order: t.order,
            tenant: tenant.clone(),
            key: t.key,
        })
        .collect();
    timers.sort_by_key(timer_order);
    Ok(timers)
}

/// A JSON document kept as text in `doc` with the instant in `at` (an agent card, a lifecycle
/// descriptor), read back.
///
/// # Errors
/// [`StoreError::Corrupt`] naming `what` when either attribute is missing or does not parse.
fn kept_document(
    item: &Item,
    doc: &str,
    at: &str,
    what: &str,
) -> Result<(serde_json::Value, Instant), StoreError> {
    let text = |name: &str| {
        item.get(name)
            .and_then(|v| v.as_s().ok())
            .ok_or_else(|| StoreError::Corrupt(format!("{what} has no {name}")))
    };
    let value = serde_json::from_str(text(doc)?)
        .map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))?;
    let instant =
        Instant::parse(text(at)?).map_err(|e| StoreError::Corrupt(format!("{what}: {at} {e}")))?;
    Ok((value, instant))
}

fn entry_of(item: &Item) -> Result<(u64, OutboxEntry), StoreError> {
    let what = "outbox entry";
    let entry: OutboxEntry = from_json(get_s(item, ENTRY, what)?, what)?;
    let seq = get_u64(item, SEQ, what)?;
    Ok((seq, entry))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_store_is_send_and_sync() {
        fn check<T: Send + Sync + 'static>() {}
        check::<DynamoStore>();
    }
}
