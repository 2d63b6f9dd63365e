//! Per-agent delivery lanes (serve's delivery loop): each agent's lapse tasks are taken from the
//! outbox and sent by its own task, at most [`LaneSettings::per_agent`] in flight for that agent
//! and [`LaneSettings::total`] over all agents, so a slow or dead agent never delays another.
//!
//! A lane loops: it reads up to [`LaneSettings::batch`] of its agent's queued entries due now
//! (`Outbox::outbox_of_agent`, an index by tenant, agent and delivery state), sends them, and
//! starts the next pass at once when the batch was full. Otherwise it waits for the earliest
//! next attempt of its agent, a wake-up, or stop. The wake-up is registered before the pass
//! (`Notified::enable`), so a lapse task queued while a pass runs is never missed; the
//! [`LaneSettings::idle`] bound is only a safety net under the wake-ups.
//!
//! A lane also follows its agent's delivered lapse tasks that asked for no push notifications,
//! polling `GetTask` when each is due (`Outbox::outbox_following`).
//!
//! The agent's rate limit (§13.2) is waited for inside the lane, in memory: excess lapse tasks
//! wait, are never dropped, and cost no write.

use std::sync::Arc;
use std::time::Duration;

use futures_util::stream::{self, StreamExt};
use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinHandle;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::clock::Clock;
use watcher_runtime::store::{DeliveryState, Outbox, OutboxEntry};

use crate::deliver::Submitter;
use crate::endpoint::Endpoints;
use crate::reconcile::Reconciler;
use crate::retry::elapsed;

/// How many lapse tasks are in flight, and how lanes wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneSettings {
    /// Lapse tasks in flight at once to one agent (`[delivery] in_flight_per_agent`). Default 4;
    /// `0` counts as 1.
    pub per_agent: usize,
    /// Lapse tasks in flight at once over all agents (`[delivery] in_flight`). Default 64; `0`
    /// counts as 1.
    pub total: usize,
    /// Entries one pass of a lane reads. Default 32; a full batch starts the next pass at once.
    pub batch: usize,
    /// Longest a lane waits with nothing due before looking again: a safety net only, since
    /// every write that queues a lapse task wakes the lanes and a lane knows its agent's next
    /// attempt and poll. Default 5 s, so a thousand idle agents cost a few hundred index reads a
    /// second, not thousands.
    pub idle: Duration,
}

impl Default for LaneSettings {
    fn default() -> Self {
        LaneSettings {
            per_agent: 4,
            total: 64,
            batch: 32,
            idle: Duration::from_secs(5),
        }
    }
}

/// What a lane needs, shared by every lane.
pub struct LaneContext {
    /// The outbox.
    pub store: Arc<dyn Outbox>,
    /// Posts and records lapse tasks (its rate limiter is shared by all lanes).
    pub submitter: Arc<Submitter>,
    /// Where each agent is.
    pub endpoints: Arc<dyn Endpoints>,
    /// The watcher's clock.
    pub clock: Arc<dyn Clock>,
    /// Woken when lapse tasks are queued (or re-queued).
    pub wake: Arc<Notify>,
    /// Flips to `true` to stop every lane.
    pub stop: watch::Receiver<bool>,
    /// In flight and waiting.
    pub settings: LaneSettings,
    /// Origin-task reconciliation (`None`: off): checks a lapse task's origin before it is first
    /// sent, and feeds followed lapse tasks' `GetTask` answers through the push ingest path.
    pub reconciler: Option<Arc<Reconciler>>,
}

/// Starts one lane per (tenant, agent) in `agents` and answers their handles; they run until
/// `ctx.stop` flips. A lapse task of an agent not in `agents` is not sent (serve makes a lane
/// for every agent in its configuration).
pub fn spawn_lanes(ctx: LaneContext, agents: Vec<(Tenant, AgentId)>) -> Vec<JoinHandle<()>> {
    let ctx = Arc::new(ctx);
    let total = Arc::new(Semaphore::new(ctx.settings.total.max(1)));
    agents
        .into_iter()
        .map(|(tenant, agent)| tokio::spawn(lane(ctx.clone(), total.clone(), tenant, agent)))
        .collect()
}

/// One agent's lane.
async fn lane(ctx: Arc<LaneContext>, total: Arc<Semaphore>, tenant: Tenant, agent: AgentId) {
    let mut stop = ctx.stop.clone();
    let batch = ctx.settings.batch.max(1);
    loop {
        if *stop.borrow() {
            return;
        }
        // Registered before the pass: a wake-up during the pass ends the wait below at once.
        let notified = ctx.wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        let pass = one_pass(&ctx, &total, &tenant, &agent, batch);
        let pass = tokio::select! {
            pass = pass => pass,
            _ = stop.changed() => return,
        };
        let wait = match pass {
            // More may be due: the next pass starts at once.
            Pass::Full => continue,
            Pass::Done => next_wait(&ctx, &tenant, &agent).await,
            // The store failed: wait before trying again rather than spin on it.
            Pass::StoreFailed => ctx.settings.idle,
        };
        if wait.is_zero() {
            continue;
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {},
            () = &mut notified => {},
            _ = stop.changed() => return,
        }
    }
}

