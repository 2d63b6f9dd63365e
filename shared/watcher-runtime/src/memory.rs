//! An in-memory [`Store`], for tests and as the reference the conformance suite is written
//! against. One mutex; every commit is atomic.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use async_trait::async_trait;
use watcher_core::engine::Rejection;
use watcher_core::ids::{AgentId, ExpectationRef, FactKey, Subject, TaskRef, Tenant};
use watcher_core::record::ExpectationRecord;
use watcher_core::slice::{Scope, Slice, SubjectState, TaskRecord};
use watcher_core::time::Instant;

use crate::index::subject_index;
use crate::retention::{outbox_retention, rejection_retention, subject_retention, task_retention};
use crate::store::{Commit, DeliveryState, DueTimer, OutboxEntry, PurgeReport, Store, StoreError};

#[derive(Default)]
struct Inner {
    subjects: BTreeMap<(Tenant, Subject), SubjectState>,
    tasks: BTreeMap<(Tenant, TaskRef), TaskRecord>,
    fact_index: BTreeMap<(Tenant, FactKey), BTreeSet<Subject>>,
    id_index: BTreeMap<(Tenant, ExpectationRef), Subject>,
    outbox: Vec<OutboxEntry>,
    rejections: Vec<(Tenant, Rejection)>,
    sequence: u64,
    probed_at: Option<Instant>,
    agent_cards: BTreeMap<(Tenant, AgentId), (serde_json::Value, Instant)>,
    lifecycle: BTreeMap<(Tenant, AgentId, String), (serde_json::Value, Instant)>,
}

