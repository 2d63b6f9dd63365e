//! One pass over the lapse tasks due: each entry prepared, posted and recorded, a bounded number
//! in flight ([`deliver_due`]).

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
#[allow(
    clippy::too_many_arguments,
    reason = "private; every argument is a distinct dependency"
)]
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
