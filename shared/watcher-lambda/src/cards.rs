//! Agent cards on AWS (serve.md "Agents are independent"): an agent whose card could not be
//! read at a function's cold start is not left waiting for the next cold start.
//!
//! * The timer's sweep (every 5 minutes) re-reads the card of every configured agent whose card
//!   is unavailable or stale, or was read longer ago than the configured age
//!   (`CARD_MAX_AGE_SECS`, default a day), with serve's own refresh
//!   (`watcher_config::deployment::refresh_agent`), and keeps each card read in the table.
//! * Every function picks up a card kept in the table that is newer than the one it loaded
//!   (`watcher_config::deployment::adopt_kept_card`: one keyed read, no network) when it is about
//!   to use an agent whose card it does not have in good health, at most once per
//!   [`PICK_UP_EVERY`] per agent and instance.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use watcher_config::config::AgentConfig;
use watcher_config::deployment::{adopt_kept_card, refresh_agent};
use watcher_config::Config;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_delivery::endpoint::SharedEndpoints;
use watcher_runtime::directory::{CardState, Directory};
use watcher_runtime::store::Store;

/// How often the sweep runs: the next re-read of a failing card is this long after the last.
pub const SWEEP_EVERY: jiff::SignedDuration = jiff::SignedDuration::from_secs(300);

/// A card read longer ago than this is re-read by the sweep even when it is in good health
/// (`CARD_MAX_AGE_SECS` overrides it): a day.
pub const DEFAULT_MAX_AGE: jiff::SignedDuration = jiff::SignedDuration::from_secs(24 * 3600);

/// The shortest time between two look-ups of the kept card of one agent by one instance.
pub const PICK_UP_EVERY: jiff::SignedDuration = jiff::SignedDuration::from_secs(30);

/// What one sweep did to cards.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CardsReport {
    /// Cards the sweep tried to read.
    pub tried: usize,
    /// Cards read now and kept in the table.
    pub read: usize,
}

/// The configured agents' cards of one function instance: its directory and endpoints, kept
/// up to date from the agents (the sweep) and from the table (every function).
pub struct Cards {
    config: Config,
    store: Arc<dyn Store>,
    directory: Directory,
    endpoints: SharedEndpoints,
    max_age: jiff::SignedDuration,
    /// When this instance last looked up each agent's kept card.
    looked: Mutex<HashMap<(Tenant, AgentId), Instant>>,
}

impl Cards {
    /// The cards of `config`'s agents, registering into `directory` and `endpoints` (the same
    /// ones the function's watcher and submitter use).
    pub fn new(
        config: Config,
        store: Arc<dyn Store>,
        directory: Directory,
        endpoints: SharedEndpoints,
    ) -> Self {
        Cards {
            config,
            store,
            directory,
            endpoints,
            max_age: DEFAULT_MAX_AGE,
            looked: Mutex::new(HashMap::new()),
        }
    }

    /// Re-reads cards in good health once they are older than `max_age`.
    pub fn with_max_age(mut self, max_age: jiff::SignedDuration) -> Self {
        self.max_age = max_age;
        self
    }

    /// The endpoints the cards give (the submitter's).
    pub fn endpoints(&self) -> &SharedEndpoints {
        &self.endpoints
    }

    fn key(a: &AgentConfig) -> Option<(Tenant, AgentId)> {
        Some((
            Tenant::parse(a.tenant.clone()).ok()?,
            AgentId::parse(a.id.clone()).ok()?,
        ))
    }

    /// The sweep's part at `now`: re-reads the card of each configured agent whose card is
    /// unavailable, stale, or read more than the maximum age ago, keeping each card read in the
    /// store and registering the agent here. Never fails: a card that cannot be read is tried
    /// again at the next sweep (its health says when).
    pub async fn refresh(&self, now: Instant) -> CardsReport {
        let mut report = CardsReport::default();
        let old_before = now.checked_sub(self.max_age).unwrap_or(now);
        for a in &self.config.agents {
            let Some((tenant, id)) = Self::key(a) else {
                continue;
            };
            let due = match self.directory.card_health(&tenant, &id) {
                None => true,
                Some(h) => h.state != CardState::Ok || h.read_at.is_none_or(|r| r <= old_before),
            };
            if !due {
                continue;
            }
            report.tried += 1;
            let refreshed = refresh_agent(
                a,
                &self.config,
                &*self.store,
                &self.directory,
                now,
                now.checked_add(SWEEP_EVERY),
            )
            .await;
            if let Some(((tenant, agent), endpoint)) = refreshed.endpoint {
                self.endpoints.insert(tenant, agent, endpoint);
            }
            if refreshed.current {
                report.read += 1;
            }
        }
        report
    }

    /// At use of `agent` of `tenant` at `now`: when this instance does not hold its card in good
    /// health, picks up a newer card kept in the store (one keyed read, at most once per
    /// [`PICK_UP_EVERY`]). Answers whether a card was picked up. An agent in good health, or not
    /// configured, costs nothing.
    pub async fn pick_up(&self, tenant: &Tenant, agent: &AgentId, now: Instant) -> bool {
        if self
            .directory
            .card_health(tenant, agent)
            .is_some_and(|h| h.state == CardState::Ok)
        {
            return false;
        }
        let Some(a) = self
            .config
            .agents
            .iter()
            .find(|a| Self::key(a).is_some_and(|(t, id)| &t == tenant && &id == agent))
        else {
            return false;
        };
        {
            let mut looked = self.looked.lock().unwrap_or_else(|p| p.into_inner());
            let key = (tenant.clone(), agent.clone());
            if looked
                .get(&key)
                .and_then(|at| at.checked_add(PICK_UP_EVERY))
                .is_some_and(|next| next > now)
            {
                return false;
            }
            looked.insert(key, now);
        }
        match adopt_kept_card(a, &self.config, &*self.store, &self.directory).await {
            Some(refreshed) => {
                if let Some(((tenant, agent), endpoint)) = refreshed.endpoint {
                    self.endpoints.insert(tenant, agent, endpoint);
                }
                tracing::info!(agent = %agent, "picked up the agent card kept in the table");
                true
            }
            None => false,
        }
    }

    /// [`Cards::pick_up`] for every configured agent this instance does not hold in good health
    /// (the API function, before a request: its cost follows the failing agents, at most one
    /// keyed read each per [`PICK_UP_EVERY`]).
    pub async fn pick_up_all(&self, now: Instant) -> usize {
        let mut picked = 0;
        for a in &self.config.agents {
            if let Some((tenant, id)) = Self::key(a) {
                if self.pick_up(&tenant, &id, now).await {
                    picked += 1;
                }
            }
        }
        picked
    }
}
