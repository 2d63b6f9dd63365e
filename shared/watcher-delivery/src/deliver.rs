//! The submitter loop body: takes due outbox entries, posts them, records what happened
//! (serve.md: "A lapse task is delivered when the agent answers with a JSON-RPC `result`;
//! permanent JSON-RPC errors mark it `failed`; transport errors, 5xx and transient errors are
//! retried with backoff … never sends a second one for a delivered `messageId`").
//!
//! Bookkeeping is pure ([`record_attempt`]); the functions here only carry it out against the
//! [`Store`](watcher_runtime::store::Store) and the network.

use a2a_types::TaskState;
use futures_util::stream::{self, StreamExt};
use tracing::Instrument;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::metrics::{seconds_between, AttemptOutcome, NoRecorder, Recorder};
use watcher_runtime::store::{Claim, DeliveryState, Lease, Outbox, OutboxEntry, StoreError};

use crate::client::{A2aClient, DeliveryError, SendOutcome};
use crate::endpoint::{AgentEndpoint, Endpoints};
use crate::rate::{RateBuckets, RateLimit, RateLimiter};
use crate::retry::{add, elapsed, jitter_fraction, next_attempt_at, RetryPolicy};

mod due;
mod outcome;

pub use due::*;
pub use outcome::*;

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

/// What happened to one outbox entry in a delivery pass.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryOutcome {
    /// Delivered; the entry is now `sent`.
    Sent(SendOutcome),
    /// A retryable failure; the entry stays `queued` until `next_attempt_at`.
    Retried {
        /// Attempts made so far.
        attempts: u32,
        /// Earliest next attempt.
        next_attempt_at: Instant,
        /// The failure, in words.
        error: String,
    },
    /// Given up; the entry is now `failed`.
    Failed {
        /// Attempts made so far (0 when nothing was posted, e.g. no endpoint).
        attempts: u32,
        /// Why, in words (the entry's `last_error`).
        error: String,
    },
    /// Over the agent's rate limit: not posted and no attempt counted; the entry stays `queued`
    /// with `next_attempt_at` = `until`.
    Deferred {
        /// When a token frees.
        until: Instant,
    },
    /// Not posted because, on re-reading, the entry is no longer `queued` (another pass delivered
    /// or failed it) or is gone.
    Skipped {
        /// Its state on re-reading, `None` when gone.
        delivery: Option<DeliveryState>,
    },
    /// Not posted because its next attempt is later than `now` ([`Submitter::deliver_one`], or an
    /// entry rescheduled by another pass), or because another sender's claim on it holds until
    /// `at` ([`Outbox::outbox_claim`]).
    NotDue {
        /// Its `next_attempt_at`, or the end of another sender's claim.
        at: Instant,
    },
}

/// Counts of one [`deliver_due`] pass.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    /// Entries delivered (now `sent`).
    pub sent: usize,
    /// Entries that failed retryably and were rescheduled.
    pub retried: usize,
    /// Entries that became `failed`.
    pub failed: usize,
    /// Entries deferred by the rate limit (no attempt counted).
    pub deferred: usize,
    /// Entries not posted because they were no longer queued or not due on re-reading.
    pub skipped: usize,
}

impl DeliveryReport {
    /// Counts one outcome.
    pub fn count(&mut self, outcome: &EntryOutcome) {
        match outcome {
            EntryOutcome::Sent(_) => self.sent += 1,
            EntryOutcome::Retried { .. } => self.retried += 1,
            EntryOutcome::Failed { .. } => self.failed += 1,
            EntryOutcome::Deferred { .. } => self.deferred += 1,
            EntryOutcome::Skipped { .. } | EntryOutcome::NotDue { .. } => self.skipped += 1,
        }
    }

    /// Entries looked at in this pass, whatever happened to them.
    pub fn total(&self) -> usize {
        self.sent + self.retried + self.failed + self.deferred + self.skipped
    }
}

