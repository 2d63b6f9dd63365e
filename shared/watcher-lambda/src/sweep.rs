//! The timer function's sweep (`{"sweep": true}`, every 5 minutes): it fires every timer due
//! by its instant, whatever happened to its schedule; re-queues lapse tasks queued too long
//! (one agent's backlog never hides another's, [`REQUEUE_PER_AGENT`]); refreshes the open
//! gauge; and, with [`Following`], polls the delivered lapse tasks and origin tasks whose next
//! poll is due ([`follow_due`], `Reconciler::poll_stored_due`). The timer's other events (a
//! schedule's fire, a timer-queue batch) are in [`crate::timer`].

use futures_util::stream::{self, StreamExt};
use watcher_core::time::Instant;
use watcher_delivery::deliver::Submitter;
use watcher_delivery::endpoint::Endpoints;
use watcher_delivery::reconcile::Reconciler;
use watcher_runtime::directory::AgentEntry;
use watcher_runtime::ports::LapseQueue;
use watcher_runtime::store::{DeliveryState, OutboxEntry, Store};
use watcher_runtime::watcher::Watcher;

use crate::timer::{lapses_in, TimerError, TimerReport};

/// How long a queued lapse task may wait past its next attempt before the sweep re-queues it
/// (the submitter normally picks it up within seconds).
pub const REQUEUE_AFTER_SECS: i64 = 120;

/// The most lapse tasks one sweep re-queues per agent, read from the outbox's per-agent index
/// (oldest next attempt first): one agent's backlog never hides another agent's lost message,
/// and a sweep's reads grow with the configured agents, not with any agent's backlog.
pub const REQUEUE_PER_AGENT: usize = 100;

/// The most followed lapse tasks one sweep polls per agent, read from the outbox's follow index
/// (earliest next poll first); the rest are polled at the next sweep.
pub const FOLLOW_PER_AGENT: usize = 100;

/// `GetTask` polls in flight at once during a sweep, over all agents.
const FOLLOW_IN_FLIGHT: usize = 8;

/// How many agents' reads a sweep makes at once (re-queueing, the open gauge, following).
const AGENTS_AT_ONCE: usize = 8;

/// What the sweep needs to follow lapse tasks with `GetTask` (the timer function's `env::Parts`).
pub struct Following<'a> {
    /// Records each poll (`Submitter::record_poll_result`, its retry policy's backoff).
    pub submitter: &'a Submitter,
    /// Where each agent is.
    pub endpoints: &'a (dyn Endpoints + 'a),
    /// Feeds each `GetTask` answer through the push ingest path (`Reconciler::poll_lapse_task`),
    /// as serve's lanes do; `None` records the state only (`Submitter::poll_one`).
    pub reconciler: Option<&'a Reconciler>,
    /// How long each following pass (lapse tasks, then origin tasks) may take
    /// ([`FOLLOW_BUDGET`] in the function): an agent that holds its answers never makes the sweep
    /// overrun the function's timeout. A poll cut short records nothing and is due again at the
    /// next sweep.
    pub budget: std::time::Duration,
}

/// Each following pass's budget in the timer function: two passes and the sweep's own work stay
/// well within the function's 120 s timeout (template.yaml).
pub const FOLLOW_BUDGET: std::time::Duration = std::time::Duration::from_secs(40);

/// The sweep: evaluates every deadline and horizon due by `now` whatever happened to its
/// schedule (a timer whose record cannot be written is skipped, logged, counted as
/// `TimerFailures` and fired at the next sweep: `Watcher::fire_due`), and re-queues lapse tasks
/// still queued well past their next attempt (a crash between commit and enqueue, or a lost
/// message): for each agent the watcher submits for, at most [`REQUEUE_PER_AGENT`]. An agent
/// whose queued lapse tasks cannot be read is skipped until the next sweep. Re-queueing is
/// safe: the submitter claims the entry before posting it and never sends a delivered or
/// claimed `messageId` again (`Outbox::outbox_claim`).
///
/// With `following`, it then polls the delivered lapse tasks the watcher follows whose next poll
/// is due by `now` ([`follow_due`]), so a lapse task whose agent never pushes still reaches its
/// final state, and the origin tasks followed in the table whose next poll is due
/// (`Reconciler::poll_stored_due`), so a cancel never pushed still withdraws.
///
/// # Errors
/// [`TimerError::Store`] when the due timers cannot be listed.
pub async fn sweep<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    following: Option<&Following<'_>>,
    now: Instant,
) -> Result<TimerReport, TimerError> {
    let fired = watcher.fire_due(now).await?;
    let mut report = TimerReport {
        evaluated: fired.len(),
        lapses: fired.iter().map(|(_, a)| lapses_in(a)).sum(),
        ..TimerReport::default()
    };
    let stale_before = now
        .checked_sub(jiff::SignedDuration::from_secs(REQUEUE_AFTER_SECS))
        .unwrap_or(now);
    // Each agent's reads are by key and bounded; AGENTS_AT_ONCE agents at a time, so a sweep
    // over many agents takes about what its slowest reads take, not their sum.
    let submitting = submitting_agents(watcher);
    let requeued: Vec<usize> = stream::iter(&submitting)
        .map(|agent| requeue_stuck(watcher, queue, agent, stale_before))
        .buffer_unordered(AGENTS_AT_ONCE)
        .collect()
        .await;
    report.requeued = requeued.into_iter().sum();
    // The open-expectations gauge: one counter read per configured agent, never a listing.
    // Read after `fire_due` closed what was due, the counter is the live count but for what
    // could not be fired (`open_expectations_by_counter`).
    let everyone = watcher.directory.entries();
    let counts: Vec<u64> = stream::iter(&everyone)
        .map(|agent| async move {
            watcher_runtime::metrics::open_expectations_by_counter(
                &*watcher.store,
                &agent.tenant,
                &agent.profile.id,
                now,
            )
            .await
            .unwrap_or_else(|e| {
                tracing::warn!(error = %e, agent = %agent.profile.id, "cannot read the agent's live count");
                0
            })
        })
        .buffer_unordered(AGENTS_AT_ONCE)
        .collect()
        .await;
    let open: u64 = counts.into_iter().sum();
    watcher.recorder().open_expectations(open);
    // Last, each pass within its budget: a slow agent delays only the polls after it.
    if let Some(following) = following {
        match tokio::time::timeout(following.budget, follow_due(watcher, following, now)).await {
            Ok(n) => report.followed = n,
            Err(_) => {
                tracing::warn!(budget = ?following.budget, "following lapse tasks ran out of the sweep's budget; the rest at the next sweep");
                report.cut_short = true;
            }
        }
        if let Some(reconciler) = following.reconciler {
            match tokio::time::timeout(following.budget, reconciler.poll_stored_due(now)).await {
                Ok(n) => report.origins = n,
                Err(_) => {
                    tracing::warn!(budget = ?following.budget, "following origin tasks ran out of the sweep's budget; the rest at the next sweep");
                    report.cut_short = true;
                }
            }
        }
    }
    Ok(report)
}

