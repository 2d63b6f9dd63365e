//! The watcher's rules as a pure step: `(slice, input, now) → (slice', effects)`.
//!
//! Nothing here reads a clock, a store or the network. The shell loads a [`Slice`], calls
//! [`step`], commits the slice's dirty parts conditionally on their versions, and then carries out
//! the effects (arm timers, enqueue lapse tasks, report refusals). When the slice lacks something,
//! [`step`] answers a [`Need`]; the shell loads it and calls again.
//!
//! Where each rule lives:
//! * [`raise`]: raising, every refusal rule, supersession and lineage (§8, §10.3, §13.2);
//! * [`facts`]: satisfaction, lateness, re-anchoring, skipped lapses (§9.2, §9.3, §9.1);
//! * [`withdraw`]: withdrawal on terminal origin tasks and explicit withdrawal (§8.1, §13.6);
//! * [`lineage`]: which earlier task a task's work descends from, so that withdrawal follows it
//!   (§8.1, §10.2, §13.6);
//! * [`lifecycle`]: task statuses and questions that expire (§11);
//! * [`timers`]: deadlines, horizons, overdue and stalled lapses, timer effects (§9.1, §10.1).

pub mod facts;
pub mod lifecycle;
pub mod lineage;
pub mod raise;
pub mod scope;
pub mod timers;
pub mod withdraw;

use serde::Serialize;

use crate::card::ExpectationsDeclaration;
use crate::expectation::{Expectation, ParseError};
use crate::ids::{
    AgentId, ContextId, ExpectationId, ExpectationRef, FactKey, Source, Subject, TaskId,
};
use crate::lapse::Lapse;
use crate::settings::Settings;
use crate::slice::{Need, Slice};
use crate::time::Instant;

pub use scope::initial_scope;
pub use timers::{live_until, pending_timers, LiveUntil, TimerKey, TimerKind};

/// What the engine knows of the agent pushing an event: its id and validated declaration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentProfile {
    /// The agent's id in this deployment.
    pub id: AgentId,
    /// Its Expectations declaration (§6), from its card.
    pub declaration: ExpectationsDeclaration,
}

/// The task an item came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// The A2A task id.
    pub task_id: TaskId,
    /// Its contextId, when known.
    pub context_id: Option<ContextId>,
}

/// A fact as reported, with its source already set to the authenticated reporter (§13.5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedFact {
    /// Matched exactly against `satisfiedBy.factKey`.
    pub fact_key: FactKey,
    /// When it was observed, as claimed (UTC). A zero value (`0001-01-01T00:00:00Z`,
    /// `1970-01-01T00:00:00Z`) means "absent": receipt time is used (semantics.md "Time").
    pub observed_at: Instant,
    /// `observedAt` exactly as the reporter wrote it, when it came as text; kept on the record
    /// whenever it differs from the effective one (replay.md `claimedObservedAt`).
    pub observed_at_given: Option<String>,
    /// The carrier-webhook mapping that read it (serve.md "Carrier webhooks": `name` names the
    /// mapping "on the record"); `None` for facts posted as facts or carried by agents.
    pub mapping: Option<String>,
    /// The subject it concerns, if the reporter said.
    pub subject: Option<Subject>,
    /// The authenticated reporter.
    pub source: Source,
}

/// One thing a pushed event carries, in the order semantics.md gives: expectations are raised
/// first, then withdrawals, then facts; a Task's artifacts in array order, then its status. A
/// task's lineage, when the event shows it, comes before everything else, so that what the task
/// raises is raised knowing whose work it is.
#[derive(Debug, Clone, PartialEq)]
pub enum PushItem {
    /// The task's work follows from `parent`, an earlier task of the same agent: the task was
    /// started by a request whose first `referenceTaskIds` entry names `parent` (a lapse task
    /// names the task that raised the lapsed expectation, semantics.md "The lapse task"), or it
    /// is a lapse task the watcher sent about `parent` (docs/interpretation.md "Withdrawal
    /// follows the lineage"; [`lineage`]).
    Lineage {
        /// The task whose lineage it is.
        origin: Origin,
        /// The task it descends from.
        parent: TaskId,
    },
    /// `metadata[URI].expectations` of an artifact, or of a status message asking a question.
    Raise {
        /// The raising task.
        origin: Origin,
        /// Each element parsed, or why it could not be.
        expectations: Vec<Result<Expectation, ParseError>>,
        /// For a question (§11): the asking status's timestamp (receipt time when missing).
        question_at: Option<Instant>,
        /// For a question: the asking status's own valid `status.timestamp`, `None` when it had
        /// none (orders the question against the task's other statuses, semantics.md
        /// "Questions that expire").
        question_timestamp: Option<Instant>,
    },
    /// `{ "withdraw": [...], "reason": "..." }` (§8.1).
    Withdraw {
        /// The task whose artifact carried it.
        origin: Origin,
        /// The expectations to withdraw.
        ids: Vec<ExpectationId>,
        /// The agent's reason.
        reason: Option<String>,
    },
    /// `metadata[URI].facts` of an artifact or message; source `agent:{agentId}`.
    Facts(Vec<ReportedFact>),
    /// A task status seen in a push.
    Status {
        /// The task.
        origin: Origin,
        /// The `TaskState` string.
        state: String,
        /// `status.timestamp`, if present, valid and not a zero value (semantics.md "Time").
        timestamp: Option<Instant>,
        /// `status.timestamp` exactly as given, whenever the status carried one (the engine
        /// reads it per semantics.md "Time" and keeps it beside the effective time when they
        /// differ).
        given_timestamp: Option<String>,
    },
    /// Something in the extension's metadata that could not be read: reported as a refusal.
    Malformed {
        /// The task it came from, if known.
        task_id: Option<TaskId>,
        /// What was wrong, naming the field.
        reason: String,
    },
    /// Something the watcher ignored (an unknown member, an invalid `status.timestamp`, the
    /// extension listed without its metadata): kept with the rejections as a [`Rejection`] with
    /// `warning: true` (security issue 12 item 4), never refusing anything.
    Ignored {
        /// The task it came from, if known.
        task_id: Option<TaskId>,
        /// What was ignored, naming the field and the nearest known member.
        reason: String,
    },
}

