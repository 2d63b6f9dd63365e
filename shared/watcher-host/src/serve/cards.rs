//! `serve`'s card refresh: configured agents whose card could not be read at start are retried
//! with capped exponential backoff until it is, while the watcher serves every other agent
//! (serve.md "Agents are independent"). A card read registers the agent (its pushes are served
//! from then on), gives its lane the endpoint, and is kept in the store.

use std::sync::Arc;
use std::time::Duration;

use crate::deployment::refresh_agent;
use tokio::sync::{watch, Notify};
use watcher_config::config::AgentConfig;
use watcher_config::Config;
use watcher_delivery::endpoint::SharedEndpoints;
use watcher_runtime::clock::Clock;
use watcher_runtime::directory::Directory;
use watcher_runtime::store::Store;

/// The first retry comes this long after the failed read.
pub const FIRST_RETRY: Duration = crate::deployment::CARD_FIRST_RETRY;

/// Retries back off, doubling, up to this long apart.
pub const MAX_RETRY: Duration = crate::deployment::CARD_MAX_RETRY;

/// The wait before retry `n` (0-based): 5 s, 10 s, 20 s, … capped at 5 minutes.
pub fn backoff(n: u32) -> Duration {
    FIRST_RETRY
        .saturating_mul(2u32.saturating_pow(n.min(16)))
        .min(MAX_RETRY)
}

/// Retries each agent of `pending` until its card is read or `stop` flips.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site; each argument is a distinct dependency"
)]
pub async fn refresh_loop(
    config: Config,
    pending: Vec<AgentConfig>,
    store: Arc<dyn Store>,
    directory: Directory,
    endpoints: SharedEndpoints,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    let start = tokio::time::Instant::now();
    // (agent, failed reads so far, when to try next)
    let mut waiting: Vec<(AgentConfig, u32, tokio::time::Instant)> = pending
        .into_iter()
        .map(|a| (a, 0, start + backoff(0)))
        .collect();
    while let Some(next) = waiting.iter().map(|(_, _, due)| *due).min() {
        tokio::select! {
            () = tokio::time::sleep_until(next) => {}
            _ = stop.changed() => return,
        }
        let mut still = Vec::new();
        for (a, failed, due) in waiting {
            if due > tokio::time::Instant::now() {
                still.push((a, failed, due));
                continue;
            }
            let wait = backoff(failed + 1);
            let now = clock.now();
            let next_try = jiff::SignedDuration::try_from(wait)
                .ok()
                .and_then(|d| now.checked_add(d));
            let refreshed = refresh_agent(&a, &config, &*store, &directory, now, next_try).await;
            if let Some(((tenant, agent), endpoint)) = refreshed.endpoint {
                endpoints.insert(tenant, agent, endpoint);
            }
            if refreshed.current {
                tracing::info!(agent = %a.id, "the agent card was read; the agent is served");
                wake.notify_waiters();
                if a.probe {
                    crate::probe::on_registration(&a, &*store, &directory, &*clock).await;
                }
            } else {
                still.push((a, failed + 1, tokio::time::Instant::now() + wait));
            }
        }
        waiting = still;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_to_five_minutes() {
        let secs: Vec<u64> = (0..9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(secs, [5, 10, 20, 40, 80, 160, 300, 300, 300]);
        assert_eq!(backoff(u32::MAX), MAX_RETRY);
    }
}
