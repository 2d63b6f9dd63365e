//! The notifier (issue 25): each channel reads the tenant's lapse tasks after its cursor, tells
//! the ones its filter wants (one message each, or one digest per window), and moves its cursor
//! only after the receiver answered 2xx.
//!
//! * Once per channel: the cursor ([`ChannelState::after`]) is written after each delivered
//!   notification, so a restart or a second timer fire tells nothing again that was
//!   acknowledged. A crash between a post and that write posts it again with the same id
//!   (`webhook-id`), which receivers deduplicate.
//! * Never blocking lapse tasks: the notifier only reads the lapse pages and writes its own
//!   item; the lapse path writes nothing for it.
//! * Agents' events: after the lapses, each agent the channel watches is looked at once a round
//!   ([`Notifier::with_directory`]): its failed lapse tasks, oldest failure first, from the
//!   outbox's index by (agent, delivery state, instant), its lapse tasks waiting for a person,
//!   earliest first (`Outbox::outbox_needing_person`; at most [`FAILED_LOOK`] of each a round),
//!   and its card's health. What the channel last saw of each agent is kept in its state
//!   ([`ChannelState::agents`]), so each failure and each unreadable card is told once.
//! * The end of a lapse (`lapse.resolved`, issue 43): after the lapses, in a round that read
//!   them to their end (or to one still settling or in its grace), each watched agent's
//!   resolutions are read after the channel's per-agent watermark ([`AgentWatch::resolved`])
//!   and the end of each lapse the channel told is told once, never before the lapse itself
//!   ([`resolutions`] says why that holds). A channel's `grace` holds each lapse back until it
//!   is that old, and swallows one resolved within it. A digest counts the ends with its lapses.
//! * Retried by age: a failing channel waits 1 s, then twice as long after each further
//!   failure, at most [`MAX_BACKOFF`], and keeps its cursor, so a receiver that was down gets
//!   everything after, in order. A redirect (3xx) is such a failure: it is not followed
//!   ([`PostError::Redirect`]).
//! * Channels are independent: [`Notifier::round`] tells every channel at once and
//!   [`Notifier::run`] gives each channel its own loop, so a receiver that takes a connection and
//!   never answers holds only its own channel, for its timeout. Each channel has at most one
//!   notification in flight (its own bound: its cursor moves in order, past one delivered
//!   notification at a time); channels do not share one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::SignedDuration;
use tokio::sync::watch;
use watcher_core::time::Instant;
use watcher_runtime::clock::Clock;
use watcher_runtime::directory::{CardState, Directory};
use watcher_runtime::store::{
    AgentWatch, ChannelState, DeliveryState, LapseLog, LapseQuery, Notifications, Outbox,
    OutboxEntry, StoreError,
};

use crate::body::{self, Notification};
use crate::channel::Channel;
use crate::event::{AgentEvent, EventType, LapseEvent, CARD_GRACE_SECS};
use crate::transport::{PostError, Publish, Transport};

mod digest;
pub mod resolutions;

use resolutions::Step;

/// Lapse tasks read per page.
pub const PAGE: usize = 100;
/// Pages one channel reads per round (a long backlog is told over several rounds, so one
/// channel never holds the others up for long).
pub const PAGES_PER_ROUND: usize = 10;
/// Most lapses one digest covers; more make the next digest.
pub const DIGEST_MAX: usize = 10_000;
/// The longest wait between two attempts of a failing channel.
pub const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How often the loop looks for new lapses.
pub const TICK: Duration = Duration::from_secs(1);
/// Most failed lapse tasks of one agent looked at per round, oldest failure first: beyond, the
/// agent's `delivery.failing` has been told and newer failures are told as older ones are
/// re-queued (`GET /v1/agents` and `/ui/agents` count them all).
pub const FAILED_LOOK: usize = 100;

