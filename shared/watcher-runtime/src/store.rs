//! The store port: compare-and-set over subjects and tasks, with the indexes the engine reads
//! (fact key → subjects, expectation → subject, next deadlines) kept by the store from what it
//! commits. Every implementation passes the conformance suite (`watcher_runtime::conformance`,
//! feature `test-utils`).

use std::borrow::Borrow;

use a2a_types::TaskState;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use watcher_core::engine::{Rejection, TimerKey};
use watcher_core::ids::{AgentId, Subject, Tenant};
use watcher_core::record::{ExpectationRecord, RaiseOrder};
use watcher_core::slice::{Scope, Slice, SubjectState, TaskRecord};
use watcher_core::time::Instant;

use crate::origins::{FollowedOrigin, OriginKey};

mod cards;
mod error;
mod notifications;
pub use cards::{read_at_to_record, CardKey, CardKind, Cards, CARD_READ_RECORDED_EVERY};
pub use error::{
    is_permanent, unavailability_of, BackendFailure, PermanentFailure, StoreError, Unavailable,
};
pub use notifications::{AgentWatch, ChannelState, Notifications, Watermark};

pub use crate::lease::Claim;
pub use crate::outbox_entry::{DeliveryState, Lease, OutboxEntry};

/// A timer that is due, with what orders it (semantics.md, "Order at one instant").
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct DueTimer {
    /// When it falls due.
    pub at: Instant,
    /// Raising order of its expectation.
    pub order: RaiseOrder,
    /// Its tenant.
    pub tenant: Tenant,
    /// Which timer.
    pub key: TimerKey,
}

/// The writes of one engine step, committed all or nothing.
#[derive(Debug, Clone, Default)]
pub struct Commit {
    /// Changed subjects; each `version` is the one loaded (0: must not exist yet).
    pub subjects: Vec<SubjectState>,
    /// Changed tasks; each `version` is the one loaded (0: must not exist yet).
    pub tasks: Vec<TaskRecord>,
    /// New lapse tasks. An entry's identity is (tenant, agent, messageId): an entry whose
    /// (tenant, agent, messageId) exists already is left as it is; the same `messageId` for
    /// another agent of the tenant is another entry.
    pub outbox: Vec<OutboxEntry>,
    /// Refusals to keep for `GET /v1/agents/{agentId}/rejections`.
    pub rejections: Vec<Rejection>,
    /// Resolutions of lapse tasks already in the outbox (expectations-v1 §13.1;
    /// [`crate::resolution::Resolved`]), applied after `outbox`: each entry (tenant, agent,
    /// messageId) is read by its key and takes the resolution unless it has one
    /// ([`crate::resolution::resolved`]); an entry not stored is skipped. Never a list of the
    /// outbox. Every store writes them in the commit's transaction.
    pub resolutions: Vec<crate::resolution::Resolved>,
}

/// What one [`Upkeep::purge`] deleted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PurgeReport {
    /// Subjects deleted, with their index rows.
    pub subjects: u64,
    /// Lapse tasks (`sent` or `failed`) deleted.
    pub outbox: u64,
    /// Rejections deleted.
    pub rejections: u64,
    /// Task records deleted.
    pub tasks: u64,
}

/// `items` (at most `limit` + 1, in order) as one page: the first `limit`, and, when one more
/// was found, the position of the page's last item as where the next page starts.
pub fn cut_page<T>(mut items: Vec<(u64, T)>, limit: usize) -> (Vec<(u64, T)>, Option<u64>) {
    if items.len() > limit {
        items.truncate(limit);
        let next = items.last().map(|(p, _)| *p);
        (items, next)
    } else {
        (items, None)
    }
}

impl LapseQuery {
    /// Whether `entry` passes the filters (`agent`, `delivery`, `since`); the position is not
    /// looked at.
    pub fn matches(&self, entry: &OutboxEntry) -> bool {
        self.agent.as_ref().is_none_or(|a| &entry.agent == a)
            && self.delivery.is_none_or(|d| entry.delivery == d)
            && self.since.is_none_or(|s| entry.lapsed_at >= s)
    }
}

impl Commit {
    /// A commit of these subjects and nothing else.
    pub fn of_subjects(subjects: Vec<SubjectState>) -> Self {
        Self::with(|c| c.subjects = subjects)
    }

