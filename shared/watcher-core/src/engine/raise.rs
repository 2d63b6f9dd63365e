//! Raising expectations and every refusal rule (expectations-v1 §8, §10.3, §13.2;
//! semantics.md "Raising", "Supersession, withdrawal, lineage").
//!
//! Checks run in this order, and the first that fails names the rule and the field: parse,
//! declared kind, duplicate delivery / id reuse, `supersedes`, lineage, identity, subject of
//! `anchor` and `after`, cycles, bounds per subject, bounds per agent. A refusal never touches
//! what is already recorded.

use std::collections::{BTreeMap, BTreeSet};

use super::{is_live, AgentProfile, Effect, Origin, Out, Rejection, StepContext};
use crate::expectation::{Expectation, ParseError};
use crate::ids::{ExpectationId, ExpectationRef, TaskRef};
use crate::record::{AnchorState, ExpectationRecord, RaiseOrder, RaisedBy, Status};
use crate::slice::{Need, Slice, SubjectState};
use crate::time::Instant;

/// When and how a question was asked (§11): the asking status's timestamp (receipt time when it
/// had none) and its own `status.timestamp`, if any, both bounded by the receipt time
/// (semantics.md "Time", revision 4: a status cannot happen after it was received).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Asked {
    /// `status.timestamp`, or the receipt time when missing.
    pub at: Instant,
    /// The agent's own valid `status.timestamp`.
    pub timestamp: Option<Instant>,
}

impl Asked {
    /// A question asked by a status received at `received_at`, stamped `timestamp` (the agent's
    /// valid, non-zero one, if any) and taking effect at `at`: a time later than receipt counts as
    /// the receipt time.
    pub(crate) fn received(at: Instant, timestamp: Option<Instant>, received_at: Instant) -> Self {
        Asked {
            at: at.min(received_at),
            timestamp: timestamp.map(|t| t.min(received_at)),
        }
    }
}

/// Live expectations per agent among the records a step loaded, counted before the step changed
/// anything. The per-agent bound is the store's count at load, less this, plus the same count
/// over the slice as it stands: so both bounds count the same set, after the earlier items of the
/// same event (semantics.md "States").
#[derive(Debug, Clone, Default)]
pub(crate) struct LiveBaseline(BTreeMap<crate::ids::AgentId, u64>);

impl LiveBaseline {
    /// Counts the loaded records that are live at `now`.
    pub(crate) fn of(slice: &Slice, now: Instant) -> Self {
        let mut counts = BTreeMap::new();
        for rec in slice.subjects.values().flat_map(|s| &s.records) {
            if is_live(rec, now) {
                *counts.entry(rec.agent.clone()).or_insert(0) += 1;
            }
        }
        LiveBaseline(counts)
    }

    /// The agent's live count now: the store's count at load, adjusted by what the step changed.
    fn live_now(
        &self,
        slice: &Slice,
        agent: &crate::ids::AgentId,
        now: Instant,
    ) -> Result<u64, Need> {
        let at_load = slice.agent_live(agent)?;
        let loaded_now = slice
            .subjects
            .values()
            .flat_map(|s| &s.records)
            .filter(|r| &r.agent == agent && is_live(r, now))
            .count() as u64;
        let loaded_before = self.0.get(agent).copied().unwrap_or(0);
        Ok((at_load + loaded_now).saturating_sub(loaded_before))
    }
}

/// Raises the expectations of one artifact or question, in array order.
#[allow(
    clippy::too_many_arguments,
    reason = "each argument is a distinct dependency"
)]
pub(crate) fn raise(
    slice: &mut Slice,
    agent: &AgentProfile,
    origin: &Origin,
    expectations: &[Result<Expectation, ParseError>],
    question: Option<Asked>,
    ctx: &StepContext<'_>,
    baseline: &LiveBaseline,
    index: &mut u32,
    out: &mut Out,
) -> Result<(), Need> {
    let task = TaskRef {
        agent: agent.id.clone(),
        task_id: origin.task_id.clone(),
    };
    slice.task(&task)?;
    // An unlisted task learns of an end above it from its lineage's records first.
    super::lineage::learn_end_above(slice, &task, ctx)?;
    for parsed in expectations {
        let order = RaiseOrder {
            input: ctx.seq,
            index: *index,
        };
        *index += 1;
        let reject = |out: &mut Out, id: Option<String>, reason: String| {
            out.push(Effect::Rejected(Rejection {
                agent: agent.id.clone(),
                expectation_id: id,
                reason,
                task_id: Some(origin.task_id.clone()),
                at: ctx.now,
                warning: false,
            }));
        };
        let e = match parsed {
            Ok(e) => e,
            Err(err) => {
                reject(out, err.expectation_id.clone(), err.to_string());
                continue;
            }
        };
        match check(slice, agent, origin, e, ctx, baseline)? {
            Verdict::Refuse(reason) => reject(out, Some(e.expectation_id.to_string()), reason),
            Verdict::Duplicate(key) => out.push(Effect::Duplicate { expectation: key }),
            Verdict::Record { lineage } => {
                record(slice, agent, origin, e, lineage, order, question, ctx, out)?;
            }
        }
    }
    Ok(())
}

