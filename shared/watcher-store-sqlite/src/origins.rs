//! The origin tasks followed with `GetTask` (`Origins::origin_follow` and its siblings): the
//! `origins` table (schema version 7), keyed by (tenant, agent, task_id), with the index
//! `origins_due` by (tenant, agent, next_at), so a pass reads what is due and nothing else.

use async_trait::async_trait;
use rusqlite::params;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::origins::{FollowedOrigin, OriginKey};
use watcher_runtime::store::Origins;
use watcher_runtime::store::StoreError;

use crate::codec::{db, instant_from_key, instant_key};
use crate::{limit_of, SqliteStore};

// The [`Origins`](watcher_runtime::store::Origins) capability of the store port, on SQLite.
#[async_trait]
impl Origins for SqliteStore {
    async fn origin_follow(&self, origin: &FollowedOrigin) -> Result<bool, StoreError> {
        let (tenant, agent, task) = (
            origin.tenant.as_str().to_owned(),
            origin.agent.as_str().to_owned(),
            origin.task_id.clone(),
        );
        let (since, next) = (instant_key(origin.since), instant_key(origin.next_at));
        self.write(move |conn| {
            let added = conn
                .prepare_cached(
                    "INSERT INTO origins (tenant, agent, task_id, since, next_at)
                     VALUES (?1, ?2, ?3, ?4, ?5)
                     ON CONFLICT (tenant, agent, task_id) DO NOTHING",
                )
                .map_err(db)?
                .execute(params![tenant, agent, task, since, next])
                .map_err(db)?;
            Ok(added == 1)
        })
        .await
    }

    async fn origins_due(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Instant,
        limit: usize,
    ) -> Result<Vec<FollowedOrigin>, StoreError> {
        let (t, a) = (tenant.clone(), agent.clone());
        let until = instant_key(due_by);
        self.read(move |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT task_id, since, next_at FROM origins INDEXED BY origins_due
                     WHERE tenant = ?1 AND agent = ?2 AND next_at <= ?3
                     ORDER BY next_at, task_id LIMIT ?4",
                )
                .map_err(db)?;
            let rows = stmt
                .query_map(
                    params![t.as_str(), a.as_str(), until, limit_of(limit)],
                    |r| {
                        Ok((
                            r.get::<_, String>(0)?,
                            r.get::<_, String>(1)?,
                            r.get::<_, String>(2)?,
                        ))
                    },
                )
                .map_err(db)?;
            let mut out = Vec::new();
            for row in rows {
                let (task_id, since, next) = row.map_err(db)?;
                out.push(FollowedOrigin {
                    tenant: t.clone(),
                    agent: a.clone(),
                    task_id,
                    since: instant_from_key(&since)?,
                    next_at: instant_from_key(&next)?,
                });
            }
            Ok(out)
        })
        .await
    }

    async fn origin_reschedule(&self, key: &OriginKey, at: Instant) -> Result<(), StoreError> {
        let (tenant, agent, task) = (
            key.0.as_str().to_owned(),
            key.1.as_str().to_owned(),
            key.2.clone(),
        );
        let next = instant_key(at);
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE origins SET next_at = ?4 WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3",
            )
            .map_err(db)?
            .execute(params![tenant, agent, task, next])
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn origin_stop(&self, key: &OriginKey) -> Result<(), StoreError> {
        let (tenant, agent, task) = (
            key.0.as_str().to_owned(),
            key.1.as_str().to_owned(),
            key.2.clone(),
        );
        self.write(move |conn| {
            conn.prepare_cached(
                "DELETE FROM origins WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3",
            )
            .map_err(db)?
            .execute(params![tenant, agent, task])
            .map_err(db)?;
            Ok(())
        })
        .await
    }
}

impl SqliteStore {
    /// Deletes up to `batch` origins followed since before `before`; answers how many.
    pub(crate) async fn purge_origins(
        &self,
        before: Instant,
        batch: usize,
    ) -> Result<usize, StoreError> {
        let cut = instant_key(before);
        self.write(move |conn| {
            conn.prepare_cached(
                "DELETE FROM origins WHERE rowid IN
                    (SELECT rowid FROM origins WHERE since < ?1 LIMIT ?2)",
            )
            .map_err(db)?
            .execute(params![cut, limit_of(batch)])
            .map_err(db)
        })
        .await
    }
}