/// An input to the engine.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// One event an agent pushed, translated into items.
    Push {
        /// The pushing agent.
        agent: AgentProfile,
        /// What the event carries, in order.
        items: Vec<PushItem>,
    },
    /// Facts reported by an authenticated source (one batch, all or nothing).
    Facts(Vec<ReportedFact>),
    /// A timer firing: evaluate this deadline or horizon now (a hint; the record decides).
    Timer(TimerKey),
}

/// A refused expectation (or unreadable metadata), reported to the agent (§10.3). Its serde form
/// is the wire form of `GET /v1/agents/{agentId}/rejections`, and also how stores keep it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rejection {
    /// The agent whose expectation was refused.
    pub agent: AgentId,
    /// Its `expectationId`, when one could be read.
    pub expectation_id: Option<String>,
    /// The rule and the field, in words.
    pub reason: String,
    /// The task that raised it.
    pub task_id: Option<TaskId>,
    /// When the watcher refused it.
    pub at: Instant,
    /// `true` for something ignored rather than refused (an unknown member, an invalid
    /// `status.timestamp`): kept with the rejections so it is never silently dropped, and
    /// answered under `warnings` rather than `rejected`. Absent from the stored form when false.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub warning: bool,
}

/// What a step decided; the shell carries these out after committing.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Effect {
    /// An expectation was recorded.
    Raised {
        /// Which.
        expectation: ExpectationRef,
        /// Its subject.
        subject: Subject,
    },
    /// An identical expectation from the same task was delivered again: nothing changed.
    Duplicate {
        /// Which.
        expectation: ExpectationRef,
    },
    /// An expectation (or metadata) was refused.
    Rejected(Rejection),
    /// A fact was received; `satisfied` lists what it satisfied (empty for a duplicate).
    FactRecorded {
        /// Its key.
        fact_key: FactKey,
        /// Its authenticated source.
        source: Source,
        /// Expectations it satisfied.
        satisfied: Vec<ExpectationRef>,
        /// `true` when this exact fact was received before (a no-op).
        duplicate: bool,
    },
    /// An expectation was satisfied.
    Satisfied {
        /// Which.
        expectation: ExpectationRef,
        /// Satisfied after its current due time.
        late: bool,
    },
    /// An anchored expectation's current due time was fixed (§9.3).
    Reanchored {
        /// Which.
        expectation: ExpectationRef,
        /// The new current due time.
        due_at: Instant,
    },
    /// An expectation was withdrawn.
    Withdrawn {
        /// Which.
        expectation: ExpectationRef,
        /// Why.
        reason: String,
    },
    /// An expectation lapsed: submit its lapse task (unless the agent keeps time itself).
    Lapsed(Box<Lapse>),
    /// (Re)arm the timer for a deadline or horizon at an instant.
    ArmTimer {
        /// Which timer.
        key: TimerKey,
        /// When it should fire (UTC).
        at: Instant,
    },
    /// The deadline or horizon no longer needs a timer.
    DisarmTimer {
        /// Which timer.
        key: TimerKey,
        /// The instant it was armed for before this step (UTC): a timer adapter whose timers
        /// end themselves once their instant passes (EventBridge's one-time schedules) need not
        /// delete one whose instant is behind it.
        was: Instant,
    },
}

/// The clock reading, sequence number and bounds for one step.
#[derive(Debug, Clone, Copy)]
pub struct StepContext<'a> {
    /// The watcher's clock (UTC) for this step.
    pub now: Instant,
    /// Monotonic number of this input, for raising order.
    pub seq: u64,
    /// Deployment bounds.
    pub settings: &'a Settings,
    /// The trace context of the request this input came with ([`crate::trace`]), kept on the
    /// expectations it raises (`RaisedBy::trace`); `None` for a timer or outside a request.
    pub trace: Option<crate::trace::TraceParent>,
}

