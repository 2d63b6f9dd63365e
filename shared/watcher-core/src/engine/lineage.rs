//! The lineage of tasks (expectations-v1 §8.1, §10.2, §13.6; docs/interpretation.md "Withdrawal
//! follows the lineage").
//!
//! Work raised while handling a lapse task belongs to the work the lapse task is about; so does
//! work raised in a task started by a request whose `referenceTaskIds` name an earlier task. For
//! each task the watcher keeps its lineage ([`TaskRecord::lineage`]: the earlier tasks of the
//! same agent its work descends from, nearest first, at most `lineage_bound + 1` of them), and on
//! each of those the descendant ([`TaskRecord::descendants`]). When a task is canceled, fails or
//! is rejected, what its descendants raised is withdrawn with what it raised itself (`ended`),
//! and what they raise afterwards is withdrawn at once (`raise`, by
//! [`TaskRecord::lineage_ended`]). A link that arrives after its ancestor ended withdraws at once
//! too (`link`).
//!
//! A task record lists at most [`DESCENDANTS_KEPT`] descendants: the first linked below it. A
//! long-lived task whose expectations lapse thousands of times gets thousands of descendants,
//! and a list of them all would grow its record without bound and make its end cost what all of
//! them raised. A task linked below one whose list is full is marked
//! [`TaskRecord::unlisted`], and an end reaches it through checks that read upward, each at most
//! `lineage_bound + 1` task records: a link reads the tasks of its new lineage (`link`); a
//! raise from an unlisted task reads its lineage (`learn_end_above`); and before an
//! expectation with a lineage lapses, the tasks of its lineage are read
//! (`withdraw_before_lapse`): one that ended withdrawing withdraws it instead. The check before
//! a lapse task's first send reads the same records (`watcher-delivery`'s `reconcile`). So the
//! cost of a link, an end, a raise or a lapse is bounded by the lineage bound and
//! [`DESCENDANTS_KEPT`], never by the record's size or the lineage's.

use std::collections::BTreeSet;

use super::{Origin, Out, StepContext};
use crate::ids::{AgentId, Subject, TaskId, TaskRef};
use crate::slice::{LineageEnd, Need, Slice, TaskRecord};
use crate::time::Instant;

/// How many descendants a task record lists ([`TaskRecord::descendants`]): the first this many
/// tasks linked below it (docs/interpretation.md "Withdrawal follows the lineage").
///
/// The bound keeps the cost of a task's end and the size of its record independent of how much
/// work descends from it: an end loads and writes at most this many descendants' records (and
/// the subjects of what they raised), a task record holds at most this many task ids (each at
/// most [`crate::ids::MAX_ID_LEN`] bytes: about 8 KB of a DynamoDB item), and a task is written
/// by at most this many links below it. Sixteen leaves room in one DynamoDB transaction (100
/// writes, docs/dynamodb.md "Transaction size") for a cancel that writes each listed
/// descendant's record and withdraws an expectation or two of each. A task linked once the list
/// is full is [`TaskRecord::unlisted`]: the ends above it reach it through the checks upward.
pub const DESCENDANTS_KEPT: usize = 16;

