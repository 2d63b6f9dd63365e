//! The watcher's routes (serve.md "Routes"). Handlers parse at the edge, call the watcher, and
//! shape the answer; nothing here is local to one host.

use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::HeaderMap;
use axum::Json;
use serde_json::{json, Value};
use watcher_core::engine::{Effect, Input};
use watcher_core::fact::parse_fact;
use watcher_core::ids::{AgentId, Source, Subject};
use watcher_core::ingest::push_items;

use crate::auth::Role;
use crate::body::json_body;
use crate::limits::Limits;
use crate::problem::ApiError;
use crate::AppState;

/// Most facts one request may carry by default (`[limits] facts_per_request`).
pub const MAX_FACTS_PER_REQUEST: usize = 1000;

pub(crate) fn unavailable(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "store failure");
    ApiError::unavailable("the watcher's store is unavailable; retry later")
}

/// `GET /healthz`: 200 `{"status":"ok"}` while the store takes a write (a one-row probe,
/// `Store::probe_write`); 503 problem+json whose `detail` names the store's error otherwise (a
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
) -> Result<Json<Value>, ApiError> {
    let principal = state.credentials.require(&headers, &[Role::Agent], true)?;
    if principal.id != agent_id {
        return Err(ApiError::forbidden(format!(
            "this credential belongs to agent {:?}, not {agent_id:?}",
            principal.id
        )));
    }
    let tenant = principal.tenant.clone();
    let id = AgentId::parse(agent_id.clone())
        .map_err(|r| ApiError::bad_request(format!("agentId: {r}")))?;
    let agent = match state.watcher.directory.get(&tenant, &id) {
        Some(entry) => entry,
        // Configured, but its card was never read (serve.md "Agents are independent").
        None if state.watcher.directory.card_health(&tenant, &id).is_some() => {
            return Err(ApiError::unavailable(format!(
                "agent {agent_id:?}'s card has not been read yet, so its expectations cannot be checked against it; the watcher retries reading it: push again later"
            ))
            .with_retry_after(CARD_RETRY_AFTER_SECS))
        }
        None => {
            return Err(ApiError::not_found(format!(
                "agent {agent_id:?} is not registered with this watcher"
            )))
        }
    }
    .profile
        .clone();
    let value = json_body(&headers, &body)?;
    let event = a2a_types::StreamResponse::from_push_body(value).map_err(|e| {
        ApiError::bad_request(format!(
            "{e} (an A2A 1.0 StreamResponse or a bare Task is expected)"
        ))
    })?;
    watcher_core::ingest::check_state(&event).map_err(ApiError::bad_request)?;
    check_expectation_counts(&event, &limits)?;
    let warnings = watcher_core::ingest::push_warnings(&event);
    let now = state.clock.now();
    let items = push_items(&event, &id, now);
    let applied = state
        .watcher
        .apply(&tenant, &Input::Push { agent, items }, now)
        .await
        .map_err(unavailable)?;
    // New deadlines or queued lapse tasks: wake the timer and delivery loops.
    state.wake.notify_waiters();
    track_lapse_task(&state, &tenant, &id, &event).await;
    let mut raised = Vec::new();
    let mut rejected = Vec::new();
    let mut withdrawn = Vec::new();
    let mut facts = 0usize;
    for e in &applied.effects {
        match e {
            Effect::Raised { expectation, .. } => raised.push(json!(expectation.id)),
            Effect::Rejected(r) => {
                rejected.push(json!({ "expectationId": r.expectation_id, "reason": r.reason }))
            }
            Effect::Withdrawn { expectation, .. } => withdrawn.push(json!(expectation.id)),
            Effect::FactRecorded {
                duplicate: false, ..
            } => facts += 1,
            _ => {}
        }
    }
    let mut answer =
        json!({ "raised": raised, "rejected": rejected, "withdrawn": withdrawn, "facts": facts });
    if !warnings.is_empty() {
        answer["warnings"] = json!(warnings);
    }
    Ok(Json(answer))
}

/// Pushes about a lapse task the watcher created update that task's state in `/v1/lapses`.
/// Task ids are the agent's own, so only the pushing agent's lapse tasks are looked at.
async fn track_lapse_task(
    state: &AppState,
    tenant: &watcher_core::ids::Tenant,
    agent: &AgentId,
    event: &a2a_types::StreamResponse,
) {
    let (Some(task_id), Some(status)) = (event.task_id(), event.status()) else {
        return;
    };
    let Ok(entries) = state.watcher.store.lapses(tenant).await else {
        return;
    };
    for mut entry in entries {
        if entry.agent == *agent && entry.task_id.as_deref() == Some(task_id) {
            entry.task_state = Some(status.state.as_str().to_string());
            if let Err(e) = state.watcher.store.outbox_update(&entry).await {
                tracing::warn!(error = %e, "could not record the lapse task's state");
            }
        }
    }
}

