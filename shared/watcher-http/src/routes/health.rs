//! `GET /healthz`: whether the store takes a write.

use crate::problem::ApiError;
use crate::AppState;
use axum::extract::State;
use axum::Json;
use serde_json::{json, Value};

/// `GET /healthz`: 200 `{"status":"ok"}` while the store takes a write (a one-row probe,
/// `Upkeep::probe_write`); 503 problem+json whose `detail` names the store's error otherwise (a
/// full disk, a read-only file), and 200 again once it recovers.
pub async fn healthz(State(state): State<AppState>) -> Result<Json<Value>, ApiError> {
    match state.watcher.store.probe_write(state.clock.now()).await {
        Ok(()) => {
            // serve.md "Agents are independent": an agent whose card cannot be read is reported
            // here; the watcher serves every other agent meanwhile, so it stays 200.
            let problems: Vec<Value> = state
                .watcher
                .directory
                .card_problems()
                .into_iter()
                .map(|(tenant, agent, health)| {
                    json!({ "tenant": tenant, "agentId": agent, "card": health })
                })
                .collect();
            if problems.is_empty() {
                Ok(Json(json!({ "status": "ok" })))
            } else {
                let detail = format!(
                    "{} agent card(s) cannot be read; those agents are retried, every other agent is served",
                    problems.len()
                );
                Ok(Json(
                    json!({ "status": "ok", "detail": detail, "agents": problems }),
                ))
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "health probe: the store cannot write");
            Err(ApiError::unavailable(format!(
                "the store cannot write: {e}"
            )))
        }
    }
}