/// Records that the work of `origin`'s task descends from `parent` (a [`super::PushItem::Lineage`]).
///
/// The first link of a task stands: a task whose lineage is known keeps it, and a link that
/// would make a cycle (the parent descends from the task) is not recorded. The task's lineage is
/// `parent` followed by `parent`'s own, cut at `lineage_bound + 1` tasks; the lineages of the
/// tasks the task lists below it grow by the same tasks (cut the same way), and each task of
/// each new lineage lists the descendant while it lists fewer than [`DESCENDANTS_KEPT`] (else
/// the descendant is marked [`TaskRecord::unlisted`], and that task's record is not written).
/// When a task of a new lineage already ended withdrawing, or its record shows an end above it
/// that reaches this far ([`nearest_end`]), everything the task (or a task below it) raised is
/// withdrawn at once. Loads at most [`DESCENDANTS_KEPT`] + `lineage_bound` + 2 task records.
pub(crate) fn link(
    slice: &mut Slice,
    agent: &AgentId,
    origin: &Origin,
    parent: &TaskId,
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    let child = &origin.task_id;
    if child == parent {
        return Ok(());
    }
    let of = |id: &TaskId| TaskRef {
        agent: agent.clone(),
        task_id: id.clone(),
    };
    slice.tasks_loaded([&of(child), &of(parent)])?;
    let (below, linked) = match slice.task(&of(child))? {
        Some(t) => (listed(t), !t.lineage.is_empty()),
        None => (BTreeSet::new(), false),
    };
    if linked {
        return Ok(());
    }
    let above = match slice.task(&of(parent))? {
        Some(p) => p.lineage.clone(),
        None => Vec::new(),
    };
    if above.contains(child) || below.contains(parent) {
        return Ok(());
    }
    let depth = ctx.settings.lineage_bound as usize + 1;
    let chain: Vec<TaskId> = std::iter::once(parent.clone())
        .chain(above)
        .take(depth)
        .collect();
    let wanted: Vec<TaskRef> = below.iter().chain(&chain).map(of).collect();
    slice.tasks_loaded(&wanted)?;
    // What the task and those below it raised carries their lineage: their subjects.
    let raised_on: BTreeSet<Subject> = std::iter::once(child)
        .chain(&below)
        .filter_map(|m| slice.tasks.get(&of(m)).cloned().flatten())
        .flat_map(|t| t.subjects)
        .collect();
    slice.subjects_loaded(&raised_on)?;
    // The nearest end the new ancestors show, and how far up it is from the task.
    let chain_end = nearest_end(slice, agent, &chain)?;
    // The task, then each task listed below it, with its new lineage and where in it the new
    // ancestors start.
    let mut members = vec![(child.clone(), chain.clone(), 0)];
    for d in &below {
        let Some(old) = slice.task(&of(d))?.map(|t| t.lineage.clone()) else {
            continue;
        };
        let Some(at) = old.iter().position(|t| t == child) else {
            continue;
        };
        let kept = old.get(..=at).unwrap_or_default();
        let lineage = kept.iter().chain(&chain).take(depth).cloned().collect();
        members.push((d.clone(), lineage, kept.len()));
    }
    let mut ending = Vec::new();
    for (member, lineage, from) in &members {
        // Each new ancestor lists it while its list has room; the older ones listed it already
        // (or it is unlisted already).
        let mut unlisted = false;
        for a in lineage.get(*from..).unwrap_or_default() {
            let full = match slice.task(&of(a))? {
                Some(up) if up.descendants.contains(member) => continue,
                Some(up) => up.descendants.len() >= DESCENDANTS_KEPT,
                None => false,
            };
            if full {
                unlisted = true;
            } else {
                let up = slice.task_mut(&of(a))?;
                up.descendants.insert(member.clone());
                up.lineage_at = Some(ctx.now);
            }
        }
        let rec = slice.task_mut(&of(member))?;
        rec.lineage.clone_from(lineage);
        rec.lineage_at = Some(ctx.now);
        rec.unlisted |= unlisted;
        // An end above it reaches it only through its own (cut) lineage.
        let end = chain_end
            .as_ref()
            .filter(|(up, _)| from + up < depth)
            .map(|(_, end)| end);
        if let (None, None, Some(end)) = (&rec.withdrawn_by, &rec.lineage_ended, end) {
            rec.lineage_ended = Some(end.clone());
            ending.push((of(member), end.clone()));
        }
        carry_lineage(slice, &of(member), lineage)?;
    }
    withdraw_below(slice, &ending, ctx.now, out)
}

/// The descendants `task` lists, at most [`DESCENDANTS_KEPT`] (a record written before the
/// bound may list more: only the first are taken, so no step's cost follows the list).
fn listed(task: &TaskRecord) -> BTreeSet<TaskId> {
    task.descendants
        .iter()
        .take(DESCENDANTS_KEPT)
        .cloned()
        .collect()
}