/// Counts notifications for `/metrics`.
pub trait NotifyRecorder: Send + Sync {
    /// One notification posted on `channel`: `outcome` is `delivered`, `redirected` (the
    /// receiver answered 3xx, not followed: a failure, retried) or `failed` (any other
    /// failure; [`PostError::outcome`]).
    fn notified(&self, channel: &str, outcome: &'static str);
}

/// What one round did for one channel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Round {
    /// Notifications delivered, or refused for good and moved past ([`PostError::Rejected`]).
    pub delivered: u64,
    /// Attempts that failed (at most one a round: a failure ends the channel's round).
    pub failed: u64,
    /// The channel waited: backing off, or its digest window still open.
    pub waiting: bool,
}

/// The notification loop over some channels of one store.
pub struct Notifier<S: ?Sized> {
    store: Arc<S>,
    channels: Vec<Channel>,
    transport: Arc<dyn Transport>,
    clock: Arc<dyn Clock>,
    public_url: Option<String>,
    recorder: Option<Arc<dyn NotifyRecorder>>,
    /// Lapses newer than this are not read past yet ([`Notifier::with_settle`]).
    settle: Option<SignedDuration>,
    /// Where `sns` channels publish ([`Notifier::with_publisher`]).
    publisher: Option<Arc<dyn Publish>>,
    /// The agents and their cards' health ([`Notifier::with_directory`]).
    directory: Option<Directory>,
    /// Per channel index: failures in a row and the earliest next attempt. In memory: after a
    /// restart a failing channel is tried at once, then backs off again.
    backoff: Mutex<HashMap<usize, (u32, Instant)>>,
}

impl<S: Outbox + LapseLog + Notifications + ?Sized> Notifier<S> {
    /// A notifier for `channels`; `public_url` (the deployment's own base URL) makes the
    /// links in each notification.
    pub fn new(
        store: Arc<S>,
        channels: Vec<Channel>,
        transport: Arc<dyn Transport>,
        clock: Arc<dyn Clock>,
        public_url: Option<String>,
    ) -> Notifier<S> {
        Notifier {
            store,
            channels,
            transport,
            clock,
            public_url,
            recorder: None,
            settle: None,
            publisher: None,
            directory: None,
            backoff: Mutex::new(HashMap::new()),
        }
    }

    /// Publishes the `sns` channels' notifications with `publisher` (without one, each attempt
    /// of such a channel fails, saying so).
    pub fn with_publisher(mut self, publisher: Arc<dyn Publish>) -> Self {
        self.publisher = Some(publisher);
        self
    }

    /// Tells the agents' events (`lapse_task.failed`, `delivery.failing`, `card.unavailable`)
    /// and the ends of lapses (`lapse.resolved`, read agent by agent) of the agents
    /// `directory` holds (a clone sharing the deployment's): without it a channel tells
    /// lapses only.
    pub fn with_directory(mut self, directory: Directory) -> Self {
        self.directory = Some(directory);
        self
    }

    /// Tells a lapse, and moves the cursor past it, only once it lapsed at least `settle`
    /// ago. For a store whose lapse-page positions are time-ordered ids taken by concurrent
    /// writers (DynamoDB): a lapse task committed late may take a position below one already
    /// passed, unless the cursor stays `settle` behind every write still in flight. `settle`
    /// must exceed twice the longest commit (the functions' timeout): a position is taken at
    /// most one commit after its `lapsedAt`, and an entry passed is then older than any write
    /// still under way. On this path the cursor moves only to positions read and settled
    /// (never to a page's scan end), so every round re-reads what lies past the last settled
    /// lapse, at most a page budget. `serve` (one writer, positions in commit order) needs none.
    pub fn with_settle(mut self, settle: Duration) -> Self {
        self.settle = SignedDuration::try_from(settle).ok();
        self
    }

    /// Whether `entry` may be told (and passed) at `now` ([`Notifier::with_settle`]).
    fn settled(&self, entry: &OutboxEntry, now: Instant) -> bool {
        match self.settle {
            None => true,
            Some(d) => now
                .checked_sub(d)
                .is_some_and(|edge| entry.lapsed_at <= edge),
        }
    }

