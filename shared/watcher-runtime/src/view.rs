//! What operators read, one type each, shared by the HTTP API, the web page and the CLI: the
//! subject view (contracts/serve.md, `GET /v1/subjects/{type}/{id}`), lapse tasks, rejections
//! and agents.

use serde_json::Value;
use watcher_core::slice::SubjectState;

/// The subject view (contracts/serve.md, `GET /v1/subjects/{type}/{id}`): the subject, every
/// ExpectationRecord on it in raising order (contracts/replay.md shape) and its facts in
/// receipt order.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct SubjectView {
    /// The subject.
    pub subject: watcher_core::ids::Subject,
    /// Every ExpectationRecord on it, in raising order, in the contract's shape
    /// (`ExpectationRecord::to_contract_json`).
    pub expectations: Vec<Value>,
    /// Its facts, in receipt order.
    pub facts: Vec<FactView>,
}

/// A fact on a subject as operators read it: `{ "factKey", "source", "observedAt",
/// "receivedAt", "satisfied": [ids], "mapping"?, "claimedObservedAt"? }` (UTC instants).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FactView {
    /// The fact's key.
    pub fact_key: watcher_core::ids::FactKey,
    /// Who reported it.
    pub source: watcher_core::ids::Source,
    /// When it was observed, as the watcher takes it (semantics.md "Time").
    pub observed_at: watcher_core::time::Instant,
    /// When the watcher received it.
    pub received_at: watcher_core::time::Instant,
    /// The expectations it satisfied.
    pub satisfied: Vec<String>,
    /// The webhook mapping that yielded it, if one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mapping: Option<String>,
    /// `observedAt` as given, when it differs from the one taken (semantics.md "Time").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claimed_observed_at: Option<ClaimedObservedAt>,
}

/// `claimedObservedAt`: the text as given (kept when it was not a valid instant), or the
/// instant claimed.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum ClaimedObservedAt {
    /// The value as given.
    Given(String),
    /// The instant claimed, where the watcher took another.
    Claimed(watcher_core::time::Instant),
}

/// The subject view of `state` ([`SubjectView`]). One function, so the HTTP route, the web
/// page, the timeline picture and `a2a-watcher subject --db` answer alike.
pub fn subject_view(state: &SubjectState) -> SubjectView {
    let facts = state
        .facts
        .iter()
        .map(|f| FactView {
            fact_key: f.fact_key.clone(),
            source: f.source.clone(),
            observed_at: f.observed_at,
            received_at: f.received_at,
            satisfied: f.satisfied.iter().map(|s| s.id.to_string()).collect(),
            mapping: f.mapping.clone(),
            // semantics.md "Time": the value as given, beside the effective one.
            claimed_observed_at: match &f.observed_at_given {
                Some(given) => Some(ClaimedObservedAt::Given(given.clone())),
                None => (f.claimed_observed_at != f.observed_at)
                    .then_some(ClaimedObservedAt::Claimed(f.claimed_observed_at)),
            },
        })
        .collect();
    SubjectView {
        subject: state.subject.clone(),
        expectations: state
            .records
            .iter()
            .map(watcher_core::record::ExpectationRecord::to_contract_json)
            .collect(),
        facts,
    }
}

/// One lapse task as operators read it (`GET /v1/lapses`, `a2a-watcher lapses`, with or without
/// `--url`): `{ "messageId", "expectationId", "lapse", "lapsedAt", "agent", "delivery",
/// "attempts", "taskId"?, "taskState"?, "answeredWithMessage"?, "needsPerson"?,
/// "retryingSince"?, "lastError"? }` (UTC instants). One type, so the route and the command
/// answer alike.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct LapseView {
    /// The lapse task's deterministic `messageId`.
    pub message_id: String,
    /// The expectation that lapsed.
    pub expectation_id: watcher_core::ids::ExpectationId,
    /// `overdue`, `skipped` or `stalled`.
    pub lapse: watcher_core::record::LapseKind,
    /// When the watcher determined the lapse.
    pub lapsed_at: watcher_core::time::Instant,
    /// The agent the lapse task is for.
    pub agent: watcher_core::ids::AgentId,
    /// `queued`, `sent`, `failed`, `withdrawn` or `unaddressed`: every value
    /// `GET /v1/lapses?delivery=` filters by.
    pub delivery: crate::store::DeliveryState,
    /// Send attempts so far.
    pub attempts: u32,
    /// The agent's task for it, once known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// That task's last known state (a `TaskState` name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub task_state: Option<String>,
    /// The agent answered with a Message rather than a Task.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub answered_with_message: bool,
    /// expectations-v1 §13.1: the lapse task waits on a person at the agent
    /// (`TASK_STATE_INPUT_REQUIRED` or `TASK_STATE_AUTH_REQUIRED`); the watcher never answers.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub needs_person: bool,
    /// Since when its sends fail, while they are retried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrying_since: Option<watcher_core::time::Instant>,
    /// The last send's error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl LapseView {
    /// The view of the outbox entry `o`.
    pub fn of(o: &crate::store::OutboxEntry) -> LapseView {
        LapseView {
            message_id: o.message_id.clone(),
            expectation_id: o.expectation_id.clone(),
            lapse: o.lapse,
            lapsed_at: o.lapsed_at,
            agent: o.agent.clone(),
            delivery: o.delivery,
            attempts: o.attempts,
            task_id: o.task_id.clone(),
            task_state: o.task_state.clone(),
            answered_with_message: o.answered_with_message,
            needs_person: matches!(
                o.task_state.as_deref(),
                Some("TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED")
            ),
            retrying_since: o.retrying_since,
            last_error: o.last_error.clone(),
        }
    }
}

