//! The submitter function: SQS wake-ups `{"tenant","agent"}` → that agent's [`Lane`] run pass
//! after pass, as serve's lanes run it → `SendMessage` to the agent. The backlog lives in the
//! table; the lapse queue carries a bounded number of wake-ups per agent (at most one a second,
//! `watcher_aws::wake_deduplication_id`), so no agent's backlog holds back another's lapse tasks
//! (docs/aws-latency.md, "One delivery path: wake-ups, not lapse tasks, on the queue").
//!
//! A batch's wake-ups are grouped by agent and the agents' lanes run concurrently, each with
//! `[delivery] in_flight_per_agent` lapse tasks in flight, one contextId's one after another
//! (`Lane::pass`). A lane stops taking lapse tasks at `stop_taking_at` (the invocation's
//! deadline less [`margin`]), and then:
//!
//! * more is due ([`PassEnd::More`]): a continuation wake-up is sent (a deduplication id of its
//!   own, `Redelivery::continue_lane`) and the wake-ups are deleted;
//! * the agent's next attempt or poll, or its next rate token, is ahead ([`PassEnd::Idle`],
//!   [`PassEnd::Limited`]): a delayed wake-up for that instant goes to the timer queue
//!   ([`LaneWakes::wake_lane_at`]) and the wake-ups are deleted;
//! * the store failed ([`PassEnd::StoreFailed`]): the wake-ups are handed back
//!   (`batchItemFailures`), to return after
//!   [`SUBMITTER_REDELIVERY`](crate::redelivery::SUBMITTER_REDELIVERY)'s backoff.
//!
//! The durable outbox, not the queue, guarantees one lapse task per (agent, `messageId`): each
//! entry is claimed before it is sent (`Outbox::outbox_claim*`, a lease), so an entry already
//! sent, or claimed by another invocation woken for the same agent, is not sent, however often
//! and to however many invocations SQS delivers a wake-up. The agent's rate limit is the shared
//! DynamoDB buckets (`Submitter::with_rate_buckets`). Before a lapse task's first send, its
//! origin is checked exactly as serve's lanes check it (`Reconciler::check_before_send`).

use std::time::Duration;

use async_trait::async_trait;
use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_delivery::deliver::Submitter;
use watcher_delivery::endpoint::Endpoints;
use watcher_delivery::lane::{Lane, PassEnd};
use watcher_delivery::reconcile::Reconciler;
use watcher_runtime::clock::Clock;
use watcher_runtime::ports::PortError;
use watcher_runtime::store::Outbox;

/// Sets when a handed-back wake-up is received again (SQS `ChangeMessageVisibility` on the
/// lapse queue), and continues a lane that ran out of time.
#[async_trait]
pub trait Redelivery: Send + Sync {
    /// Makes the message `receipt_handle` visible again `seconds` from now.
    ///
    /// # Errors
    /// The queue's refusal; the message then comes back after the queue's visibility timeout.
    async fn redeliver_after(&self, receipt_handle: &str, seconds: u32) -> Result<(), PortError>;

    /// Sends a continuation wake-up of the lane of `agent` of `tenant`, deduplicated by
    /// `continues` (the SQS message id of the wake-up whose lane ran out of time). The default
    /// refuses; the wake-ups are then handed back instead, to return at once.
    ///
    /// # Errors
    /// The queue's refusal.
    async fn continue_lane(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        continues: &str,
    ) -> Result<(), PortError> {
        let _ = continues;
        Err(PortError::new(
            false,
            format!("no continuation of agent {agent} of tenant {tenant} on this queue"),
            None,
        ))
    }
}

#[async_trait]
impl Redelivery for watcher_aws::SqsLapseQueue {
    async fn redeliver_after(&self, receipt_handle: &str, seconds: u32) -> Result<(), PortError> {
        watcher_aws::SqsLapseQueue::redeliver_after(self, receipt_handle, seconds).await
    }

    async fn continue_lane(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        continues: &str,
    ) -> Result<(), PortError> {
        self.wake_continuing(tenant, agent, continues).await
    }
}

/// [`Redelivery`] that leaves every message to the queue's visibility timeout and continues no
/// lane (for tests and emulators that hand batches to the handler directly).
pub struct QueueTimeout;

#[async_trait]
impl Redelivery for QueueTimeout {
    async fn redeliver_after(&self, _: &str, _: u32) -> Result<(), PortError> {
        Ok(())
    }
}

