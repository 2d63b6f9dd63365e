//! The part of a tenant's record one engine step reads and writes: the subjects it touches, the
//! tasks it concerns, and the index entries it consults. A store loads a slice, the engine
//! returns the changed slice, the store commits it conditionally on the versions it loaded.
//!
//! When the engine finds it needs something the slice does not hold, it answers
//! [`Need`]; the shell loads that too and runs the (pure) step again.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::ids::{AgentId, ExpectationRef, FactKey, Source, Subject, TaskId, TaskRef, Tenant};
use crate::record::ExpectationRecord;
use crate::time::Instant;

/// A fact as recorded against a subject (expectations-v1 §9.2; semantics.md "Facts").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FactEntry {
    /// The fact's key.
    pub fact_key: FactKey,
    /// The authenticated reporter.
    pub source: Source,
    /// Effective `observedAt` (never after `receivedAt`).
    pub observed_at: Instant,
    /// The claimed `observedAt` as reported (normalised to UTC); identity of the fact.
    pub claimed_observed_at: Instant,
    /// `observedAt` exactly as given, when it differs from the effective one (a claim later than
    /// receipt, a zero value, a leap second; semantics.md "Time").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_at_given: Option<String>,
    /// The carrier-webhook mapping that read the fact, when one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping: Option<String>,
    /// Receipt on the watcher's clock.
    pub received_at: Instant,
    /// The subject the fact named, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
    /// Expectations it satisfied.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub satisfied: Vec<ExpectationRef>,
}

impl FactEntry {
    /// Identity of a fact: (source, factKey, claimed observedAt) within the tenant.
    pub fn same_fact(&self, source: &Source, key: &FactKey, claimed: Instant) -> bool {
        &self.source == source && &self.fact_key == key && self.claimed_observed_at == claimed
    }
}

/// Everything the watcher holds about one subject: its expectations in raising order and the
/// facts on it. One unit of compare-and-set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubjectState {
    /// The subject.
    pub subject: Subject,
    /// Store version this state was loaded at (0 = not yet stored).
    pub version: u64,
    /// Expectations about this subject, in raising order.
    pub records: Vec<ExpectationRecord>,
    /// Facts on this subject, in receipt order.
    pub facts: Vec<FactEntry>,
    /// Receipt of the most recent fact that satisfied an expectation on this subject.
    pub last_satisfying_receipt: Option<Instant>,
}

impl SubjectState {
    /// An empty, never-stored subject.
    pub fn new(subject: Subject) -> Self {
        SubjectState {
            subject,
            version: 0,
            records: Vec::new(),
            facts: Vec::new(),
            last_satisfying_receipt: None,
        }
    }

    /// The record for `key`, if it is about this subject.
    pub fn record(&self, key: &ExpectationRef) -> Option<&ExpectationRecord> {
        self.records
            .iter()
            .find(|r| r.agent == key.agent && r.id() == &key.id)
    }

    /// Index of the record for `key`.
    pub fn position(&self, key: &ExpectationRef) -> Option<usize> {
        self.records
            .iter()
            .position(|r| r.agent == key.agent && r.id() == &key.id)
    }

    /// Follows `supersededBy` from `key` to the newest successor on this subject
    /// (semantics.md: "References follow supersession").
    pub fn resolve(&self, key: &ExpectationRef) -> Option<usize> {
        let mut idx = self.position(key)?;
        // A chain is at most lineage-bound long; the step limit guards against corrupt data.
        for _ in 0..=self.records.len() {
            match &self.records[idx].superseded_by {
                Some(next) => {
                    let next_key = ExpectationRef {
                        agent: key.agent.clone(),
                        id: next.clone(),
                    };
                    match self.position(&next_key) {
                        Some(n) => idx = n,
                        None => return Some(idx),
                    }
                }
                None => return Some(idx),
            }
        }
        Some(idx)
    }
}

/// A task's state as the watcher sees it, reduced to what the rules need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Lifecycle {
    /// `TASK_STATE_SUBMITTED` or `TASK_STATE_WORKING`.
    Active,
    /// `TASK_STATE_INPUT_REQUIRED` or `TASK_STATE_AUTH_REQUIRED`.
    Interrupted,
    /// `TASK_STATE_COMPLETED`: terminal, but not withdrawing (§8.1).
    Completed,
    /// `TASK_STATE_CANCELED`, `TASK_STATE_FAILED` or `TASK_STATE_REJECTED`: withdraws.
    Withdrawing,
    /// `TASK_STATE_UNSPECIFIED` or a value this watcher does not know.
    Unknown,
}

