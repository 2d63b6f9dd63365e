//! [`TimerIndex`](watcher_runtime::store::TimerIndex) on SQLite: the deadline index ([`watcher_runtime::store::TimerIndex`]).

use super::*;
use watcher_runtime::store::TimerIndex;

#[async_trait]
impl TimerIndex for SqliteStore {
    async fn due_timers(&self, until: Instant, limit: usize) -> Result<Vec<DueTimer>, StoreError> {
        let until = instant_key(until);
        self.read(move |conn| read_timers(conn, &until, limit_of(limit)))
            .await
    }

    async fn next_timer(&self) -> Result<Option<DueTimer>, StoreError> {
        self.read(|conn| {
            Ok(read_timers(conn, AFTER_EVERY_INSTANT, 1)?
                .into_iter()
                .next())
        })
        .await
    }
}
