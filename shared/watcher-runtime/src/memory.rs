//! An in-memory [`Store`](crate::store::Store), for tests and as the reference the conformance suite is written
//! against. One mutex; every commit is atomic.
//!
//! Every read a step makes goes through an index kept in the same commit, as in the durable
//! stores (issue 10): the agents' live counts (a counter plus the ends of their live records),
//! the timers in firing order, the outbox by (tenant, agent, messageId), by (tenant, agent,
//! taskId) and by tenant and agent in order of lapse. [`Upkeep::work_done`](crate::store::Upkeep::work_done) counts the records and
//! index entries each operation touches, for the conformance suite's flat-cost check.
mod cards;
mod notify;
mod origins;
mod outbox;
mod records;
mod rejections;
mod timers;
mod upkeep;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use a2a_types::TaskState;
use async_trait::async_trait;
use watcher_core::engine::{LiveUntil, Rejection, TimerKey};
use watcher_core::ids::{AgentId, ExpectationRef, FactKey, Subject, TaskRef, Tenant};
use watcher_core::record::{ExpectationRecord, RaiseOrder};
use watcher_core::slice::{Scope, Slice, SubjectState, TaskRecord};
use watcher_core::time::Instant;

use crate::index::{subject_index, SubjectIndex};
use crate::lease::{claim, keep_lease, Lease};
use crate::retention::{outbox_retention, rejection_retention, subject_retention, task_retention};
use crate::store::{
    lapse_scan_budget, Claim, Commit, DeliveryState, DueTimer, LapsePage, LapseQuery, OutboxEntry,
    PurgeReport, StoreError,
};
use crate::task_progress::{keep_task_progress, with_task_state};

/// A timer in firing order: instant, raising order, deadline before horizon, then identity.
type TimerRow = (
    Instant,
    RaiseOrder,
    watcher_core::engine::TimerKind,
    TimerKey,
    Tenant,
);

#[derive(Default)]
struct Inner {
    subjects: BTreeMap<(Tenant, Subject), SubjectState>,
    tasks: BTreeMap<(Tenant, TaskRef), TaskRecord>,
    fact_index: BTreeMap<(Tenant, FactKey), BTreeSet<Subject>>,
    id_index: BTreeMap<(Tenant, ExpectationRef), Subject>,
    /// Pending timers of every tenant, in firing order (with the kind in the key's order).
    timers: BTreeSet<TimerRow>,
    /// Per (tenant, agent): records that can still lapse (live rows: not closed).
    agent_live_rows: BTreeMap<(Tenant, AgentId), u64>,
    /// Per (tenant, agent): the ends of its live rows that have one, as a multiset.
    agent_live_ends: BTreeMap<(Tenant, AgentId), BTreeMap<Instant, u64>>,
    /// Lapse tasks by position (insertion order).
    outbox: BTreeMap<u64, OutboxEntry>,
    /// The last position handed out.
    outbox_seq: u64,
    /// (tenant, agent, messageId) → position.
    outbox_ids: BTreeMap<(Tenant, AgentId, String), u64>,
    /// (tenant, agent, taskId) → positions.
    outbox_tasks: BTreeMap<(Tenant, AgentId, String), BTreeSet<u64>>,
    /// Positions per tenant and per (tenant, agent), in order of lapse.
    outbox_tenant: BTreeMap<Tenant, BTreeSet<u64>>,
    outbox_agent: BTreeMap<(Tenant, AgentId), BTreeSet<u64>>,
    rejections: Vec<(Tenant, Rejection)>,
    sequence: u64,
    probed_at: Option<Instant>,
    /// Agent cards and lifecycle descriptors (`Cards`): (tenant, agent, the descriptor's
    /// protocol version, `None` for the card) → (document, when read or probed).
    cards: BTreeMap<(Tenant, AgentId, Option<String>), (serde_json::Value, Instant)>,
    /// Origin tasks followed in the store (`Origins::origin_follow`).
    origins: crate::origins::OriginRows,
    /// Notification channels' progress (`Notifications`).
    channels: BTreeMap<(Tenant, String), crate::store::ChannelState>,
}

impl Inner {
    /// Removes (`sign` -1) or adds (+1) what `ix` of a subject of `tenant` puts in the timer and
    /// live-count indexes. Answers the entries touched.
    fn index_subject(&mut self, tenant: &Tenant, ix: &SubjectIndex, add: bool) -> u64 {
        let mut touched = 0;
        for (key, at, order) in &ix.timers {
            let row = (*at, *order, key.kind, key.clone(), tenant.clone());
            if add {
                self.timers.insert(row);
            } else {
                self.timers.remove(&row);
            }
            touched += 1;
        }
        for (_, agent, until) in &ix.live {
            let end = match until {
                LiveUntil::Closed => continue,
                LiveUntil::Indefinite => None,
                LiveUntil::Until(at) => Some(*at),
            };
            touched += 1;
            let who = (tenant.clone(), agent.clone());
            let rows = self.agent_live_rows.entry(who.clone()).or_default();
            if add {
                *rows += 1;
            } else {
                *rows = rows.saturating_sub(1);
            }
            if let Some(end) = end {
                let ends = self.agent_live_ends.entry(who).or_default();
                let n = ends.entry(end).or_default();
                if add {
                    *n += 1;
                } else {
                    *n = n.saturating_sub(1);
                    if *n == 0 {
                        ends.remove(&end);
                    }
                }
            }
        }
        touched
    }

