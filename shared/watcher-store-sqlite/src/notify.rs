//! [`Notifications`](watcher_runtime::store::Notifications) on SQLite: each notification
//! channel's progress, one row of `notify_channels` holding its JSON.

use super::*;
use watcher_runtime::store::{ChannelState, Notifications};

#[async_trait]
impl Notifications for SqliteStore {
    async fn channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
    ) -> Result<Option<ChannelState>, StoreError> {
        let (tenant, channel) = (tenant.as_str().to_owned(), channel.to_owned());
        self.read(move |conn| {
            let row: Option<String> = conn
                .prepare_cached(
                    "SELECT state FROM notify_channels WHERE tenant = ?1 AND channel = ?2",
                )
                .map_err(db)?
                .query_row(params![tenant, channel], |r| r.get(0))
                .optional()
                .map_err(db)?;
            row.map(|state| {
                serde_json::from_str(&state).map_err(|e| {
                    StoreError::Corrupt(format!("the state of notification channel {channel}: {e}"))
                })
            })
            .transpose()
        })
        .await
    }

    async fn channel_states(
        &self,
        tenant: &Tenant,
    ) -> Result<Vec<(String, ChannelState)>, StoreError> {
        let tenant = tenant.as_str().to_owned();
        self.read(move |conn| {
            let rows: Vec<(String, String)> = conn
                .prepare_cached(
                    "SELECT channel, state FROM notify_channels WHERE tenant = ?1 ORDER BY channel",
                )
                .map_err(db)?
                .query_map(params![tenant], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(db)?
                .collect::<Result<_, _>>()
                .map_err(db)?;
            rows.into_iter()
                .map(|(channel, state)| {
                    let state = serde_json::from_str(&state).map_err(|e| {
                        StoreError::Corrupt(format!(
                            "the state of notification channel {channel}: {e}"
                        ))
                    })?;
                    Ok((channel, state))
                })
                .collect()
        })
        .await
    }

    async fn put_channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
        state: &ChannelState,
    ) -> Result<(), StoreError> {
        let state = serde_json::to_string(state).map_err(StoreError::backend)?;
        let (tenant, channel) = (tenant.as_str().to_owned(), channel.to_owned());
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO notify_channels (tenant, channel, state) VALUES (?1, ?2, ?3)
                 ON CONFLICT (tenant, channel) DO UPDATE SET state = excluded.state",
            )
            .map_err(db)?
            .execute(params![tenant, channel, state])
            .map_err(db)?;
            Ok(())
        })
        .await
    }
}
