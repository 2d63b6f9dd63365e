//! Origin-task reconciliation (issue 11 item 5; docs/agents.md "Agents the watcher does not
//! trust"): for an agent that is not lifecycle-trusted (no probe promoted it; the card alone
//! never does, docs/specs/agent-card-vs-lifecycle-conformance.md), the watcher does not rely on
//! pushes alone to learn that an origin task ended.
//!
//! * Each origin task that raised expectations is followed with `GetTask`
//!   (kept in the store: `Origins::origin_follow`, polled by [`Reconciler::poll_stored_due`];
//!   or, when the directory does not keep them there, [`watcher_runtime::origins::OriginQueue`],
//!   bounded, in memory), first `poll_first` after it
//!   raised them, then half the time followed so far, at most `backoff_max` apart, until the task
//!   is terminal, `GetTask` fails for good, or it has been followed for `give_up_after`. Every
//!   snapshot goes through the same ingest path as a pushed `Task` ([`ingest_task`]), so a
//!   cancel whose push never came withdraws.
//! * Before a lapse task is first sent, its origin (`referenceTaskIds[0]`) and each task of the
//!   origin's lineage the lapse task carries ([`kept_lineage`], at most `lineage_bound + 1`) are
//!   asked for once ([`Reconciler::check_before_send`]), for every agent that answers `GetTask`,
//!   trusted or not ([`watcher_runtime::directory::Directory::checks_origin_before_send`]);
//!   one canceled, failed or rejected (or already recorded so): its snapshot is ingested
//!   (withdrawing what it and every task below it raised) and the lapse task is marked
//!   `withdrawn`, never sent.
//! * A followed lapse task's `GetTask` answer is ingested the same way
//!   ([`Reconciler::poll_lapse_task`]), so a successor it raised without pushing is recorded.

use std::sync::Arc;
use std::time::Duration;

use a2a_types::{StreamResponse, TaskState};
use futures_util::stream::{self, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{watch, Notify};
use watcher_core::engine::{Effect, Input};
use watcher_core::ids::{AgentId, TaskId, TaskRef, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::clock::Clock;
use watcher_runtime::origins::FollowedOrigin;
use watcher_runtime::store::{DeliveryState, OutboxEntry, Store, StoreError};
use watcher_runtime::watcher::Watcher;

use crate::client::{A2aClient, DeliveryError};
use crate::deliver::poll_delay;
use crate::endpoint::Endpoints;
use crate::retry::{add, elapsed, RetryPolicy};

/// Origin tasks polled at once by one pass.
const BATCH: usize = 32;
/// `GetTask` calls in flight at once over all followed origin tasks.
const IN_FLIGHT: usize = 4;
/// How far an origin poll put off while its agent's lapse tasks are sent moves (in memory).
const DEFER_STEP: Duration = Duration::from_millis(500);
/// Longest the loop sleeps before looking at the queue again (an in-memory read).
const MAX_IDLE: Duration = Duration::from_secs(1);

/// What one ingested snapshot did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ingested {
    /// Expectations raised (new).
    pub raised: usize,
    /// Expectations withdrawn.
    pub withdrawn: usize,
}

/// Feeds a Task snapshot (1.0 shape, as `GetTask` answers it) through the push ingest path, as if
/// `agent` had pushed `{"task": …}`: its lineage (as the snapshot shows it, and as the outbox
/// knows it, [`watcher_runtime::push::outbox_lineage`]), its artifacts' expectations and
/// withdrawals, its facts, and its status (canceled, failed, rejected withdraw). When it raised
/// expectations, the task is followed like any origin task.
///
/// # Errors
/// The agent is not registered, the snapshot is not a Task, or the store failed; in words.
pub async fn ingest_task(
    watcher: &Watcher<dyn Store>,
    tenant: &Tenant,
    agent: &AgentId,
    task: &Value,
    now: Instant,
) -> Result<Ingested, String> {
    let profile = watcher
        .directory
        .get(tenant, agent)
        .ok_or_else(|| format!("agent {agent} is not registered"))?
        .profile;
    let event = StreamResponse::from_push_body(json!({ "task": task }))
        .map_err(|e| format!("the GetTask answer is not a Task: {e}"))?;
    watcher_core::ingest::check_state(&event)?;
    let mut items = watcher_core::ingest::push_items(&event, agent, now);
    let (known, _) =
        watcher_runtime::push::outbox_lineage(&*watcher.store, tenant, agent, &event, &items).await;
    items.splice(0..0, known);
    let applied = watcher
        .apply(
            tenant,
            &Input::Push {
                agent: profile,
                items,
            },
            now,
        )
        .await
        .map_err(|e| e.to_string())?;
    let mut out = Ingested::default();
    for e in &applied.effects {
        match e {
            Effect::Raised { .. } => out.raised += 1,
            Effect::Withdrawn { .. } => out.withdrawn += 1,
            _ => {}
        }
    }
    if out.raised > 0 {
        if let Some(task_id) = event.task_id() {
            watcher.follow_origin(tenant, agent, task_id, now).await;
        }
    }
    Ok(out)
}

/// What the record keeps of a lapse task's origin's lineage, for the check before sending.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeptLineage {
    /// A task of the lineage the record shows ended withdrawing, and the state's name: the
    /// lapse task is withdrawn without asking.
    pub ended: Option<(String, String)>,
    /// The origin's ancestors to ask for, nearest first: those the record does not show
    /// terminal.
    pub ask: Vec<String>,
}

