//! The watcher's routes (serve.md "Routes"). Handlers parse at the edge, call the watcher, and
//! shape the answer; nothing here is local to one host.

use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{HeaderMap, Uri};
use axum::Json;
use serde_json::{json, Value};
use watcher_core::engine::{Effect, Input, PushItem, Rejection};
use watcher_core::fact::parse_fact;
use watcher_core::ids::{AgentId, Source, Subject};
use watcher_core::ingest::push_items;
use watcher_core::time::Instant;
use watcher_runtime::store::{DeliveryState, LapseQuery};

use crate::auth::Role;
use crate::body::{json_body, json_body_with};
use crate::limits::Limits;
use crate::page;
use crate::problem::ApiError;
use crate::strict_json;
use crate::AppState;

/// Most facts one request may carry by default (`[limits] facts_per_request`).
pub const MAX_FACTS_PER_REQUEST: usize = 1000;

pub(crate) fn unavailable(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "store failure");
    ApiError::unavailable("the watcher's store is unavailable; retry later")
}

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
            // Says why, as `GET /v1/agents` and `a2a-watcher agents` do: the last read's error
            // and when the next read is tried.
            let health = state.watcher.directory.card_health(&tenant, &id);
            let why = health
                .as_ref()
                .and_then(|h| h.error.as_deref())
                .map(|e| format!(" (the last read failed: {e})"))
                .unwrap_or_default();
            let next = health
                .as_ref()
                .and_then(|h| h.next_try_at)
                .map(|at| format!(" at {at}"))
                .unwrap_or_default();
            return Err(ApiError::unavailable(format!(
                "agent {agent_id:?}'s card has not been read yet{why}, so its expectations cannot be checked against it; the watcher reads it again{next}: push again later"
            ))
            .with_retry_after(CARD_RETRY_AFTER_SECS));
        }
        None => {
            return Err(ApiError::not_found(format!(
                "agent {agent_id:?} is not registered with this watcher"
            )))
        }
    }
    .profile
        .clone();
    let value = json_body_with(&headers, &body, strict_json::push_body)?;
    let event = a2a_types::StreamResponse::from_push_body(value).map_err(|e| {
        ApiError::bad_request(format!(
            "{e} (an A2A 1.0 StreamResponse or a bare Task is expected)"
        ))
    })?;
    watcher_core::ingest::check_state(&event).map_err(ApiError::bad_request)?;
    check_expectation_counts(&event, &limits)?;
    let warnings = watcher_core::ingest::push_warnings(&event);
    let now = state.clock.now();
    let mut items = push_items(&event, &id, now);
    // Kept with the rejections (marked `warning`), so nothing ignored is silently dropped.
    let warned_task = event
        .task_id()
        .and_then(|t| watcher_core::ids::TaskId::parse(t).ok());
    // The well-formed expectations this push carries, to say which were recorded before.
    let carried: Vec<String> = items
        .iter()
        .filter_map(|i| match i {
            PushItem::Raise { expectations, .. } => Some(expectations),
            _ => None,
        })
        .flatten()
        .filter_map(|e| e.as_ref().ok().map(|e| e.expectation_id.to_string()))
        .collect();
    items.extend(warnings.iter().map(|w| PushItem::Ignored {
        task_id: warned_task.clone(),
        reason: w.clone(),
    }));
    let applied = state
        .watcher
        .apply(&tenant, &Input::Push { agent, items }, now)
        .await
        .map_err(unavailable)?;
    // New deadlines or queued lapse tasks: wake the timer and delivery loops.
    state.wake.notify_waiters();
    // Origin-task reconciliation (issue 11 item 5): a task of an agent that is not
    // lifecycle-trusted that raised expectations is followed with GetTask, in case its cancel is
    // never pushed.
    if let Some(task_id) = event.task_id() {
        if applied
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Raised { .. }))
        {
            watcher_runtime::origins::follow_origin(&state.watcher, &tenant, &id, task_id, now)
                .await;
        }
    }
    track_lapse_task(&state, &tenant, &id, &event).await;
    let mut raised = Vec::new();
    let mut rejected = Vec::new();
    let mut withdrawn = Vec::new();
    let mut facts = 0usize;
    for e in &applied.effects {
        match e {
            Effect::Raised { expectation, .. } => raised.push(json!(expectation.id)),
            Effect::Rejected(r) if !r.warning => {
                rejected.push(json!({ "expectationId": r.expectation_id, "reason": r.reason }))
            }
            Effect::Withdrawn { expectation, .. } => withdrawn.push(json!(expectation.id)),
            Effect::FactRecorded {
                duplicate: false, ..
            } => facts += 1,
            _ => {}
        }
    }
    // Expectations this push carried that it neither raised nor refused: recorded before, with
    // the same content (a replay, or a Task snapshot repeating its artifacts), so unchanged.
    let decided: std::collections::BTreeSet<String> = raised
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .chain(
            rejected
                .iter()
                .filter_map(|r| r["expectationId"].as_str().map(str::to_string)),
        )
        .collect();
    let mut already: Vec<String> = carried
        .into_iter()
        .filter(|id| !decided.contains(id))
        .collect();
    already.dedup();
    let mut answer =
        json!({ "raised": raised, "rejected": rejected, "withdrawn": withdrawn, "facts": facts });
    if !already.is_empty() {
        answer["alreadyRecorded"] = json!(already);
    }
    if !warnings.is_empty() {
        answer["warnings"] = json!(warnings);
    }
    Ok(Json(answer))
}

