//! The [`Submitter`]: what it posts with (client, retry policy, rate limiter, claims, metrics)
//! and how it is built.

use super::*;

/// Posts lapse tasks: an [`A2aClient`], a [`RetryPolicy`] and a [`RateLimiter`] kept across
/// passes. Build one per process and share it.
pub struct Submitter {
    pub(super) client: A2aClient,
    pub(super) policy: RetryPolicy,
    pub(super) limiter: RateLimiter,
    /// Where rate tokens are taken ([`Submitter::buckets`]), when not in `limiter`
    /// ([`Submitter::with_rate_buckets`]).
    pub(super) buckets: Option<std::sync::Arc<dyn RateBuckets>>,
    /// Counts each posting (watcher_runtime::metrics).
    pub(super) recorder: std::sync::Arc<dyn Recorder>,
    /// Names this sender in its claims ([`Claims`]).
    pub(super) claims: Claims,
}

impl Submitter {
    /// A submitter posting with `client`.
    pub fn new(client: A2aClient, config: SubmitterConfig) -> Self {
        Submitter {
            client,
            policy: config.retry,
            limiter: RateLimiter::new(config.rate_limit),
            buckets: None,
            recorder: watcher_runtime::metrics::none(),
            claims: Claims::new(),
        }
    }

    /// Claims lapse tasks for `lease` instead of [`LEASE`] (see [`lease_for`]).
    pub fn with_lease(mut self, lease: std::time::Duration) -> Self {
        self.claims.lease = lease;
        self
    }

    /// Names this submitter's sending process `sender` in its claims: a name it keeps across
    /// restarts and that no two live processes share (`serve`: its database file). A claim left
    /// by a previous incarnation with the same name (a crash) is then taken back at once instead
    /// of after [`LEASE`] ([`watcher_runtime::lease::Lease::holds_against`]). Without it (the
    /// submitter function), a crashed claim is taken over once it expires.
    pub fn with_sender(mut self, sender: impl Into<String>) -> Self {
        self.claims.sender = Some(sender.into());
        self
    }

    /// Counts each posting and its outcome with `recorder` (watcher_runtime::metrics).
    pub fn with_recorder(mut self, recorder: std::sync::Arc<dyn Recorder>) -> Self {
        self.recorder = recorder;
        self
    }

    /// The retry policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// Takes rate tokens from `buckets` instead of this process's memory: the submitter
    /// function's buckets shared by every instance (a DynamoDB item per agent), so `[delivery]
    /// per_minute` and `burst` hold across the deployment. `buckets` must apply the same limit.
    pub fn with_rate_buckets(mut self, buckets: std::sync::Arc<dyn RateBuckets>) -> Self {
        self.buckets = Some(buckets);
        self
    }

    /// The rate limiter kept in this process's memory (serve's lanes wait on it).
    pub fn limiter(&self) -> &RateLimiter {
        &self.limiter
    }

    /// Where rate tokens are taken: the shared buckets when given, else [`Self::limiter`].
    pub fn buckets(&self) -> &dyn RateBuckets {
        match &self.buckets {
            Some(b) => b.as_ref(),
            None => &self.limiter,
        }
    }

    /// The HTTP client.
    pub fn client(&self) -> &A2aClient {
        &self.client
    }
}