/// The records of `ancestors`, the lineage of a lapse task's origin task as the lapse task
/// carries it (`OutboxEntry::origin_lineage`, at most `lineage_bound + 1` tasks of `agent`;
/// docs/interpretation.md "Withdrawal follows the lineage"): one keyed read, none when the
/// lineage is empty. A read that fails is logged and taken as nothing known (each ancestor is
/// then asked for).
pub async fn kept_lineage(
    store: &(impl Store + ?Sized),
    tenant: &Tenant,
    agent: &AgentId,
    ancestors: &[String],
    now: Instant,
) -> KeptLineage {
    let ids: Vec<TaskId> = ancestors
        .iter()
        .filter_map(|a| TaskId::parse(a.as_str()).ok())
        .collect();
    if ids.is_empty() {
        return KeptLineage::default();
    }
    let of = |id: &TaskId| TaskRef {
        agent: agent.clone(),
        task_id: id.clone(),
    };
    let scope = watcher_core::slice::Scope {
        tasks: ids.iter().map(of).collect(),
        ..Default::default()
    };
    let mut records = match store.load(tenant, &scope, now).await {
        Ok(slice) => slice.tasks,
        Err(e) => {
            tracing::warn!(agent = %agent, error = %e, "origin check before sending: the lineage's records could not be read; each is asked for");
            Default::default()
        }
    };
    let mut kept = KeptLineage::default();
    for a in &ids {
        match records.remove(&of(a)).flatten() {
            Some(rec) if rec.withdrawn_by.is_some() => {
                let state = rec.withdrawn_by.map(|s| s.state).unwrap_or_default();
                return KeptLineage {
                    ended: Some((a.to_string(), state)),
                    ask: Vec::new(),
                };
            }
            // A terminal state is final: a completed task never ends withdrawing.
            Some(rec)
                if rec.statuses.iter().any(|s| {
                    watcher_core::slice::Lifecycle::of(&s.state)
                        == watcher_core::slice::Lifecycle::Completed
                }) => {}
            _ => kept.ask.push(a.to_string()),
        }
    }
    kept
}

/// Whether `state` withdraws what its task raised (semantics.md: canceled, failed, rejected).
pub fn withdraws(state: TaskState) -> bool {
    matches!(
        state,
        TaskState::Canceled | TaskState::Failed | TaskState::Rejected
    )
}

/// Why a lapse task is not sent when the task `task_id` of its origin `origin`'s lineage was
/// found in `state` before sending (the origin itself when `task_id == origin`).
pub(crate) fn found_why(origin: &str, task_id: &str, state: TaskState) -> String {
    if task_id == origin {
        format!(
            "not sent: GetTask before sending found the origin task {origin:?} {}; its \
             expectations were withdrawn (origin-task reconciliation)",
            state.as_str()
        )
    } else {
        format!(
            "not sent: GetTask before sending found the task {task_id:?} of the origin \
             task {origin:?}'s lineage {}; the expectations of its lineage were withdrawn \
             (origin-task reconciliation)",
            state.as_str()
        )
    }
}

/// The state of a 1.0 Task object (`TASK_STATE_UNSPECIFIED` when it has none the watcher knows).
pub(crate) fn state_of(task: &Value) -> TaskState {
    task.pointer("/status/state")
        .and_then(TaskState::from_wire_value)
        .unwrap_or(TaskState::Unspecified)
}

