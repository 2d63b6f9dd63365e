//! What the handlers need of the configured agents' cards, as a narrow trait: the timer's sweep
//! re-reads cards ([`AgentCards::refresh`]); every function picks up cards other functions kept
//! in the table ([`AgentCards::pick_up`], [`AgentCards::pick_up_all`]). The implementation over
//! the configuration and the table is `watcher_host::aws::cards::Cards` (the host builds it at
//! cold start); tests may pass their own.

use std::sync::Arc;

use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;

/// What one sweep did to cards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CardsReport {
    /// Cards the sweep tried to read.
    pub tried: usize,
    /// Cards read now and kept in the table.
    pub read: usize,
    /// Lifecycle descriptors probed and kept in the table (at most one a sweep).
    pub probed: usize,
}

/// The configured agents' cards of one function instance (serve.md "Agents are independent").
/// None of its methods fails: a card that cannot be read is tried again later, and what
/// happened is logged.
#[async_trait::async_trait]
pub trait AgentCards: Send + Sync {
    /// The sweep's part at `now`: re-reads the cards due for a re-read (unavailable, stale, or
    /// too old), keeps each card read in the table, and runs the registration probe.
    async fn refresh(&self, now: Instant) -> CardsReport;

    /// At use of `agent` of `tenant` at `now`: picks up a newer card (or lifecycle descriptor)
    /// another function kept in the table when this instance lacks it. Answers whether
    /// something was picked up.
    async fn pick_up(&self, tenant: &Tenant, agent: &AgentId, now: Instant) -> bool;

    /// [`AgentCards::pick_up`] for every configured agent this instance does not hold in good
    /// health; answers how many were picked up.
    async fn pick_up_all(&self, now: Instant) -> usize;

    /// At a push for `agent` at `now`, when this instance never read its card (so the push
    /// would answer 503): reads the card from the agent again if a read is due, backing off as
    /// `serve` does (5 s after the first failure, then doubling, at most 5 minutes apart).
    /// Answers whether the card was read. By default, nothing (the sweep re-reads cards).
    async fn read_for_push(&self, agent: &AgentId, now: Instant) -> bool {
        let _ = (agent, now);
        false
    }
}

#[async_trait::async_trait]
impl<T: AgentCards + ?Sized> AgentCards for Arc<T> {
    async fn refresh(&self, now: Instant) -> CardsReport {
        (**self).refresh(now).await
    }

    async fn pick_up(&self, tenant: &Tenant, agent: &AgentId, now: Instant) -> bool {
        (**self).pick_up(tenant, agent, now).await
    }

    async fn pick_up_all(&self, now: Instant) -> usize {
        (**self).pick_up_all(now).await
    }

    async fn read_for_push(&self, agent: &AgentId, now: Instant) -> bool {
        (**self).read_for_push(agent, now).await
    }
}
