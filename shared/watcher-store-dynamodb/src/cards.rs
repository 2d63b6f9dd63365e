//! [`Cards`](watcher_runtime::store::Cards) on DynamoDB: agent cards and lifecycle descriptors ([`watcher_runtime::store::Cards`]).

use super::*;
use serde_json::Value;
use watcher_runtime::store::{CardKey, CardKind, Cards};

/// Where the document `key` is kept and how its item names things: (partition key, sort key,
/// kind, the document's attribute, the instant's attribute).
fn item_of(key: CardKey<'_>) -> (String, String, &'static str, &'static str, &'static str) {
    let (tenant, agent) = (key.tenant, key.agent);
    match key.kind {
        CardKind::AgentCard => (
            keys::agent_card_pk(tenant, agent),
            ITEM.to_owned(),
            "agent-card",
            "card",
            "readAt",
        ),
        CardKind::Lifecycle(version) => (
            keys::lifecycle_pk(tenant, agent),
            format!("V#{version}"),
            "lifecycle",
            "descriptor",
            "probedAt",
        ),
    }
}

#[async_trait]
impl Cards for DynamoStore {
    async fn keep(&self, key: CardKey<'_>, doc: &Value, at: Instant) -> Result<(), StoreError> {
        let (pk, sk, kind, doc_name, at_name) = item_of(key);
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(pk))
            .item(SK, s(sk))
            .item(KIND, s(kind))
            .item(TENANT, s(key.tenant.as_str()))
            .item(doc_name, s(doc.to_string()))
            .item(at_name, s(at.to_string()))
            .send()
            .await
            .map_err(error::backend)?;
        Ok(())
    }

    async fn kept(&self, key: CardKey<'_>) -> Result<Option<(Value, Instant)>, StoreError> {
        let (pk, sk, _, doc_name, at_name) = item_of(key);
        self.get(pk, &sk)
            .await?
            .map(|item| kept_document(&item, doc_name, at_name, &key.what()))
            .transpose()
    }
}
