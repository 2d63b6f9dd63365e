//! The sweep's duties (style.md: "timers are hints, the record is the truth"), each a
//! [`Duty`] with its own `cron()` schedule, at its own minute, invoking the timer function with
//! `{"sweep": "<duty>"}` (template.yaml), so that a backlog in one never delays another, and
//! each within a budget: the invocation's remaining time less [`SWEEP_RESERVE`]
//! (docs/aws-latency.md, "The sweep's duties"). `{"sweep": true}` runs every duty in turn, each
//! within its share of the remaining time.
//!
//! * `timers`: fires every timer due by its instant, whatever happened to its schedule, then
//!   refreshes the open gauge;
//! * `requeue`: wakes again lapse tasks queued too long (one agent's backlog never hides
//!   another's, [`REQUEUE_PER_AGENT`]);
//! * `follow`: polls the followed lapse tasks the lanes left more than [`FOLLOW_MARGIN`]
//!   overdue ([`follow_due`]): the lanes poll them on time, this is the safety net;
//! * `origins`: polls the origin tasks followed in the table (`Reconciler::poll_stored_due`);
//! * `cards`: re-reads cards and runs the registration probe ([`AgentCards::refresh`]);
//! * `notify`: the notification channels' round ([`Notify`]).
//!
//! The timer's other events (a schedule's fire, a timer-queue batch) are in [`crate::timer`].

use std::time::{Duration, SystemTime};

use futures_util::stream::{self, StreamExt};
use watcher_core::time::Instant;
use watcher_delivery::deliver::Submitter;
use watcher_delivery::endpoint::Endpoints;
use watcher_delivery::reconcile::Reconciler;
use watcher_runtime::directory::AgentEntry;
use watcher_runtime::ports::LapseQueue;
use watcher_runtime::store::{DeliveryState, OutboxEntry, Store};
use watcher_runtime::watcher::Watcher;

use crate::cards::AgentCards;
use crate::timer::{lapses_in, TimerError, TimerReport};
use crate::timer_event::{Duty, SweepTick};

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
    pub budget: Duration,
}

/// Each following pass's budget in the timer function (`follow`, `origins`): below the `follow`
/// duty's one-minute period, so that a pass never runs beside the next tick's, and well within
/// the function's 120 s timeout (template.yaml).
pub const FOLLOW_BUDGET: Duration = Duration::from_secs(40);

/// How overdue a followed lapse task must be before the `follow` duty polls it: the submitter's
/// lanes poll each one when woken at its next poll (a delayed wake-up on the timer queue, within
/// about a second), so the duty takes only what they left for longer than this (a lost wake-up,
/// a lane held by a long pass), and never polls what a lane is about to poll. With the duty
/// every minute, a lapse task the lanes missed is polled 60 to 120 s after its poll fell due.
pub const FOLLOW_MARGIN: jiff::SignedDuration = jiff::SignedDuration::from_secs(60);

/// What every duty leaves of its invocation: the answer, the report's log line and the last
/// writes of a pass cut short.
pub const SWEEP_RESERVE: Duration = Duration::from_secs(5);

/// How many notifications a channel round told, and how many failed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NotifyCounts {
    /// Notifications delivered.
    pub delivered: u64,
    /// Notifications that failed (tried again at a later round).
    pub failed: u64,
}

/// The `notify` duty's work: one round of every `[[notify]]` channel (the host's notifier,
/// built per round). A round cut short by its budget resumes at the next from each channel's
/// cursor.
#[async_trait::async_trait]
pub trait Notify: Send + Sync {
    /// One round of every channel.
    async fn round(&self) -> NotifyCounts;
}

/// What the sweep's duties work with (the timer function's parts).
pub struct SweepParts<'a, S: Store + ?Sized> {
    /// The watcher: its store, directory and recorder.
    pub watcher: &'a Watcher<S>,
    /// Where `requeue` wakes lanes again.
    pub queue: &'a dyn LapseQueue,
    /// The cards `cards` re-reads; `None`: the duty does nothing.
    pub cards: Option<&'a dyn AgentCards>,
    /// What `follow` and `origins` poll with; `None`: they do nothing.
    pub following: Option<&'a Following<'a>>,
    /// The channels `notify` tells; `None`: the duty does nothing.
    pub notify: Option<&'a dyn Notify>,
}

