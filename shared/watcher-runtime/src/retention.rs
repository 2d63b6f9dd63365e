//! Retention (expectations-v1 §14, contracts/serve.md `retention_days`): when a stored item may
//! be forgotten. One rule for every store. The local stores delete, in [`Upkeep::purge`], what
//! [`Retention::purgeable`] allows. The DynamoDB store writes [`Retention::since`] plus the
//! retention period as the item's TTL.
//!
//! * A subject is kept while any of its records can still lapse: it has a pending deadline or
//!   horizon, or it waits on an anchor (it can lapse once the anchor is satisfied). Once none
//!   can, it is kept for the retention period after its last activity: the latest raising,
//!   satisfaction, lapse, withdrawal, or fact receipt on it.
//! * A lapse task is kept while `queued` (it has still to be delivered). Once `sent` or
//!   `failed`, it is kept for the retention period after max(`lapsedAt`, `nextAttemptAt`).
//! * A task record is kept while it can still matter: until its last status is terminal
//!   (no later status can withdraw or answer anything), unless none of the subjects it raised
//!   expectations on is stored any more. Then it is kept for the retention period after its
//!   latest status receipt, or after its lineage last changed when that is later.
//! * A rejection is kept for the retention period after it was made.
//!
//! Last activity is read from the data, never from a clock.
//!
//! [`Upkeep::purge`]: crate::store::Upkeep::purge

use watcher_core::engine::{live_until, LiveUntil, Rejection};
use watcher_core::slice::{Lifecycle, SubjectState, TaskRecord};
use watcher_core::time::Instant;

use crate::store::{DeliveryState, OutboxEntry};

/// Whether, and from when, a stored item may be forgotten.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retention {
    /// Kept whatever its age: it can still change what the watcher does.
    Keep,
    /// Kept for the retention period after this instant, its last activity.
    Since(Instant),
    /// May be forgotten at once: nothing stored refers to it, and nothing on it is dated (a task
    /// that never reported a status, once the subjects it raised on are gone).
    Unreferenced,
}

impl Retention {
    /// Whether a purge that forgets what was last active before `before` (the clock minus the
    /// retention period) deletes the item. Strictly before: an item last active at `before`
    /// is kept.
    pub fn purgeable(self, before: Instant) -> bool {
        match self {
            Retention::Keep => false,
            Retention::Since(at) => at < before,
            Retention::Unreferenced => true,
        }
    }

    /// The instant the retention period counts from, when there is one.
    pub fn since(self) -> Option<Instant> {
        match self {
            Retention::Since(at) => Some(at),
            Retention::Keep | Retention::Unreferenced => None,
        }
    }
}

/// The `before` of a purge at `now` with a retention of `days` days: `now` minus that many
/// days. `None` when `days` is 0 (serve.md: keep forever), or when `now - days` is before every
/// representable instant (nothing can be that old).
pub fn purge_before(now: Instant, days: u32) -> Option<Instant> {
    if days == 0 {
        return None;
    }
    let period = jiff::SignedDuration::from_hours(i64::from(days) * 24);
    now.checked_sub(period)
}

/// The latest instant recorded on a subject: each record's raising, satisfaction, lapses and
/// withdrawal, and the receipt of each fact. `None` for a subject with nothing recorded.
pub fn last_activity(state: &SubjectState) -> Option<Instant> {
    let records = state.records.iter().flat_map(|r| {
        std::iter::once(r.raised_at)
            .chain(r.satisfaction.as_ref().map(|s| s.satisfied_at))
            .chain(r.lapses.iter().map(|l| l.lapsed_at))
            .chain(r.withdrawal.as_ref().map(|w| w.withdrawn_at))
    });
    let facts = state.facts.iter().map(|f| f.received_at);
    records
        .chain(facts)
        .chain(state.last_satisfying_receipt)
        .max()
}

/// A subject's retention: [`Retention::Keep`] while one of its records can still lapse (a
/// pending timer, or waiting on an anchor) or when nothing is recorded on it; otherwise
/// [`Retention::Since`] its [`last_activity`].
pub fn subject_retention(state: &SubjectState) -> Retention {
    let can_lapse = state
        .records
        .iter()
        .any(|r| live_until(r) != LiveUntil::Closed);
    if can_lapse {
        return Retention::Keep;
    }
    last_activity(state).map_or(Retention::Keep, Retention::Since)
}

/// A lapse task's retention: [`Retention::Keep`] while `queued`; once `sent`, `failed`,
/// `withdrawn` or `unaddressed`, [`Retention::Since`] max(`lapsedAt`, `nextAttemptAt`).
pub fn outbox_retention(entry: &OutboxEntry) -> Retention {
    match entry.delivery {
        DeliveryState::Queued => Retention::Keep,
        DeliveryState::Sent
        | DeliveryState::Failed
        | DeliveryState::Withdrawn
        | DeliveryState::Unaddressed => {
            Retention::Since(entry.lapsed_at.max(entry.next_attempt_at))
        }
    }
}

