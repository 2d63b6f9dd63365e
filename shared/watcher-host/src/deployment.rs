//! Everything a deployment loads at start from its configuration: the agent directory (cards
//! fetched and validated), the credentials of every party, where lapse tasks go, and the bounds.
//! Shared by `a2a-watcher serve` and the Lambda functions ([`crate::aws`]).

use std::collections::HashMap;

use anyhow::{anyhow, Context};
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::settings::Settings;
use watcher_delivery::endpoint::AgentEndpoint;
use watcher_http::lesson_reviews::Owners;
use watcher_http::{Credentials, Principal, Role, SourceWebhook};
use watcher_runtime::directory::Directory;

use crate::agents::{agent_from_card, card_is_fetched, load_agent, LoadedAgent};
use watcher_config::config::AgentConfig;
use watcher_core::time::Instant;
use watcher_delivery::client::{A2aClient, ClientConfig};
use watcher_delivery::deliver::{Submitter, SubmitterConfig};
use watcher_delivery::lanes::LaneSettings;
use watcher_delivery::rate::RateLimit;
use watcher_delivery::retry::RetryPolicy;
use watcher_runtime::directory::{CardHealth, CardState, Lifecycle};
use watcher_runtime::store::Store;

use watcher_config::config::{Config, DeliveryConfig, LimitsConfig};

/// A loaded deployment.
pub struct Deployment {
    /// Registered agents, and the card health of every configured agent.
    pub directory: Directory,
    /// Who may call what.
    pub credentials: Credentials,
    /// Where each agent's lapse tasks go.
    pub endpoints: HashMap<(Tenant, AgentId), AgentEndpoint>,
    /// Bounds.
    pub settings: Settings,
    /// Configured agents whose card could not be read now (served from the kept card, or not
    /// yet served): the caller retries them ([`refresh_agent`]).
    pub pending: Vec<AgentConfig>,
}

/// Loads every agent (fetching cards), and builds credentials, endpoints and bounds.
///
/// One agent's card that cannot be fetched or is invalid never stops the deployment (serve.md
/// "Agents are independent"): the last card kept in `store` for it is used, or, when none was
/// ever read, the agent is left out (its pushes answer 503) and listed in
/// [`Deployment::pending`]. Every card read is kept in `store`.
///
/// # Errors
/// A credential or tenant that is not usable, named. Never a card.
pub async fn load_deployment(
    config: &Config,
    store: &dyn Store,
    now: Instant,
) -> anyhow::Result<Deployment> {
    load(config, store, now, false).await
}

/// [`load_deployment`] for a process that shares its store with one that refreshes the cards
/// (an AWS function other than the timer: [`crate::functions::Needs::reads_cards`]): a card
/// fetched over the network that is kept in `store` is used as kept ([`adopt_kept_card`]: one
/// keyed read, no network, card health `ok` at the kept read instant); only an agent with no
/// usable card kept, or whose card is a file or inline JSON, is read now, as
/// [`load_deployment`] reads it. So a cold start waits on no agent whose card is kept.
///
/// # Errors
/// As [`load_deployment`]: a credential or tenant that is not usable, named. Never a card.
pub async fn load_deployment_kept(
    config: &Config,
    store: &dyn Store,
    now: Instant,
) -> anyhow::Result<Deployment> {
    load(config, store, now, true).await
}

/// [`load_deployment`], or with `prefer_kept` [`load_deployment_kept`].
async fn load(
    config: &Config,
    store: &dyn Store,
    now: Instant,
    prefer_kept: bool,
) -> anyhow::Result<Deployment> {
    let directory = Directory::new();
    let mut endpoints = HashMap::new();
    let mut pending = Vec::new();
    for a in &config.agents {
        // A tenant or id that is not usable is a configuration error, not a card's.
        tenant(&a.tenant, &a.id)?;
        AgentId::parse(a.id.clone()).map_err(|r| anyhow!("agent {:?}: id: {r}", a.id))?;
        let kept = if prefer_kept && card_is_fetched(a) {
            adopt_kept_card(a, config, store, &directory).await
        } else {
            None
        };
        let outcome = match kept {
            Some(kept) => kept,
            None => refresh_agent(a, config, store, &directory, now, None).await,
        };
        if let Some((key, endpoint)) = outcome.endpoint {
            endpoints.insert(key, endpoint);
        }
        if !outcome.current {
            pending.push(a.clone());
        }
    }
    Ok(Deployment {
        directory,
        credentials: credentials(config)?,
        endpoints,
        settings: settings(config),
        pending,
    })
}

