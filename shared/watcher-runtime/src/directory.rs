//! The agents a deployment knows: who they are, what their cards declare, whether the watcher
//! submits their lapse tasks, and how.

use std::collections::BTreeMap;

use watcher_core::engine::AgentProfile;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::lapse::Delivery;

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

/// Registered agents by (tenant, id).
#[derive(Debug, Clone, Default)]
pub struct Directory {
    agents: BTreeMap<(Tenant, AgentId), AgentEntry>,
}

impl Directory {
    /// An empty directory.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an agent.
    pub fn insert(&mut self, entry: AgentEntry) {
        self.agents
            .insert((entry.tenant.clone(), entry.profile.id.clone()), entry);
    }

    /// The agent `id` of `tenant`.
    pub fn get(&self, tenant: &Tenant, id: &AgentId) -> Option<&AgentEntry> {
        self.agents.get(&(tenant.clone(), id.clone()))
    }

    /// The agent `id` in whichever tenant has it (ids are unique within a deployment).
    pub fn find(&self, id: &AgentId) -> Option<&AgentEntry> {
        self.agents.values().find(|a| &a.profile.id == id)
    }

    /// Every agent.
    pub fn iter(&self) -> impl Iterator<Item = &AgentEntry> {
        self.agents.values()
    }
}
