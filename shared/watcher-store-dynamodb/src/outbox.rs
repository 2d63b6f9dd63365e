//! [`Outbox`](watcher_runtime::store::Outbox) on DynamoDB: the outbox: lapse tasks, their claims and delivery state, and the pages of lapses ([`watcher_runtime::store::Outbox`]).

use super::*;
use watcher_runtime::store::{Lane, LaneQuery, LapseLog, Outbox};

#[async_trait]
impl Outbox for DynamoStore {
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

    async fn outbox_get(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        match self.find_outbox(tenant, agent, message_id).await? {
            None => Ok(None),
            Some((_, item)) => entry_of(&item).map(|(_, e)| Some(e)),
        }
    }

    /// A consistent read of the stored entry, then `DynamoStore::replace_outbox` conditional
    /// on it being unchanged, retried while another writer (a push, the submitter) wins: the
    /// lapse task's task fields are merged with the stored ones (`keep_task_progress`) against
    /// the entry actually replaced.
    async fn outbox_update(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        self.update_outbox(&entry.tenant, &entry.agent, &entry.message_id, |stored| {
            merged_update(entry, stored)
        })
        .await
        .map(|_| ())
    }

    /// [`Outbox::outbox_update`] tried first as one write conditional on the stored entry being
    /// `read` (`DynamoStore::update_outbox_from`): no read when nothing else wrote the entry
    /// since the caller read or wrote it.
    async fn outbox_update_read(
        &self,
        read: &OutboxEntry,
        entry: &OutboxEntry,
    ) -> Result<(), StoreError> {
        let (tenant, agent, message_id) = (&entry.tenant, &entry.agent, &entry.message_id);
        if (&read.tenant, &read.agent, &read.message_id) != (tenant, agent, message_id) {
            return self.outbox_update(entry).await;
        }
        self.update_outbox_from(Some(read), tenant, agent, message_id, |stored| {
            merged_update(entry, stored)
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
        self.claim_outbox(None, tenant, agent, message_id, lease, now)
            .await
    }

    /// [`Outbox::outbox_claim`] whose first try is the claim `read` is judged to grant, written
    /// on condition that the stored entry is still `read` (no read); when that write finds it
    /// changed, or `read` is not granted (it may be stale), the entry is read and judged as
    /// [`Outbox::outbox_claim`] judges it.
    async fn outbox_claim_read(
        &self,
        read: &OutboxEntry,
        lease: &Lease,
        now: Instant,
    ) -> Result<Claim, StoreError> {
        self.claim_outbox(
            Some(read),
            &read.tenant,
            &read.agent,
            &read.message_id,
            lease,
            now,
        )
        .await
    }

    async fn outbox_task_state(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        task_id: &str,
        state: TaskState,
        now: Instant,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        self.update_outbox(tenant, agent, message_id, |stored| {
            with_task_state(stored, task_id, state, now)
        })
        .await
    }

    async fn outbox_resolve(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        resolution: &watcher_runtime::resolution::Resolution,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        self.update_outbox(tenant, agent, message_id, |stored| {
            watcher_runtime::resolution::resolved(stored, resolution)
        })
        .await
    }

    /// The lane's partition of its sparse index, then a consistent read of each entry found,
    /// keeping those still in the lane (the index is eventually consistent): the agent's
    /// `outbox-agent` partition of the delivery state (sorted by next attempt), its
    /// `FOLLOW#{tenant}#{agent}` or `PERSON#{tenant}#{agent}` partition of `outbox-follow`
    /// (sorted by `follow_at` or `needs_person_since`), or its `OPEN#{tenant}#{agent}` or
    /// `RESOLVED#{tenant}#{agent}` partition of `outbox-incident` (sorted by `lapsed_at` or the
    /// resolution's instant). An entry followed is in its `FOLLOW#` partition only, never in
    /// `PERSON#` (`keys::follow_keys`): the person lane answers the entries not followed; an
    /// entry is in its `OPEN#` or its `RESOLVED#` partition, never both (`keys::incident_keys`).
    /// `from` and `due_by` bound the sort key (`BETWEEN`; a `from` after `due_by` answers
    /// nothing without a request).
    ///
    /// A lapse task written before `outbox-incident` existed has no `incidentAgent` and is in
    /// neither incident lane until its next update or `DynamoStore::backfill_lapse_indexes`
    /// (docs/dynamodb.md, "Upgrading").
    async fn outbox_lane(&self, query: &LaneQuery<'_>) -> Result<Vec<OutboxEntry>, StoreError> {
        let (tenant, agent) = (query.tenant, query.agent);
        if let (Some(from), Some(due_by)) = (query.from, query.due_by) {
            if from > due_by {
                return Ok(Vec::new());
            }
        }
        let (index, partition, sort) = match query.lane {
            Lane::Delivery(delivery) => (
                OUTBOX_AGENT_INDEX,
                (
                    AGENT_DELIVERY,
                    agent_delivery(tenant, agent, delivery.as_str()),
                ),
                NEXT_ATTEMPT,
            ),
            Lane::Following => (
                OUTBOX_FOLLOW_INDEX,
                (FOLLOW_AGENT, follow_agent(tenant, agent)),
                FOLLOW_AT,
            ),
            Lane::NeedingPerson => (
                OUTBOX_FOLLOW_INDEX,
                (FOLLOW_AGENT, person_agent(tenant, agent)),
                FOLLOW_AT,
            ),
            Lane::Open => (
                OUTBOX_INCIDENT_INDEX,
                (INCIDENT_AGENT, open_agent(tenant, agent)),
                INCIDENT_AT,
            ),
            Lane::Resolved => (
                OUTBOX_INCIDENT_INDEX,
                (INCIDENT_AGENT, resolved_agent(tenant, agent)),
                INCIDENT_AT,
            ),
        };
        // Without a bound, a key above every instant key (they are digits).
        let until = query.due_by.map_or_else(|| "~".to_owned(), instant_key);
        let from = query.from.map(instant_key);
        let entries = self
            .outbox_through_index(index, partition, sort, (from, until), query.limit)
            .await?;
        Ok(query.answer(entries))
    }
}

impl DynamoStore {
    /// The claim behind [`Outbox::outbox_claim`] and [`Outbox::outbox_claim_read`]: with
    /// `read`, first the conditional write of what `read` grants (in the entry's shard,
    /// [`outbox_pk`]); then, or without `read`, a consistent read of the stored entry judged by
    /// `lease::claim` and written on condition it is unchanged, at most [`OUTBOX_CAS_TRIES`]
    /// times.
    async fn claim_outbox(
        &self,
        read: Option<&OutboxEntry>,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        lease: &Lease,
        now: Instant,
    ) -> Result<Claim, StoreError> {
        // Writes lost to another writer so far.
        let mut lost = 0u32;
        if let Some(read) = read {
            let decided = claim(read, lease, now);
            if let Claim::Claimed { entry, .. } = &decided {
                let pk = outbox_pk(tenant, agent, message_id);
                if self.replace_outbox(&pk, entry, &to_json(read)?).await? {
                    return Ok(decided);
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
                return Ok(Claim::Gone);
            };
            let (_, stored) = entry_of(&item)?;
            let decided = claim(&stored, lease, now);
            let Claim::Claimed { entry, .. } = &decided else {
                return Ok(decided);
            };
            if self
                .replace_outbox(&pk, entry, get_s(&item, ENTRY, "outbox entry")?)
                .await?
            {
                return Ok(decided);
            }
            lost += 1;
        }
        Err(StoreError::Conflict(format!(
            "outbox entry {message_id:?} of agent {:?} (changed {OUTBOX_CAS_TRIES} times while being claimed)",
            agent.as_str()
        )))
    }
}

/// `entry` to be written over `stored` by [`Outbox::outbox_update`]: `None` when `stored` is
/// sent and `entry` is not (a sent entry is never changed back); else `entry` with `stored`'s
/// task progress (`keep_task_progress`) and lease (`keep_lease`) kept.
fn merged_update(entry: &OutboxEntry, stored: &OutboxEntry) -> Option<OutboxEntry> {
    if stored.delivery == DeliveryState::Sent && entry.delivery != DeliveryState::Sent {
        return None;
    }
    let mut updated = entry.clone();
    keep_task_progress(&mut updated, stored);
    keep_lease(&mut updated, stored);
    Some(updated)
}

#[async_trait]
impl LapseLog for DynamoStore {
    /// The greatest of each `lapses-tenant` partition's newest position
    /// (`DynamoStore::newest_lapse_position`): one item from each of its partitions.
    async fn last_lapse_position(&self, tenant: &Tenant) -> Result<Option<u64>, StoreError> {
        self.newest_lapse_position(tenant).await
    }

    /// Every partition of the tenant's lapse tasks (`outbox_partitions`: the shards and the
    /// one an earlier version wrote), merged in order of `seq`.
    async fn lapses(&self, tenant: &Tenant) -> Result<Vec<OutboxEntry>, StoreError> {
        let partitions = each(outbox_partitions(tenant), |pk| async move {
            self.partition(pk).await
        })
        .await?;
        let mut entries = partitions
            .iter()
            .flatten()
            .map(entry_of)
            .collect::<Result<Vec<_>, _>>()?;
        entries.sort_by_key(|(seq, _)| *seq);
        Ok(entries.into_iter().map(|(_, e)| e).collect())
    }

    /// Keyset pages over the sparse `lapses-tenant` index (a tenant's sixteen
    /// partitions `LAPSES#{tenant}#{k}` and the one `LAPSES#{tenant}` an earlier version wrote),
    /// or `lapses-agent` (`LAPSES#{tenant}#{agent}#{k}` and `LAPSES#{tenant}#{agent}`) when
    /// `query.agent` is given, each sorted by the entry's `seq` (its insertion order, the
    /// position answered) with every attribute projected, merged in order of `seq`
    /// (`DynamoStore::merged_lapses_page`). `delivery` and `since` are filtered here, so every
    /// position looked at counts towards [`lapse_scan_budget`] as in the SQLite store: a page
    /// reads at most the budget of positions and one chunk per partition, whatever the
    /// outbox's size.
    ///
    /// The index is eventually consistent: a lapse task written or updated milliseconds ago
    /// may be missing or show its previous state (docs/dynamodb.md, "Consistency").
    async fn lapses_page(
        &self,
        tenant: &Tenant,
        query: &LapseQuery,
    ) -> Result<LapsePage, StoreError> {
        self.merged_lapses_page(tenant, query).await
    }
}
