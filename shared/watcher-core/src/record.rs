//! The watcher's record of one expectation (expectations-v1 Appendix A `ExpectationRecord`;
//! replay.md "record"): the expectation as raised plus what the watcher has determined.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::expectation::Expectation;
use crate::ids::{
    AgentId, ContextId, ExpectationId, ExpectationRef, FactKey, Source, TaskId, Tenant,
};
use crate::time::Instant;

/// `open`, `satisfied` or `withdrawn` (semantics.md, "States"). A lapse does not close an
/// expectation; satisfaction and withdrawal are final.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Status {
    /// Neither satisfied nor withdrawn (it may have lapsed).
    Open,
    /// A matching fact arrived.
    Satisfied,
    /// Closed without satisfaction or lapse (§8.1).
    Withdrawn,
}

/// The three ways an expectation lapses (expectations-v1 §9.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum LapseKind {
    /// `dueAt + grace` passed with no matching fact.
    Overdue,
    /// A later step in `after` order was satisfied while this one was open.
    Skipped,
    /// The horizon passed with silence on the subject.
    Stalled,
}

impl LapseKind {
    /// The wire name: `overdue`, `skipped` or `stalled`.
    pub fn as_str(self) -> &'static str {
        match self {
            LapseKind::Overdue => "overdue",
            LapseKind::Skipped => "skipped",
            LapseKind::Stalled => "stalled",
        }
    }
}

/// Who raised the expectation: the origin task and its context.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RaisedBy {
    /// The task that raised it.
    pub task_id: TaskId,
    /// That task's contextId, when the agent gave one.
    pub context_id: Option<ContextId>,
    /// That task's lineage as the watcher knows it (the tasks of the same agent its work
    /// descends from, nearest first, at most `lineage_bound + 1`; [`crate::engine::lineage`]):
    /// a lapse task carries it, so the check before its first send asks those tasks too with no
    /// read of the record. Empty when none is known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lineage: Vec<TaskId>,
    /// The W3C trace context of the request that raised it (a push, or a `POST /v1/facts`):
    /// its valid `traceparent`, else the X-Ray trace AWS gave it, else a new trace
    /// ([`crate::trace`]). A lapse task carries it, so the agent's `SendMessage` request names
    /// the cause's trace. Absent from records written before it was kept, and from records
    /// raised outside a request (replay, tests); an invalid stored value reads as absent.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::trace::lenient"
    )]
    pub trace: Option<crate::trace::TraceParent>,
}

/// How the expectation was satisfied (expectations-v1 §9.2; replay.md).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Satisfaction {
    /// The fact's key.
    pub fact_key: FactKey,
    /// The authenticated reporter (§13.5).
    pub source: Source,
    /// Receipt instant on the watcher's clock.
    pub satisfied_at: Instant,
    /// The effective `observedAt`: the claimed one, or the receipt time if it claimed later.
    pub observed_at: Instant,
    /// `observedAt` exactly as the fact gave it, whenever that differs from the effective one:
    /// a claim later than receipt, a zero-value timestamp read as absent, a leap second
    /// (semantics.md "Time"; replay.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claimed_observed_at: Option<String>,
    /// `observedAt` after the current `dueAt`.
    pub late: bool,
}

/// `{ "withdrawnAt", "reason" }` (expectations-v1 §8.1).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Withdrawal {
    /// When the watcher withdrew it.
    pub withdrawn_at: Instant,
    /// Why, in words that name the cause.
    pub reason: String,
}

/// One lapse of an expectation: at most one per kind (semantics.md, "States").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LapseEntry {
    /// Which lapse.
    pub lapse: LapseKind,
    /// The watcher's clock when it determined the lapse.
    pub lapsed_at: Instant,
    /// `lapse:{expectationId}:{lapse}:{dueAt}` (semantics.md, "The lapse task").
    pub message_id: String,
    /// The current due time at the moment of lapse.
    pub due_at: Instant,
}

