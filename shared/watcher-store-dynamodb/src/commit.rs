//! A commit on DynamoDB: one `TransactWriteItems` of the subjects' and tasks' versioned puts,
//! the index rows they add or change, the new lapse tasks, the rejections and the live-row
//! counter deltas. Everything lands or nothing does.
//!
//! No read on the way for a commit that queues no lapse task:
//! - what each subject's stored version contributed to the index rows comes from the load the
//!   commit follows (`loaded.rs`); only a subject no load of this process saw at this version is
//!   read (one `BatchGetItem` for all such subjects);
//! - a lapse task already stored in its shard is found by the transaction itself: its put is
//!   conditional on the item not existing, and when only such conditions fail, those lapse
//!   tasks are stored already: the transaction is sent again without them (a lapse task is never
//!   queued twice), at most once per lapse task of the commit. The one partition an earlier
//!   version wrote lapse tasks to ([`legacy_outbox_pk`]) is read for a commit that queues lapse
//!   tasks (one `BatchGetItem`), since a check inside the transaction would be a write to it by
//!   every lapse of the tenant.
//!
//! A commit that resolves lapse tasks (`Commit::resolutions`, expectations-v1 §13.1) reads
//! them first (one consistent `BatchGetItem` of their shards and of the earlier partition) and
//! updates each in the transaction on the condition that its entry is still as read: the step
//! and its resolutions land together or not at all. A lapse task changed meanwhile (its
//! submitter recording an attempt) cancels the transaction: a conflict, and the step is tried
//! again as for any other. Each such update is one more item of the transaction's 100; a
//! resolution of a lapse task the commit itself queues is set on that put, and one of a lapse
//! task not stored is skipped, at no item.

use super::*;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;

/// What one item of the transaction is, for reading its cancellation reason.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    /// A subject or task put, an index row, rejections, a counter delta, a stored lapse
    /// task's resolution (its failed condition is a conflict like a version's).
    Record,
    /// The put of new lapse task `i` of the commit.
    LapseTask(usize),
}