/// Pushes about a lapse task the watcher created update that task's state in `/v1/lapses`.
/// Task ids are the agent's own, so only the pushing agent's lapse tasks are looked at.
///
/// A push may beat the agent's answer to SendMessage (the official SDKs push the new Task, with
/// the request in its `history`, while the answer is on its way), so the lapse task is not yet
/// known by its task id: a pushed Task is then matched by the deterministic `messageId` of a
/// user message in its history (`lapse:…`, one keyed read). Each state is recorded with
/// [`watcher_runtime::store::Outbox::outbox_task_state`], which changes only the task fields, in
/// one atomic step with the read, so neither a concurrent delivery's answer nor a later push of
/// an earlier state takes it back (`watcher_runtime::task_progress`).
async fn track_lapse_task(
    state: &AppState,
    tenant: &watcher_core::ids::Tenant,
    agent: &AgentId,
    event: &a2a_types::StreamResponse,
) {
    let (Some(task_id), Some(status)) = (event.task_id(), event.status()) else {
        return;
    };
    let store = &state.watcher.store;
    // From the index by (tenant, agent, taskId): the cost does not grow with the outbox.
    let Ok(known) = store.outbox_by_task(tenant, agent, task_id).await else {
        return;
    };
    let mut message_ids: Vec<String> = known.into_iter().map(|e| e.message_id).collect();
    if message_ids.is_empty() {
        if let a2a_types::StreamResponse::Task(task) = event {
            message_ids.extend(
                task.history
                    .iter()
                    .filter(|m| {
                        m.role == a2a_types::Role::User && m.message_id.starts_with("lapse:")
                    })
                    .map(|m| m.message_id.clone()),
            );
        }
    }
    for message_id in message_ids {
        if let Err(e) = store
            .outbox_task_state(tenant, agent, &message_id, task_id, status.state)
            .await
        {
            tracing::warn!(error = %e, message_id, "could not record the lapse task's state");
        }
    }
}

/// `GET /v1/agents/{agentId}/rejections`: for the agent itself or an operator of its tenant;
/// oldest first, one page at a time (`limit`, `cursor`; `crate::page`). Answers
/// `{ "rejections": [...], "nextCursor": "…" | null }`.
pub async fn rejections(
    State(state): State<AppState>,
    Path(agent_id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Agent, Role::Operator], true)?;
    let params = page::parse(&uri, 'r', &[])?;
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
) -> Result<Value, ApiError> {
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
    let (rejections, last, cut) = page::fill(list.iter().map(|(pos, r)| (*pos, rejection_json(r))));
    let next = if cut { last } else { next };
    let next = next.map(|p| page::encode('r', &page::Cursor::Position(p)));
    Ok(json!({ "rejections": rejections, "nextCursor": next }))
}

/// The wire form of a kept rejection (serve.md): `{ expectationId, reason, at, taskId }`, plus
/// `"warning": true` on what was ignored rather than refused (issue 12 item 4).
fn rejection_json(r: &Rejection) -> Value {
    let mut v = json!({ "expectationId": r.expectation_id, "reason": r.reason, "at": r.at, "taskId": r.task_id });
    if r.warning {
        v["warning"] = json!(true);
    }
    v
}

/// The key under which a source's warnings are kept with the rejections: `source:{sourceId}`
/// (sources and agents share the rejections store; the prefix keeps them apart).
fn source_key(source: &str) -> Option<AgentId> {
    AgentId::parse(format!("source:{source}")).ok()
}

