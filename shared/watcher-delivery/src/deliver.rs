//! The submitter loop body: takes due outbox entries, posts them, records what happened
//! (serve.md: "A lapse task is delivered when the agent answers with a JSON-RPC `result`;
//! permanent JSON-RPC errors mark it `failed`; transport errors, 5xx and transient errors are
//! retried with backoff … never sends a second one for a delivered `messageId`").
//!
//! Bookkeeping is pure ([`record_attempt`]); the functions here only carry it out against the
//! [`Store`] and the network.

use futures_util::stream::{self, StreamExt};
use tracing::Instrument;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::store::{DeliveryState, OutboxEntry, Store, StoreError};

use crate::client::{A2aClient, DeliveryError, SendOutcome};
use crate::endpoint::{AgentEndpoint, Endpoints};
use crate::rate::{RateLimit, RateLimiter};
use crate::retry::{add, jitter_fraction, next_attempt_at, RetryPolicy};

/// Settings of a [`Submitter`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SubmitterConfig {
    /// Retries and backoff.
    pub retry: RetryPolicy,
    /// Per-agent rate limit.
    pub rate_limit: RateLimit,
    /// Posts in flight at once within one [`Submitter::deliver_due`] call (at least 1). Default 8,
    /// so one slow agent does not hold up the others.
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
    /// entry rescheduled by another pass).
    NotDue {
        /// Its `next_attempt_at`.
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

/// Records one attempt's result on an entry: the pure part of delivery.
///
/// * `Ok(Task)`: `sent`, `task_id`, `task_state` (ProtoJSON name, e.g. `TASK_STATE_SUBMITTED`).
/// * `Ok(Message)`: `sent`, `answered_with_message = true`.
/// * `Ok(Unrecognised)`: `sent`, with the oddity in `last_error`.
/// * `Err(Permanent)`: `failed`, `last_error` = the error with its causes.
/// * `Err(Retryable)`: `failed` once `attempts` reaches `policy.max_attempts`; otherwise still
///   `queued` with `next_attempt_at` from [`next_attempt_at`] (jitter from [`jitter_fraction`]),
///   or the agent's `Retry-After` if later (capped at `max_backoff`).
///
/// `attempts` is incremented in every case. `now` is the instant of the attempt.
pub fn record_attempt(
    entry: &OutboxEntry,
    result: &Result<SendOutcome, DeliveryError>,
    now: Instant,
    policy: &RetryPolicy,
) -> (OutboxEntry, EntryOutcome) {
    let mut e = entry.clone();
    e.attempts = e.attempts.saturating_add(1);
    let outcome = match result {
        Ok(sent) => {
            e.delivery = DeliveryState::Sent;
            e.last_error = None;
            match sent {
                SendOutcome::Task { id, state } => {
                    e.task_id = Some(id.clone());
                    e.task_state = Some(state.as_str().to_owned());
                }
                SendOutcome::Message { .. } => e.answered_with_message = true,
                SendOutcome::Unrecognised { detail } => {
                    e.last_error = Some(format!(
                        "delivered, but the result is neither a Task nor a Message: {detail}"
                    ));
                }
            }
            EntryOutcome::Sent(sent.clone())
        }
        Err(err @ DeliveryError::Permanent { .. }) => {
            let error = err.describe();
            e.delivery = DeliveryState::Failed;
            e.last_error = Some(error.clone());
            EntryOutcome::Failed {
                attempts: e.attempts,
                error,
            }
        }
        Err(err @ DeliveryError::Retryable { .. }) => {
            if e.attempts >= policy.max_attempts.max(1) {
                let error = format!("gave up after {} attempts: {}", e.attempts, err.describe());
                e.delivery = DeliveryState::Failed;
                e.last_error = Some(error.clone());
                EntryOutcome::Failed {
                    attempts: e.attempts,
                    error,
                }
            } else {
                let error = err.describe();
                let backoff = next_attempt_at(
                    now,
                    e.attempts,
                    policy,
                    jitter_fraction(&e.message_id, e.attempts),
                );
                let asked = err
                    .retry_after()
                    .map(|d| add(now, d.min(policy.max_backoff)));
                e.next_attempt_at = asked.map_or(backoff, |asked| asked.max(backoff));
                e.last_error = Some(error.clone());
                EntryOutcome::Retried {
                    attempts: e.attempts,
                    next_attempt_at: e.next_attempt_at,
                    error,
                }
            }
        }
    };
    (e, outcome)
}

/// Posts lapse tasks: an [`A2aClient`], a [`RetryPolicy`] and a [`RateLimiter`] kept across
/// passes. Build one per process and share it.
#[derive(Debug)]
pub struct Submitter {
    client: A2aClient,
    policy: RetryPolicy,
    limiter: RateLimiter,
    concurrency: usize,
}

impl Submitter {
    /// A submitter posting with `client`.
    pub fn new(client: A2aClient, config: SubmitterConfig) -> Self {
        Submitter {
            client,
            policy: config.retry,
            limiter: RateLimiter::new(config.rate_limit),
            concurrency: config.concurrency.max(1),
        }
    }

    /// The retry policy.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// The rate limiter.
    pub fn limiter(&self) -> &RateLimiter {
        &self.limiter
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
        S: Store + ?Sized,
        E: Endpoints + ?Sized,
    {
        run_due(
            store,
            &self.client,
            endpoints,
            &self.policy,
            &self.limiter,
            self.concurrency,
            now,
            limit,
        )
        .await
    }

    /// Delivers the entry (tenant, agent, messageId) if it is queued and due at `now` (the
    /// SQS-fed submitter: one message per lapse task, naming all three). Returns what happened;
    /// [`EntryOutcome::Retried`], [`EntryOutcome::Deferred`] and [`EntryOutcome::NotDue`] mean
    /// "try again at the instant given".
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
        S: Store + ?Sized,
        E: Endpoints + ?Sized,
    {
        match prepare(
            store,
            endpoints,
            &self.limiter,
            tenant,
            agent,
            message_id,
            now,
        )
        .await?
        {
            Prepared::Done(outcome) => Ok(outcome),
            Prepared::Post(post_it) => {
                let (entry, endpoint) = *post_it;
                post(store, &self.client, &self.policy, entry, endpoint, now).await
            }
        }
    }
}

/// Delivers up to `limit` outbox entries due at `now`, in one pass.
///
/// For each entry of `store.outbox_due(now, limit)`: re-reads it and skips it unless it is still
/// `queued` and due (a delivered `messageId` is never sent twice by one store's passes run one
/// after another); marks it `failed` without an attempt when `endpoints` has no endpoint for its
/// agent; defers it, without counting an attempt, when the agent is over `limiter`'s rate; else
/// posts it with `client` and records the result with [`record_attempt`]. Entries are re-read and
/// rate-limited in the store's order, then posted up to 8 at a time. Each outcome is logged with
/// `tracing` (messageId, tenant, agent, attempt, outcome; `warn` when failed).
///
/// # Errors
/// The first [`StoreError`], as [`Submitter::deliver_due`].
pub async fn deliver_due<S, E>(
    store: &S,
    client: &A2aClient,
    endpoints: &E,
    policy: &RetryPolicy,
    limiter: &RateLimiter,
    now: Instant,
    limit: usize,
) -> Result<DeliveryReport, StoreError>
where
    S: Store + ?Sized,
    E: Endpoints + ?Sized,
{
    let concurrency = SubmitterConfig::default().concurrency;
    run_due(
        store,
        client,
        endpoints,
        policy,
        limiter,
        concurrency,
        now,
        limit,
    )
    .await
}

/// The pass behind both `deliver_due`s.
#[allow(clippy::too_many_arguments)] // private; every argument is a distinct dependency
async fn run_due<S, E>(
    store: &S,
    client: &A2aClient,
    endpoints: &E,
    policy: &RetryPolicy,
    limiter: &RateLimiter,
    concurrency: usize,
    now: Instant,
    limit: usize,
) -> Result<DeliveryReport, StoreError>
where
    S: Store + ?Sized,
    E: Endpoints + ?Sized,
{
    let mut report = DeliveryReport::default();
    let due = store.outbox_due(now, limit).await?;
    // Re-read and take rate-limit tokens one by one, in the store's order, so which entry is
    // deferred does not depend on how the posts interleave.
    let mut posts = Vec::new();
    for entry in due {
        match prepare(
            store,
            endpoints,
            limiter,
            &entry.tenant,
            &entry.agent,
            &entry.message_id,
            now,
        )
        .await?
        {
            Prepared::Done(outcome) => report.count(&outcome),
            Prepared::Post(post_it) => posts.push(*post_it),
        }
    }
    let results: Vec<Result<EntryOutcome, StoreError>> = stream::iter(posts)
        .map(|(entry, endpoint)| post(store, client, policy, entry, endpoint, now))
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut first_error = None;
    for result in results {
        match result {
            Ok(outcome) => report.count(&outcome),
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// What to do with one entry before any network traffic.
enum Prepared {
    /// Settled without posting.
    Done(EntryOutcome),
    /// Post it (the freshly re-read entry) to this endpoint.
    Post(Box<(OutboxEntry, AgentEndpoint)>),
}

/// Re-reads the entry (tenant, agent, messageId), checks it is queued and due, finds its endpoint
/// and takes a rate-limit token; records the no-endpoint failure and the deferral.
async fn prepare<S, E>(
    store: &S,
    endpoints: &E,
    limiter: &RateLimiter,
    tenant: &Tenant,
    agent: &AgentId,
    message_id: &str,
    now: Instant,
) -> Result<Prepared, StoreError>
where
    S: Store + ?Sized,
    E: Endpoints + ?Sized,
{
    let Some(mut entry) = store.outbox_get(tenant, agent, message_id).await? else {
        tracing::debug!(message_id, %tenant, %agent, "lapse task gone; skipped");
        return Ok(Prepared::Done(EntryOutcome::Skipped { delivery: None }));
    };
    if entry.delivery != DeliveryState::Queued {
        tracing::debug!(
            message_id,
            %tenant,
            agent = %entry.agent,
            delivery = entry.delivery.as_str(),
            "lapse task no longer queued; skipped"
        );
        return Ok(Prepared::Done(EntryOutcome::Skipped {
            delivery: Some(entry.delivery),
        }));
    }
    if entry.next_attempt_at > now {
        return Ok(Prepared::Done(EntryOutcome::NotDue {
            at: entry.next_attempt_at,
        }));
    }
    let Some(endpoint) = endpoints.endpoint(&entry.tenant, &entry.agent) else {
        let error = format!(
            "no endpoint is configured for agent {:?} of tenant {:?}; add `endpoint` (or a card \
             with a JSONRPC interface) to its [[agents]] entry",
            entry.agent.as_str(),
            entry.tenant.as_str()
        );
        entry.delivery = DeliveryState::Failed;
        entry.last_error = Some(error.clone());
        store.outbox_update(&entry).await?;
        let outcome = EntryOutcome::Failed {
            attempts: entry.attempts,
            error,
        };
        log_outcome(&entry, &outcome);
        return Ok(Prepared::Done(outcome));
    };
    if let Err(until) = limiter.try_acquire(&entry.tenant, &entry.agent, now) {
        entry.next_attempt_at = until;
        store.outbox_update(&entry).await?;
        let outcome = EntryOutcome::Deferred { until };
        log_outcome(&entry, &outcome);
        return Ok(Prepared::Done(outcome));
    }
    Ok(Prepared::Post(Box::new((entry, endpoint))))
}

/// Posts one entry and records the result.
async fn post<S>(
    store: &S,
    client: &A2aClient,
    policy: &RetryPolicy,
    entry: OutboxEntry,
    endpoint: AgentEndpoint,
    now: Instant,
) -> Result<EntryOutcome, StoreError>
where
    S: Store + ?Sized,
{
    let span = tracing::info_span!(
        "lapse_task",
        message_id = %entry.message_id,
        tenant = %entry.tenant,
        agent = %entry.agent,
        attempt = entry.attempts.saturating_add(1),
    );
    async move {
        let result = client
            .send_message(&endpoint, &entry.request, &entry.message_id)
            .await;
        let (updated, outcome) = record_attempt(&entry, &result, now, policy);
        if let Err(e) = store.outbox_update(&updated).await {
            tracing::error!(
                error = %e,
                outcome = outcome_name(&outcome),
                "could not record the lapse task's delivery; it will be posted again"
            );
            return Err(e);
        }
        log_outcome(&updated, &outcome);
        Ok(outcome)
    }
    .instrument(span)
    .await
}

fn outcome_name(outcome: &EntryOutcome) -> &'static str {
    match outcome {
        EntryOutcome::Sent(_) => "sent",
        EntryOutcome::Retried { .. } => "retried",
        EntryOutcome::Failed { .. } => "failed",
        EntryOutcome::Deferred { .. } => "deferred",
        EntryOutcome::Skipped { .. } => "skipped",
        EntryOutcome::NotDue { .. } => "not_due",
    }
}

/// One log line per outcome; `warn` when the lapse task is given up.
fn log_outcome(entry: &OutboxEntry, outcome: &EntryOutcome) {
    let message_id = entry.message_id.as_str();
    let tenant = entry.tenant.as_str();
    let agent = entry.agent.as_str();
    let attempt = entry.attempts;
    let name = outcome_name(outcome);
    match outcome {
        EntryOutcome::Sent(sent) => {
            let (task_id, task_state, answered_with_message) = match sent {
                SendOutcome::Task { id, state } => (Some(id.as_str()), Some(state.as_str()), false),
                SendOutcome::Message { .. } => (None, None, true),
                SendOutcome::Unrecognised { .. } => (None, None, false),
            };
            tracing::info!(
                message_id,
                tenant,
                agent,
                attempt,
                outcome = name,
                task_id,
                task_state,
                answered_with_message,
                "lapse task delivered"
            );
        }
        EntryOutcome::Retried {
            next_attempt_at,
            error,
            ..
        } => tracing::info!(
            message_id,
            tenant,
            agent,
            attempt,
            outcome = name,
            %next_attempt_at,
            error = error.as_str(),
            "lapse task not delivered; will retry"
        ),
        EntryOutcome::Failed { error, .. } => tracing::warn!(
            message_id,
            tenant,
            agent,
            attempt,
            outcome = name,
            error = error.as_str(),
            "lapse task failed"
        ),
        EntryOutcome::Deferred { until } => tracing::info!(
            message_id,
            tenant,
            agent,
            attempt,
            outcome = name,
            %until,
            "lapse task deferred by the agent's rate limit"
        ),
        EntryOutcome::Skipped { .. } | EntryOutcome::NotDue { .. } => {
            tracing::debug!(
                message_id,
                tenant,
                agent,
                outcome = name,
                "lapse task skipped"
            )
        }
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
        OutboxEntry {
            tenant: Tenant::default_tenant(),
            agent: AgentId::parse("booking").unwrap(),
            message_id: "lapse:exp-1:overdue:2026-09-10T20:15:00Z".into(),
            expectation_id: ExpectationId::parse("exp-1").unwrap(),
            lapse: LapseKind::Overdue,
            lapsed_at: t0(),
            request: json!({}),
            delivery: DeliveryState::Queued,
            attempts: 0,
            next_attempt_at: t0(),
            task_id: None,
            task_state: None,
            answered_with_message: false,
            last_error: None,
        }
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
        let ok = Ok(SendOutcome::Task {
            id: "t-9".into(),
            state: TaskState::Working,
        });
        let (e, outcome) = record_attempt(&e, &ok, t0(), &RetryPolicy::default());
        assert_eq!(e.delivery, DeliveryState::Sent);
        assert_eq!(e.attempts, 1);
        assert_eq!(e.task_id.as_deref(), Some("t-9"));
        assert_eq!(e.task_state.as_deref(), Some("TASK_STATE_WORKING"));
        assert_eq!(e.last_error, None);
        assert!(matches!(outcome, EntryOutcome::Sent(_)));
    }

    #[test]
    fn retryable_failures_back_off_then_give_up() {
        let policy = RetryPolicy {
            max_attempts: 3,
            base: Duration::from_secs(10),
            max_backoff: Duration::from_secs(60),
        };
        let (e1, o1) = record_attempt(&entry(), &retryable(), t0(), &policy);
        assert_eq!(e1.delivery, DeliveryState::Queued);
        assert!(e1.next_attempt_at >= add(t0(), Duration::from_secs(5)));
        assert!(e1.next_attempt_at <= add(t0(), Duration::from_secs(10)));
        assert!(matches!(o1, EntryOutcome::Retried { attempts: 1, .. }));
        let (e2, _) = record_attempt(&e1, &retryable(), t0(), &policy);
        assert_eq!(e2.delivery, DeliveryState::Queued);
        let (e3, o3) = record_attempt(&e2, &retryable(), t0(), &policy);
        assert_eq!(e3.delivery, DeliveryState::Failed);
        assert_eq!(e3.attempts, 3);
        assert!(e3
            .last_error
            .unwrap()
            .starts_with("gave up after 3 attempts"));
        assert!(matches!(o3, EntryOutcome::Failed { attempts: 3, .. }));
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_cap() {
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
        let (e, _) = record_attempt(&entry(), &asked(86_400), t0(), &policy);
        assert_eq!(e.next_attempt_at, add(t0(), policy.max_backoff));
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
    fn report_counts_outcomes() {
        let mut r = DeliveryReport::default();
        r.count(&EntryOutcome::Deferred { until: t0() });
        r.count(&EntryOutcome::NotDue { at: t0() });
        r.count(&EntryOutcome::Skipped { delivery: None });
        assert_eq!((r.deferred, r.skipped, r.total()), (1, 2, 3));
    }
}
