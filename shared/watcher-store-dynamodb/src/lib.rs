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
mod error;
mod keys;
mod origins;
mod outbox;
mod records;
mod rejections;
pub mod table;
mod timers;
mod upkeep;

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
    DynamoStoreError, MAX_ITEM_BYTES, MAX_TRANSACTION_BYTES, MAX_TRANSACTION_ITEMS,
};
pub use crate::keys::rate_pk;
use crate::keys::{
    agent_delivery, due_key, due_key_bound, expectation_pk, fact_pk, fact_sk, first_row_after,
    follow_agent, instant_key, lapses_agent, lapses_tenant, live_agent_partitions,
    live_agent_shard, live_count_shard_pk, outbox_pk, outbox_sk, outbox_task, position_in_item,
    queued_partition, queued_partitions, rejections_pk, row_of, row_sk, shard_of, subject_pk,
    task_pk, timers_partition, timers_partitions, COUNTER_PK, ITEM, LIVE_COUNT_SHARDS,
    REJECTION_STRIDE,
};
pub use crate::table::create_table;
use crate::table::{
    AGENT_DELIVERY, DELIVERY, ENTRY, EXPIRES_AT, FOLLOW_AGENT, FOLLOW_AT, INDEXED, KIND,
    LAPSES_AGENT, LAPSES_AGENT_INDEX, LAPSES_TENANT, LAPSES_TENANT_INDEX, LIVE_AGENT, LIVE_INDEX,
    LIVE_UNTIL, NEXT_ATTEMPT, OUTBOX_AGENT_INDEX, OUTBOX_DUE_INDEX, OUTBOX_FOLLOW_INDEX,
    OUTBOX_TASK_INDEX, PK, QUEUED, REJECTIONS, SEQ, SK, STATE, SUBJECT, TASK_KEY, TENANT, TIMERS,
    TIMERS_INDEX, TIMERS_PK, TIMERS_SK, VALUE, VERSION,
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
}

