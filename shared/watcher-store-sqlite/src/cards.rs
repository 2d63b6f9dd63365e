//! [`Cards`](watcher_runtime::store::Cards) on SQLite: agent cards and lifecycle descriptors ([`watcher_runtime::store::Cards`]).

use super::*;
use watcher_runtime::store::Cards;

#[async_trait]
impl Cards for SqliteStore {
    async fn put_agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        card: &serde_json::Value,
        read_at: Instant,
    ) -> Result<(), StoreError> {
        let (tenant, agent, card, at) = (
            tenant.as_str().to_string(),
            agent.as_str().to_string(),
            card.to_string(),
            read_at.to_string(),
        );
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO agent_cards (tenant, agent, card, read_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (tenant, agent) DO UPDATE SET card = excluded.card, read_at = excluded.read_at",
            )
            .map_err(db)?
            .execute(params![tenant, agent, card, at])
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn put_lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
        descriptor: &serde_json::Value,
        probed_at: Instant,
    ) -> Result<(), StoreError> {
        let (tenant, agent, version, descriptor, at) = (
            tenant.as_str().to_string(),
            agent.as_str().to_string(),
            protocol_version.to_string(),
            descriptor.to_string(),
            probed_at.to_string(),
        );
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO lifecycle (tenant, agent, protocol_version, descriptor, probed_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (tenant, agent, protocol_version) DO UPDATE
                 SET descriptor = excluded.descriptor, probed_at = excluded.probed_at",
            )
            .map_err(db)?
            .execute(params![tenant, agent, version, descriptor, at])
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        let (tenant, agent, version) = (
            tenant.as_str().to_string(),
            agent.as_str().to_string(),
            protocol_version.to_string(),
        );
        self.read(move |conn| {
            let row: Option<(String, String)> = conn
                .prepare_cached(
                    "SELECT descriptor, probed_at FROM lifecycle
                     WHERE tenant = ?1 AND agent = ?2 AND protocol_version = ?3",
                )
                .map_err(db)?
                .query_row(params![tenant, agent, version], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(db)?;
            row.map(|(d, at)| {
                let d = serde_json::from_str(&d).map_err(|e| {
                    StoreError::Corrupt(format!("the lifecycle descriptor of agent {agent}: {e}"))
                })?;
                let at = Instant::parse(&at).map_err(|e| {
                    StoreError::Corrupt(format!(
                        "the lifecycle descriptor of agent {agent}: probed_at: {e}"
                    ))
                })?;
                Ok((d, at))
            })
            .transpose()
        })
        .await
    }

    async fn agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        let (tenant, agent) = (tenant.as_str().to_string(), agent.as_str().to_string());
        self.read(move |conn| {
            let row: Option<(String, String)> = conn
                .prepare_cached(
                    "SELECT card, read_at FROM agent_cards WHERE tenant = ?1 AND agent = ?2",
                )
                .map_err(db)?
                .query_row(params![tenant, agent], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(db)?;
            row.map(|(card, at)| {
                let card = serde_json::from_str(&card).map_err(|e| {
                    StoreError::Corrupt(format!("the kept card of agent {agent}: {e}"))
                })?;
                let at = Instant::parse(&at).map_err(|e| {
                    StoreError::Corrupt(format!("the kept card of agent {agent}: read_at {e}"))
                })?;
                Ok((card, at))
            })
            .transpose()
        })
        .await
    }
}
