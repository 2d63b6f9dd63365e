//! The origin checks of one pass, grouped (issue 41 item 4; docs/interpretation.md "The origin
//! checks of a pass are grouped"): what [`Reconciler::check_before_send`] decides for each lapse
//! task, without one round trip per lapse task.
//!
//! [`OriginChecks::plan`] reads what each lapse task of the pass needs asked (its origin,
//! `referenceTaskIds[0]`, and the tasks of its lineage the record does not show terminal,
//! [`kept_lineage`]) and groups the questions:
//!
//! * **one question per distinct task** (single-flight): lapse tasks sharing an origin share one
//!   answer, and an answer is kept for [`FRESH`] for the passes that follow;
//! * **one `ListTasks` per context** (a2a-v1.md §1.1: `contextId`, `pageSize` 100,
//!   `historyLength` 0, no artifacts) where several lapse tasks of the pass share a contextId
//!   and need more than one task answered; a task the first page does not show, or a listing
//!   that fails (an agent without `ListTasks`, a 0.3 agent), falls back to `GetTask`.
//!
//! [`OriginChecks::run_ahead`] asks the questions in the order the lapse tasks were due, at most
//! [`CHECKS_IN_FLIGHT`] at once, beside the sends; [`OriginChecks::verdict`] waits for one lapse
//! task's own answers only, holding no delivery slot. The verdict is
//! [`Reconciler::check_before_send`]'s: withdrawn when a task of the lineage is recorded ended,
//! or its origin or a lineage task answers canceled, failed or rejected (the snapshot ingested
//! once through [`crate::reconcile::ingest_task`], the task no longer followed); a question
//! that cannot be answered is passed over.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use serde_json::Value;
use tokio::sync::{OnceCell, Semaphore};
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::store::{OutboxEntry, StoreError};

use crate::reconcile::{found_why, kept_lineage, state_of, withdraws, KeptLineage, Reconciler};
use crate::retry::elapsed;

/// How long an origin's answer is reused by later passes: 2 s. A cancel the agent does not push
/// within that window may let a lapse task go (the same race as a cancel landing between a
/// check and its send, widened to 2 s); a pushed cancel withdraws at once.
pub const FRESH: Duration = Duration::from_secs(2);

/// Origin questions (`GetTask` or `ListTasks`) in flight at once for one pass: 4, beside the
/// pass's `per_agent` sends.
pub const CHECKS_IN_FLIGHT: usize = 4;

/// `pageSize` of a context's `ListTasks` (the largest a2a-v1.md §1.1 allows); only the first
/// page is read.
pub const LIST_PAGE_SIZE: u32 = 100;

/// Answers kept longer than this many are pruned to the fresh ones.
const KEPT: usize = 4096;

/// How long an agent's origin polls wait at most while it has lapse tasks being sent: 10 s,
/// after which one pass polls them anyway.
pub const MAX_DEFER: Duration = Duration::from_secs(10);

type TaskKey = (Tenant, AgentId, String);

/// Origin answers (Task snapshots) kept for [`FRESH`], by (tenant, agent, task id); one per
/// [`Reconciler`]. Failures are not kept.
#[derive(Default)]
pub(crate) struct AnswerCache {
    inner: Mutex<HashMap<TaskKey, (Instant, Arc<Value>)>>,
}

impl AnswerCache {
    /// The answer for `key` taken within [`FRESH`] before `now`.
    fn get(&self, key: &TaskKey, now: Instant) -> Option<Arc<Value>> {
        let inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        inner
            .get(key)
            .filter(|(at, _)| *at <= now && elapsed(*at, now) < FRESH)
            .map(|(_, task)| task.clone())
    }

    /// Keeps `task` as the answer for `key` at `now`.
    fn put(&self, key: TaskKey, task: Arc<Value>, now: Instant) {
        let mut inner = self
            .inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if inner.len() >= KEPT {
            inner.retain(|_, (at, _)| *at <= now && elapsed(*at, now) < FRESH);
        }
        inner.insert(key, (now, task));
    }
}