/// Delayed wake-ups of lanes: the timer queue's (`watcher_aws::SqsTimerQueue::wake_lane_at`, a
/// message delayed up to 900 s and sent on until the instant, then `LapseQueue::wake`).
#[async_trait]
pub trait LaneWakes: Send + Sync {
    /// Wakes the lane of `agent` of `tenant` at `at` (UTC).
    ///
    /// # Errors
    /// The queue's refusal; the wake-ups are then handed back to return at `at` instead.
    async fn wake_lane_at(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        at: Instant,
    ) -> Result<(), PortError>;
}

#[async_trait]
impl LaneWakes for watcher_aws::SqsTimerQueue {
    async fn wake_lane_at(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        at: Instant,
    ) -> Result<(), PortError> {
        watcher_aws::SqsTimerQueue::wake_lane_at(self, tenant, agent, at).await
    }
}

/// [`LaneWakes`] without a timer queue: every delayed wake-up is refused, so the wake-ups are
/// handed back to return at the instant (`ChangeMessageVisibility`), as before the timer queue.
pub struct NoLaneWakes;

#[async_trait]
impl LaneWakes for NoLaneWakes {
    async fn wake_lane_at(&self, _: &Tenant, agent: &AgentId, _: Instant) -> Result<(), PortError> {
        Err(PortError::new(
            false,
            format!("no timer queue to wake agent {agent} later"),
            None,
        ))
    }
}

/// What the submitter's lanes send with: the same parts and settings as serve's lanes
/// (`watcher_delivery::lanes`), without the process-wide slots (one invocation's lanes are its
/// batch's agents, at most `BatchSize`).
pub struct Lanes<'a> {
    /// The outbox.
    pub store: &'a dyn Outbox,
    /// Posts and records; its shared rate buckets are the agent's limit.
    pub submitter: &'a Submitter,
    /// Where each agent is.
    pub endpoints: &'a dyn Endpoints,
    /// Origin checks before a first send, and followed lapse tasks' `GetTask` answers (`None`:
    /// neither).
    pub reconciler: Option<&'a Reconciler>,
    /// Lapse tasks in flight at once to one agent: `[delivery] in_flight_per_agent`, serve's
    /// setting (default 4; `0` counts as 1).
    pub per_agent: usize,
    /// Entries one pass reads, of each kind (serve's lane batch, 32).
    pub batch: usize,
}

/// How long before its invocation's deadline a lane stops taking lapse tasks, given the A2A
/// client's `request_timeout`: a lapse task taken just before may still need its origin check
/// (`GetTask`) and its send (`SendMessage`), each up to the timeout, then its record and the
/// wake-up that follows; twice the timeout and 5 s more. With the default 10 s and the
/// function's 60 s timeout, a lane takes work for 35 s.
pub fn margin(request_timeout: Duration) -> Duration {
    request_timeout * 2 + Duration::from_secs(5)
}

/// The longest a lane waits inside its invocation for its agent's next attempt or rate token
/// before asking the timer queue to wake it instead: shorter than the timer queue's round trip
/// (a delayed message of whole seconds, the timer function, a wake-up), so a rate limit of a few
/// a second or a retry a second away is waited for here.
pub const INLINE_WAIT: Duration = Duration::from_secs(2);

/// How long a lane that moved nothing waits before it looks again at lapse tasks still due
/// (another sender's claim holds them: a crashed invocation's, until its lease ends).
pub const NO_PROGRESS: Duration = Duration::from_secs(1);

/// How far past the end of a wake-up's second a lane's last read must begin (clock skew between
/// the sender and this function: both are NTP-synchronized Lambda hosts, well under this).
pub const SECOND_SKEW: Duration = Duration::from_millis(100);

/// What a lane's run left to do with its agent's wake-ups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum After {
    /// Nothing more is known to be due: the wake-ups are deleted.
    Done,
    /// More is due and the invocation's time is short: a continuation wake-up, then deleted.
    Continue,
    /// The agent's next attempt, poll or rate token is at this instant (UTC): a delayed wake-up
    /// then, and the wake-ups deleted.
    WakeAt(Instant),
    /// The store failed: the wake-ups are handed back.
    StoreFailed,
}

/// One agent's wake-ups of a batch, and what its lane's run came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneRun {
    /// The agent's tenant.
    pub tenant: Tenant,
    /// The agent.
    pub agent: AgentId,
    /// Its wake-ups: `(SQS messageId, receiptHandle, ApproximateReceiveCount)`, in batch order.
    pub messages: Vec<(String, Option<String>, u32)>,
    /// Passes run.
    pub passes: usize,
    /// Lapse tasks sent or settled, withdrawn, and followed ones polled, over its passes.
    pub handled: usize,
    /// How it ended.
    pub after: After,
}

