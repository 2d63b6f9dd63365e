//! What the watcher counts, for operators (issue 14, "Metrics and traces"): the port
//! [`Recorder`] and the pure [`tally`] of one input's effects. `serve` exports Prometheus
//! (`GET /metrics`), the AWS functions print CloudWatch Embedded Metric Format lines; both
//! implement [`Recorder`].
//!
//! Counted once per committed input: expectations raised and refused, facts that satisfied
//! something (matched) and facts that satisfied nothing (unmatched; a duplicate fact counts as
//! neither), lapses by kind. Counted once per posting of a lapse task: the attempt and its
//! outcome, and, for a delivered one, how long after the lapse was determined (`lapsedAt`) it
//! reached the agent. Open expectations are read from the per-agent live counters the store
//! keeps (`Records::load` with the agent in scope), never by listing records.

use std::collections::BTreeMap;
use std::sync::Arc;

use watcher_core::engine::Effect;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::slice::Scope;
use watcher_core::time::Instant;

use crate::store::{Records, StoreError};

/// The counts of one committed input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Expectations recorded (a duplicate delivery is not counted).
    pub raised: u64,
    /// Expectations or extension metadata refused (§8), each with its reason on the record.
    pub refused: u64,
    /// New facts that satisfied at least one expectation.
    pub facts_matched: u64,
    /// New facts that satisfied none.
    pub facts_unmatched: u64,
    /// Lapses determined, by kind.
    pub lapses: BTreeMap<LapseKind, u64>,
}

impl Tally {
    /// `true` when nothing was counted.
    pub fn is_empty(&self) -> bool {
        *self == Tally::default()
    }
}

/// Counts `effects` (one input's, in order).
pub fn tally(effects: &[Effect]) -> Tally {
    let mut t = Tally::default();
    for e in effects {
        match e {
            Effect::Raised { .. } => t.raised += 1,
            Effect::Rejected(_) => t.refused += 1,
            Effect::FactRecorded {
                duplicate: false,
                satisfied,
                ..
            } => {
                if satisfied.is_empty() {
                    t.facts_unmatched += 1;
                } else {
                    t.facts_matched += 1;
                }
            }
            Effect::Lapsed(l) => *t.lapses.entry(l.block.lapse).or_default() += 1,
            _ => {}
        }
    }
    t
}

/// What one posting of a lapse task came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttemptOutcome {
    /// The agent accepted it (`sent`).
    Delivered,
    /// A retryable failure; another attempt is scheduled.
    Retried,
    /// Given up, or a permanent error (`failed`).
    Failed,
}

impl AttemptOutcome {
    /// `delivered`, `retried` or `failed`, the metric label.
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Delivered => "delivered",
            AttemptOutcome::Retried => "retried",
            AttemptOutcome::Failed => "failed",
        }
    }
}

/// Where counts go. Implementations must be cheap and must not fail the caller.
pub trait Recorder: Send + Sync {
    /// One committed input's counts.
    fn applied(&self, tally: &Tally);
    /// One posting of a lapse task; `lateness` is `delivered at − lapsedAt` in seconds, for a
    /// delivered one.
    fn attempt(&self, outcome: AttemptOutcome, lateness: Option<f64>);
    /// Live expectations over all agents, read from the per-agent counters (by the AWS sweep;
    /// `serve` reads them when scraped instead).
    fn open_expectations(&self, _open: u64) {}
    /// One due timer whose firing failed (its record could not be read or written): skipped by
    /// the sweep and fired again next time ([`crate::watcher::Watcher::fire_due`]).
    fn timer_failed(&self) {}
    /// The open incidents of `agent` (of one tenant) by lapse kind, every kind present
    /// ([`open_incidents`]; by the AWS sweep, `serve` reads them when scraped instead).
    fn open_incidents(&self, _agent: &AgentId, _counts: &BTreeMap<LapseKind, u64>) {}
}

/// Open incidents counted per agent, at most: the agent's oldest this many are read from its
/// open lane ([`crate::store::Lane::Open`]), so one count reads at most this many entries. An
/// agent whose kinds add up to it has this many or more.
pub const OPEN_INCIDENTS_CAP: usize = 1000;

/// The open incidents (lapses not resolved, expectations-v1 §13.1) of `agent` of `tenant` by
/// lapse kind, each of the three kinds present (0 when none), counted over the agent's oldest
/// [`OPEN_INCIDENTS_CAP`] from [`crate::store::Outbox::outbox_open`]: never a listing of the
/// outbox.
///
/// # Errors
/// The store's.
pub async fn open_incidents<S: crate::store::Outbox + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
) -> Result<BTreeMap<LapseKind, u64>, StoreError> {
    let mut counts: BTreeMap<LapseKind, u64> =
        [LapseKind::Overdue, LapseKind::Skipped, LapseKind::Stalled]
            .into_iter()
            .map(|k| (k, 0))
            .collect();
    for entry in store
        .outbox_open(tenant, agent, None, OPEN_INCIDENTS_CAP)
        .await?
    {
        *counts.entry(entry.lapse).or_default() += 1;
    }
    Ok(counts)
}

/// A [`Recorder`] that counts nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRecorder;

impl Recorder for NoRecorder {
    fn applied(&self, _: &Tally) {}
    fn attempt(&self, _: AttemptOutcome, _: Option<f64>) {}
}

/// The recorder to use when none is configured.
pub fn none() -> Arc<dyn Recorder> {
    Arc::new(NoRecorder)
}

/// Seconds from `from` to `to` (negative when `to` is earlier).
pub fn seconds_between(from: Instant, to: Instant) -> f64 {
    (to.as_nanos() - from.as_nanos()) as f64 / 1e9
}

/// The agent's open (live) expectations at `now`, from the store's per-agent counter.
///
/// # Errors
/// The store's.
pub async fn open_expectations<S: Records + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
    now: Instant,
) -> Result<u64, StoreError> {
    live_count(store, tenant, agent, now, None).await
}

/// The agent's open expectations as its live-row counter holds them, without counting: every
/// expectation made live less every one closed ([`Scope::live_enough`] with no ceiling). This
/// is [`open_expectations`] plus the expectations whose last due time passed and whose firing
/// has not been committed yet. Read right after a sweep fired everything due, that is only
/// what the sweep could not fire (logged and counted as timer failures, fired at the next
/// sweep). On DynamoDB, one `BatchGetItem` of the counter's shards instead of that and a count
/// over each of the agent's 16 `live` index partitions; a store without a counter answers
/// the exact count.
///
/// # Errors
/// The store's.
pub async fn open_expectations_by_counter<S: Records + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
    now: Instant,
) -> Result<u64, StoreError> {
    live_count(store, tenant, agent, now, Some(u64::MAX)).await
}

/// The agent's live count as the store's load answers it; with `live_enough`, the store may
/// answer from its counter when the counter is at least that ([`Scope::live_enough`]).
async fn live_count<S: Records + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
    now: Instant,
    live_enough: Option<u64>,
) -> Result<u64, StoreError> {
    let mut scope = Scope::default();
    scope.agents.insert(agent.clone());
    if let Some(enough) = live_enough {
        scope.live_enough.insert(agent.clone(), enough);
    }
    let slice = store.load(tenant, &scope, now).await?;
    Ok(slice.agent_live.get(agent).copied().unwrap_or(0))
}
