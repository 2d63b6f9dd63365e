//! Wire tests over the captured a2a-sdk 1.3.0 payloads (tests/fixtures/wire,
//! described in shared/ref/wire/README.md) plus shape/edge-case tests.

use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;

use a2a_types::*;
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{json, Value};

const WIRE_DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/fixtures/wire");

const TASK_06: &str = "578199e1-e782-4f7b-af8e-ac2417d2ca27";
const CONTEXT_06: &str = "75ddaf4e-2404-42bb-b929-9a57f1fb6867";

fn load(name: &str) -> Value {
    let path = PathBuf::from(WIRE_DIR).join(name);
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} is not JSON: {e}"))
}

fn decode<T: DeserializeOwned>(what: &str, value: Value) -> Result<T, String> {
    serde_json::from_value(value).map_err(|e| format!("{what}: {e}"))
}

fn typed<T: DeserializeOwned>(what: &str, value: Value) -> T {
    decode(what, value).unwrap_or_else(|e| panic!("{e}"))
}

fn to_json<T: Serialize>(value: &T) -> Value {
    serde_json::to_value(value).expect("serialize")
}

fn result_of(name: &str) -> Value {
    let resp: JsonRpcResponse = typed(name, load(name));
    resp.into_result()
        .unwrap_or_else(|e| panic!("{name}: unexpected error {e}"))
}

fn error_of(name: &str) -> JsonRpcError {
    let resp: JsonRpcResponse = typed(name, load(name));
    assert!(resp.result.is_none(), "{name}: result next to error");
    resp.error.unwrap_or_else(|| panic!("{name}: no error"))
}

fn request_params<P: DeserializeOwned>(name: &str) -> (String, P) {
    let req: JsonRpcRequest<Value> = typed(name, load(name));
    (req.method, typed(name, req.params))
}

fn send_message_task(name: &str) -> Task {
    match typed::<SendMessageResponse>(name, result_of(name)) {
        SendMessageResponse::Task(t) => t,
        other => panic!("{name}: expected task, got {other:?}"),
    }
}

fn push_body(name: &str) -> StreamResponse {
    StreamResponse::from_push_body(load(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

/// Removes proto3 default values (`""`, `[]`, `false`) the a2a-sdk sometimes
/// emits explicitly, so the value can be compared with our canonical output.
fn strip_defaults(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !matches!(v, Value::String(s) if s.is_empty()));
            map.retain(|_, v| !matches!(v, Value::Array(a) if a.is_empty()));
            map.retain(|_, v| *v != Value::Bool(false));
            map.values_mut().for_each(strip_defaults);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_defaults),
        _ => {}
    }
}

/// Checks that decoding then encoding reproduces `original` (modulo the
/// explicit proto defaults some SDK paths emit).
fn check_round_trip<T: Serialize>(what: &str, original: &Value, decoded: &T) -> Result<(), String> {
    let mut expected = original.clone();
    strip_defaults(&mut expected);
    let actual = to_json(decoded);
    if actual == expected {
        Ok(())
    } else {
        Err(format!(
            "{what}: re-encoded value differs\n  expected {expected}\n  actual   {actual}"
        ))
    }
}

fn decode_checked<T: DeserializeOwned + Serialize>(
    what: &str,
    value: Value,
    round_trip: bool,
) -> Result<T, String> {
    let decoded: T = decode(what, value.clone())?;
    if round_trip {
        check_round_trip(what, &value, &decoded)?;
    }
    Ok(decoded)
}

/// Parses the params of a request according to its method; returns a label.
fn parse_params(name: &str, method: &str, params: Value) -> Result<&'static str, String> {
    let what = format!("{name} params");
    match method {
        methods::SEND_MESSAGE | methods::SEND_STREAMING_MESSAGE => {
            if name.starts_with("21-") {
                // 0.3-shaped message without messageId: must be rejected.
                return match decode::<SendMessageRequest>(&what, params) {
                    Err(e) if e.contains("messageId") => Ok("invalid-params"),
                    Err(e) => Err(format!("{what}: error does not name messageId: {e}")),
                    Ok(_) => Err(format!("{what}: message without messageId accepted")),
                };
            }
            decode_checked::<SendMessageRequest>(&what, params, true).map(|_| "SendMessageRequest")
        }
        methods::GET_TASK => {
            decode_checked::<GetTaskRequest>(&what, params, true).map(|_| "GetTaskRequest")
        }
        methods::CANCEL_TASK => {
            decode_checked::<CancelTaskRequest>(&what, params, true).map(|_| "CancelTaskRequest")
        }
        methods::LIST_TASKS => {
            decode_checked::<ListTasksRequest>(&what, params, true).map(|_| "ListTasksRequest")
        }
        methods::SUBSCRIBE_TO_TASK => decode_checked::<SubscribeToTaskRequest>(&what, params, true)
            .map(|_| "SubscribeToTaskRequest"),
        methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG => {
            decode_checked::<TaskPushNotificationConfig>(&what, params, true)
                .map(|_| "TaskPushNotificationConfig")
        }
        methods::GET_TASK_PUSH_NOTIFICATION_CONFIG
        | methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG => {
            decode_checked::<TaskPushNotificationConfigId>(&what, params, true)
                .map(|_| "TaskPushNotificationConfigId")
        }
        methods::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => {
            decode_checked::<ListTaskPushNotificationConfigsRequest>(&what, params, true)
                .map(|_| "ListTaskPushNotificationConfigsRequest")
        }
        methods::GET_EXTENDED_AGENT_CARD => {
            decode_checked::<GetExtendedAgentCardRequest>(&what, params, true)
                .map(|_| "GetExtendedAgentCardRequest")
        }
        m if m.contains('/') => Ok("v0.3 request"),
        m => Err(format!("{name}: unknown method {m}")),
    }
}