/// The reason an expectation is refused when its `expectationId` was already raised by the
/// agent with other content or from another task (expectations-v1 §8; semantics.md "Raising":
/// id reuse), as [`Rejection::reason`] and the push answer's `rejected[].reason` give it: a
/// caller tells this refusal from the others by comparing with it (the push answer's `summary`).
pub fn id_reused_reason(expectation_id: &str) -> String {
    format!(
        "field `expectationId`: {expectation_id} was already raised by this agent with other content or from another task; an expectationId must never be reused (expectations-v1 §8)"
    )
}

enum Verdict {
    Refuse(String),
    Duplicate(ExpectationRef),
    Record { lineage: u32 },
}

/// Every refusal rule, in order.
fn check(
    slice: &Slice,
    agent: &AgentProfile,
    origin: &Origin,
    e: &Expectation,
    ctx: &StepContext<'_>,
    baseline: &LiveBaseline,
) -> Result<Verdict, Need> {
    if agent.declaration.kind(&e.kind).is_none() {
        return Ok(Verdict::Refuse(format!(
            "field `kind`: {:?} is not declared on the agent's card (expectations-v1 §6.2, §8)",
            e.kind
        )));
    }
    let key = ExpectationRef {
        agent: agent.id.clone(),
        id: e.expectation_id.clone(),
    };
    if let Some(existing_subject) = slice.subject_of(&key)? {
        let state = slice.subject(&existing_subject)?;
        if let Some(rec) = state.record(&key) {
            if &rec.expectation == e && rec.raised_by.task_id == origin.task_id {
                return Ok(Verdict::Duplicate(key));
            }
        }
        return Ok(Verdict::Refuse(id_reused_reason(e.expectation_id.as_str())));
    }
    let state = slice.subject(&e.subject)?;

    // Supersession, lineage and the identity rule (§10.3).
    let mut lineage = 0;
    let mut superseded: Option<usize> = None;
    if let Some(sup) = &e.supersedes {
        let skey = ExpectationRef {
            agent: agent.id.clone(),
            id: sup.clone(),
        };
        let sidx = match slice.subject_of(&skey)? {
            None => {
                return Ok(Verdict::Refuse(format!(
                    "field `supersedes`: {sup} is not an expectation this agent raised (expectations-v1 §10.3)"
                )))
            }
            Some(s) if s != e.subject => {
                return Ok(Verdict::Refuse(format!(
                    "field `supersedes`: {sup} is about {s}, not {}; a successor must concern the same subject (expectations-v1 §10.3)",
                    e.subject
                )))
            }
            Some(_) => match state.position(&skey) {
                Some(i) => i,
                None => {
                    return Ok(Verdict::Refuse(format!(
                        "field `supersedes`: {sup} is not an expectation this agent raised (expectations-v1 §10.3)"
                    )))
                }
            },
        };
        let srec = &state.records[sidx];
        if !srec.is_open() {
            let what = match srec.status {
                Status::Satisfied => "satisfied",
                _ => "withdrawn",
            };
            return Ok(Verdict::Refuse(format!(
                "field `supersedes`: {sup} is {what}; only an open expectation can be superseded (expectations-v1 §10.3)"
            )));
        }
        lineage = srec.lineage + 1;
        let bound = ctx.settings.lineage_bound;
        if lineage > bound {
            return Ok(Verdict::Refuse(format!(
                "lineage {lineage} exceeds the bound {bound} (expectations-v1 §10.3)"
            )));
        }
        if let Some(twin) = identical_in_lineage(state, sidx, e) {
            return Ok(Verdict::Refuse(format!(
                "field `dueAt`: identical in kind, subject, satisfiedBy and dueAt to {twin} in its own lineage; more time needs a different due time (expectations-v1 §10.3)"
            )));
        }
        superseded = Some(sidx);
    }

    // `anchor` and `after` must name expectations of the same subject (semantics.md "Raising").
    for (field, named) in references(e) {
        if named == &e.expectation_id {
            return Ok(Verdict::Refuse(format!(
                "field `{field}`: names the expectation itself, a cycle through anchor and after (expectations-v1 §9.1, §9.3)"
            )));
        }
        let rkey = ExpectationRef {
            agent: agent.id.clone(),
            id: named.clone(),
        };
        if let Some(s) = slice.subject_of(&rkey)? {
            if s != e.subject {
                return Ok(Verdict::Refuse(format!(
                    "field `{field}`: {named} is about {s}, not {} (expectations-v1 §8)",
                    e.subject
                )));
            }
        }
    }
    if let Some(path) = cycle(state, agent, e, superseded) {
        return Ok(Verdict::Refuse(format!(
            "field `after`/`anchor`: a cycle through anchor and after: {} (expectations-v1 §9.1, §9.3)",
            path.join(" → ")
        )));
    }

    // Bounds (§13.2). A successor replaces its predecessor, so it does not add to the count.
    let replaces = usize::from(superseded.is_some_and(|i| is_live(&state.records[i], ctx.now)));
    let live_here = state.records.iter().filter(|r| is_live(r, ctx.now)).count() - replaces;
    if live_here as u64 >= ctx.settings.max_open_per_subject {
        return Ok(Verdict::Refuse(format!(
            "open expectations on {} would exceed the bound {} per subject (expectations-v1 §13.2)",
            e.subject, ctx.settings.max_open_per_subject
        )));
    }
    let live_agent = baseline
        .live_now(slice, &agent.id, ctx.now)?
        .saturating_sub(replaces as u64);
    if live_agent >= ctx.settings.max_open_per_agent {
        return Ok(Verdict::Refuse(format!(
            "open expectations of agent {} would exceed the bound {} per agent (expectations-v1 §13.2)",
            agent.id, ctx.settings.max_open_per_agent
        )));
    }
    Ok(Verdict::Record { lineage })
}