/// What [`refresh_agent`] did.
pub struct Refreshed {
    /// The card was read now (not the kept one, not missing).
    pub current: bool,
    /// The agent's endpoint, when it has one.
    pub endpoint: Option<((Tenant, AgentId), AgentEndpoint)>,
}

/// A card that could not be read is read again this long after the first failure, by `serve`'s
/// refresh loop and by the AWS API function at an agent's push (serve.md "Agents are
/// independent"); each wait after that doubles.
pub const CARD_FIRST_RETRY: std::time::Duration = std::time::Duration::from_secs(5);

/// The waits between reads of a card that cannot be read stop doubling at this: 5 minutes.
pub const CARD_MAX_RETRY: std::time::Duration = std::time::Duration::from_secs(300);

/// Reads `a`'s card now and registers the agent in `directory`, keeping the card in `store`;
/// when the card cannot be read, falls back to the card kept in `store` (state `stale`) or
/// leaves the agent out (state `unavailable`). Records the card health either way, with
/// `next_try_at` when given. Logs what happened; never fails.
pub async fn refresh_agent(
    a: &AgentConfig,
    config: &Config,
    store: &dyn Store,
    directory: &Directory,
    now: Instant,
    next_try_at: Option<Instant>,
) -> Refreshed {
    let (Ok(tenant), Ok(id)) = (
        Tenant::parse(a.tenant.clone()),
        AgentId::parse(a.id.clone()),
    ) else {
        return Refreshed {
            current: false,
            endpoint: None,
        };
    };
    let register = |loaded: LoadedAgent| register(a, &tenant, &id, directory, loaded);
    let error = match load_agent(a, config).await {
        Ok((loaded, card)) => {
            load_lifecycle(store, directory, &tenant, &id, &card).await;
            if let Err(e) = store.put_agent_card(&tenant, &id, &card, now).await {
                tracing::warn!(agent = %a.id, error = %e, "could not keep the agent card");
            }
            directory.set_card_health(
                &tenant,
                &id,
                CardHealth {
                    state: CardState::Ok,
                    read_at: Some(now),
                    failing_since: None,
                    error: None,
                    next_try_at: None,
                },
            );
            return Refreshed {
                current: true,
                endpoint: register(loaded),
            };
        }
        Err(e) => format!("{e:#}"),
    };
    let failing_since = directory
        .card_health(&tenant, &id)
        .and_then(|h| h.failing_since)
        .unwrap_or(now);
    let kept = match store.agent_card(&tenant, &id).await {
        Ok(kept) => kept,
        Err(e) => {
            tracing::warn!(agent = %a.id, error = %e, "could not read the kept agent card");
            None
        }
    };
    let from_kept = kept.and_then(|(card, read_at)| {
        match agent_from_card(a, config, card, card_is_fetched(a)) {
            Ok(loaded) => Some((loaded, read_at)),
            Err(e) => {
                tracing::warn!(agent = %a.id, error = %format!("{e:#}"), "the kept agent card is not usable");
                None
            }
        }
    });
    let (state, read_at, endpoint) = match from_kept {
        Some((loaded, read_at)) => {
            if let Ok(Some((card, _))) = store.agent_card(&tenant, &id).await {
                load_lifecycle(store, directory, &tenant, &id, &card).await;
            }
            (CardState::Stale, Some(read_at), register(loaded))
        }
        None => (CardState::Unavailable, None, None),
    };
    tracing::error!(agent = %a.id, state = ?state, error = %error, "the agent card cannot be read; serving every other agent and retrying");
    directory.set_card_health(
        &tenant,
        &id,
        CardHealth {
            state,
            read_at,
            failing_since: Some(failing_since),
            error: Some(error),
            next_try_at,
        },
    );
    Refreshed {
        current: false,
        endpoint,
    }
}

