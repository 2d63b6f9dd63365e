//! [`Upkeep`] on the in-memory store: the health probe's write, retention's purge and the work counter ([`crate::store::Upkeep`]).

use super::*;
use crate::store::Upkeep;

#[async_trait]
impl Upkeep for MemoryStore {
    fn work_done(&self) -> Option<u64> {
        Some(self.work.load(Ordering::Relaxed))
    }

    async fn probe_write(&self, now: Instant) -> Result<(), StoreError> {
        self.check_write()?;
        self.lock()?.probed_at = Some(now);
        Ok(())
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
