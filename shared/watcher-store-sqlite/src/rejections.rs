//! [`Rejections`](watcher_runtime::store::Rejections) on SQLite: rejected expectations ([`watcher_runtime::store::Rejections`]).

use super::*;
use watcher_runtime::store::Rejections;

#[async_trait]
impl Rejections for SqliteStore {
    async fn rejections(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Vec<Rejection>, StoreError> {
        let (tenant, agent) = (tenant.clone(), agent.clone());
        self.read(move |conn| {
            let rows: Vec<Rejection> = json_rows(
                conn,
                "SELECT rejection FROM rejections WHERE tenant = ?1 AND agent = ?2 ORDER BY id",
                params![tenant.as_str(), agent.as_str()],
                "rejection",
            )?;
            Ok(rows)
        })
        .await
    }

    async fn rejections_page(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<(u64, Rejection)>, Option<u64>), StoreError> {
        let (tenant, agent) = (tenant.clone(), agent.clone());
        let limit = limit.max(1);
        self.read(move |conn| {
            let after = after.map_or(Ok(0), |a| int_of(a, "rejections cursor"))?;
            let rows: Vec<(i64, String)> = keyed_json_rows(
                conn,
                "SELECT id, rejection FROM rejections INDEXED BY rejections_agent
                 WHERE tenant = ?1 AND agent = ?2 AND id > ?3 ORDER BY id LIMIT ?4",
                params![tenant.as_str(), agent.as_str(), after, limit_of(limit) + 1],
            )?;
            let items = rows
                .into_iter()
                .map(|(id, json)| Ok((u64_of(id, "rejection id")?, from_json(&json, "rejection")?)))
                .collect::<Result<Vec<_>, StoreError>>()?;
            Ok(watcher_runtime::store::cut_page(items, limit))
        })
        .await
    }
}
