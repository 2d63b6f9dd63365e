//! The shell around the engine: load a slice, step, commit conditionally, retry on conflict,
//! and turn lapses into outbox entries in the same commit.

use std::sync::Arc;

use watcher_core::engine::{initial_scope, step, Effect, Input, StepContext};
use watcher_core::ids::Tenant;
use watcher_core::settings::Settings;
use watcher_core::slice::Slice;
use watcher_core::time::Instant;

use crate::directory::Directory;
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
}

impl<S: Store + ?Sized> Watcher<S> {
    /// A watcher over `store`.
    pub fn new(store: Arc<S>, directory: Directory, settings: Settings) -> Self {
        Watcher {
            store,
            directory,
            settings,
        }
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
        let mut done: Vec<(DueTimer, Applied)> = Vec::new();
        let mut fired = std::collections::BTreeSet::new();
        loop {
            let due = self.store.due_timers(now, 256).await?;
            let fresh: Vec<DueTimer> = due
                .into_iter()
                .filter(|t| !fired.contains(&(t.tenant.clone(), t.key.clone())))
                .collect();
            if fresh.is_empty() {
                // Nothing due, or only timers that stayed due after firing (left for the next
                // sweep rather than looping).
                return Ok(done);
            }
            for t in fresh {
                fired.insert((t.tenant.clone(), t.key.clone()));
                let applied = self
                    .apply(&t.tenant, &Input::Timer(t.key.clone()), now)
                    .await?;
                done.push((t, applied));
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
