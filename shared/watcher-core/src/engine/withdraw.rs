//! Withdrawal: on the origin task's cancellation, failure or rejection (and on that of a task of
//! its lineage, [`super::lineage`]), explicitly by the agent, and by supersession
//! (expectations-v1 §8.1, §13.6; semantics.md "Supersession, withdrawal").

use super::{Effect, Origin, Out};
use crate::ids::{AgentId, ExpectationId, ExpectationRef, TaskRef};
use crate::record::{AnchorState, Status, Withdrawal};
use crate::slice::{Need, Slice, SubjectState};
use crate::time::Instant;

/// Withdraws the open record at `idx` and lets its dependents fall back to their projected due
/// time when it has no successor (semantics.md, "Overdue").
pub(crate) fn withdraw_record(
    state: &mut SubjectState,
    idx: usize,
    reason: String,
    now: Instant,
    out: &mut Out,
) {
    let rec = &mut state.records[idx];
    if !rec.is_open() {
        return;
    }
    rec.status = Status::Withdrawn;
    rec.withdrawal = Some(Withdrawal {
        withdrawn_at: now,
        reason: reason.clone(),
    });
    out.push(Effect::Withdrawn {
        expectation: rec.key(),
        reason,
    });
    if rec.superseded_by.is_some() {
        return; // references follow supersession to the successor
    }
    let agent = rec.agent.clone();
    for d in 0..state.records.len() {
        let dep = &state.records[d];
        if !dep.is_open() || dep.anchor_state != AnchorState::Waiting || dep.agent != agent {
            continue;
        }
        let Some(anchor) = &dep.expectation.anchor else {
            continue;
        };
        let target = ExpectationRef {
            agent: agent.clone(),
            id: anchor.expectation_id.clone(),
        };
        if state.resolve(&target) == Some(idx) {
            state.records[d].anchor_state = AnchorState::FellBack;
        }
    }
}

/// Withdraws every open expectation the task raised, and every open successor of those, with a
/// reason naming the state (§8.1, §13.6); then the same for every task of its lineage below it
/// ([`super::lineage::ended`]).
pub(crate) fn task_terminal(
    slice: &mut Slice,
    task: &TaskRef,
    state_name: &str,
    now: Instant,
    out: &mut Out,
) -> Result<(), Need> {
    let reason = format!(
        "origin task {} reached {} (expectations-v1 §8.1)",
        task.task_id, state_name
    );
    withdraw_raised(slice, task, &reason, now, out)?;
    super::lineage::ended(slice, task, state_name, now, out)
}

/// Withdraws every open expectation `task` raised, and every open successor of those, with
/// `reason`.
pub(crate) fn withdraw_raised(
    slice: &mut Slice,
    task: &TaskRef,
    reason: &str,
    now: Instant,
    out: &mut Out,
) -> Result<(), Need> {
    let Some(subjects) = slice.task_subjects(task)? else {
        return Ok(());
    };
    for s in &subjects {
        let state = slice.subject_mut(s)?;
        let raised: Vec<usize> = state
            .records
            .iter()
            .enumerate()
            .filter(|(_, r)| r.agent == task.agent && r.raised_by.task_id == task.task_id)
            .map(|(i, _)| i)
            .collect();
        for idx in raised {
            // The record itself, then its successors in order.
            let mut chain = vec![idx];
            let mut cur = idx;
            while let Some(next) = state.records[cur].superseded_by.clone() {
                let key = ExpectationRef {
                    agent: task.agent.clone(),
                    id: next,
                };
                match state.position(&key) {
                    Some(n) if !chain.contains(&n) => {
                        chain.push(n);
                        cur = n;
                    }
                    _ => break,
                }
            }
            for i in chain {
                withdraw_record(state, i, reason.to_owned(), now, out);
            }
        }
    }
    Ok(())
}

/// `{ "withdraw": [...], "reason": "..." }` in artifact metadata: withdraws the named open
/// expectations of this agent. Unknown, satisfied or already withdrawn ones are left as they are.
pub(crate) fn explicit(
    slice: &mut Slice,
    agent: &AgentId,
    origin: &Origin,
    ids: &[ExpectationId],
    reason: Option<&str>,
    now: Instant,
    out: &mut Out,
) -> Result<(), Need> {
    let _ = origin;
    for id in ids {
        let key = ExpectationRef {
            agent: agent.clone(),
            id: id.clone(),
        };
        let Some(subject) = slice.subject_of(&key)? else {
            continue;
        };
        slice.subject(&subject)?;
        let state = slice.subject_mut(&subject)?;
        if let Some(idx) = state.position(&key) {
            let why = match reason {
                Some(r) if !r.trim().is_empty() => {
                    format!("withdrawn by the agent: {r} (expectations-v1 §8.1)")
                }
                _ => "withdrawn by the agent (expectations-v1 §8.1)".to_owned(),
            };
            withdraw_record(state, idx, why, now, out);
        }
    }
    Ok(())
}
