//! Translates what an agent pushes (an A2A 1.0 `StreamResponse`, or a bare `Task`) into engine
//! items, in the order semantics.md fixes: within one pushed event, expectations are raised
//! first, then withdrawals, then facts; within each of those, a Task's artifacts in array order,
//! then its status message; the status itself last. The task's lineage, when the event shows it
//! ([`PushItem::Lineage`]), comes before all of them.

use a2a_types::{Artifact, Message, Role, StreamResponse, TaskState, TaskStatus};
use serde_json::{Map, Value};

use crate::engine::{Origin, PushItem};
use crate::expectation::{json_type, Expectation};
use crate::fact::parse_fact;
use crate::ids::{AgentId, ContextId, ExpectationId, Source, TaskId};
use crate::time::Instant;
use crate::EXPECTATIONS_URI;

/// The items one pushed event carries for `agent`, received at `now`.
///
/// Events without a usable task id (a `message` with no `taskId`) can still carry facts. A
/// `taskId` or `contextId` that is not a valid identifier yields a [`PushItem::Malformed`].
pub fn push_items(event: &StreamResponse, agent: &AgentId, now: Instant) -> Vec<PushItem> {
    let mut items = Vec::new();
    let source = Source::agent(agent);
    match event {
        StreamResponse::ArtifactUpdate(u) => match origin(&u.task_id, Some(&u.context_id)) {
            Ok(o) => artifact_items(&u.artifact, &o, &source, &mut items),
            Err(reason) => items.push(PushItem::Malformed {
                task_id: None,
                reason,
            }),
        },
        StreamResponse::StatusUpdate(u) => match origin(&u.task_id, Some(&u.context_id)) {
            Ok(o) => {
                lineage_item(&o, u.status.message.iter(), &mut items);
                status_items(&u.status, &o, &source, now, &mut items);
            }
            Err(reason) => items.push(PushItem::Malformed {
                task_id: None,
                reason,
            }),
        },
        StreamResponse::Task(t) => match origin(&t.id, t.context_id.as_deref()) {
            Ok(o) => {
                // The lineage the request shows, then every artifact's and the status message's
                // expectations, then every withdrawal, then every fact (semantics.md, "Facts"),
                // then the status.
                lineage_item(&o, t.history.iter().chain(&t.status.message), &mut items);
                let mut phased = Vec::new();
                for a in &t.artifacts {
                    artifact_items(a, &o, &source, &mut phased);
                }
                status_items(&t.status, &o, &source, now, &mut phased);
                for phase in 0..4 {
                    items.extend(phased.iter().filter(|i| item_phase(i) == phase).cloned());
                }
            }
            Err(reason) => items.push(PushItem::Malformed {
                task_id: None,
                reason,
            }),
        },
        StreamResponse::Message(m) => {
            if let Some(Ok(o)) = m
                .task_id
                .as_deref()
                .map(|t| origin(t, m.context_id.as_deref()))
            {
                lineage_item(&o, std::iter::once(m), &mut items);
            }
            message_facts(m, &source, &mut items);
        }
    }
    items
}

/// The task's lineage as its messages show it (docs/interpretation.md "Withdrawal follows the
/// lineage"): the first entry of `referenceTaskIds`, other than the task itself, of the first
/// user message (`ROLE_USER`: the request that started the task, or a later one) that has one.
/// A lapse task's request names the task that raised the lapsed expectation (semantics.md "The
/// lapse task"). An entry that is not a task id is warned about and the lineage not recorded.
fn lineage_item<'a>(
    o: &Origin,
    messages: impl Iterator<Item = &'a Message>,
    items: &mut Vec<PushItem>,
) {
    let first = messages
        .filter(|m| m.role == Role::User)
        .flat_map(|m| m.reference_task_ids.iter())
        .find(|id| id.as_str() != o.task_id.as_str());
    let Some(parent) = first else {
        return;
    };
    match TaskId::parse(parent.as_str()) {
        Ok(parent) => items.push(PushItem::Lineage {
            origin: o.clone(),
            parent,
        }),
        Err(reason) => items.push(PushItem::Ignored {
            task_id: Some(o.task_id.clone()),
            reason: format!(
                "field `referenceTaskIds`: {reason}; the task's lineage is not recorded (expectations-v1 §8.1)"
            ),
        }),
    }
}

/// Raise 0, withdraw 1, facts 2, status 3; unreadable metadata is reported with the raises (a
/// lineage is put before all of them by [`push_items`]).
fn item_phase(item: &PushItem) -> u8 {
    match item {
        PushItem::Lineage { .. }
        | PushItem::Raise { .. }
        | PushItem::Malformed { .. }
        | PushItem::Ignored { .. } => 0,
        PushItem::Withdraw { .. } => 1,
        PushItem::Facts(_) => 2,
        PushItem::Status { .. } => 3,
    }
}