/// Where an anchored expectation stands with its anchor (expectations-v1 §9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AnchorState {
    /// No anchor.
    Unanchored,
    /// The anchor is open, lapsed or unknown: no overdue lapse on the projected time.
    Waiting,
    /// The anchor was satisfied: `dueAt` = its `observedAt` + offset.
    Reanchored,
    /// The anchor was withdrawn without a successor: back to the projected `dueAt`.
    FellBack,
}

/// Total order of raising: the input's sequence number, then the position within the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RaiseOrder {
    /// Sequence number the shell gave the input (monotonic per deployment).
    pub input: u64,
    /// Position of the expectation within that input.
    pub index: u32,
}

/// The watcher's record of one expectation. Storage form: serde of this struct. Contract form:
/// [`ExpectationRecord::to_contract_json`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectationRecord {
    /// The expectation as raised (its `dueAt` is the projected due time).
    pub expectation: Expectation,
    /// Raising agent.
    pub agent: AgentId,
    /// Tenant of the agent.
    pub tenant: Tenant,
    /// open / satisfied / withdrawn.
    pub status: Status,
    /// The current due time; changes once, on re-anchoring.
    pub due_at: Instant,
    /// Superseded ancestors (§10.3).
    pub lineage: u32,
    /// When the watcher recorded it.
    pub raised_at: Instant,
    /// The origin task.
    pub raised_by: RaisedBy,
    /// Set once satisfied.
    pub satisfaction: Option<Satisfaction>,
    /// Lapses so far, in the order they happened.
    pub lapses: Vec<LapseEntry>,
    /// Set once withdrawn.
    pub withdrawal: Option<Withdrawal>,
    /// The expectation that superseded this one.
    pub superseded_by: Option<ExpectationId>,
    /// Raising order (internal).
    pub order: RaiseOrder,
    /// Anchor progress (internal).
    pub anchor_state: AnchorState,
    /// The horizon was evaluated once (internal; §9.1 stalled).
    pub horizon_checked: bool,
    /// For a question (§11): the timestamp of the status that asked it (receipt time when it
    /// had none).
    pub question_at: Option<Instant>,
    /// For a question: the asking status's own `status.timestamp`, `None` when it carried none.
    /// With `order.input` (receipt order) it decides which later statuses answer the question
    /// (semantics.md "Questions that expire").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub question_timestamp: Option<Instant>,
    /// For a question: the task's lifecycle already reported its answer fact (once per question).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub question_answered: bool,
}

impl ExpectationRecord {
    /// The record's identity within its tenant.
    pub fn key(&self) -> ExpectationRef {
        ExpectationRef {
            agent: self.agent.clone(),
            id: self.expectation.expectation_id.clone(),
        }
    }

    /// The `expectationId`.
    pub fn id(&self) -> &ExpectationId {
        &self.expectation.expectation_id
    }

    /// `true` while neither satisfied nor withdrawn.
    pub fn is_open(&self) -> bool {
        self.status == Status::Open
    }

    /// `true` once it lapsed with `kind`.
    pub fn has_lapsed(&self, kind: LapseKind) -> bool {
        self.lapses.iter().any(|l| l.lapse == kind)
    }

    /// The projected due time (`dueAt` as raised; never changes).
    pub fn projected_due_at(&self) -> Instant {
        self.expectation.due_at
    }

    /// The overdue deadline on the current due time: `dueAt + grace`.
    pub fn deadline(&self) -> Instant {
        self.due_at.plus(self.expectation.grace_or_zero())
    }

    /// The replay.md / serve.md shape: the fields as raised under their names, then what the
    /// watcher adds (`agent`, `tenant`, `status`, `projectedDueAt`, current `dueAt`, `lineage`,
    /// `raisedAt`, `raisedBy`, `satisfaction`, `lapses`, `withdrawal`, `supersededBy`).
    pub fn to_contract_json(&self) -> Value {
        serde_json::to_value(self.to_contract()).unwrap_or(Value::Null)
    }

