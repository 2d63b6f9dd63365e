//! The submitter function: SQS messages `{"tenant","agent","messageId","entry"}` → the outbox entry →
//! `SendMessage` to the agent. Reports partial batch failures, so one agent's retry does not
//! redeliver the others (`ReportBatchItemFailures` must be on the event source mapping).
//!
//! The durable outbox, not the queue, guarantees one lapse task per (agent, `messageId`): each
//! entry is claimed before it is sent (`Outbox::outbox_claim`, a lease of
//! `watcher_delivery::deliver::LEASE`), so an entry already sent, or claimed by another
//! invocation handed the same message, is not sent, however often and to however many
//! invocations SQS delivers it.
//!
//! Before a lapse task's first send, its origin task and the tasks of the origin's lineage are
//! asked for with `GetTask`, exactly as serve's lanes do (`Reconciler::check_before_send`): one
//! found canceled, failed or rejected withdraws the expectations of its lineage, and the lapse
//! task is marked `withdrawn`, never sent.

use async_trait::async_trait;
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_delivery::deliver::{EntryOutcome, Posted, Submitter, Unrecorded};
use watcher_delivery::endpoint::Endpoints;
use watcher_delivery::rate::Prepaid;
use watcher_delivery::reconcile::Reconciler;
use watcher_runtime::ports::PortError;
use watcher_runtime::store::{DeliveryState, OutboxEntry, Store, StoreError};

/// What one batch came to: the answer for SQS, and when each handed-back message should be
/// received again.
#[derive(Debug, Default)]
pub struct BatchOutcome {
    /// The partial batch response: the messages handed back.
    pub response: SqsBatchResponse,
    /// `(receiptHandle, seconds)` for each handed-back message whose lapse task has a known next
    /// attempt (a retry's backoff, a rate-limit deferral, a not-yet-due entry), in batch order:
    /// the message should become visible again then, not after the queue's whole visibility
    /// timeout. A message handed back for a store failure is not listed (the queue's timeout
    /// applies).
    pub redeliver_after: Vec<(String, u32)>,
}

/// Sets when a handed-back message is received again (SQS `ChangeMessageVisibility` on the
/// lapse queue).
#[async_trait]
pub trait Redelivery: Send + Sync {
    /// Makes the message `receipt_handle` visible again `seconds` from now.
    ///
    /// # Errors
    /// The queue's refusal; the message then comes back after the queue's visibility timeout.
    async fn redeliver_after(&self, receipt_handle: &str, seconds: u32) -> Result<(), PortError>;
}

#[async_trait]
impl Redelivery for watcher_aws::SqsLapseQueue {
    async fn redeliver_after(&self, receipt_handle: &str, seconds: u32) -> Result<(), PortError> {
        watcher_aws::SqsLapseQueue::redeliver_after(self, receipt_handle, seconds).await
    }
}

/// [`Redelivery`] that leaves every message to the queue's visibility timeout (for tests and
/// emulators that hand batches to the handler directly).
pub struct QueueTimeout;

#[async_trait]
impl Redelivery for QueueTimeout {
    async fn redeliver_after(&self, _: &str, _: u32) -> Result<(), PortError> {
        Ok(())
    }
}

/// [`handle_batch`], then each handed-back message made visible again at its lapse task's next
/// attempt through `redelivery`; returns the partial batch response. A failed visibility change
/// is logged: the message then comes back after the queue's visibility timeout.
pub async fn handle<S, E>(
    store: &S,
    submitter: &Submitter,
    endpoints: &E,
    reconciler: Option<&Reconciler>,
    redelivery: &dyn Redelivery,
    event: SqsEvent,
    now: Instant,
) -> SqsBatchResponse
where
    S: Store + ?Sized,
    E: Endpoints + ?Sized,
{
    let outcome = handle_batch(store, submitter, endpoints, reconciler, event, now).await;
    for (receipt, seconds) in &outcome.redeliver_after {
        if let Err(e) = redelivery.redeliver_after(receipt, *seconds).await {
            tracing::warn!(error = %e, seconds, "could not set when a handed-back lapse message returns; the queue's visibility timeout applies");
        }
    }
    outcome.response
}