/// `GET /v1/sources/{sourceId}/rejections`: what the facts route ignored for this source (its
/// `warnings`, kept on the record), for the source itself or an operator of its tenant; oldest
/// first, one page at a time (`limit`, `cursor`), as `GET /v1/agents/{agentId}/rejections`.
pub async fn source_rejections(
    State(state): State<AppState>,
    Path(source_id): Path<String>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
    let principal = state
        .credentials
        .require(&headers, &[Role::Source, Role::Operator], false)?;
    let params = page::parse(&uri, 'r', &[])?;
    if principal.role == Role::Source && principal.id != source_id {
        return Err(ApiError::forbidden(format!(
            "this credential belongs to source {:?}, not {source_id:?}",
            principal.id
        )));
    }
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
        // Kept with the rejections under the source (`GET /v1/sources/{sourceId}/rejections`).
        if let Some(key) = source_key(source.as_str()) {
            let now = state.clock.now();
            let kept = warnings
                .iter()
                .map(|w| Rejection {
                    agent: key.clone(),
                    expectation_id: None,
                    reason: w.clone(),
                    task_id: None,
                    at: now,
                    warning: true,
                })
                .collect();
            let commit = watcher_runtime::store::Commit {
                rejections: kept,
                ..Default::default()
            };
            state
                .watcher
                .store
                .commit(&tenant, commit)
                .await
                .map_err(unavailable)?;
        }
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
    // Facts received before, exactly (key, source, observedAt: fact identity, §9.1): recorded
    // once, so these changed nothing.
    let mut already: Vec<String> = applied
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::FactRecorded {
                fact_key,
                duplicate: true,
                ..
            } => Some(fact_key.to_string()),
            _ => None,
        })
        .collect();
    already.sort();
    already.dedup();
    let mut answer = json!({ "results": results });
    if !already.is_empty() {
        answer["alreadyRecorded"] = json!(already);
    }
    Ok(Json(answer))
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

/// `GET /v1/lapses`: the lapse tasks of the caller's tenant and their delivery, in order of
/// lapse, one page at a time (`crate::page`): `limit`, `cursor`, and the filters `agent` (an
/// agent id), `delivery` (`queued`, `sent` or `failed`) and `since` (lapsed at or after, an
/// RFC 3339 instant). Answers `{ "lapses": [...], "nextCursor": "…" | null }`. For operators.
pub async fn lapses(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: Uri,
) -> Result<Json<Value>, ApiError> {
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
        query.delivery = Some(match d.as_str() {
            "queued" => DeliveryState::Queued,
            "sent" => DeliveryState::Sent,
            "failed" => DeliveryState::Failed,
            other => {
                return Err(ApiError::bad_request(format!(
                    "query parameter `delivery`: {other:?} is not one of queued, sent, failed"
                )))
            }
        });
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
    let (lapses, last, cut) = page::fill(page.entries.iter().map(|(pos, o)| (*pos, lapse_json(o))));
    let next = if cut { last } else { page.next };
    let next = next.map(|p| page::encode('l', &page::Cursor::Position(p)));
    Ok(Json(json!({ "lapses": lapses, "nextCursor": next })))
}

/// One lapse task as `GET /v1/lapses` shows it.
fn lapse_json(o: &watcher_runtime::store::OutboxEntry) -> Value {
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
}

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
) -> Result<Json<Value>, ApiError> {
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
    // The directory is in memory (the configured agents); each agent shown costs two index reads.
    let mut ids = ids
        .into_iter()
        .filter(|id| after.is_none_or(|a| id.as_str() > a))
        .peekable();
    let mut agents = Vec::new();
    let mut bytes = 0usize;
    let mut next = None;
    while let Some(id) = ids.next() {
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
        // docs/specs/agent-card-vs-lifecycle-conformance.md: only a probe promotes; the card
        // alone never does. Untrusted agents' origin tasks are reconciled with GetTask.
        let lifecycle = directory.lifecycle(tenant, &id);
        v["lifecycleTrusted"] = json!(lifecycle.as_ref().is_some_and(|l| l.lifecycle_trusted));
        v["reconciled"] = json!(directory.reconciles(tenant, &id));
        match lifecycle {
            Some(l) => {
                v["lifecycle"] = json!({
                    "protocolVersion": l.protocol_version,
                    "probedAt": l.probed_at,
                    "demotions": l.demotions,
                    "descriptor": l.descriptor,
                })
            }
            None => {
                v["lifecycle"] = json!({
                    "demotions": ["never probed: the card alone never promotes an agent to lifecycle-trusted"]
                })
            }
        }
        // serve.md "Agents are independent": where the agent's card stands.
        if let Some(card) = cards.remove(&id) {
            v["card"] = json!(card);
        }
        bytes += v.to_string().len() + 1;
        agents.push(v);
        if ids.peek().is_some() && (agents.len() >= limit || bytes > page::MAX_PAGE_BYTES / 2) {
            next = Some(page::encode(
                'a',
                &page::Cursor::Agent(id.as_str().to_string()),
            ));
            break;
        }
    }
    Ok(json!({ "agents": agents, "nextCursor": next }))
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
    let done = state
        .watcher
        .requeue_failed(&principal.tenant, &agent, ids.as_deref(), state.clock.now())
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