    /// A commit of these tasks and nothing else.
    pub fn of_tasks(tasks: Vec<TaskRecord>) -> Self {
        Self::with(|c| c.tasks = tasks)
    }

    /// A commit of these new lapse tasks and nothing else.
    pub fn of_outbox(outbox: Vec<OutboxEntry>) -> Self {
        Self::with(|c| c.outbox = outbox)
    }

    /// A commit of these refusals and nothing else.
    pub fn of_rejections(rejections: Vec<Rejection>) -> Self {
        Self::with(|c| c.rejections = rejections)
    }

    /// The empty commit, then `fill`.
    fn with(fill: impl FnOnce(&mut Commit)) -> Self {
        let mut commit = Commit::default();
        fill(&mut commit);
        commit
    }
}

impl PurgeReport {
    /// Whether nothing was deleted.
    pub fn is_empty(&self) -> bool {
        *self == PurgeReport::default()
    }
}

/// One page of lapse tasks asked of [`LapseLog::lapses_page`] (`GET /v1/lapses`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LapseQuery {
    /// Only this agent's lapse tasks.
    pub agent: Option<AgentId>,
    /// Only lapse tasks in this delivery state.
    pub delivery: Option<DeliveryState>,
    /// Only lapse tasks lapsed at or after this instant.
    pub since: Option<Instant>,
    /// Start after this position (the `next` of the previous page); `None`: from the first.
    pub after: Option<u64>,
    /// Most entries answered (at least 1).
    pub limit: usize,
}

/// How many outbox positions one [`LapseLog::lapses_page`] may look at per entry asked for: a
/// filter that matches few entries (`delivery`, `since`) gives a short page (maybe empty) with
/// a `next` position, never a read of the whole outbox.
pub const LAPSE_SCAN_FACTOR: usize = 10;

/// The positions one page may look at: [`LAPSE_SCAN_FACTOR`] × `limit`, at least 1,000.
pub fn lapse_scan_budget(limit: usize) -> usize {
    limit.saturating_mul(LAPSE_SCAN_FACTOR).max(1000)
}

/// One page of [`LapseLog::lapses_page`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LapsePage {
    /// Matching entries in order of lapse (insertion order), at most `limit`, each with its
    /// position (a page cut short after an entry goes on after that entry's position).
    pub entries: Vec<(u64, OutboxEntry)>,
    /// Where the next page starts; `None` when nothing is left after this page.
    pub next: Option<u64>,
}

/// One of an agent's outbox lanes, each read from an index of its own ([`Outbox::outbox_lane`]),
/// and the instant an entry stands at in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lane {
    /// Entries in this delivery state, at their next attempt ([`Outbox::outbox_of_agent`]).
    Delivery(DeliveryState),
    /// Followed entries, at their `follow_at` ([`Outbox::outbox_following`]).
    Following,
    /// Entries whose task waits for a person, since `needs_person_since`
    /// ([`Outbox::outbox_needing_person`]).
    NeedingPerson,
    /// Resolved entries, at their resolution's instant (`resolved.at`, expectations-v1 §13.1,
    /// [`crate::resolution`]), then order of lapse: the notifier reads an agent's resolutions
    /// after its cursor with [`LaneQuery::from`].
    Resolved,
    /// Entries not resolved, at their `lapsed_at`, then order of lapse: the open incidents
    /// (expectations-v1 §13.1, [`crate::resolution`]) that `GET /v1/incidents`, `/ui/incidents`
    /// and the open-incidents gauge read, agent by agent.
    Open,
}

impl Lane {
    /// The instant `entry` stands at in this lane; `None` when it is not in the lane.
    pub fn at(self, entry: &OutboxEntry) -> Option<Instant> {
        match self {
            Lane::Delivery(d) => (entry.delivery == d).then_some(entry.next_attempt_at),
            Lane::Following => entry.follow_at,
            // A lapse task still followed waits for its next poll, not for a person (the rules
            // stop following an interrupted task; this keeps the lanes apart in every store).
            Lane::NeedingPerson => entry
                .needs_person_since
                .filter(|_| entry.follow_at.is_none()),
            Lane::Resolved => entry.resolved.as_ref().map(|r| r.at),
            Lane::Open => entry.resolved.is_none().then_some(entry.lapsed_at),
        }
    }
}

