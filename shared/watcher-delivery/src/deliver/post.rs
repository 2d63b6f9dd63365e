//! Posting one claimed lapse task and recording the agent's answer, a lost answer looked for
//! before a second send (a2a-delegation-in-depth, "Recovery"); the answer may be left for the
//! caller to record ([`Posted::Unrecorded`]).

use super::*;

/// Posts one entry and records the result (a2a-delegation-in-depth, "Recovery"):
///
/// 1. The entry is claimed with `lease` ([`Outbox::outbox_claim`], [`LEASE`] from `now`): the claim also records the attempt (`attempt_started_at` = `now`) before the
///    request is sent, so a crash between the agent's answer and the record leaves the entry
///    ambiguous, not forgotten. An entry no longer `queued` is [`EntryOutcome::Skipped`]; one
///    another sender holds is [`EntryOutcome::NotDue`] until its lease ends. Either way nothing
///    is posted, so two senders handed the same entry post it once.
/// 2. An entry whose earlier attempt has no recorded outcome (or whose earlier claim expired),
///    or failed after the request may have reached the agent (a timeout, a connection lost
///    before the answer, a 5xx: [`record_attempt`] keeps `attempt_started_at` for it), is
///    ambiguous: the agent may have accepted it. It is looked for first with `ListTasks` in the
///    request's `contextId`, every page ([`look_for`]); a task whose history holds its
///    `messageId` is the one, and the entry is recorded `sent` with that task's id, without
///    posting. Only when the agent does not offer `ListTasks`, answers an error, or lists no
///    such task is it posted again, with the same `messageId`.
/// 3. The answer is recorded with [`record_attempt`], which releases the claim.
#[allow(
    clippy::too_many_arguments,
    reason = "private; every argument is a distinct dependency"
)]
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
#[allow(
    clippy::too_many_arguments,
    reason = "private; every argument is a distinct dependency"
)]
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

/// What posting a claimed lapse task came to, its record possibly left to the caller
/// ([`Submitter::deliver_copy_unrecorded`]).
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
#[allow(
    clippy::too_many_arguments,
    reason = "private; every argument is a distinct dependency"
)]
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
