//! A2A 0.3 peers, in one adapter: everything outside this module sees 1.0 types.
//!
//! What 0.3 senders and agents look like on the wire (the `a2a-sdk` compat layer, captured in
//! `ref/wire/31-*`, `01b-*`):
//! * push bodies are the event object itself with a `kind` discriminator — `"task"`,
//!   `"status-update"`, `"artifact-update"`, `"message"` — rather than a 1.0 `StreamResponse`
//!   member key; states and roles are lowercase (`"input-required"`, `"agent"`); file parts are
//!   `{"kind": "file", "file": {"uri"|"bytes", "mimeType", "name"}}`;
//! * cards carry a top-level `url`, `preferredTransport` and `protocolVersion` (and
//!   `additionalInterfaces`) instead of `supportedInterfaces`;
//! * a message is sent with JSON-RPC `message/send`, the message shaped as above, and answered
//!   with a bare `Task` or `Message` carrying `kind`.
//!
//! Lowercase states are read by [`crate::TaskState`]'s decoder itself (serve.md "Routes": every
//! wire form of a state means the same state); the rest is translated here, JSON to JSON, so
//! that the 1.0 decoders stay strict about 1.0.

use serde_json::{json, Map, Value};

/// The 0.3 JSON-RPC method for sending a message.
pub const METHOD_SEND_MESSAGE: &str = "message/send";

/// The 0.3 JSON-RPC method for reading a task.
pub const METHOD_GET_TASK: &str = "tasks/get";

/// The 0.3 JSON-RPC method for canceling a task (params `{"id"}`, answered with the Task).
pub const METHOD_CANCEL_TASK: &str = "tasks/cancel";

/// The 0.3 `kind` of a push body, when the value is one: `"task"`, `"status-update"`,
/// `"artifact-update"` or `"message"`. A body holding a 1.0 `StreamResponse` member key
/// (`task`, `message`, `statusUpdate`, `artifactUpdate`) is 1.0, whatever else it carries.
pub fn event_kind(body: &Value) -> Option<&str> {
    let is_v1 = ["task", "message", "statusUpdate", "artifactUpdate"]
        .iter()
        .any(|k| body.get(k).is_some());
    if is_v1 {
        return None;
    }
    match body.get("kind").and_then(Value::as_str) {
        Some(k @ ("task" | "status-update" | "artifact-update" | "message")) => Some(k),
        _ => None,
    }
}

/// Translates a 0.3 push body (an event with `kind`) into the 1.0 `StreamResponse` JSON:
/// `{"task"|"statusUpdate"|"artifactUpdate"|"message": …}`. `None` when `body` is not a 0.3
/// event (a 1.0 body passes through the 1.0 decoder untouched).
pub fn event_to_v1(body: &Value) -> Option<Value> {
    let kind = event_kind(body)?;
    let mut event = body.as_object()?.clone();
    event.remove("kind");
    let member = match kind {
        "task" => {
            convert_task(&mut event);
            "task"
        }
        "status-update" => {
            // `final` said "the last event of this stream"; 1.0 drops it.
            event.remove("final");
            convert_status(&mut event);
            "statusUpdate"
        }
        "artifact-update" => {
            if let Some(Value::Object(a)) = event.get_mut("artifact") {
                convert_parts(a);
            }
            "artifactUpdate"
        }
        _ => {
            convert_message(&mut event);
            "message"
        }
    };
    Some(json!({ member: event }))
}

fn convert_task(task: &mut Map<String, Value>) {
    convert_status(task);
    if let Some(Value::Array(artifacts)) = task.get_mut("artifacts") {
        for a in artifacts.iter_mut().filter_map(Value::as_object_mut) {
            convert_parts(a);
        }
    }
    if let Some(Value::Array(history)) = task.get_mut("history") {
        for m in history.iter_mut().filter_map(Value::as_object_mut) {
            m.remove("kind");
            convert_message(m);
        }
    }
}

fn convert_status(holder: &mut Map<String, Value>) {
    if let Some(Value::Object(status)) = holder.get_mut("status") {
        if let Some(Value::Object(m)) = status.get_mut("message") {
            m.remove("kind");
            convert_message(m);
        }
    }
}