/// Follows origin tasks for agents that are not lifecycle-trusted, and checks origins before
/// sending for every agent that answers `GetTask`. Build one per process; share it behind an
/// `Arc`.
pub struct Reconciler {
    watcher: Arc<Watcher<dyn Store>>,
    client: A2aClient,
    endpoints: Arc<dyn Endpoints>,
    policy: RetryPolicy,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    /// Origin answers kept for [`crate::origin_checks::FRESH`] (crate::origin_checks).
    pub(crate) answers: crate::origin_checks::AnswerCache,
    /// Agents with lapse tasks being sent: their origin polls wait (crate::origin_checks).
    pub(crate) sending: crate::origin_checks::SendingAgents,
}

impl Reconciler {
    /// A reconciler asking with `client`, backing off as `policy` says (`poll_first`,
    /// `max_backoff`, `give_up_after`), waking `wake` when a snapshot changed the record.
    pub fn new(
        watcher: Arc<Watcher<dyn Store>>,
        client: A2aClient,
        endpoints: Arc<dyn Endpoints>,
        policy: RetryPolicy,
        clock: Arc<dyn Clock>,
        wake: Arc<Notify>,
    ) -> Self {
        Reconciler {
            watcher,
            client,
            endpoints,
            policy,
            clock,
            wake,
            answers: crate::origin_checks::AnswerCache::default(),
            sending: crate::origin_checks::SendingAgents::default(),
        }
    }

    /// Whether `agent`'s origin tasks are reconciled
    /// ([`watcher_runtime::directory::Directory::reconciles`]).
    pub fn reconciles(&self, tenant: &Tenant, agent: &AgentId) -> bool {
        self.watcher.directory.reconciles(tenant, agent)
    }

    /// Whether `agent`'s lapse tasks have their origin asked for before their first send
    /// ([`watcher_runtime::directory::Directory::checks_origin_before_send`]): a caller holding
    /// only a lapse task's key (the serverless submitter) reads the entry for
    /// [`Reconciler::check_before_send`] only then.
    pub fn checks_before_send(&self, tenant: &Tenant, agent: &AgentId) -> bool {
        self.watcher
            .directory
            .checks_origin_before_send(tenant, agent)
    }

    /// Marks `agent` as having lapse tasks being sent until the guard drops: meanwhile its
    /// origin polls ([`Reconciler::poll_due`], [`Reconciler::poll_stored_due`]) wait, at most
    /// [`crate::origin_checks::MAX_DEFER`] (docs/interpretation.md "Origin polls wait while an
    /// agent's lapse tasks are sent"). Held by [`crate::lane::Lane::pass`] while it sends.
    pub fn sending(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> crate::origin_checks::SendingGuard<'_> {
        self.sending.hold(tenant, agent)
    }

    /// The watcher whose record the checks read and feed.
    pub(crate) fn watcher(&self) -> &Watcher<dyn Store> {
        &self.watcher
    }

    /// The watcher's clock.
    pub(crate) fn clock(&self) -> &dyn Clock {
        &*self.clock
    }

    /// `ListTasks` of `agent`'s tasks in `context_id` (a2a-v1.md §1.1): the first page only,
    /// `pageSize` 100, `historyLength` 0, no artifacts; answers the listed Task objects that have
    /// an `id` and a `status`.
    ///
    /// # Errors
    /// As [`A2aClient::request`] (a 0.3 agent has no `ListTasks`: permanent, nothing sent); a
    /// result without a `tasks` array is permanent.
    pub(crate) async fn list_context(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        context_id: &str,
        interface_tenant: Option<&str>,
    ) -> Result<Vec<Value>, DeliveryError> {
        let Some(endpoint) = self.endpoints.endpoint(tenant, agent) else {
            return Err(DeliveryError::Permanent {
                reason: format!("no endpoint for agent {agent}"),
                source: None,
            });
        };
        let mut params = json!({
            "contextId": context_id,
            "pageSize": crate::origin_checks::LIST_PAGE_SIZE,
            "historyLength": 0,
        });
        if let Some(t) = interface_tenant {
            params["tenant"] = Value::String(t.to_owned());
        }
        let result = self
            .client
            .request(
                &endpoint,
                a2a_types::rpc::methods::LIST_TASKS,
                &params,
                &format!("origins:{context_id}"),
            )
            .await?;
        let Some(tasks) = result.get("tasks").and_then(Value::as_array) else {
            return Err(DeliveryError::Permanent {
                reason: "the ListTasks result has no `tasks` array".into(),
                source: None,
            });
        };
        Ok(tasks
            .iter()
            .filter(|t| t.get("id").and_then(Value::as_str).is_some() && t.get("status").is_some())
            .cloned()
            .collect())
    }

