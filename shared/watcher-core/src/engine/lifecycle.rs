//! Task statuses: withdrawal on a withdrawing terminal state, and questions that expire
//! (expectations-v1 §8.1, §11; semantics.md "Questions that expire").

use super::{facts, Origin, Out, ReportedFact};
use crate::ids::{AgentId, Source, Subject, TaskRef};
use crate::slice::{Lifecycle, Need, Slice, StatusSeen};
use crate::time::Instant;

/// The source the watcher records for a question answered by the task leaving the interrupted
/// state (semantics.md, "Questions that expire").
pub const LIFECYCLE_SOURCE: &str = "watcher:task-lifecycle";

/// A status of the origin task seen at `now`.
///
/// Canceled, failed and rejected withdraw what the task raised. Submitted, working and completed
/// answer every open question the task asked at or before the status's timestamp (missing
/// timestamp: receipt time): the watcher reports each question's `satisfiedBy.factKey` itself.
pub(crate) fn status(
    slice: &mut Slice,
    agent: &AgentId,
    origin: &Origin,
    state: &str,
    timestamp: Option<Instant>,
    now: Instant,
    out: &mut Out,
) -> Result<(), Need> {
    let task = TaskRef {
        agent: agent.clone(),
        task_id: origin.task_id.clone(),
    };
    slice.task(&task)?;
    let at = timestamp.unwrap_or(now);
    let seen = StatusSeen {
        state: state.to_string(),
        at,
        received_at: now,
    };
    let lifecycle = Lifecycle::of(state);
    {
        let record = slice.task_mut(&task)?;
        record.statuses.push(seen.clone());
        if lifecycle == Lifecycle::Withdrawing && record.withdrawn_by.is_none() {
            record.withdrawn_by = Some(seen);
        }
    }
    match lifecycle {
        Lifecycle::Withdrawing => super::withdraw::task_terminal(slice, &task, state, now, out),
        l if l.answers_question() => answer_questions(slice, &task, at, now, out, |q| q <= at),
        _ => Ok(()),
    }
}

/// Reports the lifecycle fact for every open question of `task` whose asking time passes
/// `asked_before`, observed at `answered_at`.
pub(crate) fn answer_questions(
    slice: &mut Slice,
    task: &TaskRef,
    answered_at: Instant,
    now: Instant,
    out: &mut Out,
    asked_before: impl Fn(Instant) -> bool,
) -> Result<(), Need> {
    let subjects: Vec<Subject> = match slice.task(task)? {
        Some(t) => t.subjects.iter().cloned().collect(),
        None => return Ok(()),
    };
    let mut to_report = Vec::new();
    for s in &subjects {
        let state = slice.subject(s)?;
        for rec in &state.records {
            let Some(q) = rec.question_at else { continue };
            if rec.is_open()
                && rec.agent == task.agent
                && rec.raised_by.task_id == task.task_id
                && asked_before(q)
            {
                let fact = ReportedFact {
                    fact_key: rec.expectation.satisfied_by.fact_key.clone(),
                    observed_at: answered_at,
                    subject: Some(rec.expectation.subject.clone()),
                    source: lifecycle_source(),
                };
                if !to_report.contains(&fact) {
                    to_report.push(fact);
                }
            }
        }
    }
    for fact in &to_report {
        facts::report(slice, fact, now, out)?;
    }
    Ok(())
}

fn lifecycle_source() -> Source {
    Source::lifecycle()
}

/// The earliest status of the task that answers a question asked at `asked_at`: a later
/// (strictly) submitted, working or completed status (semantics.md: a question arriving after
/// its task was already seen in a later non-interrupted state is satisfied at once).
pub(crate) fn earliest_answer(
    slice: &Slice,
    task: &TaskRef,
    asked_at: Instant,
) -> Result<Option<Instant>, Need> {
    Ok(slice.task(task)?.and_then(|t| {
        t.statuses
            .iter()
            .filter(|s| Lifecycle::of(&s.state).answers_question() && s.at > asked_at)
            .map(|s| s.at)
            .min()
    }))
}
