//! The shell around the engine: load a slice, step, commit conditionally, retry on conflict,
//! and turn lapses into outbox entries, and the lapses a step ends into resolutions of their
//! lapse tasks ([`crate::resolution`]), in the same commit.

use std::sync::Arc;

use futures_util::future::join_all;

use watcher_core::engine::{initial_scope, step, Effect, Input, StepContext, TimerKey};
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::settings::Settings;
use watcher_core::slice::Slice;
use watcher_core::time::Instant;

use crate::directory::Directory;
use crate::metrics::Recorder;
use crate::store::{Commit, DueTimer, OutboxEntry, Store, StoreError};

/// How often one input is retried after losing a compare-and-set, or after growing its scope.
const MAX_ATTEMPTS: usize = 32;

/// Most firings per group in [`Watcher::fire_due_handing_over`]: small, so that a burst's first
/// lapse tasks reach delivery after a few commits rather than after the whole burst's, and
/// large enough that a group's commits share a sync.
pub const FIRE_GROUP: usize = 8;

/// The scope and tries of one input's step so far (a conflict or a widened scope tries again).
struct Attempt {
    scope: watcher_core::slice::Scope,
    tries: usize,
    /// Commits of this input lost to another writer so far (each waits before the next try).
    conflicts: u32,
    /// Rejections the caller keeps in the input's commit (a request's warnings).
    keep: Vec<watcher_core::engine::Rejection>,
}

impl Attempt {
    fn new(input: &Input, settings: &Settings) -> Attempt {
        Attempt {
            scope: initial_scope(input, settings),
            tries: 0,
            conflicts: 0,
            keep: Vec::new(),
        }
    }
}

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
    /// An input built inside the product could not be read (a `lesson.review` whose subject
    /// id is too long, for instance): the field and why. Nothing was recorded.
    #[error("{0}")]
    Invalid(String),
}

impl ApplyError {
    /// Why the input could not be applied now, when that is known and passes: the store's
    /// class ([`StoreError::unavailability`]), or [`crate::store::Unavailable::Contended`] for a conflict that
    /// outlasted the retries. `None` for invalid input and failures of no known class.
    pub fn unavailability(&self) -> Option<crate::store::Unavailable> {
        match self {
            ApplyError::Store(StoreError::Conflict(_)) | ApplyError::Exhausted(_) => {
                Some(crate::store::Unavailable::Contended)
            }
            ApplyError::Store(e) => e.unavailability(),
            ApplyError::Invalid(_) => None,
        }
    }
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
    /// How a step that lost its commit to another writer waits before stepping again
    /// ([`crate::retry::Backoff::CONFLICT`] by default).
    retry: crate::retry::Retry,
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
            Effect::DisarmTimer { key, .. } => {
                net.insert(key.clone(), None);
            }
            _ => {}
        }
    }
    net
}