/// Before a batch at `now`: for each agent the batch names whose card this instance does not hold
/// in good health, picks up a newer card kept in the table ([`crate::cards::AgentCards::pick_up`]),
/// so a card the sweep read since this instance's cold start gives the agent its endpoint.
pub async fn pick_up_cards(
    cards: &(impl crate::cards::AgentCards + ?Sized),
    event: &SqsEvent,
    now: Instant,
) {
    let mut seen: Vec<(Tenant, AgentId)> = Vec::new();
    for record in &event.records {
        let Some(Ok(m)) = record.body.as_deref().map(watcher_aws::parse_queue_message) else {
            continue;
        };
        let key = (m.tenant, m.agent);
        if !seen.contains(&key) {
            cards.pick_up(&key.0, &key.1, now).await;
            seen.push(key);
        }
    }
}

/// Handles one batch at `now`. A message that cannot be parsed is dropped with an error log (it
/// can never succeed; the outbox still holds the entry for the sweep).
///
/// The batch's agents (their FIFO message groups) are delivered concurrently, each agent's
/// messages one after another in batch order, so a slow agent never holds up another's lapse
/// task. A lapse task that must be retried later, or a store failure, is reported as a batch
/// item failure, and so is every later message of the *same agent* in the batch, unprocessed, so
/// that no agent's lapse tasks overtake one another (AWS's guidance for partial batch responses
/// on FIFO queues); each comes back at the lapse task's next attempt
/// ([`BatchOutcome::redeliver_after`]). A lapse task claimed by another invocation is handed
/// back the same way, to come back when that claim ends (it is then found sent, or the claim
/// expired). A message received again after a send whose outcome was not recorded is looked for
/// with `ListTasks` before it is sent again (`Submitter::deliver_one`).
///
/// On a message's first receive, a lapse task is sent by the copy the message carries
/// (`watcher_aws::QueueMessage::entry`) with no read: its origin is checked by the copy, and it
/// is claimed on condition that the stored entry is still that copy (`Submitter::deliver_copy`).
/// Otherwise, and whenever the copy is not confirmed, it is read once (`Outbox::outbox_get`):
/// with `reconciler` (the function's, from `env::Parts`), a queued lapse task due at `now` and
/// never attempted has its origin checked first ([`check_origin`]; `None` sends without the
/// check), and the send goes by the same read (`Submitter::deliver_read`).
pub async fn handle_batch<S, E>(
    store: &S,
    submitter: &Submitter,
    endpoints: &E,
    reconciler: Option<&Reconciler>,
    event: SqsEvent,
    now: Instant,
) -> BatchOutcome
where
    S: Store + ?Sized,
    E: Endpoints + ?Sized,
{
    // Lanes in the order their agents first appear; each keeps its messages' batch order.
    let mut lanes: Vec<(Lane, Vec<LaneItem>)> = Vec::new();
    for (position, record) in event.records.into_iter().enumerate() {
        let id = record.message_id.clone().unwrap_or_default();
        let Some(body) = record.body.as_deref() else {
            tracing::error!(sqs_message_id = %id, "SQS message without a body; dropped");
            continue;
        };
        let message = match watcher_aws::parse_queue_message(body) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(sqs_message_id = %id, error = %e, "not a lapse queue message; dropped");
                continue;
            }
        };
        let lane = (message.tenant, message.agent);
        // The copy is as the entry was queued: on the message's first receive it is most likely
        // the stored entry still; a message received again follows an attempt that changed it.
        let first_receive = record
            .attributes
            .get("ApproximateReceiveCount")
            .is_some_and(|n| n == "1");
        let item = LaneItem {
            position,
            record,
            message_id: message.message_id,
            copy: message.entry.filter(|_| first_receive),
        };
        match lanes.iter_mut().find(|(l, _)| *l == lane) {
            Some((_, items)) => items.push(item),
            None => lanes.push((lane, vec![item])),
        }
    }
    let results = futures_util::future::join_all(lanes.into_iter().map(|(lane, items)| {
        deliver_lane(store, submitter, endpoints, reconciler, lane, items, now)
    }))
    .await;
    // Handed-back messages in batch order, whatever order the lanes finished in.
    let mut handed_back: Vec<HandedBack> = results.into_iter().flatten().collect();
    handed_back.sort_by_key(|h| h.position);
    let mut outcome = BatchOutcome::default();
    for HandedBack {
        sqs_message_id: id,
        redeliver,
        ..
    } in handed_back
    {
        if !id.is_empty() {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            outcome.response.batch_item_failures.push(failure);
        }
        outcome.redeliver_after.extend(redeliver);
    }
    outcome
}