impl DynamoStore {
    /// [`Records::commit`](watcher_runtime::store::Records::commit) on DynamoDB (see the
    /// module's documentation).
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when a version moved since the load, or another transaction
    /// held one of the items; [`DynamoStoreError::ItemTooLarge`] and
    /// [`DynamoStoreError::TransactionTooLarge`] (as the backend's) before anything is sent;
    /// other backend errors.
    pub(crate) async fn commit_transaction(
        &self,
        tenant: &Tenant,
        commit: Commit,
    ) -> Result<(), StoreError> {
        let stored = self.stored_indexes(tenant, &commit.subjects).await?;

        // 1. The records' writes, the same on every try.
        let mut records: Vec<Write> = Vec::new();
        let mut live_deltas: BTreeMap<AgentId, i64> = BTreeMap::new();
        for (state, stored) in commit.subjects.iter().zip(&stored) {
            records.extend(self.subject_writes(tenant, state, stored, &mut live_deltas)?);
        }
        live_deltas.retain(|_, d| *d != 0);
        for task in &commit.tasks {
            records.push(self.task_write(tenant, task)?);
        }

        // 2. The new lapse tasks (one per (tenant, agent, messageId)) and the rejections,
        //    grouped per agent (oldest first within each) and chunked.
        let mut seen = BTreeSet::new();
        let mut lapse_tasks: Vec<OutboxEntry> = commit
            .outbox
            .iter()
            .filter(|o| seen.insert((o.tenant.clone(), o.agent.clone(), o.message_id.clone())))
            .cloned()
            .collect();
        let mut per_agent: BTreeMap<&AgentId, Vec<&Rejection>> = BTreeMap::new();
        for r in &commit.rejections {
            per_agent.entry(&r.agent).or_default().push(r);
        }
        let chunks: Vec<(&AgentId, &[&Rejection])> = per_agent
            .iter()
            .flat_map(|(agent, list)| list.chunks(REJECTIONS_PER_ITEM).map(move |c| (*agent, c)))
            .collect();

        // Refused before anything is sent when they cannot be one transaction (again below,
        // with the resolutions' updates, once they are known).
        let items = records.len() + lapse_tasks.len() + chunks.len() + live_deltas.len();
        if items == 0 && commit.resolutions.is_empty() {
            return Ok(());
        }
        if items > MAX_TRANSACTION_ITEMS {
            return Err(StoreError::backend(DynamoStoreError::TransactionTooLarge {
                items,
                bytes: records.iter().map(|w| w.bytes).sum(),
            }));
        }
        // The one partition an earlier version wrote a tenant's lapse tasks to is read (one
        // `BatchGetItem` of their keys), not checked in the transaction: a `ConditionCheck` is
        // billed as a write to the partition it checks, and every lapse task of the tenant
        // would write that one partition (docs/dynamodb.md "Commit").
        let mut stored_already = vec![false; lapse_tasks.len()];
        if !lapse_tasks.is_empty() {
            let keys: Vec<(String, String)> = lapse_tasks
                .iter()
                .map(|o| {
                    (
                        legacy_outbox_pk(&o.tenant),
                        outbox_sk(&o.agent, &o.message_id),
                    )
                })
                .collect();
            // Eventually consistent: nothing writes new items there any more (this version
            // only updates in place the lapse tasks it holds), so a replica that lags answers
            // the same keys a consistent read would, for half the read units; the tenant's
            // lapse commits all read this one partition (docs/dynamodb.md "Partitions and
            // their ceilings").
            let found = self
                .get_projected_batch_eventually(keys.clone(), &[])
                .await?;
            for (i, key) in keys.iter().enumerate() {
                stored_already[i] = found.contains_key(key);
            }
        }

        // The resolutions, in the same transaction: an update of each stored lapse task they
        // resolve, conditional on its entry as read; a lapse task this commit queues takes
        // its resolution in its put (`merged`: one item appears once in a transaction).
        let mut merged = vec![false; lapse_tasks.len()];
        let resolutions = self
            .resolution_writes(
                tenant,
                &commit.resolutions,
                &mut lapse_tasks,
                &mut stored_already,
                &mut merged,
            )
            .await?;
        records.extend(resolutions);
        let items = records.len()
            + stored_already.iter().filter(|stored| !**stored).count()
            + chunks.len()
            + live_deltas.len();
        if items == 0 {
            return Ok(());
        }
        if items > MAX_TRANSACTION_ITEMS {
            return Err(StoreError::backend(DynamoStoreError::TransactionTooLarge {
                items,
                bytes: records.iter().map(|w| w.bytes).sum(),
            }));
        }

        // The live-row deltas go to one shard of each agent's counter, the shard of the
        // commit's first subject: commits of one agent on subjects of different shards do not
        // touch the same item (no `TransactionConflict` between them), and the count is the sum
        // of the shards (docs/dynamodb.md "Items").
        let shard = commit.subjects.first().map_or(0, |s| {
            shard_of(&subject_pk(tenant, &s.subject), LIVE_COUNT_SHARDS)
        });
        let mut counters: Vec<(TransactWriteItem, String)> = Vec::new();
        for (agent, delta) in &live_deltas {
            counters.push((
                self.live_count_update(tenant, agent, shard, *delta)?,
                format!("live-row counter of agent {agent} (shard {shard})"),
            ));
        }

        // 3. The transaction; again without the lapse tasks found stored, until it lands.
        loop {
            // The SDK takes the items it sends, so a try that may be followed by another (one
            // that puts lapse tasks) sends copies; the last possible try (no lapse task left to
            // put: most pushes and facts) sends the records themselves, uncopied.
            let may_retry = stored_already.iter().any(|stored| !stored);
            let mut bytes: usize = records.iter().map(|w| w.bytes).sum();
            let mut parts: Vec<(TransactWriteItem, String, Part)> = if may_retry {
                records
                    .iter()
                    .map(|w| (w.op.clone(), w.what.clone(), Part::Record))
                    .collect()
            } else {
                std::mem::take(&mut records)
                    .into_iter()
                    .map(|w| (w.op, w.what, Part::Record))
                    .collect()
            };
            // Row ids are time-ordered ids, taken with no write (docs/dynamodb.md "Items"): a
            // lapse task's id orders `GET /v1/lapses` (the `lapses-*` indexes); a
            // rejections item reserves one id per rejection, the first its sort key.
            for (i, o) in lapse_tasks.iter().enumerate() {
                if stored_already[i] {
                    continue;
                }
                let put = self.outbox_write(o, self.ids.next())?;
                bytes += put.bytes;
                parts.push((put.op, put.what, Part::LapseTask(i)));
            }
            for (agent, chunk) in &chunks {
                let first = self.ids.next_block(chunk.len() as u64);
                let w = self.rejections_write(tenant, agent, chunk, first)?;
                bytes += w.bytes;
                parts.push((w.op, w.what, Part::Record));
            }
            if bytes > MAX_TRANSACTION_BYTES {
                return Err(StoreError::backend(DynamoStoreError::TransactionTooLarge {
                    items,
                    bytes,
                }));
            }
            parts.extend(
                counters
                    .iter()
                    .map(|(op, what)| (op.clone(), what.clone(), Part::Record)),
            );
            if parts.is_empty() {
                return Ok(());
            }
            self.count(parts.len());
            let (ops, rest): (Vec<TransactWriteItem>, Vec<(String, Part)>) = parts
                .into_iter()
                .map(|(op, what, part)| (op, (what, part)))
                .unzip();
            let Err(e) = self
                .client
                .transact_write_items()
                .set_transact_items(Some(ops))
                .send()
                .await
            else {
                self.live_committed(tenant, &live_deltas);
                return Ok(());
            };
            let found = lapse_tasks_stored(&e, &rest);
            // A lapse task that took a resolution in its put, stored meanwhile by another
            // commit: the resolution is for that stored entry, which this commit did not read.
            // A conflict: the step is tried again and reads it.
            if let Some(i) = found.iter().copied().find(|i| merged[*i]) {
                return Err(StoreError::Conflict(format!(
                    "lapse task {} of agent {} of tenant {tenant}, resolved in the commit that \
                     queues it, was stored meanwhile",
                    lapse_tasks[i].message_id, lapse_tasks[i].agent
                )));
            }
            if found.is_empty() {
                return Err(error::transaction_error(e, |i| {
                    rest.get(i)
                        .map(|(what, _)| what.clone())
                        .unwrap_or_else(|| format!("write {i}"))
                }));
            }
            for i in found {
                stored_already[i] = true;
            }
        }
    }

