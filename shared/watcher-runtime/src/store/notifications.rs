//! The [`Notifications`] capability: each notification channel's progress (issue 25).

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;

use super::StoreError;

/// Where one notification channel of a tenant stands (issue 25; expectations-v1 §13.1: a lapse
/// is worth surfacing to a person): how far along the tenant's lapse tasks it has told, and
/// how its last deliveries went. Kept by [`Notifications`], read by the notifier and `/ui`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChannelState {
    /// The [`LapseLog::lapses_page`](super::LapseLog::lapses_page) position of the last lapse task this channel has dealt with
    /// (told, or passed over by its filter); `None`: none yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<u64>,
    /// Lapses determined before this instant (UTC) are not told: the instant the channel first
    /// ran, so that a channel added to a deployment with a long history does not tell it all.
    pub since: Instant,
    /// Notifications delivered (a digest counts once).
    #[serde(default)]
    pub delivered: u64,
    /// When the last one was delivered (UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_delivered_at: Option<Instant>,
    /// The event id (`webhook-id`) of the last one delivered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_event_id: Option<String>,
    /// Failed attempts so far.
    #[serde(default)]
    pub failures: u64,
    /// Since when attempts fail, while they do (UTC); `None` once one succeeds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<Instant>,
    /// The last failure, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// The channel's format as last run (`standard-webhooks`, `slack`, `teams`), for `/ui`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Where it posts, as scheme and host only (`https://hooks.slack.com`): a URL's path may
    /// hold a credential, so it is never kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// What the channel last saw of each agent's delivery, card and resolutions, by agent id
    /// (the agents' events: a failed lapse task, failing delivery, an unreadable card; and
    /// how far the ends of its lapses were told).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agents: BTreeMap<String, AgentWatch>,
}

/// What one notification channel last saw of one agent ([`ChannelState::agents`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentWatch {
    /// How far its failed lapse tasks were dealt with, in the order they failed (a failed
    /// entry's `next_attempt_at`).
    #[serde(default, skip_serializing_if = "Watermark::is_empty")]
    pub failed: Watermark,
    /// How far its lapse tasks waiting for a person were dealt with, in the order the waits
    /// began (`needs_person_since`).
    #[serde(default, skip_serializing_if = "Watermark::is_empty")]
    pub person: Watermark,
    /// How far its resolved lapse tasks were dealt with (their end told, counted in a digest,
    /// or passed over: a lapse the channel did not tell), in the order they were resolved
    /// (`resolved.at`, [`crate::resolution::Resolution`]).
    #[serde(default, skip_serializing_if = "Watermark::is_empty")]
    pub resolved: Watermark,
    /// Whether the agent had failed lapse tasks when last looked at.
    #[serde(default)]
    pub failing: bool,
    /// Whether its card was told unavailable and has not been read since.
    #[serde(default)]
    pub card_down: bool,
}

/// How far a channel has dealt with (told, or passed over by its filter) one list of an agent's
/// lapse tasks ordered by an instant ([`AgentWatch`]): the instant of the last one, and the
/// messageIds at exactly that instant (several can share it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Watermark {
    /// The instant (UTC) of the last lapse task dealt with; `None`: none yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub through: Option<Instant>,
    /// The messageIds at exactly `through` dealt with.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub at_edge: Vec<String>,
}

impl Watermark {
    /// Nothing dealt with yet.
    pub fn is_empty(&self) -> bool {
        self.through.is_none() && self.at_edge.is_empty()
    }

    /// Whether the lapse task `message_id` at `at` lies past the watermark (not dealt with).
    pub fn passes(&self, at: Instant, message_id: &str) -> bool {
        match self.through {
            None => true,
            Some(t) => at > t || (at == t && !self.at_edge.iter().any(|m| m == message_id)),
        }
    }

    /// The watermark after dealing with `message_id` at `at` (the next in order).
    pub fn after(&self, at: Instant, message_id: &str) -> Watermark {
        let mut next = if self.through == Some(at) {
            self.clone()
        } else {
            Watermark {
                through: Some(at),
                at_edge: Vec::new(),
            }
        };
        next.at_edge.push(message_id.to_owned());
        next
    }
}

impl ChannelState {
    /// Keeps `watch` as what the channel last saw of `agent`, or forgets the agent when the
    /// watch holds nothing (the default), so the state holds only agents with something seen.
    pub fn keep_watch(&mut self, agent: String, watch: AgentWatch) {
        if watch == AgentWatch::default() {
            self.agents.remove(&agent);
        } else {
            self.agents.insert(agent, watch);
        }
    }

    /// A channel that first runs at `now`: nothing told, nothing before `now` to tell.
    pub fn new(now: Instant) -> ChannelState {
        ChannelState {
            after: None,
            since: now,
            delivered: 0,
            last_delivered_at: None,
            last_event_id: None,
            failures: 0,
            failing_since: None,
            last_error: None,
            format: None,
            target: None,
            agents: BTreeMap::new(),
        }
    }
}

/// Notification channels' progress, one small item per (tenant, channel) (issue 25): the
/// notifier reads it before and writes it after each delivery, so a restart tells nothing
/// twice that was acknowledged, and nothing on the lapse path writes it.
#[async_trait]
pub trait Notifications: Send + Sync {
    /// The state kept for `channel` of `tenant`, if it ever ran.
    ///
    /// # Errors
    /// The backend's error, or [`StoreError::Corrupt`] when the kept state does not read.
    async fn channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
    ) -> Result<Option<ChannelState>, StoreError>;

    /// Every channel state kept for `tenant`, by channel id: one per channel that ever ran
    /// (a few: the configured channels, and any since removed from the configuration). A read
    /// of the tenant's channels alone (`/ui/notifications`), never of other records.
    ///
    /// # Errors
    /// The backend's error, or [`StoreError::Corrupt`] when a kept state does not read.
    async fn channel_states(
        &self,
        tenant: &Tenant,
    ) -> Result<Vec<(String, ChannelState)>, StoreError>;

    /// Keeps `state` for `channel` of `tenant`, replacing what was kept.
    ///
    /// # Errors
    /// The backend's error when it cannot write.
    async fn put_channel_state(
        &self,
        tenant: &Tenant,
        channel: &str,
        state: &ChannelState,
    ) -> Result<(), StoreError>;
}
