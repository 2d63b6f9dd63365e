//! The pure bookkeeping of attempts and polls ([`record_attempt`], [`record_found`],
//! [`record_poll`]).

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

/// A retryable failure the agent cannot have received (e.g. a refused connection).
fn retryable() -> Result<SendOutcome, DeliveryError> {
    Err(DeliveryError::Retryable {
        reason: "could not connect to the agent".into(),
        retry_after: None,
        maybe_received: false,
        source: None,
    })
}

/// A retryable failure after which the agent may have the request (a 5xx, a timeout).
fn ambiguous() -> Result<SendOutcome, DeliveryError> {
    Err(DeliveryError::Retryable {
        reason: "HTTP 503 Service Unavailable".into(),
        retry_after: None,
        maybe_received: true,
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
            maybe_received: false,
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

/// A failure after which the agent may have the request keeps the attempt's mark, so the next
/// claim finds it ambiguous and looks for it before posting; the mark's instant is the
/// attempt's start. A give-up clears it (the entry is `failed`, never posted again), and the
/// task found by the look-up settles it `sent` with no attempt counted.
#[test]
fn a_failure_the_agent_may_have_received_stays_ambiguous() {
    let policy = RetryPolicy::default();
    let mut e = entry();
    e.attempt_started_at = Some(t0());
    let later = add(t0(), Duration::from_secs(10));
    let (r, outcome) = record_attempt(&e, &ambiguous(), later, &policy);
    assert_eq!(r.delivery, DeliveryState::Queued);
    assert_eq!(r.attempts, 1);
    assert_eq!(r.attempt_started_at, Some(t0()), "still ambiguous");
    assert_eq!(r.retrying_since, Some(later));
    let error = r.last_error.clone().unwrap();
    assert!(error.starts_with("HTTP 503"), "{error}");
    assert!(error.contains("looked for with ListTasks"), "{error}");
    assert!(matches!(outcome, EntryOutcome::Retried { attempts: 1, .. }));
    // Marked even when the caller had not marked the attempt.
    let (unmarked, _) = record_attempt(&entry(), &ambiguous(), later, &policy);
    assert_eq!(unmarked.attempt_started_at, Some(later));
    // Found by the look-up: sent, unmarked, the failed attempt the only one counted.
    let found = record_found(&r, "task-9", TaskState::Submitted, later, &policy);
    assert_eq!(found.delivery, DeliveryState::Sent);
    assert_eq!(found.task_id.as_deref(), Some("task-9"));
    assert_eq!(
        (
            found.attempts,
            found.attempt_started_at,
            found.retrying_since
        ),
        (1, None, None)
    );
    // Sent again after a look-up that found nothing and answered: the outcome clears it.
    let (sent, _) = record_attempt(&r, &task("task-9", TaskState::Submitted), later, &policy);
    assert_eq!((sent.attempts, sent.attempt_started_at), (2, None));
    // Given up: failed for good, nothing left to look for.
    let end = add(later, policy.give_up_after);
    let (failed, _) = record_attempt(&r, &ambiguous(), end, &policy);
    assert_eq!(failed.delivery, DeliveryState::Failed);
    assert_eq!(failed.attempt_started_at, None);
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
        maybe_received: true,
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
