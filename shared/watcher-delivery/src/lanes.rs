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

use tokio::sync::{watch, Notify, Semaphore};
use tokio::task::JoinHandle;
use watcher_core::ids::{AgentId, Tenant};
use watcher_runtime::clock::Clock;
use watcher_runtime::store::Outbox;

use crate::deliver::Submitter;
use crate::endpoint::Endpoints;
use crate::lane::{Lane, PassEnd};
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

/// One agent's lane: [`Lane::pass`] after pass, waiting between them for the agent's next
/// attempt or poll, its rate limit, a wake-up or stop.
async fn lane(ctx: Arc<LaneContext>, total: Arc<Semaphore>, tenant: Tenant, agent: AgentId) {
    let mut stop = ctx.stop.clone();
    let lane = Lane {
        tenant: &tenant,
        agent: &agent,
        store: &*ctx.store,
        submitter: &ctx.submitter,
        endpoints: &*ctx.endpoints,
        reconciler: ctx.reconciler.as_deref(),
        slots: Some(&total),
        per_agent: ctx.settings.per_agent,
        batch: ctx.settings.batch,
    };
    // Held from a pass that sent and found more due until the next pass holds its own: the
    // agent's origin polls wait between such passes too (Reconciler::sending).
    let mut _sending = None;
    loop {
        if *stop.borrow() {
            return;
        }
        // Registered before the pass: a wake-up during the pass ends the wait below at once.
        let notified = ctx.wake.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();

        let pass = tokio::select! {
            pass = lane.pass(&*ctx.clock, None) => pass,
            _ = stop.changed() => return,
        };
        let sent = pass.delivery != crate::deliver::DeliveryReport::default() || pass.withdrawn > 0;
        _sending = match (&pass.end, ctx.reconciler.as_deref()) {
            (PassEnd::More, Some(r)) if sent => Some(r.sending(&tenant, &agent)),
            _ => None,
        };
        let now = ctx.clock.now();
        let wait = match pass.end {
            // More may be due: the next pass starts at once.
            PassEnd::More => continue,
            PassEnd::Idle { next: Some(at) } => elapsed(now, at).min(ctx.settings.idle),
            PassEnd::Idle { next: None } => ctx.settings.idle,
            // Excess lapse tasks wait in memory for their tokens, with no write.
            PassEnd::Limited { until } => elapsed(now, until),
            // The store failed: wait before trying again rather than spin on it.
            PassEnd::StoreFailed => ctx.settings.idle,
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
