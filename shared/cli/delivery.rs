//! `serve`'s lapse-task delivery loop over the shared submitter (`watcher-delivery`).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::sync::{watch, Notify};
use watcher_core::ids::{AgentId, Tenant};
use watcher_delivery::client::{A2aClient, ClientConfig};
use watcher_delivery::deliver::{Submitter, SubmitterConfig};
use watcher_delivery::endpoint::AgentEndpoint;
use watcher_delivery::rate::RateLimit;
use watcher_delivery::retry::RetryPolicy;
use watcher_runtime::clock::Clock;
use watcher_runtime::store::Store;

use crate::config::DeliveryConfig;

/// Longest the loop sleeps before looking at the outbox again (backoffs end on their own clock).
const POLL: Duration = Duration::from_millis(500);

/// The submitter and where each agent's lapse tasks go.
pub struct Delivery {
    submitter: Submitter,
    endpoints: HashMap<(Tenant, AgentId), AgentEndpoint>,
}

impl Delivery {
    /// A submitter configured from `[delivery]`.
    ///
    /// # Errors
    /// When the HTTP client cannot be built.
    pub fn new(cfg: &DeliveryConfig) -> anyhow::Result<Self> {
        let client = A2aClient::new(&ClientConfig {
            connect_timeout: Duration::from_secs(cfg.timeout_secs),
            request_timeout: Duration::from_secs(cfg.timeout_secs),
            ..ClientConfig::default()
        })
        .context("Failed to build the A2A client")?;
        let config = SubmitterConfig {
            retry: RetryPolicy {
                max_attempts: cfg.max_attempts,
                ..RetryPolicy::default()
            },
            rate_limit: RateLimit {
                per_minute: cfg.per_minute,
                ..RateLimit::default()
            },
            ..SubmitterConfig::default()
        };
        Ok(Delivery {
            submitter: Submitter::new(client, config),
            endpoints: HashMap::new(),
        })
    }

    /// Registers where `agent`'s lapse tasks go. `public_only` for endpoints taken from a fetched
    /// card (serve.md "Outbound").
    pub fn add_endpoint(
        &mut self,
        tenant: &Tenant,
        agent: &AgentId,
        url: &str,
        bearer: Option<String>,
        public_only: bool,
    ) {
        let endpoint = if public_only {
            AgentEndpoint::from_card(url, bearer)
        } else {
            AgentEndpoint::configured(url, bearer)
        };
        self.endpoints
            .insert((tenant.clone(), agent.clone()), endpoint);
    }
}

/// Posts queued lapse tasks until stopped: woken when new ones are queued, and at least every
/// half second for retries whose backoff has ended. One pass at a time, so a messageId is
/// never in flight twice.
pub async fn delivery_loop(
    store: Arc<dyn Store>,
    delivery: Delivery,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        match delivery
            .submitter
            .deliver_due(&*store, &delivery.endpoints, clock.now(), 64)
            .await
        {
            Ok(report) => tracing::debug!(?report, "delivery pass"),
            Err(e) => tracing::error!(error = %e, "delivery pass failed; will retry"),
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {},
            () = wake.notified() => {},
            _ = stop.changed() => return,
        }
    }
}