/// A read of one of an agent's outbox lanes ([`Outbox::outbox_lane`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneQuery<'a> {
    /// The agent's tenant.
    pub tenant: &'a Tenant,
    /// The agent.
    pub agent: &'a AgentId,
    /// Which lane.
    pub lane: Lane,
    /// Only entries standing at or before this instant in the lane; `None`: every entry.
    pub due_by: Option<Instant>,
    /// Only entries standing at or after this instant in the lane (a cursor: the instant of
    /// the last entry dealt with, whose ties the reader skips itself); `None`: from the first.
    pub from: Option<Instant>,
    /// Most entries answered.
    pub limit: usize,
}

impl LaneQuery<'_> {
    /// What the query answers of `entries` (each an entry, owned or borrowed, with its
    /// position, the order of lapse): those in the lane from `from` through `due_by`, earliest first
    /// (then order of lapse), at most `limit`. For a store that reads candidates (an index that
    /// may lag, the agent's entries) and keeps what matches.
    pub fn answer<E: Borrow<OutboxEntry>>(
        &self,
        entries: impl IntoIterator<Item = (u64, E)>,
    ) -> Vec<E> {
        let mut found: Vec<(Instant, u64, E)> = entries
            .into_iter()
            .filter_map(|(seq, e)| self.lane.at(e.borrow()).map(|at| (at, seq, e)))
            .filter(|(at, _, _)| self.due_by.is_none_or(|d| *at <= d))
            .filter(|(at, _, _)| self.from.is_none_or(|f| *at >= f))
            .collect();
        found.sort_by_key(|(at, seq, _)| (*at, *seq));
        found
            .into_iter()
            .take(self.limit)
            .map(|(_, _, e)| e)
            .collect()
    }
}

/// The record: subjects and tasks loaded and committed by compare-and-set, with the indexes
/// the engine reads kept from what is committed, and the input numbers (semantics.md).
#[async_trait]
pub trait Records: Send + Sync {
    /// Loads `scope` of `tenant`. Subjects not stored come back empty at version 0; agents' live
    /// counts are computed at `now`.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn load(&self, tenant: &Tenant, scope: &Scope, now: Instant)
        -> Result<Slice, StoreError>;

    /// Writes `commit` for `tenant` if every subject and task is still at the version it was
    /// loaded at, bumping each by one, updating the indexes, inserting new outbox entries and
    /// rejections; otherwise writes nothing.
    ///
    /// # Errors
    /// [`StoreError::Conflict`] when a version moved; backend errors.
    async fn commit(&self, tenant: &Tenant, commit: Commit) -> Result<(), StoreError>;

    /// The number of the next input (raising order, expectations-v1 semantics.md "Order at
    /// one instant"; receipt order of a task's statuses).
    ///
    /// The contract: every number answered is unique (never answered twice, by any caller of
    /// any process sharing the store); the numbers one caller sees are strictly increasing; and
    /// numbers answered at different times are ordered by time, to within the disagreement of
    /// the clocks of the processes that answered them. The numbers need not be dense. The memory
    /// and SQLite stores count (1, 2, 3, …); the DynamoDB store answers time-ordered ids
    /// ([`crate::sequence::TimeOrdered`]) with no write at all. The watcher raises a number
    /// above every number stored in the slice it steps ([`crate::sequence::above_slice`]), so
    /// on one subject or task the order is exact whatever the clocks.
    ///
    /// # Errors
    /// Backend (a counting store's write failed).
    async fn next_sequence(&self) -> Result<u64, StoreError>;

    /// A subject's state, if anything was recorded about it.
    async fn subject(
        &self,
        tenant: &Tenant,
        subject: &Subject,
    ) -> Result<Option<SubjectState>, StoreError>;

    /// Every record of every tenant, in raising order (replay's `record` line).
    async fn all_records(&self) -> Result<Vec<ExpectationRecord>, StoreError>;
}

/// The deadline index: which timers are due, earliest first (expectations-v1 §10.1).
#[async_trait]
pub trait TimerIndex: Send + Sync {
    /// Timers due at or before `until`, earliest first, then raising order, deadline before
    /// horizon; at most `limit`.
    async fn due_timers(&self, until: Instant, limit: usize) -> Result<Vec<DueTimer>, StoreError>;