/// One write of a transaction, with what it is in words for a conflict message.
struct Write {
    put: Put,
    what: String,
    bytes: usize,
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
        }
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

    /// A strongly consistent read of one item.
    async fn get(&self, pk: String, sk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::backend)?;
        self.count(1u64);
        Ok(out.item)
    }

    /// Read-modify-write of one outbox item: `change` maps the stored entry to the one to write
    /// (`None`: nothing to write), written only if the item is still as read, else read again
    /// (at most [`OUTBOX_CAS_TRIES`] times). Answers the entry written.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when every try lost to another writer; backend or corrupt data.
    async fn update_outbox(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        change: impl Fn(&OutboxEntry) -> Option<OutboxEntry>,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        for _ in 0..OUTBOX_CAS_TRIES {
            let Some(item) = self
                .get(outbox_pk(tenant), &outbox_sk(agent, message_id))
                .await?
            else {
                return Ok(None);
            };
            let (_, stored) = entry_of(&item)?;
            let Some(updated) = change(&stored) else {
                return Ok(None);
            };
            if self
                .replace_outbox(&updated, get_s(&item, ENTRY, "outbox entry")?)
                .await?
            {
                return Ok(Some(updated));
            }
        }
        Err(StoreError::Conflict(format!(
            "outbox entry {message_id:?} of agent {:?} (changed {OUTBOX_CAS_TRIES} times while being written)",
            agent.as_str()
        )))
    }

    /// Writes `entry` over the stored outbox item with its identity if that item's entry is
    /// still `expected` (its JSON as read): `Ok(false)` when it changed meanwhile or is gone.
    /// Sets the attributes the outbox indexes read; a sent entry is never changed back.
    async fn replace_outbox(
        &self,
        entry: &OutboxEntry,
        expected: &str,
    ) -> Result<bool, StoreError> {
        // `lapsesTenant` and `lapsesAgent` never change, and are set again here so that an
        // entry written before the `lapses-*` indexes existed enters them at its next update.
        let mut set = vec![
            "#e = :e",
            "#d = :d",
            "#n = :n",
            "#ad = :ad",
            "#lt = :lt",
            "#la = :la",
        ];
        let mut remove = Vec::new();
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(PK, s(outbox_pk(&entry.tenant)))
            .key(SK, s(outbox_sk(&entry.agent, &entry.message_id)))
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#e", ENTRY)
            .expression_attribute_names("#d", DELIVERY)
            .expression_attribute_names("#n", NEXT_ATTEMPT)
            .expression_attribute_names("#ad", AGENT_DELIVERY)
            .expression_attribute_names("#lt", LAPSES_TENANT)
            .expression_attribute_names("#la", LAPSES_AGENT)
            .expression_attribute_values(":lt", s(lapses_tenant(&entry.tenant)))
            .expression_attribute_values(":la", s(lapses_agent(&entry.tenant, &entry.agent)))
            .expression_attribute_values(
                ":ad",
                s(agent_delivery(
                    &entry.tenant,
                    &entry.agent,
                    entry.delivery.as_str(),
                )),
            )
            .expression_attribute_names("#q", QUEUED)
            .expression_attribute_names("#x", EXPIRES_AT)
            .expression_attribute_values(":e", s(to_json(entry)?))
            .expression_attribute_values(":d", s(entry.delivery.as_str()))
            .expression_attribute_values(":n", s(instant_key(entry.next_attempt_at)));
        if entry.delivery == DeliveryState::Queued {
            set.push("#q = :q");
            req = req.expression_attribute_values(
                ":q",
                s(queued_partition(
                    &outbox_pk(&entry.tenant),
                    &outbox_sk(&entry.agent, &entry.message_id),
                )),
            );
        } else {
            remove.push("#q");
        }
        req = req.expression_attribute_names("#tk", TASK_KEY);
        match &entry.task_id {
            Some(task_id) => {
                set.push("#tk = :tk");
                req = req.expression_attribute_values(
                    ":tk",
                    s(outbox_task(&entry.tenant, &entry.agent, task_id)),
                );
            }
            None => remove.push("#tk"),
        }
        req = req
            .expression_attribute_names("#fa", FOLLOW_AGENT)
            .expression_attribute_names("#ft", FOLLOW_AT);
        match entry.follow_at {
            Some(at) => {
                set.push("#fa = :fa");
                set.push("#ft = :ft");
                req = req
                    .expression_attribute_values(
                        ":fa",
                        s(follow_agent(&entry.tenant, &entry.agent)),
                    )
                    .expression_attribute_values(":ft", s(instant_key(at)));
            }
            None => {
                remove.push("#fa");
                remove.push("#ft");
            }
        }
        match outbox_expiry(entry, self.retention_days) {
            Some(at) => {
                set.push("#x = :x");
                req = req.expression_attribute_values(":x", n(at));
            }
            None => remove.push("#x"),
        }
        let mut update = format!("SET {}", set.join(", "));
        if !remove.is_empty() {
            update.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        // Never inserts; a sent entry is never changed back; compare-and-set on the entry read.
        req = req.expression_attribute_values(":old", s(expected));
        let condition = if entry.delivery == DeliveryState::Sent {
            "attribute_exists(#pk) AND #e = :old".to_string()
        } else {
            req = req.expression_attribute_values(":sent", s(DeliveryState::Sent.as_str()));
            "attribute_exists(#pk) AND #e = :old AND #d <> :sent".to_string()
        };
        self.count(1u64);
        match req
            .update_expression(update)
            .condition_expression(condition)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(StoreError::backend(e)),
        }
    }

    /// A strongly consistent read of some attributes of one item.
    async fn get_projected(
        &self,
        pk: String,
        sk: &str,
        attributes: &[&str],
    ) -> Result<Option<Item>, StoreError> {
        let mut req = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .consistent_read(true);
        let mut projection = Vec::new();
        for (i, a) in attributes.iter().enumerate() {
            let name = format!("#a{i}");
            req = req.expression_attribute_names(&name, *a);
            projection.push(name);
        }
        let out = req
            .projection_expression(projection.join(", "))
            .send()
            .await
            .map_err(StoreError::backend)?;
        self.count(1u64);
        Ok(out.item)
    }

    /// Every item a query answers, following pagination.
    async fn query_all(
        &self,
        make: impl Fn() -> QueryFluentBuilder,
    ) -> Result<Vec<Item>, StoreError> {
        let mut items = Vec::new();
        let mut start = None;
        loop {
            let out = make()
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            items.extend(out.items.unwrap_or_default());
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(items);
            }
        }
    }

    /// A query of one partition of the table, strongly consistent, in sort-key order.
    async fn partition(&self, pk: String) -> Result<Vec<Item>, StoreError> {
        self.query_all(|| {
            self.client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_values(":pk", s(pk.clone()))
                .consistent_read(true)
        })
        .await
    }

    async fn read_subject(
        &self,
        tenant: &Tenant,
        subject: &Subject,
    ) -> Result<Option<SubjectState>, StoreError> {
        match self.get(subject_pk(tenant, subject), ITEM).await? {
            None => Ok(None),
            Some(item) => {
                let what = format!("subject {subject} of tenant {tenant}");
                let mut state: SubjectState = from_json(get_s(&item, STATE, &what)?, &what)?;
                state.version = get_u64(&item, VERSION, &what)?;
                Ok(Some(state))
            }
        }
    }

    async fn read_task(
        &self,
        tenant: &Tenant,
        task: &TaskRef,
    ) -> Result<Option<TaskRecord>, StoreError> {
        match self.get(task_pk(tenant, task), ITEM).await? {
            None => Ok(None),
            Some(item) => {
                let what = format!("task {}/{} of tenant {tenant}", task.agent, task.task_id);
                let mut rec: TaskRecord = from_json(get_s(&item, STATE, &what)?, &what)?;
                rec.version = get_u64(&item, VERSION, &what)?;
                Ok(Some(rec))
            }
        }
    }

    async fn read_fact_index(
        &self,
        tenant: &Tenant,
        key: &FactKey,
    ) -> Result<BTreeSet<Subject>, StoreError> {
        let what = format!("fact-key row {key} of tenant {tenant}");
        self.partition(fact_pk(tenant, key))
            .await?
            .iter()
            .map(|item| from_json(get_s(item, SUBJECT, &what)?, &what))
            .collect()
    }

    async fn read_id_index(
        &self,
        tenant: &Tenant,
        e: &ExpectationRef,
    ) -> Result<Option<Subject>, StoreError> {
        let what = format!("expectation row {}/{} of tenant {tenant}", e.agent, e.id);
        match self
            .get(expectation_pk(tenant, &e.agent, &e.id), ITEM)
            .await?
        {
            None => Ok(None),
            Some(item) => from_json(get_s(&item, SUBJECT, &what)?, &what).map(Some),
        }
    }

    /// Records of `agent` that can still lapse at `now`: the agent's live-row counter (rows
    /// with a `liveUntil`, kept in the commit that writes them) less the rows of the `live`
    /// index whose `liveUntil` is before `now` (records whose last chance to lapse passed and
    /// that no commit has closed yet: deadlines not yet fired). The cost follows that small
    /// range, not the agent's open expectations (issue 10, item 1).
    ///
    /// With `enough` (the scope's [`Scope::live_enough`]), the counter alone answers when it is
    /// at most `enough`: it is at least the live count, and the engine decides its bound the
    /// same with it. One `BatchGetItem`, none of the 16 `live` queries, unless the agent is
    /// within what the input may raise of its bound.
    async fn count_live(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        now: Instant,
        enough: Option<u64>,
    ) -> Result<u64, StoreError> {
        let what = format!("live-row counter of agent {agent} of tenant {tenant}");
        let mut rows = 0i64;
        let keys: Vec<Item> = (0..LIVE_COUNT_SHARDS)
            .map(|k| {
                HashMap::from([
                    (PK.to_string(), s(live_count_shard_pk(tenant, agent, k))),
                    (SK.to_string(), s(ITEM)),
                ])
            })
            .collect();
        let mut request = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .projection_expression("#v")
                .expression_attribute_names("#v", VALUE)
                .build()
                .map_err(StoreError::backend)?,
        );
        // A batch may leave keys unprocessed (throttling); ask again for those.
        while let Some(keys) = request.take() {
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, keys)
                .send()
                .await
                .map_err(StoreError::backend)?;
            for item in out
                .responses
                .unwrap_or_default()
                .remove(&self.table)
                .unwrap_or_default()
            {
                self.count(1u64);
                rows += get_i64(&item, VALUE, &what)?;
            }
            request = out
                .unprocessed_keys
                .unwrap_or_default()
                .remove(&self.table)
                .filter(|k| !k.keys.is_empty());
        }
        if let Some(enough) = enough {
            let counter = u64::try_from(rows).unwrap_or(0);
            if counter <= enough {
                return Ok(counter);
            }
        }
        // The rows already past, in each of the agent's `live` partitions at once.
        let expired = each(live_agent_partitions(tenant, agent), |p| async move {
            let mut expired = 0i64;
            let mut start = None;
            loop {
                let out = self
                    .client
                    .query()
                    .table_name(&self.table)
                    .index_name(LIVE_INDEX)
                    .key_condition_expression("#a = :a AND #u < :now")
                    .expression_attribute_names("#a", LIVE_AGENT)
                    .expression_attribute_names("#u", LIVE_UNTIL)
                    .expression_attribute_values(":a", s(p.clone()))
                    .expression_attribute_values(":now", s(instant_key(now)))
                    .select(Select::Count)
                    .set_exclusive_start_key(start)
                    .send()
                    .await
                    .map_err(StoreError::backend)?;
                self.count(out.scanned_count);
                expired += i64::from(out.count);
                start = out.last_evaluated_key;
                if start.is_none() {
                    return Ok(expired);
                }
            }
        })
        .await?
        .into_iter()
        .sum::<i64>();
        // The index lags the table (eventually consistent): never below zero.
        Ok(u64::try_from(rows - expired).unwrap_or(0))
    }

    /// Timers due at or before `until` of the subjects in the `timers` index partition
    /// `partition`, earliest first, at most `limit`: a `Query` in ascending order that stops
    /// once the next subject's earliest timer comes after the `limit`-th found.
    async fn due_timers_in(
        &self,
        partition: String,
        until: Instant,
        limit: usize,
    ) -> Result<Vec<DueTimer>, StoreError> {
        let mut due: Vec<DueTimer> = Vec::new();
        let bound = due_key_bound(until);
        let mut start = None;
        'pages: loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(TIMERS_INDEX)
                .key_condition_expression("#p = :p AND #s < :bound")
                .expression_attribute_names("#p", TIMERS_PK)
                .expression_attribute_names("#s", TIMERS_SK)
                .expression_attribute_values(":p", s(partition.clone()))
                .expression_attribute_values(":bound", s(bound.clone()))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            for item in out.items.unwrap_or_default() {
                let timers = timers_of(&item)?;
                // Subjects come in the order of their earliest timer: once that is after the
                // `limit`-th timer found so far, no later subject has one before it.
                if due.len() >= limit {
                    due.sort_by_key(timer_order);
                    due.truncate(limit);
                    if let (Some(first), Some(last)) = (timers.first(), due.last()) {
                        if timer_order(first) > timer_order(last) {
                            break 'pages;
                        }
                    }
                }
                due.extend(timers.into_iter().filter(|t| t.at <= until));
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        due.sort_by_key(timer_order);
        due.truncate(limit);
        Ok(due)
    }

    /// Up to `limit` keys of queued lapse tasks whose next attempt is at or before `now`, with
    /// their `seq`, in `seq` order, from the `outbox-due` index partition `partition`.
    async fn due_keys_in(
        &self,
        partition: String,
        now: Instant,
        limit: usize,
    ) -> Result<Vec<(u64, String, String)>, StoreError> {
        let what = "outbox-due index entry";
        let mut keys = Vec::new();
        let mut start = None;
        while keys.len() < limit {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(OUTBOX_DUE_INDEX)
                .key_condition_expression("#q = :q")
                .filter_expression("#n <= :now")
                .expression_attribute_names("#q", QUEUED)
                .expression_attribute_names("#n", NEXT_ATTEMPT)
                .expression_attribute_values(":q", s(partition.clone()))
                .expression_attribute_values(":now", s(instant_key(now)))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            for item in out.items.unwrap_or_default() {
                keys.push((
                    get_u64(&item, SEQ, what)?,
                    get_s(&item, PK, what)?.to_string(),
                    get_s(&item, SK, what)?.to_string(),
                ));
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        keys.truncate(limit);
        Ok(keys)
    }

    /// The update adding `delta` to shard `shard` of the live-row counter of `agent` of
    /// `tenant`, for the commit that changes as many of its rows.
    fn live_count_update(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        shard: u64,
        delta: i64,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .key(PK, s(live_count_shard_pk(tenant, agent, shard)))
            .key(SK, s(ITEM))
            .update_expression("SET #k = :kind, #t = :t ADD #v :d")
            .expression_attribute_names("#k", KIND)
            .expression_attribute_names("#t", TENANT)
            .expression_attribute_names("#v", VALUE)
            .expression_attribute_values(":kind", s("live-count"))
            .expression_attribute_values(":t", s(tenant.as_str()))
            .expression_attribute_values(":d", n(delta))
            .build()
            .map_err(StoreError::backend)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }

    /// Up to `limit` outbox entries found through `index` where `partition` (attribute, value)
    /// and `sort` (attribute) is at or before `until` (an instant key, or `~` for no bound), in
    /// index order, each re-read from the table (the index is eventually consistent; the caller
    /// filters what no longer matches). Entries gone meanwhile are left out. Reads one index page
    /// per 1,000 keys and one item per entry: the cost follows `limit`, not the outbox.
    async fn outbox_through_index(
        &self,
        index: &str,
        partition: (&str, String),
        sort: &str,
        until: String,
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEntry)>, StoreError> {
        let what = format!("{index} index entry");
        let mut keys: Vec<(String, String)> = Vec::new();
        let mut start = None;
        while keys.len() < limit {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .key_condition_expression("#p = :p AND #s <= :until")
                .expression_attribute_names("#p", partition.0)
                .expression_attribute_names("#s", sort)
                .expression_attribute_values(":p", s(partition.1.clone()))
                .expression_attribute_values(":until", s(until.clone()))
                .limit(i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            for item in out.items.unwrap_or_default() {
                keys.push((
                    get_s(&item, PK, &what)?.into(),
                    get_s(&item, SK, &what)?.into(),
                ));
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        keys.truncate(limit);
        let entries = each(keys, |(pk, sk)| async move {
            match self.get(pk, &sk).await? {
                None => Ok(None),
                Some(item) => entry_of(&item).map(Some),
            }
        })
        .await?;
        Ok(entries.into_iter().flatten().collect())
    }

    /// The lapse task `agent` of `tenant` answered with the A2A Task `task_id` (recorded by the
    /// submitter in [`Outbox::outbox_update`](watcher_runtime::store::Outbox::outbox_update)), for a status update pushed on that task. One
    /// query of the sparse `outbox-task` index and one strongly consistent read of the entry:
    /// the cost does not grow with the outbox (issue 10, item 1). `None` when no lapse task was
    /// answered with that task (or the index has not caught up with a task recorded
    /// milliseconds ago).
    ///
    /// # Errors
    /// Backend or corrupt data.
    pub async fn outbox_by_task_id(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        let found = self
            .outbox_through_index(
                OUTBOX_TASK_INDEX,
                (TASK_KEY, outbox_task(tenant, agent, task_id)),
                SK,
                // Above every outbox sort key.
                "~".to_string(),
                1,
            )
            .await?;
        Ok(found.into_iter().map(|(_, e)| e).find(|e| {
            e.tenant == *tenant && e.agent == *agent && e.task_id.as_deref() == Some(task_id)
        }))
    }

    /// Writes the `lapses-tenant` and `lapses-agent` keys (`lapsesTenant`, `lapsesAgent`) on
    /// every lapse task that lacks them (written before those indexes existed), so that
    /// `GET /v1/lapses` pages find them; answers how many it updated. A one-off after the
    /// upgrade (docs/dynamodb.md, "Upgrading"), never on a request path: it scans the whole
    /// table. Safe to run again and while the watcher runs (the attributes never change, and
    /// an entry deleted meanwhile is not written back).
    ///
    /// # Errors
    /// Backend errors (what was updated before stays updated), or corrupt data.
    pub async fn backfill_lapse_indexes(&self) -> Result<u64, StoreError> {
        let mut updated = 0;
        let mut start = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("#k = :outbox AND attribute_not_exists(#lt)")
                .projection_expression("#pk, #sk, #e, #seq")
                .expression_attribute_names("#k", KIND)
                .expression_attribute_names("#lt", LAPSES_TENANT)
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_names("#e", ENTRY)
                .expression_attribute_names("#seq", SEQ)
                .expression_attribute_values(":outbox", s("outbox"))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            for item in out.items.unwrap_or_default() {
                let (_, entry) = entry_of(&item)?;
                let what = "outbox entry";
                let update = self
                    .client
                    .update_item()
                    .table_name(&self.table)
                    .key(PK, s(get_s(&item, PK, what)?))
                    .key(SK, s(get_s(&item, SK, what)?))
                    .update_expression("SET #lt = :lt, #la = :la")
                    .condition_expression("attribute_exists(#pk)")
                    .expression_attribute_names("#pk", PK)
                    .expression_attribute_names("#lt", LAPSES_TENANT)
                    .expression_attribute_names("#la", LAPSES_AGENT)
                    .expression_attribute_values(":lt", s(lapses_tenant(&entry.tenant)))
                    .expression_attribute_values(
                        ":la",
                        s(lapses_agent(&entry.tenant, &entry.agent)),
                    );
                self.count(1u64);
                match update.send().await {
                    Ok(_) => updated += 1,
                    // Deleted meanwhile (expired): nothing to index.
                    Err(e)
                        if e.as_service_error()
                            .is_some_and(|se| se.is_conditional_check_failed_exception()) => {}
                    Err(e) => return Err(StoreError::backend(e)),
                }
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                return Ok(updated);
            }
        }
    }

    /// The subject put of a commit and the index rows it changes.
    ///
    /// Adds to `live_deltas` how many live rows (rows with a `liveUntil`) each agent gains or
    /// loses, for the counters written in the same transaction.
    fn subject_writes(
        &self,
        tenant: &Tenant,
        state: &SubjectState,
        stored: &Indexed,
        live_deltas: &mut BTreeMap<AgentId, i64>,
    ) -> Result<Vec<Write>, StoreError> {
        let what = format!("subject {} of tenant {tenant}", state.subject);
        let mut next = state.clone();
        next.version = state.version + 1;
        let ix = subject_index(&next);
        let indexed = Indexed::of(&ix);
        for e in &stored.expectations {
            if e.live_until.is_some() {
                *live_deltas.entry(e.agent.clone()).or_default() -= 1;
            }
        }
        for e in &indexed.expectations {
            if e.live_until.is_some() {
                *live_deltas.entry(e.agent.clone()).or_default() += 1;
            }
        }

        let mut item: Item = HashMap::new();
        item.insert(PK.into(), s(subject_pk(tenant, &state.subject)));
        item.insert(SK.into(), s(ITEM));
        item.insert(KIND.into(), s("subject"));
        item.insert(TENANT.into(), s(tenant.as_str()));
        item.insert(VERSION.into(), n(next.version));
        item.insert(STATE.into(), s(to_json(&next)?));
        item.insert(INDEXED.into(), s(to_json(&indexed)?));
        let mut timers: Vec<StoredTimer> = ix
            .timers
            .iter()
            .map(|(key, at, order)| StoredTimer {
                at: *at,
                order: *order,
                key: key.clone(),
            })
            .collect();
        timers.sort_by_key(|t| (t.at, t.order, t.key.kind));
        if let Some(first) = timers.first() {
            item.insert(
                TIMERS_PK.into(),
                s(timers_partition(&subject_pk(tenant, &state.subject))),
            );
            item.insert(
                TIMERS_SK.into(),
                s(due_key(first.at, first.order, first.key.kind)),
            );
            item.insert(TIMERS.into(), s(to_json(&timers)?));
        }
        if let Some(at) = subject_expiry(&next, self.retention_days) {
            item.insert(EXPIRES_AT.into(), n(at));
        }
        let bytes = item_size(&item);
        if bytes > MAX_ITEM_BYTES {
            return Err(StoreError::backend(DynamoStoreError::ItemTooLarge {
                what,
                bytes,
            }));
        }
        let put = self.versioned_put(item, state.version)?;
        let mut writes = vec![Write { put, what, bytes }];

        let subject_json = to_json(&state.subject)?;
        let (facts, expectations) = indexed.changed_since(stored);
        for key in facts {
            let mut row: Item = HashMap::new();
            row.insert(PK.into(), s(fact_pk(tenant, &key)));
            row.insert(SK.into(), s(fact_sk(&state.subject)));
            row.insert(KIND.into(), s("fact"));
            row.insert(TENANT.into(), s(tenant.as_str()));
            row.insert(SUBJECT.into(), s(subject_json.clone()));
            writes.push(self.plain_put(row, format!("fact-key row {key}"))?);
        }
        for e in expectations {
            let mut row: Item = HashMap::new();
            row.insert(PK.into(), s(expectation_pk(tenant, &e.agent, &e.id)));
            row.insert(SK.into(), s(ITEM));
            row.insert(KIND.into(), s("expectation"));
            row.insert(TENANT.into(), s(tenant.as_str()));
            row.insert(SUBJECT.into(), s(subject_json.clone()));
            if let Some(until) = &e.live_until {
                row.insert(
                    LIVE_AGENT.into(),
                    s(live_agent_shard(
                        tenant,
                        &e.agent,
                        &subject_pk(tenant, &state.subject),
                    )),
                );
                row.insert(LIVE_UNTIL.into(), s(until.clone()));
            }
            writes.push(self.plain_put(row, format!("expectation row {}/{}", e.agent, e.id))?);
        }
        Ok(writes)
    }

    fn task_write(&self, tenant: &Tenant, task: &TaskRecord) -> Result<Write, StoreError> {
        let what = format!(
            "task {}/{} of tenant {tenant}",
            task.task.agent, task.task.task_id
        );
        let mut next = task.clone();
        next.version = task.version + 1;
        let mut item: Item = HashMap::new();
        item.insert(PK.into(), s(task_pk(tenant, &task.task)));
        item.insert(SK.into(), s(ITEM));
        item.insert(KIND.into(), s("task"));
        item.insert(TENANT.into(), s(tenant.as_str()));
        item.insert(VERSION.into(), n(next.version));
        item.insert(STATE.into(), s(to_json(&next)?));
        if let Some(at) = task_expiry(&next, self.retention_days) {
            item.insert(EXPIRES_AT.into(), n(at));
        }
        let bytes = item_size(&item);
        if bytes > MAX_ITEM_BYTES {
            return Err(StoreError::backend(DynamoStoreError::ItemTooLarge {
                what,
                bytes,
            }));
        }
        let put = self.versioned_put(item, task.version)?;
        Ok(Write { put, what, bytes })
    }

    fn outbox_write(&self, entry: &OutboxEntry, seq: u64) -> Result<Write, StoreError> {
        let mut item: Item = HashMap::new();
        item.insert(PK.into(), s(outbox_pk(&entry.tenant)));
        item.insert(SK.into(), s(outbox_sk(&entry.agent, &entry.message_id)));
        item.insert(KIND.into(), s("outbox"));
        item.insert(TENANT.into(), s(entry.tenant.as_str()));
        item.insert(ENTRY.into(), s(to_json(entry)?));
        item.insert(SEQ.into(), n(seq));
        // The keys of the `lapses-tenant` and `lapses-agent` indexes (sorted by `seq`).
        item.insert(LAPSES_TENANT.into(), s(lapses_tenant(&entry.tenant)));
        item.insert(
            LAPSES_AGENT.into(),
            s(lapses_agent(&entry.tenant, &entry.agent)),
        );
        item.insert(DELIVERY.into(), s(entry.delivery.as_str()));
        item.insert(NEXT_ATTEMPT.into(), s(instant_key(entry.next_attempt_at)));
        item.insert(
            AGENT_DELIVERY.into(),
            s(agent_delivery(
                &entry.tenant,
                &entry.agent,
                entry.delivery.as_str(),
            )),
        );
        if entry.delivery == DeliveryState::Queued {
            item.insert(
                QUEUED.into(),
                s(queued_partition(
                    &outbox_pk(&entry.tenant),
                    &outbox_sk(&entry.agent, &entry.message_id),
                )),
            );
        }
        if let Some(task_id) = &entry.task_id {
            item.insert(
                TASK_KEY.into(),
                s(outbox_task(&entry.tenant, &entry.agent, task_id)),
            );
        }
        if let Some(at) = entry.follow_at {
            item.insert(
                FOLLOW_AGENT.into(),
                s(follow_agent(&entry.tenant, &entry.agent)),
            );
            item.insert(FOLLOW_AT.into(), s(instant_key(at)));
        }
        if let Some(at) = outbox_expiry(entry, self.retention_days) {
            item.insert(EXPIRES_AT.into(), n(at));
        }
        let bytes = item_size(&item);
        let what = format!(
            "outbox entry {} of agent {} of tenant {}",
            entry.message_id, entry.agent, entry.tenant
        );
        // An (agent, messageId) written meanwhile by another commit fails this condition: a
        // conflict, and the retry leaves that first entry as it is.
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(StoreError::backend)?;
        Ok(Write { put, what, bytes })
    }

    fn rejections_write(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        chunk: &[&Rejection],
        seq: u64,
    ) -> Result<Write, StoreError> {
        let stored: Vec<&Rejection> = chunk.to_vec();
        let mut item: Item = HashMap::new();
        item.insert(PK.into(), s(rejections_pk(tenant, agent)));
        item.insert(SK.into(), s(row_sk(seq)));
        item.insert(KIND.into(), s("rejections"));
        item.insert(TENANT.into(), s(tenant.as_str()));
        item.insert(REJECTIONS.into(), s(to_json(&stored)?));
        if let Some(at) = rejections_expiry(chunk.iter().copied(), self.retention_days) {
            item.insert(EXPIRES_AT.into(), n(at));
        }
        self.plain_put(item, format!("rejections of {agent} in tenant {tenant}"))
    }

    /// A put conditional on the stored version being `loaded` (not existing, for 0).
    fn versioned_put(&self, item: Item, loaded: u64) -> Result<Put, StoreError> {
        let put = Put::builder().table_name(&self.table).set_item(Some(item));
        let put = if loaded == 0 {
            put.condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", PK)
        } else {
            put.condition_expression("#v = :v")
                .expression_attribute_names("#v", VERSION)
                .expression_attribute_values(":v", n(loaded))
        };
        put.build().map_err(StoreError::backend)
    }

    /// An unconditional put (index rows and rejections: rewriting them is harmless).
    fn plain_put(&self, item: Item, what: String) -> Result<Write, StoreError> {
        let bytes = item_size(&item);
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .build()
            .map_err(StoreError::backend)?;
        Ok(Write { put, what, bytes })
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