/// Agents with lapse tasks being sent, whose origin-reconciliation polls wait (issue 41 item 4;
/// docs/interpretation.md "Origin polls wait while an agent's lapse tasks are sent"); one per
/// [`Reconciler`].
#[derive(Default)]
pub(crate) struct SendingAgents {
    inner: Mutex<HashMap<(Tenant, AgentId), Sending>>,
}

#[derive(Default)]
struct Sending {
    /// Guards held.
    held: usize,
    /// When a poll of the agent was first put off since it was last polled.
    deferred_since: Option<Instant>,
}

impl SendingAgents {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<(Tenant, AgentId), Sending>> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Marks (tenant, agent) sending until the guard drops.
    pub(crate) fn hold<'a>(&'a self, tenant: &Tenant, agent: &AgentId) -> SendingGuard<'a> {
        let key = (tenant.clone(), agent.clone());
        self.lock().entry(key.clone()).or_default().held += 1;
        SendingGuard { agents: self, key }
    }

    /// Whether a poll of (tenant, agent)'s origins at `now` waits: it has lapse tasks being sent
    /// and its polls have not waited [`MAX_DEFER`] yet (then this one goes, and the wait starts
    /// again).
    pub(crate) fn defers(&self, tenant: &Tenant, agent: &AgentId, now: Instant) -> bool {
        let mut inner = self.lock();
        let Some(s) = inner.get_mut(&(tenant.clone(), agent.clone())) else {
            return false;
        };
        if s.held == 0 {
            s.deferred_since = None;
            return false;
        }
        match s.deferred_since {
            None => {
                s.deferred_since = Some(now);
                true
            }
            Some(since) if since <= now && elapsed(since, now) >= MAX_DEFER => {
                s.deferred_since = None;
                false
            }
            Some(_) => true,
        }
    }
}

/// While held, the agent's origin polls wait ([`Reconciler::sending`]).
pub struct SendingGuard<'a> {
    agents: &'a SendingAgents,
    key: (Tenant, AgentId),
}

impl Drop for SendingGuard<'_> {
    fn drop(&mut self) {
        let mut inner = self.agents.lock();
        if let Some(s) = inner.get_mut(&self.key) {
            s.held = s.held.saturating_sub(1);
            if s.held == 0 {
                inner.remove(&self.key);
            }
        }
    }
}

/// What one lapse task's check needs.
enum Need {
    /// Nothing to ask: sent as it is.
    Pass,
    /// A task of the lineage is recorded ended: (origin, task, state).
    Ended(String, String, String),
    /// The origin, then these tasks of its lineage, in order.
    Ask { origin: String, tasks: Vec<String> },
}

/// One context's `ListTasks`, read once.
struct Listing {
    context: String,
    interface_tenant: Option<String>,
    tasks: OnceCell<Option<HashMap<String, Arc<Value>>>>,
}

/// One task's question.
struct Question {
    interface_tenant: Option<String>,
    listing: Option<Arc<Listing>>,
    answer: OnceCell<Option<Arc<Value>>>,
    /// Set once the task's withdrawing snapshot was recorded.
    recorded: OnceCell<()>,
}

/// The grouped origin checks of one pass's lapse tasks (see the module docs).
pub struct OriginChecks<'a> {
    reconciler: &'a Reconciler,
    tenant: Tenant,
    agent: AgentId,
    needs: HashMap<String, Need>,
    questions: HashMap<String, Question>,
    /// Task ids in the order their first lapse task was due.
    order: Vec<String>,
    in_flight: Semaphore,
}