    /// The earliest pending timer of any tenant.
    async fn next_timer(&self) -> Result<Option<DueTimer>, StoreError>;
}

/// Rejected expectations, kept for operators (expectations-v1 §13.2, serve.md `GET /v1/rejections`).
#[async_trait]
pub trait Rejections: Send + Sync {
    /// Refusals reported to an agent, oldest first.
    async fn rejections(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Vec<Rejection>, StoreError>;

    /// One page of the refusals reported to `agent`, oldest first: at most `limit` after
    /// position `after`, each with its position, and the position the next page starts after
    /// (`None` at the end). Keyset pagination on an index by (tenant, agent, position).
    ///
    /// The default pages over [`Rejections::rejections`] (the position is the index in that list),
    /// whose cost grows with the agent's refusals; the SQLite and DynamoDB stores override it.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn rejections_page(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<(u64, Rejection)>, Option<u64>), StoreError> {
        let all = self.rejections(tenant, agent).await?;
        let start = after.map_or(0, |a| a.saturating_add(1));
        let limit = limit.max(1);
        let page: Vec<(u64, Rejection)> = all
            .into_iter()
            .enumerate()
            .map(|(i, r)| (i as u64, r))
            .skip_while(|(i, _)| *i < start)
            .take(limit + 1)
            .collect();
        Ok(cut_page(page, limit))
    }
}

/// The outbox's write side: lapse tasks to deliver, their claims, their delivery state and
/// the per-agent lanes they are read from (serve.md "Lapse tasks"). The pages operators read
/// are [`LapseLog`]'s.
#[async_trait]
pub trait Outbox: Send + Sync {
    /// The outbox entry (tenant, agent, messageId), if stored.
    async fn outbox_get(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
    ) -> Result<Option<OutboxEntry>, StoreError>;

    /// Replaces the delivery fields of the stored entry with `entry`'s identity
    /// (tenant, agent, messageId); never inserts, and never touches another agent's entry with
    /// the same `messageId`. An entry already `sent` is never changed back. The lapse task's
    /// task fields are merged with the stored ones by
    /// [`crate::task_progress::keep_task_progress`] in the same atomic step (a push recorded
    /// while the writer was busy is kept: a terminal state is final, `TASK_STATE_SUBMITTED`
    /// never replaces a later state), and the lease by [`crate::lease::keep_lease`] (only the
    /// lease's holder releases it).
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_update(&self, entry: &OutboxEntry) -> Result<(), StoreError>;

    /// Claims the entry (tenant, agent, messageId) with `lease` to post it at `now`
    /// ([`crate::lease`]): in one atomic step (a transaction, or a write conditional on
    /// the entry being as read), the stored entry is judged by [`crate::lease::claim`] and,
    /// when granted, written with the lease and `attempt_started_at` = `now`. Two claims of one
    /// entry at once: one is granted, the other answers [`Claim::Taken`]. Never inserts.
    ///
    /// [`Outbox::outbox_update`] keeps the lease, except when the entry written holds it (the
    /// holder's outcome, which releases it: [`crate::lease::keep_lease`]).
    ///
    /// # Errors
    /// Backend or corrupt data; [`StoreError::Conflict`] when other writers kept changing the
    /// entry (try again later).
    async fn outbox_claim(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        lease: &Lease,
        now: Instant,
    ) -> Result<Claim, StoreError>;

    /// [`Outbox::outbox_claim`] of `read`'s identity, where `read` is the entry as the caller
    /// has just read it (from [`Outbox::outbox_get`] or [`Outbox::outbox_lane`]). The answer is
    /// the same; a store whose claim is a write conditional on the entry as read (DynamoDB) may
    /// try that write against `read` first and read the entry itself only when the write finds
    /// it changed, which saves a read when nothing else wrote the entry meanwhile. By default,
    /// [`Outbox::outbox_claim`].
    ///
    /// # Errors
    /// As [`Outbox::outbox_claim`].
    async fn outbox_claim_read(
        &self,
        read: &OutboxEntry,
        lease: &Lease,
        now: Instant,
    ) -> Result<Claim, StoreError> {
        self.outbox_claim(&read.tenant, &read.agent, &read.message_id, lease, now)
            .await
    }