impl Lifecycle {
    /// Classifies an A2A 1.0 `TaskState` string.
    pub fn of(state: &str) -> Lifecycle {
        match state {
            "TASK_STATE_SUBMITTED" | "TASK_STATE_WORKING" => Lifecycle::Active,
            "TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED" => Lifecycle::Interrupted,
            "TASK_STATE_COMPLETED" => Lifecycle::Completed,
            "TASK_STATE_CANCELED" | "TASK_STATE_FAILED" | "TASK_STATE_REJECTED" => {
                Lifecycle::Withdrawing
            }
            _ => Lifecycle::Unknown,
        }
    }

    /// A state after which a question counts as answered (§11): active or completed.
    pub fn answers_question(self) -> bool {
        matches!(self, Lifecycle::Active | Lifecycle::Completed)
    }
}

/// One status of a task as seen in a push.
///
/// Two statuses of one task are ordered by their own `timestamp`s when both carry one (equal
/// timestamps: the later receipt), else by receipt (`seq`). The watcher's clock bounds an agent's
/// timestamp from above only: a `status.timestamp` later than its receipt counts as its receipt
/// (semantics.md "Time", revision 4); otherwise the two are never compared (semantics.md
/// "Questions that expire").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StatusSeen {
    /// The `TaskState` string.
    pub state: String,
    /// The effective time of the status: its `timestamp` (below), or the receipt time when it
    /// had none. The `observedAt` of a question's answer.
    pub at: Instant,
    /// Receipt on the watcher's clock.
    pub received_at: Instant,
    /// The agent's own `status.timestamp` (UTC), when it carried a valid, non-zero one, bounded
    /// by `receivedAt`: a timestamp later than receipt counts as the receipt time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<Instant>,
    /// The watcher's input sequence number of the push that carried it: receipt order.
    #[serde(default)]
    pub seq: u64,
    /// `status.timestamp` exactly as given (offset and digits untouched) whenever the effective
    /// time differs from it: a zero value such as `0001-01-01T00:00:00Z`, not an instant, a leap
    /// second, or later than receipt (semantics.md "Time").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub given_timestamp: Option<String>,
}

/// The effective time of a status received at `received_at` (semantics.md "Time", revision 4).
///
/// `given` is `status.timestamp` exactly as the agent wrote it, if it carried one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusTime {
    /// The timestamp that orders the status against the task's others: the agent's valid,
    /// non-zero timestamp, or the receipt time if it is later than that; `None` when missing,
    /// a zero value or not an instant (then receipt order decides).
    pub timestamp: Option<Instant>,
    /// The effective time: `timestamp`, or the receipt time when it is `None`.
    pub at: Instant,
    /// `given` when the effective time differs from it (zero value, not an instant, leap second,
    /// later than receipt); `None` when it is the effective time exactly or was absent.
    pub given: Option<String>,
}

impl StatusTime {
    /// Reads `given` (a `status.timestamp` as written) for a status received at `received_at`:
    /// a zero value (`0001-01-01T00:00:00Z`, `1970-01-01T00:00:00Z`) or a text that is not an
    /// RFC 3339 instant is absent; a leap second is the last nanosecond of its minute; a time
    /// later than `received_at` is `received_at`.
    ///
    /// # Example
    /// `"2026-09-10T19:00:00+05:30"` received at `2026-09-10T12:00:00Z` has `timestamp` and `at`
    /// `2026-09-10T12:00:00Z` and keeps `given` as written.
    pub fn of(given: Option<&str>, received_at: Instant) -> StatusTime {
        let reading = given.and_then(|g| Instant::parse_reading(g).ok());
        let timestamp = reading
            .filter(|r| !r.instant.is_zero_value())
            .map(|r| r.instant.min(received_at));
        let at = timestamp.unwrap_or(received_at);
        let exact = reading.is_some_and(|r| !r.leap_second && r.instant == at);
        StatusTime {
            timestamp,
            at,
            given: given.filter(|_| !exact).map(str::to_owned),
        }
    }
}

impl StatusSeen {
    /// Whether this status of the origin task comes after the status that asked `question`
    /// (an expectation raised by a question, §11).
    pub fn answers_after(&self, question: &ExpectationRecord) -> bool {
        question.question_at.is_some()
            && self.is_after(question.question_timestamp, question.order.input)
    }