/// `anchor.expectationId` and each `after` entry, with the field they came from.
fn references(e: &Expectation) -> Vec<(String, &ExpectationId)> {
    let mut refs = Vec::new();
    if let Some(a) = &e.anchor {
        refs.push(("anchor.expectationId".to_owned(), &a.expectation_id));
    }
    for (i, id) in e.after.iter().enumerate() {
        refs.push((format!("after[{i}]"), id));
    }
    refs
}

/// A member of the supersession chain ending at `sidx` that the identity rule forbids
/// repeating: same kind, subject and fact key, and `dueAt` equal to its projected or current
/// due time (semantics.md, "Supersession, withdrawal, lineage").
fn identical_in_lineage(
    state: &SubjectState,
    sidx: usize,
    e: &Expectation,
) -> Option<ExpectationId> {
    let mut cur = Some(sidx);
    let mut steps = 0;
    while let Some(i) = cur {
        let m = &state.records[i];
        if m.expectation.kind == e.kind
            && m.expectation.subject == e.subject
            && m.expectation.satisfied_by == e.satisfied_by
            && (m.projected_due_at() == e.due_at || m.due_at == e.due_at)
        {
            return Some(m.id().clone());
        }
        steps += 1;
        if steps > state.records.len() {
            break;
        }
        cur = m.expectation.supersedes.as_ref().and_then(|p| {
            state.position(&ExpectationRef {
                agent: m.agent.clone(),
                id: p.clone(),
            })
        });
    }
    None
}

/// A path that returns to the new expectation through `anchor` and `after` edges, each edge
/// followed through supersession, with the new one in place of what it supersedes.
fn cycle(
    state: &SubjectState,
    agent: &AgentProfile,
    e: &Expectation,
    superseded: Option<usize>,
) -> Option<Vec<String>> {
    // Node ids → outgoing edges, for this agent's expectations on the subject plus the new one.
    let mut edges: BTreeMap<ExpectationId, Vec<ExpectationId>> = BTreeMap::new();
    let resolve = |id: &ExpectationId| -> ExpectationId {
        let key = ExpectationRef {
            agent: agent.id.clone(),
            id: id.clone(),
        };
        match state.resolve(&key) {
            Some(i) if Some(i) == superseded => e.expectation_id.clone(),
            Some(i) => state.records[i].id().clone(),
            None => id.clone(),
        }
    };
    let targets = |x: &Expectation| -> Vec<ExpectationId> {
        let mut t: Vec<ExpectationId> = x.after.iter().map(&resolve).collect();
        if let Some(a) = &x.anchor {
            t.push(resolve(&a.expectation_id));
        }
        t
    };
    for r in state.records.iter().filter(|r| r.agent == agent.id) {
        edges.insert(r.id().clone(), targets(&r.expectation));
    }
    edges.insert(e.expectation_id.clone(), targets(e));
    // Depth-first search from the new node.
    let start = e.expectation_id.clone();
    let mut stack = vec![(start.clone(), vec![start.to_string()])];
    let mut seen: BTreeSet<ExpectationId> = BTreeSet::new();
    while let Some((node, path)) = stack.pop() {
        for next in edges.get(&node).into_iter().flatten() {
            if next == &start {
                let mut p = path;
                p.push(start.to_string());
                return Some(p);
            }
            if seen.insert(next.clone()) {
                let mut p = path.clone();
                p.push(next.to_string());
                stack.push((next.clone(), p));
            }
        }
    }
    None
}

