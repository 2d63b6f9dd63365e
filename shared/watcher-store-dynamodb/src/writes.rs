//! The puts a commit is made of: subjects with their index items, tasks, lapse tasks, rejections;
//! each conditional on the version loaded.

use super::*;

impl DynamoStore {
    /// The subject put of a commit and the index rows it changes.
    ///
    /// Adds to `live_deltas` how many live rows (rows with a `liveUntil`) each agent gains or
    /// loses, for the counters written in the same transaction.
    pub(crate) fn subject_writes(
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
        let mut writes = vec![self.versioned_write(item, state.version, what)?];

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

    pub(crate) fn task_write(
        &self,
        tenant: &Tenant,
        task: &TaskRecord,
    ) -> Result<Write, StoreError> {
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
        self.versioned_write(item, task.version, what)
    }

    pub(crate) fn rejections_write(
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

    /// A put of `item` (a subject or task, named `what`) conditional on the stored version
    /// being `loaded` (not existing, for 0).
    ///
    /// # Errors
    /// [`DynamoStoreError::ItemTooLarge`] (as the backend's) when `item` is over
    /// [`MAX_ITEM_BYTES`].
    pub(crate) fn versioned_write(
        &self,
        item: Item,
        loaded: u64,
        what: String,
    ) -> Result<Write, StoreError> {
        let bytes = item_size(&item);
        if bytes > MAX_ITEM_BYTES {
            return Err(StoreError::backend(DynamoStoreError::ItemTooLarge {
                what,
                bytes,
            }));
        }
        let put = Put::builder().table_name(&self.table).set_item(Some(item));
        let put = if loaded == 0 {
            put.condition_expression("attribute_not_exists(#pk)")
                .expression_attribute_names("#pk", PK)
        } else {
            put.condition_expression("#v = :v")
                .expression_attribute_names("#v", VERSION)
                .expression_attribute_values(":v", n(loaded))
        };
        let put = put.build().map_err(error::backend)?;
        Ok(Write {
            op: TransactWriteItem::builder().put(put).build(),
            what,
            bytes,
        })
    }

    /// An unconditional put (index rows and rejections: rewriting them is harmless).
    pub(crate) fn plain_put(&self, item: Item, what: String) -> Result<Write, StoreError> {
        let bytes = item_size(&item);
        let put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item))
            .build()
            .map_err(error::backend)?;
        Ok(Write {
            op: TransactWriteItem::builder().put(put).build(),
            what,
            bytes,
        })
    }
}
