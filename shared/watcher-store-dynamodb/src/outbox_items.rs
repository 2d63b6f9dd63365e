//! Lapse-task items: their conditional updates, reads through the outbox indexes, and the backfill
//! of the lapse indexes.

use super::*;
use crate::error::landed;

impl DynamoStore {
    /// Read-modify-write of one outbox item: `change` maps the stored entry to the one to write
    /// (`None`: nothing to write), written only if the item is still as read, else read again
    /// (at most [`OUTBOX_CAS_TRIES`] times). Answers the entry written.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when every try lost to another writer; backend or corrupt data.
    pub(crate) async fn update_outbox(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        change: impl Fn(&OutboxEntry) -> Option<OutboxEntry>,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        self.update_outbox_from(None, tenant, agent, message_id, change)
            .await
    }

    /// [`DynamoStore::update_outbox`], whose first try, with `read` (the entry as the caller
    /// read or wrote it), skips the read: `change(read)` is written on condition that the stored
    /// entry's JSON is `read`'s, in its shard ([`outbox_pk`]). When that condition fails (the
    /// entry changed since, or sits in the partition an earlier version wrote), or
    /// `change(read)` is `None`, the entry is read and the usual tries follow: the answer is the
    /// one [`DynamoStore::update_outbox`] gives, at one conditional write instead of a read and
    /// a write when nothing else wrote the entry.
    ///
    /// # Errors
    /// As [`DynamoStore::update_outbox`].
    pub(crate) async fn update_outbox_from(
        &self,
        read: Option<&OutboxEntry>,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        change: impl Fn(&OutboxEntry) -> Option<OutboxEntry>,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        // Writes lost to another writer so far.
        let mut lost = 0u32;
        if let Some(read) = read {
            if let Some(updated) = change(read) {
                let pk = outbox_pk(tenant, agent, message_id);
                if self.replace_outbox(&pk, &updated, &to_json(read)?).await? {
                    return Ok(Some(updated));
                }
                lost = 1;
            }
        }
        // Each try after a lost write waits first (the one retry policy: backoff with full
        // jitter, `watcher_runtime::retry`), so that writers of one lapse task that collided
        // do not collide again in step.
        let retry = self.retry(Backoff::CONFLICT);
        for _ in 0..OUTBOX_CAS_TRIES {
            if lost > 0 {
                retry.pause(lost).await;
            }
            let Some((pk, item)) = self.find_outbox(tenant, agent, message_id).await? else {
                return Ok(None);
            };
            let (_, stored) = entry_of(&item)?;
            let Some(updated) = change(&stored) else {
                return Ok(None);
            };
            if self
                .replace_outbox(&pk, &updated, get_s(&item, ENTRY, "outbox entry")?)
                .await?
            {
                return Ok(Some(updated));
            }
            lost += 1;
        }
        Err(StoreError::Conflict(format!(
            "outbox entry {message_id:?} of agent {:?} (changed {OUTBOX_CAS_TRIES} times while being written)",
            agent.as_str()
        )))
    }

    /// The stored outbox item of (tenant, agent, messageId) with its partition key: a consistent
    /// read of its shard ([`outbox_pk`]), and, when that misses, of the one partition an
    /// earlier version wrote ([`legacy_outbox_pk`]).
    pub(crate) async fn find_outbox(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
    ) -> Result<Option<(String, Item)>, StoreError> {
        let sk = outbox_sk(agent, message_id);
        for pk in [
            outbox_pk(tenant, agent, message_id),
            legacy_outbox_pk(tenant),
        ] {
            if let Some(item) = self.get(pk.clone(), &sk).await? {
                return Ok(Some((pk, item)));
            }
        }
        Ok(None)
    }