/// One agent of a batch: its tenant and id (its FIFO message group).
type Lane = (Tenant, AgentId);

/// One lapse message of a lane.
struct LaneItem {
    /// Its place in the batch.
    position: usize,
    /// The SQS record.
    record: SqsMessage,
    /// The lapse task's messageId.
    message_id: String,
    /// The entry as queued, carried by the message, when it is the message's first receive.
    copy: Option<OutboxEntry>,
}

/// A message handed back to the queue.
struct HandedBack {
    /// Its place in the batch.
    position: usize,
    /// The SQS messageId (the batch item failure's identifier).
    sqs_message_id: String,
    /// `(receiptHandle, seconds)` when its lapse task's next attempt is known.
    redeliver: Option<(String, u32)>,
}

/// One agent's messages, in order; returns the handed-back ones.
async fn deliver_lane<S, E>(
    store: &S,
    submitter: &Submitter,
    endpoints: &E,
    reconciler: Option<&Reconciler>,
    (tenant, agent): Lane,
    items: Vec<LaneItem>,
    now: Instant,
) -> Vec<HandedBack>
where
    S: Store + ?Sized,
    E: Endpoints + ?Sized,
{
    let mut handed_back = Vec::new();
    // The lane's rate tokens at once: one conditional write for its first receives, not one or
    // two for each (a token taken and not used is spent: the agent is sent less, never more).
    let buckets = prepay(submitter, &tenant, &agent, &items, now).await;
    // Once a message is handed back, the lane stops: later ones come back with it, at its time.
    let mut stopped: Option<Option<u32>> = None;
    // The last lapse task posted by its copy, its record written while the next is claimed.
    let mut pending: Option<Pending> = None;
    for LaneItem {
        position,
        record,
        message_id,
        copy,
    } in items
    {
        let id = record.message_id.clone().unwrap_or_default();
        let receipt = record.receipt_handle.clone();
        // A message handed back with no next attempt of its own (a store failure, which may pass)
        // returns after a jittered backoff of its receive count, not the queue's 360 s
        // visibility timeout, which would hold its agent's message group that long.
        let after_failure = crate::redelivery::visibility_after(
            &crate::redelivery::SUBMITTER_REDELIVERY,
            record
                .attributes
                .get("ApproximateReceiveCount")
                .and_then(|n| n.trim().parse().ok())
                .unwrap_or(1),
        );
        let back = |seconds: Option<u32>| HandedBack {
            position,
            sqs_message_id: id.clone(),
            redeliver: receipt
                .clone()
                .map(|r| (r, seconds.unwrap_or(after_failure))),
        };
        if let Some(seconds) = stopped {
            handed_back.push(back(seconds));
            continue;
        }
        let span = tracing::info_span!("lapse_message", sqs_message_id = %id);
        let _guard = span.enter();
        // First by the message's copy, with no read: the origin check goes by it (a stale copy
        // costs at most a needless `GetTask`; a withdrawal re-reads the entry it marks), and the
        // claim's write confirms it. A copy the claim does not confirm falls through to the read
        // below. The previous lapse task's record is written meanwhile: its answer is known, so
        // the agent's order holds whatever the write comes to.
        if let Some(copy) = copy {
            let step = async {
                match origin_allows(reconciler, &copy, now).await {
                    Ok(false) => Ok(None),
                    Ok(true) => submitter
                        .deliver_copy_unrecorded(store, endpoints, &buckets, copy, now)
                        .await
                        .map(|posted| Some(posted.map_or(Step::Unconfirmed, Step::Posted))),
                    Err(e) => Err(e),
                }
            };
            let (previous, step) =
                futures_util::future::join(flush(store, pending.take()), step).await;
            if let Some(failed) = previous {
                // Its record failed: the store is failing; this one goes on, no more after it.
                handed_back.extend(failed);
                stopped = Some(None);
            }
            match step {
                // Withdrawn before sending.
                Ok(None) => continue,
                Ok(Some(Step::Posted(Posted::Done(outcome)))) => {
                    if let Some(seconds) = next_of(Ok(outcome), &message_id, now) {
                        stopped = Some(seconds);
                        handed_back.push(back(seconds));
                    }
                    continue;
                }
                Ok(Some(Step::Posted(Posted::Unrecorded(unrecorded)))) => {
                    let on_failure =
                        match next_of(Ok(unrecorded.outcome().clone()), &message_id, now) {
                            Some(seconds) => {
                                stopped = Some(seconds);
                                handed_back.push(back(seconds));
                                None
                            }
                            None => Some(back(None)),
                        };
                    pending = Some(Pending {
                        unrecorded,
                        on_failure,
                    });
                    continue;
                }
                Ok(Some(Step::Unconfirmed)) => {}
                Err(e) => {
                    if let Some(seconds) = next_of(Err(e), &message_id, now) {
                        stopped = Some(seconds);
                        handed_back.push(back(seconds));
                    }
                    continue;
                }
            }
        } else if let Some(failed) = flush(store, pending.take()).await {
            handed_back.extend(failed);
            stopped = Some(None);
            handed_back.push(back(None));
            continue;
        }
        // The entry is read once: the origin check and the send both go by this read (a
        // stale one costs the claim a read, never a second send).
        let found = match store.outbox_get(&tenant, &agent, &message_id).await {
            Ok(found) => found,
            Err(e) => {
                tracing::warn!(error = %e, "store failure reading the lapse task; the message will be redelivered");
                stopped = Some(None);
                handed_back.push(back(None));
                continue;
            }
        };
        let checked = match &found {
            Some(entry) => origin_allows(reconciler, entry, now).await,
            None => Ok(true),
        };
        let delivered = match checked {
            Ok(false) => continue,
            Ok(true) => {
                submitter
                    .deliver_read_with(
                        store,
                        endpoints,
                        &buckets,
                        (&tenant, &agent, &message_id),
                        found,
                        now,
                    )
                    .await
            }
            Err(e) => Err(e),
        };
        if let Some(seconds) = next_of(delivered, &message_id, now) {
            stopped = Some(seconds);
            handed_back.push(back(seconds));
        }
    }
    if let Some(failed) = flush(store, pending.take()).await {
        handed_back.extend(failed);
    }
    handed_back
}

