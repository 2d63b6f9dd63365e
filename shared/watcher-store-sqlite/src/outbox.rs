//! [`Outbox`](watcher_runtime::store::Outbox) on SQLite: the outbox: lapse tasks, their claims and delivery state, and the pages of lapses ([`watcher_runtime::store::Outbox`]).

use super::*;
use watcher_runtime::store::{Lane, LaneQuery, LapseLog, Outbox};

#[async_trait]
impl Outbox for SqliteStore {
    async fn outbox_get(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        let (tenant, agent, message_id) = (tenant.clone(), agent.clone(), message_id.to_owned());
        self.read(move |conn| outbox_row(conn, &tenant, &agent, &message_id))
            .await
    }

    async fn outbox_update(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        let mut entry = entry.clone();
        self.write(move |conn| {
            // Read and written in one step of the writer, so a push recorded meanwhile
            // (`outbox_task_state`) is merged, never overwritten.
            let Some(stored) = outbox_row(conn, &entry.tenant, &entry.agent, &entry.message_id)?
            else {
                return Ok(());
            };
            keep_task_progress(&mut entry, &stored);
            keep_lease(&mut entry, &stored);
            write_outbox_row(conn, &entry)
        })
        .await
    }

    async fn outbox_claim(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        lease: &Lease,
        now: Instant,
    ) -> Result<Claim, StoreError> {
        let (tenant, agent) = (tenant.clone(), agent.clone());
        let (message_id, lease) = (message_id.to_owned(), lease.clone());
        // Read and written in one step of the single writer: two claims never both see the
        // entry unleased.
        self.write(move |conn| {
            let Some(stored) = outbox_row(conn, &tenant, &agent, &message_id)? else {
                return Ok(Claim::Gone);
            };
            let decided = claim(&stored, &lease, now);
            if let Claim::Claimed { entry, .. } = &decided {
                write_outbox_row(conn, entry)?;
            }
            Ok(decided)
        })
        .await
    }

    async fn outbox_task_state(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        task_id: &str,
        state: TaskState,
        now: Instant,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        let (tenant, agent) = (tenant.clone(), agent.clone());
        let (message_id, task_id) = (message_id.to_owned(), task_id.to_owned());
        self.write(move |conn| {
            let Some(updated) = outbox_row(conn, &tenant, &agent, &message_id)?
                .and_then(|stored| with_task_state(&stored, &task_id, state, now))
            else {
                return Ok(None);
            };
            write_outbox_row(conn, &updated)?;
            Ok(Some(updated))
        })
        .await
    }

    async fn outbox_resolve(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        resolution: &watcher_runtime::resolution::Resolution,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        let (tenant, agent) = (tenant.clone(), agent.clone());
        let (message_id, resolution) = (message_id.to_owned(), resolution.clone());
        self.write(move |conn| {
            let Some(updated) = outbox_row(conn, &tenant, &agent, &message_id)?
                .and_then(|stored| watcher_runtime::resolution::resolved(&stored, &resolution))
            else {
                return Ok(None);
            };
            write_outbox_row(conn, &updated)?;
            Ok(Some(updated))
        })
        .await
    }

