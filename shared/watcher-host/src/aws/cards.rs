//! Agent cards on AWS (serve.md "Agents are independent"): an agent whose card could not be
//! read at a function's cold start is not left waiting for the next cold start.
//!
//! * The timer's sweep (every 5 minutes) re-reads the card of every configured agent whose card
//!   is unavailable or stale, or was read longer ago than the configured age
//!   (`CARD_MAX_AGE_SECS`, default a day), with serve's own refresh
//!   ([`crate::deployment::refresh_agent`]), and keeps each card read in the table.
//! * Every function picks up a card kept in the table that is newer than the one it loaded
//!   ([`crate::deployment::adopt_kept_card`]: one keyed read, no network) when it is about
//!   to use an agent whose card it does not have in good health, at most once per
//!   [`PICK_UP_EVERY`] per agent and instance.
//! * The registration probe (`probe = true`): the sweep probes an agent that has a card but no
//!   lifecycle descriptor kept for that card's protocol version, at most one agent per sweep,
//!   the probe's pushes going to the deployment's own push route (`public_url` +
//!   `/v1/agents/{agentId}/push`, the agent's push token), read back from the table
//!   ([`StoreInbox`]). The descriptor is kept in the table; every function loads it with the
//!   card (cold start, pick-up) and picks up one kept after it loaded the card.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde_json::{json, Value};
use watcher_config::config::AgentConfig;
use watcher_config::Config;
use watcher_core::ids::{AgentId, TaskId, TaskRef, Tenant};
use watcher_core::slice::Scope;
use watcher_core::time::Instant;
use watcher_delivery::endpoint::SharedEndpoints;
use watcher_lambda::cards::{AgentCards, CardsReport};
use watcher_runtime::directory::{CardState, Directory};
use watcher_runtime::store::Store;

use crate::deployment::{adopt_kept_card, load_kept_lifecycle, refresh_agent};
use crate::probe::{probe_and_keep, Leg, PushInbox};

/// How often the sweep runs: the next re-read of a failing card is this long after the last.
pub const SWEEP_EVERY: jiff::SignedDuration = jiff::SignedDuration::from_secs(300);

/// A card read longer ago than this is re-read by the sweep even when it is in good health
/// (`CARD_MAX_AGE_SECS` overrides it): a day.
pub const DEFAULT_MAX_AGE: jiff::SignedDuration = jiff::SignedDuration::from_secs(24 * 3600);

/// Cards the sweep reads at once.
pub const REFRESH_AT_ONCE: usize = 8;

/// The shortest time between two look-ups of the kept card of one agent by one instance.
pub const PICK_UP_EVERY: jiff::SignedDuration = jiff::SignedDuration::from_secs(30);

/// After a probe that kept no descriptor (the agent unreachable, say), the same instance tries
/// that agent again no sooner than this: each probe sends the agent two real tasks.
pub const PROBE_RETRY: jiff::SignedDuration = jiff::SignedDuration::from_secs(3600);

/// The probe's [`PushInbox`] on AWS: the probe tasks ask the agent to push to the deployment's
/// own push route (`{public_url}/v1/agents/{agentId}/push`, with the agent's push token, as lapse
/// tasks do); the API function records each pushed status on the task's record in the table,
/// where the probe reads them back (`Records::load` of the task: one keyed read).
pub struct StoreInbox<'a> {
    /// The table.
    pub store: &'a dyn Store,
    /// The agent's tenant.
    pub tenant: Tenant,
    /// The agent.
    pub agent: AgentId,
    /// The push route's URL.
    pub url: String,
    /// The agent's push token.
    pub token: String,
}