    /// [`Outbox::outbox_update`] of `entry`, where `read` is the same entry as the caller last
    /// read or wrote it (the claim's answer, before the send). The stored entry is the same
    /// afterwards; a store whose update is a write conditional on the entry as read may try
    /// that write against `read` first (merged with it as [`Outbox::outbox_update`] merges with
    /// the stored entry) and read the entry itself only when the write finds it changed. By
    /// default, [`Outbox::outbox_update`].
    ///
    /// # Errors
    /// As [`Outbox::outbox_update`].
    async fn outbox_update_read(
        &self,
        read: &OutboxEntry,
        entry: &OutboxEntry,
    ) -> Result<(), StoreError> {
        let _ = read;
        self.outbox_update(entry).await
    }

    /// Resolves the lapse task (tenant, agent, messageId) with `resolution` (an operator's
    /// acknowledgement, [`crate::resolution::acknowledge`]): the stored entry becomes
    /// [`crate::resolution::resolved`] of itself, read and written in one atomic step, so the
    /// first resolution stays and no delivery field a concurrent writer wrote is lost. Never
    /// inserts. Answers the entry as written, or `None` when it is not stored or was resolved
    /// already.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_resolve(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        resolution: &crate::resolution::Resolution,
    ) -> Result<Option<OutboxEntry>, StoreError>;

    /// Records that the lapse task (tenant, agent, messageId) is the agent's Task `task_id`, now
    /// in `state` (a push about that task, received at `now`): the stored entry becomes
    /// [`crate::task_progress::with_task_state`] of itself, read and written in one atomic step,
    /// so a push never overwrites the delivery fields a concurrent delivery writes and a state
    /// never goes back. Never inserts. Answers the entry as written, or `None` when it is not
    /// stored, names another task, or nothing changed.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_task_state(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        task_id: &str,
        state: TaskState,
        now: Instant,
    ) -> Result<Option<OutboxEntry>, StoreError>;

    /// The entries of `query.agent` of `query.tenant` in the lane `query.lane` ([`Lane`]) and,
    /// when `query.due_by` is given, standing at or before it, and when `query.from` is given,
    /// at or after it; earliest first (then order of lapse, in the delivery, person and
    /// resolved lanes); at most `query.limit`. Read from the lane's index (by tenant, agent [,
    /// delivery state] and the lane's instant, holding only the lane's entries): the cost
    /// follows the entries answered, not the outbox. [`Outbox::outbox_of_agent`],
    /// [`Outbox::outbox_following`], [`Outbox::outbox_needing_person`] and
    /// [`Outbox::outbox_resolved`] are this read.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_lane(&self, query: &LaneQuery<'_>) -> Result<Vec<OutboxEntry>, StoreError>;

    /// Outbox entries of `agent` of `tenant` whose delivery state is `delivery` and, when `due_by`
    /// is given, whose next attempt is at or before it; earliest next attempt first (then order
    /// of lapse); at most `limit`. Read from an index by (tenant, agent, delivery state,
    /// next attempt): the cost follows the entries answered, not the outbox
    /// ([`Outbox::outbox_lane`] of [`Lane::Delivery`]).
    ///
    /// Serves each agent's delivery lane (queued and due), an operator's re-queue of an agent's
    /// failed lapse tasks, and `GET /v1/agents`.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_of_agent(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        delivery: DeliveryState,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let lane = Lane::Delivery(delivery);
        let query = LaneQuery {
            tenant,
            agent,
            lane,
            due_by,
            from: None,
            limit,
        };
        self.outbox_lane(&query).await
    }

    /// Outbox entries of `agent` of `tenant` whose `follow_at` is set and, when `due_by` is given,
    /// at or before it; earliest `follow_at` first; at most `limit`. Read from an index holding
    /// only followed entries ([`Outbox::outbox_lane`] of [`Lane::Following`]).
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_following(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let lane = Lane::Following;
        self.outbox_lane(&LaneQuery {
            tenant,
            agent,
            lane,
            due_by,
            from: None,
            limit,
        })
        .await
    }

    /// Outbox entries of `agent` of `tenant` whose task waits for a person
    /// (`needs_person_since` set, expectations-v1 §10.2, and no longer followed) and, when `due_by` is given, since at
    /// or before it; earliest first (then order of lapse); at most `limit`. Read from an index
    /// holding only such entries: the cost follows the entries answered
    /// ([`Outbox::outbox_lane`] of [`Lane::NeedingPerson`]). The notifier's
    /// `lapse_task.needs_person` event reads it.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_needing_person(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let lane = Lane::NeedingPerson;
        self.outbox_lane(&LaneQuery {
            tenant,
            agent,
            lane,
            due_by,
            from: None,
            limit,
        })
        .await
    }

    /// Outbox entries of `agent` of `tenant` resolved (expectations-v1 §13.1,
    /// [`crate::resolution`]) at or after `from` when it is given; earliest resolution first
    /// (then order of lapse); at most `limit`. Read from an index holding only resolved entries,
    /// by (tenant, agent, resolution instant): the cost follows the entries answered
    /// ([`Outbox::outbox_lane`] of [`Lane::Resolved`]). For the notifier's "resolved" events,
    /// after its cursor.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_resolved(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        from: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let lane = Lane::Resolved;
        self.outbox_lane(&LaneQuery {
            tenant,
            agent,
            lane,
            due_by: None,
            from,
            limit,
        })
        .await
    }

    /// Outbox entries of `agent` of `tenant` not resolved (the open incidents, expectations-v1
    /// §13.1) that lapsed at or after `from` when it is given; earliest lapse first (then order
    /// of lapse); at most `limit`. Read from an index holding only unresolved entries, by
    /// (tenant, agent, `lapsed_at`): the cost follows the entries answered
    /// ([`Outbox::outbox_lane`] of [`Lane::Open`]).
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_open(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        from: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let lane = Lane::Open;
        self.outbox_lane(&LaneQuery {
            tenant,
            agent,
            lane,
            due_by: None,
            from,
            limit,
        })
        .await
    }

    /// The outbox entries of `agent` of `tenant` whose lapse task (the Task the agent created
    /// when it accepted the lapse task) is `task_id`, in order of lapse. Read from an index by
    /// (tenant, agent, taskId): the cost follows the entries answered, not the outbox (a
    /// a status-update push about a lapse task updates its state in `GET /v1/lapses`).
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn outbox_by_task(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
    ) -> Result<Vec<OutboxEntry>, StoreError>;
}

