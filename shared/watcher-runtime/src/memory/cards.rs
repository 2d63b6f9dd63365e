//! [`Cards`] on the in-memory store: agent cards and lifecycle descriptors ([`crate::store::Cards`]).

use super::*;
use crate::store::Cards;

#[async_trait]
impl Cards for MemoryStore {
    async fn put_agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        card: &serde_json::Value,
        read_at: Instant,
    ) -> Result<(), StoreError> {
        self.check_write()?;
        self.lock()?
            .agent_cards
            .insert((tenant.clone(), agent.clone()), (card.clone(), read_at));
        Ok(())
    }

    async fn agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        Ok(self
            .lock()?
            .agent_cards
            .get(&(tenant.clone(), agent.clone()))
            .cloned())
    }

    async fn put_lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
        descriptor: &serde_json::Value,
        probed_at: Instant,
    ) -> Result<(), StoreError> {
        self.check_write()?;
        self.lock()?.lifecycle.insert(
            (tenant.clone(), agent.clone(), protocol_version.to_owned()),
            (descriptor.clone(), probed_at),
        );
        Ok(())
    }

    async fn lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        Ok(self
            .lock()?
            .lifecycle
            .get(&(tenant.clone(), agent.clone(), protocol_version.to_owned()))
            .cloned())
    }
}
