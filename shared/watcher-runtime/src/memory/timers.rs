//! [`TimerIndex`] on the in-memory store: the deadline index ([`crate::store::TimerIndex`]).

use super::*;
use crate::store::TimerIndex;

#[async_trait]
impl TimerIndex for MemoryStore {
    async fn due_timers(&self, until: Instant, limit: usize) -> Result<Vec<DueTimer>, StoreError> {
        let inner = self.lock()?;
        let due: Vec<DueTimer> = inner
            .timers
            .iter()
            .take_while(|(at, ..)| *at <= until)
            .take(limit)
            .map(|(at, order, _, key, tenant)| DueTimer {
                at: *at,
                order: *order,
                tenant: tenant.clone(),
                key: key.clone(),
            })
            .collect();
        self.touched(due.len() as u64 + 1);
        Ok(due)
    }

    async fn next_timer(&self) -> Result<Option<DueTimer>, StoreError> {
        let inner = self.lock()?;
        self.touched(1);
        Ok(inner
            .timers
            .iter()
            .next()
            .map(|(at, order, _, key, tenant)| DueTimer {
                at: *at,
                order: *order,
                tenant: tenant.clone(),
                key: key.clone(),
            }))
    }
}
