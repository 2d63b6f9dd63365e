//! The shell around the engine: load a slice, step, commit conditionally, retry on conflict,
//! and turn lapses into outbox entries in the same commit.

use std::sync::Arc;

use watcher_core::engine::{initial_scope, step, Effect, Input, StepContext, TimerKey};
use watcher_core::ids::Tenant;
use watcher_core::settings::Settings;
use watcher_core::slice::Slice;
use watcher_core::time::Instant;

use crate::directory::Directory;
use crate::metrics::Recorder;
use crate::store::{Commit, DeliveryState, DueTimer, OutboxEntry, Store, StoreError};

/// How often one input is retried after losing a compare-and-set, or after growing its scope.
const MAX_ATTEMPTS: usize = 32;

/// Firings per hand-over in [`Watcher::fire_due_handing_over`]: small, so that a burst's first
/// lapse tasks reach delivery after a few commits rather than after the whole burst's.
pub const FIRE_GROUP: usize = 8;

/// Receives each group of committed firings of [`Watcher::fire_due_handing_over`], in firing
/// order (each timer with what firing it did).
pub type HandOver<'a> = dyn FnMut(&[(DueTimer, Applied)]) + Send + 'a;

/// A failure to apply an input.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// Concurrent writers kept winning, or the scope kept growing; retry later.
    #[error("gave up after {0} attempts (contention)")]
    Exhausted(usize),
}

/// What applying one input did.
#[derive(Debug, Clone, Default)]
pub struct Applied {
    /// The engine's effects, in order.
    pub effects: Vec<Effect>,
    /// Lapse tasks written to the outbox in the same commit.
    pub outbox: Vec<OutboxEntry>,
}

/// The watcher: the engine over a store, with the agent directory and bounds.
pub struct Watcher<S: Store + ?Sized> {
    /// Where the record lives.
    pub store: Arc<S>,
    /// Registered agents.
    pub directory: Directory,
    /// Deployment bounds.
    pub settings: Settings,
    /// Carries out timer and queue effects after each commit (the serverless deployment).
    sink: Option<Arc<dyn EffectSink>>,
    /// Evaluate at once a timer the step left due at `now`, instead of waiting for it to fire.
    evaluate_due_at_once: bool,
    /// Counts what each committed input did (crate::metrics).
    recorder: Arc<dyn Recorder>,
}

/// Carries out, after a commit, what the record alone does not: arming and disarming external
/// timers, and enqueueing lapse tasks for the submitter. Failures are the sink's to log; the
/// sweep repairs what a lost effect leaves behind (a lapse is delayed, never lost).
#[async_trait::async_trait]
pub trait EffectSink: Send + Sync {
    /// Called once per committed input, with everything it did (including timers it evaluated
    /// at once).
    async fn carry_out(&self, tenant: &Tenant, applied: &Applied, now: Instant);
}

/// The last timer effect of each key in `effects`: `Some(at)` when it ends armed, `None` when it
/// ends disarmed.
pub fn net_timers(effects: &[Effect]) -> std::collections::BTreeMap<TimerKey, Option<Instant>> {
    let mut net = std::collections::BTreeMap::new();
    for e in effects {
        match e {
            Effect::ArmTimer { key, at } => {
                net.insert(key.clone(), Some(*at));
            }
            Effect::DisarmTimer { key } => {
                net.insert(key.clone(), None);
            }
            _ => {}
        }
    }
    net
}

impl<S: Store + ?Sized> Watcher<S> {
    /// A watcher over `store`.
    pub fn new(store: Arc<S>, directory: Directory, settings: Settings) -> Self {
        Watcher {
            store,
            directory,
            settings,
            sink: None,
            evaluate_due_at_once: false,
            recorder: crate::metrics::none(),
        }
    }

    /// Counts what each committed input does with `recorder` ([`crate::metrics`]).
    pub fn with_recorder(mut self, recorder: Arc<dyn Recorder>) -> Self {
        self.recorder = recorder;
        self
    }

