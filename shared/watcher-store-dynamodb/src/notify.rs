//! [`Notifications`](watcher_runtime::store::Notifications) on DynamoDB: each notification
//! channel's progress, one item `NOTIFY#{tenant}` / `C#{channel}` holding its JSON.

use super::*;
use watcher_runtime::store::{ChannelState, Notifications};

#[async_trait]
impl Notifications for DynamoStore {
    async fn channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
    ) -> Result<Option<ChannelState>, StoreError> {
        let sk = keys::notify_channel_sk(channel);
        let Some(item) = self.get(keys::notify_pk(tenant), &sk).await? else {
            return Ok(None);
        };
        state_of(&item, channel).map(Some)
    }

    async fn channel_states(
        &self,
        tenant: &Tenant,
    ) -> Result<Vec<(String, ChannelState)>, StoreError> {
        let pk = keys::notify_pk(tenant);
        self.query_all(|| {
            self.client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#p = :p AND begins_with(#s, :c)")
                .expression_attribute_names("#p", PK)
                .expression_attribute_names("#s", SK)
                .expression_attribute_values(":p", s(pk.clone()))
                .expression_attribute_values(":c", s("C#"))
                .consistent_read(true)
        })
        .await?
        .into_iter()
        .map(|item| {
            let channel = item
                .get("channel")
                .and_then(|v| v.as_s().ok())
                .cloned()
                .ok_or_else(|| {
                    StoreError::Corrupt("a notification channel item without its id".into())
                })?;
            let state = state_of(&item, &channel)?;
            Ok((channel, state))
        })
        .collect()
    }

    async fn put_channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
        state: &ChannelState,
    ) -> Result<(), StoreError> {
        let state = serde_json::to_string(state).map_err(error::backend)?;
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(keys::notify_pk(tenant)))
            .item(SK, s(keys::notify_channel_sk(channel)))
            .item(KIND, s("notify-channel"))
            .item(TENANT, s(tenant.as_str()))
            .item("channel", s(channel))
            .item("state", s(state))
            .send()
            .await
            .map_err(error::backend)?;
        Ok(())
    }
}

/// The state held in a channel's item.
fn state_of(item: &Item, channel: &str) -> Result<ChannelState, StoreError> {
    let state = item
        .get("state")
        .and_then(|v| v.as_s().ok())
        .ok_or_else(|| {
            StoreError::Corrupt(format!(
                "the state of notification channel {channel}: no state"
            ))
        })?;
    serde_json::from_str(state).map_err(|e| {
        StoreError::Corrupt(format!("the state of notification channel {channel}: {e}"))
    })
}