/// How a pass ended.
enum Pass {
    /// The batch was full: more may be due.
    Full,
    /// Everything due was handled.
    Done,
    /// A store read or write failed.
    StoreFailed,
}

/// Sends what is due for the agent now.
async fn one_pass(
    ctx: &LaneContext,
    total: &Semaphore,
    tenant: &Tenant,
    agent: &AgentId,
    batch: usize,
) -> Pass {
    let now = ctx.clock.now();
    let due = match ctx
        .store
        .outbox_of_agent(tenant, agent, DeliveryState::Queued, Some(now), batch)
        .await
    {
        Ok(due) => due,
        Err(e) => {
            tracing::error!(error = %e, %tenant, %agent, "reading the agent's due lapse tasks failed; will retry");
            return Pass::StoreFailed;
        }
    };
    let follows = match ctx
        .store
        .outbox_following(tenant, agent, Some(now), batch)
        .await
    {
        Ok(f) => f,
        Err(e) => {
            tracing::error!(error = %e, %tenant, %agent, "reading the agent's followed lapse tasks failed; will retry");
            return Pass::StoreFailed;
        }
    };
    let full = due.len() == batch || follows.len() == batch;
    let mut recorded: Vec<bool> = stream::iter(due)
        .map(|entry| send_one(ctx, total, entry))
        .buffer_unordered(ctx.settings.per_agent.max(1))
        .collect()
        .await;
    let polled: Vec<bool> = stream::iter(follows)
        .map(|entry| poll_one(ctx, total, entry))
        .buffer_unordered(ctx.settings.per_agent.max(1))
        .collect()
        .await;
    recorded.extend(polled);
    if recorded.iter().any(|ok| !ok) {
        Pass::StoreFailed
    } else if full {
        Pass::Full
    } else {
        Pass::Done
    }
}

/// Waits for the agent's rate limit and a free slot, then sends one entry; answers whether the
/// store took every write.
async fn send_one(ctx: &LaneContext, total: &Semaphore, entry: OutboxEntry) -> bool {
    loop {
        let wait = ctx
            .submitter
            .limiter()
            .wait_time(&entry.tenant, &entry.agent, ctx.clock.now());
        if wait.is_zero() {
            break;
        }
        tokio::time::sleep(wait).await;
    }
    // The semaphore is never closed; a closed one would only mean "go ahead".
    let _permit = total.acquire().await.ok();
    if let Some(reconciler) = &ctx.reconciler {
        match reconciler.check_before_send(&entry).await {
            Ok(true) => {}
            Ok(false) => return true,
            Err(e) => {
                tracing::error!(error = %e, message_id = %entry.message_id, "recording a withdrawn lapse task failed");
                return false;
            }
        }
    }
    let outcome = ctx
        .submitter
        .deliver_one(
            &*ctx.store,
            &*ctx.endpoints,
            &entry.tenant,
            &entry.agent,
            &entry.message_id,
            ctx.clock.now(),
        )
        .await;
    match outcome {
        Ok(_) => true,
        Err(e) => {
            tracing::error!(
                error = %e,
                message_id = %entry.message_id,
                agent = %entry.agent,
                "recording a lapse task's attempt failed; it is looked for before it is sent again"
            );
            false
        }
    }
}

/// Polls one followed lapse task with `GetTask` (in a free slot) and records what it says;
/// answers whether the store took the write.
async fn poll_one(ctx: &LaneContext, total: &Semaphore, entry: OutboxEntry) -> bool {
    let _permit = total.acquire().await.ok();
    let recorded = match &ctx.reconciler {
        Some(reconciler) => {
            let result = reconciler.poll_lapse_task(&entry).await;
            ctx.submitter
                .record_poll_result(&*ctx.store, &entry, result, ctx.clock.now())
                .await
        }
        None => {
            ctx.submitter
                .poll_one(&*ctx.store, &*ctx.endpoints, &entry, ctx.clock.now())
                .await
        }
    };
    match recorded {
        Ok(_) => true,
        Err(e) => {
            tracing::error!(error = %e, message_id = %entry.message_id, "recording a GetTask poll failed");
            false
        }
    }
}

/// How long the lane may wait: until its agent's earliest next attempt or poll, at most `idle`.
async fn next_wait(ctx: &LaneContext, tenant: &Tenant, agent: &AgentId) -> Duration {
    let idle = ctx.settings.idle;
    let attempt = ctx
        .store
        .outbox_of_agent(tenant, agent, DeliveryState::Queued, None, 1)
        .await
        .ok()
        .and_then(|v| v.first().map(|e| e.next_attempt_at));
    let poll = ctx
        .store
        .outbox_following(tenant, agent, None, 1)
        .await
        .ok()
        .and_then(|v| v.first().and_then(|e| e.follow_at));
    match attempt.into_iter().chain(poll).min() {
        Some(at) => wait_until(ctx.clock.now(), at).min(idle),
        None => idle,
    }
}

fn wait_until(now: Instant, at: Instant) -> Duration {
    elapsed(now, at)
}
