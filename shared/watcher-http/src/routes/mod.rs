//! The watcher's routes (serve.md "Routes"). Handlers parse at the edge, call the watcher, and
//! shape the answer; nothing here is local to one host.
//!
//! One file per route group; each handler authenticates, parses, calls the watcher and
//! serialises its answer.

use crate::problem::ApiError;

mod agents;
mod facts;
mod health;
mod lapses;
mod push;
mod rejections;
mod subjects;

pub use agents::*;
pub use facts::*;
pub use health::*;
pub use lapses::*;
pub use push::*;
pub use rejections::*;
pub use subjects::*;

/// Refuses (404) an agent the directory does not hold in `tenant`; `name` is the id as the
/// caller gave it.
pub(crate) fn require_registered(
    state: &crate::AppState,
    tenant: &watcher_core::ids::Tenant,
    id: &watcher_core::ids::AgentId,
    name: &str,
) -> Result<(), ApiError> {
    if state.watcher.directory.get(tenant, id).is_none() {
        return Err(ApiError::not_found(format!(
            "agent {name:?} is not registered in this tenant"
        )));
    }
    Ok(())
}

pub(crate) fn unavailable(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "store failure");
    ApiError::unavailable("the watcher's store is unavailable; retry later")
}