    /// The agent's timestamp bounded by receipt (records kept before revision 4 may hold a
    /// timestamp later than `received_at`; it counts as `received_at` all the same).
    fn effective_timestamp(&self) -> Option<Instant> {
        self.timestamp.map(|t| t.min(self.received_at))
    }

    /// Whether this status comes after an event of the same task stamped `timestamp` (the agent's
    /// own, already bounded by its receipt, if any) and received as input `seq` (semantics.md
    /// "Questions that expire").
    pub fn is_after(&self, timestamp: Option<Instant>, seq: u64) -> bool {
        match (self.effective_timestamp(), timestamp) {
            (Some(mine), Some(theirs)) => mine > theirs || (mine == theirs && self.seq > seq),
            _ => self.seq > seq,
        }
    }

    /// The effective time of the status (the `observedAt` of a question's answer): its
    /// timestamp bounded by receipt, or the receipt time when it had none.
    pub fn effective_at(&self) -> Instant {
        self.at.min(self.received_at)
    }

    /// `status.timestamp` exactly as given, for `claimedObservedAt` of a question's answer: kept
    /// when it is an instant that differs from the effective time (a zero value, a leap second,
    /// later than receipt); `None` when it matched or was not an instant at all.
    pub fn claimed_timestamp(&self) -> Option<&str> {
        self.given_timestamp
            .as_deref()
            .filter(|g| Instant::parse_reading(g).is_ok())
    }
}

/// A task the watcher has seen: its statuses and where its expectations are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRecord {
    /// The task.
    pub task: TaskRef,
    /// Store version (0 = not yet stored).
    pub version: u64,
    /// Statuses seen, in receipt order.
    pub statuses: Vec<StatusSeen>,
    /// The first withdrawing terminal state seen, and when.
    pub withdrawn_by: Option<StatusSeen>,
    /// Subjects of the expectations this task raised.
    pub subjects: BTreeSet<Subject>,
    /// The task's lineage: the tasks of the same agent its work descends from, nearest first
    /// (the task a lapse task was sent about, or the task the first `referenceTaskIds` of the
    /// task's request names; then that task's own lineage), at most `lineage_bound + 1` of them
    /// (docs/interpretation.md "Withdrawal follows the lineage"). Empty when none is known.
    /// Set once, by the first link recorded ([`crate::engine::lineage`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lineage: Vec<TaskId>,
    /// The tasks whose [`TaskRecord::lineage`] holds this one, as far as this record keeps them:
    /// the first [`crate::engine::lineage::DESCENDANTS_KEPT`] linked below it, whose
    /// expectations this task's cancellation, failure or rejection withdraws at once
    /// (expectations-v1 §8.1). A task linked below it later is not listed; it is
    /// [`TaskRecord::unlisted`], and this task's end reaches what it raised through the checks
    /// upward instead (docs/interpretation.md "Withdrawal follows the lineage").
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub descendants: BTreeSet<TaskId>,
    /// `true` when a task of [`TaskRecord::lineage`] does not list this one among its
    /// [`TaskRecord::descendants`] (it already listed
    /// [`crate::engine::lineage::DESCENDANTS_KEPT`] when this one was linked): that task's end
    /// is not written here, so before this task raises, the engine reads its lineage's records
    /// itself ([`crate::engine::lineage`]). Absent from the stored form when `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unlisted: bool,
    /// The first task of the lineage seen canceled, failed or rejected, when one was: everything
    /// this task raises is withdrawn, as if it had ended itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage_ended: Option<LineageEnd>,
    /// When a lineage link last changed this record (UTC): its last activity for retention when
    /// it reported no status of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lineage_at: Option<Instant>,
}

impl TaskRecord {
    /// A task not seen before.
    pub fn new(task: TaskRef) -> Self {
        TaskRecord {
            task,
            version: 0,
            statuses: Vec::new(),
            withdrawn_by: None,
            subjects: BTreeSet::new(),
            lineage: Vec::new(),
            descendants: BTreeSet::new(),
            unlisted: false,
            lineage_ended: None,
            lineage_at: None,
        }
    }

    /// The withdrawing end that closes what this task raises: its own canceled, failed or
    /// rejected state (`None` for the task), else the first such state seen in its lineage
    /// (`Some(ancestor)`), with the state's name.
    pub fn ended(&self) -> Option<(Option<&TaskId>, &str)> {
        match (&self.withdrawn_by, &self.lineage_ended) {
            (Some(own), _) => Some((None, own.state.as_str())),
            (None, Some(end)) => Some((Some(&end.task_id), end.state.as_str())),
            (None, None) => None,
        }
    }
}