/// Registers `loaded` (agent `a`, `tenant`/`id`) in `directory`; returns its endpoint.
fn register(
    a: &AgentConfig,
    tenant: &Tenant,
    id: &AgentId,
    directory: &Directory,
    loaded: LoadedAgent,
) -> Option<((Tenant, AgentId), AgentEndpoint)> {
    let endpoint = loaded.endpoint.as_ref().map(|url| {
        let endpoint = if loaded.public_only {
            AgentEndpoint::from_card(url.clone(), loaded.bearer.clone())
        } else {
            AgentEndpoint::configured(url.clone(), loaded.bearer.clone())
        }
        .speaking(loaded.protocol);
        ((tenant.clone(), id.clone()), endpoint)
    });
    tracing::info!(agent = %a.id, endpoint = loaded.endpoint.as_deref().unwrap_or("none (keepsTime)"), keeps_time = loaded.entry.profile.declaration.keeps_time, "agent registered");
    directory.insert(loaded.entry);
    directory.set_reconciled(tenant, id, a.reconcile);
    endpoint
}

/// Picks up the card another process kept for `a` in `store` when it was read after the one
/// this process uses (or this process has none): one keyed read, no network. A newer usable
/// card registers the agent in `directory` with card health `ok` at the kept card's read
/// instant (it was read then, by whoever kept it), and its lifecycle descriptor is loaded; the
/// answer then carries the agent's endpoint. `None` when nothing newer or usable is kept, or the
/// store cannot be read (logged). Used where several processes share one store (the Lambda
/// functions: the timer's sweep re-reads cards, every function picks them up).
pub async fn adopt_kept_card(
    a: &AgentConfig,
    config: &Config,
    store: &dyn Store,
    directory: &Directory,
) -> Option<Refreshed> {
    let (Ok(tenant), Ok(id)) = (
        Tenant::parse(a.tenant.clone()),
        AgentId::parse(a.id.clone()),
    ) else {
        return None;
    };
    let (card, read_at) = match store.agent_card(&tenant, &id).await {
        Ok(kept) => kept?,
        Err(e) => {
            tracing::warn!(agent = %a.id, error = %e, "could not read the kept agent card");
            return None;
        }
    };
    let ours = directory.card_health(&tenant, &id).and_then(|h| h.read_at);
    if ours.is_some_and(|ours| ours >= read_at) {
        return None;
    }
    let loaded = match agent_from_card(a, config, card.clone(), card_is_fetched(a)) {
        Ok(loaded) => loaded,
        Err(e) => {
            tracing::warn!(agent = %a.id, error = %format!("{e:#}"), "the kept agent card is not usable");
            return None;
        }
    };
    load_lifecycle(store, directory, &tenant, &id, &card).await;
    let endpoint = register(a, &tenant, &id, directory, loaded);
    directory.set_card_health(
        &tenant,
        &id,
        CardHealth {
            state: CardState::Ok,
            read_at: Some(read_at),
            failing_since: None,
            error: None,
            next_try_at: None,
        },
    );
    Some(Refreshed {
        current: true,
        endpoint,
    })
}

/// Puts the lifecycle descriptor kept in `store` for the agent's kept card (at that card's
/// protocol version) in `directory`, when there is one: two keyed reads, no network. Answers
/// whether one was found. For processes sharing a store, where another process may have probed
/// the agent since this one read its card (the AWS functions). Store errors are logged.
pub async fn load_kept_lifecycle(
    store: &dyn Store,
    directory: &Directory,
    tenant: &Tenant,
    id: &AgentId,
) -> bool {
    match store.agent_card(tenant, id).await {
        Ok(Some((card, _))) => {
            load_lifecycle(store, directory, tenant, id, &card).await;
            directory.lifecycle(tenant, id).is_some()
        }
        Ok(None) => false,
        Err(e) => {
            tracing::warn!(agent = %id, error = %e, "could not read the kept agent card");
            false
        }
    }
}

/// The protocol version a lifecycle descriptor of this card is kept under: the
/// `protocolVersion` of the interface the watcher speaks to
/// ([`crate::agents::jsonrpc_interface`]: the first 1.x JSONRPC interface, else the first 0.3
/// one; a 0.3 card read through the adapter), as the probe records it; for a card that is not a
/// 1.0 AgentCard, its first JSONRPC interface's; else `1.0`.
pub fn card_protocol_version(card: &serde_json::Value) -> String {
    let card = a2a_types::v03::card_to_v1(card.clone());
    if let Ok(parsed) = serde_json::from_value::<a2a_types::AgentCard>(card.clone()) {
        if let Some((i, _)) = crate::agents::jsonrpc_interface(&parsed) {
            return i.protocol_version.clone();
        }
    }
    card["supportedInterfaces"]
        .as_array()
        .and_then(|l| l.iter().find(|i| i["protocolBinding"] == "JSONRPC"))
        .and_then(|i| i["protocolVersion"].as_str())
        .unwrap_or("1.0")
        .to_owned()
}