    /// `GetTask` for `task_id` of `agent`, in the 1.0 shape.
    pub(crate) async fn get_task(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
        interface_tenant: Option<&str>,
    ) -> Result<Value, DeliveryError> {
        let Some(endpoint) = self.endpoints.endpoint(tenant, agent) else {
            return Err(DeliveryError::Permanent {
                reason: format!("no endpoint for agent {agent}"),
                source: None,
            });
        };
        self.client
            .get_task(&endpoint, task_id, interface_tenant)
            .await
    }

    /// Before the first attempt of `entry` (a queued lapse task) of an agent whose origins are
    /// checked ([`watcher_runtime::directory::Directory::checks_origin_before_send`]: every agent
    /// that answers `GetTask`, lifecycle-trusted or not): asks for the origin task once, and for
    /// each task of its lineage (docs/interpretation.md "Withdrawal follows the lineage").
    ///
    /// The lineage is the one the lapse task carries (`OutboxEntry::origin_lineage`: the
    /// origin's lineage when the lapse was determined), at most `lineage_bound + 1` tasks, so
    /// the check costs at most that many `GetTask`s more than the origin's, and one keyed read
    /// of their records ([`kept_lineage`]; none when the origin has no lineage). A task the
    /// record already shows ended is not asked for: the entry is withdrawn at once. Nor is one
    /// the record shows completed (a terminal state is final). The first task found canceled, failed or rejected: its
    /// snapshot is ingested (its expectations, and those of every task below it, are
    /// withdrawn), the entry is marked `withdrawn` with the reason, and the answer is `false`
    /// (do not send). Anything else, a later attempt, or a check that cannot be made (logged;
    /// a task that cannot be asked for is passed over): `true`.
    ///
    /// # Errors
    /// A [`StoreError`] marking the entry.
    pub async fn check_before_send(&self, entry: &OutboxEntry) -> Result<bool, StoreError> {
        if !self
            .watcher
            .directory
            .checks_origin_before_send(&entry.tenant, &entry.agent)
            || entry.attempts > 0
            || entry.attempt_started_at.is_some()
        {
            return Ok(true);
        }
        let Some(origin) = entry
            .request
            .pointer("/message/referenceTaskIds/0")
            .and_then(Value::as_str)
        else {
            return Ok(true);
        };
        let kept = kept_lineage(
            &*self.watcher.store,
            &entry.tenant,
            &entry.agent,
            &entry.origin_lineage,
            self.clock.now(),
        )
        .await;
        if let Some((task, state)) = &kept.ended {
            return self.withdraw_ended(entry, origin, task, state).await;
        }
        let interface_tenant = entry.request.get("tenant").and_then(Value::as_str);
        for task_id in std::iter::once(origin).chain(kept.ask.iter().map(String::as_str)) {
            let task = match self
                .get_task(&entry.tenant, &entry.agent, task_id, interface_tenant)
                .await
            {
                Ok(task) => task,
                Err(e) => {
                    tracing::info!(message_id = %entry.message_id, agent = %entry.agent, origin, task_id,
                        error = %e.describe(), "origin check before sending: GetTask failed; passed over");
                    continue;
                }
            };
            let state = state_of(&task);
            if !withdraws(state) {
                continue;
            }
            self.record_withdrawing(entry, origin, task_id, &task).await;
            return self
                .mark_withdrawn(entry, found_why(origin, task_id, state))
                .await;
        }
        Ok(true)
    }

    /// Withdraws `entry` (answers `false`) because the task `task` of its origin's lineage is
    /// recorded ended in `state`, as [`Reconciler::check_before_send`] does.
    pub(crate) async fn withdraw_ended(
        &self,
        entry: &OutboxEntry,
        origin: &str,
        task: &str,
        state: &str,
    ) -> Result<bool, StoreError> {
        tracing::info!(message_id = %entry.message_id, agent = %entry.agent, origin, task = %task,
            state = %state, "origin check before sending: a task of the origin's lineage ended; the lapse task is not sent");
        let why = format!(
            "not sent: the task {task:?} of the origin task {origin:?}'s lineage had reached \
             {state}; the expectations of its lineage were withdrawn (expectations-v1 §8.1)"
        );
        self.mark_withdrawn(entry, why).await
    }