fn origin(task_id: &str, context_id: Option<&str>) -> Result<Origin, String> {
    let task_id = TaskId::parse(task_id).map_err(|r| format!("field `taskId`: {r}"))?;
    let context_id = match context_id {
        Some(c) if !c.is_empty() => {
            Some(ContextId::parse(c).map_err(|r| format!("field `contextId`: {r}"))?)
        }
        _ => None,
    };
    Ok(Origin {
        task_id,
        context_id,
    })
}

/// `metadata[URI]` if it is an object; a malformed value becomes a refusal.
fn extension_block<'a>(
    metadata: Option<&'a Map<String, Value>>,
    task_id: Option<&TaskId>,
    items: &mut Vec<PushItem>,
) -> Option<&'a Map<String, Value>> {
    match metadata?.get(EXPECTATIONS_URI)? {
        Value::Object(m) => Some(m),
        Value::Null => None,
        other => {
            items.push(PushItem::Malformed {
                task_id: task_id.cloned(),
                reason: format!(
                    "field `metadata[\"{EXPECTATIONS_URI}\"]`: must be an object, not {} (expectations-v1 §8)",
                    json_type(other)
                ),
            });
            None
        }
    }
}

fn expectations(
    block: &Map<String, Value>,
    o: &Origin,
    question: Option<(Instant, Option<Instant>)>,
    items: &mut Vec<PushItem>,
) {
    match block.get("expectations") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => items.push(PushItem::Raise {
            origin: o.clone(),
            expectations: list.iter().map(Expectation::from_json).collect(),
            question_at: question.map(|(at, _)| at),
            question_timestamp: question.and_then(|(_, stamp)| stamp),
        }),
        Some(other) => items.push(PushItem::Malformed {
            task_id: Some(o.task_id.clone()),
            reason: format!(
                "field `expectations`: must be an array, not {} (expectations-v1 §8)",
                json_type(other)
            ),
        }),
    }
}

fn withdrawals(block: &Map<String, Value>, o: &Origin, items: &mut Vec<PushItem>) {
    let reason = block
        .get("reason")
        .and_then(Value::as_str)
        .map(str::to_owned);
    match block.get("withdraw") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            let mut ids = Vec::new();
            for (i, v) in list.iter().enumerate() {
                match v.as_str().map(ExpectationId::parse) {
                    Some(Ok(id)) => ids.push(id),
                    _ => items.push(PushItem::Malformed {
                        task_id: Some(o.task_id.clone()),
                        reason: format!("field `withdraw[{i}]`: must be an expectationId string (expectations-v1 §8.1)"),
                    }),
                }
            }
            items.push(PushItem::Withdraw {
                origin: o.clone(),
                ids,
                reason,
            });
        }
        Some(other) => items.push(PushItem::Malformed {
            task_id: Some(o.task_id.clone()),
            reason: format!(
                "field `withdraw`: must be an array, not {} (expectations-v1 §8.1)",
                json_type(other)
            ),
        }),
    }
}

fn facts(
    block: &Map<String, Value>,
    task_id: Option<&TaskId>,
    source: &Source,
    items: &mut Vec<PushItem>,
) {
    match block.get("facts") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            let mut ok = Vec::new();
            for (i, v) in list.iter().enumerate() {
                match parse_fact(v, source) {
                    Ok(f) => ok.push(f),
                    Err(e) => items.push(PushItem::Malformed {
                        task_id: task_id.cloned(),
                        reason: format!("facts[{i}]: {e}"),
                    }),
                }
            }
            if !ok.is_empty() {
                items.push(PushItem::Facts(ok));
            }
        }
        Some(other) => items.push(PushItem::Malformed {
            task_id: task_id.cloned(),
            reason: format!(
                "field `facts`: must be an array, not {} (expectations-v1 §9.2)",
                json_type(other)
            ),
        }),
    }
}

fn artifact_items(a: &Artifact, o: &Origin, source: &Source, items: &mut Vec<PushItem>) {
    if let Some(block) = extension_block(a.metadata.as_ref(), Some(&o.task_id), items) {
        expectations(block, o, None, items);
        withdrawals(block, o, items);
        facts(block, Some(&o.task_id), source, items);
    }
}

/// `status.timestamp` read per semantics.md "Time": `Ok(Some(t))` for a valid instant,
/// `Ok(None)` when missing or a zero value (`0001-01-01T00:00:00Z`, `1970-01-01T00:00:00Z`: an
/// unset time), `Err(reason)` when it is not an instant (then also treated as absent, and
/// reported as a warning by [`push_warnings`]).
pub fn status_timestamp(status: &TaskStatus) -> Result<Option<Instant>, String> {
    match status.timestamp.as_deref() {
        None => Ok(None),
        Some(text) => match Instant::parse(text) {
            Ok(t) if t.is_zero_value() => Ok(None),
            Ok(t) => Ok(Some(t)),
            Err(reason) => Err(reason),
        },
    }
}

