//! `GET /v1/incidents` and `POST /v1/incidents/acknowledge`: lapses as incidents, open or
//! resolved, and an operator's acknowledgement (`crate::incidents`; docs/howto/incidents.md).

use crate::auth::Role;
use crate::body::{json_body, typed_value};
use crate::incidents::{
    incidents_page, parse_kind, tenant_agents, IncidentCursor, IncidentQuery, IncidentState,
    IncidentView, IncidentsPage,
};
use crate::page;
use crate::problem::ApiError;
use crate::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::Json;
use watcher_core::ids::AgentId;
use watcher_runtime::resolution::acknowledge;

use super::*;

/// `GET /v1/incidents`: the incidents of the caller's tenant, oldest first, one page at a time
/// (`limit`, `cursor`; `crate::page`), with the filters `state` (`open`, the default: not
/// resolved, by `lapsedAt`; or `resolved`: by the resolution's instant), `agent` (one agent's
/// lane only) and `kind` (`overdue`, `skipped` or `stalled`). Answers
/// `{ "incidents": [IncidentView], "nextCursor": "…" | null }`; a page may hold fewer than
/// `limit` (even none) and still name a `nextCursor` (`crate::incidents`). For operators.
///
/// # Errors
/// 400 problem+json naming the query parameter and why; 401/403 for a missing or another
/// party's credential; 503 when the store fails (or cannot list the lane yet).
pub async fn incidents(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<IncidentsPage>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    let params = page::parse(&uri, 'i', &["agent", "kind", "state"])?;
    let incident_state = match params.filters.get("state") {
        None => IncidentState::Open,
        Some(s) => IncidentState::parse(s)
            .map_err(|r| ApiError::bad_request(format!("query parameter `state`: {r}")))?,
    };
    let kind = params
        .filters
        .get("kind")
        .map(|k| parse_kind(k))
        .transpose()
        .map_err(|r| ApiError::bad_request(format!("query parameter `kind`: {r}")))?;
    let agent = params
        .filters
        .get("agent")
        .map(|a| AgentId::parse(a.clone()))
        .transpose()
        .map_err(|r| ApiError::bad_request(format!("query parameter `agent`: {r}")))?;
    let after = match params.after {
        Some(page::Cursor::Agent(text)) => Some(
            IncidentCursor::decode(&text, incident_state)
                .map_err(|r| ApiError::bad_request(format!("query parameter `cursor`: {r}")))?,
        ),
        _ => None,
    };
    let agents = match &agent {
        Some(a) => vec![a.clone()],
        None => tenant_agents(&state.watcher.directory, &principal.tenant),
    };
    let query = IncidentQuery {
        state: incident_state,
        agent,
        kind,
        limit: params.limit,
        after,
    };
    let page = incidents_page(
        &*state.watcher.store,
        &principal.tenant,
        &agents,
        &query,
        state.clock.now(),
    )
    .await
    .map_err(unavailable)?;
    Ok(Json(page))
}

/// The body of `POST /v1/incidents/acknowledge`: `{ "agent": "…", "messageId": "…", "by": "…" }`.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AcknowledgeRequest {
    /// The agent the lapse task went to (the incident's owner).
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub agent: String,
    /// The lapse task's `messageId` (the incident's key).
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub message_id: String,
    /// Who acknowledges it, kept in the resolution: 1 to 256 characters, not only white space.
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = 256)))]
    pub by: String,
}