/// The in-memory store.
#[derive(Default)]
pub struct MemoryStore {
    inner: Mutex<Inner>,
    /// While set, every write fails ([`MemoryStore::fail_writes`]).
    write_fault: AtomicBool,
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
        let mut slice = Slice::new(tenant.clone());
        for s in &scope.subjects {
            let state = inner
                .subjects
                .get(&(tenant.clone(), s.clone()))
                .cloned()
                .unwrap_or_else(|| SubjectState::new(s.clone()));
            slice.subjects.insert(s.clone(), state);
        }
        for k in &scope.fact_keys {
            let set = inner
                .fact_index
                .get(&(tenant.clone(), k.clone()))
                .cloned()
                .unwrap_or_default();
            slice.fact_index.insert(k.clone(), set);
        }
        for e in &scope.expectations {
            let s = inner.id_index.get(&(tenant.clone(), e.clone())).cloned();
            slice.id_index.insert(e.clone(), s);
        }
        for t in &scope.tasks {
            let rec = inner.tasks.get(&(tenant.clone(), t.clone())).cloned();
            slice.tasks.insert(t.clone(), rec);
        }
        for a in &scope.agents {
            let count = inner
                .subjects
                .iter()
                .filter(|((t, _), _)| t == tenant)
                .flat_map(|(_, st)| st.records.iter())
                .filter(|r| &r.agent == a && watcher_core::engine::is_live(r, now))
                .count() as u64;
            slice.agent_live.insert(a.clone(), count);
        }
        Ok(slice)
    }

    async fn commit(&self, tenant: &Tenant, commit: Commit) -> Result<(), StoreError> {
        self.check_write()?;
        let mut inner = self.lock()?;
        for s in &commit.subjects {
            let current = inner
                .subjects
                .get(&(tenant.clone(), s.subject.clone()))
                .map_or(0, |x| x.version);
            if current != s.version {
                return Err(StoreError::Conflict(format!("subject {}", s.subject)));
            }
        }
        for t in &commit.tasks {
            let current = inner
                .tasks
                .get(&(tenant.clone(), t.task.clone()))
                .map_or(0, |x| x.version);
            if current != t.version {
                return Err(StoreError::Conflict(format!("task {}", t.task.task_id)));
            }
        }
        for mut s in commit.subjects {
            s.version += 1;
            let ix = subject_index(&s);
            for e in ix.expectations {
                inner
                    .id_index
                    .insert((tenant.clone(), e), s.subject.clone());
            }
            for k in ix.fact_keys {
                inner
                    .fact_index
                    .entry((tenant.clone(), k))
                    .or_default()
                    .insert(s.subject.clone());
            }
            inner
                .subjects
                .insert((tenant.clone(), s.subject.clone()), s);
        }
        for mut t in commit.tasks {
            t.version += 1;
            inner.tasks.insert((tenant.clone(), t.task.clone()), t);
        }
        for o in commit.outbox {
            let exists = inner.outbox.iter().any(|x| {
                x.tenant == o.tenant && x.agent == o.agent && x.message_id == o.message_id
            });
            if !exists {
                inner.outbox.push(o);
            }
        }
        for r in commit.rejections {
            inner.rejections.push((tenant.clone(), r));
        }
        Ok(())
    }

    async fn next_sequence(&self) -> Result<u64, StoreError> {
        let mut inner = self.lock()?;
        inner.sequence += 1;
        Ok(inner.sequence)
    }

    async fn due_timers(&self, until: Instant, limit: usize) -> Result<Vec<DueTimer>, StoreError> {
        let inner = self.lock()?;
        let mut due: Vec<DueTimer> = Vec::new();
        for ((tenant, _), state) in &inner.subjects {
            for (key, at, order) in subject_index(state).timers {
                if at <= until {
                    due.push(DueTimer {
                        at,
                        order,
                        tenant: tenant.clone(),
                        key,
                    });
                }
            }
        }
        due.sort_by_key(|t| (t.at, t.order, t.key.kind));
        due.truncate(limit);
        Ok(due)
    }

    async fn next_timer(&self) -> Result<Option<DueTimer>, StoreError> {
        let inner = self.lock()?;
        let mut best: Option<DueTimer> = None;
        for ((tenant, _), state) in &inner.subjects {
            for (key, at, order) in subject_index(state).timers {
                let t = DueTimer {
                    at,
                    order,
                    tenant: tenant.clone(),
                    key,
                };
                let better = best
                    .as_ref()
                    .is_none_or(|b| (t.at, t.order, t.key.kind) < (b.at, b.order, b.key.kind));
                if better {
                    best = Some(t);
                }
            }
        }
        Ok(best)
    }

    async fn subject(
        &self,
        tenant: &Tenant,
        subject: &Subject,
    ) -> Result<Option<SubjectState>, StoreError> {
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

    async fn outbox_due(&self, now: Instant, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        Ok(self
            .lock()?
            .outbox
            .iter()
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
        Ok(self
            .lock()?
            .outbox
            .iter()
            .find(|o| &o.tenant == tenant && &o.agent == agent && o.message_id == message_id)
            .cloned())
    }

    async fn outbox_update(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        self.check_write()?;
        let mut inner = self.lock()?;
        if let Some(o) = inner.outbox.iter_mut().find(|o| {
            o.tenant == entry.tenant && o.agent == entry.agent && o.message_id == entry.message_id
        }) {
            if o.delivery != DeliveryState::Sent || entry.delivery == DeliveryState::Sent {
                *o = entry.clone();
            }
        }
        Ok(())
    }

    /// A filter over the whole outbox: this store is for tests and small embeddings, where a
    /// separate index would only duplicate the vector.
    async fn outbox_of_agent(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        delivery: DeliveryState,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        let mut found: Vec<(usize, &OutboxEntry)> = inner
            .outbox
            .iter()
            .enumerate()
            .filter(|(_, o)| {
                &o.tenant == tenant
                    && &o.agent == agent
                    && o.delivery == delivery
                    && due_by.is_none_or(|d| o.next_attempt_at <= d)
            })
            .collect();
        found.sort_by_key(|(i, o)| (o.next_attempt_at, *i));
        Ok(found
            .into_iter()
            .take(limit)
            .map(|(_, o)| o.clone())
            .collect())
    }

    async fn outbox_following(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let inner = self.lock()?;
        let mut found: Vec<(Instant, usize, &OutboxEntry)> = inner
            .outbox
            .iter()
            .enumerate()
            .filter(|(_, o)| &o.tenant == tenant && &o.agent == agent)
            .filter_map(|(i, o)| o.follow_at.map(|at| (at, i, o)))
            .filter(|(at, _, _)| due_by.is_none_or(|d| *at <= d))
            .collect();
        found.sort_by_key(|(at, i, _)| (*at, *i));
        Ok(found
            .into_iter()
            .take(limit)
            .map(|(_, _, o)| o.clone())
            .collect())
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
        Ok(self
            .lock()?
            .outbox
            .iter()
            .filter(|o| &o.tenant == tenant)
            .cloned()
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
            inner.subjects.remove(key);
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

        let before_outbox = inner.outbox.len();
        inner
            .outbox
            .retain(|o| !outbox_retention(o).purgeable(before));
        report.outbox = (before_outbox - inner.outbox.len()) as u64;

        let before_rejections = inner.rejections.len();
        inner
            .rejections
            .retain(|(_, r)| !rejection_retention(r).purgeable(before));
        report.rejections = (before_rejections - inner.rejections.len()) as u64;
        Ok(report)
    }
}
