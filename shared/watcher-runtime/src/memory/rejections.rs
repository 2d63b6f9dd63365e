//! [`Rejections`] on the in-memory store: rejected expectations ([`crate::store::Rejections`]).

use super::*;
use crate::store::Rejections;

#[async_trait]
impl Rejections for MemoryStore {
    async fn rejections(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Vec<Rejection>, StoreError> {
        Ok(self
            .lock()?
            .rejections
            .iter()
            .filter(|(t, r)| t == tenant && &r.agent == agent)
            .map(|(_, r)| r.clone())
            .collect())
    }
}
