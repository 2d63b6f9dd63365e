//! [`Outbox`] on the in-memory store: the outbox: lapse tasks, their claims and delivery state, and the pages of lapses ([`crate::store::Outbox`]).

use super::*;
use crate::store::{LaneQuery, LapseLog, Outbox};

#[async_trait]
impl Outbox for MemoryStore {
    async fn outbox_get(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        self.touched(1);
        Ok(inner
            .outbox_ids
            .get(&(tenant.clone(), agent.clone(), message_id.to_owned()))
            .and_then(|seq| inner.outbox.get(seq))
            .cloned())
    }

    async fn outbox_update(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        self.check_write()?;
        let mut inner = self.lock()?;
        self.touched(1);
        let id = (
            entry.tenant.clone(),
            entry.agent.clone(),
            entry.message_id.clone(),
        );
        let Some(seq) = inner.outbox_ids.get(&id).copied() else {
            return Ok(());
        };
        let Some(old) = inner.outbox.get(&seq).cloned() else {
            return Ok(());
        };
        if old.delivery != DeliveryState::Sent || entry.delivery == DeliveryState::Sent {
            let mut entry = entry.clone();
            keep_task_progress(&mut entry, &old);
            keep_lease(&mut entry, &old);
            inner.replace_outbox(seq, &old, entry);
        }
        Ok(())
    }

    async fn outbox_claim(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        lease: &Lease,
        now: Instant,
    ) -> Result<Claim, StoreError> {
        self.check_write()?;
        let mut inner = self.lock()?;
        self.touched(1);
        let id = (tenant.clone(), agent.clone(), message_id.to_owned());
        let Some(old) = inner
            .outbox_ids
            .get(&id)
            .and_then(|seq| inner.outbox.get(seq).map(|o| (*seq, o.clone())))
        else {
            return Ok(Claim::Gone);
        };
        let (seq, old) = old;
        let decided = claim(&old, lease, now);
        if let Claim::Claimed { entry, .. } = &decided {
            inner.replace_outbox(seq, &old, entry.clone());
        }
        Ok(decided)
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
        self.check_write()?;
        let mut inner = self.lock()?;
        self.touched(1);
        let id = (tenant.clone(), agent.clone(), message_id.to_owned());
        let Some(seq) = inner.outbox_ids.get(&id).copied() else {
            return Ok(None);
        };
        let Some(old) = inner.outbox.get(&seq).cloned() else {
            return Ok(None);
        };
        let Some(updated) = with_task_state(&old, task_id, state, now) else {
            return Ok(None);
        };
        inner.replace_outbox(seq, &old, updated.clone());
        Ok(Some(updated))
    }

    async fn outbox_resolve(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        resolution: &crate::resolution::Resolution,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        self.check_write()?;
        let mut inner = self.lock()?;
        self.touched(1);
        let id = (tenant.clone(), agent.clone(), message_id.to_owned());
        let Some(seq) = inner.outbox_ids.get(&id).copied() else {
            return Ok(None);
        };
        let Some(old) = inner.outbox.get(&seq).cloned() else {
            return Ok(None);
        };
        let Some(updated) = crate::resolution::resolved(&old, resolution) else {
            return Ok(None);
        };
        inner.replace_outbox(seq, &old, updated.clone());
        Ok(Some(updated))
    }

    /// A filter over the agent's entries (index by (tenant, agent)).
    async fn outbox_lane(&self, query: &LaneQuery<'_>) -> Result<Vec<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        let agent = (query.tenant.clone(), query.agent.clone());
        let Some(seqs) = inner.outbox_agent.get(&agent) else {
            return Ok(Vec::new());
        };
        let entries = seqs
            .iter()
            .filter_map(|seq| inner.outbox.get(seq).map(|o| (*seq, o)));
        Ok(query.answer(entries).into_iter().cloned().collect())
    }

    async fn outbox_by_task(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        let key = (tenant.clone(), agent.clone(), task_id.to_owned());
        let found: Vec<OutboxEntry> = inner
            .outbox_tasks
            .get(&key)
            .into_iter()
            .flatten()
            .filter_map(|seq| inner.outbox.get(seq).cloned())
            .collect();
        self.touched(1 + found.len() as u64);
        Ok(found)
    }
}

#[async_trait]
impl LapseLog for MemoryStore {
    async fn last_lapse_position(&self, tenant: &Tenant) -> Result<Option<u64>, StoreError> {
        Ok(self
            .lock()?
            .outbox_tenant
            .get(tenant)
            .and_then(|positions| positions.last().copied()))
    }

    async fn lapses_page(
        &self,
        tenant: &Tenant,
        query: &LapseQuery,
    ) -> Result<LapsePage, StoreError> {
        let inner = self.lock()?;
        let positions = match &query.agent {
            Some(a) => inner.outbox_agent.get(&(tenant.clone(), a.clone())),
            None => inner.outbox_tenant.get(tenant),
        };
        let Some(positions) = positions else {
            return Ok(LapsePage::default());
        };
        let from = query.after.map_or(0, |a| a.saturating_add(1));
        let limit = query.limit.max(1);
        let budget = lapse_scan_budget(limit);
        let mut page = LapsePage::default();
        let mut looked = 0usize;
        let mut last = None;
        for seq in positions.range(from..) {
            if page.entries.len() >= limit || looked >= budget {
                page.next = last;
                break;
            }
            looked += 1;
            last = Some(*seq);
            if let Some(o) = inner.outbox.get(seq).filter(|o| query.matches(o)) {
                page.entries.push((*seq, o.clone()));
            }
        }
        self.touched(looked as u64 + 1);
        Ok(page)
    }

    async fn lapses(&self, tenant: &Tenant) -> Result<Vec<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        Ok(inner
            .outbox_tenant
            .get(tenant)
            .into_iter()
            .flatten()
            .filter_map(|seq| inner.outbox.get(seq).cloned())
            .collect())
    }
}
