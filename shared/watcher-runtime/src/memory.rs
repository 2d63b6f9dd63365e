//! An in-memory [`Store`], for tests and as the reference the conformance suite is written
//! against. One mutex; every commit is atomic.
//!
//! Every read a step makes goes through an index kept in the same commit, as in the durable
//! stores (issue 10): the agents' live counts (a counter plus the ends of their live records),
//! the timers in firing order, the outbox by (tenant, agent, messageId), by (tenant, agent,
//! taskId) and by tenant and agent in order of lapse. [`Store::work_done`] counts the records and
//! index entries each operation touches, for the conformance suite's flat-cost check.

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
    PurgeReport, Store, StoreError,
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
    agent_cards: BTreeMap<(Tenant, AgentId), (serde_json::Value, Instant)>,
    lifecycle: BTreeMap<(Tenant, AgentId, String), (serde_json::Value, Instant)>,
    /// Origin tasks followed in the store (`Store::origin_follow`).
    origins: crate::origins::OriginRows,
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
    /// Records and index entries touched so far ([`Store::work_done`]).
    work: AtomicU64,
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

#[async_trait]
impl Store for MemoryStore {
    async fn load(
        &self,
        tenant: &Tenant,
        scope: &Scope,
        now: Instant,
    ) -> Result<Slice, StoreError> {
        let inner = self.lock()?;
        let mut touched = 0u64;
        let mut slice = Slice::new(tenant.clone());
        for s in &scope.subjects {
            let state = inner
                .subjects
                .get(&(tenant.clone(), s.clone()))
                .cloned()
                .unwrap_or_else(|| SubjectState::new(s.clone()));
            touched += 1 + state.records.len() as u64 + state.facts.len() as u64;
            slice.subjects.insert(s.clone(), state);
        }
        for k in &scope.fact_keys {
            let set = inner
                .fact_index
                .get(&(tenant.clone(), k.clone()))
                .cloned()
                .unwrap_or_default();
            touched += 1 + set.len() as u64;
            slice.fact_index.insert(k.clone(), set);
        }
        for e in &scope.expectations {
            let s = inner.id_index.get(&(tenant.clone(), e.clone())).cloned();
            touched += 1;
            slice.id_index.insert(e.clone(), s);
        }
        for t in &scope.tasks {
            let rec = inner.tasks.get(&(tenant.clone(), t.clone())).cloned();
            touched += 1;
            slice.tasks.insert(t.clone(), rec);
        }
        for a in &scope.agents {
            let (count, n) = inner.live_count(tenant, a, now);
            touched += n;
            slice.agent_live.insert(a.clone(), count);
        }
        self.touched(touched);
        Ok(slice)
    }

    async fn commit(&self, tenant: &Tenant, commit: Commit) -> Result<(), StoreError> {
        self.check_write()?;
        self.check_tenant(tenant)?;
        let mut inner = self.lock()?;
        let mut touched = 0u64;
        for s in &commit.subjects {
            let current = inner
                .subjects
                .get(&(tenant.clone(), s.subject.clone()))
                .map_or(0, |x| x.version);
            touched += 1;
            if current != s.version {
                return Err(StoreError::Conflict(format!("subject {}", s.subject)));
            }
        }
        for t in &commit.tasks {
            let current = inner
                .tasks
                .get(&(tenant.clone(), t.task.clone()))
                .map_or(0, |x| x.version);
            touched += 1;
            if current != t.version {
                return Err(StoreError::Conflict(format!("task {}", t.task.task_id)));
            }
        }
        for mut s in commit.subjects {
            s.version += 1;
            if let Some(old) = inner.subjects.get(&(tenant.clone(), s.subject.clone())) {
                let old_ix = subject_index(old);
                touched += inner.index_subject(tenant, &old_ix, false);
            }
            let ix = subject_index(&s);
            touched += inner.index_subject(tenant, &ix, true);
            for e in ix.expectations {
                touched += 1;
                inner
                    .id_index
                    .insert((tenant.clone(), e), s.subject.clone());
            }
            for k in ix.fact_keys {
                touched += 1;
                inner
                    .fact_index
                    .entry((tenant.clone(), k))
                    .or_default()
                    .insert(s.subject.clone());
            }
            touched += 1 + s.records.len() as u64 + s.facts.len() as u64;
            inner
                .subjects
                .insert((tenant.clone(), s.subject.clone()), s);
        }
        for mut t in commit.tasks {
            t.version += 1;
            touched += 1;
            inner.tasks.insert((tenant.clone(), t.task.clone()), t);
        }
        for o in commit.outbox {
            touched += 1;
            let id = (o.tenant.clone(), o.agent.clone(), o.message_id.clone());
            if !inner.outbox_ids.contains_key(&id) {
                inner.outbox_seq += 1;
                let seq = inner.outbox_seq;
                inner.index_outbox(seq, &o, true);
                inner.outbox.insert(seq, o);
            }
        }
        for r in commit.rejections {
            touched += 1;
            inner.rejections.push((tenant.clone(), r));
        }
        self.touched(touched);
        Ok(())
    }

