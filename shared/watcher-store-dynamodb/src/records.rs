//! [`Records`](watcher_runtime::store::Records) on DynamoDB: the record: subjects and tasks loaded and committed by compare-and-set, and the input numbers ([`watcher_runtime::store::Records`]).

use super::*;
use watcher_runtime::store::Records;

#[async_trait]
impl Records for DynamoStore {
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
        // 1. What each subject contributed to the indexes at its stored version, and 2. which
        //    new outbox entries are stored already: one batch read of the subjects' versions
        //    and the entries' keys (`get_projected_batch`). A version that moved already is a
        //    conflict without writing anything.
        let mut seen = BTreeSet::new();
        let candidates: Vec<&OutboxEntry> = commit
            .outbox
            .iter()
            .filter(|o| seen.insert((o.tenant.clone(), o.agent.clone(), o.message_id.clone())))
            .collect();
        // An entry's shard, and (a lapse task an earlier version kept) the tenant's one former
        // partition: a lapse task stored there is not queued twice.
        let outbox_keys: Vec<[(String, String); 2]> = candidates
            .iter()
            .map(|o| {
                let sk = outbox_sk(&o.agent, &o.message_id);
                [
                    (outbox_pk(&o.tenant, &o.agent, &o.message_id), sk.clone()),
                    (legacy_outbox_pk(&o.tenant), sk),
                ]
            })
            .collect();
        let subject_keys: Vec<(String, String)> = commit
            .subjects
            .iter()
            .map(|state| (subject_pk(tenant, &state.subject), ITEM.to_string()))
            .collect();
        let found = self
            .get_projected_batch(
                subject_keys
                    .iter()
                    .cloned()
                    .chain(outbox_keys.iter().flatten().cloned())
                    .collect(),
                &[VERSION, INDEXED],
            )
            .await?;
        let stored: Vec<Indexed> = commit
            .subjects
            .iter()
            .zip(&subject_keys)
            .map(|(state, key)| {
                let what = format!("subject {} of tenant {tenant}", state.subject);
                let (version, indexed) = match found.get(key) {
                    None => (0, Indexed::default()),
                    Some(item) => (
                        get_u64(item, VERSION, &what)?,
                        from_json(get_s(item, INDEXED, &what)?, &what)?,
                    ),
                };
                if version != state.version {
                    return Err(StoreError::Conflict(what));
                }
                Ok(indexed)
            })
            .collect::<Result<_, StoreError>>()?;
        let new_outbox: Vec<&OutboxEntry> = candidates
            .into_iter()
            .zip(&outbox_keys)
            .filter_map(|(o, keys)| (!keys.iter().any(|k| found.contains_key(k))).then_some(o))
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
            let scan = self
                .kind_scan("subject", "", "#s")
                .expression_attribute_names("#s", STATE)
                .consistent_read(true)
                .set_exclusive_start_key(start);
            let page = self.scan_page(scan).await?;
            for item in page.items {
                let state: SubjectState = from_json(get_s(&item, STATE, "subject")?, "subject")?;
                all.extend(state.records);
            }
            start = page.next;
            if start.is_none() {
                break;
            }
        }
        all.sort_by_key(|r| r.order);
        Ok(all)
    }
}