/// What a lane's step by a message's copy came to.
enum Step {
    /// Claimed by the copy, and posted or settled.
    Posted(Posted),
    /// The claim did not confirm the copy: the entry is read.
    Unconfirmed,
}

/// A lapse task posted and not yet recorded ([`Unrecorded`]), and the message's hand-back should
/// its record fail (`None` when it was handed back already).
struct Pending {
    unrecorded: Box<Unrecorded>,
    on_failure: Option<HandedBack>,
}

/// Writes `pending`'s record: `None` when there was none or it was written; `Some` with the
/// message to hand back (if not handed back already) when the write failed (logged by
/// [`Unrecorded::record`]; the entry stays claimed with its attempt started, and is looked for
/// with `ListTasks` when the message comes back).
async fn flush<S>(store: &S, pending: Option<Pending>) -> Option<Option<HandedBack>>
where
    S: Store + ?Sized,
{
    let Pending {
        unrecorded,
        on_failure,
    } = pending?;
    match (*unrecorded).record(store).await {
        Ok(_) => None,
        Err(_) => Some(on_failure),
    }
}

/// The rate tokens of a lane of `agent` of `tenant` ([`Prepaid`]): as many as its messages whose
/// copies are queued and due at `now` (those about to be sent), taken at once from the
/// submitter's buckets when there are two or more; none when the bucket is empty or cannot be
/// reached (each message then asks for its own, as before, and is deferred or handed back).
async fn prepay<'a>(
    submitter: &'a Submitter,
    tenant: &Tenant,
    agent: &AgentId,
    items: &[LaneItem],
    now: Instant,
) -> Prepaid<'a> {
    let due = items
        .iter()
        .filter_map(|i| i.copy.as_ref())
        .filter(|c| c.delivery == DeliveryState::Queued && c.next_attempt_at <= now)
        .count();
    let buckets = submitter.buckets();
    let taken = match u32::try_from(due) {
        Ok(n) if n >= 2 => match buckets.try_acquire_many(tenant, agent, n, now).await {
            Ok(Ok(k)) => k,
            Ok(Err(_)) => 0,
            Err(e) => {
                tracing::debug!(error = %e, "could not take the lane's rate tokens at once; one at a time");
                0
            }
        },
        _ => 0,
    };
    Prepaid::new(buckets, tenant.clone(), agent.clone(), taken)
}