/// [`handle_batch`], then what each lane's run left to do carried out ([`settle`]); returns the
/// partial batch response.
pub async fn handle(
    lanes: &Lanes<'_>,
    redelivery: &dyn Redelivery,
    wakes: &dyn LaneWakes,
    clock: &dyn Clock,
    event: SqsEvent,
    stop_taking_at: Option<std::time::Instant>,
) -> SqsBatchResponse {
    let runs = handle_batch(lanes, clock, event, stop_taking_at).await;
    settle(&runs, redelivery, wakes, clock.now()).await
}

/// Before a batch at `now`: for each agent the batch names whose card this instance does not hold
/// in good health, picks up a newer card kept in the table ([`crate::cards::AgentCards::pick_up`]),
/// so a card the sweep read since this instance's cold start gives the agent its endpoint.
pub async fn pick_up_cards(
    cards: &(impl crate::cards::AgentCards + ?Sized),
    event: &SqsEvent,
    now: Instant,
) {
    for (tenant, agent) in agents_of(event) {
        cards.pick_up(&tenant, &agent, now).await;
    }
}

/// The distinct agents `event` wakes, in the order they first appear (unreadable messages
/// skipped).
fn agents_of(event: &SqsEvent) -> Vec<(Tenant, AgentId)> {
    let mut seen: Vec<(Tenant, AgentId)> = Vec::new();
    for record in &event.records {
        let Some(Ok(w)) = record.body.as_deref().map(watcher_aws::parse_wake_up) else {
            continue;
        };
        let key = (w.tenant, w.agent);
        if !seen.contains(&key) {
            seen.push(key);
        }
    }
    seen
}

/// Runs the lanes `event` wakes, concurrently, one per agent; answers each run, in the order
/// the agents first appear. A message that cannot be read is dropped with an error log (it can
/// never succeed; the outbox still holds whatever is queued, for the sweep). A message of an
/// earlier version (one lapse task) wakes its agent.
///
/// Each lane passes ([`Lane::pass`]) until it is idle, limited, out of time or the store fails;
/// a next attempt or rate token within [`INLINE_WAIT`] is waited for in the invocation when it
/// has the time. A lane woken by a wake-up of second `S` (its deduplication id) passes once more
/// after `S` has ended ([`SECOND_SKEW`]) before it ends idle: a wake-up of the same agent sent
/// later in `S` was dropped by SQS as a duplicate, and its lapse task must be seen by this lane.
pub async fn handle_batch(
    lanes: &Lanes<'_>,
    clock: &dyn Clock,
    event: SqsEvent,
    stop_taking_at: Option<std::time::Instant>,
) -> Vec<LaneRun> {
    // Agents in the order they first appear; each keeps its messages' batch order.
    let mut woken: Vec<(LaneRun, Option<i64>)> = Vec::new();
    for record in event.records {
        let id = record.message_id.clone().unwrap_or_default();
        let Some(body) = record.body.as_deref() else {
            tracing::error!(sqs_message_id = %id, "SQS message without a body; dropped");
            continue;
        };
        let wake = match watcher_aws::parse_wake_up(body) {
            Ok(w) => w,
            Err(e) => {
                tracing::error!(sqs_message_id = %id, error = %e, "not a lapse queue message; dropped");
                continue;
            }
        };
        let receives = record
            .attributes
            .get("ApproximateReceiveCount")
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(1);
        let message = (id, record.receipt_handle.clone(), receives);
        match woken
            .iter_mut()
            .find(|(r, _)| r.tenant == wake.tenant && r.agent == wake.agent)
        {
            Some((run, second)) => {
                run.messages.push(message);
                *second = (*second).max(wake.second);
            }
            None => woken.push((
                LaneRun {
                    tenant: wake.tenant,
                    agent: wake.agent,
                    messages: vec![message],
                    passes: 0,
                    handled: 0,
                    after: After::Done,
                },
                wake.second,
            )),
        }
    }
    futures_util::future::join_all(
        woken
            .into_iter()
            .map(|(run, second)| run_lane(lanes, clock, run, second, stop_taking_at)),
    )
    .await
}

