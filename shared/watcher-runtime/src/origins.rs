//! The origin tasks the watcher follows with `GetTask` (issue 11 item 5, origin-task
//! reconciliation): for an agent that is not lifecycle-trusted
//! (docs/specs/agent-card-vs-lifecycle-conformance.md: the card alone never promotes), each task
//! that raised open expectations is asked for its state, backing off, until it is terminal, so a
//! cancel whose push never came still withdraws.
//!
//! Both deployments keep the followed tasks in the store (`Watcher::follow_origin`,
//! `Origins::origin_follow`, `Directory::set_origins_in_store`), so a restart or another function
//! instance forgets none. [`OriginQueue`] is the earlier in-memory, bounded form
//! ([`OriginQueue::capacity`]), used only when the store is not (nothing here survives a
//! restart); it also carries the first poll's delay ([`OriginQueue::first_poll`]). Neither loses
//! a withdrawal for good: before any lapse task of such an agent is sent, its origin's state is
//! checked once (watcher-delivery `reconcile`). Every operation costs the
//! logarithm of the tasks followed; nothing scans the open expectations.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;

/// Origin tasks followed at once by default (`[delivery] reconcile_origins`).
pub const DEFAULT_CAPACITY: usize = 10_000;

/// One followed origin task: (tenant, agent, task id).
pub type OriginKey = (Tenant, AgentId, String);

/// A followed origin task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FollowedOrigin {
    /// Tenant of the agent.
    pub tenant: Tenant,
    /// The agent whose task it is.
    pub agent: AgentId,
    /// The A2A task id.
    pub task_id: String,
    /// When following began (UTC), for the polls' backoff and give-up age.
    pub since: Instant,
    /// When to ask next (UTC).
    pub next_at: Instant,
}

impl FollowedOrigin {
    /// Its key.
    pub fn key(&self) -> OriginKey {
        (
            self.tenant.clone(),
            self.agent.clone(),
            self.task_id.clone(),
        )
    }
}

#[derive(Debug, Default)]
struct Inner {
    by_key: BTreeMap<OriginKey, FollowedOrigin>,
    by_due: BTreeSet<(Instant, OriginKey)>,
}

/// The bounded queue of followed origin tasks, earliest next poll first. Thread-safe; share it
/// behind an `Arc`.
#[derive(Debug)]
pub struct OriginQueue {
    inner: Mutex<Inner>,
    capacity: std::sync::atomic::AtomicUsize,
    /// Nanoseconds from [`OriginQueue::follow_from`] to the first poll.
    first_nanos: std::sync::atomic::AtomicU64,
}

/// The first poll comes this long after following begins, by default (`[delivery] poll_first`).
pub const DEFAULT_FIRST_POLL: std::time::Duration = std::time::Duration::from_secs(10);

/// Off (capacity 0): a deployment that polls the queue turns it on ([`OriginQueue::set_capacity`];
/// `serve` does, from `[delivery] reconcile_origins`). So a deployment without a poller (the
/// Lambda functions) never fills it.
impl Default for OriginQueue {
    fn default() -> Self {
        OriginQueue::new(0)
    }
}

/// What [`OriginQueue::follow`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Followed {
    /// Now followed; first poll at the instant given.
    Added,
    /// Already followed; unchanged.
    Already,
    /// Not followed: the queue holds `capacity` tasks (or reconciliation is off, capacity 0).
    Full,
}

impl OriginQueue {
    /// A queue holding at most `capacity` tasks (0: reconciliation off).
    pub fn new(capacity: usize) -> Self {
        OriginQueue {
            inner: Mutex::default(),
            capacity: std::sync::atomic::AtomicUsize::new(capacity),
            first_nanos: std::sync::atomic::AtomicU64::new(DEFAULT_FIRST_POLL.as_nanos() as u64),
        }
    }

    /// Sets how long after following begins the first poll comes (at start, from
    /// `[delivery] poll_first`).
    pub fn set_first_poll(&self, first: std::time::Duration) {
        self.first_nanos.store(
            u64::try_from(first.as_nanos()).unwrap_or(u64::MAX),
            std::sync::atomic::Ordering::Relaxed,
        );
    }