/// Collects effects; lapses of the input itself are held and emitted in raising order.
pub(crate) struct Out {
    pub effects: Vec<Effect>,
    pub lapses: Vec<Lapse>,
}

impl Out {
    fn new() -> Self {
        Out {
            effects: Vec::new(),
            lapses: Vec::new(),
        }
    }

    pub(crate) fn push(&mut self, e: Effect) {
        self.effects.push(e);
    }

    fn flush_lapses(&mut self) {
        let mut lapses = std::mem::take(&mut self.lapses);
        lapses.sort_by_key(|l| (l.order, l.block.lapse));
        self.effects
            .extend(lapses.into_iter().map(|l| Effect::Lapsed(Box::new(l))));
    }
}

/// Applies one input at `ctx.now` to a slice.
///
/// Order within the step (semantics.md, "Order at one instant"): deadlines and horizons that
/// fell due strictly before `now` fire first (late, if the watcher was slow); then the input;
/// then anything the input made due strictly before `now` (a re-anchor or fallback into the
/// past) lapses at once. Lapses of the input are emitted in raising order. Timer effects for
/// every change close the list.
///
/// # Errors
/// [`Need`] when the slice lacks a subject, index entry, task or count the step must read; the
/// slice passed in is then of no further use, and the shell retries with a larger scope.
pub fn step(
    mut slice: Slice,
    input: &Input,
    ctx: &StepContext<'_>,
) -> Result<(Slice, Vec<Effect>), Need> {
    let before = timers::snapshot(&slice);
    let baseline = raise::LiveBaseline::of(&slice, ctx.now);
    let mut out = Out::new();
    timers::catch_up(&mut slice, ctx, &mut out)?;
    match input {
        Input::Push { agent, items } => {
            let mut index: u32 = 0;
            for item in items {
                match item {
                    PushItem::Lineage { origin, parent } => {
                        lineage::link(&mut slice, &agent.id, origin, parent, ctx, &mut out)?;
                    }
                    PushItem::Raise {
                        origin,
                        expectations,
                        question_at,
                        question_timestamp,
                    } => raise::raise(
                        &mut slice,
                        agent,
                        origin,
                        expectations,
                        question_at
                            .map(|at| raise::Asked::received(at, *question_timestamp, ctx.now)),
                        ctx,
                        &baseline,
                        &mut index,
                        &mut out,
                    )?,
                    PushItem::Withdraw {
                        origin,
                        ids,
                        reason,
                    } => withdraw::explicit(
                        &mut slice,
                        &agent.id,
                        origin,
                        ids,
                        reason.as_deref(),
                        ctx.now,
                        &mut out,
                    )?,
                    PushItem::Facts(facts) => {
                        for f in facts {
                            facts::report(&mut slice, f, ctx, &mut out)?;
                        }
                    }
                    PushItem::Status {
                        origin,
                        state,
                        timestamp,
                        given_timestamp,
                    } => lifecycle::status(
                        &mut slice,
                        &agent.id,
                        origin,
                        lifecycle::Seen {
                            state,
                            timestamp: *timestamp,
                            given_timestamp: given_timestamp.as_deref(),
                        },
                        ctx,
                        &mut out,
                    )?,
                    // A malformed item is refused; an ignored one only warned about.
                    PushItem::Malformed { task_id, reason }
                    | PushItem::Ignored { task_id, reason } => {
                        out.push(Effect::Rejected(Rejection {
                            agent: agent.id.clone(),
                            expectation_id: None,
                            reason: reason.clone(),
                            task_id: task_id.clone(),
                            at: ctx.now,
                            warning: matches!(item, PushItem::Ignored { .. }),
                        }));
                    }
                }
            }
        }
        Input::Facts(facts) => {
            for f in facts {
                facts::report(&mut slice, f, ctx, &mut out)?;
            }
        }
        Input::Timer(key) => timers::fire(&mut slice, key, ctx, &mut out)?,
    }
    timers::lapse_newly_due(&mut slice, ctx, &mut out)?;
    out.flush_lapses();
    timers::diff(&before, &slice, &mut out);
    Ok((slice, out.effects))
}

/// `live count` helper for stores and bounds: whether the record can still lapse at `now`
/// (semantics.md, "States": open, with a deadline not yet passed or a horizon not yet reached, or
/// waiting on an anchor). A deadline at exactly `now` has not passed: its timer fires after every
/// input at that instant, so stores count `live_until >= now`.
pub fn is_live(rec: &crate::record::ExpectationRecord, now: Instant) -> bool {
    match live_until(rec) {
        LiveUntil::Closed => false,
        LiveUntil::Indefinite => true,
        LiveUntil::Until(t) => t >= now,
    }
}
