//! [`TimerIndex`](watcher_runtime::store::TimerIndex) on DynamoDB: the deadline index ([`watcher_runtime::store::TimerIndex`]).

use super::*;
use watcher_runtime::store::TimerIndex;

#[async_trait]
impl TimerIndex for DynamoStore {
    /// Queries every partition of the `timers` index (`timers_partitions`: the shards and
    /// the earlier version's one value) at once, each stopping after its `limit`-th timer, and
    /// merges them in firing order.
    async fn due_timers(&self, until: Instant, limit: usize) -> Result<Vec<DueTimer>, StoreError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let found = each(timers_partitions(), |p| async move {
            self.due_timers_in(p, until, limit).await
        })
        .await?;
        let mut due: Vec<DueTimer> = found.into_iter().flatten().collect();
        due.sort_by_key(timer_order);
        due.truncate(limit);
        Ok(due)
    }

    /// The earliest timer of each partition of the `timers` index (one item each), the earliest
    /// of them.
    async fn next_timer(&self) -> Result<Option<DueTimer>, StoreError> {
        let firsts = each(timers_partitions(), |p| async move {
            let query = self
                .index_query(TIMERS_INDEX, (TIMERS_PK, p))
                .key_condition_expression("#p = :p")
                .limit(1);
            match self.query_page(query).await?.items.first() {
                None => Ok(None),
                Some(item) => Ok(timers_of(item)?.into_iter().next()),
            }
        })
        .await?;
        Ok(firsts.into_iter().flatten().min_by_key(timer_order))
    }
}
