//! Ports for the serverless deployment's adapters: per-deadline timers (EventBridge Scheduler)
//! and the lapse-task queue (SQS). The local `serve` needs neither: its timer loop reads the
//! store's deadline index and its delivery loop reads the outbox.
//!
//! Both are hints over the durable record (style: "timers are hints, the record is the truth"):
//! a lost timer is found by the sweep, a lost queue message by the outbox; the record and the
//! deterministic `messageId` guarantee one lapse task per (expectation, lapse, dueAt).

use async_trait::async_trait;
use watcher_core::engine::TimerKey;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;

use crate::store::OutboxEntry;

/// A failure of an adapter, typed by whether retrying can help.
#[derive(Debug, thiserror::Error)]
pub enum PortError {
    /// Throttling, timeouts, 5xx: retry with backoff.
    #[error("retryable: {reason}")]
    Retryable {
        /// What failed.
        reason: String,
        /// The cause.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// Validation, permissions, a missing resource: retrying will not help.
    #[error("not retryable: {reason}")]
    Permanent {
        /// What failed.
        reason: String,
        /// The cause.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
}

impl PortError {
    /// A failure of class `retryable`, for `reason`, caused by `source` if known.
    pub fn new(
        retryable: bool,
        reason: String,
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        if retryable {
            PortError::Retryable { reason, source }
        } else {
            PortError::Permanent { reason, source }
        }
    }

    /// Whether retrying can help.
    pub fn is_retryable(&self) -> bool {
        matches!(self, PortError::Retryable { .. })
    }

    /// `n` copies of this failure, one for each item of a request that failed as a whole
    /// (a `SendMessageBatch` that never reached SQS): each keeps the class, the reason and,
    /// shared, the cause.
    pub fn for_each_of(self, n: usize) -> Vec<PortError> {
        let retryable = self.is_retryable();
        let (reason, source) = match self {
            PortError::Retryable { reason, source } | PortError::Permanent { reason, source } => {
                (reason, source)
            }
        };
        let cause = source.map(|s| SharedCause(std::sync::Arc::from(s)));
        (0..n)
            .map(|_| {
                let source = cause
                    .clone()
                    .map(|c| Box::new(c) as Box<dyn std::error::Error + Send + Sync>);
                PortError::new(retryable, reason.clone(), source)
            })
            .collect()
    }
}

/// One cause shared by several [`PortError`]s: displays as, and has the source chain of, the
/// error it holds.
#[derive(Debug, Clone)]
struct SharedCause(std::sync::Arc<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for SharedCause {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for SharedCause {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// One-shot timers, one per deadline and per horizon.
#[async_trait]
pub trait Timers: Send + Sync {
    /// Creates or moves the timer for `key` to fire at `at` (UTC). An `at` already past, or within
    /// the scheduler's resolution, is the caller's to evaluate at once instead.
    async fn arm(&self, tenant: &Tenant, key: &TimerKey, at: Instant) -> Result<(), PortError>;

    /// Deletes the timer for `key`; one that does not exist is success.
    async fn disarm(&self, tenant: &Tenant, key: &TimerKey) -> Result<(), PortError>;
}

/// The queue that feeds the submitter: it carries wake-ups of agents' lanes, not lapse tasks.
/// The backlog lives in the outbox; a wake-up only means "run this agent's lane now"
/// (`watcher_delivery::lane::Lane::pass`), which reads the agent's due lapse tasks itself. A
/// queue may coalesce wake-ups of one agent (SQS: at most one per agent per second), so any
/// agent's backlog of any size puts a bounded number of messages in the queue every agent
/// shares.
#[async_trait]
pub trait LapseQueue: Send + Sync {
    /// Wakes the lane of `agent` of `tenant`: the submitter runs it soon after.
    ///
    /// The default refuses (permanent): a queue that feeds a submitter implements it (the SQS
    /// adapter does); test doubles that only record enqueues need not.
    ///
    /// # Errors
    /// Permanent: a missing queue, permissions, validation. Retryable: throttling, 5xx,
    /// timeouts. The lapse task stays queued in the outbox either way; the sweep finds it.
    async fn wake(&self, tenant: &Tenant, agent: &AgentId) -> Result<(), PortError> {
        Err(PortError::new(
            false,
            format!("this queue takes no wake-ups (agent {agent} of tenant {tenant})"),
            None,
        ))
    }

    /// Hands `entry` (just queued in the outbox) to the submitter: a wake-up of its agent's lane
    /// (the submitter reads the entry from the outbox itself).
    async fn enqueue(&self, entry: &OutboxEntry) -> Result<(), PortError>;

    /// Enqueues each of `entries`; answers one result per entry, in the same order.
    /// The default enqueues them one after another; a queue that takes several in one request
    /// (SQS: one wake-up per agent, `SendMessageBatch`, ten at a time) overrides it.
    async fn enqueue_all(&self, entries: &[OutboxEntry]) -> Vec<Result<(), PortError>> {
        let mut results = Vec::with_capacity(entries.len());
        for entry in entries {
            results.push(self.enqueue(entry).await);
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use super::PortError;

    #[derive(Debug, thiserror::Error)]
    #[error("throttled")]
    struct Throttled;

    #[test]
    fn a_failure_for_each_item_keeps_its_class_reason_and_cause() {
        let e = PortError::new(true, "send 3 lapse tasks".into(), Some(Box::new(Throttled)));
        let each = e.for_each_of(3);
        assert_eq!(each.len(), 3);
        for e in &each {
            assert!(e.is_retryable());
            assert_eq!(e.to_string(), "retryable: send 3 lapse tasks");
            let cause = std::error::Error::source(e).expect("the cause is kept");
            assert_eq!(cause.to_string(), "throttled");
        }
        let permanent = PortError::new(false, "bad".into(), None).for_each_of(2);
        assert!(permanent
            .iter()
            .all(|e| !e.is_retryable() && std::error::Error::source(e).is_none()));
    }
}