    /// Writes `entry` over the stored outbox item with its identity in partition `pk` (where
    /// [`DynamoStore::find_outbox`] found it) if that item's entry is still `expected` (its
    /// JSON as read): `Ok(false)` when it changed meanwhile or is gone. Sets the attributes the
    /// outbox indexes read; a sent entry is never changed back.
    pub(crate) async fn replace_outbox(
        &self,
        pk: &str,
        entry: &OutboxEntry,
        expected: &str,
    ) -> Result<bool, StoreError> {
        // `lapsesTenant` and `lapsesAgent` never change, and are set again here so that an
        // entry written before the `lapses-*` indexes existed enters them, and one an earlier
        // version wrote to the one unsharded partition moves to its shard, at its next update.
        let mut set = vec![
            "#e = :e",
            "#d = :d",
            "#n = :n",
            "#ad = :ad",
            "#lt = :lt",
            "#la = :la",
        ];
        let mut remove = Vec::new();
        let mut req = with_lapse_page_keys(self.client.update_item(), entry)
            .table_name(&self.table)
            .key(PK, s(pk))
            .key(SK, s(outbox_sk(&entry.agent, &entry.message_id)))
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#e", ENTRY)
            .expression_attribute_names("#d", DELIVERY)
            .expression_attribute_names("#n", NEXT_ATTEMPT)
            .expression_attribute_names("#ad", AGENT_DELIVERY)
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
        // `queued` keyed the `outbox-due` index of earlier versions, which nothing reads: an
        // entry's update removes it (no index holds it now; an item of before loses it here).
        remove.push("#q");
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
        match follow_keys(entry) {
            Some((partition, at)) => {
                set.push("#fa = :fa");
                set.push("#ft = :ft");
                req = req
                    .expression_attribute_values(":fa", s(partition))
                    .expression_attribute_values(":ft", s(at));
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
            "attribute_exists(#pk) AND #e = :old".to_owned()
        } else {
            req = req.expression_attribute_values(":sent", s(DeliveryState::Sent.as_str()));
            "attribute_exists(#pk) AND #e = :old AND #d <> :sent".to_owned()
        };
        self.count(1u64);
        landed(
            req.update_expression(update)
                .condition_expression(condition)
                .send()
                .await,
        )
    }

    /// Up to `limit` outbox entries found through `index` where `partition` (attribute, value)
    /// and `sort` (attribute) is at or before `until` (an instant key, or `~` for no bound), in
    /// index order, each re-read from the table (the index is eventually consistent; the caller
    /// filters what no longer matches). Entries gone meanwhile are left out. Reads one index page
    /// per 1,000 keys and one item per entry: the cost follows `limit`, not the outbox.
    pub(crate) async fn outbox_through_index(
        &self,
        index: &str,
        partition: (&str, String),
        sort: &str,
        until: String,
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEntry)>, StoreError> {
        let what = format!("{index} index entry");
        let mut keys: Vec<(String, String)> = self
            .query_at_least(
                limit,
                || self.index_until(index, partition.clone(), sort, until.clone(), limit),
                |item| {
                    Ok((
                        get_s(&item, PK, &what)?.to_owned(),
                        get_s(&item, SK, &what)?.to_owned(),
                    ))
                },
            )
            .await?;
        keys.truncate(limit);
        // One BatchGetItem per hundred entries, not a GetItem each: a lane's read of 32 due
        // lapse tasks is two requests, not 33.
        let mut items = self.get_whole_batch(keys.clone()).await?;
        let mut entries = Vec::with_capacity(keys.len());
        for key in keys {
            if let Some(item) = items.remove(&key) {
                entries.push(entry_of(&item)?);
            }
        }
        Ok(entries)
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
                "~".to_owned(),
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
            let scan = self
                .kind_scan(
                    "outbox",
                    " AND attribute_not_exists(#lt)",
                    "#pk, #sk, #e, #seq",
                )
                .expression_attribute_names("#lt", LAPSES_TENANT)
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_names("#e", ENTRY)
                .expression_attribute_names("#seq", SEQ)
                .set_exclusive_start_key(start);
            let page = self.scan_page(scan).await?;
            for item in page.items {
                let (_, entry) = entry_of(&item)?;
                let what = "outbox entry";
                let update = with_lapse_page_keys(self.client.update_item(), &entry)
                    .table_name(&self.table)
                    .key(PK, s(get_s(&item, PK, what)?))
                    .key(SK, s(get_s(&item, SK, what)?))
                    .update_expression("SET #lt = :lt, #la = :la")
                    .condition_expression("attribute_exists(#pk)")
                    .expression_attribute_names("#pk", PK);
                self.count(1u64);
                // Not landed: deleted meanwhile (expired), nothing to index.
                if landed(update.send().await)? {
                    updated += 1;
                }
            }
            start = page.next;
            if start.is_none() {
                return Ok(updated);
            }
        }
    }

    pub(crate) fn outbox_write(&self, entry: &OutboxEntry, seq: u64) -> Result<Write, StoreError> {
        let mut item: Item = HashMap::new();
        let pk = outbox_pk(&entry.tenant, &entry.agent, &entry.message_id);
        item.insert(PK.into(), s(pk));
        item.insert(SK.into(), s(outbox_sk(&entry.agent, &entry.message_id)));
        item.insert(KIND.into(), s("outbox"));
        item.insert(TENANT.into(), s(entry.tenant.as_str()));
        item.insert(ENTRY.into(), s(to_json(entry)?));
        item.insert(SEQ.into(), n(seq));
        // The keys of the `lapses-tenant` and `lapses-agent` indexes (sorted by `seq`), each
        // in the lapse task's shard.
        item.insert(
            LAPSES_TENANT.into(),
            s(lapses_tenant_shard(
                &entry.tenant,
                &entry.agent,
                &entry.message_id,
            )),
        );
        item.insert(
            LAPSES_AGENT.into(),
            s(lapses_agent_shard(
                &entry.tenant,
                &entry.agent,
                &entry.message_id,
            )),
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
        if let Some(task_id) = &entry.task_id {
            item.insert(
                TASK_KEY.into(),
                s(outbox_task(&entry.tenant, &entry.agent, task_id)),
            );
        }
        if let Some((partition, at)) = follow_keys(entry) {
            item.insert(FOLLOW_AGENT.into(), s(partition));
            item.insert(FOLLOW_AT.into(), s(at));
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
            .map_err(error::backend)?;
        Ok(Write {
            op: TransactWriteItem::builder().put(put).build(),
            what,
            bytes,
        })
    }
}

/// `req` with `#lt`/`:lt` and `#la`/`:la` bound to the lapse-page index keys of `entry`
/// (`lapsesTenant`, `lapsesAgent`, each in the lapse task's shard), for an update that sets them.
fn with_lapse_page_keys(
    req: aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder,
    entry: &OutboxEntry,
) -> aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder {
    req.expression_attribute_names("#lt", LAPSES_TENANT)
        .expression_attribute_names("#la", LAPSES_AGENT)
        .expression_attribute_values(
            ":lt",
            s(lapses_tenant_shard(
                &entry.tenant,
                &entry.agent,
                &entry.message_id,
            )),
        )
        .expression_attribute_values(
            ":la",
            s(lapses_agent_shard(
                &entry.tenant,
                &entry.agent,
                &entry.message_id,
            )),
        )
}
