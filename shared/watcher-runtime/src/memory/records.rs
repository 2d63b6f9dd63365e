//! [`Records`] on the in-memory store: the record: subjects and tasks loaded and committed by compare-and-set, and the input numbers ([`crate::store::Records`]).

use super::*;
use crate::store::Records;

#[async_trait]
impl Records for MemoryStore {
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
        self.check_injected_conflict()?;
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
        for r in commit.resolutions {
            touched += 1;
            let id = (tenant.clone(), r.agent, r.message_id);
            let Some(seq) = inner.outbox_ids.get(&id).copied() else {
                continue;
            };
            let Some(old) = inner.outbox.get(&seq).cloned() else {
                continue;
            };
            if let Some(entry) = crate::resolution::resolved(&old, &r.resolution) {
                inner.replace_outbox(seq, &old, entry);
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
}