    /// The lane's own index: `outbox_agent` by (tenant, agent, delivery, next attempt, seq),
    /// `outbox_follow` by (tenant, agent, follow_at), `outbox_person` by (tenant, agent,
    /// person_at, seq), `outbox_resolved` by (tenant, agent, resolved_at, seq), `outbox_open` by (tenant, agent,
    /// lapsed_at, seq); each read
    /// between `from` and `due_by`.
    async fn outbox_lane(&self, query: &LaneQuery<'_>) -> Result<Vec<OutboxEntry>, StoreError> {
        let (tenant, agent) = (query.tenant.clone(), query.agent.clone());
        let (lane, limit) = (query.lane, limit_of(query.limit));
        // Without a bound, the largest key: every instant key is at or before it; and the
        // empty text, before every instant key.
        let until = query.due_by.map_or_else(|| "~".to_owned(), instant_key);
        let from = query.from.map_or_else(String::new, instant_key);
        self.read(move |conn| {
            let (t, a) = (tenant.as_str(), agent.as_str());
            match lane {
                Lane::Delivery(delivery) => json_rows(
                    conn,
                    "SELECT entry FROM outbox INDEXED BY outbox_agent
                     WHERE tenant = ?1 AND agent = ?2 AND delivery = ?3 AND next_attempt <= ?4
                       AND next_attempt >= ?6
                     ORDER BY next_attempt, seq LIMIT ?5",
                    params![t, a, delivery.as_str(), until, limit, from],
                    "outbox entry",
                ),
                Lane::Following => json_rows(
                    conn,
                    "SELECT entry FROM outbox INDEXED BY outbox_follow
                     WHERE tenant = ?1 AND agent = ?2 AND follow_at IS NOT NULL AND follow_at <= ?3
                       AND follow_at >= ?5
                     ORDER BY follow_at LIMIT ?4",
                    params![t, a, until, limit, from],
                    "outbox entry",
                ),
                Lane::NeedingPerson => json_rows(
                    conn,
                    "SELECT entry FROM outbox INDEXED BY outbox_person
                     WHERE tenant = ?1 AND agent = ?2 AND person_at IS NOT NULL AND person_at <= ?3
                       AND person_at >= ?5 AND follow_at IS NULL
                     ORDER BY person_at, seq LIMIT ?4",
                    params![t, a, until, limit, from],
                    "outbox entry",
                ),
                Lane::Resolved => json_rows(
                    conn,
                    "SELECT entry FROM outbox INDEXED BY outbox_resolved
                     WHERE tenant = ?1 AND agent = ?2 AND resolved_at IS NOT NULL
                       AND resolved_at <= ?3 AND resolved_at >= ?5
                     ORDER BY resolved_at, seq LIMIT ?4",
                    params![t, a, until, limit, from],
                    "outbox entry",
                ),
                Lane::Open => json_rows(
                    conn,
                    "SELECT entry FROM outbox INDEXED BY outbox_open
                     WHERE tenant = ?1 AND agent = ?2 AND resolved_at IS NULL
                       AND lapsed_at <= ?3 AND lapsed_at >= ?5
                     ORDER BY lapsed_at, seq LIMIT ?4",
                    params![t, a, until, limit, from],
                    "outbox entry",
                ),
            }
        })
        .await
    }

    async fn outbox_by_task(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let (tenant, agent, task_id) = (tenant.clone(), agent.clone(), task_id.to_owned());
        self.read(move |conn| {
            json_rows(
                conn,
                "SELECT entry FROM outbox INDEXED BY outbox_task
                 WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3 ORDER BY seq",
                params![tenant.as_str(), agent.as_str(), task_id],
                "outbox entry",
            )
        })
        .await
    }
}

#[async_trait]
impl LapseLog for SqliteStore {
    async fn last_lapse_position(&self, tenant: &Tenant) -> Result<Option<u64>, StoreError> {
        let tenant = tenant.as_str().to_owned();
        self.read(move |conn| {
            // The index by (tenant, seq): one seek to the tenant's last row.
            let seq: Option<i64> = conn
                .prepare_cached("SELECT MAX(seq) FROM outbox WHERE tenant = ?1")
                .map_err(db)?
                .query_row(params![tenant], |r| r.get(0))
                .map_err(db)?;
            seq.map(|s| u64_of(s, "outbox seq")).transpose()
        })
        .await
    }

    async fn lapses(&self, tenant: &Tenant) -> Result<Vec<OutboxEntry>, StoreError> {
        let tenant = tenant.clone();
        self.read(move |conn| {
            json_rows(
                conn,
                "SELECT entry FROM outbox WHERE tenant = ?1 ORDER BY seq",
                params![tenant.as_str()],
                "outbox entry",
            )
        })
        .await
    }

    async fn lapses_page(
        &self,
        tenant: &Tenant,
        query: &LapseQuery,
    ) -> Result<LapsePage, StoreError> {
        let (tenant, query) = (tenant.clone(), query.clone());
        self.read(move |conn| lapses_page_in(conn, &tenant, &query))
            .await
    }
}
