//! [`Cards`](watcher_runtime::store::Cards) on DynamoDB: agent cards and lifecycle descriptors ([`watcher_runtime::store::Cards`]).

use super::*;
use watcher_runtime::store::Cards;

#[async_trait]
impl Cards for DynamoStore {
    async fn put_agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        card: &serde_json::Value,
        read_at: Instant,
    ) -> Result<(), StoreError> {
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(keys::agent_card_pk(tenant, agent)))
            .item(SK, s(ITEM))
            .item(KIND, s("agent-card"))
            .item(TENANT, s(tenant.as_str()))
            .item("card", s(card.to_string()))
            .item("readAt", s(read_at.to_string()))
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(())
    }

    async fn agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        self.get(keys::agent_card_pk(tenant, agent), ITEM)
            .await?
            .map(|item| {
                kept_document(
                    &item,
                    "card",
                    "readAt",
                    &format!("the kept card of agent {agent}"),
                )
            })
            .transpose()
    }

    async fn put_lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
        descriptor: &serde_json::Value,
        probed_at: Instant,
    ) -> Result<(), StoreError> {
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(keys::lifecycle_pk(tenant, agent)))
            .item(SK, s(format!("V#{protocol_version}")))
            .item(KIND, s("lifecycle"))
            .item(TENANT, s(tenant.as_str()))
            .item("descriptor", s(descriptor.to_string()))
            .item("probedAt", s(probed_at.to_string()))
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(())
    }

    async fn lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        let sk = format!("V#{protocol_version}");
        self.get(keys::lifecycle_pk(tenant, agent), &sk)
            .await?
            .map(|item| {
                kept_document(
                    &item,
                    "descriptor",
                    "probedAt",
                    &format!("the lifecycle descriptor of agent {agent}"),
                )
            })
            .transpose()
    }
}
