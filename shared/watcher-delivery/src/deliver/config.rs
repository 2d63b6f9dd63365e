//! The submitter's settings: retries and the per-agent rate limit.

use super::*;

/// Settings of a [`Submitter`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SubmitterConfig {
    /// Retries and backoff.
    pub retry: RetryPolicy,
    /// Per-agent rate limit.
    pub rate_limit: RateLimit,
}
