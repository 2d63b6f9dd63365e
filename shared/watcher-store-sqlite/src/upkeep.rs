//! [`Upkeep`](watcher_runtime::store::Upkeep) on SQLite: the health probe's write, retention's purge and the work counter ([`watcher_runtime::store::Upkeep`]).

use super::*;
use watcher_runtime::store::Upkeep;

#[async_trait]
impl Upkeep for SqliteStore {
    async fn probe_write(&self, now: Instant) -> Result<(), StoreError> {
        let at = instant_key(now);
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO health (id, probed_at) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
            )
            .map_err(db)?
            .execute(params![at])
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    fn work_done(&self) -> Option<u64> {
        self.work.as_ref().map(|w| w.load(Ordering::Relaxed))
    }

    /// In batches of [`PURGE_BATCH`] rows, each its own transaction, yielding between them
    /// ([`SqliteStore::purge_batched`]): requests are served during a large purge.
    async fn purge(&self, before: Instant) -> Result<PurgeReport, StoreError> {
        self.purge_batched(before, PURGE_BATCH, |_| tokio::task::yield_now())
            .await
    }
}