/// Whether a lapse message whose delivery came to `delivered` (logged here) goes back to the
/// queue: `Some(Some(seconds))` to come back at the lapse task's next attempt (a retry, a
/// deferral, an entry not due or claimed by another sender), `Some(None)` after a store failure
/// (after [`SUBMITTER_REDELIVERY`](crate::redelivery::SUBMITTER_REDELIVERY)'s backoff of its
/// receive count), `None` when it is done with.
fn next_of(
    delivered: Result<EntryOutcome, StoreError>,
    message_id: &str,
    now: Instant,
) -> Option<Option<u32>> {
    match delivered {
        Ok(
            EntryOutcome::Retried {
                next_attempt_at: at,
                ..
            }
            | EntryOutcome::Deferred { until: at }
            | EntryOutcome::NotDue { at },
        ) => Some(Some(seconds_until(now, at))),
        Ok(outcome) => {
            tracing::info!(?outcome, message_id = %message_id, "lapse message handled");
            None
        }
        Err(e) => {
            tracing::warn!(error = %e, "store failure; the message will be redelivered");
            Some(None)
        }
    }
}

/// [`check_origin`] of `entry` (a read, or a lapse message's copy) where `reconciler` checks
/// origins, the same for both: `Ok(true)` to go on and send, `Ok(false)` when the origin ended
/// and the entry is withdrawn (logged here). A stale copy costs at most a needless `GetTask`: a
/// withdrawal re-reads the entry it marks.
///
/// # Errors
/// A [`StoreError`] marking the entry: the message goes back to the queue ([`next_of`]).
async fn origin_allows(
    reconciler: Option<&Reconciler>,
    entry: &OutboxEntry,
    now: Instant,
) -> Result<bool, StoreError> {
    let Some(reconciler) = reconciler else {
        return Ok(true);
    };
    let allowed = check_origin(reconciler, entry, now).await?;
    if !allowed {
        tracing::info!(message_id = %entry.message_id, "lapse message handled: withdrawn before sending");
    }
    Ok(allowed)
}

/// The origin check before a lapse task's first send, as serve's lanes make it, of `entry` as
/// just read: for an agent whose origins are checked (`Reconciler::checks_before_send`), when
/// the entry is queued, due at `now` and never attempted, asks for its origin task and the tasks
/// of the origin's lineage (`Reconciler::check_before_send`). Answers whether to go on and send;
/// `false` when one of them ended canceled, failed or rejected (the entry is then `withdrawn`).
///
/// # Errors
/// A [`StoreError`] marking the entry.
pub async fn check_origin(
    reconciler: &Reconciler,
    entry: &OutboxEntry,
    now: Instant,
) -> Result<bool, StoreError> {
    if !reconciler.checks_before_send(&entry.tenant, &entry.agent)
        || entry.delivery != DeliveryState::Queued
        || entry.next_attempt_at > now
    {
        return Ok(true);
    }
    reconciler.check_before_send(entry).await
}

/// Whole seconds from `now` until `at`, rounded up, at least 1 (a message made visible at once
/// would be received again before anything changed) and at most SQS's 12 hours.
pub fn seconds_until(now: Instant, at: Instant) -> u32 {
    let nanos = at.as_nanos().saturating_sub(now.as_nanos());
    let secs = (nanos + 999_999_999).div_euclid(1_000_000_000);
    secs.clamp(1, i128::from(watcher_aws::MAX_VISIBILITY_SECS)) as u32
}