/// One agent's lane, pass after pass (see [`handle_batch`]), in its own span.
async fn run_lane(
    lanes: &Lanes<'_>,
    clock: &dyn Clock,
    run: LaneRun,
    second: Option<i64>,
    stop_taking_at: Option<std::time::Instant>,
) -> LaneRun {
    use tracing::Instrument as _;
    let span = tracing::info_span!("lane", tenant = %run.tenant, agent = %run.agent);
    async move { run_passes(lanes, clock, run, second, stop_taking_at).await }
        .instrument(span)
        .await
}

/// [`run_lane`]'s passes.
async fn run_passes(
    lanes: &Lanes<'_>,
    clock: &dyn Clock,
    mut run: LaneRun,
    second: Option<i64>,
    stop_taking_at: Option<std::time::Instant>,
) -> LaneRun {
    let lane = Lane {
        tenant: &run.tenant,
        agent: &run.agent,
        store: lanes.store,
        submitter: lanes.submitter,
        endpoints: lanes.endpoints,
        reconciler: lanes.reconciler,
        slots: None,
        per_agent: lanes.per_agent,
        batch: lanes.batch,
    };
    // The instant after which a read sees every lapse task whose wake-up SQS dropped as a
    // duplicate of this one (the end of its second, and the skew).
    let mut settle_after = second.and_then(|s| {
        Instant::from_nanos((i128::from(s) + 1) * 1_000_000_000 + SECOND_SKEW.as_nanos() as i128)
            .ok()
    });
    let time_short = || stop_taking_at.is_some_and(|at| std::time::Instant::now() >= at);
    let after = loop {
        let started = clock.now();
        let report = lane.pass(clock, stop_taking_at).await;
        run.passes += 1;
        run.handled += report.delivery.total() + report.withdrawn + report.polled;
        if settle_after.is_some_and(|at| started >= at) {
            settle_after = None;
        }
        let next = match report.end {
            PassEnd::StoreFailed => break After::StoreFailed,
            PassEnd::More if time_short() => break After::Continue,
            PassEnd::More => continue,
            PassEnd::Idle { next } => next,
            PassEnd::Limited { until } => Some(until),
        };
        let now = clock.now();
        // A pass that moved nothing (each lapse task it read claimed by another sender, or
        // found no longer queued) with its agent due again at once would spin on the table:
        // look again a second later.
        let progress =
            report.delivery.total() - report.delivery.skipped + report.withdrawn + report.polled;
        let next = next.map(|at| {
            if progress == 0 && at <= now {
                Instant::from_nanos(now.as_nanos() + NO_PROGRESS.as_nanos() as i128).unwrap_or(at)
            } else {
                at
            }
        });
        // The instant to pass again at: the agent's own, or the end of the wake-up's second
        // when this pass began within it (whichever is sooner).
        let settle = settle_after.take();
        let again = match (next, settle) {
            (Some(at), Some(settle)) => Some(at.min(settle)),
            (at, settle) => at.or(settle),
        };
        let Some(at) = again else {
            break After::Done;
        };
        let wait = wait_until(now, at);
        let fits = match stop_taking_at {
            Some(stop) => std::time::Instant::now() + wait < stop,
            // No deadline (a test's direct call): never wait in the invocation.
            None => wait.is_zero(),
        };
        // Waited for in the invocation: lapse tasks to send moments away (a backlog draining, a
        // retry, a rate token) and the end of the wake-up's second. A lane with only followed
        // lapse tasks to poll is woken by the timer queue instead: its polls, seconds apart,
        // never hold an invocation (and the event source's poller) between them.
        let sending = report.delivery.total() - report.delivery.skipped + report.withdrawn > 0
            || matches!(report.end, PassEnd::Limited { .. });
        let worth = wait.is_zero() || sending || Some(at) == settle;
        if wait <= INLINE_WAIT && fits && worth {
            if !wait.is_zero() {
                tokio::time::sleep(wait).await;
            }
            continue;
        }
        match next {
            Some(at) if at <= now => break After::Continue,
            Some(at) => break After::WakeAt(at),
            None => break After::Done,
        }
    };
    tracing::info!(
        passes = run.passes,
        handled = run.handled,
        ?after,
        "lane run ended"
    );
    run.after = after;
    run
}

/// The wall-clock wait from `now` until `at` (zero when `at` has passed).
fn wait_until(now: Instant, at: Instant) -> Duration {
    let nanos = at.as_nanos().saturating_sub(now.as_nanos());
    Duration::from_nanos(u64::try_from(nanos.max(0)).unwrap_or(u64::MAX))
}