/// The read side of the outbox: the list of a tenant's lapse tasks and its keyset pages, for
/// `GET /v1/lapses`, the operator page, the notifier and the CLI (serve.md "Lapse tasks").
/// Delivery never reads it: it works through [`Outbox`], the write side (claim, record, due,
/// lanes).
#[async_trait]
pub trait LapseLog: Send + Sync {
    /// All outbox entries of a tenant, in order of lapse.
    async fn lapses(&self, tenant: &Tenant) -> Result<Vec<OutboxEntry>, StoreError>;

    /// The position of the tenant's newest lapse task (the last [`LapseLog::lapses_page`] would
    /// answer), or `None` when it has none: where a notification channel that first runs
    /// starts, so it tells no history. One keyed read, whatever the outbox's size.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn last_lapse_position(&self, tenant: &Tenant) -> Result<Option<u64>, StoreError>;

    /// One page of the tenant's lapse tasks matching `query`, in order of lapse (keyset
    /// pagination: positions are the outbox's insertion order, never an offset). Looks at most
    /// [`lapse_scan_budget`] positions after `query.after` (through an index by tenant, or by
    /// (tenant, agent) when `query.agent` is given), so a page costs the same however large the
    /// outbox is; `next` is set whenever positions remain after the ones looked at.
    ///
    /// The default pages over [`LapseLog::lapses`] (the position is the index in that list), whose
    /// cost grows with the tenant's outbox: for a store without the index yet; the memory,
    /// SQLite and DynamoDB stores override it.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn lapses_page(
        &self,
        tenant: &Tenant,
        query: &LapseQuery,
    ) -> Result<LapsePage, StoreError> {
        let all = self.lapses(tenant).await?;
        let start = query.after.map_or(0, |a| a.saturating_add(1));
        let mut page = LapsePage::default();
        let budget = lapse_scan_budget(query.limit) as u64;
        let mut pos = start;
        while let Some(o) = usize::try_from(pos).ok().and_then(|i| all.get(i)) {
            if page.entries.len() >= query.limit.max(1) || pos - start >= budget {
                page.next = Some(pos - 1);
                return Ok(page);
            }
            if query.matches(o) {
                page.entries.push((pos, o.clone()));
            }
            pos += 1;
        }
        Ok(page)
    }
}

