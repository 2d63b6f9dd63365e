//! A lapse task in the outbox, as every store keeps it: its delivery state, and the claim
//! ([`Lease`]) a sender holds on it while posting it (the rules of claiming are in
//! [`crate::lease`]).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;

/// Delivery state of a lapse task (serve.md, `GET /v1/lapses`): `queued`, `sent`, `failed`,
/// `withdrawn` or `unaddressed`.
///
/// The one list of the states the lapse list shows: the answer's `delivery` member, the values
/// `GET /v1/lapses?delivery=` accepts, their schema in `docs/openapi.json` (generated from this
/// type) and the values of `a2a-watcher lapses --delivery` all come from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum DeliveryState {
    /// Waiting to be (re)sent.
    Queued,
    /// The agent answered with a JSON-RPC `result`; never sent again.
    Sent,
    /// A permanent error or the attempts ran out.
    Failed,
    /// Never sent, and never will be: before it was sent, the origin task was found ended
    /// (canceled, failed or rejected) by `GetTask`, and its expectations were withdrawn
    /// (origin-task reconciliation, docs/agents.md). Not re-queued by operators.
    Withdrawn,
    /// Never sent: no agent receives it. A lapse of an expectation the Learnables authority
    /// raised (`lesson.review`, expectations-v1 §16) is recorded for the notification
    /// channels and `GET /v1/lapses` only (the `lesson_review` module).
    Unaddressed,
}

impl DeliveryState {
    /// Every delivery state, in the order the docs list them.
    pub const ALL: [DeliveryState; 5] = [
        DeliveryState::Queued,
        DeliveryState::Sent,
        DeliveryState::Failed,
        DeliveryState::Withdrawn,
        DeliveryState::Unaddressed,
    ];

    /// `queued`, `sent`, `failed`, `withdrawn` or `unaddressed`.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryState::Queued => "queued",
            DeliveryState::Sent => "sent",
            DeliveryState::Failed => "failed",
            DeliveryState::Withdrawn => "withdrawn",
            DeliveryState::Unaddressed => "unaddressed",
        }
    }

    /// The state named `text` exactly as [`DeliveryState::as_str`] writes it (lower case).
    ///
    /// # Errors
    /// When `text` names no state: the reason quotes it and lists the states.
    ///
    /// # Example
    /// ```
    /// # use watcher_runtime::store::DeliveryState;
    /// assert_eq!(DeliveryState::parse("withdrawn"), Ok(DeliveryState::Withdrawn));
    /// assert!(DeliveryState::parse("lost").unwrap_err().contains("unaddressed"));
    /// ```
    pub fn parse(text: &str) -> Result<Self, String> {
        Self::ALL
            .into_iter()
            .find(|d| d.as_str() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Self::ALL.iter().map(|d| d.as_str()).collect();
                format!("{text:?} is not one of {}", names.join(", "))
            })
    }
}

impl std::fmt::Display for DeliveryState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for DeliveryState {
    type Err = String;

    /// As [`DeliveryState::parse`].
    fn from_str(text: &str) -> Result<Self, String> {
        Self::parse(text)
    }
}