/// A task of a lineage seen ending withdrawing (canceled, failed or rejected), as its
/// descendants keep it ([`TaskRecord::lineage_ended`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LineageEnd {
    /// The ancestor that ended.
    pub task_id: TaskId,
    /// Its `TaskState` name.
    pub state: String,
    /// When the watcher learnt it (UTC).
    pub at: Instant,
}

/// Something the engine needs that the slice does not hold.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Need {
    /// A subject's state.
    Subject(Subject),
    /// Which subjects have expectations with this `satisfiedBy.factKey`.
    FactKey(FactKey),
    /// Which subject an expectation is about.
    Expectation(ExpectationRef),
    /// A task record.
    Task(TaskRef),
    /// Several task records at once (a task's lineage or descendants).
    Tasks(BTreeSet<TaskRef>),
    /// Several subjects at once (what the tasks of a lineage raised on).
    Subjects(BTreeSet<Subject>),
    /// How many expectations of the agent can still lapse (bounds, §13.2).
    AgentLive(AgentId),
}

/// What to load for a step. Grows as the engine reports [`Need`]s.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Scope {
    /// Subjects to load.
    pub subjects: BTreeSet<Subject>,
    /// Fact keys to look up in the fact-key index.
    pub fact_keys: BTreeSet<FactKey>,
    /// Expectation ids to look up in the id index.
    pub expectations: BTreeSet<ExpectationRef>,
    /// Tasks to load.
    pub tasks: BTreeSet<TaskRef>,
    /// Agents whose live count to compute.
    pub agents: BTreeSet<AgentId>,
    /// For an agent of [`Scope::agents`] named here, the store may answer, instead of its exact
    /// live count, any count at least the exact one and at most this (an upper bound it holds
    /// without counting, such as every row ever made live less every row closed). The engine
    /// names the agent's §13.2 bound less what the input may raise
    /// ([`crate::engine::scope::initial_scope`]): any such count decides the bound exactly as
    /// the exact one would. An agent not named here gets its exact count.
    pub live_enough: BTreeMap<AgentId, u64>,
}

impl Scope {
    /// Adds a need; `false` if it was already in scope (the shell then has a bug, not a loop).
    pub fn add(&mut self, need: Need) -> bool {
        match need {
            Need::Subject(s) => self.subjects.insert(s),
            Need::FactKey(k) => self.fact_keys.insert(k),
            Need::Expectation(e) => self.expectations.insert(e),
            Need::Task(t) => self.tasks.insert(t),
            Need::Tasks(ts) => ts
                .into_iter()
                .fold(false, |new, t| self.tasks.insert(t) | new),
            Need::Subjects(ss) => ss
                .into_iter()
                .fold(false, |new, s| self.subjects.insert(s) | new),
            Need::AgentLive(a) => self.agents.insert(a),
        }
    }
}

/// The loaded part of one tenant's record. Absent map entries mean "not loaded".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The tenant everything here belongs to.
    pub tenant: Tenant,
    /// Loaded subjects (a subject with nothing recorded is loaded as empty, version 0).
    pub subjects: BTreeMap<Subject, SubjectState>,
    /// Loaded fact-key index entries: key → subjects with an expectation satisfied by it.
    pub fact_index: BTreeMap<FactKey, BTreeSet<Subject>>,
    /// Loaded id index entries: expectation → its subject, `None` when unknown.
    pub id_index: BTreeMap<ExpectationRef, Option<Subject>>,
    /// Loaded tasks; `None` when the task has not been seen.
    pub tasks: BTreeMap<TaskRef, Option<TaskRecord>>,
    /// Live expectations per agent at load time (bounds, §13.2): exact, or for an agent of
    /// [`Scope::live_enough`], a count between the exact one and that ceiling.
    pub agent_live: BTreeMap<AgentId, u64>,
    /// Subjects changed by the step.
    pub dirty_subjects: BTreeSet<Subject>,
    /// Tasks changed by the step.
    pub dirty_tasks: BTreeSet<TaskRef>,
}

impl Slice {
    /// An empty slice of `tenant`.
    pub fn new(tenant: Tenant) -> Self {
        Slice {
            tenant,
            subjects: BTreeMap::new(),
            fact_index: BTreeMap::new(),
            id_index: BTreeMap::new(),
            tasks: BTreeMap::new(),
            agent_live: BTreeMap::new(),
            dirty_subjects: BTreeSet::new(),
            dirty_tasks: BTreeSet::new(),
        }
    }