/// The nearest withdrawing end that the records of `lineage` (a lineage of tasks of `agent`,
/// nearest first) show, and how far above the task whose lineage it is that end is (0: the
/// first task of `lineage`): a task of it that ended itself, at its place; or the end a task of
/// it keeps from above ([`TaskRecord::lineage_ended`]), at that task's place plus the place of the
/// ended task in its own lineage, plus one. `None` when none shows one.
///
/// # Errors
/// [`Need::Tasks`] for the records of `lineage` not loaded, all at once.
pub(crate) fn nearest_end(
    slice: &Slice,
    agent: &AgentId,
    lineage: &[TaskId],
) -> Result<Option<(usize, LineageEnd)>, Need> {
    let of = |id: &TaskId| TaskRef {
        agent: agent.clone(),
        task_id: id.clone(),
    };
    let refs: Vec<TaskRef> = lineage.iter().map(of).collect();
    slice.tasks_loaded(&refs)?;
    let mut nearest: Option<(usize, LineageEnd)> = None;
    for (place, task) in refs.iter().enumerate() {
        let Some(rec) = slice.task(task)? else {
            continue;
        };
        let found = match (&rec.withdrawn_by, &rec.lineage_ended) {
            (Some(_), _) => end_of(rec).map(|end| (place, end)),
            (None, Some(end)) => rec
                .lineage
                .iter()
                .position(|t| t == &end.task_id)
                .map(|up| (place + 1 + up, end.clone())),
            (None, None) => None,
        };
        if let Some((up, end)) = found {
            if nearest.as_ref().is_none_or(|(best, _)| up < *best) {
                nearest = Some((up, end));
            }
        }
    }
    Ok(nearest)
}

/// The withdrawing end that reaches a task whose lineage is `lineage` (its tasks, of `agent`,
/// nearest first) as the lineage's records show it now: the [`nearest_end`], when it is less
/// than `depth` (`lineage_bound + 1`) tasks up. At most `depth` keyed reads, asked for in one
/// [`Need`].
pub(crate) fn end_above(
    slice: &Slice,
    agent: &AgentId,
    lineage: &[TaskId],
    depth: usize,
) -> Result<Option<LineageEnd>, Need> {
    Ok(nearest_end(slice, agent, lineage)?
        .filter(|(up, _)| *up < depth)
        .map(|(_, end)| end))
}

/// Before `task` raises: when it is [`TaskRecord::unlisted`] (an end above it is not written
/// into its record) and knows no end yet, reads the records of its lineage ([`end_above`]) and
/// keeps the end they show as its [`TaskRecord::lineage_ended`], so that what it raises now is
/// withdrawn at once, as for a listed descendant. A listed task, or one that knows its end,
/// reads nothing more.
///
/// # Errors
/// [`Need`] for the task's record, then for its lineage's.
pub(crate) fn learn_end_above(
    slice: &mut Slice,
    task: &TaskRef,
    ctx: &StepContext<'_>,
) -> Result<(), Need> {
    let lineage = match slice.task(task)? {
        Some(t) if t.unlisted && t.withdrawn_by.is_none() && t.lineage_ended.is_none() => {
            t.lineage.clone()
        }
        _ => return Ok(()),
    };
    let depth = ctx.settings.lineage_bound as usize + 1;
    if let Some(end) = end_above(slice, &task.agent, &lineage, depth)? {
        slice.task_mut(task)?.lineage_ended = Some(end);
    }
    Ok(())
}

