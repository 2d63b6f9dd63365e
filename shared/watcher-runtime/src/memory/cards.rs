//! [`Cards`] on the in-memory store: agent cards and lifecycle descriptors ([`crate::store::Cards`]).

use super::*;
use crate::store::{CardKey, CardKind, Cards};
use serde_json::Value;

/// Where the memory store keeps the document `key`: (tenant, agent, protocol version of a
/// lifecycle descriptor; `None` for the agent card).
fn slot(key: CardKey<'_>) -> (Tenant, AgentId, Option<String>) {
    let version = match key.kind {
        CardKind::AgentCard => None,
        CardKind::Lifecycle(v) => Some(v.to_owned()),
    };
    (key.tenant.clone(), key.agent.clone(), version)
}

#[async_trait]
impl Cards for MemoryStore {
    async fn keep(&self, key: CardKey<'_>, doc: &Value, at: Instant) -> Result<(), StoreError> {
        self.check_write()?;
        self.lock()?.cards.insert(slot(key), (doc.clone(), at));
        Ok(())
    }

    async fn kept(&self, key: CardKey<'_>) -> Result<Option<(Value, Instant)>, StoreError> {
        Ok(self.lock()?.cards.get(&slot(key)).cloned())
    }
}
