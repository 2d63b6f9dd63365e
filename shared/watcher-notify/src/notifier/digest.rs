//! A channel with a `digest` window: the lapses of a window, and the ends of lapses it told
//! since its last digest, as one `lapse.digest` ("12 opened, 9 resolved"; issue 43), each
//! counted once: the cursor and the agents' resolution watermarks move in the state write
//! that records the digest's delivery.

use watcher_core::time::{Instant, IsoDuration};
use watcher_runtime::store::{ChannelState, LapseLog, Notifications, Outbox, StoreError};

use super::resolutions::{with_resolved, Step};
use super::{Notifier, Round, DIGEST_MAX, PAGE};
use crate::body::Digest;
use crate::event::LapseEvent;

impl<S: Outbox + LapseLog + Notifications + ?Sized> Notifier<S> {
    /// One round of the digest channel `index`: once the window opened by its first lapse not
    /// yet told (or, with none, by its first resolution not yet counted) has closed, one
    /// digest of the lapses read and of the resolutions of lapses it told.
    ///
    /// # Errors
    /// The store's.
    pub(super) async fn tell_digest(
        &self,
        index: usize,
        state: &mut ChannelState,
        now: Instant,
    ) -> Result<Round, StoreError> {
        let ch = &self.channels[index];
        let window = ch.digest.clone().unwrap_or_else(IsoDuration::zero);
        let mut events: Vec<LapseEvent> = Vec::new();
        // The position up to which every lapse read is in `events` or passed over.
        let mut through = state.after;
        let mut query = self.query(ch, state);
        // Whether the lapses were read to their end, or to one still settling or in its grace
        // (then every resolution before the resolve edge is of a lapse passed).
        let mut caught_up = false;
        'pages: for _ in 0..DIGEST_MAX / PAGE {
            let page = self.store.lapses_page(&ch.tenant, &query).await?;
            for (pos, entry) in &page.entries {
                if events.len() >= DIGEST_MAX {
                    break 'pages;
                }
                match self.step(ch, state, entry, now) {
                    Step::Wait => {
                        caught_up = true;
                        break 'pages;
                    }
                    Step::Pass => {}
                    Step::Tell => {
                        if events.is_empty() && !closed(entry.lapsed_at, &window, now) {
                            // The window opened at this lapse is still open: keep what was
                            // passed over, tell nothing yet.
                            self.keep_cursor(ch, state, through).await?;
                            return Ok(Round {
                                waiting: true,
                                ..Round::default()
                            });
                        }
                        let event = LapseEvent::of(*pos, entry, self.public_url.as_deref());
                        events.push(ch.redaction.lapse(&event));
                    }
                }
                through = Some(*pos);
            }
            match page.next {
                Some(next) => {
                    if self.settle.is_none() {
                        through = Some(through.map_or(next, |t| t.max(next)));
                    }
                    query.after = Some(next);
                }
                None => {
                    caught_up = true;
                    break;
                }
            }
        }
        let (resolved, moved) = match (&self.directory, caught_up) {
            (Some(directory), true) => {
                let room = DIGEST_MAX.saturating_sub(events.len());
                // A store that cannot read resolutions does not hold the lapses up: they
                // are counted in a later digest (their watermarks stay).
                match self
                    .digest_resolutions(ch, state, directory, now, room)
                    .await
                {
                    Ok(found) => found,
                    Err(e) => {
                        tracing::error!(channel = %ch.id, error = %e, "notification channel: reading the ends of lapses failed; will retry");
                        (Vec::new(), Vec::new())
                    }
                }
            }
            _ => (Vec::new(), Vec::new()),
        };
        let first_end = resolved.first().map(|r| r.resolution.at);
        if events.is_empty() && first_end.is_some_and(|at| !closed(at, &window, now)) {
            // Only resolutions, the window opened by the first still open.
            self.keep_cursor(ch, state, through).await?;
            return Ok(Round {
                waiting: true,
                ..Round::default()
            });
        }
        let advance = move |s: &mut ChannelState| {
            s.after = through;
            for (agent, mark) in moved {
                let w = with_resolved(s.agents.get(&agent), mark);
                s.agents.insert(agent, w);
            }
        };
        let Some(d) = Digest::of_both(&ch.id, &events, &resolved, self.public_url.as_deref())
        else {
            // Nothing to tell: move past what was passed over.
            let before = (state.after, state.agents.clone());
            advance(state);
            if (state.after, &state.agents) != (before.0, &before.1) {
                self.store
                    .put_channel_state(&ch.tenant, &ch.id, state)
                    .await?;
            }
            return Ok(Round::default());
        };
        let n = ch.digest(&d);
        let delivered = self.deliver(index, state, &n, now, advance).await?;
        Ok(Round {
            delivered: u64::from(delivered),
            failed: u64::from(!delivered),
            ..Round::default()
        })
    }
}

/// Whether a digest window opened at `at` has closed at `now`.
fn closed(at: Instant, window: &IsoDuration, now: Instant) -> bool {
    at.checked_plus(window).is_none_or(|end| now >= end)
}
