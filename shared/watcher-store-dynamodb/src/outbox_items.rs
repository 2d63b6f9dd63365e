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
    /// outbox indexes read ([`DynamoStore::outbox_update_of`]); a sent entry is never changed
    /// back.
    pub(crate) async fn replace_outbox(
        &self,
        pk: &str,
        entry: &OutboxEntry,
        expected: &str,
    ) -> Result<bool, StoreError> {
        let update = self.outbox_update_of(pk, entry, expected)?;
        self.count(1u64);
        landed(
            self.client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(update.key))
                .update_expression(update.expression)
                .condition_expression(update.condition)
                .set_expression_attribute_names(Some(update.names))
                .set_expression_attribute_values(Some(update.values))
                .send()
                .await,
        )
    }

    /// [`DynamoStore::replace_outbox`] as one item of a commit's `TransactWriteItems`: the
    /// resolution of a lapse task stored already (`Commit::resolutions`), written with the
    /// step on the same condition (the entry is still `expected`, as the commit read it). A
    /// failed condition cancels the whole transaction: a conflict, and the step is tried again.
    pub(crate) fn outbox_replace_write(
        &self,
        pk: &str,
        entry: &OutboxEntry,
        expected: &str,
        what: String,
    ) -> Result<Write, StoreError> {
        let update = self.outbox_update_of(pk, entry, expected)?;
        let bytes = item_size(&update.key) + item_size(&update.values);
        let op = Update::builder()
            .table_name(&self.table)
            .set_key(Some(update.key))
            .update_expression(update.expression)
            .condition_expression(update.condition)
            .set_expression_attribute_names(Some(update.names))
            .set_expression_attribute_values(Some(update.values))
            .build()
            .map_err(error::backend)?;
        Ok(Write {
            op: TransactWriteItem::builder().update(op).build(),
            what,
            bytes,
        })
    }

    /// The `UpdateItem` of [`DynamoStore::replace_outbox`]: `entry`'s JSON and every attribute
    /// the outbox indexes read from it (`delivery`, `nextAttempt`, `agentDelivery`,
    /// `lapsesTenant`/`lapsesAgent`, `taskKey`, `followAgent`/`followAt`,
    /// `incidentAgent`/`incidentAt`, `expiresAt`), set or removed, on the condition that the item
    /// exists, its `entry` is `expected`, and, unless `entry` is sent, it is not sent.
    pub(crate) fn outbox_update_of(
        &self,
        pk: &str,
        entry: &OutboxEntry,
        expected: &str,
    ) -> Result<OutboxUpdate, StoreError> {
        let mut names: HashMap<String, String> = HashMap::new();
        let mut values: Item = HashMap::new();
        let mut name = |n: &str, attribute: &str| {
            names.insert(n.to_owned(), attribute.to_owned());
        };
        for (n, attribute) in [
            ("#pk", PK),
            ("#e", ENTRY),
            ("#d", DELIVERY),
            ("#n", NEXT_ATTEMPT),
            ("#ad", AGENT_DELIVERY),
            ("#lt", LAPSES_TENANT),
            ("#la", LAPSES_AGENT),
            ("#ia", INCIDENT_AGENT),
            ("#it", INCIDENT_AT),
            ("#q", QUEUED),
            ("#x", EXPIRES_AT),
            ("#tk", TASK_KEY),
            ("#fa", FOLLOW_AGENT),
            ("#ft", FOLLOW_AT),
        ] {
            name(n, attribute);
        }
        // `lapsesTenant` and `lapsesAgent` never change, and are set again here so that an
        // entry written before the `lapses-*` indexes existed enters them, and one an earlier
        // version wrote to the one unsharded partition moves to its shard, at its next update;
        // `incidentAgent`/`incidentAt` likewise enter an entry written before `outbox-incident`.
        let mut set = vec![
            "#e = :e",
            "#d = :d",
            "#n = :n",
            "#ad = :ad",
            "#lt = :lt",
            "#la = :la",
            "#ia = :ia",
            "#it = :it",
        ];
        let (incident_agent, incident_at) = incident_keys(entry);
        for (v, value) in [
            (":e", s(to_json(entry)?)),
            (":d", s(entry.delivery.as_str())),
            (":n", s(instant_key(entry.next_attempt_at))),
            (
                ":ad",
                s(agent_delivery(
                    &entry.tenant,
                    &entry.agent,
                    entry.delivery.as_str(),
                )),
            ),
            (
                ":lt",
                s(lapses_tenant_shard(
                    &entry.tenant,
                    &entry.agent,
                    &entry.message_id,
                )),
            ),
            (
                ":la",
                s(lapses_agent_shard(
                    &entry.tenant,
                    &entry.agent,
                    &entry.message_id,
                )),
            ),
            (":ia", s(incident_agent)),
            (":it", s(incident_at)),
            (":old", s(expected)),
        ] {
            values.insert(v.to_owned(), value);
        }
        // `queued` keyed the `outbox-due` index of earlier versions, which nothing reads: an
        // entry's update removes it (no index holds it now; an item of before loses it here).
        let mut remove = vec!["#q"];
        match &entry.task_id {
            Some(task_id) => {
                set.push("#tk = :tk");
                values.insert(
                    ":tk".into(),
                    s(outbox_task(&entry.tenant, &entry.agent, task_id)),
                );
            }
            None => remove.push("#tk"),
        }
        match follow_keys(entry) {
            Some((partition, at)) => {
                set.push("#fa = :fa");
                set.push("#ft = :ft");
                values.insert(":fa".into(), s(partition));
                values.insert(":ft".into(), s(at));
            }
            None => {
                remove.push("#fa");
                remove.push("#ft");
            }
        }
        match outbox_expiry(entry, self.retention_days) {
            Some(at) => {
                set.push("#x = :x");
                values.insert(":x".into(), n(at));
            }
            None => remove.push("#x"),
        }
        let expression = format!("SET {} REMOVE {}", set.join(", "), remove.join(", "));
        // Never inserts; a sent entry is never changed back; compare-and-set on the entry read.
        let condition = if entry.delivery == DeliveryState::Sent {
            "attribute_exists(#pk) AND #e = :old".to_owned()
        } else {
            values.insert(":sent".into(), s(DeliveryState::Sent.as_str()));
            "attribute_exists(#pk) AND #e = :old AND #d <> :sent".to_owned()
        };
        let key = HashMap::from([
            (PK.to_owned(), s(pk)),
            (SK.to_owned(), s(outbox_sk(&entry.agent, &entry.message_id))),
        ]);
        Ok(OutboxUpdate {
            key,
            expression,
            condition,
            names,
            values,
        })
    }

    /// Up to `limit` outbox entries found through `index` where `partition` (attribute, value)
    /// and `sort` (attribute) is at or after `from` (an instant key, or `None` for no bound;
    /// at most `until`) and at or before `until` (an instant key, or `~` for no bound), in
    /// index order, each re-read from the table (the index is eventually consistent; the caller
    /// filters what no longer matches). Entries gone meanwhile are left out. Reads one index page
    /// per 1,000 keys and one item per entry: the cost follows `limit`, not the outbox.
    pub(crate) async fn outbox_through_index(
        &self,
        index: &str,
        partition: (&str, String),
        sort: &str,
        (from, until): (Option<String>, String),
        limit: usize,
    ) -> Result<Vec<(u64, OutboxEntry)>, StoreError> {
        let what = format!("{index} index entry");
        let mut keys: Vec<(String, String)> = self
            .query_at_least(
                limit,
                || {
                    let bounds = (from.clone(), until.clone());
                    self.index_range(index, partition.clone(), sort, bounds, limit)
                },
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
                (None, "~".to_owned()),
                1,
            )
            .await?;
        Ok(found.into_iter().map(|(_, e)| e).find(|e| {
            e.tenant == *tenant && e.agent == *agent && e.task_id.as_deref() == Some(task_id)
        }))
    }

    /// Writes the `lapses-tenant` and `lapses-agent` keys (`lapsesTenant`, `lapsesAgent`) and
    /// the `outbox-incident` keys (`incidentAgent`, `incidentAt`, `keys::incident_keys` of the
    /// entry as read) on every lapse task that lacks one of them (written before those indexes
    /// existed), so that `GET /v1/lapses` pages and the open and resolved lanes find them;
    /// answers how many it updated. A one-off after the upgrade (docs/dynamodb.md,
    /// "Upgrading"), never on a request path: it scans the whole table. Safe to run again and
    /// while the watcher runs: the lapse-page keys never change, the incident keys are written
    /// only if the `entry` is still the one read (an entry resolved meanwhile was given its
    /// keys by that write), and an entry deleted meanwhile is not written back.
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
                    " AND (attribute_not_exists(#lt) OR attribute_not_exists(#ia))",
                    "#pk, #sk, #e, #seq",
                )
                .expression_attribute_names("#lt", LAPSES_TENANT)
                .expression_attribute_names("#ia", INCIDENT_AGENT)
                .expression_attribute_names("#pk", PK)
                .expression_attribute_names("#sk", SK)
                .expression_attribute_names("#e", ENTRY)
                .expression_attribute_names("#seq", SEQ)
                .set_exclusive_start_key(start);
            let page = self.scan_page(scan).await?;
            for item in page.items {
                let (_, entry) = entry_of(&item)?;
                let what = "outbox entry";
                let (incident_agent, incident_at) = incident_keys(&entry);
                let update = with_lapse_page_keys(self.client.update_item(), &entry)
                    .table_name(&self.table)
                    .key(PK, s(get_s(&item, PK, what)?))
                    .key(SK, s(get_s(&item, SK, what)?))
                    .update_expression("SET #lt = :lt, #la = :la, #ia = :ia, #it = :it")
                    .condition_expression("attribute_exists(#pk) AND #e = :old")
                    .expression_attribute_names("#pk", PK)
                    .expression_attribute_names("#e", ENTRY)
                    .expression_attribute_names("#ia", INCIDENT_AGENT)
                    .expression_attribute_names("#it", INCIDENT_AT)
                    .expression_attribute_values(":ia", s(incident_agent))
                    .expression_attribute_values(":it", s(incident_at))
                    .expression_attribute_values(":old", s(get_s(&item, ENTRY, what)?));
                self.count(1u64);
                // Not landed: deleted meanwhile (expired), nothing to index; or rewritten
                // meanwhile, by a write that set every index key.
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
        let (incident_agent, incident_at) = incident_keys(entry);
        item.insert(INCIDENT_AGENT.into(), s(incident_agent));
        item.insert(INCIDENT_AT.into(), s(incident_at));
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

/// One conditional update of an outbox item ([`DynamoStore::outbox_update_of`]): its key, update
/// and condition expressions, and the names and values they use; sent alone (`UpdateItem`) or
/// as an `Update` of a transaction.
pub(crate) struct OutboxUpdate {
    key: Item,
    expression: String,
    condition: String,
    names: HashMap<String, String>,
    values: Item,
}
