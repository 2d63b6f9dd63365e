//! [`Outbox`](watcher_runtime::store::Outbox) on DynamoDB: the outbox: lapse tasks, their claims and delivery state, and the pages of lapses ([`watcher_runtime::store::Outbox`]).

use super::*;
use watcher_runtime::store::Outbox;

#[async_trait]
impl Outbox for DynamoStore {
    async fn last_lapse_position(&self, tenant: &Tenant) -> Result<Option<u64>, StoreError> {
        // The tenant's partition of the lapse-pages index, newest first, one item.
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(LAPSES_TENANT_INDEX)
            .key_condition_expression("#p = :p")
            .expression_attribute_names("#p", LAPSES_TENANT)
            .expression_attribute_values(":p", s(lapses_tenant(tenant)))
            .scan_index_forward(false)
            .limit(1)
            .send()
            .await
            .map_err(StoreError::backend)?;
        self.count(out.scanned_count);
        out.items
            .unwrap_or_default()
            .first()
            .map(|item| entry_of(item).map(|(seq, _)| seq))
            .transpose()
    }

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

    /// Queries every partition of the `outbox-due` index (`queued_partitions`) at once, each
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

    /// A consistent read of the stored entry, then `DynamoStore::replace_outbox` conditional
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
    /// `DynamoStore::replace_outbox` conditional on the entry being unchanged: of two claims
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
}