#[async_trait::async_trait]
impl PushInbox for StoreInbox<'_> {
    fn config(&self, _: Leg) -> Option<a2a_types::TaskPushNotificationConfig> {
        let mut config = a2a_types::TaskPushNotificationConfig::new(self.url.clone());
        config.token = Some(self.token.clone());
        Some(config)
    }

    async fn pushed(&self, _: Leg, task_id: &str) -> Vec<Value> {
        let Ok(task_id) = TaskId::parse(task_id.to_owned()) else {
            return Vec::new();
        };
        let task = TaskRef {
            agent: self.agent.clone(),
            task_id,
        };
        let scope = Scope {
            tasks: [task.clone()].into(),
            ..Scope::default()
        };
        let now = watcher_runtime::clock::Clock::now(&watcher_runtime::clock::SystemClock);
        let slice = match self.store.load(&self.tenant, &scope, now).await {
            Ok(slice) => slice,
            Err(e) => {
                tracing::warn!(agent = %self.agent, error = %e, "lifecycle probe: could not read the pushed statuses");
                return Vec::new();
            }
        };
        let Some(Some(record)) = slice.tasks.get(&task) else {
            return Vec::new();
        };
        record
            .statuses
            .iter()
            .map(|s| {
                let mut out = json!({ "from": "push", "state": s.state });
                if let Some(t) = s.timestamp {
                    out["timestamp"] = json!(t.to_string());
                }
                out
            })
            .collect()
    }
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
    /// When this instance last probed each agent without keeping a descriptor.
    probe_failed: Mutex<HashMap<(Tenant, AgentId), Instant>>,
    /// When this instance last read each never-read agent's card at a push.
    read_at_push: Mutex<HashMap<(Tenant, AgentId), Instant>>,
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
            probe_failed: Mutex::new(HashMap::new()),
            read_at_push: Mutex::new(HashMap::new()),
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
        use futures_util::stream::{self, StreamExt};
        let old_before = now.checked_sub(self.max_age).unwrap_or(now);
        // Owned: the stream's futures must be `Send` for every borrow of `self` (the handlers
        // take cards as `dyn AgentCards`), which a closure over `&AgentConfig` cannot show.
        let due: Vec<AgentConfig> = self
            .config
            .agents
            .iter()
            .filter(|a| {
                Self::key(a).is_some_and(|(tenant, id)| {
                    match self.directory.card_health(&tenant, &id) {
                        None => true,
                        Some(h) => {
                            h.state != CardState::Ok || h.read_at.is_none_or(|r| r <= old_before)
                        }
                    }
                })
            })
            .cloned()
            .collect();
        let mut report = CardsReport {
            tried: due.len(),
            ..CardsReport::default()
        };
        // Several at once: one unreachable card server costs the sweep one fetch timeout, not
        // one per agent behind it.
        let results: Vec<bool> = stream::iter(due)
            .map(|a| async move {
                let refreshed = refresh_agent(
                    &a,
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
                refreshed.current
            })
            .buffer_unordered(REFRESH_AT_ONCE)
            .collect()
            .await;
        report.read = results.into_iter().filter(|read| *read).count();
        report.probed = self.probe_one(now).await;
        report
    }

    /// The registration probe at the sweep: the first agent with `probe = true` that is
    /// registered here but has no lifecycle descriptor for its card's protocol version, in this
    /// instance or in the table, is probed (pushes through [`StoreInbox`]) and its descriptor kept
    /// in the table. One agent a sweep (a probe takes up to about 45 s of the timer function's
    /// 120 s); an agent whose probe kept nothing waits [`PROBE_RETRY`]. Without `public_url` no
    /// push could reach the deployment: the probe is not run, and the agent stays untrusted.
    /// Answers how many descriptors were kept (0 or 1).
    async fn probe_one(&self, now: Instant) -> usize {
        for a in self.config.agents.iter().filter(|a| a.probe) {
            let Some((tenant, id)) = Self::key(a) else {
                continue;
            };
            if self.directory.get(&tenant, &id).is_none()
                || self.directory.lifecycle(&tenant, &id).is_some()
                || load_kept_lifecycle(&*self.store, &self.directory, &tenant, &id).await
            {
                continue;
            }
            let key = (tenant.clone(), id.clone());
            if self
                .probe_failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(&key)
                .and_then(|at| at.checked_add(PROBE_RETRY))
                .is_some_and(|next| next > now)
            {
                continue;
            }
            let Some(public) = self.config.public_url.as_deref() else {
                tracing::warn!(agent = %a.id, "probe = true, but public_url is not set: the probe's pushes could not reach the deployment; the agent stays untrusted");
                continue;
            };
            let inbox = StoreInbox {
                store: &*self.store,
                tenant: tenant.clone(),
                agent: id.clone(),
                url: format!("{}/v1/agents/{}/push", public.trim_end_matches('/'), id),
                token: a.push_token.clone(),
            };
            let kept = probe_and_keep(
                a,
                &*self.store,
                &self.directory,
                &inbox,
                &watcher_runtime::clock::SystemClock,
            )
            .await;
            if kept {
                return 1;
            }
            self.probe_failed
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(key, now);
            return 0;
        }
        0
    }

    /// At use of `agent` of `tenant` at `now`: when this instance does not hold its card in good
    /// health, picks up a newer card kept in the store (one keyed read), and when the agent has
    /// `probe = true` but no lifecycle descriptor here, the descriptor kept for its card (two
    /// keyed reads); at most once per [`PICK_UP_EVERY`]. Answers whether something was picked
    /// up. An agent in good health with what it needs, or not configured, costs nothing.
    pub async fn pick_up(&self, tenant: &Tenant, agent: &AgentId, now: Instant) -> bool {
        let card_ok = self
            .directory
            .card_health(tenant, agent)
            .is_some_and(|h| h.state == CardState::Ok);
        let Some(a) = self
            .config
            .agents
            .iter()
            .find(|a| Self::key(a).is_some_and(|(t, id)| &t == tenant && &id == agent))
        else {
            return false;
        };
        let wants_lifecycle = a.probe
            && self.directory.get(tenant, agent).is_some()
            && self.directory.lifecycle(tenant, agent).is_none();
        if card_ok && !wants_lifecycle {
            return false;
        }
        {
            let mut looked = self
                .looked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
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
        if card_ok {
            // A descriptor the sweep's probe kept after this instance read the card.
            return load_kept_lifecycle(&*self.store, &self.directory, tenant, agent).await;
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

impl Cards {
    /// At a push for `agent` at `now`: when this instance never read the agent's card (the push
    /// would answer 503 "card not read yet"), reads it from the agent again if a read is due
    /// ([`push_retry_wait`] after the last try, counted from the first failure), keeps it in the
    /// store and registers the agent, so the push is served. The card's health then says when
    /// the next read is tried. Answers whether the card was read. An agent registered here (its
    /// card read, or a kept one in use), or not configured, costs nothing.
    pub async fn read_for_push(&self, agent: &AgentId, now: Instant) -> bool {
        let Some(a) = self.config.agents.iter().find(|a| a.id == agent.as_str()) else {
            return false;
        };
        let Some((tenant, id)) = Self::key(a) else {
            return false;
        };
        if self.directory.get(&tenant, &id).is_some() {
            return false;
        }
        let first = self
            .directory
            .card_health(&tenant, &id)
            .and_then(|h| h.failing_since)
            .unwrap_or(now);
        {
            let mut tried = self
                .read_at_push
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let key = (tenant.clone(), id.clone());
            // Before any read here, the cold start's failed read was the last try.
            let last = tried.get(&key).copied().unwrap_or(first);
            if last
                .checked_add(push_retry_wait(first, last))
                .is_some_and(|due| due > now)
            {
                return false;
            }
            tried.insert(key, now);
        }
        let next_try = now.checked_add(push_retry_wait(first, now));
        let refreshed = refresh_agent(
            a,
            &self.config,
            &*self.store,
            &self.directory,
            now,
            next_try,
        )
        .await;
        if let Some(((tenant, agent), endpoint)) = refreshed.endpoint {
            self.endpoints.insert(tenant, agent, endpoint);
        }
        if refreshed.current {
            tracing::info!(agent = %a.id, "the agent card was read at a push; the agent is served");
        }
        refreshed.current
    }
}

/// The wait after a read tried at `last` of a card failing since `first`: as long as it has
/// been failing, at least 5 s and at most 5 minutes (`serve`'s backoff, counted from the
/// failure rather than from a count of tries: reads at 5, 10, 20, 40 s... after the first).
pub fn push_retry_wait(first: Instant, last: Instant) -> jiff::SignedDuration {
    let at_least = jiff::SignedDuration::try_from(crate::deployment::CARD_FIRST_RETRY)
        .unwrap_or(jiff::SignedDuration::from_secs(5));
    let at_most = jiff::SignedDuration::try_from(crate::deployment::CARD_MAX_RETRY)
        .unwrap_or(jiff::SignedDuration::from_secs(300));
    let failing = last.as_nanos().saturating_sub(first.as_nanos());
    let failing = jiff::SignedDuration::from_nanos(i64::try_from(failing).unwrap_or(i64::MAX));
    failing.clamp(at_least, at_most)
}

/// The handlers' view of [`Cards`]: its inherent methods.
#[async_trait::async_trait]
impl AgentCards for Cards {
    async fn refresh(&self, now: Instant) -> CardsReport {
        Cards::refresh(self, now).await
    }

    async fn pick_up(&self, tenant: &Tenant, agent: &AgentId, now: Instant) -> bool {
        Cards::pick_up(self, tenant, agent, now).await
    }

    async fn pick_up_all(&self, now: Instant) -> usize {
        Cards::pick_up_all(self, now).await
    }

    async fn read_for_push(&self, agent: &AgentId, now: Instant) -> bool {
        Cards::read_for_push(self, agent, now).await
    }
}