    /// Indexes the outbox entry at `seq` (`add`) or drops it from the indexes.
    fn index_outbox(&mut self, seq: u64, o: &OutboxEntry, add: bool) {
        let id = (o.tenant.clone(), o.agent.clone(), o.message_id.clone());
        let who = (o.tenant.clone(), o.agent.clone());
        if add {
            self.outbox_ids.insert(id, seq);
            self.outbox_tenant
                .entry(o.tenant.clone())
                .or_default()
                .insert(seq);
            self.outbox_agent.entry(who).or_default().insert(seq);
        } else {
            self.outbox_ids.remove(&id);
            if let Some(set) = self.outbox_tenant.get_mut(&o.tenant) {
                set.remove(&seq);
            }
            if let Some(set) = self.outbox_agent.get_mut(&who) {
                set.remove(&seq);
            }
        }
        self.index_task(seq, o, add);
    }

    /// Replaces the entry at `seq` (now `old`) with `entry`, moving its task-id index row.
    fn replace_outbox(&mut self, seq: u64, old: &OutboxEntry, entry: OutboxEntry) {
        self.index_task(seq, old, false);
        self.index_task(seq, &entry, true);
        self.outbox.insert(seq, entry);
    }

    fn index_task(&mut self, seq: u64, o: &OutboxEntry, add: bool) {
        let Some(task) = &o.task_id else { return };
        let key = (o.tenant.clone(), o.agent.clone(), task.clone());
        if add {
            self.outbox_tasks.entry(key).or_default().insert(seq);
        } else if let Some(set) = self.outbox_tasks.get_mut(&key) {
            set.remove(&seq);
            if set.is_empty() {
                self.outbox_tasks.remove(&key);
            }
        }
    }

    /// How many of `agent`'s records are live at `now`: the live rows less those whose end is
    /// before `now` (the expired range only). Answers the count and the entries touched.
    fn live_count(&self, tenant: &Tenant, agent: &AgentId, now: Instant) -> (u64, u64) {
        let who = (tenant.clone(), agent.clone());
        let rows = self.agent_live_rows.get(&who).copied().unwrap_or(0);
        let mut touched = 1;
        let mut expired = 0;
        if let Some(ends) = self.agent_live_ends.get(&who) {
            for (_, n) in ends.range(..now) {
                expired += n;
                touched += 1;
            }
        }
        (rows.saturating_sub(expired), touched)
    }
}

/// The in-memory store.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    /// While set, every write fails ([`MemoryStore::fail_writes`]).
    write_fault: AtomicBool,
    /// Commits of this tenant fail ([`MemoryStore::fail_commits_of`]).
    tenant_fault: Mutex<Option<Tenant>>,
    /// Records and index entries touched so far ([`Upkeep::work_done`]).
    work: AtomicU64,
    /// The next this many commits lose to a writer that is not there
    /// ([`MemoryStore::conflict_next_commits`]).
    conflicts_left: AtomicU64,
}

impl MemoryStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Makes every write (`commit`, `outbox_update`, `probe_write`, `purge`) fail with a
    /// [`StoreError::Backend`] while `on` — a full disk, for tests of what callers do then.
    /// Reads keep working.
    pub fn fail_writes(&self, on: bool) {
        self.write_fault.store(on, Ordering::SeqCst);
    }

    /// Makes every `commit` for `tenant` fail with a [`StoreError::Backend`] (`None`: none
    /// fails) — one subject's record that cannot be written, for tests of what the sweep does
    /// with the timers after it. Other tenants' commits and every read keep working.
    pub fn fail_commits_of(&self, tenant: Option<Tenant>) {
        *self
            .tenant_fault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = tenant;
    }

    /// Makes the next `n` commits fail with [`StoreError::Conflict`], writing nothing, as if
    /// another writer had moved what they loaded: for tests of how callers retry a lost
    /// compare-and-set (`Watcher`'s backoff).
    pub fn conflict_next_commits(&self, n: u64) {
        self.conflicts_left.store(n, Ordering::SeqCst);
    }

    fn check_injected_conflict(&self) -> Result<(), StoreError> {
        let took = self
            .conflicts_left
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if took.is_ok() {
            return Err(StoreError::Conflict(
                "a subject (conflict injected by the test)".into(),
            ));
        }
        Ok(())
    }

    fn check_tenant(&self, tenant: &Tenant) -> Result<(), StoreError> {
        let fault = self
            .tenant_fault
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if fault.as_ref() == Some(tenant) {
            return Err(StoreError::backend(std::io::Error::other(format!(
                "commits of tenant {tenant} fail (injected)"
            ))));
        }
        Ok(())
    }

    fn check_write(&self) -> Result<(), StoreError> {
        if self.write_fault.load(Ordering::SeqCst) {
            return Err(StoreError::backend(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "no space left on device (injected)",
            )));
        }
        Ok(())
    }

    fn lock(&self) -> Result<std::sync::MutexGuard<'_, Inner>, StoreError> {
        self.inner
            .lock()
            .map_err(|_| StoreError::Corrupt("memory store lock poisoned".into()))
    }

    fn touched(&self, n: u64) {
        self.work.fetch_add(n, Ordering::Relaxed);
    }
}
