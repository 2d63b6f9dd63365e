//! What an attempt's outcome does to a lapse task's entry (pure): its delivery state, attempts and
//! backoff, the task found by a lookup, and following the task with GetTask afterwards
//! (expectations-v1 §10.2).

use super::*;

/// Records one attempt's result on an entry: the pure part of delivery.
///
/// * `Ok(Task)`: `sent`, `task_id`, `task_state` (ProtoJSON name, e.g. `TASK_STATE_SUBMITTED`) —
///   unless the task's id is one of the request's `referenceTaskIds`: the agent resumed the
///   origin task instead of creating one, a protocol error recorded as `failed` with the reason,
///   not counted as delivered (docs/interpretation.md).
/// * `Ok(Message)`: `sent`, `answered_with_message = true`.
/// * `Ok(Unrecognised)`: `sent`, with the oddity in `last_error`.
/// * `Err(Permanent)`: `failed`, `last_error` = the error with its causes.
/// * `Err(Retryable)`: retried by age: `retrying_since` is set at the first retryable failure;
///   once `now` is `policy.give_up_after` past it the entry is `failed`; otherwise it stays
///   `queued` with `next_attempt_at` from [`next_attempt_at`] (jitter from
///   [`jitter_fraction`]) or the agent's `Retry-After` if later, but never later than the
///   give-up instant (so the last attempt is made at that age).
///
/// `attempts` is incremented in every case; a success or a permanent failure clears
/// `retrying_since`. `attempt_started_at` is cleared with every outcome but one: a retryable
/// failure after which the agent may have the request ([`DeliveryError::maybe_received`]: a
/// timeout, a connection lost before the answer, a 5xx) keeps it (set to `now` if it was not),
/// so the attempt stays ambiguous, as an attempt with no recorded outcome is, and the next
/// claim of the entry looks for it with `ListTasks` before posting it again (`post`, serve.md
/// "never sends a second one for a delivered `messageId`", docs/interpretation.md). A failure
/// the agent cannot have received (no connection was made, 408, 429) clears it: the next
/// attempt posts at once. A `failed` entry's `next_attempt_at` is the
/// instant it failed (`now`): the agent's failed lapse tasks are read in the order they failed
/// (`Outbox::outbox_of_agent`), which the notifier's "lapse task failed" event follows. `now` is the instant of the attempt.
pub fn record_attempt(
    entry: &OutboxEntry,
    result: &Result<SendOutcome, DeliveryError>,
    now: Instant,
    policy: &RetryPolicy,
) -> (OutboxEntry, EntryOutcome) {
    let mut e = entry.clone();
    e.attempts = e.attempts.saturating_add(1);
    e.attempt_started_at = None;
    let outcome = match result {
        Ok(SendOutcome::Task { id, .. }) if references(&e.request, id) => {
            let error = format!(
                "protocol error: the agent answered with task {id:?}, the origin task named in \
                 referenceTaskIds, instead of a new task for the lapse; not counted as delivered"
            );
            e.retrying_since = None;
            fail(&mut e, now, error)
        }
        Ok(sent) => {
            e.delivery = DeliveryState::Sent;
            e.last_error = None;
            e.retrying_since = None;
            match sent {
                SendOutcome::Task { id, state } => {
                    e.task_id = Some(id.clone());
                    e.task_state = Some(state.as_str().to_owned());
                    watcher_runtime::task_progress::mark_needs_person(&mut e, now);
                    start_following(&mut e, *state, now, policy);
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
            e.retrying_since = None;
            fail(&mut e, now, error)
        }
        Err(err @ DeliveryError::Retryable { .. }) => {
            let since = *e.retrying_since.get_or_insert(now);
            let give_up_at = add(since, policy.give_up_after);
            if now >= give_up_at {
                let error = format!(
                    "gave up after retrying for {} ({} attempts): {}",
                    human(elapsed(since, now)),
                    e.attempts,
                    err.describe()
                );
                fail(&mut e, now, error)
            } else {
                let mut error = err.describe();
                if err.maybe_received() {
                    e.attempt_started_at = Some(entry.attempt_started_at.unwrap_or(now));
                    error.push_str(AMBIGUOUS_NOTE);
                }
                let backoff = next_attempt_at(
                    now,
                    e.attempts,
                    policy,
                    jitter_fraction(&e.message_id, e.attempts),
                );
                let asked = err.retry_after().map(|d| add(now, d));
                let next = asked.map_or(backoff, |asked| asked.max(backoff));
                e.next_attempt_at = next.min(give_up_at);
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

/// Appended to `last_error` when a retryable failure leaves the attempt ambiguous.
const AMBIGUOUS_NOTE: &str =
    " (the agent may have received it: looked for with ListTasks before it is posted again)";

/// Marks `e` failed for good at `now` with `error` (the caller decides `retrying_since`).
fn fail(e: &mut OutboxEntry, now: Instant, error: String) -> EntryOutcome {
    e.delivery = DeliveryState::Failed;
    e.next_attempt_at = now;
    e.last_error = Some(error.clone());
    EntryOutcome::Failed {
        attempts: e.attempts,
        error,
    }
}

/// Records that an ambiguous entry (`attempt_started_at` set: an attempt with no recorded
/// outcome, or one that failed after the agent may have received it, see [`record_attempt`])
/// was found at the agent by `ListTasks`: `sent`, with the task's id and state, the attempt
/// cleared and `retrying_since` with it. No attempt is counted: nothing was posted.
pub fn record_found(
    entry: &OutboxEntry,
    task_id: &str,
    state: TaskState,
    now: Instant,
    policy: &RetryPolicy,
) -> OutboxEntry {
    let mut e = entry.clone();
    e.delivery = DeliveryState::Sent;
    e.attempt_started_at = None;
    e.retrying_since = None;
    e.task_id = Some(task_id.to_owned());
    e.task_state = Some(state.as_str().to_owned());
    watcher_runtime::task_progress::mark_needs_person(&mut e, now);
    e.last_error = None;
    start_following(&mut e, state, now, policy);
    e
}

/// Whether the watcher follows a lapse task with `GetTask` (semantics.md "The lapse task"): it
/// asked for no push notifications (`configuration.taskPushNotificationConfig` absent) and the
/// task is neither terminal nor interrupted (input or auth required: a person's turn, §13.1).
pub(crate) fn follows(request: &serde_json::Value, state: TaskState) -> bool {
    request
        .pointer("/configuration/taskPushNotificationConfig")
        .is_none()
        && !state.is_terminal()
        && !state.is_interrupted()
}

/// Starts following a delivered lapse task when [`follows`] says so: first poll `poll_first`
/// later.
pub(crate) fn start_following(
    e: &mut OutboxEntry,
    state: TaskState,
    now: Instant,
    policy: &RetryPolicy,
) {
    if follows(&e.request, state) {
        e.follow_since = Some(now);
        e.follow_at = Some(add(now, policy.poll_first));
    } else {
        e.follow_at = None;
    }
}

/// The wait before the next `GetTask` poll: half the time followed so far, between
/// `policy.poll_first` and `policy.max_backoff` (so polls thin out geometrically, with no
/// counter).
pub fn poll_delay(since: Instant, now: Instant, policy: &RetryPolicy) -> std::time::Duration {
    (elapsed(since, now) / 2).clamp(policy.poll_first, policy.max_backoff.max(policy.poll_first))
}

/// Records one `GetTask` poll of a followed lapse task at `now`:
///
/// * a state: kept as `task_state`; following stops when it is terminal or interrupted (input
///   or auth required, shown to operators as needing a person, and marked
///   `needs_person_since`), or once the task has been
///   followed for `policy.give_up_after` (noted in `last_error`); else the next poll is
///   [`poll_delay`] later;
/// * a retryable error: the next poll is [`poll_delay`] later (up to the same age);
/// * a permanent error (e.g. `-32001` task not found, or no `GetTask`): following stops, noted
///   in `last_error`.
///
/// The delivery (`sent`) is never changed.
pub fn record_poll(
    entry: &OutboxEntry,
    result: &Result<TaskState, DeliveryError>,
    now: Instant,
    policy: &RetryPolicy,
) -> OutboxEntry {
    let mut e = entry.clone();
    let since = e.follow_since.unwrap_or(now);
    let too_old = elapsed(since, now) >= policy.give_up_after;
    let next = Some(add(now, poll_delay(since, now, policy)));
    match result {
        Ok(TaskState::Unspecified) => {
            e.follow_at = None;
            e.last_error = Some(
                "stopped following the lapse task's task: GetTask answered no known task state"
                    .into(),
            );
        }
        Ok(state) => {
            e.task_state = Some(state.as_str().to_owned());
            watcher_runtime::task_progress::mark_needs_person(&mut e, now);
            if state.is_terminal() || state.is_interrupted() {
                e.follow_at = None;
            } else if too_old {
                e.follow_at = None;
                e.last_error = Some(format!(
                    "stopped following the lapse task's task: still {} after {}",
                    state.as_str(),
                    human(elapsed(since, now))
                ));
            } else {
                e.follow_at = next;
            }
        }
        Err(err @ DeliveryError::Retryable { .. }) => {
            if too_old {
                e.follow_at = None;
                e.last_error = Some(format!(
                    "stopped following the lapse task's task: {}",
                    err.describe()
                ));
            } else {
                e.follow_at = next;
            }
        }
        Err(err @ DeliveryError::Permanent { .. }) => {
            e.follow_at = None;
            e.last_error = Some(format!(
                "stopped following the lapse task's task: {}",
                err.describe()
            ));
        }
    }
    e
}

/// Whether `task_id` is one of the request's `message.referenceTaskIds`.
pub(crate) fn references(request: &serde_json::Value, task_id: &str) -> bool {
    request
        .pointer("/message/referenceTaskIds")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|ids| ids.iter().any(|id| id.as_str() == Some(task_id)))
}

/// A duration for people, e.g. `24h 0m 3s`.
pub(crate) fn human(d: std::time::Duration) -> String {
    let s = d.as_secs();
    if s >= 3600 {
        format!("{}h {}m {}s", s / 3600, (s % 3600) / 60, s % 60)
    } else if s >= 60 {
        format!("{}m {}s", s / 60, s % 60)
    } else {
        format!("{}.{:03}s", s, d.subsec_millis())
    }
}

#[cfg(test)]
mod tests;
