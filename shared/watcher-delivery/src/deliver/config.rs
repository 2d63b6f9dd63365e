//! The submitter's settings: retries, the per-agent rate limit, and posts in flight.

use super::*;

/// Settings of a [`Submitter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubmitterConfig {
    /// Retries and backoff.
    pub retry: RetryPolicy,
    /// Per-agent rate limit.
    pub rate_limit: RateLimit,
    /// Posts in flight at once within one [`Submitter::deliver_due`] call (at least 1). Default
    /// 8. `serve` does not use `deliver_due`: its per-agent lanes ([`crate::lanes`]) bound what is
    /// in flight per agent and overall.
    pub concurrency: usize,
}

impl Default for SubmitterConfig {
    fn default() -> Self {
        SubmitterConfig {
            retry: RetryPolicy::default(),
            rate_limit: RateLimit::default(),
            concurrency: 8,
        }
    }
}