fn convert_message(m: &mut Map<String, Value>) {
    if let Some(role) = m.get("role").and_then(Value::as_str) {
        let v1 = match role {
            "user" => Some("ROLE_USER"),
            "agent" => Some("ROLE_AGENT"),
            _ => None,
        };
        if let Some(v1) = v1 {
            m.insert("role".into(), json!(v1));
        }
    }
    convert_parts(m);
}

/// 0.3 parts → 1.0 parts: `kind` dropped; a file part's `file.uri`/`file.bytes` become
/// `url`/`raw`, `mimeType` becomes `mediaType`, `name` becomes `filename`.
fn convert_parts(holder: &mut Map<String, Value>) {
    let Some(Value::Array(parts)) = holder.get_mut("parts") else {
        return;
    };
    for p in parts.iter_mut().filter_map(Value::as_object_mut) {
        p.remove("kind");
        if let Some(Value::Object(file)) = p.remove("file") {
            if let Some(uri) = file.get("uri") {
                p.insert("url".into(), uri.clone());
            }
            if let Some(bytes) = file.get("bytes") {
                p.insert("raw".into(), bytes.clone());
            }
            if let Some(mime) = file.get("mimeType") {
                p.insert("mediaType".into(), mime.clone());
            }
            if let Some(name) = file.get("name") {
                p.insert("filename".into(), name.clone());
            }
        }
        if let Some(mime) = p.remove("mimeType") {
            p.entry("mediaType").or_insert(mime);
        }
    }
}

/// A 0.3 card (top-level `url`, `preferredTransport`, `protocolVersion`, `additionalInterfaces`)
/// given the 1.0 `supportedInterfaces` it implies. A card that already lists
/// `supportedInterfaces` keeps them, and gains the 0.3 interface when its `url` is not listed
/// (the SDK's hybrid card, `ref/wire/01b`). Any other card is returned as it is.
pub fn card_to_v1(card: Value) -> Value {
    let Value::Object(mut map) = card else {
        return card;
    };
    let Some(url) = map.get("url").and_then(Value::as_str).map(str::to_owned) else {
        return Value::Object(map);
    };
    let transport = map
        .get("preferredTransport")
        .and_then(Value::as_str)
        .unwrap_or("JSONRPC")
        .to_owned();
    let version = map
        .get("protocolVersion")
        .and_then(Value::as_str)
        .unwrap_or("0.3")
        .to_owned();
    let mut implied =
        vec![json!({ "url": url, "protocolBinding": transport, "protocolVersion": version })];
    if let Some(Value::Array(more)) = map.get("additionalInterfaces") {
        for i in more {
            if let (Some(u), Some(t)) = (
                i.get("url").and_then(Value::as_str),
                i.get("transport").and_then(Value::as_str),
            ) {
                implied.push(
                    json!({ "url": u, "protocolBinding": t, "protocolVersion": version.clone() }),
                );
            }
        }
    }
    let listed = map
        .entry("supportedInterfaces")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(list) = listed {
        for i in implied {
            let known = list.iter().any(|l| {
                l.get("url") == i.get("url") && l.get("protocolBinding") == i.get("protocolBinding")
            });
            if !known {
                list.push(i);
            }
        }
    }
    Value::Object(map)
}

/// A 1.0 `SendMessageRequest` params object (`{"message", "configuration"?, "metadata"?}`) as
/// 0.3 `message/send` params: the message gains `kind: "message"`, its role and parts take
/// their 0.3 form, and `configuration.returnImmediately` becomes `blocking: false`.
pub fn send_params_to_v03(params: &Value) -> Value {
    let mut out = params.clone();
    if let Some(Value::Object(m)) = out.get_mut("message") {
        message_to_v03(m);
    }
    if let Some(Value::Object(c)) = out.get_mut("configuration") {
        if let Some(ret) = c.remove("returnImmediately") {
            c.insert("blocking".into(), json!(!ret.as_bool().unwrap_or(false)));
        }
        if let Some(Value::Object(push)) = c.remove("taskPushNotificationConfig") {
            c.insert("pushNotificationConfig".into(), Value::Object(push));
        }
    }
    out
}