/// Posts lapse tasks: an [`A2aClient`], a [`RetryPolicy`] and a [`RateLimiter`] kept across
/// passes. Build one per process and share it.
pub struct Submitter {
    client: A2aClient,
    policy: RetryPolicy,
    limiter: RateLimiter,
    /// Where [`Submitter::deliver_one`] and [`Submitter::deliver_due`] take rate tokens, when not
    /// in `limiter` ([`Submitter::with_rate_buckets`]).
    buckets: Option<std::sync::Arc<dyn RateBuckets>>,
    concurrency: usize,
    /// Counts each posting (watcher_runtime::metrics).
    recorder: std::sync::Arc<dyn Recorder>,
    /// Names this sender in its claims ([`Claims`]).
    claims: Claims,
}

/// How long a claim on a lapse task holds ([`watcher_runtime::lease`]): 5 minutes. Longer than
/// anything its holder does between the claim and the outcome's write (a `ListTasks` look-up,
/// bounded by [`LOOKUP_BUDGET`], then one `SendMessage`, bounded by the client's connect and
/// request timeouts, 10 s each by default), so a live sender never loses its claim; and longer
/// than the submitter function's timeout (60 s), so a claim outlives the invocation that made
/// it. Short enough that a crashed sender's lapse task is taken over within minutes, and
/// shorter than the lapse queue's visibility timeout (360 s), so the redelivered message finds
/// the crashed claim expired (docs/dynamodb.md "Leased sends").
pub const LEASE: std::time::Duration = std::time::Duration::from_secs(300);

/// The lease for a submitter whose requests may each take `timeout` (connect and answer, each
/// bounded by it): [`LEASE`], or longer when the look-up, its connect and one send could take
/// longer (a `[delivery] timeout_secs` above about two minutes), with a minute to spare.
pub fn lease_for(timeout: std::time::Duration) -> std::time::Duration {
    LEASE.max(LOOKUP_BUDGET + timeout * 2 + std::time::Duration::from_secs(60))
}

/// The longest an ambiguous lapse task is looked for with `ListTasks` (every page) before it is
/// posted again with the same `messageId`: 20 s, well inside [`LEASE`] and inside the submitter
/// function's 60 s timeout, so a look-up that keeps timing out still ends in a send.
pub const LOOKUP_BUDGET: std::time::Duration = std::time::Duration::from_secs(20);

/// The leases one sender claims with ([`watcher_runtime::lease::Lease`]): owners
/// `{incarnation}#{n}`, unique per claim, so only the claim's own outcome releases it
/// ([`watcher_runtime::lease::keep_lease`]).
#[derive(Debug)]
pub(crate) struct Claims {
    incarnation: String,
    sender: Option<String>,
    lease: std::time::Duration,
    count: std::sync::atomic::AtomicU64,
}

impl Claims {
    /// An incarnation name unique across processes: the process id, the instant the submitter
    /// was made (nanoseconds since the epoch, in hex) and a process-wide count.
    fn new() -> Self {
        static MADE: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let n = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Claims {
            incarnation: format!("{}-{nanos:x}-{n}", std::process::id()),
            sender: None,
            lease: LEASE,
            count: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The lease of a new claim at `now`, holding for the submitter's lease length.
    fn next(&self, now: Instant) -> Lease {
        let n = self
            .count
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Lease {
            owner: format!("{}#{n}", self.incarnation),
            incarnation: self.incarnation.clone(),
            sender: self.sender.clone(),
            until: add(now, self.lease),
        }
    }
}

impl Submitter {
    /// A submitter posting with `client`.
    pub fn new(client: A2aClient, config: SubmitterConfig) -> Self {
        Submitter {
            client,
            policy: config.retry,
            limiter: RateLimiter::new(config.rate_limit),
            buckets: None,
            concurrency: config.concurrency.max(1),
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

    /// Delivers up to `limit` outbox entries due at `now` (see [`deliver_due`]).
    ///
    /// # Errors
    /// The first [`StoreError`]; entries posted before it are recorded, except the one whose
    /// update failed, which is posted again on a later pass (same `messageId`).
    pub async fn deliver_due<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        now: Instant,
        limit: usize,
    ) -> Result<DeliveryReport, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        run_due(
            store,
            &self.client,
            endpoints,
            &self.policy,
            self.buckets(),
            self.recorder.as_ref(),
            &self.claims,
            self.concurrency,
            now,
            limit,
        )
        .await
    }

    /// Delivers the entry (tenant, agent, messageId) if it is queued and due at `now`, and this
    /// submitter's claim on it is granted (the SQS-fed submitter: one message per lapse task,
    /// naming all three; serve's lanes). Returns what happened;
    /// [`EntryOutcome::Retried`], [`EntryOutcome::Deferred`] and [`EntryOutcome::NotDue`] mean
    /// "try again at the instant given". Reads the entry, then [`Submitter::deliver_read`].
    ///
    /// # Errors
    /// A [`StoreError`] reading or updating the entry.
    pub async fn deliver_one<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        now: Instant,
    ) -> Result<EntryOutcome, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        let found = store.outbox_get(tenant, agent, message_id).await?;
        self.deliver_read(store, endpoints, (tenant, agent, message_id), found, now)
            .await
    }

