//! One agent's lane: the one send path of both deployments (contracts/serve.md "A lapse task is
//! delivered when …"; docs/aws-latency.md "One delivery path").
//!
//! A [`Lane`] is one (tenant, agent). One [`Lane::pass`] reads up to `batch` of the agent's
//! queued lapse tasks due now and up to `batch` of its followed lapse tasks due a poll, both from
//! the outbox's per-agent indexes (the cost follows what is due, not the outbox), then:
//!
//! 1. takes the agent's rate tokens for the due ones at once (expectations-v1 §13.2): what the
//!    bucket cannot cover now waits, with no write, and the pass ends [`PassEnd::Limited`];
//! 2. sends them, at most `per_agent` in flight, lapse tasks of one contextId one after another
//!    in the order they were due, so the agent sees a context's lapse tasks in order; the batch is
//!    shared among the contexts so that the places stay busy for the whole pass, with one deeper
//!    read when the first holds too few contexts ([`crate::contexts`]);
//! 3. checks each one's origin before its first send, where origins are checked, with
//!    [`crate::reconcile::Reconciler::check_before_send`]'s verdict but grouped
//!    ([`crate::origin_checks`]: one question per distinct origin, one `ListTasks` per shared
//!    context, asked ahead of the sends with their own concurrency; a send waits for its own
//!    origin's answer only, holding no slot), and meanwhile puts off the agent's origin polls
//!    ([`crate::reconcile::Reconciler::sending`]);
//! 4. claims, posts and records each by the entry it holds (no second read:
//!    [`Submitter::deliver_read_with`]);
//! 5. polls the followed ones with `GetTask` and records what they say (one round of
//!    `per_agent` when a full batch was due to be sent: the rest wait for a later pass).
//!
//! `serve` runs one loop per agent over [`Lane::pass`] (crate::lanes); the submitter function
//! runs passes for the agent a lapse-queue wake-up names while its invocation has time. Nothing
//! here reads a clock but the one it is given, and nothing sleeps: waiting is the driver's.

use futures_util::stream::{self, StreamExt};
use tokio::sync::Semaphore;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::clock::Clock;
use watcher_runtime::store::{DeliveryState, Outbox, OutboxEntry};

use crate::contexts::share;
pub use crate::contexts::{by_context, context_of};
use crate::deliver::{DeliveryReport, EntryOutcome, Places, Submitter};
use crate::endpoint::Endpoints;
use crate::origin_checks::OriginChecks;
use crate::rate::Prepaid;
use crate::reconcile::Reconciler;

/// One agent's lane over the outbox, borrowing what it sends with.
pub struct Lane<'a> {
    /// The agent's tenant.
    pub tenant: &'a Tenant,
    /// The agent.
    pub agent: &'a AgentId,
    /// The outbox.
    pub store: &'a dyn Outbox,
    /// Posts and records (its rate buckets are the agent's limit).
    pub submitter: &'a Submitter,
    /// Where each agent is.
    pub endpoints: &'a dyn Endpoints,
    /// Origin checks before a first send, and the `GetTask` of followed lapse tasks whose
    /// artifacts are recorded (`None`: no origin check; polls record the state only).
    pub reconciler: Option<&'a Reconciler>,
    /// Slots shared with other lanes of the process (`serve`'s `[delivery] in_flight`); `None`:
    /// only `per_agent` bounds.
    pub slots: Option<&'a Semaphore>,
    /// Lapse tasks in flight at once to this agent (`[delivery] in_flight_per_agent`); `0` counts
    /// as 1.
    pub per_agent: usize,
    /// Entries one pass reads, of each kind; `0` counts as 1.
    pub batch: usize,
}

/// How many batches a deeper read asks for, when the agent's places would idle for a pass
/// ([`crate::contexts::Share::deeper`]): enough contexts to fill `per_agent` places with a
/// share of `batch / per_agent` each, from contexts queued ten or so at a time.
const DEEPER: usize = 4;

/// How a pass ended, and what the driver does next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassEnd {
    /// A full batch, or a pass stopped by its time limit: more may be due now; pass again.
    More,
    /// Everything due was handled; `next` is the agent's earliest next attempt or poll (UTC),
    /// `None` when it has nothing queued or followed.
    Idle {
        /// When to pass again.
        next: Option<Instant>,
    },
    /// The agent's rate limit holds back lapse tasks due now until `until` (UTC); nothing was
    /// written for them.
    Limited {
        /// When a token is free.
        until: Instant,
    },
    /// A store read or write failed (logged): pass again after a backoff.
    StoreFailed,
}