    /// Counts each notification with `recorder`.
    pub fn with_recorder(mut self, recorder: Arc<dyn NotifyRecorder>) -> Self {
        self.recorder = Some(recorder);
        self
    }

    /// The channels.
    pub fn channels(&self) -> &[Channel] {
        &self.channels
    }

    /// Runs each channel in its own loop until `stop` changes: a round of the channel
    /// ([`Notifier::tell`]), then [`TICK`], then the next. A channel whose receiver is slow or
    /// hangs delays only its own next round; the others go on.
    pub async fn run(self: Arc<Self>, stop: watch::Receiver<bool>) {
        let loops = (0..self.channels.len()).map(|i| self.run_channel(i, stop.clone()));
        futures_util::future::join_all(loops).await;
    }

    /// Channel `index`'s loop ([`Notifier::run`]).
    async fn run_channel(&self, index: usize, mut stop: watch::Receiver<bool>) {
        loop {
            self.tell_logged(index).await;
            tokio::select! {
                () = tokio::time::sleep(TICK) => {},
                _ = stop.changed() => return,
            }
        }
    }

    /// One round over every channel, all at once (each channel's round on its own, so one
    /// that waits for its receiver does not hold the others up); answers each channel's
    /// [`Round`] in the channels' order. A channel whose store read or write fails is logged
    /// and tried again next round.
    pub async fn round(&self) -> Vec<Round> {
        let rounds = (0..self.channels.len()).map(|i| self.tell_logged(i));
        futures_util::future::join_all(rounds).await
    }

