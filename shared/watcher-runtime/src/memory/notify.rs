//! [`Notifications`] on the in-memory store: each notification channel's progress
//! ([`crate::store::Notifications`]).

use super::*;
use crate::store::{ChannelState, Notifications};

#[async_trait]
impl Notifications for MemoryStore {
    async fn channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
    ) -> Result<Option<ChannelState>, StoreError> {
        Ok(self
            .lock()?
            .channels
            .get(&(tenant.clone(), channel.to_owned()))
            .cloned())
    }

    async fn channel_states(
        &self,
        tenant: &Tenant,
    ) -> Result<Vec<(String, ChannelState)>, StoreError> {
        Ok(self
            .lock()?
            .channels
            .iter()
            .filter(|((t, _), _)| t == tenant)
            .map(|((_, c), s)| (c.clone(), s.clone()))
            .collect())
    }

    async fn put_channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
        state: &ChannelState,
    ) -> Result<(), StoreError> {
        self.check_write()?;
        self.lock()?
            .channels
            .insert((tenant.clone(), channel.to_owned()), state.clone());
        Ok(())
    }
}