/// The status a pushed event carries, if any.
fn event_status(event: &StreamResponse) -> Option<&TaskStatus> {
    match event {
        StreamResponse::StatusUpdate(u) => Some(&u.status),
        StreamResponse::Task(t) => Some(&t.status),
        _ => None,
    }
}

/// Warnings for the push answer, each naming the field: a `status.timestamp` that is not an RFC
/// 3339 instant is treated as absent (semantics.md "Time"); members the extension does not
/// define are ignored ([`crate::members`]); an artifact or message that lists the extension in
/// `extensions` but carries no `metadata` under its URI raises nothing.
pub fn push_warnings(event: &StreamResponse) -> Vec<String> {
    let mut out: Vec<String> = event_status(event)
        .and_then(|s| status_timestamp(s).err())
        .map(|reason| {
            format!("field `status.timestamp`: {reason}; treated as absent (receipt order is used)")
        })
        .into_iter()
        .collect();
    let mut carrier = |path: &str, extensions: &[String], metadata: Option<&Map<String, Value>>| {
        match metadata.and_then(|m| m.get(EXPECTATIONS_URI)) {
            Some(Value::Object(block)) => out.extend(crate::members::block_warnings(
                block,
                &format!("{path}.metadata[\"{EXPECTATIONS_URI}\"]"),
            )),
            Some(_) => {} // refused as malformed with the raises
            None if extensions.iter().any(|e| e == EXPECTATIONS_URI) => out.push(format!(
                "field `{path}.metadata`: lists the Expectations extension in `extensions` but has no `metadata[\"{EXPECTATIONS_URI}\"]`; nothing was raised, withdrawn or reported"
            )),
            None => {}
        }
    };
    match event {
        StreamResponse::ArtifactUpdate(u) => carrier(
            "artifact",
            &u.artifact.extensions,
            u.artifact.metadata.as_ref(),
        ),
        StreamResponse::Task(t) => {
            for (i, a) in t.artifacts.iter().enumerate() {
                carrier(
                    &format!("artifacts[{i}]"),
                    &a.extensions,
                    a.metadata.as_ref(),
                );
            }
        }
        StreamResponse::Message(m) => carrier("message", &m.extensions, m.metadata.as_ref()),
        StreamResponse::StatusUpdate(_) => {}
    }
    if let Some(m) = event_status(event).and_then(|s| s.message.as_ref()) {
        carrier("status.message", &m.extensions, m.metadata.as_ref());
    }
    out
}

/// Refuses a pushed status whose state names no task state (serve.md "Routes": a state is never
/// silently ignored, because an ignored cancel sends a lapse task for withdrawn work).
///
/// # Errors
/// A reason naming `status.state` when it is `TASK_STATE_UNSPECIFIED`, `0`, or not a 1.0 name,
/// enum number or 0.3 name.
pub fn check_state(event: &StreamResponse) -> Result<(), String> {
    match event_status(event) {
        Some(s) if s.state == TaskState::Unspecified => Err(
            "field `status.state`: not a task state; expected an A2A 1.0 TaskState name (TASK_STATE_WORKING), its enum number (2), or an A2A 0.3 name (working); TASK_STATE_UNSPECIFIED is not a state (a2a-v1 §3)".to_owned(),
        ),
        _ => Ok(()),
    }
}

fn status_items(
    status: &TaskStatus,
    o: &Origin,
    source: &Source,
    now: Instant,
    items: &mut Vec<PushItem>,
) {
    // semantics.md "Time": a missing, zero-value or invalid timestamp is absent; the engine bounds
    // one later than receipt by the receipt time and keeps the value as given beside the status.
    let timestamp = status_timestamp(status).ok().flatten();
    if let Some(m) = &status.message {
        if let Some(block) = extension_block(m.metadata.as_ref(), Some(&o.task_id), items) {
            // Only an interrupted status asks a question; expectations in any other status
            // message are ordinary (semantics.md "Questions that expire").
            let question = status
                .state
                .is_interrupted()
                .then(|| (timestamp.unwrap_or(now), timestamp));
            expectations(block, o, question, items);
            withdrawals(block, o, items);
            facts(block, Some(&o.task_id), source, items);
        }
    }
    items.push(PushItem::Status {
        origin: o.clone(),
        state: status.state.as_str().to_owned(),
        timestamp,
        given_timestamp: status.timestamp.clone(),
    });
}

fn message_facts(m: &Message, source: &Source, items: &mut Vec<PushItem>) {
    let task_id = m.task_id.as_deref().and_then(|t| TaskId::parse(t).ok());
    if let Some(block) = extension_block(m.metadata.as_ref(), task_id.as_ref(), items) {
        facts(block, task_id.as_ref(), source, items);
    }
}
