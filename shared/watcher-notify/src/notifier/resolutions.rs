//! The end of a lapse, told once per channel, and never before its beginning (issue 43): the
//! grace a channel waits before telling a lapse, which lapses a channel tells
//! (`Notifier::told`), and the resolve pass (`Notifier::tell_resolutions`).
//!
//! A channel reads each watched agent's resolutions in the order they happened
//! (`Outbox::outbox_lane` of `Lane::Resolved`) after its per-agent watermark
//! ([`AgentWatch::resolved`]), and tells the end of each lapse it told. Whether it told a lapse
//! is decided from the entry alone (`Notifier::told`: the channel wants it, it lapsed since
//! the channel's start, and it was not resolved within the grace), so a restart decides the
//! same. What must hold is that the lapse pass has passed a lapse (told it, or passed over it)
//! before its end is read: an end told first would be ignored by PagerDuty and the later
//! trigger would stay open for ever. So the resolve pass runs only in a round whose lapse pass
//! caught up (it stopped at the end of the lapses, or at a lapse still settling or in its
//! grace, never at its page budget or a failure), and reads only resolutions at or before
//! `Notifier::resolve_edge`: `now` − settle − grace − margin. Why that suffices: a lapse task
//! is resolved only after it is committed (a resolution's instant is at or after the commit of
//! its entry), and the lapse pass stopped at a lapse X that lapsed after `now` − max(settle,
//! grace + margin); a lapse task behind X in the lapse pages was committed after X was (serve:
//! positions in commit order), or at most one commit before (DynamoDB's time-ordered ids,
//! which the settle covers), so it was resolved after the edge. And a resolution still being
//! written when the pages were read is after the edge too (a commit takes less than the
//! margin), so the per-agent watermark never passes one that commits late. A fact received
//! while its lapse was being written resolves it at an instant before the lapse's commit: the
//! pass also waits until the lapse itself lapsed a margin before the edge (it then lapsed
//! before X by more than a commit, so it lies before X in the pages).

use std::time::Duration;

use jiff::SignedDuration;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::directory::Directory;
use watcher_runtime::store::{
    AgentWatch, ChannelState, Lane, LaneQuery, LapseLog, Notifications, Outbox, OutboxEntry,
    StoreError, Watermark,
};

use super::{Notifier, Round, PAGE};
use crate::channel::Channel;
use crate::event::{EventType, ResolvedEvent};

/// How long a commit may still be under way on a store whose lapse pages are in commit order
/// (`serve`, SQLite): the margin the grace and the resolve pass keep behind `now` when no
/// settle is set (with one, the settle is the margin).
pub const COMMIT_MARGIN: Duration = Duration::from_secs(5);

/// Most resolutions of one agent read at once: a page of [`PAGE`], doubled while every one
/// read shares the watermark's instant and was dealt with already (many lapses resolved at the
/// same instant, by one withdrawal).
pub const RESOLVED_LOOK_MAX: usize = 16 * PAGE;

/// What the lapse pass does with a lapse task at `now`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Tell it (it is settled, the channel wants it, its grace is over and it was not
    /// resolved within it).
    Tell,
    /// Pass over it, never to tell it (filtered, before the channel's start, or resolved
    /// within the grace).
    Pass,
    /// Stop here and look again next round (still settling, or in its grace).
    Wait,
}

impl<S: Outbox + LapseLog + Notifications + ?Sized> Notifier<S> {
    /// How far behind `now` a write may still be under way: the settle, else
    /// [`COMMIT_MARGIN`].
    pub(super) fn margin(&self) -> SignedDuration {
        self.settle
            .unwrap_or_else(|| SignedDuration::try_from(COMMIT_MARGIN).unwrap_or_default())
    }

    /// Whether channel `ch` tells (told, or will tell) the lapse of `entry`: it wants it, it
    /// lapsed at or after the channel's start, and, with a grace, it was not resolved by
    /// `lapsed_at` + grace. Decided from the entry alone: the same in every round and after a
    /// restart.
    pub(super) fn told(ch: &Channel, state: &ChannelState, entry: &OutboxEntry) -> bool {
        super::tells(ch, state, entry) && !swallowed(ch, entry)
    }