impl<'a> OriginChecks<'a> {
    /// Plans the checks of `entries` (queued lapse tasks of `tenant`'s `agent`, in the order
    /// they were due): one keyed read of the record per distinct lineage ([`kept_lineage`]),
    /// nothing sent. Lapse tasks whose origins are not checked
    /// ([`Reconciler::checks_before_send`]), later attempts and lapse tasks without an origin
    /// pass.
    pub async fn plan(
        reconciler: &'a Reconciler,
        tenant: &Tenant,
        agent: &AgentId,
        entries: &[OutboxEntry],
    ) -> OriginChecks<'a> {
        let mut checks = OriginChecks {
            reconciler,
            tenant: tenant.clone(),
            agent: agent.clone(),
            needs: HashMap::new(),
            questions: HashMap::new(),
            order: Vec::new(),
            in_flight: Semaphore::new(CHECKS_IN_FLIGHT),
        };
        let checked = reconciler.checks_before_send(tenant, agent);
        let now = reconciler.clock().now();
        let mut lineages: HashMap<Vec<String>, KeptLineage> = HashMap::new();
        // Per context: its lapse tasks, and the tasks they need, in order.
        let mut contexts: HashMap<String, (usize, Vec<String>)> = HashMap::new();
        for entry in entries {
            let origin = entry
                .request
                .pointer("/message/referenceTaskIds/0")
                .and_then(Value::as_str);
            let need = match origin {
                Some(origin)
                    if checked && entry.attempts == 0 && entry.attempt_started_at.is_none() =>
                {
                    let kept = match lineages.get(&entry.origin_lineage) {
                        Some(kept) => kept.clone(),
                        None => {
                            let kept = kept_lineage(
                                &*reconciler.watcher().store,
                                tenant,
                                agent,
                                &entry.origin_lineage,
                                now,
                            )
                            .await;
                            lineages.insert(entry.origin_lineage.clone(), kept.clone());
                            kept
                        }
                    };
                    match kept.ended {
                        Some((task, state)) => Need::Ended(origin.to_owned(), task, state),
                        None => Need::Ask {
                            origin: origin.to_owned(),
                            tasks: kept.ask,
                        },
                    }
                }
                _ => Need::Pass,
            };
            if let Need::Ask { origin, tasks } = &need {
                let interface_tenant = entry.request.get("tenant").and_then(Value::as_str);
                let context = crate::lane::context_of(entry);
                let group = contexts.entry(context.to_owned()).or_default();
                group.0 += 1;
                for task in std::iter::once(origin).chain(tasks) {
                    if !group.1.contains(task) {
                        group.1.push(task.clone());
                    }
                    if !checks.questions.contains_key(task) {
                        checks.order.push(task.clone());
                        checks.questions.insert(
                            task.clone(),
                            Question {
                                interface_tenant: interface_tenant.map(str::to_owned),
                                listing: None,
                                answer: OnceCell::new(),
                                recorded: OnceCell::new(),
                            },
                        );
                    }
                }
            }
            checks.needs.insert(entry.message_id.clone(), need);
        }
        // One listing for a context whose lapse tasks need more than one task answered that no
        // fresh answer covers.
        for (context, (lapse_tasks, tasks)) in contexts {
            let unanswered: Vec<&String> = tasks
                .iter()
                .filter(|t| {
                    let key = (tenant.clone(), agent.clone(), (*t).clone());
                    reconciler.answers.get(&key, now).is_none()
                })
                .collect();
            if context.is_empty() || lapse_tasks < 2 || unanswered.len() < 2 {
                continue;
            }
            let interface_tenant = checks
                .questions
                .get(unanswered[0])
                .and_then(|q| q.interface_tenant.clone());
            let listing = Arc::new(Listing {
                context,
                interface_tenant,
                tasks: OnceCell::new(),
            });
            for task in unanswered {
                if let Some(q) = checks.questions.get_mut(task) {
                    // A task needed in two contexts is listed with the first.
                    if q.listing.is_none() {
                        q.listing = Some(listing.clone());
                    }
                }
            }
        }
        checks
    }

    /// Asks every planned question, in the order the lapse tasks were due, at most
    /// [`CHECKS_IN_FLIGHT`] at once; returns when all are answered.
    pub async fn run_ahead(&self) {
        stream::iter(&self.order)
            .for_each_concurrent(CHECKS_IN_FLIGHT, |task| async move {
                self.answer(task).await;
            })
            .await;
    }

    /// `entry`'s verdict, as [`Reconciler::check_before_send`] gives it: `true` send, `false`
    /// withdrawn (marked). Waits for its own questions only. An entry the plan did not see is
    /// checked by [`Reconciler::check_before_send`].
    ///
    /// # Errors
    /// A [`StoreError`] marking the entry.
    pub async fn verdict(&self, entry: &OutboxEntry) -> Result<bool, StoreError> {
        let (origin, tasks) = match self.needs.get(&entry.message_id) {
            None => return self.reconciler.check_before_send(entry).await,
            Some(Need::Pass) => return Ok(true),
            Some(Need::Ended(origin, task, state)) => {
                return self
                    .reconciler
                    .withdraw_ended(entry, origin, task, state)
                    .await
            }
            Some(Need::Ask { origin, tasks }) => (origin, tasks),
        };
        for task_id in std::iter::once(origin).chain(tasks) {
            let Some(task) = self.answer(task_id).await else {
                continue;
            };
            let state = state_of(&task);
            if !withdraws(state) {
                continue;
            }
            if let Some(q) = self.questions.get(task_id) {
                q.recorded
                    .get_or_init(|| async {
                        self.reconciler
                            .record_withdrawing(entry, origin, task_id, &task)
                            .await;
                    })
                    .await;
            }
            return self
                .reconciler
                .mark_withdrawn(entry, found_why(origin, task_id, state))
                .await;
        }
        Ok(true)
    }

    /// The answer for `task_id` (asked once; `None` when it cannot be had, logged).
    async fn answer(&self, task_id: &str) -> Option<Arc<Value>> {
        let q = self.questions.get(task_id)?;
        q.answer.get_or_init(|| self.ask(task_id, q)).await.clone()
    }

    /// Asks for `task_id`: a fresh kept answer, else its context's listing, else `GetTask`.
    async fn ask(&self, task_id: &str, q: &Question) -> Option<Arc<Value>> {
        let key = (self.tenant.clone(), self.agent.clone(), task_id.to_owned());
        let r = self.reconciler;
        if let Some(kept) = r.answers.get(&key, r.clock().now()) {
            return Some(kept);
        }
        if let Some(listing) = &q.listing {
            let listed = listing
                .tasks
                .get_or_init(|| self.list(listing))
                .await
                .as_ref()
                .and_then(|tasks| tasks.get(task_id).cloned());
            if listed.is_some() {
                return listed;
            }
        }
        let _permit = self.in_flight.acquire().await.ok();
        match r
            .get_task(
                &self.tenant,
                &self.agent,
                task_id,
                q.interface_tenant.as_deref(),
            )
            .await
        {
            Ok(task) => {
                let task = Arc::new(task);
                r.answers.put(key, task.clone(), r.clock().now());
                Some(task)
            }
            Err(e) => {
                tracing::info!(agent = %self.agent, task_id, error = %e.describe(),
                    "origin check before sending: GetTask failed; passed over");
                None
            }
        }
    }

    /// One context's `ListTasks`: its tasks by id (each kept as an answer), `None` when it
    /// failed (logged; each task is then asked with `GetTask`).
    async fn list(&self, listing: &Listing) -> Option<HashMap<String, Arc<Value>>> {
        let _permit = self.in_flight.acquire().await.ok();
        let r = self.reconciler;
        match r
            .list_context(
                &self.tenant,
                &self.agent,
                &listing.context,
                listing.interface_tenant.as_deref(),
            )
            .await
        {
            Ok(tasks) => {
                let now = r.clock().now();
                let mut by_id = HashMap::new();
                for task in tasks {
                    let Some(id) = task.get("id").and_then(Value::as_str).map(str::to_owned) else {
                        continue;
                    };
                    let task = Arc::new(task);
                    r.answers.put(
                        (self.tenant.clone(), self.agent.clone(), id.clone()),
                        task.clone(),
                        now,
                    );
                    by_id.insert(id, task);
                }
                Some(by_id)
            }
            Err(e) => {
                tracing::info!(agent = %self.agent, context = %listing.context, error = %e.describe(),
                    "origin check before sending: ListTasks failed; each origin is asked with GetTask");
                None
            }
        }
    }
}