/// Records an accepted expectation: re-anchors at once on an anchor already satisfied,
/// supersedes its predecessor, withdraws at once if its task (or a task of its lineage) already
/// ended withdrawing, and answers at once a question whose task already moved on.
#[allow(
    clippy::too_many_arguments,
    reason = "each argument is a distinct dependency"
)]
fn record(
    slice: &mut Slice,
    agent: &AgentProfile,
    origin: &Origin,
    e: &Expectation,
    lineage: u32,
    order: RaiseOrder,
    question: Option<Asked>,
    ctx: &StepContext<'_>,
    out: &mut Out,
) -> Result<(), Need> {
    let now = ctx.now;
    let task = TaskRef {
        agent: agent.id.clone(),
        task_id: origin.task_id.clone(),
    };
    let task_lineage = slice
        .task(&task)?
        .map(|t| t.lineage.clone())
        .unwrap_or_default();
    // The task's own withdrawing end, else one its lineage met (`lineage`).
    let ended = slice.task(&task)?.and_then(|t| {
        t.ended()
            .map(|(ancestor, state)| (ancestor.cloned(), state.to_owned()))
    });
    let answered_at = match question {
        Some(q) => super::lifecycle::earliest_answer(slice, &task, q.timestamp, order.input)?,
        None => None,
    };
    let tenant = slice.tenant.clone();
    let state = slice.subject_mut(&e.subject)?;
    let mut rec = ExpectationRecord {
        expectation: e.clone(),
        agent: agent.id.clone(),
        tenant,
        status: Status::Open,
        due_at: e.due_at,
        lineage,
        raised_at: now,
        raised_by: RaisedBy {
            task_id: origin.task_id.clone(),
            context_id: origin.context_id.clone(),
            lineage: task_lineage,
            trace: ctx.trace,
        },
        satisfaction: None,
        lapses: Vec::new(),
        withdrawal: None,
        superseded_by: None,
        order,
        anchor_state: AnchorState::Unanchored,
        horizon_checked: false,
        question_at: question.map(|q| q.at),
        question_timestamp: question.and_then(|q| q.timestamp),
        question_answered: answered_at.is_some(),
    };
    if let Some(anchor) = &e.anchor {
        let akey = ExpectationRef {
            agent: agent.id.clone(),
            id: anchor.expectation_id.clone(),
        };
        rec.anchor_state = AnchorState::Waiting;
        if let Some(i) = state.resolve(&akey) {
            let target = &state.records[i];
            match (&target.status, &target.satisfaction) {
                (Status::Satisfied, Some(sat)) => {
                    rec.due_at = sat.observed_at.plus(anchor.offset.clone());
                    rec.anchor_state = AnchorState::Reanchored;
                }
                (Status::Withdrawn, _) => rec.anchor_state = AnchorState::FellBack,
                _ => {}
            }
        }
    }
    let key = rec.key();
    state.records.push(rec);
    let new_idx = state.records.len() - 1;
    if state.records[new_idx].anchor_state == AnchorState::Reanchored {
        out.push(Effect::Reanchored {
            expectation: key.clone(),
            due_at: state.records[new_idx].due_at,
        });
    }
    out.push(Effect::Raised {
        expectation: key,
        subject: e.subject.clone(),
    });
    if let Some(sup) = &e.supersedes {
        let skey = ExpectationRef {
            agent: agent.id.clone(),
            id: sup.clone(),
        };
        if let Some(sidx) = state.position(&skey) {
            state.records[sidx].superseded_by = Some(e.expectation_id.clone());
            let reason = format!(
                "superseded by {} (expectations-v1 §8.1, §10.3)",
                e.expectation_id
            );
            super::withdraw::withdraw_record(state, sidx, reason, now, out);
        }
    }
    if let Some((ancestor, state_name)) = &ended {
        let reason = match ancestor {
            None => format!(
                "origin task {} had already reached {} (expectations-v1 §8.1)",
                origin.task_id, state_name
            ),
            Some(ancestor) => super::lineage::reason(&origin.task_id, ancestor, state_name),
        };
        super::withdraw::withdraw_record(state, new_idx, reason, now, out);
    }
    let rec = state.records[new_idx].clone();
    slice.index_raised(&rec);
    slice.task_mut(&task)?.subjects.insert(e.subject.clone());
    if let Some(status) = &answered_at {
        let fact = super::lifecycle::answer_fact(&rec, status);
        super::facts::report(slice, &fact, ctx, out)?;
    }
    Ok(())
}