/// Runs `tick`'s duties at `now`, in order, each within its budget: the time left before
/// `deadline` (the invocation's) less [`SWEEP_RESERVE`], divided among the duties still to run
/// (one duty has it all); `None` (no deadline known): no budget but each pass's own
/// ([`Following::budget`]). A duty cut short by its budget says so (`cut_short`, a warning) and
/// leaves the rest to its next tick: what it committed stays, what it had not is due again.
///
/// # Errors
/// [`TimerError::Store`] when `timers` cannot list the due timers (after every other duty of
/// the tick ran). Every other failure is logged and left to the next tick.
pub async fn run_duties<S: Store + ?Sized>(
    parts: &SweepParts<'_, S>,
    tick: SweepTick,
    now: Instant,
    deadline: Option<SystemTime>,
) -> Result<TimerReport, TimerError> {
    let duties = tick.duties();
    let mut report = TimerReport::default();
    let mut failed = None;
    for (i, duty) in duties.iter().copied().enumerate() {
        let budget = deadline.map(|d| share(d, SystemTime::now(), duties.len() - i));
        if let Err(e) = run_duty(parts, duty, now, budget, &mut report).await {
            tracing::error!(error = %e, %duty, "sweep duty failed; at its next tick");
            failed.get_or_insert(e);
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// A duty's share of the invocation: the time from `now` to `deadline`, less
/// [`SWEEP_RESERVE`], divided by the `left` duties still to run (the first of them this one).
pub fn share(deadline: SystemTime, now: SystemTime, left: usize) -> Duration {
    let remaining = deadline
        .duration_since(now)
        .unwrap_or(Duration::ZERO)
        .saturating_sub(SWEEP_RESERVE);
    remaining / u32::try_from(left.max(1)).unwrap_or(u32::MAX)
}

/// `work` within `budget` (`None`: unbounded): `None` when the budget ran out first.
async fn within<T>(
    budget: Option<Duration>,
    work: impl std::future::Future<Output = T>,
) -> Option<T> {
    match budget {
        Some(b) => tokio::time::timeout(b, work).await.ok(),
        None => Some(work.await),
    }
}

/// The shorter of two budgets, `None` being unbounded.
fn tighter(a: Option<Duration>, b: Duration) -> Option<Duration> {
    Some(a.map_or(b, |a| a.min(b)))
}

/// One duty within `budget`, its counts added to `report`.
async fn run_duty<S: Store + ?Sized>(
    parts: &SweepParts<'_, S>,
    duty: Duty,
    now: Instant,
    budget: Option<Duration>,
    report: &mut TimerReport,
) -> Result<(), TimerError> {
    let watcher = parts.watcher;
    let cut = |report: &mut TimerReport| {
        tracing::warn!(%duty, ?budget, "sweep duty ran out of its budget; the rest at its next tick");
        report.cut_short = true;
    };
    match duty {
        Duty::Timers => {
            // Counted as each group commits, so that a pass cut short still says what it did.
            let evaluated = std::sync::atomic::AtomicUsize::new(0);
            let lapses = std::sync::atomic::AtomicUsize::new(0);
            let fired = within(budget, async {
                watcher
                    .fire_due_handing_over(now, false, &mut |group| {
                        evaluated.fetch_add(group.len(), std::sync::atomic::Ordering::Relaxed);
                        lapses.fetch_add(
                            group.iter().map(|(_, a)| lapses_in(a)).sum(),
                            std::sync::atomic::Ordering::Relaxed,
                        );
                    })
                    .await?;
                open_gauge(watcher, now).await;
                Ok::<(), TimerError>(())
            })
            .await;
            report.evaluated += evaluated.into_inner();
            report.lapses += lapses.into_inner();
            match fired {
                Some(result) => result?,
                None => cut(report),
            }
        }
        Duty::Requeue => match within(budget, requeue_all(watcher, parts.queue, now)).await {
            Some(n) => report.requeued += n,
            None => cut(report),
        },
        Duty::Follow => {
            if let Some(following) = parts.following {
                let budget = tighter(budget, following.budget);
                match within(budget, follow_due(watcher, following, now)).await {
                    Some(n) => report.followed += n,
                    None => cut(report),
                }
            }
        }
        Duty::Origins => {
            if let Some((following, reconciler)) =
                parts.following.and_then(|f| f.reconciler.map(|r| (f, r)))
            {
                let budget = tighter(budget, following.budget);
                match within(budget, reconciler.poll_stored_due(now)).await {
                    Some(n) => report.origins += n,
                    None => cut(report),
                }
            }
        }
        Duty::Cards => {
            if let Some(cards) = parts.cards {
                match within(budget, cards.refresh(now)).await {
                    Some(read) => {
                        report.cards_tried += read.tried;
                        report.cards_read += read.read;
                        report.probed += read.probed;
                    }
                    None => cut(report),
                }
            }
        }
        Duty::Notify => {
            if let Some(notify) = parts.notify {
                match within(budget, notify.round()).await {
                    Some(told) => {
                        report.notified += told.delivered;
                        report.notify_failed += told.failed;
                    }
                    None => cut(report),
                }
            }
        }
    }
    Ok(())
}

/// Every duty but `cards` and `notify` at `now`, with no budget but `following`'s: what a
/// sweep was before its duties were split ([`run_duties`] with [`SweepTick::All`]), for tests.
///
/// # Errors
/// [`TimerError::Store`] when the due timers cannot be listed.
pub async fn sweep<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    following: Option<&Following<'_>>,
    now: Instant,
) -> Result<TimerReport, TimerError> {
    let parts = SweepParts {
        watcher,
        queue,
        cards: None,
        following,
        notify: None,
    };
    run_duties(&parts, SweepTick::All, now, None).await
}

/// The open-expectations gauge: one counter read per configured agent, never a listing. Read
/// after `fire_due` closed what was due, the counter is the live count but for what could not
/// be fired (`open_expectations_by_counter`). Then each agent's open incidents by lapse kind
/// (`watcher_runtime::metrics::open_incidents`: at most 1,000 entries of its open lane).
async fn open_gauge<S: Store + ?Sized>(watcher: &Watcher<S>, now: Instant) {
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
    watcher
        .recorder()
        .open_expectations(counts.into_iter().sum());
    // Each agent's open incidents by kind (at most OPEN_INCIDENTS_CAP read per agent), one line
    // per agent. A store that cannot list them is logged, and the next sweep tries again.
    let incidents: Vec<_> = stream::iter(&everyone)
        .map(|agent| async move {
            let counts = watcher_runtime::metrics::open_incidents(
                &*watcher.store,
                &agent.tenant,
                &agent.profile.id,
            )
            .await;
            (agent, counts)
        })
        .buffer_unordered(AGENTS_AT_ONCE)
        .collect()
        .await;
    for (agent, counts) in incidents {
        match counts {
            Ok(counts) => watcher
                .recorder()
                .open_incidents(&agent.profile.id, &counts),
            Err(e) => {
                tracing::warn!(error = %e, agent = %agent.profile.id, "cannot read the agent's open incidents");
            }
        }
    }
}

/// Re-queues lapse tasks still queued well past their next attempt (a crash between commit and
/// enqueue, or a lost message): for each agent the watcher submits for, at most
/// [`REQUEUE_PER_AGENT`], [`AGENTS_AT_ONCE`] agents at a time (a sweep over many agents takes
/// about what its slowest reads take, not their sum). An agent whose queued lapse tasks cannot
/// be read is skipped until the next tick. Re-queueing is safe: the submitter claims the entry
/// before posting it and never sends a delivered or claimed `messageId` again. Answers how many
/// were re-queued.
async fn requeue_all<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    queue: &dyn LapseQueue,
    now: Instant,
) -> usize {
    let stale_before = now
        .checked_sub(jiff::SignedDuration::from_secs(REQUEUE_AFTER_SECS))
        .unwrap_or(now);
    let submitting = submitting_agents(watcher);
    let requeued: Vec<usize> = stream::iter(&submitting)
        .map(|agent| requeue_stuck(watcher, queue, agent, stale_before))
        .buffer_unordered(AGENTS_AT_ONCE)
        .collect()
        .await;
    requeued.into_iter().sum()
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

/// Polls, with `GetTask`, the followed lapse tasks whose next poll fell due more than
/// [`FOLLOW_MARGIN`] before `now` (the lanes poll the rest on time): for each agent
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
    // Only what the lanes left overdue by more than the margin; polled and recorded at `now`.
    let overdue_by = now.checked_sub(FOLLOW_MARGIN).unwrap_or(now);
    let read: Vec<Vec<OutboxEntry>> = stream::iter(&submitting)
        .map(|agent| async move {
            watcher
                .store
                .outbox_following(&agent.tenant, &agent.profile.id, Some(overdue_by), FOLLOW_PER_AGENT)
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
