//! Everything a deployment loads at start from its configuration: the agent directory (cards
//! fetched and validated), the credentials of every party, where lapse tasks go, and the bounds.
//! Shared by `a2a-watcher serve` and the Lambda functions.

use std::collections::HashMap;

use anyhow::{anyhow, Context};
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::settings::Settings;
use watcher_delivery::endpoint::AgentEndpoint;
use watcher_http::{Credentials, Principal, Role, SourceWebhook};
use watcher_runtime::directory::Directory;

use crate::agents::load_agent;
use watcher_delivery::client::{A2aClient, ClientConfig};
use watcher_delivery::deliver::{Submitter, SubmitterConfig};
use watcher_delivery::lanes::LaneSettings;
use watcher_delivery::rate::RateLimit;
use watcher_delivery::retry::RetryPolicy;

use crate::config::{Config, DeliveryConfig};

/// A loaded deployment.
pub struct Deployment {
    /// Registered agents.
    pub directory: Directory,
    /// Who may call what.
    pub credentials: Credentials,
    /// Where each agent's lapse tasks go.
    pub endpoints: HashMap<(Tenant, AgentId), AgentEndpoint>,
    /// Bounds.
    pub settings: Settings,
}

/// Loads every agent (fetching cards), and builds credentials, endpoints and bounds.
///
/// # Errors
/// The first agent, card or credential that is not usable, named.
pub async fn load_deployment(config: &Config) -> anyhow::Result<Deployment> {
    let mut directory = Directory::new();
    let mut endpoints = HashMap::new();
    for a in &config.agents {
        let loaded = load_agent(a, config).await?;
        if let Some(url) = &loaded.endpoint {
            let endpoint = if loaded.public_only {
                AgentEndpoint::from_card(url.clone(), loaded.bearer.clone())
            } else {
                AgentEndpoint::configured(url.clone(), loaded.bearer.clone())
            };
            endpoints.insert(
                (loaded.entry.tenant.clone(), loaded.entry.profile.id.clone()),
                endpoint,
            );
        }
        tracing::info!(agent = %a.id, endpoint = loaded.endpoint.as_deref().unwrap_or("none (keepsTime)"), keeps_time = loaded.entry.profile.declaration.keeps_time, "agent registered");
        directory.insert(loaded.entry);
    }
    Ok(Deployment {
        directory,
        credentials: credentials(config)?,
        endpoints,
        settings: settings(config),
    })
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
            rate_limit: RateLimit {
                per_minute: cfg.per_minute,
                burst: cfg.burst,
            },
            concurrency: cfg.in_flight_per_agent.max(1),
        },
    ))
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

/// The bounds of `[limits]`.
pub fn settings(config: &Config) -> Settings {
    Settings {
        lineage_bound: config.limits.lineage_bound,
        max_open_per_subject: config.limits.max_open_per_subject,
        max_open_per_agent: config.limits.max_open_per_agent,
    }
}

fn tenant(t: &str, what: &str) -> anyhow::Result<Tenant> {
    Tenant::parse(t.to_string()).map_err(|r| anyhow!("{what}: tenant: {r}"))
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
            id: id.to_string(),
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
            hook: s.hook()?,
        })
        .map_err(|e| anyhow!("sources: {e}"))?;
    }
    Ok(c)
}
