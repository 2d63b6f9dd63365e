//! The shell around the engine: load a slice, step, commit conditionally, retry on conflict,
//! and turn lapses into outbox entries in the same commit.

use std::sync::Arc;

use watcher_core::engine::{initial_scope, step, Effect, Input, StepContext, TimerKey};
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::settings::Settings;
use watcher_core::slice::Slice;
use watcher_core::time::Instant;

use crate::directory::Directory;
use crate::metrics::Recorder;
use crate::store::{Commit, DeliveryState, DueTimer, OutboxEntry, Store, StoreError};

/// How often one input is retried after losing a compare-and-set, or after growing its scope.
const MAX_ATTEMPTS: usize = 32;

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

    /// Re-queues failed lapse tasks of `agent` ([`crate::operators::requeue_failed`]: the ones
    /// named by `message_ids`, or every failed one) and hands them to delivery at once: on a
    /// deployment with a sink, the sink enqueues them as it does new lapse tasks (the lapse
    /// queue on AWS); `serve`'s caller wakes its lanes. `POST /v1/lapses/retry`.
    ///
    /// # Errors
    /// The first store error; entries re-queued before it stay re-queued (and the sweep hands
    /// them over).
    pub async fn requeue_failed(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_ids: Option<&[String]>,
        now: Instant,
    ) -> Result<crate::operators::Requeued, StoreError> {
        let done =
            crate::operators::requeue_failed(&*self.store, tenant, agent, message_ids, now).await?;
        if let (Some(sink), false) = (&self.sink, done.entries.is_empty()) {
            let applied = Applied {
                effects: Vec::new(),
                outbox: done.entries.clone(),
            };
            sink.carry_out(tenant, &applied, now).await;
        }
        Ok(done)
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
    /// A timer whose firing fails (its subject's record cannot be read or written, or writers
    /// keep winning) is skipped: logged, counted ([`Recorder::timer_failed`]) and left due, so
    /// the next call fires it again; the timers after it are fired all the same (style.md
    /// "Timers are hints": the sweep is the safety net of every other timer).
    ///
    /// # Errors
    /// Only when the due timers cannot be listed.
    pub async fn fire_due(&self, now: Instant) -> Result<Vec<(DueTimer, Applied)>, ApplyError> {
        let mut done: Vec<(DueTimer, Applied)> = Vec::new();
        let mut fired = std::collections::BTreeSet::new();
        loop {
            let due = self.store.due_timers(now, 256).await?;
            let fresh: Vec<DueTimer> = due
                .into_iter()
                .filter(|t| !fired.contains(&(t.tenant.clone(), t.key.clone())))
                .collect();
            if fresh.is_empty() {
                // Nothing due, or only timers that stayed due after firing (or failed to fire),
                // left for the next sweep rather than looping.
                return Ok(done);
            }
            for t in fresh {
                fired.insert((t.tenant.clone(), t.key.clone()));
                match self
                    .apply(&t.tenant, &Input::Timer(t.key.clone()), now)
                    .await
                {
                    Ok(applied) => done.push((t, applied)),
                    Err(e) => {
                        tracing::error!(
                            error = %e,
                            tenant = %t.tenant,
                            timer = ?t.key,
                            "firing a due timer failed; skipped, fired again next time"
                        );
                        self.recorder.timer_failed();
                    }
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
                    lease: None,
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
