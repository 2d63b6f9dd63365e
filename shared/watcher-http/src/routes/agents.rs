//! `GET /v1/agents`: the tenant's agents with their delivery and card state, for operators.

use crate::auth::Role;
use crate::page;
use crate::problem::ApiError;
use crate::AppState;
use axum::extract::State;
use axum::http::{HeaderMap, Uri};
use axum::Json;
use futures_util::stream::{self, StreamExt};
use watcher_core::ids::AgentId;
use watcher_runtime::view::{AgentDirectoryView, AgentView, AgentsPage, LifecycleView};

use super::*;

/// `GET /v1/agents`: the agents of the caller's tenant with their lapse-task delivery state
/// (`ok`, `retrying` since `retryingSince`, `failing`; `watcher_runtime::operators`), by agent
/// id, one page at a time (`limit`, `cursor`; `crate::page`), each with `lifecycleTrusted` and
/// `lifecycle` (`protocolVersion`, `probedAt`, `demotions`, the probe's `descriptor`; or only
/// `demotions` when never probed), and `reconciled` (origin tasks followed with `GetTask`).
/// Answers `{ "agents": [...], "nextCursor": "…" | null }`. For operators.
pub async fn agents(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<AgentsPage>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    let params = page::parse(&uri, 'a', &[])?;
    let after = match params.after {
        Some(page::Cursor::Agent(a)) => Some(a),
        _ => None,
    };
    Ok(Json(
        agents_view(&state, &principal.tenant, after.as_deref(), params.limit).await?,
    ))
}

/// How many agents' delivery states `GET /v1/agents` reads at once.
const CONCURRENT_READS: usize = 8;

/// The `GET /v1/agents` body for `tenant`: agents by id after `after`, at most `limit`, as
/// `{ "agents": [{ "agentId", "delivery", "submitsLapses"?, "retryingSince"?, "lastError"?,
/// "lifecycleTrusted", "reconciled", "lifecycle", "card"? }], "nextCursor": "…" | null }`, the
/// page cut before half of `page::MAX_PAGE_BYTES`; shared with the web page.
///
/// # Errors
/// 503 when the store fails.
pub async fn agents_view(
    state: &AppState,
    tenant: &watcher_core::ids::Tenant,
    after: Option<&str>,
    limit: usize,
) -> Result<AgentsPage, ApiError> {
    let directory = &state.watcher.directory;
    let entries: std::collections::BTreeMap<AgentId, _> = directory
        .entries()
        .into_iter()
        .filter(|a| a.tenant == *tenant)
        .map(|a| (a.profile.id.clone(), a))
        .collect();
    let mut cards: std::collections::BTreeMap<AgentId, _> =
        directory.configured(tenant).into_iter().collect();
    let ids: std::collections::BTreeSet<AgentId> =
        entries.keys().chain(cards.keys()).cloned().collect();
    // The directory is in memory (the configured agents); each agent shown costs two index reads,
    // made for CONCURRENT_READS agents at a time (a page of 50 agents is 100 reads: one after
    // another they add up to a second on DynamoDB).
    let page_ids: Vec<AgentId> = ids
        .into_iter()
        .filter(|id| after.is_none_or(|a| id.as_str() > a))
        .take(limit.saturating_add(1))
        .collect();
    let more = page_ids.len() > limit;
    let store = &*state.watcher.store;
    // Owned ids: the handler's future must be `Send`, which a closure over `&AgentId` cannot show.
    let deliveries: Vec<_> =
        stream::iter(page_ids.iter().take(limit).cloned())
            .map(|id| async move {
                watcher_runtime::operators::agent_delivery(store, tenant, &id).await
            })
            .buffered(CONCURRENT_READS)
            .collect()
            .await;
    let mut ids = page_ids.into_iter().zip(deliveries).peekable();
    let mut agents = Vec::new();
    let mut bytes = 0usize;
    let mut next = None;
    while let Some((id, delivery)) = ids.next() {
        let delivery = delivery.map_err(unavailable)?;
        // docs/specs/agent-card-vs-lifecycle-conformance.md: only a probe promotes; the card
        // alone never does. Untrusted agents' origin tasks are reconciled with GetTask.
        let lifecycle = directory.lifecycle(tenant, &id);
        let view = AgentView {
            delivery,
            directory: Some(AgentDirectoryView {
                submits_lapses: entries.get(&id).map(|e| e.submits_lapses),
                lifecycle_trusted: lifecycle.as_ref().is_some_and(|l| l.lifecycle_trusted),
                reconciled: directory.reconciles(tenant, &id),
                lifecycle: LifecycleView::of(lifecycle.as_ref()),
                // serve.md "Agents are independent": where the agent's card stands.
                card: cards.remove(&id),
            }),
            agent_id: id,
        };
        bytes += serde_json::to_string(&view).map_or(0, |s| s.len()) + 1;
        agents.push(view);
        if (ids.peek().is_some() || more)
            && (agents.len() >= limit || bytes > page::MAX_PAGE_BYTES / 2)
        {
            next = agents.last().map(|last| {
                page::encode('a', &page::Cursor::Agent(last.agent_id.as_str().to_owned()))
            });
            break;
        }
    }
    Ok(AgentsPage {
        agents,
        next_cursor: next,
    })
}