/// Before the records `due` (each a loaded subject and the index of a record in it) lapse: each
/// still open whose raising task has a lineage ([`crate::record::RaisedBy::lineage`]) is
/// withdrawn instead when the records of that lineage show a withdrawing end that reaches it
/// ([`end_above`]), with the reason naming the ended task. This is how an end reaches what an
/// [`TaskRecord::unlisted`] task raised before it; for a listed one the end has withdrawn it
/// already. The lineages' records are asked for in one [`Need`]: at most `lineage_bound + 1` per
/// record, none for a record raised outside any lineage.
pub(crate) fn withdraw_before_lapse(
    slice: &mut Slice,
    due: &[(Subject, usize)],
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    let raised_in_lineage = |slice: &Slice, s: &Subject, idx: usize| {
        slice
            .subjects
            .get(s)
            .and_then(|state| state.records.get(idx))
            .filter(|r| r.is_open() && !r.raised_by.lineage.is_empty())
            .map(|r| {
                (
                    r.agent.clone(),
                    r.raised_by.task_id.clone(),
                    r.raised_by.lineage.clone(),
                )
            })
    };
    let asked: BTreeSet<TaskRef> = due
        .iter()
        .filter_map(|(s, idx)| raised_in_lineage(slice, s, *idx))
        .flat_map(|(agent, _, lineage)| {
            lineage.into_iter().map(move |task_id| TaskRef {
                agent: agent.clone(),
                task_id,
            })
        })
        .collect();
    if asked.is_empty() {
        return Ok(());
    }
    slice.tasks_loaded(&asked)?;
    let depth = ctx.settings.lineage_bound as usize + 1;
    for (s, idx) in due {
        let Some((agent, task, lineage)) = raised_in_lineage(slice, s, *idx) else {
            continue;
        };
        if let Some(end) = end_above(slice, &agent, &lineage, depth)? {
            let why = reason(&task, &end.task_id, &end.state);
            let state = slice.subject_mut(s)?;
            super::withdraw::withdraw_record(state, *idx, why, ctx.now, out);
        }
    }
    Ok(())
}

/// Writes `lineage` into what `task` raised (`RaisedBy::lineage`), so that its lapse tasks
/// carry it; a subject whose records already say so is left as it is.
fn carry_lineage(slice: &mut Slice, task: &TaskRef, lineage: &[TaskId]) -> Result<(), Need> {
    let subjects: Vec<Subject> = match slice.task(task)? {
        Some(t) => t.subjects.iter().cloned().collect(),
        None => return Ok(()),
    };
    let raised = |r: &crate::record::ExpectationRecord| {
        r.agent == task.agent && r.raised_by.task_id == task.task_id
    };
    for s in &subjects {
        let stale = slice
            .subject(s)?
            .records
            .iter()
            .any(|r| raised(r) && r.raised_by.lineage != lineage);
        if stale {
            for r in slice
                .subject_mut(s)?
                .records
                .iter_mut()
                .filter(|r| raised(r))
            {
                r.raised_by.lineage = lineage.to_vec();
            }
        }
    }
    Ok(())
}

/// `task` reached the withdrawing state `state` at `now`: every task it lists below it
/// ([`TaskRecord::descendants`], at most [`DESCENDANTS_KEPT`]) keeps the end (unless it already
/// ended, or knows an end nearer to it), and what each raised is withdrawn, with a reason naming
/// the ancestor and its state. All the tasks below are asked for in one [`Need`], then all their
/// subjects in another. The tasks it does not list learn of the end through the checks upward
/// (module documentation).
pub(crate) fn ended(
    slice: &mut Slice,
    task: &TaskRef,
    state: &str,
    now: Instant,
    out: &mut Out,
) -> Result<(), Need> {
    let below: Vec<TaskRef> = match slice.task(task)? {
        Some(t) => listed(t)
            .into_iter()
            .map(|d| TaskRef {
                agent: task.agent.clone(),
                task_id: d,
            })
            .collect(),
        None => return Ok(()),
    };
    if below.is_empty() {
        return Ok(());
    }
    slice.tasks_loaded(&below)?;
    let end = LineageEnd {
        task_id: task.task_id.clone(),
        state: state.to_owned(),
        at: now,
    };
    let mut ending = Vec::with_capacity(below.len());
    for d in below {
        let unended = slice
            .task(&d)?
            .is_some_and(|t| t.withdrawn_by.is_none() && t.lineage_ended.is_none());
        if unended {
            slice.task_mut(&d)?.lineage_ended = Some(end.clone());
        }
        ending.push((d, end.clone()));
    }
    withdraw_below(slice, &ending, now, out)
}

