//! `GET /healthz`: whether the store takes a write.

use crate::problem::ApiError;
use crate::AppState;
use axum::extract::State;
use axum::Json;
use serde::Serialize;
use watcher_core::ids::{AgentId, Tenant};
use watcher_runtime::directory::CardHealth;

/// The `GET /healthz` answer: `{ "status": "ok" }`, with `detail` and `agents` when some agent's
/// card cannot be read (serve.md "Agents are independent").
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HealthAnswer {
    /// Always `ok`: a store that cannot write answers 503 problem+json instead.
    pub status: &'static str,
    /// How many agent cards cannot be read, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The agents whose card cannot be read.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<CardProblem>,
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

/// `GET /healthz`: 200 [`HealthAnswer`] while the store takes a write (a one-row probe,
/// `Upkeep::probe_write`); 503 problem+json whose `detail` names the store's error otherwise (a
/// full disk, a read-only file), and 200 again once it recovers.
pub async fn healthz(State(state): State<AppState>) -> Result<Json<HealthAnswer>, ApiError> {
    if let Err(e) = state.watcher.store.probe_write(state.clock.now()).await {
        tracing::error!(error = %e, "health probe: the store cannot write");
        return Err(ApiError::unavailable(format!(
            "the store cannot write: {e}"
        )));
    }
    // serve.md "Agents are independent": an agent whose card cannot be read is reported here;
    // the watcher serves every other agent meanwhile, so it stays 200.
    let agents: Vec<CardProblem> = state
        .watcher
        .directory
        .card_problems()
        .into_iter()
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
        status: "ok",
        detail,
        agents,
    }))
}
