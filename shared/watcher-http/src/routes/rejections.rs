//! `GET /v1/agents/{agentId}/rejections` and `GET /v1/sources/{sourceId}/rejections`: what was
//! refused or ignored, a page at a time.

use crate::auth::Role;
use crate::page;
use crate::problem::ApiError;
use crate::AppState;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Uri};
use axum::Json;
use watcher_core::ids::AgentId;
use watcher_runtime::facts::source_key;
use watcher_runtime::view::RejectionView;

use super::*;

/// `GET /v1/agents/{agentId}/rejections`: for the agent itself or an operator of its tenant;
/// oldest first, one page at a time (`limit`, `cursor`; `crate::page`). Answers
/// `{ "rejections": [...], "nextCursor": "…" | null }`.
pub async fn rejections(
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<RejectionsPage>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Agent, Role::Operator], true)?;
    let params = page::parse(&uri, 'r', &[])?;
    principal.check_own(Role::Agent, "agent", &agent_id)?;
    let id = AgentId::parse(agent_id.clone())
        .map_err(|r| ApiError::bad_request(format!("agentId: {r}")))?;
    require_registered(&state, &principal.tenant, &id, &agent_id)?;
    Ok(Json(
        rejections_page(&state, &principal.tenant, &id, &params).await?,
    ))
}

/// One page of the rejections kept under `key` (an agent, or `source:{sourceId}`) as the
/// rejections routes answer it: `{ "rejections": [...], "nextCursor": "…" | null }`, from the
/// store's page after `params`' cursor, cut before 1 MB (`crate::page`).
///
/// # Errors
/// 503 when the store fails.
async fn rejections_page(
    state: &AppState,
    tenant: &watcher_core::ids::Tenant,
    key: &AgentId,
    params: &page::PageParams,
) -> Result<RejectionsPage, ApiError> {
    let after = match params.after {
        Some(page::Cursor::Position(p)) => Some(p),
        _ => None,
    };
    let (list, next) = state
        .watcher
        .store
        .rejections_page(tenant, key, after, params.limit)
        .await
        .map_err(unavailable)?;
    let (rejections, last, cut) =
        page::fill(list.iter().map(|(pos, r)| (*pos, RejectionView::of(r))));
    let next = if cut { last } else { next };
    let next = next.map(|p| page::encode('r', &page::Cursor::Position(p)));
    Ok(RejectionsPage {
        rejections,
        next_cursor: next,
    })
}

/// `GET /v1/sources/{sourceId}/rejections`: what the facts route ignored for this source (its
/// `warnings`, kept on the record), for the source itself or an operator of its tenant; oldest
/// first, one page at a time (`limit`, `cursor`), as `GET /v1/agents/{agentId}/rejections`.
pub async fn source_rejections(
    State(state): State<AppState>,
    Path(source_id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<RejectionsPage>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Source, Role::Operator], false)?;
    let params = page::parse(&uri, 'r', &[])?;
    principal.check_own(Role::Source, "source", &source_id)?;
    let Some(key) = source_key(&source_id) else {
        return Err(ApiError::bad_request(format!(
            "sourceId: not a source id (at most {} bytes, no control characters)",
            watcher_core::ids::MAX_ID_LEN - "source:".len()
        )));
    };
    Ok(Json(
        rejections_page(&state, &principal.tenant, &key, &params).await?,
    ))
}

/// A page of rejections: `{ "rejections": [RejectionView], "nextCursor": "…" | null }`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RejectionsPage {
    /// The page's rejections, oldest first.
    pub rejections: Vec<RejectionView>,
    /// Where the next page starts; `null` on the last.
    pub next_cursor: Option<String>,
}