/// Puts the lifecycle descriptor kept for the agent at its card's protocol version (a probe's)
/// in `directory`, or clears it when none is kept (a new version: not trusted until probed,
/// docs/specs/agent-card-vs-lifecycle-conformance.md). Store errors are logged.
async fn load_lifecycle(
    store: &dyn Store,
    directory: &Directory,
    tenant: &Tenant,
    id: &AgentId,
    card: &serde_json::Value,
) {
    let version = card_protocol_version(card);
    match store.lifecycle_descriptor(tenant, id, &version).await {
        Ok(Some((descriptor, at))) => {
            directory.set_lifecycle(tenant, id, Lifecycle::from_descriptor(descriptor, at));
        }
        Ok(None) => directory.clear_lifecycle(tenant, id),
        Err(e) => {
            tracing::warn!(agent = %id, error = %e, "could not read the kept lifecycle descriptor");
        }
    }
}

/// The lapse-task submitter configured from `[delivery]`: timeouts, retry by age, backoff,
/// rate per agent.
///
/// # Errors
/// When the HTTP client cannot be built.
pub fn submitter(cfg: &DeliveryConfig) -> anyhow::Result<Submitter> {
    let client = A2aClient::new(&ClientConfig {
        connect_timeout: std::time::Duration::from_secs(cfg.timeout_secs),
        request_timeout: std::time::Duration::from_secs(cfg.timeout_secs),
        ..ClientConfig::default()
    })
    .context("Failed to build the A2A client")?;
    Ok(Submitter::new(
        client,
        SubmitterConfig {
            retry: retry_policy(cfg),
            rate_limit: rate_limit(cfg),
        },
    )
    .with_lease(watcher_delivery::deliver::lease_for(
        std::time::Duration::from_secs(cfg.timeout_secs),
    )))
}

/// The rate limit per agent of `[delivery]` (`per_minute`, `burst`).
pub fn rate_limit(cfg: &DeliveryConfig) -> RateLimit {
    RateLimit {
        per_minute: cfg.per_minute,
        burst: cfg.burst,
    }
}

/// The notification channels of `[[notify]]`, each built and checked (its secret, its email
/// settings).
///
/// # Errors
/// The first channel that cannot be built, in words.
#[cfg(any(feature = "aws-notify", feature = "serve"))]
pub(crate) fn notify_channels(config: &Config) -> anyhow::Result<Vec<watcher_notify::Channel>> {
    config
        .notify
        .iter()
        .map(watcher_notify::Channel::from_config)
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)
}

/// The retry policy of `[delivery]`.
pub fn retry_policy(cfg: &DeliveryConfig) -> RetryPolicy {
    let std = |d: &watcher_core::time::IsoDuration| {
        std::time::Duration::from_nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    };
    RetryPolicy {
        give_up_after: std(&cfg.give_up_after),
        base: std(&cfg.backoff_base),
        max_backoff: std(&cfg.backoff_max),
        poll_first: std(&cfg.poll_first),
    }
}

/// The delivery lanes' settings of `[delivery]`.
pub fn lane_settings(cfg: &DeliveryConfig) -> LaneSettings {
    LaneSettings {
        per_agent: cfg.in_flight_per_agent.max(1),
        total: cfg.in_flight.max(1),
        ..LaneSettings::default()
    }
}

/// The request bounds the HTTP routers enforce (`watcher_http::limits`) of `[limits]`.
pub fn http_limits(cfg: &LimitsConfig) -> watcher_http::Limits {
    watcher_http::Limits {
        body_bytes: cfg.body_bytes,
        body_read_secs: cfg.body_read_secs,
        json_depth: cfg.json_depth,
        string_bytes: cfg.string_bytes,
        expectations_per_artifact: cfg.expectations_per_artifact,
        facts_per_request: cfg.facts_per_request,
        check_corpus_entries: cfg.check_corpus_entries,
    }
}