/// What one pass did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PassReport {
    /// How it ended.
    pub end: PassEnd,
    /// What happened to the lapse tasks it sent or settled.
    pub delivery: DeliveryReport,
    /// Lapse tasks withdrawn by their origin check instead of sent.
    pub withdrawn: usize,
    /// Followed lapse tasks polled.
    pub polled: usize,
}

/// A pass's bounds on one agent: its `per_agent` places at the agent, and as many in the line
/// of lapse tasks claimed and not yet at the agent ([`Places`]).
struct Gates {
    places: Semaphore,
    claims: Semaphore,
}

/// What one send came to, inside a pass.
enum Sent {
    Outcome(EntryOutcome),
    Withdrawn,
    StoreFailed,
    /// Not taken: the pass's time limit came first.
    NotTaken,
}

impl Lane<'_> {
    /// One pass at the instants `clock` gives: sends what is due, polls what is followed (see
    /// the module docs). `stop_taking_at` (a monotonic instant; the submitter function's
    /// invocation deadline less a margin) stops it claiming more lapse tasks and beginning more
    /// polls; what it did not take stays queued (or due a poll) and the pass ends
    /// [`PassEnd::More`].
    pub async fn pass(
        &self,
        clock: &dyn Clock,
        stop_taking_at: Option<std::time::Instant>,
    ) -> PassReport {
        let mut report = PassReport {
            end: PassEnd::StoreFailed,
            delivery: DeliveryReport::default(),
            withdrawn: 0,
            polled: 0,
        };
        let batch = self.batch.max(1);
        let now = clock.now();
        let Some((due, mut follows)) = self.read_due(now, batch).await else {
            return report;
        };
        let read_full = due.len() == batch;
        let per_agent = self.per_agent.max(1);
        let mut shared = share(due, batch, per_agent, read_full);
        if shared.deeper {
            // Some of the agent's places would idle for the pass (its contexts are few or long):
            // read deeper for more contexts (crate::contexts). What the deeper read adds is
            // only taken when it is due by the same instant.
            match self
                .store
                .outbox_of_agent(
                    self.tenant,
                    self.agent,
                    DeliveryState::Queued,
                    Some(now),
                    batch.saturating_mul(DEEPER),
                )
                .await
            {
                Ok(deep) => shared = share(deep, batch, per_agent, false),
                Err(e) => tracing::warn!(error = %e, tenant = %self.tenant, agent = %self.agent,
                    "the deeper read of the agent's due lapse tasks failed; the pass sends what it read"),
            }
        }
        let due = shared.taken;
        let full = read_full || shared.left > 0 || follows.len() == batch;
        if read_full || shared.left > 0 {
            // More is due to be sent: this pass polls one round of followed lapse tasks
            // (`per_agent`), the rest stay due for a later pass, so a backlog's sends are not
            // slowed by as many polls.
            follows.truncate(self.per_agent.max(1));
        }

        // The agent's tokens for what is due, at once.
        let buckets = self.submitter.buckets();
        let mut limited = None;
        let taken = match u32::try_from(due.len()) {
            Ok(0) => 0,
            Ok(n) => match buckets
                .try_acquire_many(self.tenant, self.agent, n, now)
                .await
            {
                Ok(Ok(k)) => k as usize,
                Ok(Err(until)) => {
                    limited = Some(until);
                    0
                }
                Err(e) => {
                    tracing::warn!(error = %e, tenant = %self.tenant, agent = %self.agent,
                        "the agent's rate tokens could not be taken; the lane will try again");
                    return report;
                }
            },
            Err(_) => 0,
        };
        if taken < due.len() && limited.is_none() {
            // The bucket ran dry part way: when is the next token free?
            limited = match buckets.try_acquire(self.tenant, self.agent, now).await {
                Ok(Err(until)) => Some(until),
                // A token freed meanwhile (it is spent: sent less, never more) or the bucket
                // cannot be read: look again at once.
                _ => Some(now),
            };
        }
        let prepaid = Prepaid::new(
            buckets,
            self.tenant.clone(),
            self.agent.clone(),
            taken as u32,
        );
        let taken: Vec<OutboxEntry> = due.into_iter().take(taken).collect();
        // While it sends, the agent's origin polls wait (crate::origin_checks::SendingAgents).
        let _sending = match self.reconciler {
            Some(r) if !taken.is_empty() => Some(r.sending(self.tenant, self.agent)),
            _ => None,
        };
        let checks = match self.reconciler {
            Some(r) if !taken.is_empty() => {
                Some(OriginChecks::plan(r, self.tenant, self.agent, &taken).await)
            }
            _ => None,
        };
        // Every chain at once: a send waits for its own origin's answer first, holding nothing,
        // then for one of the agent's `per_agent` places and a shared slot.
        let gates = Gates {
            places: Semaphore::new(self.per_agent.max(1)),
            claims: Semaphore::new(self.per_agent.max(1)),
        };
        let chains = by_context(taken);
        let width = chains.len().max(1);
        let sends = stream::iter(chains)
            .map(|chain| {
                self.send_chain(
                    chain,
                    clock,
                    &prepaid,
                    stop_taking_at,
                    checks.as_ref(),
                    &gates,
                )
            })
            .buffer_unordered(width)
            .collect::<Vec<Vec<Sent>>>();
        let ahead = async {
            if let Some(checks) = &checks {
                checks.run_ahead().await;
            }
        };
        tokio::pin!(sends, ahead);
        let mut ahead_done = false;
        // The checks ahead stop with the sends (a chain held, or the time limit, leaves some
        // unasked).
        let outcomes = loop {
            tokio::select! {
                biased;
                out = &mut sends => break out,
                () = &mut ahead, if !ahead_done => ahead_done = true,
            }
        };
        let mut store_failed = false;
        let mut not_taken = false;
        for sent in outcomes.into_iter().flatten() {
            match sent {
                Sent::Outcome(outcome) => report.delivery.count(&outcome),
                Sent::Withdrawn => report.withdrawn += 1,
                Sent::StoreFailed => store_failed = true,
                Sent::NotTaken => not_taken = true,
            }
        }
        // Polls too stop at the pass's time limit: one not begun stays due for a later pass.
        let polled: Vec<Option<bool>> = stream::iter(follows)
            .map(|entry| async move {
                if stop_taking_at.is_some_and(|at| std::time::Instant::now() >= at) {
                    None
                } else {
                    Some(self.poll(entry, clock).await)
                }
            })
            .buffer_unordered(self.per_agent.max(1))
            .collect()
            .await;
        report.polled = polled.iter().flatten().count();
        store_failed |= polled.iter().flatten().any(|ok| !ok);
        not_taken |= polled.iter().any(Option::is_none);

        report.end = if store_failed {
            PassEnd::StoreFailed
        } else if let Some(until) = limited {
            PassEnd::Limited { until }
        } else if full || not_taken {
            PassEnd::More
        } else {
            match self.next_at().await {
                Ok(next) => PassEnd::Idle { next },
                Err(()) => PassEnd::StoreFailed,
            }
        };
        report
    }

    /// The agent's earliest next attempt of a queued lapse task or poll of a followed one (UTC),
    /// `None` when it has neither: two reads of one entry each.
    ///
    /// # Errors
    /// `Err(())` when the store cannot be read (logged).
    pub async fn next_at(&self) -> Result<Option<Instant>, ()> {
        let attempt = self
            .store
            .outbox_of_agent(self.tenant, self.agent, DeliveryState::Queued, None, 1)
            .await;
        let poll = self
            .store
            .outbox_following(self.tenant, self.agent, None, 1)
            .await;
        match (attempt, poll) {
            (Ok(a), Ok(p)) => Ok(a
                .first()
                .map(|e| e.next_attempt_at)
                .into_iter()
                .chain(p.first().and_then(|e| e.follow_at))
                .min()),
            (Err(e), _) | (_, Err(e)) => {
                tracing::error!(error = %e, tenant = %self.tenant, agent = %self.agent,
                    "reading the agent's next lapse task failed; will retry");
                Err(())
            }
        }
    }

    /// The agent's queued lapse tasks due at `now` and followed ones due a poll, `batch` of each;
    /// `None` when the store failed (logged).
    async fn read_due(
        &self,
        now: Instant,
        batch: usize,
    ) -> Option<(Vec<OutboxEntry>, Vec<OutboxEntry>)> {
        let due = self
            .store
            .outbox_of_agent(
                self.tenant,
                self.agent,
                DeliveryState::Queued,
                Some(now),
                batch,
            )
            .await;
        let follows = self
            .store
            .outbox_following(self.tenant, self.agent, Some(now), batch)
            .await;
        match (due, follows) {
            (Ok(d), Ok(f)) => Some((d, f)),
            (Err(e), _) | (_, Err(e)) => {
                tracing::error!(error = %e, tenant = %self.tenant, agent = %self.agent,
                    "reading the agent's due lapse tasks failed; will retry");
                None
            }
        }
    }

    /// Sends one context's lapse tasks, one after another; stops the chain at a store failure
    /// or a lapse task that must wait (a later one of the context must not overtake it).
    async fn send_chain(
        &self,
        chain: Vec<OutboxEntry>,
        clock: &dyn Clock,
        prepaid: &Prepaid<'_>,
        stop_taking_at: Option<std::time::Instant>,
        checks: Option<&OriginChecks<'_>>,
        gates: &Gates,
    ) -> Vec<Sent> {
        let mut sent = Vec::with_capacity(chain.len());
        let mut held = false;
        for entry in chain {
            if held || stop_taking_at.is_some_and(|at| std::time::Instant::now() >= at) {
                sent.push(Sent::NotTaken);
                held = true;
                continue;
            }
            let one = self.send(entry, clock, prepaid, checks, gates).await;
            held = matches!(
                &one,
                Sent::Outcome(EntryOutcome::Retried { .. } | EntryOutcome::NotDue { .. })
                    | Sent::StoreFailed
            );
            sent.push(one);
        }
        sent
    }

    /// Checks one lapse task's origin (its own answers only, holding no place or slot), then
    /// sends it by the entry held: claimed in the line of claims, then at the agent in one of its
    /// places and a shared slot ([`Places`]).
    async fn send(
        &self,
        entry: OutboxEntry,
        clock: &dyn Clock,
        prepaid: &Prepaid<'_>,
        checks: Option<&OriginChecks<'_>>,
        gates: &Gates,
    ) -> Sent {
        let verdict = match (checks, self.reconciler) {
            (Some(checks), _) => checks.verdict(&entry).await,
            (None, Some(reconciler)) => reconciler.check_before_send(&entry).await,
            (None, None) => Ok(true),
        };
        match verdict {
            Ok(true) => {}
            Ok(false) => return Sent::Withdrawn,
            Err(e) => {
                tracing::error!(error = %e, message_id = %entry.message_id,
                    "recording a withdrawn lapse task failed");
                return Sent::StoreFailed;
            }
        }
        // In the line of claims (at most `per_agent` claimed and not yet at the agent), then,
        // once claimed, one of the agent's places and a shared slot until the agent has answered
        // (`Places`): the claim and the record overlap other sends. A closed semaphore would
        // only mean "go ahead"; these are never closed.
        let waiting = gates.claims.acquire().await.ok();
        let held = Places::after_claim(waiting, Some(&gates.places), self.slots);
        let message_id = entry.message_id.clone();
        match self
            .submitter
            .deliver_read_with(
                self.store,
                self.endpoints,
                prepaid,
                (self.tenant, self.agent, &message_id),
                Some(entry),
                held,
                clock.now(),
            )
            .await
        {
            Ok(outcome) => Sent::Outcome(outcome),
            Err(e) => {
                tracing::error!(error = %e, message_id = %message_id, agent = %self.agent,
                    "recording a lapse task's attempt failed; it is looked for before it is sent again");
                Sent::StoreFailed
            }
        }
    }

    /// Polls one followed lapse task with `GetTask` and records what it says; answers whether
    /// the store took the write.
    async fn poll(&self, entry: OutboxEntry, clock: &dyn Clock) -> bool {
        let _slot = match self.slots {
            Some(s) => s.acquire().await.ok(),
            None => None,
        };
        let recorded = match self.reconciler {
            Some(reconciler) => {
                let result = reconciler.poll_lapse_task(&entry).await;
                self.submitter
                    .record_poll_result(self.store, &entry, result, clock.now())
                    .await
            }
            None => {
                self.submitter
                    .poll_one(self.store, self.endpoints, &entry, clock.now())
                    .await
            }
        };
        match recorded {
            Ok(_) => true,
            Err(e) => {
                tracing::error!(error = %e, message_id = %entry.message_id,
                    "recording a GetTask poll failed");
                false
            }
        }
    }
}