    /// [`Notifier::tell`], a store failure logged (and the round counted as nothing).
    async fn tell_logged(&self, index: usize) -> Round {
        match self.tell(index).await {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(channel = %self.channels[index].id, error = %e, "notification channel: the store failed; will retry");
                Round::default()
            }
        }
    }

    /// One round of channel `index`.
    ///
    /// # Errors
    /// The store's, reading the lapse pages or the channel's state, or writing that state.
    pub async fn tell(&self, index: usize) -> Result<Round, StoreError> {
        let ch = &self.channels[index];
        let now = self.clock.now();
        if self.backing_off(index, now) {
            return Ok(Round {
                waiting: true,
                ..Round::default()
            });
        }
        let kept = self.store.channel_state(&ch.tenant, &ch.id).await?;
        let mut state = match &kept {
            Some(k) => k.clone(),
            // First run: start after the newest lapse task (one keyed read), so the history is
            // not read, let alone told; `since` passes over any older one committed late.
            None => ChannelState {
                after: self.store.last_lapse_position(&ch.tenant).await?,
                ..ChannelState::new(now)
            },
        };
        // What `/ui` shows of the channel: its format and where it posts (never the URL's path).
        state.format = Some(ch.format.name().to_owned());
        state.target = Some(ch.target());
        if kept.as_ref() != Some(&state) {
            self.store
                .put_channel_state(&ch.tenant, &ch.id, &state)
                .await?;
        }
        let mut round = if ch.digest.is_some() {
            self.tell_digest(index, &mut state, now).await?
        } else {
            let (mut round, caught_up) = self.tell_each(index, &mut state, now).await?;
            // The ends of lapses, only once every lapse they may end has been passed.
            if caught_up && ch.tells(EventType::LapseResolved) {
                if let Some(directory) = self.directory.clone() {
                    // A store that cannot read resolutions holds up neither the lapses nor
                    // the agents' events: logged, tried again next round.
                    match self
                        .tell_resolutions(index, &mut state, &directory, now)
                        .await
                    {
                        Ok(ends) => {
                            round.delivered += ends.delivered;
                            round.failed += ends.failed;
                        }
                        Err(e) => {
                            tracing::error!(channel = %ch.id, error = %e, "notification channel: reading the ends of lapses failed; will retry");
                        }
                    }
                }
            }
            round
        };
        if round.failed == 0 && ch.tells_agent_events() {
            if let Some(directory) = self.directory.clone() {
                let agents = self.tell_agents(index, &mut state, &directory, now).await?;
                round.delivered += agents.delivered;
                round.failed += agents.failed;
            }
        }
        Ok(round)
    }

    /// Tells each watched agent's new events: its card unreadable for [`CARD_GRACE_SECS`], its
    /// lapse tasks failed since the channel last looked (the first after none was failed as
    /// `delivery.failing`, the others as `lapse_task.failed`), and its lapse tasks whose task
    /// began to wait for a person (`lapse_task.needs_person`). Stops at the first failed post.
    async fn tell_agents(
        &self,
        index: usize,
        state: &mut ChannelState,
        directory: &Directory,
        now: Instant,
    ) -> Result<Round, StoreError> {
        let ch = &self.channels[index];
        let mut round = Round::default();
        let edge = match self.settle {
            None => now,
            Some(d) => now.checked_sub(d).unwrap_or(now),
        };
        let grace = now
            .checked_sub(SignedDuration::from_secs(CARD_GRACE_SECS))
            .unwrap_or(now);
        let kept = state.agents.clone();
        for (agent, health) in directory.configured(&ch.tenant) {
            if !ch.watches(&agent) {
                continue;
            }
            let key = agent.as_str().to_owned();
            let mut watch = state.agents.get(&key).cloned().unwrap_or_default();

            // The card.
            let down_since = (health.state != CardState::Ok)
                .then_some(health.failing_since)
                .flatten();
            match down_since {
                None => watch.card_down = false,
                Some(since) if !watch.card_down && since <= grace => {
                    let next = AgentWatch {
                        card_down: true,
                        ..watch.clone()
                    };
                    let e = ch.tells(EventType::CardUnavailable).then(|| {
                        AgentEvent::card(
                            &ch.tenant,
                            &agent,
                            &health,
                            since,
                            self.public_url.as_deref(),
                        )
                    });
                    if !self
                        .tell_agent(index, state, &key, &next, e, now, &mut round)
                        .await?
                    {
                        return Ok(round);
                    }
                    watch = next;
                }
                Some(_) => {}
            }

            // Its failed lapse tasks, oldest failure first, settled.
            let failed = self
                .store
                .outbox_of_agent(
                    &ch.tenant,
                    &agent,
                    DeliveryState::Failed,
                    Some(edge),
                    FAILED_LOOK,
                )
                .await?;
            let since = state.since;
            let is_new = |w: &AgentWatch, e: &OutboxEntry| {
                e.next_attempt_at >= since && w.failed.passes(e.next_attempt_at, &e.message_id)
            };
            // Failed lapse tasks already dealt with, or from before the channel's start, mean
            // the agent is failing already.
            if failed.iter().any(|e| !is_new(&watch, e)) {
                watch.failing = true;
            }
            for entry in &failed {
                if !is_new(&watch, entry) {
                    continue;
                }
                let mut next = watch.clone();
                next.failed = watch.failed.after(entry.next_attempt_at, &entry.message_id);
                next.failing = true;
                let event = if !watch.failing && ch.tells(EventType::DeliveryFailing) {
                    Some(EventType::DeliveryFailing)
                } else {
                    ch.tells(EventType::LapseTaskFailed)
                        .then_some(EventType::LapseTaskFailed)
                };
                let e = event.map(|ev| AgentEvent::failed(ev, entry, self.public_url.as_deref()));
                if !self
                    .tell_agent(index, state, &key, &next, e, now, &mut round)
                    .await?
                {
                    return Ok(round);
                }
                watch = next;
            }
            if failed.is_empty() {
                watch.failing = false;
            }

            // Its lapse tasks whose task waits for a person, earliest wait first, settled.
            let waiting = self
                .store
                .outbox_needing_person(&ch.tenant, &agent, Some(edge), FAILED_LOOK)
                .await?;
            for entry in &waiting {
                let Some(at) = entry.needs_person_since else {
                    continue;
                };
                if at < since || !watch.person.passes(at, &entry.message_id) {
                    continue;
                }
                let next = AgentWatch {
                    person: watch.person.after(at, &entry.message_id),
                    ..watch.clone()
                };
                let e = ch
                    .tells(EventType::LapseTaskNeedsPerson)
                    .then(|| AgentEvent::needs_person(entry, at, self.public_url.as_deref()));
                if !self
                    .tell_agent(index, state, &key, &next, e, now, &mut round)
                    .await?
                {
                    return Ok(round);
                }
                watch = next;
            }
            state.keep_watch(key, watch);
        }
        self.write_agents_if_changed(ch, state, &kept).await?;
        Ok(round)
    }

    /// Writes `state` when its agents' watches differ from `kept` (as they were before the
    /// round looked at the agents).
    ///
    /// # Errors
    /// The store's.
    async fn write_agents_if_changed(
        &self,
        ch: &Channel,
        state: &ChannelState,
        kept: &std::collections::BTreeMap<String, AgentWatch>,
    ) -> Result<(), StoreError> {
        if state.agents != *kept {
            self.store
                .put_channel_state(&ch.tenant, &ch.id, state)
                .await?;
        }
        Ok(())
    }

    /// Tells `event` (when the channel wants it) about agent `key` with [`Notifier::deliver`]:
    /// on success the channel's watch of the agent becomes `next` and `round` counts it.
    /// Answers whether the round goes on: `false` after a failed post (counted in `round`).
    #[allow(
        clippy::too_many_arguments,
        reason = "each argument is a distinct dependency"
    )]
    async fn tell_agent(
        &self,
        index: usize,
        state: &mut ChannelState,
        key: &str,
        next: &AgentWatch,
        event: Option<AgentEvent>,
        now: Instant,
        round: &mut Round,
    ) -> Result<bool, StoreError> {
        let Some(e) = event else {
            return Ok(true);
        };
        let n = self.channels[index].agent_event(&e);
        let (key, next) = (key.to_owned(), next.clone());
        let delivered = self
            .deliver(index, state, &n, now, move |s| {
                s.agents.insert(key, next);
            })
            .await?;
        if delivered {
            round.delivered += 1;
        } else {
            round.failed += 1;
        }
        Ok(delivered)
    }

    fn query(&self, ch: &Channel, state: &ChannelState) -> LapseQuery {
        LapseQuery {
            agent: (ch.agents.len() == 1)
                .then(|| ch.agents.iter().next().cloned())
                .flatten(),
            delivery: None,
            // No `since` here: every lapse task is read, and those before the channel's start
            // are passed over one by one (`tells`), so the cursor can move past
            // each (a filtered page would leave it at a scan end it may not pass when settling).
            since: None,
            after: state.after,
            limit: PAGE,
        }
    }

    /// Tells each lapse after the cursor, one notification each, up to [`PAGES_PER_ROUND`]
    /// pages. Answers the round and whether the lapses were caught up with: read to their end,
    /// or to one still settling or in its grace (not stopped by the page budget, a scan end
    /// the cursor may not pass, or a failure).
    async fn tell_each(
        &self,
        index: usize,
        state: &mut ChannelState,
        now: Instant,
    ) -> Result<(Round, bool), StoreError> {
        let ch = &self.channels[index];
        let mut round = Round::default();
        // The cursor as last written (a delivery writes it; passing over filtered lapses is
        // written once a page).
        let mut written = state.after;
        for _ in 0..PAGES_PER_ROUND {
            let page = self
                .store
                .lapses_page(&ch.tenant, &self.query(ch, state))
                .await?;
            let mut unsettled = false;
            for (pos, entry) in &page.entries {
                match self.step(ch, state, entry, now) {
                    Step::Wait => {
                        unsettled = true;
                        break;
                    }
                    Step::Pass => {}
                    Step::Tell => {
                        let event = LapseEvent::of(*pos, entry, self.public_url.as_deref());
                        let n = ch.lapse(&event);
                        let covers = Some(*pos);
                        if !self
                            .deliver(index, state, &n, now, |s| s.after = covers)
                            .await?
                        {
                            round.failed += 1;
                            return Ok((round, false));
                        }
                        written = state.after;
                        round.delivered += 1;
                    }
                }
                state.after = Some(*pos);
            }
            match page.next {
                // Past a page's scan end only where positions are in commit order.
                Some(next) if !unsettled && self.settle.is_none() => {
                    state.after = Some(state.after.map_or(next, |a| a.max(next)));
                }
                _ => {}
            }
            if state.after != written {
                self.store
                    .put_channel_state(&ch.tenant, &ch.id, state)
                    .await?;
                written = state.after;
            }
            if page.next.is_none() || unsettled {
                // Done, or stopped at a lapse still settling or in its grace.
                return Ok((round, true));
            }
            if state.after.is_none_or(|a| Some(a) < page.next) {
                // (Settling) a scan end the cursor may not move to: the rest next round.
                break;
            }
        }
        Ok((round, false))
    }

    /// Writes the cursor when `through` moved it.
    async fn keep_cursor(
        &self,
        ch: &Channel,
        state: &mut ChannelState,
        through: Option<u64>,
    ) -> Result<(), StoreError> {
        if through != state.after {
            state.after = through;
            self.store
                .put_channel_state(&ch.tenant, &ch.id, state)
                .await?;
        }
        Ok(())
    }

    /// Posts `n` on channel `index` and writes `state` once: on success with `advance` applied
    /// (the cursor moved to the last position `n` tells, or an agent's watch moved past the
    /// event) and the delivery recorded; on failure with the cursor where it was and the
    /// failure recorded, the channel backing off; on a rejection for good
    /// ([`PostError::Rejected`]) with `advance` applied and the failure recorded. Answers
    /// whether the channel moved past `n` (delivered or rejected).
    async fn deliver(
        &self,
        index: usize,
        state: &mut ChannelState,
        n: &Notification,
        now: Instant,
        advance: impl FnOnce(&mut ChannelState),
    ) -> Result<bool, StoreError> {
        let ch = &self.channels[index];
        let delivered = match self.post(ch, n, now).await {
            Ok(()) => {
                advance(state);
                state.delivered += 1;
                state.last_delivered_at = Some(now);
                state.last_event_id = Some(n.id.clone());
                state.failing_since = None;
                self.backoff_lock().remove(&index);
                self.record(ch, "delivered");
                tracing::info!(channel = %ch.id, id = %n.id, "notification delivered");
                true
            }
            Err(e) if e.is_permanent() => {
                // Refused for good: retrying cannot help, so the channel moves past it (as
                // after a delivery) with the failure recorded, and does not back off.
                advance(state);
                state.failures += 1;
                self.record(ch, e.outcome());
                tracing::error!(channel = %ch.id, id = %n.id, error = %e, "notification rejected by the receiver; not retried");
                state.last_error = Some(e.to_string());
                true
            }
            Err(e) => {
                state.failures += 1;
                state.failing_since.get_or_insert(now);
                self.back_off(index, now);
                self.record(ch, e.outcome());
                tracing::warn!(channel = %ch.id, id = %n.id, error = %e, "notification failed; will retry");
                state.last_error = Some(e.to_string());
                false
            }
        };
        self.store
            .put_channel_state(&ch.tenant, &ch.id, state)
            .await?;
        Ok(delivered)
    }

    /// Posts `n` on `ch` ([`post`]).
    ///
    /// # Errors
    /// The transport's ([`PostError`]).
    pub async fn post(
        &self,
        ch: &Channel,
        n: &Notification,
        now: Instant,
    ) -> Result<(), PostError> {
        if ch.format == crate::channel::Format::Sns {
            let publisher = self.publisher.as_deref().ok_or_else(|| {
                PostError::Failed(
                    "an sns channel publishes only in the AWS deployment (no SNS client here)"
                        .to_owned(),
                )
            })?;
            return publish(publisher, ch, n).await.map_err(PostError::Failed);
        }
        post(&*self.transport, ch, n, now).await
    }

    fn record(&self, ch: &Channel, outcome: &'static str) {
        if let Some(r) = &self.recorder {
            r.notified(&ch.id, outcome);
        }
    }

    fn backoff_lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, (u32, Instant)>> {
        self.backoff
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn backing_off(&self, index: usize, now: Instant) -> bool {
        self.backoff_lock()
            .get(&index)
            .is_some_and(|(_, until)| now < *until)
    }

    fn back_off(&self, index: usize, now: Instant) {
        let mut map = self.backoff_lock();
        let failures = map.get(&index).map_or(0, |(n, _)| *n).saturating_add(1);
        let wait = backoff(failures);
        let until = now
            .checked_add(SignedDuration::try_from(wait).unwrap_or(SignedDuration::MAX))
            .unwrap_or(now);
        map.insert(index, (failures, until));
    }
}

