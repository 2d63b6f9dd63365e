//! Posting one claimed lapse task and recording the agent's answer, a lost answer looked for
//! before a second send (a2a-delegation-in-depth, "Recovery").

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
    places: Places<'_>,
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
            store, client, policy, recorder, &entry, claimed, endpoint, places, now,
        )
        .await
    }
    .instrument(span)
    .await
}

/// The span of one attempt at `entry` ([`post`], [`post_claimed`]): its ids and the attempt's
/// number.
pub(crate) fn lapse_task_span(entry: &OutboxEntry) -> tracing::Span {
    let span = tracing::info_span!(
        "lapse_task",
        messageId = %entry.message_id,
        expectationId = %entry.expectation_id,
        tenant = %entry.tenant,
        agent = %entry.agent,
        attempt = entry.attempts.saturating_add(1),
    );
    // In the cause's trace when spans are exported (watcher_runtime::trace_cause).
    if let Some(cause) = &entry.trace {
        watcher_runtime::trace_cause::enter(&span, cause);
    }
    span
}

/// [`post`] once the claim is made: `claimed` is what the store answered the claim of `entry`.
/// The answer is written against the entry as claimed (`Outbox::outbox_update_read`), which
/// releases the claim; a write that fails leaves the entry claimed with its attempt started, so
/// it is looked for with `ListTasks` before it is posted again.
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
    mut places: Places<'_>,
    now: Instant,
) -> Result<EntryOutcome, StoreError>
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
            return Ok(EntryOutcome::NotDue { at: until });
        }
        Claim::Taken { delivery, .. } => {
            tracing::debug!(message_id = %entry.message_id, delivery = delivery.as_str(), "lapse task no longer queued; not posted");
            return Ok(EntryOutcome::Skipped {
                delivery: Some(delivery),
            });
        }
        Claim::Gone => return Ok(EntryOutcome::Skipped { delivery: None }),
    };
    // Claimed: now to the agent, in one of its places (`Places`).
    places.enter().await;
    if ambiguous {
        if let Some(found) = look_for(client, &endpoint, &marked).await {
            places.release();
            let (task_id, state) = found;
            let updated = record_found(&marked, &task_id, state, now, policy);
            store.outbox_update_read(&marked, &updated).await?;
            let outcome = EntryOutcome::Sent(SendOutcome::Task { id: task_id, state });
            tracing::info!(
                message_id = %marked.message_id,
                "an attempt without a recorded outcome had reached the agent (found by ListTasks); recorded as sent, not posted again"
            );
            log_outcome(&updated, &outcome);
            return Ok(outcome);
        }
    }
    // One span per send, with the `traceparent` it sends (docs/howto/tracing.md).
    let send = tracing::info_span!("send", traceparent = tracing::field::Empty);
    let traceparent = marked.trace.map(|cause| {
        let tp = watcher_runtime::trace_cause::outgoing(&send, &cause);
        send.record("traceparent", tracing::field::display(tp));
        tp
    });
    let result = client
        .send_traced(
            &endpoint,
            &marked.request,
            &marked.message_id,
            traceparent.as_ref(),
        )
        .instrument(send)
        .await;
    // The agent has answered: its place is free for the next send while this one is recorded.
    places.release();
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