/// Parses a success `result` according to the request method; returns a label.
fn parse_result(name: &str, method: &str, result: Value) -> Result<&'static str, String> {
    let what = format!("{name} result");
    match method {
        methods::SEND_MESSAGE => decode_checked::<SendMessageResponse>(&what, result, true)
            .map(|_| "SendMessageResponse"),
        methods::GET_TASK | methods::CANCEL_TASK => {
            decode_checked::<Task>(&what, result, true).map(|_| "Task")
        }
        methods::LIST_TASKS => {
            decode_checked::<ListTasksResponse>(&what, result, true).map(|_| "ListTasksResponse")
        }
        methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG
        | methods::GET_TASK_PUSH_NOTIFICATION_CONFIG => {
            decode_checked::<TaskPushNotificationConfig>(&what, result, true)
                .map(|_| "TaskPushNotificationConfig")
        }
        methods::LIST_TASK_PUSH_NOTIFICATION_CONFIGS => {
            decode_checked::<ListTaskPushNotificationConfigsResponse>(&what, result, true)
                .map(|_| "ListTaskPushNotificationConfigsResponse")
        }
        methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG if result.is_null() => Ok("null"),
        methods::GET_EXTENDED_AGENT_CARD => {
            decode_checked::<AgentCard>(&what, result, true).map(|_| "AgentCard")
        }
        // 0.3 compat answers a bare Task with `kind` and lowercase enums:
        // lenient decoding still works (unknown strings -> Unspecified).
        "message/send" => decode_checked::<Task>(&what, result, false).map(|_| "v0.3 Task"),
        m => Err(format!("{what}: unexpected success for {m}")),
    }
}

fn request_method_for(name: &str, suffix: &str) -> Option<String> {
    let stem = name.strip_suffix(suffix)?;
    let path = PathBuf::from(WIRE_DIR).join(format!("{stem}.request.json"));
    if !path.exists() {
        return None;
    }
    let req: JsonRpcRequest<Value> = typed(name, load(&format!("{stem}.request.json")));
    Some(req.method)
}

/// Decodes one fixture file into the type its name/shape calls for.
fn parse_fixture(name: &str) -> Result<&'static str, String> {
    let value = load(name);
    if name == "headers.json" {
        let ok = value.get("07-push-webhook-post").is_some();
        return ok
            .then_some("headers")
            .ok_or_else(|| "headers.json: no webhook entry".to_owned());
    }
    if name.contains("agent-card") {
        // The hybrid card carries legacy 0.3 top-level keys we drop on purpose.
        let mut original = value.clone();
        if let Value::Object(map) = &mut original {
            for legacy in ["url", "preferredTransport", "protocolVersion"] {
                map.remove(legacy);
            }
        }
        let card: AgentCard = decode(name, value)?;
        check_round_trip(name, &original, &card)?;
        return Ok("AgentCard");
    }
    if name.contains("push-webhook") {
        let event =
            StreamResponse::from_push_body(value.clone()).map_err(|e| format!("{name}: {e}"))?;
        check_round_trip(name, &value, &event)?;
        return Ok("push body");
    }
    if name.ends_with(".request.json") {
        let req: JsonRpcRequest<Value> = decode(name, value)?;
        if req.jsonrpc != JSONRPC_VERSION {
            return Err(format!("{name}: jsonrpc {}", req.jsonrpc));
        }
        return parse_params(name, &req.method, req.params);
    }
    if name.ends_with(".sse-events.json") {
        let method = request_method_for(name, ".sse-events.json").ok_or("sse without request")?;
        if method != methods::SEND_STREAMING_MESSAGE && method != methods::SUBSCRIBE_TO_TASK {
            return Err(format!("{name}: SSE for {method}"));
        }
        let events: Vec<JsonRpcResponse> = decode(name, value)?;
        if events.is_empty() {
            return Err(format!("{name}: no events"));
        }
        for (i, event) in events.into_iter().enumerate() {
            let what = format!("{name}[{i}]");
            let result = event.into_result().map_err(|e| format!("{what}: {e}"))?;
            decode_checked::<StreamResponse>(&what, result, true)?;
        }
        return Ok("sse events");
    }
    if name.ends_with(".response.json") {
        let resp: JsonRpcResponse = decode(name, value.clone())?;
        // The envelope keeps `result` raw, so it must re-encode exactly
        // (except 0.3's `"data": null`, which decodes as absent).
        if to_json(&resp) != value && !name.contains("v03") {
            return Err(format!("{name}: envelope does not re-encode exactly"));
        }
        let method = request_method_for(name, ".response.json");
        return match (resp.into_result(), method) {
            (Err(error), _) if error.message.is_empty() => {
                Err(format!("{name}: empty error message"))
            }
            (Err(_), _) => Ok("JSON-RPC error"),
            (Ok(result), Some(method)) => parse_result(name, &method, result),
            (Ok(_), None) => Err(format!("{name}: success without a request")),
        };
    }
    Err(format!("{name}: unclassified fixture"))
}

mod agent_card;
mod encoding;
mod errors;
mod fixtures;
mod leniency;
mod push_bodies;
mod push_configs;
mod send_message;
mod sse;
mod v03_compat;