/// Posts `n` on `ch` with `transport`, with the Standard Webhooks headers: `webhook-id` (the
/// notification's id), `webhook-timestamp` (`now`, Unix seconds) and, when the channel has a
/// secret, `webhook-signature`. An email channel sends it by SMTP instead
/// ([`crate::transport::send_email`]); an incident format posts as [`crate::incident::post`].
///
/// # Errors
/// The transport's: [`PostError::Redirect`] for a 3xx (not followed), else
/// [`PostError::Failed`] in words (`HTTP 503 from the receiver`, a connection error).
pub async fn post(
    transport: &dyn Transport,
    ch: &Channel,
    n: &Notification,
    now: Instant,
) -> Result<(), PostError> {
    if let Some(target) = &ch.email {
        return crate::transport::send_email(target, &n.id, &n.body)
            .await
            .map_err(PostError::Failed);
    }
    if let Some(vendor) = &ch.vendor {
        return crate::incident::post(transport, vendor, ch, n).await;
    }
    let body = serde_json::to_vec(&n.body).map_err(|e| PostError::Failed(e.to_string()))?;
    let timestamp = now.as_second();
    let mut headers = vec![
        ("webhook-id", n.id.clone()),
        ("webhook-timestamp", timestamp.to_string()),
    ];
    if let Some(secret) = &ch.secret {
        headers.push(("webhook-signature", secret.sign(&n.id, timestamp, &body)));
    }
    transport.post(&ch.url, &headers, body, ch.timeout).await
}