    /// What the lapse pass does with `entry` at `now` ([`Step`]). With a grace, a lapse not
    /// yet resolved within it waits until `lapsed_at` + grace + [`Notifier::margin`], so that
    /// a resolution within the grace still being written is read before the lapse is told.
    pub(super) fn step(
        &self,
        ch: &Channel,
        state: &ChannelState,
        entry: &OutboxEntry,
        now: Instant,
    ) -> Step {
        if !self.settled(entry, now) {
            return Step::Wait;
        }
        if !super::tells(ch, state, entry) || swallowed(ch, entry) {
            return Step::Pass;
        }
        let Some(grace) = &ch.grace else {
            return Step::Tell;
        };
        let over = entry
            .lapsed_at
            .checked_plus(grace)
            .and_then(|t| t.checked_add(self.margin()));
        match over {
            Some(t) if now >= t => Step::Tell,
            Some(_) => Step::Wait,
            // Past the instant range: it never ends.
            None => Step::Wait,
        }
    }

    /// The latest resolution instant the resolve pass reads at `now`: `now` − settle − grace
    /// − margin (the module's documentation says why); `None` before the instant range.
    pub(super) fn resolve_edge(&self, ch: &Channel, now: Instant) -> Option<Instant> {
        let grace = ch.grace.as_ref().map_or(
            SignedDuration::ZERO,
            watcher_core::time::IsoDuration::as_signed,
        );
        let behind = self
            .settle
            .unwrap_or(SignedDuration::ZERO)
            .checked_add(grace)?
            .checked_add(self.margin())?;
        now.checked_sub(behind)
    }

    /// The resolutions of `agent` of `tenant` past `watermark`, at or after `since` and at or
    /// before `edge`, earliest first: at most a page, more while ties at the watermark's
    /// instant fill it ([`RESOLVED_LOOK_MAX`]).
    pub(super) async fn resolutions(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        watermark: &Watermark,
        since: Instant,
        edge: Instant,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let from = watermark.through.map_or(since, |t| t.max(since));
        let mut limit = PAGE;
        loop {
            let page = self
                .store
                .outbox_lane(&LaneQuery {
                    tenant,
                    agent,
                    lane: Lane::Resolved,
                    due_by: Some(edge),
                    from: Some(from),
                    limit,
                })
                .await?;
            let full = page.len() >= limit;
            let fresh: Vec<OutboxEntry> = page
                .into_iter()
                .filter(|e| {
                    e.resolved
                        .as_ref()
                        .is_some_and(|r| watermark.passes(r.at, &e.message_id))
                })
                .collect();
            if !fresh.is_empty() || !full || limit >= RESOLVED_LOOK_MAX {
                return Ok(fresh);
            }
            limit *= 2;
        }
    }

    /// Tells the end of each lapse channel `index` told, agent by agent (those of `directory`
    /// the channel watches), resolution by resolution, each once: its watermark
    /// ([`AgentWatch::resolved`]) moves past each one told or passed over. Called only when
    /// the round's lapse pass caught up. Stops at the first failed post.
    ///
    /// # Errors
    /// The store's, reading resolutions or writing the channel's state.
    pub(super) async fn tell_resolutions(
        &self,
        index: usize,
        state: &mut ChannelState,
        directory: &Directory,
        now: Instant,
    ) -> Result<Round, StoreError> {
        let ch = &self.channels[index];
        let mut round = Round::default();
        let Some(edge) = self.resolve_edge(ch, now) else {
            return Ok(round);
        };
        let lapse_edge = edge.checked_sub(self.margin());
        let kept = state.agents.clone();
        for (agent, _) in directory.configured(&ch.tenant) {
            if !ch.watches(&agent) {
                continue;
            }
            let key = agent.as_str().to_owned();
            let mut watch = state.agents.get(&key).cloned().unwrap_or_default();
            let entries = self
                .resolutions(&ch.tenant, &agent, &watch.resolved, state.since, edge)
                .await?;
            for entry in &entries {
                let Some(r) = &entry.resolved else { continue };
                if !lapse_passed(entry, lapse_edge) {
                    // Resolved before its lapse was committed (a fact received while the
                    // lapse was being written): wait until the lapse pass surely passed it.
                    break;
                }
                let next = AgentWatch {
                    resolved: watch.resolved.after(r.at, &entry.message_id),
                    ..watch.clone()
                };
                if Self::told(ch, state, entry) {
                    let e = ResolvedEvent::of(entry, r, self.public_url.as_deref());
                    let n = ch.resolved(&e);
                    let (k, w) = (key.clone(), next.clone());
                    let delivered = self
                        .deliver(index, state, &n, now, move |s| {
                            s.agents.insert(k, w);
                        })
                        .await?;
                    if !delivered {
                        round.failed += 1;
                        return Ok(round);
                    }
                    round.delivered += 1;
                }
                watch = next;
            }
            state.keep_watch(key, watch);
        }
        self.write_agents_if_changed(ch, state, &kept).await?;
        Ok(round)
    }