    /// [`Submitter::deliver_one`] of the entry (tenant, agent, messageId) the caller has just
    /// read (`found`; `None` when it is not stored), without reading it again: the claim is
    /// tried against it (`Outbox::outbox_claim_read`), and the outcome written against the
    /// entry as claimed (`Outbox::outbox_update_read`), so a send costs the store no read when
    /// nothing else writes the entry meanwhile. A stale `found` costs a read, never a second
    /// send: the claim judges the stored entry whenever it differs from `found`.
    ///
    /// # Errors
    /// A [`StoreError`] reading or updating the entry.
    pub async fn deliver_read<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        key: (&Tenant, &AgentId, &str),
        found: Option<OutboxEntry>,
        now: Instant,
    ) -> Result<EntryOutcome, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        self.deliver_read_with(store, endpoints, self.buckets(), key, found, now)
            .await
    }

    /// [`Submitter::deliver_read`] taking its rate token from `buckets` (tokens the caller took
    /// for a batch at once, [`crate::rate::Prepaid`]) instead of [`Submitter::buckets`].
    ///
    /// # Errors
    /// As [`Submitter::deliver_read`].
    pub async fn deliver_read_with<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        buckets: &dyn RateBuckets,
        (tenant, agent, message_id): (&Tenant, &AgentId, &str),
        found: Option<OutboxEntry>,
        now: Instant,
    ) -> Result<EntryOutcome, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        match prepare_read(
            store,
            endpoints,
            buckets,
            (tenant, agent, message_id),
            Found::Read(found),
            now,
        )
        .await?
        {
            Prepared::Done(outcome) => {
                count_unposted(self.recorder.as_ref(), &outcome);
                Ok(outcome)
            }
            // Only a copy is unsure; a read is what the store holds.
            Prepared::Unsure => Ok(EntryOutcome::Skipped { delivery: None }),
            Prepared::Post(post_it) => {
                let (entry, endpoint) = *post_it;
                post(
                    store,
                    &self.client,
                    &self.policy,
                    self.recorder.as_ref(),
                    entry,
                    endpoint,
                    self.claims.next(now),
                    now,
                )
                .await
            }
        }
    }
}

