//! `POST /v1/sources/{sourceId}/webhook` (contracts/serve.md "Carrier webhooks"): a carrier posts
//! its own JSON; the source's mappings (watcher-webhooks) turn it into facts, recorded exactly as
//! `POST /v1/facts` records them.
//!
//! Credentials (docs/interpretation.md "Bearer token or signature"): a source
//! with `[sources.signature]` must sign every request, and the signature replaces its bearer
//! token; a source without one presents its bearer token, as on `/v1/facts`.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::Json;
use watcher_core::fact::Fact;
use watcher_core::ids::Source;
use watcher_runtime::facts::FactsOutcome;
use watcher_webhooks::Outcome;

use crate::auth::{Role, SourceWebhook};
use crate::body::json_body;
use crate::limits::Limits;
use crate::problem::ApiError;
use crate::routes::record_facts;
use crate::AppState;

/// The webhook route. Answers the `/v1/facts` answer, or `{ "results": [], "unmatched": true }`
/// when no mapping's selector holds.
///
/// # Errors
/// 401 for a missing or unknown bearer token, or a missing, bad or stale signature; 403 for
/// another party's credential; 400/415 for a body that is not JSON; 422 naming the mapping and
/// the pointer when a matched mapping cannot be read (nothing is recorded); 503 when the store
/// fails.
pub async fn webhook(
    State(state): State<AppState>,
    axum::extract::Extension(limits): axum::extract::Extension<Limits>,
    Path(source_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<WebhookAnswer>, ApiError> {
    let hook = authenticate(&state, &source_id, &headers, &body)?;
    let source = Source::parse(hook.id.clone()).map_err(ApiError::bad_request)?;
    let payload = json_body(&headers, &body)?;
    let outcome = hook
        .hook
        .mappings
        .apply(&payload)
        .map_err(|e| unprocessable(format!("{e}; nothing in this request was recorded")))?;
    let mapped = match outcome {
        Outcome::Unmatched => {
            return Ok(Json(WebhookAnswer {
                outcome: FactsOutcome::default(),
                unmatched: true,
            }))
        }
        Outcome::Facts(f) => f,
    };
    if mapped.len() > limits.facts_per_request {
        return Err(unprocessable(format!(
            "the payload yields {} facts, which exceeds the limit `facts_per_request` = {} (config [limits]); nothing was recorded",
            mapped.len(),
            limits.facts_per_request
        )));
    }
    if mapped.is_empty() {
        // A matched mapping whose `each` array is empty: nothing to record.
        return Ok(Json(WebhookAnswer::default()));
    }
    let facts: Vec<Fact> = mapped
        .into_iter()
        .map(|m| {
            // The stored fact carries the source; the mapping that read it is logged.
            tracing::info!(source = %hook.id, mapping = %m.mapping, fact_key = %m.fact_key,
                observed_at = %m.observed_at, "carrier webhook fact mapped");
            Fact {
                fact_key: m.fact_key,
                observed_at: m.observed_at,
                observed_at_given: m.observed_at_given,
                mapping: Some(m.mapping.clone()),
                subject: m.subject,
                source: source.clone(),
            }
        })
        .collect();
    let Json(outcome) = record_facts(&state, &hook.tenant, &source, facts).await?;
    Ok(Json(WebhookAnswer {
        outcome,
        unmatched: false,
    }))
}

/// A carrier webhook's answer: `POST /v1/facts`'s ([`FactsOutcome`]), with `"unmatched": true`
/// when the payload matched no mapping (nothing recorded).
#[derive(Debug, Default, serde::Serialize)]
pub struct WebhookAnswer {
    /// What the mapped facts did.
    #[serde(flatten)]
    pub outcome: FactsOutcome,
    /// The payload matched none of the source's mappings.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub unmatched: bool,
}

fn unprocessable(detail: String) -> ApiError {
    ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Payload cannot be mapped",
        detail,
    )
}

/// The source the request speaks for: by its signature when it has one, else by its bearer token.
fn authenticate(
    state: &AppState,
    source_id: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<Arc<SourceWebhook>, ApiError> {
    let signed = state
        .credentials
        .signed_webhook(source_id)
        .and_then(|h| h.hook.signature.as_ref().map(|s| (h, s)));
    if let Some((hook, signature)) = signed {
        signature
            .verify(
                |name| headers.get(name).and_then(|v| v.to_str().ok()),
                body,
                state.clock.now(),
            )
            .map_err(|e| ApiError::unauthorized(e.to_string()))?;
        return Ok(hook.clone());
    }
    let principal = state.credentials.require(headers, &[Role::Source], false)?;
    // Only sources pass `require` here: the source of the path itself.
    principal.check_own(Role::Source, "source", source_id)?;
    state
        .credentials
        .webhook(&principal.tenant, source_id)
        .cloned()
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "source {source_id:?} has no webhook settings in this watcher"
            ))
        })
}