/// The agents the watcher submits lapse tasks for, from its directory.
fn submitting_agents<S: Store + ?Sized>(watcher: &Watcher<S>) -> Vec<AgentEntry> {
    watcher
        .directory
        .entries()
        .into_iter()
        .filter(|a| a.submits_lapses)
        .collect()
}

/// Re-queues `agent`'s lapse tasks still queued with their next attempt before `stale_before`,
/// at most [`REQUEUE_PER_AGENT`]; answers how many were re-queued. Failures are logged and left
/// to the next sweep.
async fn requeue_stuck<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    agent: &AgentEntry,
    stale_before: Instant,
) -> usize {
    let stuck = match watcher
        .store
        .outbox_of_agent(
            &agent.tenant,
            &agent.profile.id,
            DeliveryState::Queued,
            Some(stale_before),
            REQUEUE_PER_AGENT,
        )
        .await
    {
        Ok(stuck) => stuck,
        Err(e) => {
            tracing::warn!(error = %e, agent = %agent.profile.id, "reading the agent's queued lapse tasks failed; next sweep");
            return 0;
        }
    };
    let mut requeued = 0;
    for (entry, result) in stuck.iter().zip(queue.enqueue_all(&stuck).await) {
        match result {
            Ok(()) => requeued += 1,
            Err(e) => {
                tracing::warn!(error = %e, message_id = %entry.message_id, "re-queueing failed; next sweep");
            }
        }
    }
    requeued
}

/// Polls, with `GetTask`, the followed lapse tasks whose next poll is due by `now`: for each agent
/// the watcher submits for, at most [`FOLLOW_PER_AGENT`] from the outbox's follow index
/// (`Outbox::outbox_following`, a keyed read: a pass costs what is due, never the outbox's size),
/// `FOLLOW_IN_FLIGHT` at once. Each answer is recorded as serve's lanes record it (the task's
/// state, the next poll backing off from `poll_first` to `max_backoff`, following ending at a
/// terminal or interrupted state or after `give_up_after`). An agent whose followed lapse tasks
/// cannot be read, or a poll that cannot be recorded, is logged and left to the next sweep.
/// Answers how many were polled.
pub async fn follow_due<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    following: &Following<'_>,
    now: Instant,
) -> usize {
    let submitting = submitting_agents(watcher);
    let read: Vec<Vec<OutboxEntry>> = stream::iter(&submitting)
        .map(|agent| async move {
            watcher
                .store
                .outbox_following(&agent.tenant, &agent.profile.id, Some(now), FOLLOW_PER_AGENT)
                .await
                .unwrap_or_else(|e| {
                    tracing::warn!(error = %e, agent = %agent.profile.id, "reading the agent's followed lapse tasks failed; next sweep");
                    Vec::new()
                })
        })
        .buffer_unordered(AGENTS_AT_ONCE)
        .collect()
        .await;
    let due: Vec<OutboxEntry> = read.into_iter().flatten().collect();
    let polled = due.len();
    stream::iter(due)
        .for_each_concurrent(FOLLOW_IN_FLIGHT, |entry| async move {
            let recorded = match following.reconciler {
                Some(reconciler) => {
                    let result = reconciler.poll_lapse_task(&entry).await;
                    following
                        .submitter
                        .record_poll_result(&*watcher.store, &entry, result, now)
                        .await
                }
                None => {
                    following
                        .submitter
                        .poll_one(&*watcher.store, following.endpoints, &entry, now)
                        .await
                }
            };
            if let Err(e) = recorded {
                tracing::warn!(error = %e, message_id = %entry.message_id, "recording a GetTask poll failed; next sweep");
            }
        })
        .await;
    polled
}