/// A kept rejection as `GET /v1/agents/{agentId}/rejections` and
/// `GET /v1/sources/{sourceId}/rejections` answer it (serve.md): `{ "expectationId", "reason",
/// "at", "taskId", "warning"? }`, `expectationId` and `taskId` `null` when unknown, `"warning":
/// true` on what was ignored rather than refused.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RejectionView {
    /// The refused expectation's id, when one could be read.
    pub expectation_id: Option<String>,
    /// The rule and the field, in words.
    pub reason: String,
    /// When the watcher refused it (UTC).
    pub at: watcher_core::time::Instant,
    /// The task that raised it, when known.
    pub task_id: Option<watcher_core::ids::TaskId>,
    /// Ignored rather than refused.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub warning: bool,
}

impl RejectionView {
    /// The view of the kept rejection `r`.
    pub fn of(r: &watcher_core::engine::Rejection) -> RejectionView {
        RejectionView {
            expectation_id: r.expectation_id.clone(),
            reason: r.reason.clone(),
            at: r.at,
            task_id: r.task_id.clone(),
            warning: r.warning,
        }
    }
}

/// One agent as operators read it (`GET /v1/agents`, the web page, `a2a-watcher agents`):
/// `{ "agentId", "delivery", "retryingSince"?, "lastError"?, … }` and, where the agent directory
/// is at hand (the HTTP API and the web page, not `agents --db`), the [`AgentDirectoryView`]
/// members beside them. One type, so the route and the command answer alike.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentView {
    /// The agent's id.
    pub agent_id: watcher_core::ids::AgentId,
    /// Its lapse-task delivery: `delivery`, `retryingSince`?, `lastError`?.
    #[serde(flatten)]
    pub delivery: crate::operators::AgentDelivery,
    /// What the agent directory knows of it, when it is at hand.
    #[serde(flatten)]
    pub directory: Option<AgentDirectoryView>,
}

/// What the agent directory knows of an agent ([`AgentView`]): whether it submits lapse tasks,
/// whether its lifecycle is trusted, whether its origin tasks are reconciled with `GetTask`,
/// its lifecycle probe, and where its card stands.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentDirectoryView {
    /// `submitsLapses` of its `[[agents]]` entry, when the directory has an entry for it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub submits_lapses: Option<bool>,
    /// Whether a lifecycle probe promoted it (docs/specs/agent-card-vs-lifecycle-conformance.md:
    /// only a probe promotes; the card alone never does).
    pub lifecycle_trusted: bool,
    /// Whether its origin tasks are followed with `GetTask`.
    pub reconciled: bool,
    /// Its lifecycle probe.
    pub lifecycle: LifecycleView,
    /// Where its card stands (serve.md "Agents are independent"), when configured.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub card: Option<crate::directory::CardHealth>,
}

/// An agent's lifecycle probe as operators read it: `{ "protocolVersion", "probedAt" (UTC),
/// "demotions": [words], "descriptor" }`, or only `demotions` when it was never probed.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct LifecycleView {
    /// The protocol version probed (e.g. `1.0`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// When the probe ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probed_at: Option<watcher_core::time::Instant>,
    /// Why it was not promoted, in words; empty when trusted.
    pub demotions: Vec<String>,
    /// The probe's whole descriptor, as `a2a-watcher probe` prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub descriptor: Option<Value>,
}

impl LifecycleView {
    /// The view of a probe's result, or of no probe (`None`): one demotion saying so.
    pub fn of(lifecycle: Option<&crate::directory::Lifecycle>) -> Self {
        match lifecycle {
            Some(l) => LifecycleView {
                protocol_version: Some(l.protocol_version.clone()),
                probed_at: Some(l.probed_at),
                demotions: l.demotions.clone(),
                descriptor: Some(l.descriptor.clone()),
            },
            None => LifecycleView {
                protocol_version: None,
                probed_at: None,
                demotions: vec![
                    "never probed: the card alone never promotes an agent to lifecycle-trusted"
                        .into(),
                ],
                descriptor: None,
            },
        }
    }
}

/// One page of agents by id: `{ "agents": [AgentView], "nextCursor": "…" | null }`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentsPage {
    /// The agents of the page, by id.
    pub agents: Vec<AgentView>,
    /// The cursor of the next page; `null` on the last.
    pub next_cursor: Option<String>,
}
