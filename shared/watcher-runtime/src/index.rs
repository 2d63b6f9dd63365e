//! The index rows a store derives from a subject's state on every commit. One function, so that
//! every store keeps the same indexes (fact key → subjects, expectation → subject, deadlines,
//! live counts).

use watcher_core::engine::{live_until, pending_timers, LiveUntil, TimerKey};
use watcher_core::ids::{AgentId, ExpectationRef, FactKey};
use watcher_core::record::RaiseOrder;
use watcher_core::slice::SubjectState;
use watcher_core::time::Instant;

/// What one subject contributes to the indexes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SubjectIndex {
    /// Every expectation on the subject.
    pub expectations: Vec<ExpectationRef>,
    /// Every `satisfiedBy.factKey` on the subject (deduplicated).
    pub fact_keys: Vec<FactKey>,
    /// Pending timers: key, instant, raising order.
    pub timers: Vec<(TimerKey, Instant, RaiseOrder)>,
    /// Per record: the agent and until when it counts against the bounds.
    pub live: Vec<(ExpectationRef, AgentId, LiveUntil)>,
}

/// Derives the index rows of `state`.
pub fn subject_index(state: &SubjectState) -> SubjectIndex {
    let mut ix = SubjectIndex::default();
    for rec in &state.records {
        let key = rec.key();
        ix.expectations.push(key.clone());
        let fk = rec.expectation.satisfied_by.fact_key.clone();
        if !ix.fact_keys.contains(&fk) {
            ix.fact_keys.push(fk);
        }
        for (kind, at) in pending_timers(rec) {
            ix.timers.push((
                TimerKey {
                    subject: state.subject.clone(),
                    expectation: key.clone(),
                    kind,
                },
                at,
                rec.order,
            ));
        }
        ix.live.push((key, rec.agent.clone(), live_until(rec)));
    }
    ix
}