    /// Follows (tenant, agent, task) from `now`, the first poll [`OriginQueue::set_first_poll`]
    /// later; see [`OriginQueue::follow`].
    pub fn follow_from(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
        now: Instant,
    ) -> Followed {
        let nanos = self.first_nanos.load(std::sync::atomic::Ordering::Relaxed);
        let first = jiff::SignedDuration::from_nanos(i64::try_from(nanos).unwrap_or(i64::MAX));
        let first_at = now.checked_add(first).unwrap_or(Instant::MAX);
        self.follow(tenant, agent, task_id, now, first_at)
    }

    /// How long after following begins the first poll comes ([`OriginQueue::set_first_poll`]).
    pub fn first_poll(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.first_nanos.load(std::sync::atomic::Ordering::Relaxed))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Most tasks followed at once; 0 means reconciliation is off.
    pub fn capacity(&self) -> usize {
        self.capacity.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Sets [`OriginQueue::capacity`] (at start, from the configuration). Tasks already followed
    /// stay.
    pub fn set_capacity(&self, capacity: usize) {
        self.capacity
            .store(capacity, std::sync::atomic::Ordering::Relaxed);
    }

    /// Whether reconciliation is on (capacity above 0).
    pub fn enabled(&self) -> bool {
        self.capacity() > 0
    }

    /// Follows (tenant, agent, task) from `now`, first poll at `first_at`; a task already followed
    /// keeps its schedule.
    pub fn follow(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
        now: Instant,
        first_at: Instant,
    ) -> Followed {
        let capacity = self.capacity();
        let key = (tenant.clone(), agent.clone(), task_id.to_owned());
        let mut inner = self.lock();
        if inner.by_key.contains_key(&key) {
            return Followed::Already;
        }
        if inner.by_key.len() >= capacity {
            return Followed::Full;
        }
        inner.by_due.insert((first_at, key.clone()));
        inner.by_key.insert(
            key,
            FollowedOrigin {
                tenant: tenant.clone(),
                agent: agent.clone(),
                task_id: task_id.to_owned(),
                since: now,
                next_at: first_at,
            },
        );
        Followed::Added
    }

    /// Up to `limit` tasks whose next poll is at or before `now`, earliest first. They stay
    /// followed until [`OriginQueue::reschedule`] or [`OriginQueue::stop`].
    pub fn due(&self, now: Instant, limit: usize) -> Vec<FollowedOrigin> {
        let inner = self.lock();
        inner
            .by_due
            .iter()
            .take_while(|(at, _)| *at <= now)
            .take(limit)
            .filter_map(|(_, k)| inner.by_key.get(k).cloned())
            .collect()
    }

    /// The earliest next poll, if any task is followed.
    pub fn next_at(&self) -> Option<Instant> {
        self.lock().by_due.iter().next().map(|(at, _)| *at)
    }

    /// Moves the next poll of `key` to `at`; nothing when it is not followed.
    pub fn reschedule(&self, key: &OriginKey, at: Instant) {
        let mut inner = self.lock();
        let Some(old) = inner.by_key.get(key).map(|f| f.next_at) else {
            return;
        };
        inner.by_due.remove(&(old, key.clone()));
        inner.by_due.insert((at, key.clone()));
        if let Some(f) = inner.by_key.get_mut(key) {
            f.next_at = at;
        }
    }

    /// Stops following `key`.
    pub fn stop(&self, key: &OriginKey) {
        let mut inner = self.lock();
        if let Some(f) = inner.by_key.remove(key) {
            inner.by_due.remove(&(f.next_at, key.clone()));
        }
    }

    /// Whether `key` is followed.
    pub fn contains(&self, key: &OriginKey) -> bool {
        self.lock().by_key.contains_key(key)
    }

    /// How many tasks are followed.
    pub fn len(&self) -> usize {
        self.lock().by_key.len()
    }

    /// Whether no task is followed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Origin tasks followed in a store, by key and by (tenant, agent, next poll): what
/// [`crate::memory::MemoryStore`] keeps for [`crate::store::Origins::origin_follow`] and its
/// siblings (the SQLite and DynamoDB stores keep the same in a table and a sparse index).
#[derive(Debug, Default)]
pub(crate) struct OriginRows {
    by_key: BTreeMap<OriginKey, FollowedOrigin>,
    by_due: BTreeSet<(Tenant, AgentId, Instant, String)>,
}

impl OriginRows {
    /// Adds `origin` unless its key is followed; answers whether it was added.
    pub(crate) fn follow(&mut self, origin: &FollowedOrigin) -> bool {
        let key = origin.key();
        if self.by_key.contains_key(&key) {
            return false;
        }
        self.by_due
            .insert((key.0.clone(), key.1.clone(), origin.next_at, key.2.clone()));
        self.by_key.insert(key, origin.clone());
        true
    }

    /// Up to `limit` origins of (tenant, agent) due by `due_by`, earliest first.
    pub(crate) fn due(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Instant,
        limit: usize,
    ) -> Vec<FollowedOrigin> {
        let from = (tenant.clone(), agent.clone(), Instant::MIN, String::new());
        self.by_due
            .range(from..)
            .take_while(|(t, a, at, _)| t == tenant && a == agent && *at <= due_by)
            .take(limit)
            .filter_map(|(t, a, _, task)| {
                self.by_key
                    .get(&(t.clone(), a.clone(), task.clone()))
                    .cloned()
            })
            .collect()
    }

    /// Moves the next poll of `key` to `at` (nothing when not followed).
    pub(crate) fn reschedule(&mut self, key: &OriginKey, at: Instant) {
        if let Some(f) = self.by_key.get_mut(key) {
            self.by_due
                .remove(&(key.0.clone(), key.1.clone(), f.next_at, key.2.clone()));
            f.next_at = at;
            self.by_due
                .insert((key.0.clone(), key.1.clone(), at, key.2.clone()));
        }
    }

    /// Forgets the origins followed since before `before` (retention: long past any
    /// `give_up_after`, e.g. of an agent no longer configured).
    pub(crate) fn purge(&mut self, before: Instant) {
        let old: Vec<OriginKey> = self
            .by_key
            .values()
            .filter(|f| f.since < before)
            .map(FollowedOrigin::key)
            .collect();
        for key in &old {
            self.stop(key);
        }
    }

    /// Stops following `key`.
    pub(crate) fn stop(&mut self, key: &OriginKey) {
        if let Some(f) = self.by_key.remove(key) {
            self.by_due
                .remove(&(key.0.clone(), key.1.clone(), f.next_at, key.2.clone()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Instant {
        Instant::from_nanos(1_800_000_000_000_000_000 + i128::from(s) * 1_000_000_000).unwrap()
    }

    #[test]
    fn follows_in_due_order_up_to_capacity() {
        let q = OriginQueue::new(2);
        let t = Tenant::default_tenant();
        let a = AgentId::parse("booking").unwrap();
        assert_eq!(q.follow(&t, &a, "task-2", at(0), at(20)), Followed::Added);
        assert_eq!(q.follow(&t, &a, "task-1", at(0), at(10)), Followed::Added);
        assert_eq!(q.follow(&t, &a, "task-1", at(5), at(5)), Followed::Already);
        assert_eq!(q.follow(&t, &a, "task-3", at(0), at(1)), Followed::Full);
        assert_eq!(q.next_at(), Some(at(10)));
        assert!(q.due(at(9), 10).is_empty());
        let due: Vec<String> = q.due(at(20), 10).into_iter().map(|f| f.task_id).collect();
        assert_eq!(due, ["task-1", "task-2"]);
        let k1 = (t.clone(), a.clone(), "task-1".to_owned());
        q.reschedule(&k1, at(30));
        let due: Vec<String> = q.due(at(20), 10).into_iter().map(|f| f.task_id).collect();
        assert_eq!(due, ["task-2"]);
        q.stop(&k1);
        assert_eq!(q.len(), 1);
        assert_eq!(q.next_at(), Some(at(20)));
        assert_eq!(q.follow(&t, &a, "task-3", at(0), at(1)), Followed::Added);
    }

    #[test]
    fn capacity_zero_is_off() {
        let q = OriginQueue::new(0);
        assert!(!q.enabled());
        let t = Tenant::default_tenant();
        let a = AgentId::parse("booking").unwrap();
        assert_eq!(q.follow(&t, &a, "task-1", at(0), at(1)), Followed::Full);
    }
}
