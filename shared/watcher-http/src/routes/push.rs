//! `POST /v1/agents/{agentId}/push`: an agent's push webhook; the application step is
//! `Watcher::push` (watcher-runtime `push.rs`).

use crate::auth::Role;
use crate::body::json_body_with;
use crate::limits::Limits;
use crate::problem::ApiError;
use crate::strict_json;
use crate::AppState;
use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde_json::Value;
use watcher_core::ids::AgentId;
use watcher_runtime::push::{PushError, PushOutcome};

use super::*;

/// `Retry-After` (seconds) on a push from an agent whose card was never read.
pub const CARD_RETRY_AFTER_SECS: u64 = 30;

/// `POST /v1/agents/{agentId}/push`: an A2A 1.0 `StreamResponse` (or a bare `Task`) from the
/// agent's push webhook. Answers `{ raised, rejected, withdrawn, facts }`; refusals of single
/// expectations are in the body, not the status.
pub async fn push(
    State(state): State<AppState>,
    Extension(limits): Extension<Limits>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<PushOutcome>, ApiError> {
    let principal = state.credentials.require(&headers, &[Role::Agent], true)?;
    // Only agents pass `require` here: the agent of the path itself.
    principal.check_own(Role::Agent, "agent", &agent_id)?;
    let tenant = principal.tenant.clone();
    let id = AgentId::parse(agent_id.clone())
        .map_err(|r| ApiError::bad_request(format!("agentId: {r}")))?;
    let value = json_body_with(&headers, &body, strict_json::push_body)?;
    let event = a2a_types::StreamResponse::from_push_body(value).map_err(|e| {
        ApiError::bad_request(format!(
            "{e} (an A2A 1.0 StreamResponse or a bare Task is expected)"
        ))
    })?;
    watcher_core::ingest::check_state(&event).map_err(ApiError::bad_request)?;
    check_expectation_counts(&event, &limits)?;
    let outcome = state
        .watcher
        .push(&tenant, &id, &event, state.clock.now())
        .await
        .map_err(push_error)?;
    warn_reused(&id, &outcome);
    // New deadlines or queued lapse tasks: wake the timer and delivery loops.
    state.wake.notify_waiters();
    Ok(Json(outcome))
}

/// At most this many `expectationId`s are named in [`warn_reused`]'s line; the count is always
/// given.
const REUSED_NAMED: usize = 10;

/// One `warn` line when a push had expectations refused because their `expectationId` was
/// already recorded for the agent (id reuse, expectations-v1 §8): the agent, how many, the
/// first [`REUSED_NAMED`] ids, and why. A second run of the same artifact on the same record
/// raises nothing; the log says so as the answer's `summary` does.
fn warn_reused(agent: &AgentId, outcome: &PushOutcome) {
    let reused: Vec<&str> = outcome.reused().collect();
    if reused.is_empty() {
        return;
    }
    let mut named = reused
        .iter()
        .take(REUSED_NAMED)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if reused.len() > REUSED_NAMED {
        named.push_str(&format!(" and {} more", reused.len() - REUSED_NAMED));
    }
    tracing::warn!(
        agent = %agent.as_str(),
        refused = reused.len(),
        raised = outcome.raised.len(),
        expectation_ids = %named,
        "push refused {} expectation(s) whose expectationId was already recorded for this agent with other content or from another task (an expectationId is never reused, expectations-v1 §8): {named}; new work needs new expectationIds, and running the same artifact again from the start needs a fresh record (for serve, a new `database` file)",
        reused.len()
    );
}

/// A push the watcher did not apply, as problem+json: 404 for an agent not configured, 503 with
/// `Retry-After` for one whose card was never read (saying why, as `GET /v1/agents` and
/// `a2a-watcher agents` do: the last read's error and when the next read is tried), 503 for the
/// store.
fn push_error(e: PushError) -> ApiError {
    match e {
        PushError::UnknownAgent { agent } => ApiError::not_found(format!(
            "agent {:?} is not registered with this watcher",
            agent.as_str()
        )),
        PushError::CardNotRead {
            agent,
            error,
            next_try_at,
        } => {
            let why = error
                .map(|e| format!(" (the last read failed: {e})"))
                .unwrap_or_default();
            let next = next_try_at
                .map(|at| format!(" at {at}"))
                .unwrap_or_default();
            ApiError::unavailable(format!(
                "agent {:?}'s card has not been read yet{why}, so its expectations cannot be checked against it; the watcher reads it again{next}: push again later",
                agent.as_str()
            ))
            .with_retry_after(CARD_RETRY_AFTER_SECS)
        }
        PushError::Store(e) => unavailable(e),
    }
}

/// Refuses the whole push when one artifact (or status message) carries more expectations than
/// `[limits] expectations_per_artifact` (§13.2): nothing of it is recorded.
fn check_expectation_counts(
    event: &a2a_types::StreamResponse,
    limits: &Limits,
) -> Result<(), ApiError> {
    use a2a_types::StreamResponse as S;
    type Meta = serde_json::Map<String, Value>;
    let count = |meta: Option<&Meta>| -> usize {
        meta.and_then(|m| m.get(watcher_core::EXPECTATIONS_URI))
            .and_then(|b| b.get("expectations"))
            .and_then(Value::as_array)
            .map_or(0, Vec::len)
    };
    let mut blocks: Vec<(String, usize)> = Vec::new();
    let status_count =
        |s: &a2a_types::TaskStatus| count(s.message.as_ref().and_then(|m| m.metadata.as_ref()));
    match event {
        S::ArtifactUpdate(u) => blocks.push((
            format!("artifact {:?}", u.artifact.artifact_id),
            count(u.artifact.metadata.as_ref()),
        )),
        S::StatusUpdate(u) => blocks.push(("the status message".into(), status_count(&u.status))),
        S::Task(t) => {
            for a in &t.artifacts {
                blocks.push((
                    format!("artifact {:?}", a.artifact_id),
                    count(a.metadata.as_ref()),
                ));
            }
            blocks.push(("the status message".into(), status_count(&t.status)));
        }
        S::Message(_) => {}
    }
    for (what, n) in blocks {
        if n > limits.expectations_per_artifact {
            return Err(Limits::refusal(
                "expectations_per_artifact",
                limits.expectations_per_artifact,
                format_args!("{what}: {n} expectations; nothing of this push was recorded"),
            ));
        }
    }
    Ok(())
}