impl Submitter {
    /// [`Submitter::deliver_read`] of `copy`, the entry as it was when its lapse-queue message
    /// was sent, for a send with no read at all: when `copy` is queued, due at `now`, has an
    /// endpoint and gets a rate-limit token, it is claimed by a write conditional on the stored
    /// entry being `copy` (`Outbox::outbox_claim_copy`), posted and recorded as
    /// [`Submitter::deliver_read`] does. Answers `None`, having written nothing, when the copy
    /// cannot be acted on: it would settle the entry otherwise (not queued, not due, no
    /// endpoint, over the rate) or the store's entry is no longer the copy. The caller then
    /// reads the entry and goes by [`Submitter::deliver_read`]. A stale copy costs that fallback
    /// a conditional write and, at most, one rate-limit token of the agent's; it is never sent.
    /// On a store that cannot claim by a copy ([`Outbox::outbox_claims_copies`] `false`) it
    /// answers `None` at once, having taken nothing.
    ///
    /// # Errors
    /// A [`StoreError`] claiming or updating the entry.
    pub async fn deliver_copy<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        copy: OutboxEntry,
        now: Instant,
    ) -> Result<Option<EntryOutcome>, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        self.deliver_copy_with(store, endpoints, self.buckets(), copy, now)
            .await
    }

    /// [`Submitter::deliver_copy`] taking its rate token from `buckets` (tokens the caller took
    /// for a batch at once, [`crate::rate::Prepaid`]) instead of [`Submitter::buckets`].
    ///
    /// # Errors
    /// As [`Submitter::deliver_copy`].
    pub async fn deliver_copy_with<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        buckets: &dyn RateBuckets,
        copy: OutboxEntry,
        now: Instant,
    ) -> Result<Option<EntryOutcome>, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        match self
            .deliver_copy_unrecorded(store, endpoints, buckets, copy, now)
            .await?
        {
            None => Ok(None),
            Some(Posted::Done(outcome)) => Ok(Some(outcome)),
            Some(Posted::Unrecorded(unrecorded)) => (*unrecorded).record(store).await.map(Some),
        }
    }

    /// [`Submitter::deliver_copy_with`] up to the agent's answer: a lapse task posted comes back
    /// [`Posted::Unrecorded`], for the caller to write ([`Unrecorded::record`]) while it goes on
    /// to the next (the SQS-fed submitter's lanes write one lapse task's record while claiming
    /// the next).
    ///
    /// # Errors
    /// A [`StoreError`] claiming the entry.
    pub async fn deliver_copy_unrecorded<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        buckets: &dyn RateBuckets,
        copy: OutboxEntry,
        now: Instant,
    ) -> Result<Option<Posted>, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        if !store.outbox_claims_copies() {
            // The claim could not come: read now, before a rate-limit token is spent on it.
            return Ok(None);
        }
        let (tenant, agent, message_id) = (
            copy.tenant.clone(),
            copy.agent.clone(),
            copy.message_id.clone(),
        );
        let prepared = prepare_read(
            store,
            endpoints,
            buckets,
            (&tenant, &agent, &message_id),
            Found::Copy(copy),
            now,
        )
        .await?;
        let (entry, endpoint) = match prepared {
            Prepared::Post(post_it) => *post_it,
            Prepared::Done(_) | Prepared::Unsure => return Ok(None),
        };
        let lease = self.claims.next(now);
        let Some(claimed) = store.outbox_claim_copy(&entry, &lease, now).await? else {
            tracing::debug!(message_id = %entry.message_id, "the lapse task changed since it was queued; read again");
            return Ok(None);
        };
        let span = lapse_task_span(&entry);
        post_unrecorded(
            store,
            &self.client,
            &self.policy,
            self.recorder.as_ref(),
            &entry,
            claimed,
            endpoint,
            now,
        )
        .instrument(span)
        .await
        .map(Some)
    }

    /// Polls the followed lapse task `entry` with `GetTask` at `now` and records what it says
    /// ([`record_poll`]); answers the entry as written.
    ///
    /// # Errors
    /// A [`StoreError`] recording the poll.
    pub async fn poll_one<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        entry: &OutboxEntry,
        now: Instant,
    ) -> Result<OutboxEntry, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        let result = match (
            endpoints.endpoint(&entry.tenant, &entry.agent),
            entry.task_id.as_deref(),
        ) {
            (Some(endpoint), Some(task_id)) => {
                let tenant = entry
                    .request
                    .get("tenant")
                    .and_then(serde_json::Value::as_str);
                self.client.get_task_state(&endpoint, task_id, tenant).await
            }
            _ => Err(DeliveryError::Permanent {
                reason: "no endpoint or task id to poll".into(),
                source: None,
            }),
        };
        self.record_poll_result(store, entry, result, now).await
    }

    /// Records `result`, a `GetTask` poll of the followed lapse task `entry` made elsewhere (the
    /// reconciler, which also feeds the task's artifacts through the push ingest path), as
    /// [`Submitter::poll_one`] does.
    ///
    /// # Errors
    /// A [`StoreError`] recording the poll.
    pub async fn record_poll_result<S>(
        &self,
        store: &S,
        entry: &OutboxEntry,
        result: Result<TaskState, DeliveryError>,
        now: Instant,
    ) -> Result<OutboxEntry, StoreError>
    where
        S: Outbox + ?Sized,
    {
        let updated = record_poll(entry, &result, now, &self.policy);
        store.outbox_update(&updated).await?;
        if updated.task_state != entry.task_state {
            tracing::info!(
                message_id = %entry.message_id,
                agent = %entry.agent,
                task_state = updated.task_state.as_deref(),
                following = updated.follow_at.is_some(),
                "lapse task's task changed state"
            );
        }
        Ok(updated)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use a2a_types::TaskState;
    use serde_json::json;
    use std::time::Duration;
    use watcher_core::ids::{AgentId, ExpectationId};
    use watcher_core::record::LapseKind;

    fn t0() -> Instant {
        Instant::parse("2026-09-10T22:15:00Z").unwrap()
    }

    fn entry() -> OutboxEntry {
        OutboxEntry::queued(
            Tenant::default_tenant(),
            AgentId::parse("booking").unwrap(),
            "lapse:exp-1:overdue:2026-09-10T20:15:00Z".into(),
            ExpectationId::parse("exp-1").unwrap(),
            LapseKind::Overdue,
            t0(),
            json!({}),
        )
    }

    /// The agent answered with the task `id` in `state`.
    fn task(id: &str, state: TaskState) -> Result<SendOutcome, DeliveryError> {
        Ok(SendOutcome::Task {
            id: id.into(),
            state,
        })
    }

    fn retryable() -> Result<SendOutcome, DeliveryError> {
        Err(DeliveryError::Retryable {
            reason: "HTTP 503".into(),
            retry_after: None,
            source: None,
        })
    }

    #[test]
    fn a_task_answer_is_sent_with_its_id_and_state() {
        let mut e = entry();
        e.last_error = Some("HTTP 503".into());
        let ok = task("t-9", TaskState::Working);
        let (e, outcome) = record_attempt(&e, &ok, t0(), &RetryPolicy::default());
        assert_eq!(e.delivery, DeliveryState::Sent);
        assert_eq!(e.attempts, 1);
        assert_eq!(e.task_id.as_deref(), Some("t-9"));
        assert_eq!(e.task_state.as_deref(), Some("TASK_STATE_WORKING"));
        assert_eq!(e.last_error, None);
        assert!(matches!(outcome, EntryOutcome::Sent(_)));
    }

    #[test]
    fn retryable_failures_back_off_by_age_then_give_up() {
        let policy = RetryPolicy {
            give_up_after: Duration::from_secs(60),
            base: Duration::from_secs(10),
            max_backoff: Duration::from_secs(40),
            ..RetryPolicy::default()
        };
        let (e1, o1) = record_attempt(&entry(), &retryable(), t0(), &policy);
        assert_eq!(e1.delivery, DeliveryState::Queued);
        assert_eq!(e1.retrying_since, Some(t0()));
        assert!(e1.next_attempt_at >= add(t0(), Duration::from_secs(5)));
        assert!(e1.next_attempt_at <= add(t0(), Duration::from_secs(10)));
        assert!(matches!(o1, EntryOutcome::Retried { attempts: 1, .. }));
        // However many attempts, still queued while younger than give_up_after …
        let mut e = e1;
        for _ in 0..20 {
            let at = e.next_attempt_at;
            if at >= add(t0(), Duration::from_secs(60)) {
                break;
            }
            let (next, _) = record_attempt(&e, &retryable(), at, &policy);
            assert_eq!(next.delivery, DeliveryState::Queued, "{next:?}");
            assert_eq!(
                next.retrying_since,
                Some(t0()),
                "the age runs from the first failure"
            );
            assert!(next.next_attempt_at <= add(t0(), Duration::from_secs(60)));
            e = next;
        }
        // … and the last attempt is made exactly at that age, then it fails.
        assert_eq!(e.next_attempt_at, add(t0(), Duration::from_secs(60)));
        let (last, o) = record_attempt(&e, &retryable(), e.next_attempt_at, &policy);
        assert_eq!(last.delivery, DeliveryState::Failed);
        assert!(
            last.last_error
                .as_deref()
                .unwrap()
                .starts_with("gave up after retrying for 1m 0s"),
            "{:?}",
            last.last_error
        );
        assert!(matches!(o, EntryOutcome::Failed { .. }));
    }

    /// The default policy (give_up_after 24 h, backoff 1 s doubling to 5 min) keeps a lapse task
    /// queued through an agent outage of 150 s, and the first attempt after the agent is back
    /// comes at most `max_backoff` after it: every lapse task reaches an agent that recovers.
    #[test]
    fn defaults_recover_from_a_150_second_outage() {
        let policy = RetryPolicy::default();
        assert_eq!(policy.give_up_after, Duration::from_secs(24 * 3600));
        let back = add(t0(), Duration::from_secs(150));
        let mut e = entry();
        let mut now = t0();
        let mut attempts = 0;
        while now < back {
            let (next, outcome) = record_attempt(&e, &retryable(), now, &policy);
            assert_eq!(next.delivery, DeliveryState::Queued, "{outcome:?}");
            assert!(next.next_attempt_at > now);
            e = next;
            now = e.next_attempt_at;
            attempts += 1;
        }
        assert!(attempts > 5, "{attempts}");
        assert!(
            now <= add(back, policy.max_backoff),
            "the first attempt after recovery, {now}, is within max_backoff of {back}"
        );
        let ok = task("t-1", TaskState::Submitted);
        let (sent, _) = record_attempt(&e, &ok, now, &policy);
        assert_eq!(sent.delivery, DeliveryState::Sent);
        assert_eq!(sent.retrying_since, None);
        // Even a day-long outage is retried to its end.
        let (late, _) = record_attempt(
            &e,
            &retryable(),
            add(t0(), Duration::from_secs(23 * 3600)),
            &policy,
        );
        assert_eq!(late.delivery, DeliveryState::Queued);
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_give_up_age() {
        let policy = RetryPolicy::default();
        let asked = |secs| {
            Err(DeliveryError::Retryable {
                reason: "HTTP 429".into(),
                retry_after: Some(Duration::from_secs(secs)),
                source: None,
            })
        };
        let (e, _) = record_attempt(&entry(), &asked(120), t0(), &policy);
        assert_eq!(e.next_attempt_at, add(t0(), Duration::from_secs(120)));
        let (e, _) = record_attempt(&entry(), &asked(3600), t0(), &policy);
        assert_eq!(
            e.next_attempt_at,
            add(t0(), Duration::from_secs(3600)),
            "longer than max_backoff, as the agent asks"
        );
        let (e, _) = record_attempt(&entry(), &asked(3 * 86_400), t0(), &policy);
        assert_eq!(e.next_attempt_at, add(t0(), policy.give_up_after));
    }

    #[test]
    fn a_reply_naming_the_origin_task_is_a_protocol_error() {
        let mut e = entry();
        e.request = json!({ "message": { "messageId": "m", "referenceTaskIds": ["task-origin"] } });
        let ok = task("task-origin", TaskState::Working);
        let (e, outcome) = record_attempt(&e, &ok, t0(), &RetryPolicy::default());
        assert_eq!(e.delivery, DeliveryState::Failed);
        assert_eq!(e.task_id, None);
        assert!(e.last_error.unwrap().starts_with("protocol error"));
        assert!(matches!(outcome, EntryOutcome::Failed { .. }));
    }

    #[test]
    fn the_attempt_mark_is_cleared_with_the_outcome() {
        let mut e = entry();
        e.attempt_started_at = Some(t0());
        let (r, _) = record_attempt(&e, &retryable(), t0(), &RetryPolicy::default());
        assert_eq!(r.attempt_started_at, None);
        let found = record_found(
            &e,
            "task-9",
            TaskState::Submitted,
            t0(),
            &RetryPolicy::default(),
        );
        assert_eq!(found.delivery, DeliveryState::Sent);
        assert_eq!(found.task_id.as_deref(), Some("task-9"));
        assert_eq!(found.attempt_started_at, None);
        assert_eq!(found.attempts, 0, "nothing was posted");
    }

    #[test]
    fn a_task_without_push_is_followed_until_terminal_or_a_persons_turn() {
        let policy = RetryPolicy::default();
        let ok = |state| task("t-1", state);
        let (e, _) = record_attempt(&entry(), &ok(TaskState::Submitted), t0(), &policy);
        assert_eq!(e.follow_since, Some(t0()));
        assert_eq!(e.follow_at, Some(add(t0(), policy.poll_first)));
        // Polls thin out: half the time followed so far, never below poll_first.
        let at1 = e.follow_at.unwrap();
        let e1 = record_poll(&e, &Ok(TaskState::Working), at1, &policy);
        assert_eq!(e1.task_state.as_deref(), Some("TASK_STATE_WORKING"));
        assert_eq!(e1.follow_at, Some(add(at1, policy.poll_first)));
        let later = add(t0(), Duration::from_secs(120));
        let e2 = record_poll(&e1, &Ok(TaskState::Working), later, &policy);
        assert_eq!(e2.follow_at, Some(add(later, Duration::from_secs(60))));
        // A person's turn: no more polls, shown as such by its state.
        let e3 = record_poll(&e2, &Ok(TaskState::InputRequired), later, &policy);
        assert_eq!(e3.follow_at, None);
        assert_eq!(e3.task_state.as_deref(), Some("TASK_STATE_INPUT_REQUIRED"));
        assert_eq!(e3.delivery, DeliveryState::Sent);
        assert_eq!(
            e3.needs_person_since,
            Some(later),
            "waiting for a person since the poll"
        );
        let done = record_poll(&e2, &Ok(TaskState::Completed), later, &policy);
        assert_eq!(done.follow_at, None);
        assert_eq!(done.needs_person_since, None);
        // A transient error polls again; a permanent one stops, saying why.
        let transient = Err(DeliveryError::Retryable {
            reason: "HTTP 503".into(),
            retry_after: None,
            source: None,
        });
        let again = record_poll(&e2, &transient, later, &policy);
        assert!(again.follow_at.is_some());
        let gone = Err(DeliveryError::Permanent {
            reason: "agent answered JSON-RPC error -32001: Task not found".into(),
            source: None,
        });
        let stopped = record_poll(&e2, &gone, later, &policy);
        assert_eq!(stopped.follow_at, None);
        assert!(stopped.last_error.unwrap().contains("-32001"));
        // Followed for give_up_after: stop.
        let day = add(t0(), policy.give_up_after);
        let old = record_poll(&e2, &Ok(TaskState::Working), day, &policy);
        assert_eq!(old.follow_at, None);
        assert!(old.last_error.unwrap().starts_with("stopped following"));
    }

    #[test]
    fn pushed_terminal_or_interrupted_tasks_are_not_followed() {
        let policy = RetryPolicy::default();
        let ok = |state| task("t-1", state);
        let mut pushed = entry();
        pushed.request =
            json!({ "configuration": { "taskPushNotificationConfig": { "url": "https://w/" } } });
        let (e, _) = record_attempt(&pushed, &ok(TaskState::Submitted), t0(), &policy);
        assert_eq!(e.follow_at, None);
        for state in [TaskState::Completed, TaskState::AuthRequired] {
            let (e, _) = record_attempt(&entry(), &ok(state), t0(), &policy);
            assert_eq!(e.follow_at, None, "{state:?}");
        }
        let (e, _) = record_attempt(
            &entry(),
            &Ok(SendOutcome::Message {
                message_id: "m".into(),
            }),
            t0(),
            &policy,
        );
        assert_eq!(e.follow_at, None);
    }

    #[test]
    fn permanent_failures_fail_at_once() {
        let err = Err(DeliveryError::Permanent {
            reason: "agent answered JSON-RPC error -32602: Validation failed".into(),
            source: None,
        });
        let (e, _) = record_attempt(&entry(), &err, t0(), &RetryPolicy::default());
        assert_eq!(e.delivery, DeliveryState::Failed);
        assert_eq!(e.attempts, 1);
        assert!(e.last_error.unwrap().contains("Validation failed"));
    }

    #[test]
    fn the_lease_outlasts_a_look_up_and_a_send() {
        assert_eq!(
            lease_for(Duration::from_secs(10)),
            LEASE,
            "the default timeouts"
        );
        // A 10-minute timeout: 20 s look-up + connect + answer + a minute.
        assert_eq!(
            lease_for(Duration::from_secs(600)),
            Duration::from_secs(20 + 1200 + 60)
        );
        assert!(LEASE > LOOKUP_BUDGET + Duration::from_secs(2 * 10));
    }

    #[test]
    fn report_counts_outcomes() {
        let mut r = DeliveryReport::default();
        r.count(&EntryOutcome::Deferred { until: t0() });
        r.count(&EntryOutcome::NotDue { at: t0() });
        r.count(&EntryOutcome::Skipped { delivery: None });
        assert_eq!((r.deferred, r.skipped, r.total()), (1, 2, 3));
    }
}