    async fn next_sequence(&self) -> Result<u64, StoreError> {
        let mut inner = self.lock()?;
        inner.sequence += 1;
        self.touched(1);
        Ok(inner.sequence)
    }

    async fn due_timers(&self, until: Instant, limit: usize) -> Result<Vec<DueTimer>, StoreError> {
        let inner = self.lock()?;
        let due: Vec<DueTimer> = inner
            .timers
            .iter()
            .take_while(|(at, ..)| *at <= until)
            .take(limit)
            .map(|(at, order, _, key, tenant)| DueTimer {
                at: *at,
                order: *order,
                tenant: tenant.clone(),
                key: key.clone(),
            })
            .collect();
        self.touched(due.len() as u64 + 1);
        Ok(due)
    }

    async fn next_timer(&self) -> Result<Option<DueTimer>, StoreError> {
        let inner = self.lock()?;
        self.touched(1);
        Ok(inner
            .timers
            .iter()
            .next()
            .map(|(at, order, _, key, tenant)| DueTimer {
                at: *at,
                order: *order,
                tenant: tenant.clone(),
                key: key.clone(),
            }))
    }

    async fn subject(
        &self,
        tenant: &Tenant,
        subject: &Subject,
    ) -> Result<Option<SubjectState>, StoreError> {
        self.touched(1);
        Ok(self
            .lock()?
            .subjects
            .get(&(tenant.clone(), subject.clone()))
            .cloned())
    }

    async fn all_records(&self) -> Result<Vec<ExpectationRecord>, StoreError> {
        let inner = self.lock()?;
        let mut all: Vec<ExpectationRecord> = inner
            .subjects
            .values()
            .flat_map(|s| s.records.iter().cloned())
            .collect();
        all.sort_by_key(|r| r.order);
        Ok(all)
    }

