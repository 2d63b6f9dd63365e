//! `GET /healthz`: anonymous, a fixed answer that reads and writes nothing; with an operator's
//! bearer token, whether the store takes a write and which of the operator's agents cannot be
//! read (docs/security.md "The edge").

use crate::auth::Role;
use crate::problem::ApiError;
use crate::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap};
use axum::Json;
use serde::Serialize;
use watcher_core::ids::{AgentId, Tenant};
use watcher_runtime::directory::CardHealth;

/// The `GET /healthz` answer.
///
/// * Anonymous (no `Authorization` header): `{ "status": "ok", "version": "<the watcher's
///   version>" }`, the same bytes on every call: nothing is read or written and no agent is
///   named, so an anonymous caller learns nothing of the record and costs the store nothing.
/// * With an operator's bearer token: also `"store": "writes"` after a one-row write probe, and
///   `detail` and `agents` when some agent of the operator's tenant has a card that cannot be
///   read (serve.md "Agents are independent").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HealthAnswer {
    /// Always `ok`: a store that cannot write answers 503 problem+json instead (operator only).
    pub status: &'static str,
    /// The watcher's version (its crate version, as the API's index gives it).
    pub version: &'static str,
    /// `writes` when the operator's probe wrote; absent from the anonymous answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub store: Option<&'static str>,
    /// How many of the operator's tenant's agent cards cannot be read, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The operator's tenant's agents whose card cannot be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<CardProblem>,
}

impl HealthAnswer {
    /// The anonymous answer: `{ "status": "ok", "version" }`.
    pub fn anonymous() -> Self {
        Self {
            status: "ok",
            version: env!("CARGO_PKG_VERSION"),
            store: None,
            detail: None,
            agents: Vec::new(),
        }
    }
}

/// An agent whose card cannot be read: `{ "tenant", "agentId", "card" }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CardProblem {
    /// The agent's tenant.
    pub tenant: Tenant,
    /// The agent.
    pub agent_id: AgentId,
    /// Where its card stands.
    pub card: CardHealth,
}

/// `GET /healthz`.
///
/// Without an `Authorization` header: 200 [`HealthAnswer::anonymous`], touching nothing. With
/// one, it must be an operator's bearer token: 200 [`HealthAnswer`] with `store: "writes"` while
/// the store takes a write (a one-row probe, `Upkeep::probe_write`), and the operator's tenant's
/// agents whose card cannot be read; 503 problem+json whose `detail` names the store's error
/// otherwise (a full disk, a read-only file), and 200 again once it recovers.
///
/// # Errors
/// 401 for an unknown or malformed credential, 403 for a credential that is not an operator's,
/// 503 while the store cannot write.
pub async fn healthz(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<HealthAnswer>, ApiError> {
    // A load balancer or uptime check sends nothing: it gets the fixed answer. A caller that
    // presents a credential asked for the detail, so a bad one is refused rather than ignored
    // (a typo in an operator's token must not look like a healthy detail-less answer).
    if !headers.contains_key(header::AUTHORIZATION) {
        return Ok(Json(HealthAnswer::anonymous()));
    }
    let operator = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    if let Err(e) = state.watcher.store.probe_write(state.clock.now()).await {
        tracing::error!(error = %e, "health probe: the store cannot write");
        return Err(ApiError::unavailable(format!(
            "the store cannot write: {e}"
        )));
    }
    // serve.md "Agents are independent": an agent whose card cannot be read is reported here;
    // the watcher serves every other agent meanwhile, so it stays 200. Only the operator's own
    // tenant is shown, as on every other route.
    let agents: Vec<CardProblem> = state
        .watcher
        .directory
        .card_problems()
        .into_iter()
        .filter(|(tenant, _, _)| *tenant == operator.tenant)
        .map(|(tenant, agent_id, card)| CardProblem {
            tenant,
            agent_id,
            card,
        })
        .collect();
    let detail = (!agents.is_empty()).then(|| {
        format!(
            "{} agent card(s) cannot be read; those agents are retried, every other agent is served",
            agents.len()
        )
    });
    Ok(Json(HealthAnswer {
        store: Some("writes"),
        detail,
        agents,
        ..HealthAnswer::anonymous()
    }))
}