    /// The contract form as a typed value ([`ContractRecord`], published as
    /// `docs/schemas/ExpectationRecord.json`).
    pub fn to_contract(&self) -> ContractRecord {
        let e = &self.expectation;
        ContractRecord {
            expectation_id: e.expectation_id.clone(),
            agent: self.agent.clone(),
            tenant: self.tenant.clone(),
            kind: e.kind.clone(),
            subject: e.subject.clone(),
            expects: e.expects.clone(),
            satisfied_by: e.satisfied_by.clone(),
            status: self.status,
            projected_due_at: e.due_at,
            due_at: self.due_at,
            grace: e.grace.clone(),
            anchor: e.anchor.clone(),
            after: (!e.after.is_empty()).then(|| e.after.clone()),
            horizon: e.horizon,
            basis: e.basis.clone(),
            supersedes: e.supersedes.clone(),
            lineage: self.lineage,
            raised_at: self.raised_at,
            raised_by: ContractRaisedBy {
                task_id: self.raised_by.task_id.clone(),
                context_id: self.raised_by.context_id.clone(),
            },
            satisfaction: self.satisfaction.clone(),
            lapses: self.lapses.clone(),
            withdrawal: self.withdrawal.clone(),
            superseded_by: self.superseded_by.clone(),
        }
    }
}

/// `raisedBy` in the contract form: `{ "taskId", "contextId"? }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ContractRaisedBy {
    /// The task that raised the expectation.
    pub task_id: TaskId,
    /// That task's contextId; absent when the agent gave none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context_id: Option<ContextId>,
}

/// The ExpectationRecord as the watcher shows it (expectations-v1 Appendix A; replay.md
/// "record"; serve.md `GET /v1/subjects/...`): the expectation's fields as raised, then what the
/// watcher determined. Optional fields are present as `null` when unset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ContractRecord {
    /// Agent-generated id, unique among everything the agent raised.
    pub expectation_id: ExpectationId,
    /// The raising agent (its id in the watcher's configuration).
    pub agent: AgentId,
    /// The agent's tenant.
    pub tenant: Tenant,
    /// A kind declared on the agent's card (§6.2).
    pub kind: String,
    /// What the expectation is about.
    pub subject: crate::ids::Subject,
    /// What is expected, in a person's words.
    pub expects: String,
    /// The fact key that satisfies it.
    pub satisfied_by: crate::expectation::Matcher,
    /// `open`, `satisfied` or `withdrawn`; a lapse does not close an expectation.
    pub status: Status,
    /// `dueAt` as raised (UTC).
    pub projected_due_at: Instant,
    /// The current due time (UTC); differs from `projectedDueAt` once re-anchored (§9.3).
    pub due_at: Instant,
    /// Wait after `dueAt` before an overdue lapse.
    pub grace: Option<crate::time::IsoDuration>,
    /// Re-anchoring (§9.3).
    pub anchor: Option<crate::expectation::Anchor>,
    /// Expectations on the subject expected to be satisfied before this one (§9.1).
    pub after: Option<Vec<ExpectationId>>,
    /// After this instant, silence on the subject is a `stalled` lapse.
    pub horizon: Option<Instant>,
    /// `observed`, `contract`, `declared`, or another value kept as given (§13.3, §15).
    pub basis: String,
    /// The expectation this one replaced (§10.3).
    pub supersedes: Option<ExpectationId>,
    /// How many superseded ancestors it has (§10.3).
    pub lineage: u32,
    /// When the watcher recorded it (UTC).
    pub raised_at: Instant,
    /// The origin task.
    pub raised_by: ContractRaisedBy,
    /// How it was satisfied; `null` until then.
    pub satisfaction: Option<Satisfaction>,
    /// Its lapses in the order they happened, at most one per kind.
    pub lapses: Vec<LapseEntry>,
    /// `{ withdrawnAt, reason }` once withdrawn (§8.1).
    pub withdrawal: Option<Withdrawal>,
    /// The expectation that superseded this one.
    pub superseded_by: Option<ExpectationId>,
}