    async fn rejections(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Vec<Rejection>, StoreError> {
        Ok(self
            .lock()?
            .rejections
            .iter()
            .filter(|(t, r)| t == tenant && &r.agent == agent)
            .map(|(_, r)| r.clone())
            .collect())
    }

    /// A filter over the whole outbox (the delivery loop's sweep, not a request path).
    async fn outbox_due(&self, now: Instant, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        Ok(self
            .lock()?
            .outbox
            .values()
            .filter(|o| o.delivery == DeliveryState::Queued && o.next_attempt_at <= now)
            .take(limit)
            .cloned()
            .collect())
    }

    async fn outbox_get(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        self.touched(1);
        Ok(inner
            .outbox_ids
            .get(&(tenant.clone(), agent.clone(), message_id.to_string()))
            .and_then(|seq| inner.outbox.get(seq))
            .cloned())
    }

    async fn outbox_update(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        self.check_write()?;
        let mut inner = self.lock()?;
        self.touched(1);
        let id = (
            entry.tenant.clone(),
            entry.agent.clone(),
            entry.message_id.clone(),
        );
        let Some(seq) = inner.outbox_ids.get(&id).copied() else {
            return Ok(());
        };
        let Some(old) = inner.outbox.get(&seq).cloned() else {
            return Ok(());
        };
        if old.delivery != DeliveryState::Sent || entry.delivery == DeliveryState::Sent {
            let mut entry = entry.clone();
            keep_task_progress(&mut entry, &old);
            keep_lease(&mut entry, &old);
            inner.replace_outbox(seq, &old, entry);
        }
        Ok(())
    }

    async fn outbox_claim(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        lease: &Lease,
        now: Instant,
    ) -> Result<Claim, StoreError> {
        self.check_write()?;
        let mut inner = self.lock()?;
        self.touched(1);
        let id = (tenant.clone(), agent.clone(), message_id.to_string());
        let Some(old) = inner
            .outbox_ids
            .get(&id)
            .and_then(|seq| inner.outbox.get(seq).map(|o| (*seq, o.clone())))
        else {
            return Ok(Claim::Gone);
        };
        let (seq, old) = old;
        let decided = claim(&old, lease, now);
        if let Claim::Claimed { entry, .. } = &decided {
            inner.replace_outbox(seq, &old, entry.clone());
        }
        Ok(decided)
    }

    async fn outbox_task_state(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        task_id: &str,
        state: TaskState,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        self.check_write()?;
        let mut inner = self.lock()?;
        self.touched(1);
        let id = (tenant.clone(), agent.clone(), message_id.to_string());
        let Some(seq) = inner.outbox_ids.get(&id).copied() else {
            return Ok(None);
        };
        let Some(old) = inner.outbox.get(&seq).cloned() else {
            return Ok(None);
        };
        let Some(updated) = with_task_state(&old, task_id, state) else {
            return Ok(None);
        };
        inner.replace_outbox(seq, &old, updated.clone());
        Ok(Some(updated))
    }

    /// A filter over the agent's entries (index by (tenant, agent)).
    async fn outbox_of_agent(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        delivery: DeliveryState,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        let Some(seqs) = inner.outbox_agent.get(&(tenant.clone(), agent.clone())) else {
            return Ok(Vec::new());
        };
        let mut found: Vec<(u64, &OutboxEntry)> = seqs
            .iter()
            .filter_map(|seq| inner.outbox.get(seq).map(|o| (*seq, o)))
            .filter(|(_, o)| {
                o.delivery == delivery && due_by.is_none_or(|d| o.next_attempt_at <= d)
            })
            .collect();
        found.sort_by_key(|(seq, o)| (o.next_attempt_at, *seq));
        Ok(found
            .into_iter()
            .take(limit)
            .map(|(_, o)| o.clone())
            .collect())
    }

    async fn origin_follow(
        &self,
        origin: &crate::origins::FollowedOrigin,
    ) -> Result<bool, StoreError> {
        self.check_write()?;
        self.touched(1);
        Ok(self.lock()?.origins.follow(origin))
    }

    async fn origins_due(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Instant,
        limit: usize,
    ) -> Result<Vec<crate::origins::FollowedOrigin>, StoreError> {
        let due = self.lock()?.origins.due(tenant, agent, due_by, limit);
        self.touched(due.len() as u64);
        Ok(due)
    }

    async fn origin_reschedule(
        &self,
        key: &crate::origins::OriginKey,
        at: Instant,
    ) -> Result<(), StoreError> {
        self.check_write()?;
        self.touched(1);
        self.lock()?.origins.reschedule(key, at);
        Ok(())
    }

    async fn origin_stop(&self, key: &crate::origins::OriginKey) -> Result<(), StoreError> {
        self.check_write()?;
        self.touched(1);
        self.lock()?.origins.stop(key);
        Ok(())
    }

    async fn outbox_following(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        let Some(seqs) = inner.outbox_agent.get(&(tenant.clone(), agent.clone())) else {
            return Ok(Vec::new());
        };
        let mut found: Vec<(Instant, u64, &OutboxEntry)> = seqs
            .iter()
            .filter_map(|seq| inner.outbox.get(seq).map(|o| (*seq, o)))
            .filter_map(|(seq, o)| o.follow_at.map(|at| (at, seq, o)))
            .filter(|(at, _, _)| due_by.is_none_or(|d| *at <= d))
            .collect();
        found.sort_by_key(|(at, seq, _)| (*at, *seq));
        Ok(found
            .into_iter()
            .take(limit)
            .map(|(_, _, o)| o.clone())
            .collect())
    }

    async fn outbox_by_task(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        let key = (tenant.clone(), agent.clone(), task_id.to_string());
        let found: Vec<OutboxEntry> = inner
            .outbox_tasks
            .get(&key)
            .into_iter()
            .flatten()
            .filter_map(|seq| inner.outbox.get(seq).cloned())
            .collect();
        self.touched(1 + found.len() as u64);
        Ok(found)
    }

    async fn lapses_page(
        &self,
        tenant: &Tenant,
        query: &LapseQuery,
    ) -> Result<LapsePage, StoreError> {
        let inner = self.lock()?;
        let positions = match &query.agent {
            Some(a) => inner.outbox_agent.get(&(tenant.clone(), a.clone())),
            None => inner.outbox_tenant.get(tenant),
        };
        let Some(positions) = positions else {
            return Ok(LapsePage::default());
        };
        let from = query.after.map_or(0, |a| a.saturating_add(1));
        let limit = query.limit.max(1);
        let budget = lapse_scan_budget(limit);
        let mut page = LapsePage::default();
        let mut looked = 0usize;
        let mut last = None;
        for seq in positions.range(from..) {
            if page.entries.len() >= limit || looked >= budget {
                page.next = last;
                break;
            }
            looked += 1;
            last = Some(*seq);
            if let Some(o) = inner.outbox.get(seq).filter(|o| query.matches(o)) {
                page.entries.push((*seq, o.clone()));
            }
        }
        self.touched(looked as u64 + 1);
        Ok(page)
    }

    fn work_done(&self) -> Option<u64> {
        Some(self.work.load(Ordering::Relaxed))
    }

    async fn probe_write(&self, now: Instant) -> Result<(), StoreError> {
        self.check_write()?;
        self.lock()?.probed_at = Some(now);
        Ok(())
    }

    async fn put_agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        card: &serde_json::Value,
        read_at: Instant,
    ) -> Result<(), StoreError> {
        self.check_write()?;
        self.lock()?
            .agent_cards
            .insert((tenant.clone(), agent.clone()), (card.clone(), read_at));
        Ok(())
    }

