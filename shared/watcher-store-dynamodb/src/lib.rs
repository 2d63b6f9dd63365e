//! The watcher's [`Store`] over one DynamoDB table, for the AWS deployment.
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

mod codec;
mod error;
mod keys;
mod origins;
pub mod table;

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
use watcher_runtime::origins::{FollowedOrigin, OriginKey};
use watcher_runtime::sequence::TimeOrdered;
use watcher_runtime::store::{
    cut_page, lapse_scan_budget, Claim, Commit, DeliveryState, DueTimer, LapsePage, LapseQuery,
    OutboxEntry, PurgeReport, Store, StoreError,
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
    /// Items read and written so far ([`Store::work_done`]), while counted
    /// ([`DynamoStore::counting_work`]).
    work: Option<Arc<AtomicU64>>,
    /// Raising-order numbers and row ids, with no write ([`Store::next_sequence`]).
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
    /// ([`Store::work_done`]): each `GetItem`, each item a `Query` or `Scan` looked at (its
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
    /// submitter in [`Store::outbox_update`]), for a status update pushed on that task. One
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

#[async_trait]
impl Store for DynamoStore {
    /// Through the sparse `outbox-task` index ([`DynamoStore::outbox_by_task_id`]): one query and
    /// one read, whatever the outbox's size.
    async fn outbox_by_task(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        Ok(self
            .outbox_by_task_id(tenant, agent, task_id)
            .await?
            .into_iter()
            .collect())
    }

    async fn load(
        &self,
        tenant: &Tenant,
        scope: &Scope,
        now: Instant,
    ) -> Result<Slice, StoreError> {
        let mut slice = Slice::new(tenant.clone());
        // Owned arguments: a closure over borrowed ones trips the `Send` check of async-trait
        // futures (rust-lang/rust#102211).
        let subjects = each(scope.subjects.iter().cloned().collect(), |s| async move {
            let state = self.read_subject(tenant, &s).await?;
            Ok((s.clone(), state.unwrap_or_else(|| SubjectState::new(s))))
        })
        .await?;
        slice.subjects.extend(subjects);
        let facts = each(scope.fact_keys.iter().cloned().collect(), |k| async move {
            let subjects = self.read_fact_index(tenant, &k).await?;
            Ok((k, subjects))
        })
        .await?;
        slice.fact_index.extend(facts);
        let ids = each(
            scope.expectations.iter().cloned().collect(),
            |e| async move {
                let subject = self.read_id_index(tenant, &e).await?;
                Ok((e, subject))
            },
        )
        .await?;
        slice.id_index.extend(ids);
        let tasks = each(scope.tasks.iter().cloned().collect(), |t| async move {
            let task = self.read_task(tenant, &t).await?;
            Ok((t, task))
        })
        .await?;
        slice.tasks.extend(tasks);
        let live = each(scope.agents.iter().cloned().collect(), |a| async move {
            let enough = scope.live_enough.get(&a).copied();
            let count = self.count_live(tenant, &a, now, enough).await?;
            Ok((a, count))
        })
        .await?;
        slice.agent_live.extend(live);
        Ok(slice)
    }

    async fn commit(&self, tenant: &Tenant, commit: Commit) -> Result<(), StoreError> {
        // 1. What each subject contributed to the indexes at its stored version. A version that
        //    moved already is a conflict without writing anything.
        let loaded: Vec<(String, u64, String)> = commit
            .subjects
            .iter()
            .map(|state| {
                (
                    subject_pk(tenant, &state.subject),
                    state.version,
                    format!("subject {} of tenant {tenant}", state.subject),
                )
            })
            .collect();
        let stored = each(loaded, |(pk, loaded, what)| async move {
            let item = self.get_projected(pk, ITEM, &[VERSION, INDEXED]).await?;
            let (version, indexed) = match &item {
                None => (0, Indexed::default()),
                Some(item) => (
                    get_u64(item, VERSION, &what)?,
                    from_json(get_s(item, INDEXED, &what)?, &what)?,
                ),
            };
            if version != loaded {
                return Err(StoreError::Conflict(what));
            }
            Ok(indexed)
        })
        .await?;

        // 2. New outbox entries: the first of each (tenant, agent, messageId) not stored yet.
        let mut seen = BTreeSet::new();
        let candidates: Vec<&OutboxEntry> = commit
            .outbox
            .iter()
            .filter(|o| seen.insert((o.tenant.clone(), o.agent.clone(), o.message_id.clone())))
            .collect();
        let keys: Vec<(String, String)> = candidates
            .iter()
            .map(|o| (outbox_pk(&o.tenant), outbox_sk(&o.agent, &o.message_id)))
            .collect();
        let exists = each(keys, |(pk, sk)| async move {
            Ok(self.get_projected(pk, &sk, &[PK]).await?.is_some())
        })
        .await?;
        let new_outbox: Vec<&OutboxEntry> = candidates
            .into_iter()
            .zip(exists)
            .filter_map(|(o, exists)| (!exists).then_some(o))
            .collect();

        // 3. Rejections, grouped per agent (oldest first within each) and chunked.
        let mut per_agent: BTreeMap<&AgentId, Vec<&Rejection>> = BTreeMap::new();
        for r in &commit.rejections {
            per_agent.entry(&r.agent).or_default().push(r);
        }
        let chunks: Vec<(&AgentId, &[&Rejection])> = per_agent
            .iter()
            .flat_map(|(agent, list)| list.chunks(REJECTIONS_PER_ITEM).map(move |c| (*agent, c)))
            .collect();

        // 4. The writes; refused before anything is sent when they cannot be one transaction.
        let mut writes: Vec<Write> = Vec::new();
        let mut live_deltas: BTreeMap<AgentId, i64> = BTreeMap::new();
        for (state, stored) in commit.subjects.iter().zip(&stored) {
            writes.extend(self.subject_writes(tenant, state, stored, &mut live_deltas)?);
        }
        live_deltas.retain(|_, d| *d != 0);
        for task in &commit.tasks {
            writes.push(self.task_write(tenant, task)?);
        }
        let rows = new_outbox.len() + chunks.len();
        let items = writes.len() + rows + live_deltas.len();
        if items == 0 {
            return Ok(());
        }
        if items > MAX_TRANSACTION_ITEMS {
            return Err(StoreError::backend(DynamoStoreError::TransactionTooLarge {
                items,
                bytes: writes.iter().map(|w| w.bytes).sum(),
            }));
        }
        // Row ids are time-ordered ids, taken with no write (docs/dynamodb.md "Items"): a
        // lapse task's id orders `GET /v1/lapses` and the `outbox-due` index; a rejections item
        // reserves one id per rejection, the first its sort key.
        for o in &new_outbox {
            writes.push(self.outbox_write(o, self.ids.next())?);
        }
        for (agent, chunk) in &chunks {
            let first = self.ids.next_block(chunk.len() as u64);
            writes.push(self.rejections_write(tenant, agent, chunk, first)?);
        }
        let bytes: usize = writes.iter().map(|w| w.bytes).sum();
        if bytes > MAX_TRANSACTION_BYTES {
            return Err(StoreError::backend(DynamoStoreError::TransactionTooLarge {
                items,
                bytes,
            }));
        }

        // 5. One transaction: every condition holds and everything is written, or nothing is.
        let (mut puts, mut whats): (Vec<TransactWriteItem>, Vec<String>) = writes
            .into_iter()
            .map(|w| (TransactWriteItem::builder().put(w.put).build(), w.what))
            .unzip();
        // The live-row deltas go to one shard of each agent's counter, the shard of the
        // commit's first subject: commits of one agent on subjects of different shards do not
        // touch the same item (no `TransactionConflict` between them), and the count is the sum
        // of the shards (docs/dynamodb.md "Items").
        let shard = commit.subjects.first().map_or(0, |s| {
            shard_of(&subject_pk(tenant, &s.subject), LIVE_COUNT_SHARDS)
        });
        for (agent, delta) in &live_deltas {
            puts.push(self.live_count_update(tenant, agent, shard, *delta)?);
            whats.push(format!("live-row counter of agent {agent} (shard {shard})"));
        }
        self.count(puts.len());
        self.client
            .transact_write_items()
            .set_transact_items(Some(puts))
            .send()
            .await
            .map_err(|e| {
                error::transaction_error(e, |i| {
                    whats
                        .get(i)
                        .cloned()
                        .unwrap_or_else(|| format!("write {i}"))
                })
            })?;
        Ok(())
    }

    /// A time-ordered id ([`TimeOrdered`]): no read, no write, so no item is written by every
    /// input. Every id is above every number the raising-order counter (`COUNTER`/`raise`) of an
    /// earlier version handed out, so a table written by it keeps its order.
    async fn next_sequence(&self) -> Result<u64, StoreError> {
        Ok(self.ids.next())
    }

    /// Queries every partition of the `timers` index ([`timers_partitions`]: the shards and
    /// the earlier version's one value) at once, each stopping after its `limit`-th timer, and
    /// merges them in firing order.
    async fn due_timers(&self, until: Instant, limit: usize) -> Result<Vec<DueTimer>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let found = each(timers_partitions(), |p| async move {
            self.due_timers_in(p, until, limit).await
        })
        .await?;
        let mut due: Vec<DueTimer> = found.into_iter().flatten().collect();
        due.sort_by_key(timer_order);
        due.truncate(limit);
        Ok(due)
    }

    /// The earliest timer of each partition of the `timers` index (one item each), the earliest
    /// of them.
    async fn next_timer(&self) -> Result<Option<DueTimer>, StoreError> {
        let firsts = each(timers_partitions(), |p| async move {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(TIMERS_INDEX)
                .key_condition_expression("#p = :p")
                .expression_attribute_names("#p", TIMERS_PK)
                .expression_attribute_values(":p", s(p))
                .limit(1)
                .send()
                .await
                .map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            match out.items.unwrap_or_default().first() {
                None => Ok(None),
                Some(item) => Ok(timers_of(item)?.into_iter().next()),
            }
        })
        .await?;
        Ok(firsts.into_iter().flatten().min_by_key(timer_order))
    }

    async fn subject(
        &self,
        tenant: &Tenant,
        subject: &Subject,
    ) -> Result<Option<SubjectState>, StoreError> {
        self.read_subject(tenant, subject).await
    }

    async fn all_records(&self) -> Result<Vec<ExpectationRecord>, StoreError> {
        let mut all = Vec::new();
        let mut start = None;
        loop {
            let out = self
                .client
                .scan()
                .table_name(&self.table)
                .filter_expression("#k = :subject")
                .projection_expression("#s")
                .expression_attribute_names("#k", KIND)
                .expression_attribute_names("#s", STATE)
                .expression_attribute_values(":subject", s("subject"))
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            for item in out.items.unwrap_or_default() {
                let state: SubjectState = from_json(get_s(&item, STATE, "subject")?, "subject")?;
                all.extend(state.records);
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        all.sort_by_key(|r| r.order);
        Ok(all)
    }

    async fn rejections(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Vec<Rejection>, StoreError> {
        let what = format!("rejections of {agent} in tenant {tenant}");
        let mut all = Vec::new();
        for item in self.partition(rejections_pk(tenant, agent)).await? {
            let row = row_of(get_s(&item, SK, &what)?)
                .map_err(|sk| StoreError::Corrupt(format!("{what}: sort key {sk}")))?;
            let list: Vec<Rejection> = from_json(get_s(&item, REJECTIONS, &what)?, &what)?;
            for (i, r) in list.into_iter().enumerate() {
                let position = position_in_item(row, i).ok_or_else(|| {
                    StoreError::Corrupt(format!("{what}: row {row} place {i} has no position"))
                })?;
                all.push((position, r));
            }
        }
        // In the order of `rejections_page`: items two instances wrote at one moment interleave.
        all.sort_by_key(|(p, _)| *p);
        Ok(all.into_iter().map(|(_, r)| r).collect())
    }

    /// Queries every partition of the `outbox-due` index ([`queued_partitions`]) at once, each
    /// for at most `limit` due keys, merges them in `seq` order (oldest first) and re-reads the
    /// first `limit`.
    async fn outbox_due(&self, now: Instant, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let found = each(queued_partitions(), |p| async move {
            self.due_keys_in(p, now, limit).await
        })
        .await?;
        let mut found: Vec<(u64, String, String)> = found.into_iter().flatten().collect();
        found.sort();
        found.truncate(limit);
        let keys: Vec<(String, String)> = found.into_iter().map(|(_, pk, sk)| (pk, sk)).collect();
        // The index is eventually consistent: re-read each entry and keep those still due, so
        // an entry just marked sent is not handed out again.
        let entries = each(keys, |(pk, sk)| async move {
            match self.get(pk, &sk).await? {
                None => Ok(None),
                Some(item) => entry_of(&item).map(|(_, e)| Some(e)),
            }
        })
        .await?;
        Ok(entries
            .into_iter()
            .flatten()
            .filter(|e| e.delivery == DeliveryState::Queued && e.next_attempt_at <= now)
            .collect())
    }

    async fn outbox_get(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        match self
            .get(outbox_pk(tenant), &outbox_sk(agent, message_id))
            .await?
        {
            None => Ok(None),
            Some(item) => entry_of(&item).map(|(_, e)| Some(e)),
        }
    }

    /// A consistent read of the stored entry, then [`DynamoStore::replace_outbox`] conditional
    /// on it being unchanged, retried while another writer (a push, the submitter) wins: the
    /// lapse task's task fields are merged with the stored ones (`keep_task_progress`) against
    /// the entry actually replaced.
    async fn outbox_update(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        self.update_outbox(&entry.tenant, &entry.agent, &entry.message_id, |stored| {
            if stored.delivery == DeliveryState::Sent && entry.delivery != DeliveryState::Sent {
                return None;
            }
            let mut updated = entry.clone();
            keep_task_progress(&mut updated, stored);
            keep_lease(&mut updated, stored);
            Some(updated)
        })
        .await
        .map(|_| ())
    }

    /// A consistent read of the stored entry, judged by `lease::claim`, then
    /// [`DynamoStore::replace_outbox`] conditional on the entry being unchanged: of two claims
    /// that read the same entry, one write lands and the other reads again and finds the lease.
    async fn outbox_claim(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        lease: &Lease,
        now: Instant,
    ) -> Result<Claim, StoreError> {
        for _ in 0..OUTBOX_CAS_TRIES {
            let Some(item) = self
                .get(outbox_pk(tenant), &outbox_sk(agent, message_id))
                .await?
            else {
                return Ok(Claim::Gone);
            };
            let (_, stored) = entry_of(&item)?;
            let decided = claim(&stored, lease, now);
            let Claim::Claimed { entry, .. } = &decided else {
                return Ok(decided);
            };
            if self
                .replace_outbox(entry, get_s(&item, ENTRY, "outbox entry")?)
                .await?
            {
                return Ok(decided);
            }
        }
        Err(StoreError::Conflict(format!(
            "outbox entry {message_id:?} of agent {:?} (changed {OUTBOX_CAS_TRIES} times while being claimed)",
            agent.as_str()
        )))
    }

    async fn outbox_task_state(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        task_id: &str,
        state: TaskState,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        self.update_outbox(tenant, agent, message_id, |stored| {
            with_task_state(stored, task_id, state)
        })
        .await
    }

    async fn outbox_of_agent(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        delivery: DeliveryState,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        // Without a bound, a key above every instant key (they are digits).
        let until = due_by.map_or_else(|| "~".to_string(), instant_key);
        let entries = self
            .outbox_through_index(
                OUTBOX_AGENT_INDEX,
                (
                    AGENT_DELIVERY,
                    agent_delivery(tenant, agent, delivery.as_str()),
                ),
                NEXT_ATTEMPT,
                until,
                limit,
            )
            .await?;
        // Keep those still in the state asked for.
        let mut entries: Vec<(u64, OutboxEntry)> = entries
            .into_iter()
            .filter(|(_, e)| {
                e.delivery == delivery && due_by.is_none_or(|d| e.next_attempt_at <= d)
            })
            .collect();
        entries.sort_by_key(|(seq, e)| (e.next_attempt_at, *seq));
        Ok(entries.into_iter().map(|(_, e)| e).collect())
    }

    async fn origin_follow(&self, origin: &FollowedOrigin) -> Result<bool, StoreError> {
        self.follow_origin(origin).await
    }

    async fn origins_due(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Instant,
        limit: usize,
    ) -> Result<Vec<FollowedOrigin>, StoreError> {
        self.due_origins(tenant, agent, due_by, limit).await
    }

    async fn origin_reschedule(&self, key: &OriginKey, at: Instant) -> Result<(), StoreError> {
        self.reschedule_origin(key, at).await
    }

    async fn origin_stop(&self, key: &OriginKey) -> Result<(), StoreError> {
        self.stop_origin(key).await
    }

    async fn outbox_following(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let until = due_by.map_or_else(|| "~".to_string(), instant_key);
        let entries = self
            .outbox_through_index(
                OUTBOX_FOLLOW_INDEX,
                (FOLLOW_AGENT, follow_agent(tenant, agent)),
                FOLLOW_AT,
                until,
                limit,
            )
            .await?;
        let mut entries: Vec<OutboxEntry> = entries
            .into_iter()
            .map(|(_, e)| e)
            .filter(|e| e.follow_at.is_some_and(|at| due_by.is_none_or(|d| at <= d)))
            .collect();
        entries.sort_by_key(|e| e.follow_at);
        Ok(entries)
    }

    async fn probe_write(&self, now: Instant) -> Result<(), StoreError> {
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(COUNTER_PK))
            .item(SK, s("health"))
            .item(KIND, s("health"))
            .item("probedAt", s(instant_key(now)))
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(())
    }

    async fn put_agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        card: &serde_json::Value,
        read_at: Instant,
    ) -> Result<(), StoreError> {
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(keys::agent_card_pk(tenant, agent)))
            .item(SK, s(ITEM))
            .item(KIND, s("agent-card"))
            .item(TENANT, s(tenant.as_str()))
            .item("card", s(card.to_string()))
            .item("readAt", s(read_at.to_string()))
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(())
    }

    async fn agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        self.get(keys::agent_card_pk(tenant, agent), ITEM)
            .await?
            .map(|item| {
                kept_document(
                    &item,
                    "card",
                    "readAt",
                    &format!("the kept card of agent {agent}"),
                )
            })
            .transpose()
    }

    async fn put_lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
        descriptor: &serde_json::Value,
        probed_at: Instant,
    ) -> Result<(), StoreError> {
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(keys::lifecycle_pk(tenant, agent)))
            .item(SK, s(format!("V#{protocol_version}")))
            .item(KIND, s("lifecycle"))
            .item(TENANT, s(tenant.as_str()))
            .item("descriptor", s(descriptor.to_string()))
            .item("probedAt", s(probed_at.to_string()))
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(())
    }

    async fn lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        let sk = format!("V#{protocol_version}");
        self.get(keys::lifecycle_pk(tenant, agent), &sk)
            .await?
            .map(|item| {
                kept_document(
                    &item,
                    "descriptor",
                    "probedAt",
                    &format!("the lifecycle descriptor of agent {agent}"),
                )
            })
            .transpose()
    }

    async fn lapses(&self, tenant: &Tenant) -> Result<Vec<OutboxEntry>, StoreError> {
        let mut entries = self
            .partition(outbox_pk(tenant))
            .await?
            .iter()
            .map(entry_of)
            .collect::<Result<Vec<_>, _>>()?;
        entries.sort_by_key(|(seq, _)| *seq);
        Ok(entries.into_iter().map(|(_, e)| e).collect())
    }

    /// Keyset pages over the sparse `lapses-tenant` index (partition `LAPSES#{tenant}`), or
    /// `lapses-agent` (`LAPSES#{tenant}#{agent}`) when `query.agent` is given, both sorted by
    /// the entry's `seq` (its insertion order, the position answered) with every attribute
    /// projected: `Query` with `seq > after`, stopping once the page is full and one more match
    /// is seen, or [`lapse_scan_budget`] positions were looked at. `delivery` and `since` are
    /// filtered here, so every position looked at counts towards the budget as in the SQLite
    /// store. The first request's `Limit` is `limit` + 1 (all a page without those filters
    /// needs), each further one twice the one before, never past the budget left: a page reads
    /// at most the budget of items (`limit` + 1 when nothing is filtered out), whatever the
    /// outbox's size.
    ///
    /// The index is eventually consistent: a lapse task written or updated milliseconds ago
    /// may be missing or show its previous state (docs/dynamodb.md, "Consistency").
    async fn lapses_page(
        &self,
        tenant: &Tenant,
        query: &LapseQuery,
    ) -> Result<LapsePage, StoreError> {
        let limit = query.limit.max(1);
        let budget = lapse_scan_budget(limit);
        let (index, partition) = match &query.agent {
            Some(agent) => (
                LAPSES_AGENT_INDEX,
                (LAPSES_AGENT, lapses_agent(tenant, agent)),
            ),
            None => (LAPSES_TENANT_INDEX, (LAPSES_TENANT, lapses_tenant(tenant))),
        };
        let mut page = LapsePage::default();
        let mut looked = 0usize;
        let mut last = None;
        let mut start = None;
        let mut items_per_request = limit.saturating_add(1);
        'requests: loop {
            let items = items_per_request.min(budget - looked);
            let items = i32::try_from(items).unwrap_or(i32::MAX);
            let mut req = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .expression_attribute_names("#p", partition.0)
                .expression_attribute_values(":p", s(partition.1.clone()))
                .limit(items)
                .set_exclusive_start_key(start);
            req = match query.after {
                Some(after) => req
                    .key_condition_expression("#p = :p AND #s > :after")
                    .expression_attribute_names("#s", SEQ)
                    .expression_attribute_values(":after", n(after)),
                None => req.key_condition_expression("#p = :p"),
            };
            let out = req.send().await.map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            for item in out.items.unwrap_or_default() {
                let (seq, entry) = entry_of(&item)?;
                if entry.tenant == *tenant && query.matches(&entry) {
                    if page.entries.len() == limit {
                        // A match after a full page: the next page starts after the page's last
                        // position looked at.
                        page.next = last;
                        break 'requests;
                    }
                    page.entries.push((seq, entry));
                }
                looked += 1;
                last = Some(seq);
                if looked == budget {
                    page.next = last;
                    break 'requests;
                }
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
            items_per_request = items_per_request.saturating_mul(2);
        }
        Ok(page)
    }

    /// A keyset page of the `REJECT#{tenant}#{agent}` partition, strongly consistent: one
    /// `Query` with `sk >= row_sk(first_row_after(after))` and a small `Limit` (2 items, then
    /// twice as many per further request), stopping once `limit` + 1 rejections are found and
    /// the next item can only hold later ones. Positions are `keys::position_in_item`: the
    /// time-ordered ids reserved for the item's rejections (or, for items written by an earlier
    /// version, `row × 1,000 + place in the item`), so a page may start in the middle of an item,
    /// and items written at the same microsecond by two instances interleave: the page is
    /// merged in position order. Reads `limit` + 2 items and a few more where items interleave.
    async fn rejections_page(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<(u64, Rejection)>, Option<u64>), StoreError> {
        let what = format!("rejections of {agent} in tenant {tenant}");
        let limit = limit.max(1);
        let pk = rejections_pk(tenant, agent);
        let mut found: Vec<(u64, Rejection)> = Vec::new();
        let mut items_per_request = 2usize;
        let mut start = None;
        loop {
            // Every item holds at least one rejection; the first (the item of `after`) may hold
            // none after it.
            let wanted = (limit + 1).saturating_sub(found.len()).max(1);
            let first = usize::from(start.is_none());
            let items = items_per_request.min(wanted + first);
            let mut req = self
                .client
                .query()
                .table_name(&self.table)
                .expression_attribute_names("#pk", PK)
                .expression_attribute_values(":pk", s(pk.clone()))
                .consistent_read(true)
                .limit(i32::try_from(items).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start);
            req = match after {
                Some(after) => req
                    .key_condition_expression("#pk = :pk AND #sk >= :from")
                    .expression_attribute_names("#sk", SK)
                    .expression_attribute_values(
                        ":from",
                        s(row_sk(first_row_after(after, REJECTIONS_PER_ITEM))),
                    ),
                None => req.key_condition_expression("#pk = :pk"),
            };
            let out = req.send().await.map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            for item in out.items.unwrap_or_default() {
                let row = row_of(get_s(&item, SK, &what)?)
                    .map_err(|sk| StoreError::Corrupt(format!("{what}: sort key {sk}")))?;
                // Items come in order of their smallest position: once that is after the
                // (`limit` + 1)-th position found, no later item holds one before it.
                let smallest = position_in_item(row, 0).ok_or_else(|| {
                    StoreError::Corrupt(format!("{what}: row {row} has no position"))
                })?;
                if found.len() > limit {
                    found.sort_by_key(|(p, _)| *p);
                    found.truncate(limit + 1);
                    if found.last().is_some_and(|(p, _)| smallest > *p) {
                        return Ok(cut_page(found, limit));
                    }
                }
                let list: Vec<Rejection> = from_json(get_s(&item, REJECTIONS, &what)?, &what)?;
                for (i, r) in list.into_iter().enumerate() {
                    let position = position_in_item(row, i).ok_or_else(|| {
                        StoreError::Corrupt(format!("{what}: row {row} place {i} has no position"))
                    })?;
                    if after.is_some_and(|a| position <= a) {
                        continue;
                    }
                    found.push((position, r));
                }
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                found.sort_by_key(|(p, _)| *p);
                found.truncate(limit + 1);
                return Ok(cut_page(found, limit));
            }
            items_per_request = items_per_request.saturating_mul(2);
        }
    }

    fn work_done(&self) -> Option<u64> {
        self.work.as_ref().map(|w| w.load(Ordering::Relaxed))
    }

    /// Deletes nothing and answers an empty report: DynamoDB deletes expired items itself,
    /// through the `expiresAt` TTL written with every item by the same rule
    /// ([`watcher_runtime::retention`]; docs/dynamodb.md, "Retention").
    async fn purge(&self, _before: Instant) -> Result<PurgeReport, StoreError> {
        Ok(PurgeReport::default())
    }
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