/// `POST /v1/incidents/acknowledge` `{"agent", "messageId", "by"}`: an operator resolves an open
/// incident, reason `acknowledged` with `by`, at the watcher's clock
/// ([`watcher_runtime::resolution::acknowledge`]), through the store's atomic
/// `Outbox::outbox_resolve` (the first resolution stays). Answers 200 with the incident as
/// written ([`IncidentView`]). For operators.
///
/// # Errors
/// 400 naming the field (`agent`, `messageId`, `by`: empty, only white space, over 256
/// characters); 404 when the tenant holds no such lapse task of the agent; 409 when the incident
/// was resolved already, the `detail` saying when and why (the first resolution stays, so
/// acknowledging twice is refused rather than repeated); 503 when the store fails.
pub async fn acknowledge_incident(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<IncidentView>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    let value = json_body(&headers, &body)?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the body must be an object {\"agent\": \"…\", \"messageId\": \"…\", \"by\": \"…\"}",
        ));
    }
    let request: AcknowledgeRequest = typed_value(value)?;
    acknowledged(
        &state,
        &principal.tenant,
        &request.agent,
        &request.message_id,
        &request.by,
    )
    .await
    .map(Json)
}

/// The acknowledgement of (`tenant`, `agent`, `message_id`) by `by`, shared by the route and
/// `/ui/incidents`: the incident as written.
///
/// # Errors
/// As [`acknowledge_incident`].
pub async fn acknowledged(
    state: &AppState,
    tenant: &watcher_core::ids::Tenant,
    agent: &str,
    message_id: &str,
    by: &str,
) -> Result<IncidentView, ApiError> {
    if agent.is_empty() {
        return Err(ApiError::bad_request(
            "field `agent`: must be a non-empty string",
        ));
    }
    let agent_id = AgentId::parse(agent.to_owned())
        .map_err(|r| ApiError::bad_request(format!("field `agent`: {r}")))?;
    if message_id.is_empty() {
        return Err(ApiError::bad_request(
            "field `messageId`: must be a non-empty string",
        ));
    }
    let store = &*state.watcher.store;
    let not_stored = || {
        ApiError::not_found(format!(
            "agent {agent:?} has no lapse task {message_id:?} in this tenant"
        ))
    };
    let stored = store
        .outbox_get(tenant, &agent_id, message_id)
        .await
        .map_err(unavailable)?
        .ok_or_else(not_stored)?;
    let now = state.clock.now();
    let updated = acknowledge(&stored, by, now)
        .map_err(|r| ApiError::bad_request(format!("field `by`: {r}")))?;
    let resolution = match (updated, &stored.resolved) {
        (Some(u), _) => u.resolved,
        (None, Some(r)) => return Err(resolved_already(&stored, r, now)),
        (None, None) => None,
    }
    .ok_or_else(not_stored)?;
    match store
        .outbox_resolve(tenant, &agent_id, message_id, &resolution)
        .await
        .map_err(unavailable)?
    {
        Some(written) => {
            tracing::info!(agent = %agent_id, message_id, by, "incident acknowledged");
            Ok(IncidentView::of(&written, now))
        }
        // Resolved (or gone) between the read and the write: say how it stands now.
        None => match store
            .outbox_get(tenant, &agent_id, message_id)
            .await
            .map_err(unavailable)?
        {
            Some(o) => Err(o
                .resolved
                .as_ref()
                .map_or_else(not_stored, |r| resolved_already(&o, r, now))),
            None => Err(not_stored()),
        },
    }
}

/// 409: the incident `entry` has the resolution `r` already, named in the `detail`; the
/// incident as it stands at `now` is the problem's `incident` member (a retry by the same `by`
/// finds its own acknowledgement there).
fn resolved_already(
    entry: &watcher_runtime::store::OutboxEntry,
    r: &watcher_runtime::resolution::Resolution,
    now: watcher_core::time::Instant,
) -> ApiError {
    let view = crate::incidents::ResolutionView::of(r);
    let why = match (&view.state, &view.detail, &view.by) {
        (Some(s), _, _) => format!("{} ({s})", view.reason),
        (_, Some(d), _) => format!("{} ({d})", view.reason),
        (_, _, Some(b)) => format!("{} by {b}", view.reason),
        _ => view.reason.clone(),
    };
    ApiError::new(
        StatusCode::CONFLICT,
        "Resolved already",
        format!(
            "the incident was resolved at {}: {why}; the first resolution stays",
            view.at
        ),
    )
    .with_member(
        "incident",
        serde_json::to_value(IncidentView::of(entry, now)).unwrap_or_default(),
    )
}
