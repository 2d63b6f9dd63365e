//! `GET /v1/subjects/{type}/{id}` and its timeline picture: one subject's record for operators.

use crate::auth::Role;
use crate::problem::ApiError;
use crate::AppState;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde_json::Value;
use watcher_core::ids::Subject;

use super::*;

/// `GET /v1/subjects/{type}/{id}`: the subject's expectations (ExpectationRecord, replay.md)
/// and the facts on it. For operators.
pub async fn subject(
    State(state): State<AppState>,
    Path((subject_type, subject_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Json<watcher_runtime::view::SubjectView>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    let subject = Subject::parse(&subject_type, &subject_id).map_err(ApiError::bad_request)?;
    let found = state
        .watcher
        .store
        .subject(&principal.tenant, &subject)
        .await
        .map_err(unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("nothing is recorded about {subject}")))?;
    Ok(Json(watcher_runtime::view::subject_view(&found)))
}

/// `GET /v1/subjects/{type}/{id}/timeline.svg`: the subject's timeline picture
/// (`image/svg+xml`; expectations-v1 Appendix B step 6, §13.3; `watcher_timeline`): projected
/// and current due times and what happened, per expectation, as of the watcher's clock. For
/// operators; 404 problem+json when nothing is recorded about the subject.
pub async fn timeline(
    State(state): State<AppState>,
    Path((subject_type, subject_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<axum::response::Response, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    let view = subject_view_of(&state, &principal.tenant, &subject_type, &subject_id).await?;
    let svg = watcher_timeline::render_string(&view, now_timestamp(&state))
        .map_err(|e| ApiError::unavailable(format!("the record cannot be drawn: {e}")))?;
    Ok(svg_response(svg))
}

/// The watcher's clock as a `jiff::Timestamp` (the latest one for an instant past jiff's range).
pub fn now_timestamp(state: &AppState) -> jiff::Timestamp {
    state
        .clock
        .now()
        .timestamp()
        .unwrap_or(jiff::Timestamp::MAX)
}

/// An SVG answer that runs nothing and is not cached (it holds the record).
pub fn svg_response(svg: String) -> axum::response::Response {
    use axum::http::header;
    use axum::response::IntoResponse;
    (
        [
            (header::CONTENT_TYPE, "image/svg+xml"),
            (header::CACHE_CONTROL, "no-store"),
            (
                header::CONTENT_SECURITY_POLICY,
                "default-src 'none'; style-src 'unsafe-inline'",
            ),
        ],
        svg,
    )
        .into_response()
}

/// The subject view (`watcher_runtime::view`) of `{type}/{id}` in `tenant`, as JSON for the
/// pages and pictures that read it by member.
///
/// # Errors
/// 400 for an invalid subject, 404 when nothing is recorded about it, 503 when the store fails.
pub async fn subject_view_of(
    state: &AppState,
    tenant: &watcher_core::ids::Tenant,
    subject_type: &str,
    subject_id: &str,
) -> Result<Value, ApiError> {
    let subject = Subject::parse(subject_type, subject_id).map_err(ApiError::bad_request)?;
    let found = state
        .watcher
        .store
        .subject(tenant, &subject)
        .await
        .map_err(unavailable)?
        .ok_or_else(|| ApiError::not_found(format!("nothing is recorded about {subject}")))?;
    Ok(serde_json::to_value(watcher_runtime::view::subject_view(&found)).unwrap_or(Value::Null))
}
