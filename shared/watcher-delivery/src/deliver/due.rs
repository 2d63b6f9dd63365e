//! Delivering what is due: each entry claimed, its origin checked, posted once, a lost answer
//! looked for before a second send, and the outcome recorded and logged.

use super::*;

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
    S: Outbox + ?Sized,
    E: Endpoints + ?Sized,
{
    let concurrency = SubmitterConfig::default().concurrency;
    run_due(
        store,
        client,
        endpoints,
        policy,
        limiter,
        &NoRecorder,
        &Claims::new(),
        concurrency,
        now,
        limit,
    )
    .await
}

/// A lapse task failed without being posted (no endpoint for its agent) is a delivery failure.
pub(crate) fn count_unposted(recorder: &dyn Recorder, outcome: &EntryOutcome) {
    if matches!(outcome, EntryOutcome::Failed { .. }) {
        recorder.attempt(AttemptOutcome::Failed, None);
    }
}

/// The pass behind both `deliver_due`s.
#[allow(clippy::too_many_arguments)] // private; every argument is a distinct dependency
pub(crate) async fn run_due<S, E>(
    store: &S,
    client: &A2aClient,
    endpoints: &E,
    policy: &RetryPolicy,
    limiter: &dyn RateBuckets,
    recorder: &dyn Recorder,
    claims: &Claims,
    concurrency: usize,
    now: Instant,
    limit: usize,
) -> Result<DeliveryReport, StoreError>
where
    S: Outbox + ?Sized,
    E: Endpoints + ?Sized,
{
    let mut report = DeliveryReport::default();
    let due = store.outbox_due(now, limit).await?;
    // Re-read and take rate-limit tokens one by one, in the store's order, so which entry is
    // deferred does not depend on how the posts interleave.
    let mut posts = Vec::new();
    for entry in due {
        // `outbox_due` has just read the entry: no second read.
        let (tenant, agent, message_id) = (
            entry.tenant.clone(),
            entry.agent.clone(),
            entry.message_id.clone(),
        );
        match prepare_read(
            store,
            endpoints,
            limiter,
            (&tenant, &agent, &message_id),
            Found::Read(Some(entry)),
            now,
        )
        .await?
        {
            Prepared::Done(outcome) => {
                count_unposted(recorder, &outcome);
                report.count(&outcome);
            }
            Prepared::Post(post_it) => posts.push(*post_it),
            // Only a copy is unsure.
            Prepared::Unsure => {}
        }
    }
    let results: Vec<Result<EntryOutcome, StoreError>> = stream::iter(posts)
        .map(|(entry, endpoint)| {
            let lease = claims.next(now);
            post(store, client, policy, recorder, entry, endpoint, lease, now)
        })
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
pub(crate) enum Prepared {
    /// Settled without posting.
    Done(EntryOutcome),
    /// Post it (the entry as just read) to this endpoint.
    Post(Box<(OutboxEntry, AgentEndpoint)>),
    /// The entry was a copy ([`Found::Copy`]) that would have settled it without a post: read
    /// the stored entry and decide by that.
    Unsure,
}

/// The entry [`prepare_read`] decides by.
pub(crate) enum Found {
    /// As the store answered it just now (`None`: not stored).
    Read(Option<OutboxEntry>),
    /// As it was when its lapse-queue message was sent: trusted only to be posted, and only
    /// once its claim's write confirms it (`Outbox::outbox_claim_copy`); anything else it
    /// would decide is [`Prepared::Unsure`].
    Copy(OutboxEntry),
}

/// Given the entry (tenant, agent, messageId) as just read (`found`, `None` when it is not
/// stored), checks it is queued and due, finds its endpoint and takes a rate-limit token;
/// records the no-endpoint failure and the deferral. Given a copy ([`Found::Copy`]), records
/// nothing: an outcome but a post is [`Prepared::Unsure`] (a copy may be stale, and the
/// deferral and the failure are written from the entry).
pub(crate) async fn prepare_read<S, E>(
    store: &S,
    endpoints: &E,
    limiter: &dyn RateBuckets,
    (tenant, agent, message_id): (&Tenant, &AgentId, &str),
    found: Found,
    now: Instant,
) -> Result<Prepared, StoreError>
where
    S: Outbox + ?Sized,
    E: Endpoints + ?Sized,
{
    let (found, copy) = match found {
        Found::Read(found) => (found, false),
        Found::Copy(entry) => (Some(entry), true),
    };
    // Each outcome but a post is the stored entry's to decide, never a copy's.
    let Some(mut entry) = found else {
        tracing::debug!(message_id, %tenant, %agent, "lapse task gone; skipped");
        return Ok(Prepared::Done(EntryOutcome::Skipped { delivery: None }));
    };
    if entry.delivery != DeliveryState::Queued {
        if copy {
            return Ok(Prepared::Unsure);
        }
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
        if copy {
            return Ok(Prepared::Unsure);
        }
        return Ok(Prepared::Done(EntryOutcome::NotDue {
            at: entry.next_attempt_at,
        }));
    }
    let Some(endpoint) = endpoints.endpoint(&entry.tenant, &entry.agent) else {
        if copy {
            return Ok(Prepared::Unsure);
        }
        let error = format!(
            "no endpoint is configured for agent {:?} of tenant {:?}; add `endpoint` (or a card \
             with a JSONRPC interface) to its [[agents]] entry",
            entry.agent.as_str(),
            entry.tenant.as_str()
        );
        entry.delivery = DeliveryState::Failed;
        entry.next_attempt_at = now;
        entry.last_error = Some(error.clone());
        store.outbox_update(&entry).await?;
        let outcome = EntryOutcome::Failed {
            attempts: entry.attempts,
            error,
        };
        log_outcome(&entry, &outcome);
        return Ok(Prepared::Done(outcome));
    };
    if let Err(until) = limiter
        .try_acquire(&entry.tenant, &entry.agent, now)
        .await
        .map_err(StoreError::backend)?
    {
        if copy {
            return Ok(Prepared::Unsure);
        }
        entry.next_attempt_at = until;
        store.outbox_update(&entry).await?;
        let outcome = EntryOutcome::Deferred { until };
        log_outcome(&entry, &outcome);
        return Ok(Prepared::Done(outcome));
    }
    Ok(Prepared::Post(Box::new((entry, endpoint))))
}

/// Posts one entry and records the result (a2a-delegation-in-depth, "Recovery"):
///
/// 1. The entry is claimed with `lease` ([`Outbox::outbox_claim`], [`LEASE`] from `now`): the claim also records the attempt (`attempt_started_at` = `now`) before the
///    request is sent, so a crash between the agent's answer and the record leaves the entry
///    ambiguous, not forgotten. An entry no longer `queued` is [`EntryOutcome::Skipped`]; one
///    another sender holds is [`EntryOutcome::NotDue`] until its lease ends. Either way nothing
///    is posted, so two senders handed the same entry post it once.
/// 2. An entry whose earlier attempt has no recorded outcome (or whose earlier claim expired) is
///    ambiguous: the agent may have accepted it. It is looked for first with `ListTasks` in the
///    request's `contextId`, every page ([`look_for`]); a task whose history holds its
///    `messageId` is the one, and the entry is recorded `sent` with that task's id, without
///    posting. Only when the agent does not offer `ListTasks`, answers an error, or lists no
///    such task is it posted again, with the same `messageId`.
/// 3. The answer is recorded with [`record_attempt`], which releases the claim.
#[allow(clippy::too_many_arguments)] // private; every argument is a distinct dependency
pub(crate) async fn post<S>(
    store: &S,
    client: &A2aClient,
    policy: &RetryPolicy,
    recorder: &dyn Recorder,
    entry: OutboxEntry,
    endpoint: AgentEndpoint,
    lease: Lease,
    now: Instant,
) -> Result<EntryOutcome, StoreError>
where
    S: Outbox + ?Sized,
{
    let span = lapse_task_span(&entry);
    async move {
        // `entry` is as `prepare_read` was handed it: the store may claim it without reading it
        // again (`Outbox::outbox_claim_read`).
        let claimed = store.outbox_claim_read(&entry, &lease, now).await?;
        post_claimed(
            store, client, policy, recorder, &entry, claimed, endpoint, now,
        )
        .await
    }
    .instrument(span)
    .await
}

/// The span of one attempt at `entry` ([`post`], [`post_claimed`]): its ids and the attempt's
/// number.
pub(crate) fn lapse_task_span(entry: &OutboxEntry) -> tracing::Span {
    tracing::info_span!(
        "lapse_task",
        messageId = %entry.message_id,
        expectationId = %entry.expectation_id,
        tenant = %entry.tenant,
        agent = %entry.agent,
        attempt = entry.attempts.saturating_add(1),
    )
}

/// [`post`] once the claim is made: `claimed` is what the store answered the claim of `entry`.
#[allow(clippy::too_many_arguments)] // private; every argument is a distinct dependency
pub(crate) async fn post_claimed<S>(
    store: &S,
    client: &A2aClient,
    policy: &RetryPolicy,
    recorder: &dyn Recorder,
    entry: &OutboxEntry,
    claimed: Claim,
    endpoint: AgentEndpoint,
    now: Instant,
) -> Result<EntryOutcome, StoreError>
where
    S: Outbox + ?Sized,
{
    match post_unrecorded(
        store, client, policy, recorder, entry, claimed, endpoint, now,
    )
    .await?
    {
        Posted::Done(outcome) => Ok(outcome),
        Posted::Unrecorded(unrecorded) => (*unrecorded).record(store).await,
    }
}

/// What [`post_unrecorded`] came to.
#[derive(Debug)]
pub enum Posted {
    /// Settled and written (nothing posted, or an earlier attempt found with `ListTasks`).
    Done(EntryOutcome),
    /// Posted: the agent's answer is known, its record not yet written.
    Unrecorded(Box<Unrecorded>),
}

/// A posted lapse task whose answer is known and not yet written to the store
/// ([`Unrecorded::record`]). Until it is, the entry stands claimed with its attempt started: a
/// record never written leaves it ambiguous, looked for with `ListTasks` before it is posted
/// again.
#[derive(Debug)]
pub struct Unrecorded {
    /// The entry as the claim wrote it.
    marked: OutboxEntry,
    /// The entry with the answer recorded.
    updated: OutboxEntry,
    /// What the answer came to.
    outcome: EntryOutcome,
}

impl Unrecorded {
    /// What the agent's answer came to, as it will be recorded.
    pub fn outcome(&self) -> &EntryOutcome {
        &self.outcome
    }

    /// Writes the answer against the entry as claimed (`Outbox::outbox_update_read`), which
    /// releases the claim; answers the outcome.
    ///
    /// # Errors
    /// A [`StoreError`] writing it (logged here): the entry stays claimed with its attempt
    /// started, and is looked for with `ListTasks` before it is posted again.
    pub async fn record<S>(self, store: &S) -> Result<EntryOutcome, StoreError>
    where
        S: Outbox + ?Sized,
    {
        let Unrecorded {
            marked,
            updated,
            outcome,
        } = self;
        // `marked` is the entry as the claim wrote it (`Outbox::outbox_update_read`).
        if let Err(e) = store.outbox_update_read(&marked, &updated).await {
            tracing::error!(
                message_id = %marked.message_id,
                error = %e,
                outcome = outcome_name(&outcome),
                "could not record the lapse task's delivery; it is looked for with ListTasks before it is posted again"
            );
            return Err(e);
        }
        log_outcome(&updated, &outcome);
        Ok(outcome)
    }
}

/// [`post_claimed`] up to the agent's answer, its record left to the caller
/// ([`Posted::Unrecorded`]).
#[allow(clippy::too_many_arguments)] // private; every argument is a distinct dependency
pub(crate) async fn post_unrecorded<S>(
    store: &S,
    client: &A2aClient,
    policy: &RetryPolicy,
    recorder: &dyn Recorder,
    entry: &OutboxEntry,
    claimed: Claim,
    endpoint: AgentEndpoint,
    now: Instant,
) -> Result<Posted, StoreError>
where
    S: Outbox + ?Sized,
{
    let (marked, ambiguous) = match claimed {
        Claim::Claimed {
            entry: claimed,
            ambiguous,
        } => (claimed, ambiguous),
        Claim::Taken {
            leased_until: Some(until),
            ..
        } => {
            tracing::debug!(message_id = %entry.message_id, %until, "lapse task claimed by another sender; not posted");
            return Ok(Posted::Done(EntryOutcome::NotDue { at: until }));
        }
        Claim::Taken { delivery, .. } => {
            tracing::debug!(message_id = %entry.message_id, delivery = delivery.as_str(), "lapse task no longer queued; not posted");
            return Ok(Posted::Done(EntryOutcome::Skipped {
                delivery: Some(delivery),
            }));
        }
        Claim::Gone => return Ok(Posted::Done(EntryOutcome::Skipped { delivery: None })),
    };
    if ambiguous {
        if let Some(found) = look_for(client, &endpoint, &marked).await {
            let (task_id, state) = found;
            let updated = record_found(&marked, &task_id, state, now, policy);
            store.outbox_update_read(&marked, &updated).await?;
            let outcome = EntryOutcome::Sent(SendOutcome::Task { id: task_id, state });
            tracing::info!(
                message_id = %marked.message_id,
                "an attempt without a recorded outcome had reached the agent (found by ListTasks); recorded as sent, not posted again"
            );
            log_outcome(&updated, &outcome);
            return Ok(Posted::Done(outcome));
        }
    }
    let result = client
        .send_message(&endpoint, &marked.request, &marked.message_id)
        .await;
    // A push about the new task may beat the answer (the official SDKs push the Task and
    // its statuses while the answer is on its way): the store keeps the state it recorded
    // (`outbox_update` merges the task fields, watcher_runtime::task_progress).
    let (updated, outcome) = record_attempt(&marked, &result, now, policy);
    match &outcome {
        EntryOutcome::Sent(_) => recorder.attempt(
            AttemptOutcome::Delivered,
            Some(seconds_between(updated.lapsed_at, now)),
        ),
        EntryOutcome::Retried { .. } => recorder.attempt(AttemptOutcome::Retried, None),
        EntryOutcome::Failed { .. } => recorder.attempt(AttemptOutcome::Failed, None),
        _ => {}
    }
    Ok(Posted::Unrecorded(Box::new(Unrecorded {
        marked,
        updated,
        outcome,
    })))
}

/// Looks for an ambiguous entry's task at the agent: `Some((task id, state))` when a task in the
/// request's `contextId` holds its `messageId` (every `ListTasks` page, at most
/// [`crate::client::LIST_PAGES`], within [`LOOKUP_BUDGET`]); `None` when none does, the request
/// has no `contextId`, the agent does not answer `ListTasks`, or the look-up could not finish
/// (logged): the entry is then posted again with the same `messageId`
/// (docs/interpretation.md).
pub(crate) async fn look_for(
    client: &A2aClient,
    endpoint: &AgentEndpoint,
    entry: &OutboxEntry,
) -> Option<(String, TaskState)> {
    let context_id = entry
        .request
        .pointer("/message/contextId")
        .and_then(serde_json::Value::as_str)?;
    let tenant = entry
        .request
        .get("tenant")
        .and_then(serde_json::Value::as_str);
    let lookup = client.find_in_context(endpoint, context_id, tenant, &entry.message_id, 100);
    match tokio::time::timeout(LOOKUP_BUDGET, lookup).await {
        Ok(Ok(found)) => {
            if found.is_none() {
                tracing::info!(
                    message_id = %entry.message_id,
                    context_id,
                    "an attempt without a recorded outcome is not among the agent's tasks; posting it again"
                );
            }
            found
        }
        Ok(Err(e)) => {
            tracing::warn!(
                message_id = %entry.message_id,
                error = %e.describe(),
                "the agent's ListTasks did not tell whether it has the lapse task; posting again with the same messageId"
            );
            None
        }
        Err(_) => {
            tracing::warn!(
                message_id = %entry.message_id,
                budget_secs = LOOKUP_BUDGET.as_secs(),
                "the agent's ListTasks did not finish in time; posting again with the same messageId"
            );
            None
        }
    }
}

pub(crate) fn outcome_name(outcome: &EntryOutcome) -> &'static str {
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
pub(crate) fn log_outcome(entry: &OutboxEntry, outcome: &EntryOutcome) {
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