    /// The recorder this watcher counts with.
    pub fn recorder(&self) -> &Arc<dyn Recorder> {
        &self.recorder
    }

    /// After each commit, hands the effects to `sink` (timers, queue).
    pub fn with_sink(mut self, sink: Arc<dyn EffectSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Evaluates at once, within the same call, a deadline or horizon an input leaves due at
    /// its own instant — for deployments whose timers cannot fire that soon (EventBridge
    /// Scheduler). `serve` and replay leave it off: their timer loop fires such timers after
    /// every input at that instant (semantics.md, "Order at one instant").
    pub fn evaluating_due_at_once(mut self) -> Self {
        self.evaluate_due_at_once = true;
        self
    }

    /// Applies `input` for `tenant` at `now` (the watcher's clock), committing all its writes
    /// at once. Replaying an input that already took effect changes nothing (the engine's
    /// idempotence); losing a conditional write reloads and tries again.
    ///
    /// # Errors
    /// Store failures, or [`ApplyError::Exhausted`] under sustained contention.
    pub async fn apply(
        &self,
        tenant: &Tenant,
        input: &Input,
        now: Instant,
    ) -> Result<Applied, ApplyError> {
        let mut applied = self.apply_once(tenant, input, now).await?;
        if self.evaluate_due_at_once {
            // Each round lapses or re-evaluates what the previous one left due; a timer that
            // stays due cannot loop, since evaluating it at `now` always consumes it.
            for _ in 0..8 {
                let due: Vec<TimerKey> = net_timers(&applied.effects)
                    .into_iter()
                    .filter_map(|(key, at)| at.filter(|at| *at <= now).map(|_| key))
                    .collect();
                if due.is_empty() {
                    break;
                }
                for key in due {
                    let more = self.apply_once(tenant, &Input::Timer(key), now).await?;
                    applied.effects.extend(more.effects);
                    applied.outbox.extend(more.outbox);
                }
            }
        }
        if let Some(sink) = &self.sink {
            sink.carry_out(tenant, &applied, now).await;
        }
        let tally = crate::metrics::tally(&applied.effects);
        if !tally.is_empty() {
            self.recorder.applied(&tally);
        }
        for e in &applied.effects {
            if let Effect::Lapsed(l) = e {
                let span = tracing::info_span!(
                    "lapse",
                    expectationId = %l.block.expectation_id,
                    messageId = %l.message_id,
                    agent = %l.agent,
                );
                span.in_scope(|| {
                    tracing::info!(lapse = l.block.lapse.as_str(), dueAt = %l.block.due_at, "lapsed");
                });
            }
        }
        Ok(applied)
    }

    /// One input, one commit (retrying on conflict).
    async fn apply_once(
        &self,
        tenant: &Tenant,
        input: &Input,
        now: Instant,
    ) -> Result<Applied, ApplyError> {
        let mut scope = initial_scope(input);
        let seq = self.store.next_sequence().await?;
        for _ in 0..MAX_ATTEMPTS {
            let slice = self.store.load(tenant, &scope, now).await?;
            let ctx = StepContext {
                now,
                seq,
                settings: &self.settings,
            };
            let (slice, effects) = match step(slice, input, &ctx) {
                Ok(done) => done,
                Err(need) => {
                    tracing::trace!(?need, "widening scope");
                    scope.add(need);
                    continue;
                }
            };
            let outbox = self.outbox_entries(&effects, now);
            let commit = commit_of(slice, &effects, outbox.clone());
            match self.store.commit(tenant, commit).await {
                Ok(()) => return Ok(Applied { effects, outbox }),
                Err(StoreError::Conflict(what)) => {
                    tracing::debug!(%what, "conflict; retrying step");
                    continue;
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(ApplyError::Exhausted(MAX_ATTEMPTS))
    }

    /// Fires every timer due at or before `now`, each at `now` (late if the watcher was down),
    /// in firing order. Returns what each firing did.
    ///
    /// # Errors
    /// As [`Watcher::apply`].
    pub async fn fire_due(&self, now: Instant) -> Result<Vec<(DueTimer, Applied)>, ApplyError> {
        self.fire_due_handing_over(now, &mut |_| {}).await
    }

    /// [`Watcher::fire_due`], handing what it queued to delivery as it goes (issue 20: a burst
    /// is delivered as it is decided): after every [`FIRE_GROUP`] firings, and after the last,
    /// `hand_over` is called with the firings of that group — all committed, in firing order —
    /// so that the first lapse task of a burst of thousands can leave before the burst's last
    /// lapse is committed. `serve` wakes its delivery lanes there; the order in which timers
    /// fire (semantics.md "Order at one instant") is unchanged. Returns every firing, in order.
    ///
    /// # Errors
    /// As [`Watcher::apply`]; groups handed over before the failure stay handed over (they are
    /// committed).
    pub async fn fire_due_handing_over(
        &self,
        now: Instant,
        hand_over: &mut HandOver<'_>,
    ) -> Result<Vec<(DueTimer, Applied)>, ApplyError> {
        let mut done: Vec<(DueTimer, Applied)> = Vec::new();
        let mut fired = std::collections::BTreeSet::new();
        // Firings since the last hand-over start at `done[handed..]`.
        let mut handed = 0;
        loop {
            let due = self.store.due_timers(now, 256).await?;
            let fresh: Vec<DueTimer> = due
                .into_iter()
                .filter(|t| !fired.contains(&(t.tenant.clone(), t.key.clone())))
                .collect();
            if fresh.is_empty() {
                // Nothing due, or only timers that stayed due after firing (left for the next
                // sweep rather than looping).
                if handed < done.len() {
                    hand_over(&done[handed..]);
                }
                return Ok(done);
            }
            for t in fresh {
                fired.insert((t.tenant.clone(), t.key.clone()));
                let applied = self
                    .apply(&t.tenant, &Input::Timer(t.key.clone()), now)
                    .await?;
                done.push((t, applied));
                if done.len() - handed >= FIRE_GROUP {
                    hand_over(&done[handed..]);
                    handed = done.len();
                }
            }
        }
    }

    /// Outbox entries for the lapses whose agent the watcher submits for.
    fn outbox_entries(&self, effects: &[Effect], now: Instant) -> Vec<OutboxEntry> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Lapsed(l) => Some(l),
                _ => None,
            })
            .filter_map(|l| {
                let agent = self.directory.get(&l.tenant, &l.agent)?;
                agent.submits_lapses.then(|| OutboxEntry {
                    tenant: l.tenant.clone(),
                    agent: l.agent.clone(),
                    message_id: l.message_id.clone(),
                    expectation_id: l.block.expectation_id.clone(),
                    lapse: l.block.lapse,
                    lapsed_at: l.block.lapsed_at,
                    request: l.request(&agent.delivery),
                    delivery: DeliveryState::Queued,
                    attempts: 0,
                    next_attempt_at: now,
                    task_id: None,
                    task_state: None,
                    answered_with_message: false,
                    last_error: None,
                    retrying_since: None,
                    attempt_started_at: None,
                    follow_at: None,
                    follow_since: None,
                })
            })
            .collect()
    }
}

/// The writes of a step: dirty subjects and tasks, outbox entries and rejections.
fn commit_of(slice: Slice, effects: &[Effect], outbox: Vec<OutboxEntry>) -> Commit {
    let Slice {
        mut subjects,
        mut tasks,
        dirty_subjects,
        dirty_tasks,
        ..
    } = slice;
    Commit {
        subjects: dirty_subjects
            .iter()
            .filter_map(|s| subjects.remove(s))
            .collect(),
        tasks: dirty_tasks
            .iter()
            .filter_map(|t| tasks.remove(t).flatten())
            .collect(),
        outbox,
        rejections: effects
            .iter()
            .filter_map(|e| match e {
                Effect::Rejected(r) => Some(r.clone()),
                _ => None,
            })
            .collect(),
    }
}