    async fn agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        Ok(self
            .lock()?
            .agent_cards
            .get(&(tenant.clone(), agent.clone()))
            .cloned())
    }

    async fn put_lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
        descriptor: &serde_json::Value,
        probed_at: Instant,
    ) -> Result<(), StoreError> {
        self.check_write()?;
        self.lock()?.lifecycle.insert(
            (tenant.clone(), agent.clone(), protocol_version.to_owned()),
            (descriptor.clone(), probed_at),
        );
        Ok(())
    }

    async fn lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        Ok(self
            .lock()?
            .lifecycle
            .get(&(tenant.clone(), agent.clone(), protocol_version.to_owned()))
            .cloned())
    }

    async fn lapses(&self, tenant: &Tenant) -> Result<Vec<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        Ok(inner
            .outbox_tenant
            .get(tenant)
            .into_iter()
            .flatten()
            .filter_map(|seq| inner.outbox.get(seq).cloned())
            .collect())
    }

    async fn purge(&self, before: Instant) -> Result<PurgeReport, StoreError> {
        self.check_write()?;
        let mut inner = self.lock()?;
        let inner = &mut *inner;
        let mut report = PurgeReport::default();

        let gone: Vec<(Tenant, Subject)> = inner
            .subjects
            .iter()
            .filter(|(_, state)| subject_retention(state).purgeable(before))
            .map(|(key, _)| key.clone())
            .collect();
        for key in &gone {
            if let Some(state) = inner.subjects.remove(key) {
                let ix = subject_index(&state);
                inner.index_subject(&key.0, &ix, false);
            }
            report.subjects += 1;
        }
        let gone: BTreeSet<(Tenant, Subject)> = gone.into_iter().collect();
        inner
            .id_index
            .retain(|(t, _), s| !gone.contains(&(t.clone(), s.clone())));
        inner.fact_index.retain(|(t, _), subjects| {
            subjects.retain(|s| !gone.contains(&(t.clone(), s.clone())));
            !subjects.is_empty()
        });

        let subjects = &inner.subjects;
        let before_tasks = inner.tasks.len();
        inner.tasks.retain(|(t, _), task| {
            let stored = task
                .subjects
                .iter()
                .any(|s| subjects.contains_key(&(t.clone(), s.clone())));
            !task_retention(task, stored).purgeable(before)
        });
        report.tasks = (before_tasks - inner.tasks.len()) as u64;

        let old: Vec<(u64, OutboxEntry)> = inner
            .outbox
            .iter()
            .filter(|(_, o)| outbox_retention(o).purgeable(before))
            .map(|(seq, o)| (*seq, o.clone()))
            .collect();
        for (seq, o) in old {
            inner.index_outbox(seq, &o, false);
            inner.outbox.remove(&seq);
            report.outbox += 1;
        }

        let before_rejections = inner.rejections.len();
        inner
            .rejections
            .retain(|(_, r)| !rejection_retention(r).purgeable(before));
        report.rejections = (before_rejections - inner.rejections.len()) as u64;
        inner.origins.purge(before);
        Ok(report)
    }
}