fn message_to_v03(m: &mut Map<String, Value>) {
    m.insert("kind".into(), json!("message"));
    if let Some(role) = m.get("role").and_then(Value::as_str) {
        let v03 = match role {
            "ROLE_USER" => "user",
            _ => "agent",
        };
        m.insert("role".into(), json!(v03));
    }
    if let Some(Value::Array(parts)) = m.get_mut("parts") {
        for p in parts.iter_mut().filter_map(Value::as_object_mut) {
            if p.contains_key("text") {
                p.insert("kind".into(), json!("text"));
            } else if p.contains_key("data") {
                p.insert("kind".into(), json!("data"));
            } else {
                let mut file = Map::new();
                if let Some(u) = p.remove("url") {
                    file.insert("uri".into(), u);
                }
                if let Some(r) = p.remove("raw") {
                    file.insert("bytes".into(), r);
                }
                if let Some(t) = p.remove("mediaType") {
                    file.insert("mimeType".into(), t);
                }
                if let Some(n) = p.remove("filename") {
                    file.insert("name".into(), n);
                }
                p.insert("kind".into(), json!("file"));
                p.insert("file".into(), Value::Object(file));
            }
        }
    }
}

/// A 0.3 `message/send` or `tasks/get` result (a bare `Task` or `Message` with `kind`) as the 1.0
/// result shape (`{"task": …}` or `{"message": …}`); a result without `kind` is returned as it is.
pub fn result_to_v1(result: &Value) -> Value {
    match event_to_v1(result) {
        Some(v) => v,
        None => result.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{StreamResponse, TaskState};

    #[test]
    fn a_status_update_with_kind_becomes_a_stream_response() {
        let body = json!({ "kind": "status-update", "taskId": "t", "contextId": "c", "final": true,
            "status": { "state": "canceled", "timestamp": "2026-09-10T02:00:00Z" } });
        let v1 = event_to_v1(&body).expect("a 0.3 event");
        let StreamResponse::StatusUpdate(u) = StreamResponse::from_push_body(v1).unwrap() else {
            panic!("a status update")
        };
        assert_eq!(u.status.state, TaskState::Canceled);
        assert_eq!(u.task_id, "t");
    }

    #[test]
    fn a_1_0_body_is_not_a_0_3_event() {
        assert!(event_to_v1(&json!({ "statusUpdate": {} })).is_none());
        assert!(event_to_v1(&json!({ "kind": "other" })).is_none());
        assert!(
            event_to_v1(&json!({ "kind": "artifact-update", "artifactUpdate": {} })).is_none(),
            "a 1.0 member key decides"
        );
    }

    #[test]
    fn file_parts_and_roles_take_their_1_0_form() {
        let body = json!({ "kind": "message", "messageId": "m", "role": "agent", "parts": [
            { "kind": "file", "file": { "uri": "https://x/y.pdf", "mimeType": "application/pdf", "name": "y.pdf" } },
            { "kind": "text", "text": "hi" },
        ] });
        let v1 = event_to_v1(&body).unwrap();
        assert_eq!(
            v1,
            json!({ "message": { "messageId": "m", "role": "ROLE_AGENT", "parts": [
                { "url": "https://x/y.pdf", "mediaType": "application/pdf", "filename": "y.pdf" },
                { "text": "hi" },
            ] } })
        );
    }

    #[test]
    fn a_0_3_card_gains_supported_interfaces() {
        let card = card_to_v1(
            json!({ "name": "n", "url": "http://h/a2a", "preferredTransport": "JSONRPC", "protocolVersion": "0.3" }),
        );
        assert_eq!(
            card["supportedInterfaces"],
            json!([{ "url": "http://h/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3" }])
        );
        let hybrid = json!({ "url": "http://h/compat", "protocolVersion": "0.3",
            "supportedInterfaces": [
                { "url": "http://h/jsonrpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" },
                { "url": "http://h/compat", "protocolBinding": "JSONRPC", "protocolVersion": "0.3" } ] });
        assert_eq!(card_to_v1(hybrid.clone()), hybrid, "nothing to add");
    }

    #[test]
    fn send_params_take_the_0_3_form() {
        let params = json!({ "message": { "messageId": "lapse:e:overdue:t", "role": "ROLE_USER",
            "contextId": "c", "referenceTaskIds": ["t"], "parts": [ { "text": "Overdue" } ] },
            "configuration": { "returnImmediately": true } });
        assert_eq!(
            send_params_to_v03(&params),
            json!({ "message": { "messageId": "lapse:e:overdue:t", "role": "user", "kind": "message",
                "contextId": "c", "referenceTaskIds": ["t"], "parts": [ { "text": "Overdue", "kind": "text" } ] },
                "configuration": { "blocking": false } })
        );
    }
}