/// `GET /v1/agents/{agentId}/rejections`: for the agent itself or an operator of its tenant.
pub async fn rejections(
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Agent, Role::Operator], true)?;
    if principal.role == Role::Agent && principal.id != agent_id {
        return Err(ApiError::forbidden(format!(
            "this credential belongs to agent {:?}, not {agent_id:?}",
            principal.id
        )));
    }
    let id = AgentId::parse(agent_id.clone())
        .map_err(|r| ApiError::bad_request(format!("agentId: {r}")))?;
    if state
        .watcher
        .directory
        .get(&principal.tenant, &id)
        .is_none()
    {
        return Err(ApiError::not_found(format!(
            "agent {agent_id:?} is not registered in this tenant"
        )));
    }
    let list = state
        .watcher
        .store
        .rejections(&principal.tenant, &id)
        .await
        .map_err(unavailable)?;
    let rejections: Vec<Value> = list
        .iter()
        .map(|r| json!({ "expectationId": r.expectation_id, "reason": r.reason, "at": r.at, "taskId": r.task_id }))
        .collect();
    Ok(Json(json!({ "rejections": rejections })))
}

/// `POST /v1/facts`: one Fact or `{ "facts": [...] }` from an authenticated source, all or
/// nothing. `source` is the credential's id, whatever the body says (§13.5).
pub async fn facts(
    State(state): State<AppState>,
    Extension(limits): Extension<Limits>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Source], false)?;
    let source = Source::parse(principal.id.clone()).map_err(ApiError::bad_request)?;
    let tenant = principal.tenant.clone();
    let value = json_body(&headers, &body)?;
    let list: Vec<&Value> = match value.get("facts") {
        Some(Value::Array(items)) => items.iter().collect(),
        Some(_) => {
            return Err(ApiError::bad_request(
                "field `facts`: must be an array of facts",
            ))
        }
        None => vec![&value],
    };
    if list.is_empty() {
        return Err(ApiError::bad_request("field `facts`: must not be empty"));
    }
    if list.len() > limits.facts_per_request {
        return Err(Limits::refusal(
            "facts_per_request",
            limits.facts_per_request,
            format_args!(
                "field `facts`: {} facts; nothing in this request was recorded",
                list.len()
            ),
        ));
    }
    let batch = value.get("facts").is_some();
    // Members a fact does not define are ignored, and said so.
    let mut warnings = Vec::new();
    if let Some(obj) = value.as_object().filter(|_| batch) {
        warnings.extend(watcher_core::members::unknown(
            obj,
            &["facts"],
            "",
            "a facts request",
        ));
    }
    for (i, v) in list.iter().enumerate() {
        let path = if batch {
            format!("facts[{i}]")
        } else {
            String::new()
        };
        warnings.extend(watcher_core::members::fact_warnings(v, &path));
    }
    let mut parsed = Vec::with_capacity(list.len());
    for (i, v) in list.iter().enumerate() {
        let f = parse_fact(v, &source).map_err(|e| {
            let at = if batch {
                format!("facts[{i}]: ")
            } else {
                String::new()
            };
            ApiError::bad_request(format!("{at}{e}; nothing in this request was recorded"))
        })?;
        parsed.push(f);
    }
    let Json(mut answer) = record_facts(&state, &tenant, parsed).await?;
    if !warnings.is_empty() {
        answer["warnings"] = json!(warnings);
    }
    Ok(Json(answer))
}

/// Records `facts` for `tenant` in one input (all or nothing) and answers as `POST /v1/facts`
/// does: `{ "results": [{ "factKey", "satisfied": [ids] }] }`. Shared with the carrier webhook.
///
/// # Errors
/// 503 when the store fails.
pub async fn record_facts(
    state: &AppState,
    tenant: &watcher_core::ids::Tenant,
    facts: Vec<watcher_core::fact::Fact>,
) -> Result<Json<Value>, ApiError> {
    let now = state.clock.now();
    let applied = state
        .watcher
        .apply(tenant, &Input::Facts(facts), now)
        .await
        .map_err(unavailable)?;
    // New deadlines or queued lapse tasks: wake the timer and delivery loops.
    state.wake.notify_waiters();
    let results: Vec<Value> = applied
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::FactRecorded {
                fact_key,
                satisfied,
                ..
            } => Some(json!({
                "factKey": fact_key,
                "satisfied": satisfied.iter().map(|s| s.id.to_string()).collect::<Vec<_>>(),
            })),
            _ => None,
        })
        .collect();
    Ok(Json(json!({ "results": results })))
}