    /// Records the snapshot `task` (the task `task_id` of `entry`'s origin's lineage, found
    /// canceled, failed or rejected) through the push ingest path and stops following it, as
    /// [`Reconciler::check_before_send`] does; failures are logged.
    pub(crate) async fn record_withdrawing(
        &self,
        entry: &OutboxEntry,
        origin: &str,
        task_id: &str,
        task: &Value,
    ) {
        let state = state_of(task);
        let now = self.clock.now();
        match ingest_task(&self.watcher, &entry.tenant, &entry.agent, task, now).await {
            Ok(ingested) => {
                tracing::info!(message_id = %entry.message_id, agent = %entry.agent, origin, task_id,
                    state = state.as_str(), withdrawn = ingested.withdrawn,
                    "origin check before sending: a task of the origin's lineage ended without a push; withdrawn, the lapse task is not sent");
            }
            Err(e) => {
                tracing::warn!(message_id = %entry.message_id, origin, task_id, error = %e,
                        "origin check before sending: the snapshot could not be recorded; the lapse task is not sent");
            }
        }
        let key = (
            entry.tenant.clone(),
            entry.agent.clone(),
            task_id.to_owned(),
        );
        self.watcher.directory.origins().stop(&key);
        if self.watcher.directory.origins_in_store() {
            if let Err(e) = self.watcher.store.origin_stop(&key).await {
                tracing::warn!(task_id, error = %e,
                        "origin check before sending: could not stop following the task; the next poll stops it");
            }
        }
    }

    /// Marks `entry` `withdrawn` with `why` (read again: only a lapse task still `queued` is
    /// marked); answers `false` (do not send).
    pub(crate) async fn mark_withdrawn(
        &self,
        entry: &OutboxEntry,
        why: String,
    ) -> Result<bool, StoreError> {
        let Some(mut current) = self
            .watcher
            .store
            .outbox_get(&entry.tenant, &entry.agent, &entry.message_id)
            .await?
        else {
            return Ok(false);
        };
        if current.delivery != DeliveryState::Queued {
            return Ok(false);
        }
        current.delivery = DeliveryState::Withdrawn;
        current.follow_at = None;
        current.last_error = Some(why);
        self.watcher.store.outbox_update(&current).await?;
        Ok(false)
    }

    /// Polls the followed lapse task `entry` with `GetTask`, feeds the answer through the push
    /// ingest path (a successor raised in its artifacts without a push is recorded), and answers
    /// its state for [`crate::deliver::Submitter::record_poll_result`].
    pub async fn poll_lapse_task(&self, entry: &OutboxEntry) -> Result<TaskState, DeliveryError> {
        let Some(task_id) = entry.task_id.as_deref() else {
            return Err(DeliveryError::Permanent {
                reason: "no task id to poll".into(),
                source: None,
            });
        };
        let interface_tenant = entry.request.get("tenant").and_then(Value::as_str);
        let task = self
            .get_task(&entry.tenant, &entry.agent, task_id, interface_tenant)
            .await?;
        let now = self.clock.now();
        match ingest_task(&self.watcher, &entry.tenant, &entry.agent, &task, now).await {
            Ok(ingested) if ingested.raised + ingested.withdrawn > 0 => {
                tracing::info!(message_id = %entry.message_id, task_id, raised = ingested.raised,
                    withdrawn = ingested.withdrawn, "the followed lapse task's artifacts were recorded");
                self.wake.notify_waiters();
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(message_id = %entry.message_id, task_id, error = %e,
                    "the followed lapse task's snapshot could not be recorded");
            }
        }
        Ok(state_of(&task))
    }

    /// Polls the origin tasks due at `now` (at most one batch); answers how many were polled or
    /// put off. Those of an agent whose lapse tasks are being sent ([`Reconciler::sending`]) are
    /// put off `DEFER_STEP`, not polled.
    pub async fn poll_due(&self, now: Instant) -> usize {
        let origins = self.watcher.directory.origins();
        let (deferred, due): (Vec<FollowedOrigin>, Vec<FollowedOrigin>) = origins
            .due(now, BATCH)
            .into_iter()
            .partition(|f| self.sending.defers(&f.tenant, &f.agent, now));
        for f in &deferred {
            origins.reschedule(&f.key(), add(now, DEFER_STEP));
        }
        let n = due.len() + deferred.len();
        stream::iter(due)
            .for_each_concurrent(IN_FLIGHT, |f| self.poll_origin(f))
            .await;
        n
    }

