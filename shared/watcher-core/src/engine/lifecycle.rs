//! Task statuses: withdrawal on a withdrawing terminal state, and questions that expire
//! (expectations-v1 §8.1, §11; semantics.md "Questions that expire").
//!
//! "After" between two statuses of one task compares the agent's own timestamps when both carry
//! one (equal timestamps: the later receipt), else receipt order ([`StatusSeen::is_after`]). The
//! watcher's clock only bounds the agent's from above: a `status.timestamp` later than its receipt
//! counts as its receipt, both for that order and as the answer's `observedAt` (semantics.md
//! "Time", revision 4), so one status stamped hours ahead answers nothing asked after it. Apart
//! from that the two clocks are never compared: a timestamp-less `Task` snapshot received before a
//! stamped input-required status never answers it.

use super::{facts, Origin, Out, ReportedFact, StepContext};
use crate::ids::{AgentId, Source, TaskRef};
use crate::slice::{Lifecycle, Need, Slice, StatusSeen, StatusTime};
use crate::time::Instant;

/// The source the watcher records for a question answered by the task leaving the interrupted
/// state (semantics.md, "Questions that expire").
pub const LIFECYCLE_SOURCE: &str = "watcher:task-lifecycle";

/// A status as pushed, before it is recorded.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Seen<'a> {
    /// The 1.0 `TaskState` name.
    pub state: &'a str,
    /// The agent's valid, non-zero `status.timestamp` (used when `given_timestamp` is `None`).
    pub timestamp: Option<Instant>,
    /// `status.timestamp` exactly as given, whenever the status carried one.
    pub given_timestamp: Option<&'a str>,
}

/// A status of the origin task, received as input `ctx.seq` at `ctx.now`.
///
/// A withdrawing state (canceled, failed, rejected) withdraws what the task raised and is final:
/// statuses received after it change nothing. Submitted, working and completed answer every
/// question of the task asked before them: the watcher reports each question's
/// `satisfiedBy.factKey` itself, observed at the status's effective time ([`StatusTime`]: its
/// timestamp, or the receipt time when it is missing, zero or later than receipt), whatever
/// became of the question meanwhile, so that a successor with the same key is satisfied too.
/// Moving between input-required and auth-required answers nothing.
pub(crate) fn status(
    slice: &mut Slice,
    agent: &AgentId,
    origin: &Origin,
    seen: Seen<'_>,
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    let task = TaskRef {
        agent: agent.clone(),
        task_id: origin.task_id.clone(),
    };
    if slice.task(&task)?.is_some_and(|t| t.withdrawn_by.is_some()) {
        return Ok(());
    }
    let given = match seen.given_timestamp {
        Some(text) => Some(text.to_owned()),
        None => seen.timestamp.map(|t| t.to_string()),
    };
    let time = StatusTime::of(given.as_deref(), ctx.now);
    let status = StatusSeen {
        state: seen.state.to_owned(),
        at: time.at,
        received_at: ctx.now,
        timestamp: time.timestamp,
        seq: ctx.seq,
        given_timestamp: time.given,
    };
    let lifecycle = Lifecycle::of(seen.state);
    {
        let record = slice.task_mut(&task)?;
        record.statuses.push(status.clone());
        if lifecycle == Lifecycle::Withdrawing {
            record.withdrawn_by = Some(status.clone());
        }
    }
    match lifecycle {
        Lifecycle::Withdrawing => {
            super::withdraw::task_terminal(slice, &task, seen.state, ctx.now, out)
        }
        l if l.answers_question() => answer_questions(slice, &task, &status, ctx, out),
        _ => Ok(()),
    }
}

/// Reports the lifecycle fact of every question of `task` asked before `status` and not yet
/// answered, observed at the status's effective time (its timestamp as given kept beside it), and
/// marks each answered.
fn answer_questions(
    slice: &mut Slice,
    task: &TaskRef,
    status: &StatusSeen,
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    let Some(subjects) = slice.task_subjects(task)? else {
        return Ok(());
    };
    let mut to_report = Vec::new();
    for s in &subjects {
        let state = slice.subject_mut(s)?;
        for rec in state.records.iter_mut() {
            if rec.agent == task.agent
                && rec.raised_by.task_id == task.task_id
                && !rec.question_answered
                && status.answers_after(rec)
            {
                rec.question_answered = true;
                let fact = answer_fact(rec, status);
                if !to_report.contains(&fact) {
                    to_report.push(fact);
                }
            }
        }
    }
    for fact in &to_report {
        facts::report(slice, fact, ctx, out)?;
    }
    Ok(())
}

/// The fact that answers question `rec`, from `watcher:task-lifecycle`: observed at the
/// answering status's effective time, with its `status.timestamp` exactly as given whenever that
/// differs (a zero value, a leap second, later than receipt; semantics.md "Time": "This holds for
/// every fact, including the one the watcher records itself").
pub(crate) fn answer_fact(
    rec: &crate::record::ExpectationRecord,
    status: &StatusSeen,
) -> ReportedFact {
    ReportedFact {
        fact_key: rec.expectation.satisfied_by.fact_key.clone(),
        observed_at: status.effective_at(),
        observed_at_given: status.claimed_timestamp().map(str::to_owned),
        mapping: None,
        subject: Some(rec.expectation.subject.clone()),
        source: Source::lifecycle(),
    }
}

/// The earliest status already seen of the task that comes after a question asked now (input
/// `seq`, the asking status stamped `timestamp`) and answers it: only a status the agent stamped
/// later than the question's own stamp can (semantics.md: "A question arriving after its task was
/// already seen, after the question, in a non-interrupted state is raised and satisfied at once,
/// with that later status's timestamp"). `timestamp` is the question's own, already bounded by
/// its receipt; each status's is bounded by its own receipt.
pub(crate) fn earliest_answer(
    slice: &Slice,
    task: &TaskRef,
    timestamp: Option<Instant>,
    seq: u64,
) -> Result<Option<StatusSeen>, Need> {
    Ok(slice.task(task)?.and_then(|t| {
        t.statuses
            .iter()
            .filter(|s| Lifecycle::of(&s.state).answers_question() && s.is_after(timestamp, seq))
            .min_by_key(|s| (s.effective_at(), s.seq))
            .cloned()
    }))
}
