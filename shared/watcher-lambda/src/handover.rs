//! A timer evaluated again after its lapse was recorded hands the lapse task over again, when
//! the task still waits for its first attempt.
//!
//! The timer function commits a lapse (its outbox entry with it), then sends the lapse task to
//! the lapse queue. An instance that dies between the two, or a send that fails, leaves the task
//! in the table only. The timer's message is then received again (the timer queue's visibility
//! timeout, or Scheduler's retry), and its evaluation finds the lapse already recorded: the
//! engine has nothing new to do, so nothing was handed over, and only the sweep's re-queue
//! ([`crate::timer::REQUEUE_AFTER_SECS`] past the task's attempt, at the next sweep) would find
//! it, minutes late. Here that evaluation finishes the hand-over instead.
//!
//! The timer function also makes that happen at once when it knows the send failed: an
//! evaluation whose lapse task the lapse queue did not take for a passing reason
//! ([`crate::sink::noting_unsent`]) has its timer-queue message come back after a short backoff,
//! or, fired by a schedule, fails the invocation so that Lambda runs it again
//! ([`crate::timer`]); that evaluation is the replay this module finishes.
//!
//! Handing over twice is harmless: the lapse queue drops a second message with the same
//! deduplication id within five minutes (`watcher_aws::deduplication_id`), and past that the
//! submitter's claim on the entry sends it once (docs/dynamodb.md, "Leased sends").

use watcher_core::engine::{Effect, TimerKey, TimerKind};
use watcher_core::ids::Tenant;
use watcher_core::record::LapseKind;
use watcher_runtime::ports::LapseQueue;
use watcher_runtime::store::{DeliveryState, OutboxEntry, Store};
use watcher_runtime::watcher::{Applied, Watcher};

/// The lapse a timer of `kind` determines: a deadline's is overdue, a horizon's stalled
/// (expectations-v1 §9.1, §9.2).
fn lapse_of(kind: TimerKind) -> LapseKind {
    match kind {
        TimerKind::Deadline => LapseKind::Overdue,
        TimerKind::Horizon => LapseKind::Stalled,
    }
}

/// Whether `applied` (the evaluation of timer `key`) may have found its lapse already recorded:
/// it lapsed nothing and did not re-arm `key` (an early wake re-arms it; a timer whose
/// expectation has lapsed, been met or withdrawn is armed no more).
pub fn may_be_a_replay(key: &TimerKey, applied: &Applied) -> bool {
    applied.outbox.is_empty()
        && !applied
            .effects
            .iter()
            .any(|e| matches!(e, Effect::ArmTimer { key: k, .. } if k == key))
}

/// The outbox entries of `key`'s lapse that wait for their first attempt with nobody holding
/// them, read from the record (one read of the subject, then one keyed read of each of the
/// timer's lapses: at most one, as a timer lapses its expectation once).
///
/// # Errors
/// The store's, as text for the caller's log line.
pub async fn unsent_lapse_tasks<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    tenant: &Tenant,
    key: &TimerKey,
) -> Result<Vec<OutboxEntry>, String> {
    let Some(state) = watcher
        .store
        .subject(tenant, &key.subject)
        .await
        .map_err(|e| e.to_string())?
    else {
        return Ok(Vec::new());
    };
    let lapse = lapse_of(key.kind);
    let mut unsent = Vec::new();
    for record in state.records.iter().filter(|r| {
        r.agent == key.expectation.agent && r.expectation.expectation_id == key.expectation.id
    }) {
        for entry in record.lapses.iter().filter(|l| l.lapse == lapse) {
            let stored = watcher
                .store
                .outbox_get(tenant, &record.agent, &entry.message_id)
                .await
                .map_err(|e| e.to_string())?;
            if let Some(stored) = stored.filter(|s| {
                s.delivery == DeliveryState::Queued && s.attempts == 0 && s.lease.is_none()
            }) {
                unsent.push(stored);
            }
        }
    }
    Ok(unsent)
}

/// Whether `entry` is a lapse task of timer `key`'s own lapse: its expectation's, of the kind
/// the timer determines ([`unsent_lapse_tasks`] finds these again on a replay).
pub fn is_lapse_of(key: &TimerKey, entry: &OutboxEntry) -> bool {
    entry.agent == key.expectation.agent
        && entry.expectation_id == key.expectation.id
        && entry.lapse == lapse_of(key.kind)
}

/// What [`finish_hand_over`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HandOver {
    /// Lapse tasks handed over again.
    pub handed: usize,
    /// Whether something failed that may pass (reading the lapse task, or a send refused for a
    /// retryable reason): evaluating the timer again soon may finish the hand-over.
    pub may_finish_later: bool,
}

/// After evaluating timer `key` (`applied`): when it may be a replay ([`may_be_a_replay`]),
/// sends the lapse tasks of its lapse still waiting for their first attempt to `queue` again.
/// Answers how many were handed over, and whether a passing failure left one behind. Failures
/// are logged; the sweep's re-queue remains.
pub async fn finish_hand_over<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    tenant: &Tenant,
    key: &TimerKey,
    applied: &Applied,
) -> HandOver {
    let mut done = HandOver::default();
    if !may_be_a_replay(key, applied) {
        return done;
    }
    let unsent = match unsent_lapse_tasks(watcher, tenant, key).await {
        Ok(unsent) => unsent,
        Err(e) => {
            tracing::warn!(error = %e, timer = ?key, "reading a replayed timer's lapse task failed; the sweep re-queues it if it is still unsent");
            done.may_finish_later = true;
            return done;
        }
    };
    for (entry, result) in unsent.iter().zip(queue.enqueue_all(&unsent).await) {
        match result {
            Ok(()) => {
                done.handed += 1;
                tracing::info!(message_id = %entry.message_id, agent = %entry.agent, "a replayed timer handed its unsent lapse task over again");
            }
            Err(e) => {
                done.may_finish_later |= e.is_retryable();
                tracing::warn!(error = %e, message_id = %entry.message_id, "handing a replayed timer's lapse task over failed; the sweep re-queues it");
            }
        }
    }
    done
}