    /// One poll of one origin task followed in memory.
    async fn poll_origin(&self, f: FollowedOrigin) {
        let key = f.key();
        let origins = self.watcher.directory.origins();
        match self.poll_followed(&f).await {
            Some(next) => origins.reschedule(&key, next),
            None => origins.stop(&key),
        }
    }

    /// Polls the origin tasks followed in the store (`Origins::origins_due`) whose next poll is due
    /// at `now`: for each registered agent, at most one batch (an agent no longer reconciled has
    /// them stopped without a poll; one whose lapse tasks are being sent, [`Reconciler::sending`],
    /// is left for a later pass), read
    /// from the store's index by (tenant, agent, next poll), so a pass costs what is due. Each
    /// answer is ingested as [`Reconciler::poll_due`]'s are, and the next poll (or the end of
    /// following) written back. An agent whose due origins cannot be read, or a write that
    /// fails, is logged and left to the next pass. Answers how many were polled. The
    /// serverless sweep calls it (every 5 minutes). An agent not reconciled now is read only in
    /// its slot of the hour ([`CLEANUP_SLOTS`]): its origins followed from before are stopped
    /// within an hour of falling due, and a pass costs a query per shard of the reconciled agents
    /// only, not of every agent.
    pub async fn poll_stored_due(&self, now: Instant) -> usize {
        // Every registered agent: one no longer reconciled (promoted by a probe, say) has the
        // origins it still has followed stopped, as they fall due. IN_FLIGHT agents' reads at
        // once: with many agents, the pass takes about its slowest read, not their sum.
        // An agent whose lapse tasks are being sent is not read: its due origins stay due in
        // the store, for a pass after its sends (or after MAX_DEFER).
        // An agent not reconciled now (`reconcile = false`, or promoted by a probe) follows no
        // new origin: only those followed before it stopped being reconciled are left, to be
        // stopped. It is read in its own slot of the hour (`cleanup_slot`), not every pass: a
        // read is one query per shard of its origins, and most such agents never had one.
        let directory = &self.watcher.directory;
        let agents: Vec<_> = directory
            .entries()
            .into_iter()
            .filter(|a| !self.sending.defers(&a.tenant, &a.profile.id, now))
            .filter(|a| {
                directory.reconciles(&a.tenant, &a.profile.id)
                    || cleanup_slot(&a.tenant, &a.profile.id) == slot_of(now)
            })
            .collect();
        let found: Vec<Vec<FollowedOrigin>> = stream::iter(agents)
            .map(|agent| async move {
                self.watcher
                    .store
                    .origins_due(&agent.tenant, &agent.profile.id, now, BATCH)
                    .await
                    .unwrap_or_else(|e| {
                        tracing::warn!(agent = %agent.profile.id, error = %e,
                            "origin-task reconciliation: reading the followed origin tasks failed; next pass");
                        Vec::new()
                    })
            })
            .buffer_unordered(IN_FLIGHT)
            .collect()
            .await;
        let due: Vec<FollowedOrigin> = found.into_iter().flatten().collect();
        let n = due.len();
        stream::iter(due)
            .for_each_concurrent(IN_FLIGHT, |f| async move {
                let key = f.key();
                let written = match self.poll_followed(&f).await {
                    Some(next) => self.watcher.store.origin_reschedule(&key, next).await,
                    None => self.watcher.store.origin_stop(&key).await,
                };
                if let Err(e) = written {
                    tracing::warn!(agent = %f.agent, task_id = %f.task_id, error = %e,
                        "origin-task reconciliation: recording the poll failed; asked again at the next pass");
                }
            })
            .await;
        n
    }

