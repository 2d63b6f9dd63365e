//! [`Notifications`](watcher_runtime::store::Notifications) on DynamoDB: each notification
//! channel's progress, one item `NOTIFY#{tenant}#{channel}` holding its JSON.

use super::*;
use watcher_runtime::store::{ChannelState, Notifications};

#[async_trait]
impl Notifications for DynamoStore {
    async fn channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
    ) -> Result<Option<ChannelState>, StoreError> {
        let Some(item) = self
            .get(keys::notify_channel_pk(tenant, channel), ITEM)
            .await?
        else {
            return Ok(None);
        };
        let state = item
            .get("state")
            .and_then(|v| v.as_s().ok())
            .ok_or_else(|| {
                StoreError::Corrupt(format!(
                    "the state of notification channel {channel}: no state"
                ))
            })?;
        serde_json::from_str(state).map(Some).map_err(|e| {
            StoreError::Corrupt(format!("the state of notification channel {channel}: {e}"))
        })
    }

    async fn put_channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
        state: &ChannelState,
    ) -> Result<(), StoreError> {
        let state = serde_json::to_string(state).map_err(StoreError::backend)?;
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(keys::notify_channel_pk(tenant, channel)))
            .item(SK, s(ITEM))
            .item(KIND, s("notify-channel"))
            .item(TENANT, s(tenant.as_str()))
            .item("state", s(state))
            .send()
            .await
            .map_err(StoreError::backend)?;
        Ok(())
    }
}