    /// The transaction's writes of `resolutions` (`Commit::resolutions`, expectations-v1
    /// §13.1), each lapse task once (its first resolution in the list; a later one would
    /// change nothing, [`watcher_runtime::resolution::resolved`]): one consistent
    /// `BatchGetItem` of each lapse task's shard and of the partition an earlier version wrote,
    /// then
    /// - for a lapse task found: an `Update` of it ([`DynamoStore::outbox_replace_write`])
    ///   with the resolution set, conditional on its entry being the one read; none when it is
    ///   resolved already. If this commit also queues it (`lapse_tasks`), that put is left out
    ///   (`stored_already`): the stored entry stays, as a put that found it would leave it;
    /// - for a lapse task not found that this commit queues: the resolution set on the entry
    ///   it puts (`merged`);
    /// - otherwise nothing: a lapse task not stored is skipped.
    ///
    /// # Errors
    /// Backend errors of the read; an entry that does not parse.
    async fn resolution_writes(
        &self,
        tenant: &Tenant,
        resolutions: &[watcher_runtime::resolution::Resolved],
        lapse_tasks: &mut [OutboxEntry],
        stored_already: &mut [bool],
        merged: &mut [bool],
    ) -> Result<Vec<Write>, StoreError> {
        if resolutions.is_empty() {
            return Ok(Vec::new());
        }
        let mut seen = BTreeSet::new();
        let unique: Vec<&watcher_runtime::resolution::Resolved> = resolutions
            .iter()
            .filter(|r| seen.insert((r.agent.clone(), r.message_id.clone())))
            .collect();
        let places = |r: &watcher_runtime::resolution::Resolved| {
            let sk = outbox_sk(&r.agent, &r.message_id);
            [
                (outbox_pk(tenant, &r.agent, &r.message_id), sk.clone()),
                (legacy_outbox_pk(tenant), sk),
            ]
        };
        let keys: Vec<(String, String)> = unique.iter().flat_map(|r| places(r)).collect();
        let found = self.get_whole_batch(keys).await?;
        let mut writes = Vec::new();
        for r in unique {
            let queued = lapse_tasks.iter().position(|o| {
                o.tenant == *tenant && o.agent == r.agent && o.message_id == r.message_id
            });
            let stored = places(r)
                .into_iter()
                .find_map(|key| found.get(&key).map(|item| (key.0, item)));
            match (stored, queued) {
                (Some((pk, item)), queued) => {
                    if let Some(i) = queued {
                        stored_already[i] = true;
                    }
                    let (_, entry) = entry_of(item)?;
                    let Some(resolved) =
                        watcher_runtime::resolution::resolved(&entry, &r.resolution)
                    else {
                        continue;
                    };
                    let what = format!(
                        "resolution of lapse task {} of agent {} of tenant {tenant}",
                        r.message_id, r.agent
                    );
                    let read = get_s(item, ENTRY, "outbox entry")?;
                    writes.push(self.outbox_replace_write(&pk, &resolved, read, what)?);
                }
                (None, Some(i)) if !stored_already[i] => {
                    if let Some(resolved) =
                        watcher_runtime::resolution::resolved(&lapse_tasks[i], &r.resolution)
                    {
                        lapse_tasks[i] = resolved;
                        merged[i] = true;
                    }
                }
                // Not stored, and not queued by this commit (or found in the earlier
                // partition by the read above): nothing to resolve.
                _ => {}
            }
        }
        Ok(writes)
    }