    /// Asks for the followed origin task `f` and ingests the answer; answers when to ask next,
    /// or `None` to stop following it (terminal, followed for `give_up_after`, a permanent
    /// failure, or the agent no longer reconciled).
    async fn poll_followed(&self, f: &FollowedOrigin) -> Option<Instant> {
        if !self.reconciles(&f.tenant, &f.agent) {
            return None;
        }
        // The card interface's `tenant`, as the agent's lapse tasks carry it.
        let interface_tenant = self
            .watcher
            .directory
            .get(&f.tenant, &f.agent)
            .and_then(|a| a.delivery.tenant);
        let result = self
            .get_task(&f.tenant, &f.agent, &f.task_id, interface_tenant.as_deref())
            .await;
        let now = self.clock.now();
        let next = add(now, poll_delay(f.since, now, &self.policy));
        let too_old = elapsed(f.since, now) >= self.policy.give_up_after;
        match result {
            Ok(task) => {
                let state = state_of(&task);
                match ingest_task(&self.watcher, &f.tenant, &f.agent, &task, now).await {
                    Ok(ingested) => {
                        if ingested.raised + ingested.withdrawn > 0 {
                            self.wake.notify_waiters();
                        }
                        if ingested.withdrawn > 0 {
                            tracing::info!(agent = %f.agent, task_id = %f.task_id, state = state.as_str(),
                                withdrawn = ingested.withdrawn,
                                "origin-task reconciliation: GetTask found the task ended without a push; withdrawn");
                        }
                    }
                    Err(e) => {
                        tracing::warn!(agent = %f.agent, task_id = %f.task_id, error = %e,
                            "origin-task reconciliation: the snapshot could not be recorded; asking again later");
                        return Some(next);
                    }
                }
                if state.is_terminal() || too_old {
                    None
                } else {
                    Some(next)
                }
            }
            Err(e @ DeliveryError::Retryable { .. }) if !too_old => {
                tracing::debug!(agent = %f.agent, task_id = %f.task_id, error = %e.describe(),
                    "origin-task reconciliation: GetTask failed; asking again later");
                Some(next)
            }
            Err(e) => {
                tracing::info!(agent = %f.agent, task_id = %f.task_id, error = %e.describe(),
                    "origin-task reconciliation: stopped following the origin task");
                None
            }
        }
    }

    /// Polls due origin tasks until `stop` flips: at once when a batch was full, else when the
    /// earliest next poll comes (at most `MAX_IDLE` later: the queue is in memory, so looking
    /// costs nothing).
    ///
    /// With origins followed in the store
    /// ([`watcher_runtime::directory::Directory::origins_in_store`]), each pass is
    /// [`Reconciler::poll_stored_due`] instead, and the loop looks again at once after a pass that
    /// polled something, else `MAX_IDLE` later (one index read per reconciled agent).
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) {
        loop {
            if *stop.borrow() {
                return;
            }
            if self.watcher.directory.origins_in_store() {
                let polled = self.poll_stored_due(self.clock.now()).await;
                if polled > 0 {
                    continue;
                }
                tokio::select! {
                    () = tokio::time::sleep(MAX_IDLE) => {},
                    _ = stop.changed() => return,
                }
                continue;
            }
            let polled = self.poll_due(self.clock.now()).await;
            if polled == BATCH {
                continue;
            }
            let now = self.clock.now();
            let wait = self
                .watcher
                .directory
                .origins()
                .next_at()
                .map_or(MAX_IDLE, |at| elapsed(now, at).min(MAX_IDLE))
                .max(Duration::from_millis(10));
            tokio::select! {
                () = tokio::time::sleep(wait) => {},
                _ = stop.changed() => return,
            }
        }
    }
}

/// Slots of the hour in which an agent that is not reconciled has its origins followed from
/// before read ([`Reconciler::poll_stored_due`]): twelve of five minutes, the sweep's period, so
/// each such agent is read in about one pass an hour, the agents spread over the hour.
pub const CLEANUP_SLOTS: u64 = 12;

/// The slot of the hour (`0..CLEANUP_SLOTS`) in which `agent`'s leftover origins are read: a
/// stable hash of (tenant, agent), the same in every process and release (FNV-1a; the standard
/// library's hasher is seeded per process).
pub fn cleanup_slot(tenant: &Tenant, agent: &AgentId) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in tenant
        .as_str()
        .bytes()
        .chain([0])
        .chain(agent.as_str().bytes())
    {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash % CLEANUP_SLOTS
}

/// The slot of the hour `now` (UTC) falls in: its five minutes (`0..CLEANUP_SLOTS`).
pub fn slot_of(now: Instant) -> u64 {
    let seconds = u64::try_from(now.as_second().rem_euclid(3600)).unwrap_or(0);
    seconds / (3600 / CLEANUP_SLOTS)
}
