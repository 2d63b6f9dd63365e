//! The lapse task's own task state as the outbox keeps it (semantics.md "The lapse task";
//! docs/interpretation.md "A push that beats the SendMessage answer").
//!
//! Two writers learn the state of the Task an agent created for a lapse task: the delivery (the
//! SendMessage answer, `GetTask` follow-ups, `ListTasks` recovery) and the push route (the
//! agent's push notifications, which the official SDKs send while their SendMessage answer is
//! still on its way). They race. Every store applies [`keep_task_progress`] inside the same
//! atomic step that writes an entry, so whichever lands last, the state kept never goes back: a
//! terminal state is final, and `TASK_STATE_SUBMITTED` never replaces a later state of the same
//! task. The rule is a pure function so that the memory, SQLite and DynamoDB stores apply the
//! very same one.

use a2a_types::TaskState;
use watcher_core::time::Instant;

use crate::store::OutboxEntry;

fn parse(state: Option<&str>) -> Option<TaskState> {
    state.and_then(|s| TaskState::from_wire_value(&serde_json::Value::String(s.to_owned())))
}

/// Whether `stored`, the state already recorded for a task, stays when `incoming` is written
/// for the same task: a terminal state is final (a2a-v1.md §3: a terminal task never changes),
/// an `incoming` that names no state keeps it, and `TASK_STATE_SUBMITTED` (the first state of
/// every task) never replaces another state.
fn stored_is_further(stored: TaskState, incoming: Option<TaskState>) -> bool {
    match incoming {
        None => true,
        Some(_) if stored.is_terminal() => true,
        Some(new) => new == TaskState::Submitted && stored != TaskState::Submitted,
    }
}

/// Keeps in `incoming`, an outbox entry about to replace `stored` (the entry with the same
/// (tenant, agent, messageId) as it is stored now), what `stored` knows of the lapse task's
/// task that `incoming` does not:
///
/// * `incoming` names no task but `stored` does (a push recorded it while the writer was busy):
///   `stored`'s task id and state are kept;
/// * both name the same task and `stored`'s state is further on (`stored_is_further`):
///   `stored`'s state is kept.
///
/// When a kept state is terminal or interrupted, `follow_at` is cleared (nothing is left to
/// poll for, or it is a person's turn). An `incoming` that names another task than `stored`
/// is left as it is. Every store calls this in the transaction (or conditional write) that
/// writes the entry.
///
/// `needs_person_since` follows the state kept: `None` unless it is interrupted; when `stored`
/// was already waiting for a person on the same task, its instant is kept (the wait began
/// then), else `incoming`'s.
///
/// `resolved` is `stored`'s when it has one ([`crate::resolution::keep_resolution`]: the first
/// resolution stays).
pub fn keep_task_progress(incoming: &mut OutboxEntry, stored: &OutboxEntry) {
    crate::resolution::keep_resolution(incoming, stored);
    merge_task_state(incoming, stored);
    let same_wait = stored.task_id.is_some()
        && stored.task_id == incoming.task_id
        && interrupted(stored.task_state.as_deref());
    if !interrupted(incoming.task_state.as_deref()) {
        incoming.needs_person_since = None;
    } else if same_wait {
        incoming.needs_person_since = stored.needs_person_since.or(incoming.needs_person_since);
    }
}

/// Marks `entry` as waiting for a person since `now` when its task state is interrupted and it
/// was not marked yet; clears the mark otherwise. Writers that learn a state (the SendMessage
/// answer, a `GetTask` poll, a push) call it before writing; [`keep_task_progress`] then keeps
/// the earlier instant of a wait already recorded.
///
/// A state that resolves the lapse ([`crate::resolution::RESOLVING_TASK_STATES`]:
/// `TASK_STATE_COMPLETED`) also resolves `entry` at `now`, reason `task`, unless it is resolved
/// already ([`crate::resolution::resolve_by_task`]).
pub fn mark_needs_person(entry: &mut OutboxEntry, now: Instant) {
    crate::resolution::resolve_by_task(entry, now);
    if interrupted(entry.task_state.as_deref()) {
        entry.needs_person_since.get_or_insert(now);
    } else {
        entry.needs_person_since = None;
    }
}

fn interrupted(state: Option<&str>) -> bool {
    parse(state).is_some_and(TaskState::is_interrupted)
}

/// The task fields of [`keep_task_progress`].
fn merge_task_state(incoming: &mut OutboxEntry, stored: &OutboxEntry) {
    let Some(stored_task) = stored.task_id.as_deref() else {
        return;
    };
    match incoming.task_id.as_deref() {
        None => incoming.task_id = Some(stored_task.to_owned()),
        Some(task) if task != stored_task => return,
        Some(_) => {}
    }
    let Some(kept) = parse(stored.task_state.as_deref()) else {
        return;
    };
    if stored_is_further(kept, parse(incoming.task_state.as_deref())) {
        incoming.task_state = stored.task_state.clone();
        if kept.is_terminal() || kept.is_interrupted() {
            incoming.follow_at = None;
        }
    }
}