/// `GET /v1/subjects/{type}/{id}`: the subject's expectations (ExpectationRecord, replay.md)
/// and the facts on it. For operators.
pub async fn subject(
    State(state): State<AppState>,
    Path((subject_type, subject_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
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

/// The subject view (`watcher_runtime::view`) of `{type}/{id}` in `tenant`.
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
    Ok(watcher_runtime::view::subject_view(&found))
}

/// `GET /v1/lapses`: every lapse task of the caller's tenant and its delivery. For operators.
pub async fn lapses(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    let list = state
        .watcher
        .store
        .lapses(&principal.tenant)
        .await
        .map_err(unavailable)?;
    let lapses: Vec<Value> = list
        .iter()
        .map(|o| {
            let mut v = json!({
                "messageId": o.message_id,
                "expectationId": o.expectation_id,
                "lapse": o.lapse,
                "lapsedAt": o.lapsed_at,
                "agent": o.agent,
                "delivery": o.delivery.as_str(),
                "attempts": o.attempts,
            });
            if let Some(t) = &o.task_id {
                v["taskId"] = json!(t);
            }
            if let Some(s) = &o.task_state {
                v["taskState"] = json!(s);
            }
            if o.answered_with_message {
                v["answeredWithMessage"] = json!(true);
            }
            // §13.1: the lapse task waits on a person at the agent; the watcher never answers.
            if matches!(
                o.task_state.as_deref(),
                Some("TASK_STATE_INPUT_REQUIRED" | "TASK_STATE_AUTH_REQUIRED")
            ) {
                v["needsPerson"] = json!(true);
            }
            if let Some(since) = &o.retrying_since {
                v["retryingSince"] = json!(since);
            }
            if let Some(e) = &o.last_error {
                v["lastError"] = json!(e);
            }
            v
        })
        .collect();
    Ok(Json(json!({ "lapses": lapses })))
}

/// `GET /v1/agents`: every agent of the caller's tenant with its lapse-task delivery state
/// (`ok`, `retrying` since `retryingSince`, `failing`; `watcher_runtime::operators`). For
/// operators.
pub async fn agents(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Result<Json<Value>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    Ok(Json(agents_view(&state, &principal.tenant).await?))
}

/// The `GET /v1/agents` body for `tenant`: `{ "agents": [{ "agentId", "delivery",
/// "submitsLapses"?, "retryingSince"?, "lastError"?, "card"? }] }`, shared with the web page.
///
/// # Errors
/// 503 when the store fails.
pub async fn agents_view(
    state: &AppState,
    tenant: &watcher_core::ids::Tenant,
) -> Result<Value, ApiError> {
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
    let mut agents = Vec::new();
    for id in ids {
        let delivery =
            watcher_runtime::operators::agent_delivery(&*state.watcher.store, tenant, &id)
                .await
                .map_err(unavailable)?;
        let mut v = json!({
            "agentId": id,
            "delivery": delivery.delivery,
        });
        if let Some(entry) = entries.get(&id) {
            v["submitsLapses"] = json!(entry.submits_lapses);
        }
        if let Some(since) = delivery.retrying_since {
            v["retryingSince"] = json!(since);
        }
        if let Some(e) = delivery.last_error {
            v["lastError"] = json!(e);
        }
        // serve.md "Agents are independent": where the agent's card stands.
        if let Some(card) = cards.remove(&id) {
            v["card"] = json!(card);
        }
        agents.push(v);
    }
    Ok(json!({ "agents": agents }))
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
) -> Result<Json<Value>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Operator], false)?;
    let value = json_body(&headers, &body)?;
    let Some(obj) = value.as_object() else {
        return Err(ApiError::bad_request(
            "the body must be an object {\"agent\": \"…\", \"messageIds\": [\"…\"]}",
        ));
    };
    let agent_name = match obj.get("agent") {
        Some(Value::String(a)) if !a.is_empty() => a.clone(),
        Some(_) => {
            return Err(ApiError::bad_request(
                "field `agent`: must be a non-empty string",
            ))
        }
        None => return Err(ApiError::bad_request("field `agent`: is required")),
    };
    let agent = AgentId::parse(agent_name.clone())
        .map_err(|r| ApiError::bad_request(format!("field `agent`: {r}")))?;
    if state
        .watcher
        .directory
        .get(&principal.tenant, &agent)
        .is_none()
    {
        return Err(ApiError::not_found(format!(
            "agent {agent_name:?} is not registered in this tenant"
        )));
    }
    let ids: Option<Vec<String>> = match obj.get("messageIds") {
        None | Some(Value::Null) => None,
        Some(Value::Array(items)) => {
            if items.is_empty() {
                return Err(ApiError::bad_request(
                    "field `messageIds`: must not be empty; leave it out to re-queue every failed lapse task of the agent",
                ));
            }
            if items.len() > MAX_RETRY_IDS {
                return Err(ApiError::bad_request(format!(
                    "field `messageIds`: {} ids exceed the limit of {MAX_RETRY_IDS}",
                    items.len()
                )));
            }
            let mut ids = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(id) if !id.is_empty() => ids.push(id.to_string()),
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "field `messageIds[{i}]`: must be a non-empty string"
                        )))
                    }
                }
            }
            Some(ids)
        }
        Some(_) => {
            return Err(ApiError::bad_request(
                "field `messageIds`: must be an array of messageIds",
            ))
        }
    };
    let done = watcher_runtime::operators::requeue_failed(
        &*state.watcher.store,
        &principal.tenant,
        &agent,
        ids.as_deref(),
        state.clock.now(),
    )
    .await
    .map_err(unavailable)?;
    if !done.requeued.is_empty() {
        // The agent's delivery lane looks at once.
        state.wake.notify_waiters();
    }
    Ok(Json(json!({
        "requeued": done.requeued.len(),
        "messageIds": done.requeued,
        "skipped": done.skipped,
        "more": done.more,
    })))
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
