//! [`Upkeep`](watcher_runtime::store::Upkeep) on DynamoDB: the health probe's write, retention's purge and the work counter ([`watcher_runtime::store::Upkeep`]).

use super::*;
use watcher_runtime::store::Upkeep;

#[async_trait]
impl Upkeep for DynamoStore {
    async fn probe_write(&self, now: Instant) -> Result<(), StoreError> {
        self.count(1u64);
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, s(COUNTER_PK))
            .item(SK, s("health"))
            .item(KIND, s("health"))
            .item("probedAt", s(instant_key(now)))
            .send()
            .await
            .map_err(error::backend)?;
        Ok(())
    }

    fn work_done(&self) -> Option<u64> {
        self.work.as_ref().map(|w| w.load(Ordering::Relaxed))
    }

    /// Deletes nothing and answers an empty report: DynamoDB deletes expired items itself,
    /// through the `expiresAt` TTL written with every item by the same rule
    /// ([`watcher_runtime::retention`]; docs/dynamodb.md, "Retention").
    async fn purge(&self, _before: Instant) -> Result<PurgeReport, StoreError> {
        Ok(PurgeReport::default())
    }
}