/// One lapse task in the outbox, written in the transaction that records the lapse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxEntry {
    /// Tenant of the agent.
    pub tenant: Tenant,
    /// The agent the task goes to.
    pub agent: AgentId,
    /// `lapse:{expectationId}:{lapse}:{dueAt}`. Unique per (tenant, agent), not per tenant:
    /// expectation ids are scoped to the raising agent, so two agents of one tenant can lapse
    /// with the same `messageId`. An entry's identity is (tenant, agent, messageId).
    pub message_id: String,
    /// The lapsed expectation.
    pub expectation_id: ExpectationId,
    /// Which lapse.
    pub lapse: LapseKind,
    /// When the watcher determined it.
    pub lapsed_at: Instant,
    /// The `SendMessage` params to post.
    pub request: Value,
    /// queued / sent / failed / withdrawn / unaddressed.
    pub delivery: DeliveryState,
    /// Attempts made so far.
    pub attempts: u32,
    /// Earliest instant of the next attempt (UTC) while `queued`; once `failed`, the instant it
    /// failed (the agent's failures are listed in that order by [`crate::store::Outbox::outbox_of_agent`]).
    pub next_attempt_at: Instant,
    /// The task the agent created, when it answered with a Task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// That task's state as last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_state: Option<String>,
    /// The agent answered with a Message instead of a Task.
    #[serde(default)]
    pub answered_with_message: bool,
    /// The last failure, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the current run of failed attempts began: the instant of the first retryable failure
    /// since the entry was queued (or re-queued by an operator); `None` while nothing failed.
    /// A lapse task is given up (`failed`) once this is `[delivery] give_up_after` old.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retrying_since: Option<Instant>,
    /// When the attempt now under way was recorded, written *before* the request is sent and
    /// cleared with its outcome, except an outcome that leaves it unknown whether the agent has
    /// the lapse task (a timeout or a 5xx after the request was sent; the delivery crate's
    /// `record_attempt` keeps it). An entry read with this set and no attempt in flight in this
    /// process is ambiguous: the agent may have accepted it (a2a-delegation-in-depth, "Recovery"),
    /// so it is looked for with `ListTasks` before it is posted again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt_started_at: Option<Instant>,
    /// When to ask the agent next for the lapse task's state with `GetTask` (semantics.md "The
    /// lapse task": the watcher polls when it asked for no push notifications); `None` when the
    /// task is not followed (answered with a Message, pushed, terminal, interrupted, or given up).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_at: Option<Instant>,
    /// When following began (the delivery), for the polls' backoff and their give-up age.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub follow_since: Option<Instant>,
    /// Since when the lapse task's Task waits for a person (`TASK_STATE_INPUT_REQUIRED` or
    /// `TASK_STATE_AUTH_REQUIRED`, expectations-v1 §10.2; UTC): the instant the watcher first
    /// learnt it, kept while the state stays interrupted, `None` otherwise
    /// ([`crate::task_progress`]). [`crate::store::Outbox::outbox_needing_person`] lists entries by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_person_since: Option<Instant>,
    /// The sender that claimed the entry to post it, and until when ([`crate::lease`]); `None`
    /// when nobody holds it. Written only by [`crate::store::Outbox::outbox_claim`], released by its holder's
    /// [`crate::store::Outbox::outbox_update`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lease: Option<Lease>,
    /// The lineage of the task that raised the lapsed expectation, when it was determined: the
    /// tasks of the same agent its work descends from, nearest first (`RaisedBy::lineage`).
    /// The check before the first send asks them too (docs/interpretation.md "Withdrawal
    /// follows the lineage"). Empty when none is known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub origin_lineage: Vec<String>,
    /// The W3C trace context of the lapse's cause: the request that raised the lapsed
    /// expectation (`RaisedBy::trace`). Each `SendMessage` of the lapse task carries a
    /// `traceparent` with its trace id and a new parent id (the delivery crate's client).
    /// `None` for entries written before it was kept, or for an expectation raised outside a
    /// request; an invalid stored value reads as `None`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "watcher_core::trace::lenient"
    )]
    pub trace: Option<watcher_core::trace::TraceParent>,
    /// How the lapse's incident ended, once it did (expectations-v1 §13.1;
    /// [`crate::resolution`]): `{"at": instant (UTC), "reason": "fact" | "task" | "withdrawn" |
    /// "superseded" | "acknowledged", ...}`. `None` while the lapse is unresolved, and for
    /// entries written before it was kept. Set once: the first resolution stays, and every
    /// store's write keeps the stored one ([`crate::resolution::keep_resolution`]). The
    /// stores index it by (tenant, agent, `at`) for [`crate::store::Lane::Resolved`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolved: Option<crate::resolution::Resolution>,
    /// The states of the lapse task's Task that resolve its lapse (`[[agents]] resolve_on`,
    /// copied when the lapse is recorded); `None`: [`crate::resolution::RESOLVING_TASK_STATES`];
    /// empty: no state resolves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolve_on: Option<Vec<a2a_types::TaskState>>,
}

impl OutboxEntry {
    /// A lapse task just queued: no attempt yet, its first due at `lapsed_at`, nothing known of
    /// its task, nobody holding it.
    pub fn queued(
        tenant: Tenant,
        agent: AgentId,
        message_id: String,
        expectation_id: ExpectationId,
        lapse: LapseKind,
        lapsed_at: Instant,
        request: Value,
    ) -> OutboxEntry {
        OutboxEntry {
            tenant,
            agent,
            message_id,
            expectation_id,
            lapse,
            lapsed_at,
            request,
            delivery: DeliveryState::Queued,
            attempts: 0,
            next_attempt_at: lapsed_at,
            task_id: None,
            task_state: None,
            answered_with_message: false,
            last_error: None,
            retrying_since: None,
            attempt_started_at: None,
            follow_at: None,
            follow_since: None,
            needs_person_since: None,
            lease: None,
            origin_lineage: Vec::new(),
            trace: None,
            resolved: None,
            resolve_on: None,
        }
    }
}

/// A sender's claim on an outbox entry: `owner` posts it, and nobody else may before `until`
/// (except the successor of a restarted sender, see [`Lease::sender`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// Names one claim (one sender process, one attempt), unique across processes:
    /// `{incarnation}#{n}`. The writer that holds it releases it by writing the entry with this
    /// same lease.
    pub owner: String,
    /// The sending process that made the claim (unique per process start).
    pub incarnation: String,
    /// A name the sender keeps across its restarts and that no two live senders share (`serve`:
    /// its database file, which one process serves at a time), or `None` (the submitter
    /// function: containers come and go). A claim by the same sender in another incarnation
    /// is its dead predecessor's and is taken over at once, not after `until`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    /// The claim holds until this instant, on the claimer's clock; after it, another sender may
    /// take the entry over.
    pub until: Instant,
}

impl Lease {
    /// Whether `self` (a stored claim) still stops `next` from claiming at `now`: it has not
    /// expired, and it is not `next`'s sender's previous incarnation.
    pub fn holds_against(&self, next: &Lease, now: Instant) -> bool {
        let predecessor = self.sender.is_some()
            && self.sender == next.sender
            && self.incarnation != next.incarnation;
        self.until > now && !predecessor
    }
}
