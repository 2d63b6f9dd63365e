//! The agents a deployment knows: who they are, what their cards declare, whether the watcher
//! submits their lapse tasks, and how — and, per configured agent, the health of its card
//! (serve.md "Agents are independent": one agent's unreachable or invalid card never stops the
//! watcher or another agent).
//!
//! A [`Directory`] is shared: clones see the same agents, and a card read later (a retry after
//! an outage) is inserted while the watcher runs.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use serde::Serialize;
use watcher_core::engine::AgentProfile;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_core::time::Instant;

/// One registered agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentEntry {
    /// Its tenant.
    pub tenant: Tenant,
    /// Id and validated Expectations declaration.
    pub profile: AgentProfile,
    /// Whether the watcher submits this agent's lapse tasks: `keepsTime: false`, or
    /// `submit_lapses = true` in its configuration (semantics.md, "Who keeps time").
    pub submits_lapses: bool,
    /// Push configuration and interface tenant for its lapse tasks.
    pub delivery: Delivery,
}

/// Where a configured agent's card stands (serve.md "Agents are independent").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CardHealth {
    /// `ok` (the card was read and is in use), `stale` (the last card read is in use because
    /// reading it now fails), or `unavailable` (no card was ever read: the agent's pushes answer
    /// 503 until one is).
    pub state: CardState,
    /// When the card was last read successfully (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_at: Option<Instant>,
    /// Since when reading it fails (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failing_since: Option<Instant>,
    /// Why the last read failed, naming the card and the field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// When the next read is tried (UTC).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_try_at: Option<Instant>,
}

/// The state in [`CardHealth`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CardState {
    /// Read and in use.
    Ok,
    /// The last card read is in use; reading it now fails.
    Stale,
    /// Never read: the agent is not served yet.
    Unavailable,
}

type Key = (Tenant, AgentId);

/// Registered agents by (tenant, id), and the card health of every configured agent. Cheap to
/// clone; clones share their contents.
#[derive(Debug, Clone, Default)]
pub struct Directory {
    agents: Arc<RwLock<BTreeMap<Key, AgentEntry>>>,
    cards: Arc<RwLock<BTreeMap<Key, CardHealth>>>,
}

impl Directory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an agent.
    pub fn insert(&self, entry: AgentEntry) {
        let key = (entry.tenant.clone(), entry.profile.id.clone());
        self.agents
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(key, entry);
    }

    /// The agent `id` of `tenant`.
    pub fn get(&self, tenant: &Tenant, id: &AgentId) -> Option<AgentEntry> {
        self.agents
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(tenant.clone(), id.clone()))
            .cloned()
    }

    /// The agent `id` in whichever tenant has it (ids are unique within a deployment).
    pub fn find(&self, id: &AgentId) -> Option<AgentEntry> {
        self.agents
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .find(|a| &a.profile.id == id)
            .cloned()
    }

    /// Every registered agent, in (tenant, id) order.
    pub fn entries(&self) -> Vec<AgentEntry> {
        self.agents
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect()
    }

    /// Records where `agent`'s card stands.
    pub fn set_card_health(&self, tenant: &Tenant, agent: &AgentId, health: CardHealth) {
        self.cards
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert((tenant.clone(), agent.clone()), health);
    }

    /// Where `agent`'s card stands; `None` for an agent that is not configured.
    pub fn card_health(&self, tenant: &Tenant, agent: &AgentId) -> Option<CardHealth> {
        self.cards
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&(tenant.clone(), agent.clone()))
            .cloned()
    }

    /// Every configured agent whose card is not `ok`, with its health, in (tenant, id) order.
    pub fn card_problems(&self) -> Vec<(Tenant, AgentId, CardHealth)> {
        self.cards
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|(_, h)| h.state != CardState::Ok)
            .map(|((t, a), h)| (t.clone(), a.clone(), h.clone()))
            .collect()
    }

    /// Every configured agent of `tenant` with its card health, in id order.
    pub fn configured(&self, tenant: &Tenant) -> Vec<(AgentId, CardHealth)> {
        self.cards
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|((t, _), _)| t == tenant)
            .map(|((_, a), h)| (a.clone(), h.clone()))
            .collect()
    }
}