/// The timers of `effects` that end disarmed having been armed, before and during the commit,
/// only for instants at or before `now`: `effects` disarm them and arm none of them, and each
/// disarm's previous instant (`was`) has passed. A timer adapter whose timers end themselves
/// once they fire (an EventBridge one-time schedule fires and is deleted, or was already) need
/// not delete these; one armed again in the same commit is left out, since its earlier instant
/// is not known here.
pub fn passed_disarms(effects: &[Effect], now: Instant) -> std::collections::BTreeSet<TimerKey> {
    let mut passed = std::collections::BTreeSet::new();
    let mut armed = std::collections::BTreeSet::new();
    for e in effects {
        match e {
            Effect::ArmTimer { key, .. } => {
                armed.insert(key);
            }
            Effect::DisarmTimer { key, was } if *was <= now => {
                passed.insert(key.clone());
            }
            Effect::DisarmTimer { key, .. } => {
                armed.insert(key);
            }
            _ => {}
        }
    }
    passed.retain(|k| !armed.contains(k));
    passed
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
            retry: crate::retry::Retry::default(),
        }
    }

    /// Steps that lose their commit to another writer (`StoreError::Conflict`) wait per `retry`
    /// before stepping again (exponential backoff with full jitter, [`crate::retry`]); the
    /// attempts stay bounded by the step's own limit (32 loads).
    pub fn with_retry(mut self, retry: crate::retry::Retry) -> Self {
        self.retry = retry;
        self
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
        let applied = self.apply_once(tenant, input, now).await?;
        self.after_commit(tenant, applied, now).await
    }

    /// [`Watcher::apply`], with `keep` (rejections the caller decided, such as a request's
    /// warnings) written in the input's own commit: both are recorded, or neither.
    ///
    /// # Errors
    /// As [`Watcher::apply`].
    pub async fn apply_keeping(
        &self,
        tenant: &Tenant,
        input: &Input,
        keep: Vec<watcher_core::engine::Rejection>,
        now: Instant,
    ) -> Result<Applied, ApplyError> {
        let seq = self.store.next_sequence().await?;
        let mut attempt = Attempt::new(input, &self.settings);
        attempt.keep = keep;
        let applied = self
            .step_and_commit(tenant, input, now, seq, &mut attempt)
            .await?;
        self.after_commit(tenant, applied, now).await
    }

    /// What follows an input's commit: the timers it left due at once (when
    /// [`Watcher::evaluating_due_at_once`]), the sink, the metrics and the lapse log lines.
    async fn after_commit(
        &self,
        tenant: &Tenant,
        mut applied: Applied,
        now: Instant,
    ) -> Result<Applied, ApplyError> {
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
                // In the cause's trace when spans are exported (`trace_cause`).
                if let Some(cause) = &l.raised_by.trace {
                    crate::trace_cause::enter(&span, cause);
                }
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
        let seq = self.store.next_sequence().await?;
        self.step_and_commit(
            tenant,
            input,
            now,
            seq,
            &mut Attempt::new(input, &self.settings),
        )
        .await
    }

    /// Steps `input` with raising-order number `seq` and commits, stepping again on a lost
    /// conditional write, within the tries `attempt` has left.
    async fn step_and_commit(
        &self,
        tenant: &Tenant,
        input: &Input,
        now: Instant,
        seq: u64,
        attempt: &mut Attempt,
    ) -> Result<Applied, ApplyError> {
        loop {
            let (commit, applied) = self.prepare(tenant, input, now, seq, attempt).await?;
            match self.store.commit(tenant, commit).await {
                Ok(()) => return Ok(applied),
                Err(StoreError::Conflict(what)) => {
                    // Another writer holds or moved what this step read: wait (full jitter,
                    // growing with each loss) so that colliding writers spread out instead of
                    // colliding again in step, then load and step again. `prepare` stops after
                    // the step's `MAX_ATTEMPTS` loads (`ApplyError::Exhausted`).
                    if attempt.tries >= MAX_ATTEMPTS {
                        return Err(ApplyError::Exhausted(MAX_ATTEMPTS));
                    }
                    attempt.conflicts += 1;
                    let waited = self.retry.pause(attempt.conflicts).await;
                    tracing::debug!(%what, conflicts = attempt.conflicts, waited_ms = waited.as_millis(), "conflict; retrying step");
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Loads the slice `input` needs and steps it (widening the scope as the step asks), up to
    /// the commit: the writes, and what they do once committed.
    async fn prepare(
        &self,
        tenant: &Tenant,
        input: &Input,
        now: Instant,
        seq: u64,
        attempt: &mut Attempt,
    ) -> Result<(Commit, Applied), ApplyError> {
        while attempt.tries < MAX_ATTEMPTS {
            attempt.tries += 1;
            let slice = self.store.load(tenant, &attempt.scope, now).await?;
            // A store numbering inputs by time (DynamoDB) may answer a number below one another
            // process stored on these subjects and tasks a moment ago: order this input after them.
            let ctx = StepContext {
                now,
                seq: crate::sequence::above_slice(seq, &slice),
                settings: &self.settings,
                trace: crate::trace_cause::current(),
            };
            match step(slice, input, &ctx) {
                Ok((slice, effects)) => {
                    let mut outbox = self.outbox_entries(&effects, now);
                    // The lapses this step ended, resolved in the same commit (§13.1): a lapse
                    // task written by this very step takes its resolution at once.
                    let mut resolutions = crate::resolution::resolutions(&effects, &slice, now);
                    resolutions.retain(|r| {
                        let new = outbox
                            .iter_mut()
                            .find(|o| o.agent == r.agent && o.message_id == r.message_id);
                        match new {
                            Some(o) => {
                                crate::resolution::resolve(o, r.resolution.clone());
                                false
                            }
                            None => true,
                        }
                    });
                    let mut commit = commit_of(slice, &effects, outbox.clone());
                    commit.resolutions = resolutions;
                    commit.rejections.extend(attempt.keep.iter().cloned());
                    return Ok((commit, Applied { effects, outbox }));
                }
                Err(need) => {
                    tracing::trace!(?need, "widening scope");
                    attempt.scope.add(need);
                }
            }
        }
        Err(ApplyError::Exhausted(MAX_ATTEMPTS))
    }

    /// Fires `group` (timers on distinct subjects, in firing order) at `now` together: their
    /// raising-order numbers are taken in firing order, their slices loaded and stepped
    /// concurrently, and their commits sent in firing order, so that a store with group commit
    /// makes them durable together (the SQLite store: one sync) and in that order. A commit that
    /// loses its conditional write is stepped again and committed alone (after the group's
    /// others: only a concurrent input on the same subject causes it). Answers each timer's
    /// outcome, in order.
    async fn fire_together(
        &self,
        group: &[DueTimer],
        now: Instant,
    ) -> Vec<Result<Applied, ApplyError>> {
        let inputs: Vec<Input> = group.iter().map(|t| Input::Timer(t.key.clone())).collect();
        // `join_all` polls its futures in order, and a store hands out raising-order numbers
        // (and takes commits) in the order asked: the first poll of each asks.
        let prepared = join_all(group.iter().zip(&inputs).map(|(t, input)| async move {
            let seq = self.store.next_sequence().await?;
            let mut attempt = Attempt::new(input, &self.settings);
            let (commit, applied) = self
                .prepare(&t.tenant, input, now, seq, &mut attempt)
                .await?;
            Ok::<_, ApplyError>((seq, attempt, commit, applied))
        }))
        .await;
        let committed = join_all(prepared.into_iter().zip(group.iter().zip(&inputs)).map(
            |(prepared, (t, input))| async move {
                let (seq, mut attempt, commit, applied) = prepared?;
                match self.store.commit(&t.tenant, commit).await {
                    Ok(()) => Ok(applied),
                    Err(StoreError::Conflict(what)) => {
                        attempt.conflicts += 1;
                        let waited = self.retry.pause(attempt.conflicts).await;
                        tracing::debug!(%what, waited_ms = waited.as_millis(), "conflict; retrying step");
                        self.step_and_commit(&t.tenant, input, now, seq, &mut attempt)
                            .await
                    }
                    Err(e) => Err(e.into()),
                }
            },
        ))
        .await;
        let mut out = Vec::with_capacity(group.len());
        for (t, result) in group.iter().zip(committed) {
            out.push(match result {
                Ok(applied) => self.after_commit(&t.tenant, applied, now).await,
                Err(e) => Err(e),
            });
        }
        out
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
        self.fire_due_handing_over(now, false, &mut |_| {}).await
    }

    /// [`Watcher::fire_due`], in small groups handed to delivery as they are committed (a
    /// burst is delivered as it is decided). Due timers are taken in firing order into
    /// groups of at most [`FIRE_GROUP`] on distinct subjects (a subject's second timer starts the
    /// next group, so a subject's timers still fire one after the other, `overdue` before
    /// `stalled`); after each group `hand_over` is called with its firings — all committed, in
    /// firing order — so that the first lapse task of a burst of thousands can leave before the
    /// burst's last lapse is committed. `serve` wakes its delivery lanes there.
    ///
    /// With `together`, a group's timers are fired together (`Watcher::fire_together`: one
    /// group commit for the group, raising-order numbers and commits in firing order); only for
    /// a store that hands out raising-order numbers and takes commits in the order they are
    /// asked for (the SQLite and memory stores). Without it they are fired one after the other,
    /// as [`Watcher::fire_due`] does. Either way the order in which timers fire (semantics.md
    /// "Order at one instant") is kept. Returns every firing, in order.
    ///
    /// A timer whose firing fails is skipped, logged and counted, as in [`Watcher::fire_due`];
    /// the group's other firings are handed over all the same.
    ///
    /// # Errors
    /// Only when the due timers cannot be listed.
    pub async fn fire_due_handing_over(
        &self,
        now: Instant,
        together: bool,
        hand_over: &mut HandOver<'_>,
    ) -> Result<Vec<(DueTimer, Applied)>, ApplyError> {
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
            let mut rest = fresh.into_iter().peekable();
            while rest.peek().is_some() {
                let mut group: Vec<DueTimer> = Vec::with_capacity(FIRE_GROUP);
                let mut subjects = std::collections::BTreeSet::new();
                while group.len() < FIRE_GROUP {
                    match rest
                        .next_if(|t| subjects.insert((t.tenant.clone(), t.key.subject.clone())))
                    {
                        Some(t) => group.push(t),
                        None => break,
                    }
                }
                for t in &group {
                    fired.insert((t.tenant.clone(), t.key.clone()));
                }
                let results = if together {
                    self.fire_together(&group, now).await
                } else {
                    let mut results = Vec::with_capacity(group.len());
                    for t in &group {
                        results.push(
                            self.apply(&t.tenant, &Input::Timer(t.key.clone()), now)
                                .await,
                        );
                    }
                    results
                };
                let start = done.len();
                for (t, r) in group.into_iter().zip(results) {
                    match r {
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
                if done.len() > start {
                    hand_over(&done[start..]);
                }
            }
        }
    }

    /// Outbox entries for the lapses whose agent the watcher submits for, and for the
    /// Learnables authority's, which no agent receives.
    fn outbox_entries(&self, effects: &[Effect], now: Instant) -> Vec<OutboxEntry> {
        effects
            .iter()
            .filter_map(|e| match e {
                Effect::Lapsed(l) => Some(l),
                _ => None,
            })
            .filter_map(|l| {
                if l.agent.as_str() == crate::authority::AUTHORITY_AGENT {
                    return Some(crate::authority::unaddressed(l, now));
                }
                let agent = self.directory.get(&l.tenant, &l.agent)?;
                agent.submits_lapses.then(|| OutboxEntry {
                    next_attempt_at: now,
                    resolve_on: agent.delivery.resolve_on.clone(),
                    trace: l.raised_by.trace,
                    origin_lineage: l
                        .raised_by
                        .lineage
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                    ..OutboxEntry::queued(
                        l.tenant.clone(),
                        l.agent.clone(),
                        l.message_id.clone(),
                        l.block.expectation_id.clone(),
                        l.block.lapse,
                        l.block.lapsed_at,
                        l.request(&agent.delivery),
                    )
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
        resolutions: Vec::new(),
    }
}
