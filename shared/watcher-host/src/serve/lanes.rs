//! `serve`'s lapse-task delivery: one lane per agent over the shared submitter
//! (`watcher_delivery::lanes`), so a slow or dead agent never delays another.

use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::{watch, Notify};
use tokio::task::JoinHandle;
use watcher_core::ids::{AgentId, Tenant};
use watcher_delivery::deliver::Submitter;
use watcher_delivery::endpoint::SharedEndpoints;
use watcher_delivery::lanes::{spawn_lanes, LaneContext, LaneSettings};
use watcher_delivery::reconcile::Reconciler;
use watcher_runtime::clock::Clock;
use watcher_runtime::directory::Directory;
use watcher_runtime::store::Store;

/// Starts a delivery lane for every agent of the configuration (`configured`, whether or not its
/// card could be read yet), every registered agent whose lapse tasks the watcher submits, and
/// every agent with an endpoint; they run until `stop` flips. Endpoints are looked up at each
/// send, so an agent whose card is read after an outage is served by its lane at once. An agent
/// without an endpoint when a lapse task is due has it marked `failed` with the reason.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site; each argument is a distinct dependency"
)]
pub fn start_lanes(
    store: Arc<dyn Store>,
    submitter: Submitter,
    endpoints: SharedEndpoints,
    configured: Vec<(Tenant, AgentId)>,
    directory: &Directory,
    clock: Arc<dyn Clock>,
    wake: Arc<Notify>,
    stop: watch::Receiver<bool>,
    settings: LaneSettings,
    reconciler: Option<Arc<Reconciler>>,
) -> Vec<JoinHandle<()>> {
    let agents: BTreeSet<(Tenant, AgentId)> = directory
        .entries()
        .into_iter()
        .filter(|a| a.submits_lapses)
        .map(|a| (a.tenant.clone(), a.profile.id))
        .chain(configured)
        .collect();
    tracing::info!(lanes = agents.len(), ?settings, "lapse-task delivery lanes");
    spawn_lanes(
        LaneContext {
            store,
            submitter: Arc::new(submitter),
            endpoints: Arc::new(endpoints),
            clock,
            wake,
            stop,
            settings,
            reconciler,
        },
        agents.into_iter().collect(),
    )
}
