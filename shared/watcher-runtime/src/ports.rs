//! Ports for the serverless deployment's adapters: per-deadline timers (EventBridge Scheduler)
//! and the lapse-task queue (SQS). The local `serve` needs neither: its timer loop reads the
//! store's deadline index and its delivery loop reads the outbox.
//!
//! Both are hints over the durable record (style: "timers are hints, the record is the truth"):
//! a lost timer is found by the sweep, a lost queue message by the outbox; the record and the
//! deterministic `messageId` guarantee one lapse task per (expectation, lapse, dueAt).

use async_trait::async_trait;
use watcher_core::engine::TimerKey;
use watcher_core::ids::Tenant;
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

/// One-shot timers, one per deadline and per horizon.
#[async_trait]
pub trait Timers: Send + Sync {
    /// Creates or moves the timer for `key` to fire at `at` (UTC). An `at` already past, or within
    /// the scheduler's resolution, is the caller's to evaluate at once instead.
    async fn arm(&self, tenant: &Tenant, key: &TimerKey, at: Instant) -> Result<(), PortError>;

    /// Deletes the timer for `key`; one that does not exist is success.
    async fn disarm(&self, tenant: &Tenant, key: &TimerKey) -> Result<(), PortError>;
}

/// The queue that feeds the submitter.
#[async_trait]
pub trait LapseQueue: Send + Sync {
    /// Enqueues a reference to an outbox entry (the submitter re-reads the entry itself).
    async fn enqueue(&self, entry: &OutboxEntry) -> Result<(), PortError>;

    /// Enqueues each of `entries`, in order; answers one result per entry, in the same order.
    /// The default enqueues them one after another; a queue that takes several in one request
    /// (SQS `SendMessageBatch`, ten at a time) overrides it.
    async fn enqueue_all(&self, entries: &[OutboxEntry]) -> Vec<Result<(), PortError>> {
        let mut results = Vec::with_capacity(entries.len());
        for entry in entries {
            results.push(self.enqueue(entry).await);
        }
        results
    }
}