    /// The subject's state, or [`Need::Subject`].
    pub fn subject(&self, s: &Subject) -> Result<&SubjectState, Need> {
        self.subjects.get(s).ok_or_else(|| Need::Subject(s.clone()))
    }

    /// The subject's state for writing; marks it dirty.
    pub fn subject_mut(&mut self, s: &Subject) -> Result<&mut SubjectState, Need> {
        match self.subjects.get_mut(s) {
            Some(state) => {
                self.dirty_subjects.insert(s.clone());
                Ok(state)
            }
            None => Err(Need::Subject(s.clone())),
        }
    }

    /// Subjects with an expectation satisfied by `key`, or [`Need::FactKey`].
    pub fn subjects_for_key(&self, key: &FactKey) -> Result<BTreeSet<Subject>, Need> {
        self.fact_index
            .get(key)
            .cloned()
            .ok_or_else(|| Need::FactKey(key.clone()))
    }

    /// The subject an expectation is about (`None`: never raised), or [`Need::Expectation`].
    pub fn subject_of(&self, e: &ExpectationRef) -> Result<Option<Subject>, Need> {
        self.id_index
            .get(e)
            .cloned()
            .ok_or_else(|| Need::Expectation(e.clone()))
    }

    /// The task record (`None`: never seen), or [`Need::Task`].
    pub fn task(&self, t: &TaskRef) -> Result<Option<&TaskRecord>, Need> {
        self.tasks
            .get(t)
            .map(Option::as_ref)
            .ok_or_else(|| Need::Task(t.clone()))
    }

    /// The subjects of the task record (`None`: never seen), each checked loaded; else the first
    /// [`Need`]: [`Need::Task`], then those of its subjects not loaded ([`Self::subjects_loaded`]).
    pub(crate) fn task_subjects(&self, t: &TaskRef) -> Result<Option<Vec<Subject>>, Need> {
        let Some(task) = self.task(t)? else {
            return Ok(None);
        };
        let subjects: Vec<Subject> = task.subjects.iter().cloned().collect();
        self.subjects_loaded(subjects.iter())?;
        Ok(Some(subjects))
    }

