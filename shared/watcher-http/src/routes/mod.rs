//! The watcher's routes (serve.md "Routes"). Handlers parse at the edge, call the watcher, and
//! shape the answer; nothing here is local to one host.
//!
//! One file per route group; each handler authenticates, parses, calls the watcher and
//! serialises its answer.

use crate::problem::ApiError;

mod agents;
mod facts;
mod health;
mod incidents;
mod lapses;
mod push;
mod rejections;
mod subjects;

pub use agents::*;
pub use facts::*;
pub use health::*;
pub use incidents::*;
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

/// A request the store cannot serve now, as 503 problem+json with `Retry-After` and the reason
/// ([`store_unavailable`]).
pub(crate) fn unavailable<E: std::error::Error + 'static>(e: E) -> ApiError {
    store_unavailable(&e)
}

/// A store or watcher failure as the answer no client gets a 500 for: 503 with `Retry-After`,
/// and a `detail` naming why when the store said (throttled, contended past the retries, a
/// server error, a timeout, unreachable: [`watcher_runtime::store::Unavailable`]). Nothing of
/// the request was recorded (a commit lands whole or not at all), so sending it again is safe.
/// The cause is logged, never shown.
pub fn store_unavailable(e: &(dyn std::error::Error + 'static)) -> ApiError {
    use watcher_runtime::store::{StoreError, Unavailable};
    use watcher_runtime::watcher::ApplyError;
    let kind = if let Some(a) = e.downcast_ref::<ApplyError>() {
        a.unavailability()
    } else if let Some(s) = e.downcast_ref::<StoreError>() {
        match s {
            StoreError::Conflict(_) => Some(Unavailable::Contended),
            other => other.unavailability(),
        }
    } else {
        watcher_runtime::store::unavailability_of(e)
    };
    match kind {
        Some(kind) => {
            tracing::warn!(error = %e, reason = kind.reason(), "store unavailable; answered 503");
            ApiError::unavailable(format!(
                "{}; nothing of this request was recorded: send it again after the Retry-After seconds",
                kind.reason()
            ))
            .with_retry_after(kind.retry_after_secs())
        }
        None => {
            tracing::error!(error = %e, "store failure");
            ApiError::unavailable(
                "the watcher's store failed; nothing of this request was recorded: send it again after the Retry-After seconds",
            )
            .with_retry_after(STORE_RETRY_AFTER_SECS)
        }
    }
}

/// `Retry-After` of a store failure of no known class.
pub const STORE_RETRY_AFTER_SECS: u64 = 5;

#[cfg(test)]
mod tests {
    use axum::http::StatusCode;
    use watcher_runtime::store::{StoreError, Unavailable};
    use watcher_runtime::watcher::ApplyError;

    use super::*;

    fn io(text: &str) -> std::io::Error {
        std::io::Error::other(text.to_owned())
    }

    /// Every store or watcher failure is 503 with `Retry-After` and the reason, never 500:
    /// each class of a dependency that cannot serve now, a conflict that outlasted the
    /// retries, and a failure of no known class.
    #[test]
    fn store_failures_answer_503_with_retry_after_and_the_reason() {
        let cases: Vec<(Box<dyn std::error::Error + 'static>, u64, &str)> = vec![
            (
                Box::new(ApplyError::Store(StoreError::unavailable(
                    Unavailable::Throttled,
                    io("ProvisionedThroughputExceededException"),
                ))),
                1,
                "throttled",
            ),
            (
                Box::new(StoreError::unavailable(Unavailable::Failed, io("500"))),
                5,
                "server error",
            ),
            (
                Box::new(StoreError::unavailable(
                    Unavailable::TimedOut,
                    io("timeout"),
                )),
                5,
                "did not answer in time",
            ),
            (
                Box::new(StoreError::unavailable(
                    Unavailable::Unreachable,
                    io("reset"),
                )),
                5,
                "could not be reached",
            ),
            (Box::new(ApplyError::Exhausted(32)), 1, "other writers"),
            (
                Box::new(StoreError::Conflict("outbox entry".into())),
                1,
                "other writers",
            ),
            (
                Box::new(StoreError::backend(io("AccessDeniedException"))),
                STORE_RETRY_AFTER_SECS,
                "store failed",
            ),
        ];
        for (e, secs, reason) in cases {
            let answer = store_unavailable(e.as_ref());
            assert_eq!(answer.status, StatusCode::SERVICE_UNAVAILABLE, "{e}");
            assert_eq!(answer.retry_after, Some(secs), "{e}");
            assert!(answer.detail.contains(reason), "{e}: {}", answer.detail);
            assert!(answer
                .detail
                .contains("nothing of this request was recorded"));
        }
    }
}