/// Withdraws what each task of `ending` (each loaded) raised, naming the ancestor whose end
/// reached it. The subjects of all of them are asked for in one [`Need`].
fn withdraw_below(
    slice: &mut Slice,
    ending: &[(TaskRef, LineageEnd)],
    now: Instant,
    out: &mut Out,
) -> Result<(), Need> {
    let subjects: BTreeSet<Subject> = ending
        .iter()
        .filter_map(|(d, _)| slice.tasks.get(d).cloned().flatten())
        .flat_map(|t| t.subjects)
        .collect();
    slice.subjects_loaded(&subjects)?;
    for (task, end) in ending {
        let reason = reason(&task.task_id, &end.task_id, &end.state);
        super::withdraw::withdraw_raised(slice, task, &reason, now, out)?;
    }
    Ok(())
}

/// The withdrawal reason of an expectation raised by `task` whose lineage holds `ancestor`,
/// which reached `state`.
pub(crate) fn reason(task: &TaskId, ancestor: &TaskId, state: &str) -> String {
    format!(
        "task {ancestor} of the lineage of origin task {task} reached {state} (expectations-v1 §8.1)"
    )
}

/// The end a task passes down to a task linked below it: its own withdrawing state, else the end
/// its lineage already met.
fn end_of(task: &TaskRecord) -> Option<LineageEnd> {
    match &task.withdrawn_by {
        Some(own) => Some(LineageEnd {
            task_id: task.task.task_id.clone(),
            state: own.state.clone(),
            at: own.received_at,
        }),
        None => task.lineage_ended.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Tenant;
    use crate::slice::StatusSeen;

    fn id(text: &str) -> TaskId {
        TaskId::parse(text).expect("a task id")
    }

    fn agent() -> AgentId {
        AgentId::parse("booking").expect("an agent id")
    }

    fn at() -> Instant {
        Instant::parse("2026-09-10T03:00:00Z").expect("an instant")
    }

    /// A loaded record of task `task` with `lineage`.
    fn record(slice: &mut Slice, task: &str, lineage: &[&str]) -> TaskRef {
        let task = TaskRef {
            agent: agent(),
            task_id: id(task),
        };
        let mut rec = TaskRecord::new(task.clone());
        rec.lineage = lineage.iter().map(|t| id(t)).collect();
        slice.tasks.insert(task.clone(), Some(rec));
        task
    }

    /// `p` was canceled; `c` (below `p`) keeps the end; `d` was linked below `c` before `c`
    /// was linked below `p` and past `c`'s list, so its own lineage is only `c`. The end reaches
    /// `d` through `c`'s record, two tasks up: within a depth of 2, not within a depth of 1.
    #[test]
    fn an_end_kept_by_an_ancestor_reaches_as_far_as_the_depth() {
        let mut slice = Slice::new(Tenant::default_tenant());
        let p = record(&mut slice, "p", &[]);
        let c = record(&mut slice, "c", &["p"]);
        record(&mut slice, "d", &["c"]);
        let end = LineageEnd {
            task_id: id("p"),
            state: "TASK_STATE_CANCELED".into(),
            at: at(),
        };
        if let Some(Some(rec)) = slice.tasks.get_mut(&p) {
            rec.withdrawn_by = Some(StatusSeen {
                state: end.state.clone(),
                at: at(),
                received_at: at(),
                timestamp: None,
                seq: 1,
                given_timestamp: None,
            });
        }
        if let Some(Some(rec)) = slice.tasks.get_mut(&c) {
            rec.lineage_ended = Some(end.clone());
        }
        let d_lineage = [id("c")];
        assert_eq!(
            nearest_end(&slice, &agent(), &d_lineage),
            Ok(Some((1, end.clone())))
        );
        assert_eq!(
            end_above(&slice, &agent(), &d_lineage, 2),
            Ok(Some(end.clone()))
        );
        assert_eq!(end_above(&slice, &agent(), &d_lineage, 1), Ok(None));
        // The ended task itself in the lineage: at its own place.
        assert_eq!(
            nearest_end(&slice, &agent(), &[id("c"), id("p")]),
            Ok(Some((1, end)))
        );
        // A record not loaded is asked for.
        assert!(matches!(
            nearest_end(&slice, &agent(), &[id("c"), id("unknown")]),
            Err(Need::Task(_))
        ));
    }
}
