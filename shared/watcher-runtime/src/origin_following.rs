//! Following an origin task with `GetTask` (origin-task reconciliation): the watcher's step that
//! starts it, in the store or in the directory's in-memory queue ([`crate::origins`] keeps the
//! followed tasks' types and the in-memory queue).

use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;

use crate::origins::FollowedOrigin;
use crate::store::Store;
use crate::watcher::Watcher;

impl<S: Store + ?Sized> Watcher<S> {
    /// Follows the origin task `task_id` of `agent` from `now` when the agent's origins are
    /// reconciled (issue 11 item 5: called when the task raised expectations): in the store when
    /// the directory says so ([`crate::directory::Directory::set_origins_in_store`]: the
    /// serverless deployment; first poll [`crate::origins::OriginQueue::first_poll`] later, a
    /// task already followed keeping its schedule), else in the directory's in-memory queue.
    /// Answers whether it is followed; a
    /// store failure is logged and answers `false` (the origin is still checked before any lapse
    /// task is sent).
    pub async fn follow_origin(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
        now: Instant,
    ) -> bool {
        let directory = &self.directory;
        if !directory.origins_in_store() {
            return directory.follow_origin(tenant, agent, task_id, now);
        }
        if !directory.reconciles(tenant, agent) {
            return false;
        }
        let first = jiff::SignedDuration::try_from(directory.origins().first_poll())
            .unwrap_or(jiff::SignedDuration::MAX);
        let origin = FollowedOrigin {
            tenant: tenant.clone(),
            agent: agent.clone(),
            task_id: task_id.to_owned(),
            since: now,
            next_at: now.checked_add(first).unwrap_or(Instant::MAX),
        };
        match self.store.origin_follow(&origin).await {
            Ok(_) => true,
            Err(e) => {
                tracing::warn!(%tenant, %agent, task_id, error = %e,
                    "origin-task reconciliation: following the task in the store failed (its origin \
                     is still checked once before any lapse task is sent)");
                false
            }
        }
    }
}