    /// The resolutions a digest of channel `ch` counts at `now`: per watched agent of
    /// `directory`, those of lapses the channel told ([`Notifier::told`]), at most `room` in
    /// all, with each agent's watermark after them (moved past the ones not told as well).
    ///
    /// # Errors
    /// The store's.
    pub(super) async fn digest_resolutions(
        &self,
        ch: &Channel,
        state: &ChannelState,
        directory: &Directory,
        now: Instant,
        room: usize,
    ) -> Result<(Vec<ResolvedEvent>, Vec<(String, Watermark)>), StoreError> {
        let mut events = Vec::new();
        let mut moved = Vec::new();
        let Some(edge) = self.resolve_edge(ch, now) else {
            return Ok((events, moved));
        };
        let lapse_edge = edge.checked_sub(self.margin());
        if !ch.tells(EventType::LapseResolved) {
            return Ok((events, moved));
        }
        for (agent, _) in directory.configured(&ch.tenant) {
            if !ch.watches(&agent) || events.len() >= room {
                continue;
            }
            let key = agent.as_str().to_owned();
            let start = state
                .agents
                .get(&key)
                .map(|w| w.resolved.clone())
                .unwrap_or_default();
            let mut mark = start.clone();
            let entries = self
                .resolutions(&ch.tenant, &agent, &mark, state.since, edge)
                .await?;
            for entry in &entries {
                let Some(r) = &entry.resolved else { continue };
                if !lapse_passed(entry, lapse_edge) || events.len() >= room {
                    break;
                }
                if Self::told(ch, state, entry) {
                    let e = ResolvedEvent::of(entry, r, self.public_url.as_deref());
                    events.push(ch.redaction.resolved(&e));
                }
                mark = mark.after(r.at, &entry.message_id);
            }
            if mark != start {
                moved.push((key, mark));
            }
        }
        events.sort_by_key(|e| e.resolution.at);
        Ok((events, moved))
    }
}

/// Whether `entry` was resolved within channel `ch`'s grace (`resolved.at` ≤ `lapsed_at` +
/// grace): its lapse is told to nobody, nor its end. Never without a grace.
pub(super) fn swallowed(ch: &Channel, entry: &OutboxEntry) -> bool {
    let (Some(grace), Some(r)) = (&ch.grace, &entry.resolved) else {
        return false;
    };
    entry
        .lapsed_at
        .checked_plus(grace)
        .is_none_or(|end| r.at <= end)
}

/// Whether the lapse of `entry` lapsed at or before `lapse_edge` (the resolve edge less the
/// margin): then the lapse pass surely passed it, even had it been resolved by a fact received
/// while the lapse itself was being written (a resolution instant before its commit).
fn lapse_passed(entry: &OutboxEntry, lapse_edge: Option<Instant>) -> bool {
    lapse_edge.is_some_and(|e| entry.lapsed_at <= e)
}

/// `watch` with its resolutions' watermark `mark`.
pub(super) fn with_resolved(watch: Option<&AgentWatch>, mark: Watermark) -> AgentWatch {
    AgentWatch {
        resolved: mark,
        ..watch.cloned().unwrap_or_default()
    }
}
