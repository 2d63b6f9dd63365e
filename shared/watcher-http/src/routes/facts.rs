//! `POST /v1/facts`: facts from an authenticated source; the application step is
//! `Watcher::report_facts` (watcher-runtime `facts.rs`).

use crate::auth::Role;
use crate::body::json_body;
use crate::limits::Limits;
use crate::problem::ApiError;
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{Extension, State};
use axum::http::HeaderMap;
use axum::Json;
use serde_json::Value;
use watcher_core::fact::parse_fact;
use watcher_core::ids::Source;
use watcher_runtime::facts::FactsOutcome;

use super::*;

/// Most facts one request may carry by default (`[limits] facts_per_request`).
pub const MAX_FACTS_PER_REQUEST: usize = 1000;

/// `POST /v1/facts`: one Fact or `{ "facts": [...] }` from an authenticated source, all or
/// nothing. `source` is the credential's id, whatever the body says (§13.5).
pub async fn facts(
    State(state): State<AppState>,
    Extension(limits): Extension<Limits>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<FactsOutcome>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Source], false)?;
    let source = Source::parse(principal.id.clone()).map_err(ApiError::bad_request)?;
    let tenant = principal.tenant.clone();
    let value = json_body(&headers, &body)?;
    let list: Vec<&Value> = match value.get("facts") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(_) => {
            return Err(ApiError::bad_request(
                "field `facts`: must be an array of facts",
            ))
        }
        None => vec![&value],
    };
    if list.is_empty() {
        return Err(ApiError::bad_request("field `facts`: must not be empty"));
    }
    if list.len() > limits.facts_per_request {
        return Err(Limits::refusal(
            "facts_per_request",
            limits.facts_per_request,
            format_args!(
                "field `facts`: {} facts; nothing in this request was recorded",
                list.len()
            ),
        ));
    }
    let batch = value.get("facts").is_some();
    // Members a fact does not define are ignored, and said so.
    let mut warnings = Vec::new();
    if let Some(obj) = value.as_object().filter(|_| batch) {
        warnings.extend(watcher_core::members::unknown(
            obj,
            &["facts"],
            "",
            "a facts request",
        ));
    }
    for (i, v) in list.iter().enumerate() {
        let path = if batch {
            format!("facts[{i}]")
        } else {
            String::new()
        };
        warnings.extend(watcher_core::members::fact_warnings(v, &path));
    }
    let mut parsed = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let f = parse_fact(v, &source).map_err(|e| {
            let at = if batch {
                format!("facts[{i}]: ")
            } else {
                String::new()
            };
            ApiError::bad_request(format!("{at}{e}; nothing in this request was recorded"))
        })?;
        parsed.push(f);
    }
    let outcome = state
        .watcher
        .report_facts(&tenant, &source, parsed, warnings, state.clock.now())
        .await
        .map_err(unavailable)?;
    // New deadlines or queued lapse tasks: wake the timer and delivery loops.
    state.wake.notify_waiters();
    Ok(Json(outcome))
}

/// Records `facts` of `source` for `tenant` in one input (all or nothing) and answers as
/// `POST /v1/facts` does ([`FactsOutcome`]). Shared with the carrier webhook.
///
/// # Errors
/// 503 when the store fails.
pub async fn record_facts(
    state: &AppState,
    tenant: &watcher_core::ids::Tenant,
    source: &Source,
    facts: Vec<watcher_core::fact::Fact>,
) -> Result<Json<FactsOutcome>, ApiError> {
    let outcome = state
        .watcher
        .report_facts(tenant, source, facts, Vec::new(), state.clock.now())
        .await
        .map_err(unavailable)?;
    state.wake.notify_waiters();
    Ok(Json(outcome))
}