/// A task record's retention. `subjects_stored`: whether any subject in `task.subjects` is
/// still stored (a store that cannot tell passes `true`).
///
/// Its last activity is its latest status receipt, or the last change of its lineage
/// (`lineageAt`) when that is later. It may be forgotten after that once its last status is
/// terminal (completed, or withdrawing: no later status changes anything), or once
/// `subjects_stored` is false (nothing is left for a later status to withdraw or answer). A task
/// that never reported a status, has no lineage, and whose subjects are gone is
/// [`Retention::Unreferenced`]; one that only has a lineage (a lapse task that raised nothing,
/// an ancestor of later work) is kept for the retention period after its lineage last changed.
pub fn task_retention(task: &TaskRecord, subjects_stored: bool) -> Retention {
    let terminal = task.withdrawn_by.is_some()
        || task.statuses.last().is_some_and(|s| {
            matches!(
                Lifecycle::of(&s.state),
                Lifecycle::Completed | Lifecycle::Withdrawing
            )
        });
    if subjects_stored && !terminal {
        return Retention::Keep;
    }
    match task
        .statuses
        .iter()
        .map(|s| s.received_at)
        .chain(task.lineage_at)
        .max()
    {
        Some(at) => Retention::Since(at),
        // Terminal implies a status, so here the subjects are gone and there is no lineage.
        None => Retention::Unreferenced,
    }
}

/// A rejection's retention: [`Retention::Since`] when it was made.
pub fn rejection_retention(rejection: &Rejection) -> Retention {
    Retention::Since(rejection.at)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use watcher_core::ids::{AgentId, Subject, TaskId, TaskRef};
    use watcher_core::slice::StatusSeen;

    use super::*;

    fn at(text: &str) -> Instant {
        Instant::parse(text).expect("a valid instant")
    }

    fn task(states: &[(&str, &str)], subjects: &[&str]) -> TaskRecord {
        let mut t = TaskRecord::new(TaskRef {
            agent: AgentId::parse("booking").expect("agent"),
            task_id: TaskId::parse("task-1").expect("task id"),
        });
        for (state, when) in states {
            t.statuses.push(StatusSeen {
                state: (*state).into(),
                at: at(when),
                received_at: at(when),
                timestamp: None,
                seq: 0,
                given_timestamp: None,
            });
        }
        t.subjects = subjects
            .iter()
            .map(|id| Subject::parse("shipment", id).expect("subject"))
            .collect::<BTreeSet<_>>();
        t
    }

    #[test]
    fn purgeable_is_strictly_before() {
        let t = at("2026-09-10T12:00:00Z");
        assert!(!Retention::Keep.purgeable(t));
        assert!(!Retention::Since(t).purgeable(t));
        assert!(Retention::Since(t).purgeable(at("2026-09-10T12:00:01Z")));
        assert!(Retention::Unreferenced.purgeable(t));
        assert_eq!(Retention::Since(t).since(), Some(t));
        assert_eq!(Retention::Unreferenced.since(), None);
    }

    #[test]
    fn purge_before_is_now_minus_the_retention_and_zero_keeps_forever() {
        let now = at("2026-10-10T12:00:00Z");
        assert_eq!(purge_before(now, 30), Some(at("2026-09-10T12:00:00Z")));
        assert_eq!(purge_before(now, 0), None);
        assert_eq!(purge_before(now, u32::MAX), None);
    }

    #[test]
    fn an_empty_subject_is_kept() {
        let s = SubjectState::new(Subject::parse("shipment", "PA-1").expect("subject"));
        assert_eq!(subject_retention(&s), Retention::Keep);
        assert_eq!(last_activity(&s), None);
    }

    #[test]
    fn a_running_task_is_kept_while_its_subjects_are_stored() {
        let running = task(&[("TASK_STATE_WORKING", "2026-09-10T12:00:00Z")], &["PA-1"]);
        assert_eq!(task_retention(&running, true), Retention::Keep);
        assert_eq!(
            task_retention(&running, false),
            Retention::Since(at("2026-09-10T12:00:00Z"))
        );
        let silent = task(&[], &["PA-1"]);
        assert_eq!(task_retention(&silent, true), Retention::Keep);
        assert_eq!(task_retention(&silent, false), Retention::Unreferenced);
    }

    /// A task known only by its lineage (a lapse task that raised nothing, an ancestor of later
    /// work) is not forgotten at once: its descendants' withdrawal goes through it.
    #[test]
    fn a_task_of_a_lineage_counts_from_its_last_link() {
        let mut lapse_task = task(&[], &[]);
        lapse_task.lineage = vec![TaskId::parse("task-0").expect("task id")];
        lapse_task.lineage_at = Some(at("2026-09-10T15:00:00Z"));
        assert_eq!(
            task_retention(&lapse_task, false),
            Retention::Since(at("2026-09-10T15:00:00Z"))
        );
        let mut linked_later = task(&[("TASK_STATE_COMPLETED", "2026-09-10T13:00:00Z")], &[]);
        linked_later.lineage_at = Some(at("2026-09-10T15:00:00Z"));
        assert_eq!(
            task_retention(&linked_later, false),
            Retention::Since(at("2026-09-10T15:00:00Z"))
        );
    }

    #[test]
    fn a_finished_task_counts_from_its_latest_status_receipt() {
        let done = task(
            &[
                ("TASK_STATE_WORKING", "2026-09-10T12:00:00Z"),
                ("TASK_STATE_COMPLETED", "2026-09-10T13:00:00Z"),
            ],
            &["PA-1"],
        );
        assert_eq!(
            task_retention(&done, true),
            Retention::Since(at("2026-09-10T13:00:00Z"))
        );
        let mut failed_then_more = task(
            &[
                ("TASK_STATE_FAILED", "2026-09-10T12:00:00Z"),
                ("TASK_STATE_WORKING", "2026-09-10T14:00:00Z"),
            ],
            &["PA-1"],
        );
        failed_then_more.withdrawn_by = Some(failed_then_more.statuses[0].clone());
        assert_eq!(
            task_retention(&failed_then_more, true),
            Retention::Since(at("2026-09-10T14:00:00Z")),
            "withdrawn once is final"
        );
    }
}