/// Publishes `n` (Standard Webhooks JSON) on the SNS channel `ch` with `publisher`: its subject
/// is the event in words (cut to SNS's 100 characters), its attributes the event's id and type.
///
/// # Errors
/// The publisher's, in words.
pub async fn publish(
    publisher: &dyn Publish,
    ch: &Channel,
    n: &Notification,
) -> Result<(), String> {
    let message = serde_json::to_string(&n.body).map_err(|e| e.to_string())?;
    let event_type = n.body["type"].as_str().unwrap_or("lapse.recorded");
    let subject = body::subject_of(&n.body);
    publisher
        .publish(&ch.url, &subject, &message, &n.id, event_type)
        .await
}

/// The wait after `failures` failures in a row: 1 s, doubling, at most [`MAX_BACKOFF`].
pub fn backoff(failures: u32) -> Duration {
    let secs = 1u64 << failures.saturating_sub(1).min(16);
    Duration::from_secs(secs).min(MAX_BACKOFF)
}

/// Whether `ch` tells `entry`: its filters want it and it lapsed since the channel first ran.
fn tells(ch: &Channel, state: &ChannelState, entry: &OutboxEntry) -> bool {
    entry.lapsed_at >= state.since && ch.wants(entry)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_ceiling() {
        assert_eq!(backoff(1), Duration::from_secs(1));
        assert_eq!(backoff(2), Duration::from_secs(2));
        assert_eq!(backoff(6), Duration::from_secs(32));
        assert_eq!(backoff(7), MAX_BACKOFF);
        assert_eq!(backoff(u32::MAX), MAX_BACKOFF);
    }
}