    /// `Ok` when every subject of `subjects` is loaded; else one [`Need`] naming all that are
    /// not ([`Need::Subject`] for one, [`Need::Subjects`] for more), so the shell loads them in
    /// one round.
    pub(crate) fn subjects_loaded<'a>(
        &self,
        subjects: impl IntoIterator<Item = &'a Subject>,
    ) -> Result<(), Need> {
        let missing: BTreeSet<Subject> = subjects
            .into_iter()
            .filter(|s| !self.subjects.contains_key(*s))
            .cloned()
            .collect();
        match (missing.len(), missing.first()) {
            (0, _) => Ok(()),
            (1, Some(one)) => Err(Need::Subject(one.clone())),
            _ => Err(Need::Subjects(missing)),
        }
    }

    /// `Ok` when every task of `tasks` is loaded (seen or not); else one [`Need`] naming all
    /// that are not ([`Need::Task`] for one, [`Need::Tasks`] for more).
    pub(crate) fn tasks_loaded<'a>(
        &self,
        tasks: impl IntoIterator<Item = &'a TaskRef>,
    ) -> Result<(), Need> {
        let missing: BTreeSet<TaskRef> = tasks
            .into_iter()
            .filter(|t| !self.tasks.contains_key(*t))
            .cloned()
            .collect();
        match (missing.len(), missing.first()) {
            (0, _) => Ok(()),
            (1, Some(one)) => Err(Need::Task(one.clone())),
            _ => Err(Need::Tasks(missing)),
        }
    }

    /// The task record for writing, created if never seen; marks it dirty.
    pub fn task_mut(&mut self, t: &TaskRef) -> Result<&mut TaskRecord, Need> {
        match self.tasks.get_mut(t) {
            Some(slot) => {
                self.dirty_tasks.insert(t.clone());
                Ok(slot.get_or_insert_with(|| TaskRecord::new(t.clone())))
            }
            None => Err(Need::Task(t.clone())),
        }
    }

    /// Live expectations of the agent, or [`Need::AgentLive`].
    pub fn agent_live(&self, a: &AgentId) -> Result<u64, Need> {
        self.agent_live
            .get(a)
            .copied()
            .ok_or_else(|| Need::AgentLive(a.clone()))
    }

    /// Records a newly raised expectation in the loaded indexes so later items of the same
    /// input see it.
    pub(crate) fn index_raised(&mut self, rec: &ExpectationRecord) {
        let subject = rec.expectation.subject.clone();
        self.id_index.insert(rec.key(), Some(subject.clone()));
        if let Some(set) = self
            .fact_index
            .get_mut(&rec.expectation.satisfied_by.fact_key)
        {
            set.insert(subject);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Instant {
        Instant::parse(text).expect("an instant")
    }

    /// semantics.md "Time", revision 4: (given, timestamp, effective time, kept as given).
    #[test]
    fn a_status_time_is_bounded_by_its_receipt_and_kept_as_given() {
        let received = at("2026-09-10T12:00:00Z");
        /// (given, timestamp, effective time, kept as given).
        type Case = (
            Option<&'static str>,
            Option<&'static str>,
            &'static str,
            Option<&'static str>,
        );
        let cases: [Case; 11] = [
            (None, None, "2026-09-10T12:00:00Z", None),
            (
                Some("yesterday"),
                None,
                "2026-09-10T12:00:00Z",
                Some("yesterday"),
            ),
            (
                Some("1970-01-01T00:00:00Z"),
                None,
                "2026-09-10T12:00:00Z",
                Some("1970-01-01T00:00:00Z"),
            ),
            (
                Some("0001-01-01T05:30:00+05:30"),
                None,
                "2026-09-10T12:00:00Z",
                Some("0001-01-01T05:30:00+05:30"),
            ),
            (
                Some("2026-09-11T00:00:00+05:30"),
                Some("2026-09-10T12:00:00Z"),
                "2026-09-10T12:00:00Z",
                Some("2026-09-11T00:00:00+05:30"),
            ),
            (
                Some("2026-09-10T12:00:00.000000001Z"),
                Some("2026-09-10T12:00:00Z"),
                "2026-09-10T12:00:00Z",
                Some("2026-09-10T12:00:00.000000001Z"),
            ),
            (
                Some("2026-09-10T12:00:00Z"),
                Some("2026-09-10T12:00:00Z"),
                "2026-09-10T12:00:00Z",
                None,
            ),
            (
                Some("2026-09-10T11:00:00Z"),
                Some("2026-09-10T11:00:00Z"),
                "2026-09-10T11:00:00Z",
                None,
            ),
            (
                Some("2026-09-10T16:30:00.000+05:30"),
                Some("2026-09-10T11:00:00Z"),
                "2026-09-10T11:00:00Z",
                None,
            ),
            (
                Some("2016-12-31T23:59:60Z"),
                Some("2016-12-31T23:59:59.999999999Z"),
                "2016-12-31T23:59:59.999999999Z",
                Some("2016-12-31T23:59:60Z"),
            ),
            (
                Some("9999-12-31T23:59:60Z"),
                Some("2026-09-10T12:00:00Z"),
                "2026-09-10T12:00:00Z",
                Some("9999-12-31T23:59:60Z"),
            ),
        ];
        for (given, timestamp, effective, kept) in cases {
            assert_eq!(
                StatusTime::of(given, received),
                StatusTime {
                    timestamp: timestamp.map(at),
                    at: at(effective),
                    given: kept.map(str::to_owned),
                },
                "{given:?}"
            );
        }
    }

    /// A status stored before revision 4 with a timestamp later than its receipt is bounded when
    /// compared and when it answers; a text that is not an instant is never a claim.
    #[test]
    fn a_status_stored_ahead_is_bounded_when_read() {
        let stored = StatusSeen {
            state: "TASK_STATE_WORKING".into(),
            at: at("2026-09-10T23:00:00Z"),
            received_at: at("2026-09-10T11:00:00Z"),
            timestamp: Some(at("2026-09-10T23:00:00Z")),
            seq: 1,
            given_timestamp: None,
        };
        assert!(!stored.is_after(Some(at("2026-09-10T12:00:00Z")), 2));
        assert!(stored.is_after(Some(at("2026-09-10T10:00:00Z")), 0));
        assert_eq!(stored.effective_at(), at("2026-09-10T11:00:00Z"));
        let invalid = StatusSeen {
            given_timestamp: Some("yesterday".into()),
            ..stored.clone()
        };
        assert_eq!(invalid.claimed_timestamp(), None);
        let zero = StatusSeen {
            given_timestamp: Some("1970-01-01T00:00:00Z".into()),
            ..stored
        };
        assert_eq!(zero.claimed_timestamp(), Some("1970-01-01T00:00:00Z"));
    }
}