/// Origin tasks followed with `GetTask` when their agent may not push (origin reconciliation).
#[async_trait]
pub trait Origins: Send + Sync {
    /// Starts following the origin task `origin.key()` with `GetTask` (origin-task
    /// reconciliation kept in the store, so any process or function instance polls it:
    /// [`crate::origins`]), first poll at `origin.next_at`, unless it is already followed (its
    /// schedule is then kept). Answers whether it was added.
    ///
    /// # Errors
    /// Backend.
    async fn origin_follow(&self, origin: &FollowedOrigin) -> Result<bool, StoreError>;

    /// The origin tasks of `agent` of `tenant` followed in the store whose next poll is at or
    /// before `due_by`, earliest first; at most `limit`. Read from an index holding only
    /// followed origins, by (tenant, agent, next poll): the cost follows what is due.
    ///
    /// # Errors
    /// Backend or corrupt data.
    async fn origins_due(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Instant,
        limit: usize,
    ) -> Result<Vec<FollowedOrigin>, StoreError>;

    /// Moves the next poll of the followed origin `key` to `at`; nothing when it is not followed.
    ///
    /// # Errors
    /// Backend.
    async fn origin_reschedule(&self, key: &OriginKey, at: Instant) -> Result<(), StoreError>;

    /// Stops following the origin `key` (nothing when it is not followed).
    ///
    /// # Errors
    /// Backend.
    async fn origin_stop(&self, key: &OriginKey) -> Result<(), StoreError>;
}

/// Keeping the store: the health probe's write, retention's purge (expectations-v1 §14), and the
/// work counter of the tests.
#[async_trait]
pub trait Upkeep: Send + Sync {
    /// A small write that changes nothing of the record (a health row holding `now`), so that
    /// `GET /healthz` tells whether the store accepts writes right now (a full disk, a read-only
    /// file, a throttled table).
    ///
    /// # Errors
    /// The backend's error when it cannot write.
    async fn probe_write(&self, now: Instant) -> Result<(), StoreError>;

    /// Work done so far, counted by the store for tests: rows or records read and written. The
    /// conformance suite (`conformance::steps_read_what_they_must`) checks that one
    /// step costs the same at 400 and at 4,000 open expectations. `None`: not counted.
    fn work_done(&self) -> Option<u64> {
        None
    }

    /// Forgets, in every tenant, what [`crate::retention`] allows for `before` (the clock minus
    /// the retention period, expectations-v1 §14):
    ///
    /// * subjects none of whose records can still lapse and whose last activity is before
    ///   `before`, with their index rows (fact keys, expectation ids, timers, live counts);
    /// * `sent` and `failed` lapse tasks last active before `before` (never `queued` ones);
    /// * rejections made before `before`;
    /// * task records last active before `before` that are finished, or whose subjects are all
    ///   gone once the subjects above are deleted.
    ///
    /// A store whose backend expires items by itself (DynamoDB's TTL, computed with the same
    /// rule) deletes nothing here and answers an empty report. A durable store may delete in
    /// small batches, each its own transaction, so that requests proceed during a large purge
    /// (SQLite: `PURGE_BATCH` rows a batch); each batch deletes whole items (a subject with its
    /// index rows), and subjects are done before tasks.
    ///
    /// # Errors
    /// Backend or corrupt data; then nothing more is deleted (what earlier batches deleted
    /// stays deleted, which the retention rule allowed anyway).
    async fn purge(&self, before: Instant) -> Result<PurgeReport, StoreError>;
}

/// Compare-and-set storage for the watcher's record: every capability at once. Implemented for
/// any type that implements them all; a consumer takes the narrowest capability it uses
/// (delivery an [`Outbox`], the timer loop a [`TimerIndex`] and [`Records`], …), and a
/// `&dyn Store` coerces to each.
pub trait Store:
    Records + TimerIndex + Rejections + Outbox + LapseLog + Origins + Cards + Notifications + Upkeep
{
}

impl<T> Store for T where
    T: Records
        + TimerIndex
        + Rejections
        + Outbox
        + LapseLog
        + Origins
        + Cards
        + Notifications
        + Upkeep
        + ?Sized
{
}