/// Carries out what each lane's run left to do at `now`, and answers the partial batch
/// response: a continuation ([`Redelivery::continue_lane`]) or a delayed wake-up
/// ([`LaneWakes::wake_lane_at`]) sent, its wake-ups deleted (not named in the response); when
/// that send fails, or the store failed, its wake-ups handed back (named), each made visible
/// again through `redelivery`: at once (1 s) for a continuation, at the instant for a delayed
/// wake-up, after [`SUBMITTER_REDELIVERY`](crate::redelivery::SUBMITTER_REDELIVERY)'s backoff of
/// its receive count after a store failure. A failed visibility change is logged: the message
/// then comes back after the queue's visibility timeout.
pub async fn settle(
    runs: &[LaneRun],
    redelivery: &dyn Redelivery,
    wakes: &dyn LaneWakes,
    now: Instant,
) -> SqsBatchResponse {
    let mut response = SqsBatchResponse::default();
    for run in runs {
        let continues = run.messages.first().map_or("", |(id, _, _)| id.as_str());
        // `None`: deleted; `Some(Some(s))`: handed back, visible again in `s` seconds;
        // `Some(None)`: after the store-failure backoff of its receive count.
        let back: Option<Option<u32>> = match &run.after {
            After::Done => None,
            After::Continue => match redelivery
                .continue_lane(&run.tenant, &run.agent, continues)
                .await
            {
                Ok(()) => None,
                Err(e) => {
                    tracing::warn!(error = %e, agent = %run.agent, "could not continue the lane; its wake-ups are handed back");
                    Some(Some(1))
                }
            },
            After::WakeAt(at) => match wakes.wake_lane_at(&run.tenant, &run.agent, *at).await {
                Ok(()) => None,
                Err(e) => {
                    let seconds = seconds_until(now, *at);
                    tracing::warn!(error = %e, agent = %run.agent, seconds, "could not ask the timer queue to wake the lane; its wake-ups return then instead");
                    Some(Some(seconds))
                }
            },
            After::StoreFailed => Some(None),
        };
        let Some(back) = back else { continue };
        for (id, receipt, receives) in &run.messages {
            if !id.is_empty() {
                let mut failure = BatchItemFailure::default();
                failure.item_identifier = id.clone();
                response.batch_item_failures.push(failure);
            }
            if let Some(receipt) = receipt {
                let seconds = back.unwrap_or_else(|| {
                    crate::redelivery::visibility_after(
                        &crate::redelivery::SUBMITTER_REDELIVERY,
                        *receives,
                    )
                });
                if let Err(e) = redelivery.redeliver_after(receipt, seconds).await {
                    tracing::warn!(error = %e, seconds, "could not set when a handed-back wake-up returns; the queue's visibility timeout applies");
                }
            }
        }
    }
    response
}

/// The monotonic instant a lane stops taking lapse tasks in an invocation whose deadline is
/// `deadline_ms` (milliseconds since the Unix epoch, Lambda's `Lambda-Runtime-Deadline-Ms`),
/// seen at the wall-clock `now_ms`: [`LANE_SLICE`] from now at most; `margin` before the
/// deadline, or half the time left when that is less (a request timeout long beside the function's timeout must not stop every lane
/// before it takes anything; a send outliving its invocation is looked up with `ListTasks` when
/// its claim ends, never sent twice).
pub fn stop_taking_at(deadline_ms: u64, now_ms: u64, margin: Duration) -> std::time::Instant {
    let left = Duration::from_millis(deadline_ms.saturating_sub(now_ms));
    std::time::Instant::now() + left.saturating_sub(margin.min(left / 2)).min(LANE_SLICE)
}

/// The longest an invocation's lanes take lapse tasks before they continue themselves (a
/// continuation wake-up, behind every other agent's waiting wake-ups in the queue): the event
/// source runs at most `SubmitterConcurrency` invocations at once, so a lane that kept its
/// invocation until the deadline would keep another agent's wake-up waiting that long. With
/// 5 s, an agent's backlog drains in slices, and another agent's wake-up waits at most a slice
/// for a free invocation when every one is busy.
pub const LANE_SLICE: Duration = Duration::from_secs(5);

/// Whole seconds from `now` until `at`, rounded up, at least 1 (a message made visible at once
/// would be received again before anything changed) and at most SQS's 12 hours.
pub fn seconds_until(now: Instant, at: Instant) -> u32 {
    let nanos = at.as_nanos().saturating_sub(now.as_nanos());
    let secs = (nanos + 999_999_999).div_euclid(1_000_000_000);
    secs.clamp(1, i128::from(watcher_aws::MAX_VISIBILITY_SECS)) as u32
}
