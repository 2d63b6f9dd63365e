//! `GET /v1/lapses` and `POST /v1/lapses/retry`: lapse tasks and their delivery, for operators.

use crate::auth::Role;
use crate::body::{json_body, typed_value};
use crate::page;
use crate::problem::ApiError;
use crate::AppState;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::Json;
use watcher_core::ids::AgentId;
use watcher_core::time::Instant;
use watcher_runtime::store::{DeliveryState, LapseQuery};

use super::*;

/// `GET /v1/lapses`: the lapse tasks of the caller's tenant and their delivery, in order of
/// lapse, one page at a time (`crate::page`): `limit`, `cursor`, and the filters `agent` (an
/// agent id), `delivery` (any state the list shows: `queued`, `sent`, `failed`, `withdrawn` or
/// `unaddressed`, [`DeliveryState`]) and `since` (lapsed at or after, an RFC 3339 instant read
/// as every instant is, `watcher_core::time::Instant::parse`). Answers
/// `{ "lapses": [...], "nextCursor": "…" | null }`. For operators.
///
/// # Errors
/// 400 problem+json naming the query parameter and why (an unknown state lists the five, an
/// instant names what is wrong with it); 401/403 for a missing or another party's credential;
/// 503 when the store fails.
pub async fn lapses(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<LapsesPage>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    let params = page::parse(&uri, 'l', &["agent", "delivery", "since"])?;
    let mut query = LapseQuery {
        limit: params.limit,
        after: match params.after {
            Some(page::Cursor::Position(p)) => Some(p),
            _ => None,
        },
        ..LapseQuery::default()
    };
    if let Some(a) = params.filters.get("agent") {
        query.agent = Some(
            AgentId::parse(a.clone())
                .map_err(|r| ApiError::bad_request(format!("query parameter `agent`: {r}")))?,
        );
    }
    if let Some(d) = params.filters.get("delivery") {
        // The one list of states (`DeliveryState::ALL`), the same the answer's `delivery`
        // member and docs/openapi.json's schema are made from.
        query.delivery = Some(
            DeliveryState::parse(d)
                .map_err(|r| ApiError::bad_request(format!("query parameter `delivery`: {r}")))?,
        );
    }
    if let Some(since) = params.filters.get("since") {
        query.since = Some(
            Instant::parse(since)
                .map_err(|e| ApiError::bad_request(format!("query parameter `since`: {e}")))?,
        );
    }
    let page = state
        .watcher
        .store
        .lapses_page(&principal.tenant, &query)
        .await
        .map_err(unavailable)?;
    let (lapses, last, cut) = page::fill(
        page.entries
            .iter()
            .map(|(pos, o)| (*pos, watcher_runtime::view::LapseView::of(o))),
    );
    let next = if cut { last } else { page.next };
    let next = next.map(|p| page::encode('l', &page::Cursor::Position(p)));
    Ok(Json(LapsesPage {
        lapses,
        next_cursor: next,
    }))
}

/// Most messageIds one `POST /v1/lapses/retry` may name.
pub const MAX_RETRY_IDS: usize = 1000;

/// `POST /v1/lapses/retry` `{"agent": "…", "messageIds": ["…"]}`: puts failed lapse tasks of the
/// agent back in the queue, the ones named or, without `messageIds`, all of them. Answers
/// `{"requeued": n, "messageIds": [...], "skipped": [{"messageId","reason"}], "more": bool}`.
/// For operators.
pub async fn retry_lapses(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<RetryAnswer>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    let value = json_body(&headers, &body)?;
    if !value.is_object() {
        return Err(ApiError::bad_request(
            "the body must be an object {\"agent\": \"…\", \"messageIds\": [\"…\"]}",
        ));
    }
    let request: RetryRequest = typed_value(value)?;
    let agent_name = request.agent;
    if agent_name.is_empty() {
        return Err(ApiError::bad_request(
            "field `agent`: must be a non-empty string",
        ));
    }
    let agent = AgentId::parse(agent_name.clone())
        .map_err(|r| ApiError::bad_request(format!("field `agent`: {r}")))?;
    require_registered(&state, &principal.tenant, &agent, &agent_name)?;
    let ids = request.message_ids;
    if let Some(ids) = &ids {
        if ids.is_empty() {
            return Err(ApiError::bad_request(
                "field `messageIds`: must not be empty; leave it out to re-queue every failed lapse task of the agent",
            ));
        }
        if ids.len() > MAX_RETRY_IDS {
            return Err(ApiError::bad_request(format!(
                "field `messageIds`: {} ids exceed the limit of {MAX_RETRY_IDS}",
                ids.len()
            )));
        }
        if let Some(i) = ids.iter().position(String::is_empty) {
            return Err(ApiError::bad_request(format!(
                "field `messageIds[{i}]`: must be a non-empty string"
            )));
        }
    }
    let done = state
        .watcher
        .requeue_failed(&principal.tenant, &agent, ids.as_deref(), state.clock.now())
        .await
        .map_err(unavailable)?;
    if !done.requeued.is_empty() {
        // The agent's delivery lane looks at once.
        state.wake.notify_waiters();
    }
    Ok(Json(RetryAnswer {
        requeued: done.requeued.len(),
        message_ids: done.requeued,
        skipped: done.skipped,
        more: done.more,
    }))
}

// `docs/openapi.json`'s request body for the route is generated from this type; the schema's
// `maxItems` is a literal, held to the limit here.
const _: () = assert!(MAX_RETRY_IDS == 1000);

/// The body of `POST /v1/lapses/retry`: `{ "agent": "…", "messageIds"?: ["…"] }`, the agent and
/// which of its failed lapse tasks to put back in the queue.
#[derive(Debug, Clone, PartialEq, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RetryRequest {
    /// The registered agent whose failed lapse tasks are put back in the queue.
    #[cfg_attr(feature = "schema", schemars(length(min = 1)))]
    pub agent: String,
    /// The messageIds to re-queue, 1 to 1,000, each non-empty; absent or `null`: every failed
    /// lapse task of the agent (as many as one call re-queues, `more` says when others remain).
    #[serde(default)]
    #[cfg_attr(
        feature = "schema",
        schemars(length(min = 1, max = 1000), inner(length(min = 1)))
    )]
    pub message_ids: Option<Vec<String>>,
}

/// What `POST /v1/lapses/retry` answers: `{ "requeued": n, "messageIds": [...], "skipped":
/// [{ "messageId", "reason" }], "more": bool }`.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RetryAnswer {
    /// How many failed lapse tasks were put back in the queue.
    pub requeued: usize,
    /// Their messageIds.
    pub message_ids: Vec<String>,
    /// messageIds asked for that were not re-queued, with why.
    pub skipped: Vec<watcher_runtime::operators::SkippedId>,
    /// More failed lapse tasks remain than one call re-queues; call again.
    pub more: bool,
}

/// A page of lapse tasks: `{ "lapses": [LapseView], "nextCursor": "…" | null }`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct LapsesPage {
    /// The page's lapse tasks, in lapse order.
    pub lapses: Vec<watcher_runtime::view::LapseView>,
    /// Where the next page starts; `null` on the last.
    pub next_cursor: Option<String>,
}