    /// What each of `subjects` contributed to the index rows at the version it was loaded at:
    /// from the loads of this process where they saw that version, otherwise read (one
    /// `BatchGetItem` of the versions and `indexed` attributes of the others).
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when a subject read is no longer at the version loaded;
    /// [`StoreError::Corrupt`] for an `indexed` attribute that does not parse; backend errors.
    async fn stored_indexes(
        &self,
        tenant: &Tenant,
        subjects: &[SubjectState],
    ) -> Result<Vec<Indexed>, StoreError> {
        let mut known: Vec<Option<Indexed>> = Vec::with_capacity(subjects.len());
        for state in subjects {
            let what = format!("subject {} of tenant {tenant}", state.subject);
            let pk = subject_pk(tenant, &state.subject);
            known.push(match self.loaded.take(&pk, state.version) {
                Some(None) => Some(Indexed::default()),
                Some(Some(text)) => Some(from_json(&text, &what)?),
                None => None,
            });
        }
        let missing: Vec<(String, String)> = subjects
            .iter()
            .zip(&known)
            .filter(|(_, k)| k.is_none())
            .map(|(state, _)| (subject_pk(tenant, &state.subject), ITEM.to_owned()))
            .collect();
        if missing.is_empty() {
            return Ok(known.into_iter().flatten().collect());
        }
        let found = self
            .get_projected_batch(missing, &[VERSION, INDEXED])
            .await?;
        subjects
            .iter()
            .zip(known)
            .map(|(state, known)| {
                if let Some(indexed) = known {
                    return Ok(indexed);
                }
                let what = format!("subject {} of tenant {tenant}", state.subject);
                let key = (subject_pk(tenant, &state.subject), ITEM.to_owned());
                let (version, indexed) = match found.get(&key) {
                    None => (0, Indexed::default()),
                    Some(item) => (
                        get_u64(item, VERSION, &what)?,
                        from_json(get_s(item, INDEXED, &what)?, &what)?,
                    ),
                };
                // A version that moved already is a conflict without writing anything.
                if version != state.version {
                    return Err(StoreError::Conflict(what));
                }
                Ok(indexed)
            })
            .collect()
    }
}

/// The lapse tasks (indexes into the commit's new ones) a canceled transaction found stored:
/// non-empty only when every item that failed is a lapse task's put or check and failed its
/// condition. Any other failure (a version moved, a `TransactionConflict`, throttling) answers
/// none, and the error stands.
fn lapse_tasks_stored<R>(
    e: &aws_sdk_dynamodb::error::SdkError<TransactWriteItemsError, R>,
    parts: &[(String, Part)],
) -> BTreeSet<usize> {
    let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) = e.as_service_error()
    else {
        return BTreeSet::new();
    };
    let mut found = BTreeSet::new();
    for (i, reason) in cancel.cancellation_reasons().iter().enumerate() {
        match (reason.code(), parts.get(i).map(|(_, part)| *part)) {
            (None | Some("None"), _) => {}
            (Some("ConditionalCheckFailed"), Some(Part::LapseTask(k))) => {
                found.insert(k);
            }
            _ => return BTreeSet::new(),
        }
    }
    found
}