/// The bounds of `[limits]`.
pub fn settings(config: &Config) -> Settings {
    Settings {
        lineage_bound: config.limits.lineage_bound,
        max_open_per_subject: config.limits.max_open_per_subject,
        max_open_per_agent: config.limits.max_open_per_agent,
    }
}

fn tenant(t: &str, what: &str) -> anyhow::Result<Tenant> {
    Tenant::parse(t.to_owned()).map_err(|r| anyhow!("{what}: tenant: {r}"))
}

/// Who owns each definition of the Learnables authority (`[[agents]] learnables`): the agent a
/// lesson's `lesson.review` is raised as when its card declares the kind (expectations-v1 §16).
///
/// # Errors
/// A tenant or agent id the watcher cannot take, named.
pub fn learnable_owners(config: &Config) -> anyhow::Result<Owners> {
    let mut owners = Owners::new();
    for a in &config.agents {
        let id = AgentId::parse(a.id.clone()).map_err(|r| anyhow!("agents: id: {r}"))?;
        for d in &a.learnables {
            owners.insert((tenant(&a.tenant, &a.id)?, d.clone()), id.clone());
        }
    }
    Ok(owners)
}

/// Builds the credentials of every party in the configuration.
pub fn credentials(config: &Config) -> anyhow::Result<Credentials> {
    let mut c = Credentials::new();
    let mut add = |token: &str,
                   role: Role,
                   id: &str,
                   t: &str,
                   on_behalf_of: Vec<String>|
     -> anyhow::Result<()> {
        let principal = Principal {
            role,
            id: id.to_owned(),
            tenant: tenant(t, id)?,
            on_behalf_of,
        };
        c.insert(token, principal).map_err(|e| anyhow!(e))
    };
    for s in &config.sources {
        add(&s.token, Role::Source, &s.id, &s.tenant, Vec::new())?;
    }
    for a in &config.agents {
        add(&a.push_token, Role::Agent, &a.id, &a.tenant, Vec::new())?;
    }
    for o in &config.operators {
        add(&o.token, Role::Operator, &o.id, &o.tenant, Vec::new())?;
    }
    for t in &config.teachers {
        add(
            &t.token,
            Role::Teacher,
            &t.id,
            &t.tenant,
            t.on_behalf_of.clone(),
        )?;
    }
    // Each source's webhook: its mappings and signature (contracts/serve.md "Carrier webhooks").
    for s in &config.sources {
        c.insert_webhook(SourceWebhook {
            tenant: tenant(&s.tenant, &s.id)?,
            id: s.id.clone(),
            hook: s.hook().map_err(|e| anyhow!(e))?,
        })
        .map_err(|e| anyhow!("sources: {e}"))?;
    }
    Ok(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each definition an agent lists is owned by it, in the agent's tenant.
    #[test]
    fn learnable_owners_are_read_per_tenant() {
        let config = Config::from_toml(
            "[[agents]]\nid = \"triage\"\ncard = \"x\"\npush_token = \"p\"\nlearnables = [\"prealert-triage\", \"columns\"]\n\
             [[agents]]\nid = \"other\"\ncard = \"y\"\npush_token = \"q\"\ntenant = \"t2\"\nlearnables = [\"prealert-triage\"]\n",
        )
        .expect("a valid configuration");
        let owners = learnable_owners(&config).expect("owners");
        let owner = |t: &str, d: &str| {
            owners
                .get(&(Tenant::parse(t).expect("tenant"), d.to_owned()))
                .map(|a| a.as_str().to_owned())
        };
        assert_eq!(
            owner("default", "prealert-triage").as_deref(),
            Some("triage")
        );
        assert_eq!(owner("default", "columns").as_deref(), Some("triage"));
        assert_eq!(owner("t2", "prealert-triage").as_deref(), Some("other"));
        assert_eq!(owner("t2", "columns"), None);
    }

    /// `[limits]`'s defaults (watcher-config, which does not depend on watcher-http) are the
    /// routers' own.
    #[test]
    fn the_limits_defaults_are_the_routers() {
        assert_eq!(
            http_limits(&LimitsConfig::default()),
            watcher_http::Limits::default()
        );
    }
}
