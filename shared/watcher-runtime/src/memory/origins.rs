//! [`Origins`] on the in-memory store: origin tasks followed with `GetTask` ([`crate::store::Origins`]).

use super::*;
use crate::store::Origins;

#[async_trait]
impl Origins for MemoryStore {
    async fn origin_follow(
        &self,
        origin: &crate::origins::FollowedOrigin,
    ) -> Result<bool, StoreError> {
        self.check_write()?;
        self.touched(1);
        Ok(self.lock()?.origins.follow(origin))
    }

    async fn origins_due(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Instant,
        limit: usize,
    ) -> Result<Vec<crate::origins::FollowedOrigin>, StoreError> {
        let due = self.lock()?.origins.due(tenant, agent, due_by, limit);
        self.touched(due.len() as u64);
        Ok(due)
    }

    async fn origin_reschedule(
        &self,
        key: &crate::origins::OriginKey,
        at: Instant,
    ) -> Result<(), StoreError> {
        self.check_write()?;
        self.touched(1);
        self.lock()?.origins.reschedule(key, at);
        Ok(())
    }

    async fn origin_stop(&self, key: &crate::origins::OriginKey) -> Result<(), StoreError> {
        self.check_write()?;
        self.touched(1);
        self.lock()?.origins.stop(key);
        Ok(())
    }
}