/// `stored` after a report at `now` that its lapse task is the Task `task_id`, now in `state` (a
/// push about that task, or a pushed Task holding the lapse task's `messageId` in its history):
/// the task id taken when `stored` names none, the state merged by [`keep_task_progress`],
/// waiting for a person since `now` when the state is newly interrupted, resolved at `now` when
/// it completes the lapse task and nothing resolved it before ([`mark_needs_person`]), nothing
/// else changed. `None` when `stored` names another task or
/// nothing would change.
pub fn with_task_state(
    stored: &OutboxEntry,
    task_id: &str,
    state: TaskState,
    now: Instant,
) -> Option<OutboxEntry> {
    if stored.task_id.as_deref().is_some_and(|t| t != task_id) {
        return None;
    }
    let mut updated = stored.clone();
    updated.task_id = Some(task_id.to_owned());
    updated.task_state = Some(state.as_str().to_owned());
    keep_task_progress(&mut updated, stored);
    mark_needs_person(&mut updated, now);
    if (state.is_terminal() || state.is_interrupted())
        && updated.task_state.as_deref() == Some(state.as_str())
    {
        updated.follow_at = None;
    }
    (updated != *stored).then_some(updated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DeliveryState;
    use watcher_core::ids::{AgentId, ExpectationId, Tenant};
    use watcher_core::record::LapseKind;
    use watcher_core::time::Instant;

    fn entry(task: Option<&str>, state: Option<&str>) -> OutboxEntry {
        let at = Instant::parse("2026-12-01T08:00:00Z").unwrap();
        OutboxEntry {
            tenant: Tenant::default_tenant(),
            agent: AgentId::parse("a".to_owned()).unwrap(),
            message_id: "lapse:e:overdue:2026-12-01T08:00:00Z".into(),
            expectation_id: ExpectationId::parse("e".to_owned()).unwrap(),
            lapse: LapseKind::Overdue,
            lapsed_at: at,
            request: serde_json::json!({}),
            delivery: DeliveryState::Sent,
            attempts: 1,
            next_attempt_at: at,
            task_id: task.map(str::to_owned),
            task_state: state.map(str::to_owned),
            answered_with_message: false,
            last_error: None,
            retrying_since: None,
            attempt_started_at: None,
            follow_at: Some(at),
            follow_since: Some(at),
            needs_person_since: None,
            lease: None,
            origin_lineage: Vec::new(),
            trace: None,
            resolved: None,
            resolve_on: None,
        }
    }

    const SUBMITTED: &str = "TASK_STATE_SUBMITTED";
    const WORKING: &str = "TASK_STATE_WORKING";
    const COMPLETED: &str = "TASK_STATE_COMPLETED";
    const FAILED: &str = "TASK_STATE_FAILED";
    const INPUT: &str = "TASK_STATE_INPUT_REQUIRED";

    fn merged(
        incoming: (Option<&str>, Option<&str>),
        stored: (Option<&str>, Option<&str>),
    ) -> OutboxEntry {
        let mut e = entry(incoming.0, incoming.1);
        keep_task_progress(&mut e, &entry(stored.0, stored.1));
        e
    }

    #[test]
    fn a_terminal_state_is_final_for_its_task() {
        let e = merged((Some("t"), Some(WORKING)), (Some("t"), Some(COMPLETED)));
        assert_eq!(e.task_state.as_deref(), Some(COMPLETED));
        assert_eq!(e.follow_at, None, "nothing left to poll for");
        let e = merged((Some("t"), Some(FAILED)), (Some("t"), Some(COMPLETED)));
        assert_eq!(
            e.task_state.as_deref(),
            Some(COMPLETED),
            "the first terminal state stays"
        );
    }

    #[test]
    fn submitted_never_replaces_a_later_state() {
        let e = merged((Some("t"), Some(SUBMITTED)), (Some("t"), Some(WORKING)));
        assert_eq!(e.task_state.as_deref(), Some(WORKING));
        assert!(e.follow_at.is_some(), "a working task is still followed");
        let e = merged((Some("t"), Some(SUBMITTED)), (Some("t"), Some(INPUT)));
        assert_eq!(e.task_state.as_deref(), Some(INPUT));
        assert_eq!(e.follow_at, None, "a person's turn is not polled");
    }

    #[test]
    fn a_newer_active_or_terminal_state_replaces_the_stored_one() {
        let e = merged((Some("t"), Some(WORKING)), (Some("t"), Some(INPUT)));
        assert_eq!(
            e.task_state.as_deref(),
            Some(WORKING),
            "resumed after a person answered"
        );
        let e = merged((Some("t"), Some(COMPLETED)), (Some("t"), Some(WORKING)));
        assert_eq!(e.task_state.as_deref(), Some(COMPLETED));
        let e = merged((Some("t"), Some(WORKING)), (Some("t"), Some(SUBMITTED)));
        assert_eq!(e.task_state.as_deref(), Some(WORKING));
    }

    #[test]
    fn a_task_learned_by_push_is_not_forgotten_by_a_writer_that_did_not_know_it() {
        let e = merged((None, None), (Some("t"), Some(WORKING)));
        assert_eq!(e.task_id.as_deref(), Some("t"));
        assert_eq!(e.task_state.as_deref(), Some(WORKING));
    }

    #[test]
    fn another_task_is_left_as_written() {
        let e = merged(
            (Some("new"), Some(SUBMITTED)),
            (Some("old"), Some(COMPLETED)),
        );
        assert_eq!(e.task_id.as_deref(), Some("new"));
        assert_eq!(e.task_state.as_deref(), Some(SUBMITTED));
        let e = merged((Some("t"), Some(WORKING)), (None, None));
        assert_eq!(
            e.task_state.as_deref(),
            Some(WORKING),
            "nothing stored to keep"
        );
    }

    #[test]
    fn a_report_sets_only_the_task_fields_and_merges_the_state() {
        let stored = entry(None, None);
        let e = with_task_state(&stored, "t", TaskState::Submitted, now()).expect("a change");
        assert_eq!(
            (e.task_id.as_deref(), e.task_state.as_deref()),
            (Some("t"), Some(SUBMITTED))
        );
        assert_eq!(
            OutboxEntry {
                task_id: None,
                task_state: None,
                ..e.clone()
            },
            stored,
            "nothing but the task fields changed"
        );
        let done = with_task_state(&e, "t", TaskState::Completed, now()).expect("a change");
        assert_eq!(done.task_state.as_deref(), Some(COMPLETED));
        assert_eq!(done.follow_at, None);
        assert_eq!(
            with_task_state(&done, "t", TaskState::Working, now()),
            None,
            "a late push changes nothing"
        );
        assert_eq!(
            with_task_state(&done, "other", TaskState::Working, now()),
            None,
            "another task"
        );
        assert_eq!(
            with_task_state(&done, "t", TaskState::Completed, now()),
            None,
            "the same state again"
        );
    }

    fn now() -> Instant {
        Instant::parse("2026-12-01T09:00:00Z").unwrap()
    }

    /// Every writer that learns a state (the SendMessage answer, a `GetTask` poll, a push) calls
    /// `mark_needs_person`: a completed Task resolves the lapse there, at the instant it was
    /// learnt, and a store's merge keeps the stored resolution (expectations-v1 §13.1).
    #[test]
    fn a_completed_task_resolves_the_lapse_where_the_state_is_learnt() {
        use crate::resolution::{Resolution, ResolutionReason};
        let mut polled = entry(Some("t"), Some(COMPLETED));
        mark_needs_person(&mut polled, now());
        let by_task = Resolution {
            at: now(),
            reason: ResolutionReason::Task {
                state: COMPLETED.into(),
            },
        };
        assert_eq!(polled.resolved.as_ref(), Some(&by_task));
        let mut failed = entry(Some("t"), Some(FAILED));
        mark_needs_person(&mut failed, now());
        assert_eq!(failed.resolved, None, "a failed lapse task leaves it open");
        // A delivery outcome written from an entry read before the resolution keeps it.
        let mut stale = entry(Some("t"), Some(WORKING));
        keep_task_progress(&mut stale, &polled);
        assert_eq!(stale.resolved, Some(by_task));
    }

    /// A lapse task whose task asks for input waits for a person from the first report of it:
    /// a second report keeps that instant, a later state clears it, and a store's merge keeps
    /// the earlier instant of the same wait (expectations-v1 §10.2).
    #[test]
    fn a_task_asking_for_input_waits_for_a_person_from_the_first_report() {
        let stored = entry(Some("t"), Some(WORKING));
        assert_eq!(stored.needs_person_since, None);
        let asked =
            with_task_state(&stored, "t", TaskState::InputRequired, now()).expect("a change");
        assert_eq!(asked.needs_person_since, Some(now()));
        assert_eq!(asked.follow_at, None, "a person's turn: not polled");
        let later = Instant::parse("2026-12-01T10:00:00Z").unwrap();
        assert_eq!(
            with_task_state(&asked, "t", TaskState::InputRequired, later),
            None,
            "the same wait: nothing changes"
        );
        let answered = with_task_state(&asked, "t", TaskState::Working, later).expect("a change");
        assert_eq!(answered.needs_person_since, None);

        // A writer that read the entry before the push marks its own, later instant: the
        // store's merge keeps the stored one.
        let mut incoming = asked.clone();
        incoming.needs_person_since = Some(later);
        keep_task_progress(&mut incoming, &asked);
        assert_eq!(incoming.needs_person_since, Some(now()));
        // A new state that is not interrupted clears it in the merge too.
        let mut done = asked.clone();
        done.task_state = Some(COMPLETED.into());
        keep_task_progress(&mut done, &asked);
        assert_eq!(done.needs_person_since, None);
        // mark_needs_person: only for an interrupted state.
        let mut e = entry(Some("t"), Some(INPUT));
        mark_needs_person(&mut e, later);
        assert_eq!(e.needs_person_since, Some(later));
        let mut w = entry(Some("t"), Some(WORKING));
        w.needs_person_since = Some(later);
        mark_needs_person(&mut w, later);
        assert_eq!(w.needs_person_since, None);
    }
}
