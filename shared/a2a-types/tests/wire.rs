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

#[test]
fn every_wire_fixture_parses_as_its_type() {
    let mut names: Vec<String> = fs::read_dir(WIRE_DIR)
        .expect("fixtures dir")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 60,
        "only {} fixtures found in {WIRE_DIR}",
        names.len()
    );

    let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for name in &names {
        match parse_fixture(name) {
            Ok(kind) => *kinds.entry(kind).or_default() += 1,
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "fixture failures:\n{}",
        failures.join("\n")
    );
    assert_eq!(kinds.values().sum::<usize>(), names.len());
    assert_eq!(kinds.get("AgentCard"), Some(&2));
    assert_eq!(kinds.get("push body"), Some(&5));
    assert_eq!(kinds.get("sse events"), Some(&2));
    assert_eq!(kinds.get("JSON-RPC error"), Some(&10), "{kinds:?}");
    assert_eq!(kinds.get("SendMessageResponse"), Some(&7));
    assert_eq!(kinds.get("SendMessageRequest"), Some(&9));
    assert_eq!(kinds.get("invalid-params"), Some(&1));
    assert_eq!(kinds.get("v0.3 Task"), Some(&1));
}

// ---------------------------------------------------------------- agent card

#[test]
fn agent_card_01_values() {
    let card: AgentCard = typed("01", load("01-agent-card.json"));
    assert_eq!(card.name, "Capture Agent");
    assert_eq!(card.version, "0.0.1");
    let iface = card.jsonrpc_interface().expect("jsonrpc interface");
    assert_eq!(iface.url, "http://127.0.0.1:41241/a2a/jsonrpc");
    assert_eq!(iface.protocol_version, "1.0");
    assert_eq!(iface.tenant, None);
    assert_eq!(card.capabilities.streaming, Some(true));
    assert_eq!(card.capabilities.push_notifications, Some(true));
    assert_eq!(card.capabilities.extended_agent_card, None);
    let ext = card
        .extension("https://example.com/ext/demo/v1")
        .expect("extension");
    assert!(!ext.required, "missing required == false");
    assert_eq!(ext.description.as_deref(), Some("demo extension"));
    assert!(card.extension("https://example.com/ext/other").is_none());
    let skill = card.skill("echo").expect("skill");
    assert_eq!(skill.examples, ["hello"]);
    assert_eq!(skill.tags, ["echo"]);
    assert!(card.skill("nope").is_none());
    assert_eq!(
        card.provider.as_ref().map(|p| p.organization.as_str()),
        Some("capture")
    );
    assert_eq!(card.default_output_modes, ["text/plain"]);
}

#[test]
fn agent_card_01b_hybrid_uses_the_1_0_interface() {
    let card: AgentCard = typed("01b", load("01b-agent-card-hybrid-1.0-plus-0.3.json"));
    assert_eq!(card.supported_interfaces.len(), 2);
    let iface = card.jsonrpc_interface().expect("jsonrpc interface");
    assert_eq!(iface.url, "http://127.0.0.1:41243/a2a/jsonrpc");
    assert_eq!(iface.protocol_version, "1.0");
    // Explicit "required": false decodes like the omitted one.
    assert_eq!(
        card.extension("https://example.com/ext/demo/v1")
            .map(|e| e.required),
        Some(false)
    );
    let out = to_json(&card);
    for legacy in ["url", "preferredTransport", "protocolVersion"] {
        assert!(out.get(legacy).is_none(), "legacy key {legacy} re-emitted");
    }
}

#[test]
fn jsonrpc_interface_skips_other_bindings_and_versions() {
    let card: AgentCard = typed(
        "card",
        json!({
            "name": "n", "description": "d", "version": "1",
            "capabilities": {},
            "supportedInterfaces": [
                {"url": "http://a/compat", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
                {"url": "http://a/grpc", "protocolBinding": "GRPC", "protocolVersion": "1.0"},
                {"url": "http://a/rpc", "protocolBinding": "JSONRPC", "protocolVersion": "1.1", "tenant": "t1"},
                {"url": "http://a/rpc2", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
            ],
            "securitySchemes": {"bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer"}}},
            "securityRequirements": [{"schemes": {"bearer": {"list": []}}}]
        }),
    );
    let iface = card.jsonrpc_interface().expect("interface");
    assert_eq!(iface.url, "http://a/rpc");
    assert_eq!(iface.tenant.as_deref(), Some("t1"));
    assert!(card
        .security_schemes
        .as_ref()
        .is_some_and(|s| s.contains_key("bearer")));
    assert_eq!(card.security_requirements.as_ref().map(Vec::len), Some(1));

    let none: AgentCard = typed(
        "card",
        json!({"name": "n", "description": "d", "version": "1", "capabilities": {},
               "supportedInterfaces": [{"url": "u", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"}]}),
    );
    assert!(none.jsonrpc_interface().is_none());
}

// ---------------------------------------------------------------- SendMessage

#[test]
fn send_message_02_request_and_response() {
    let (method, params): (String, SendMessageRequest) =
        request_params("02-send-message.request.json");
    assert_eq!(method, methods::SEND_MESSAGE);
    let msg = &params.message;
    assert_eq!(msg.message_id, "msg-0001");
    assert_eq!(msg.role, Role::User);
    assert_eq!(msg.parts, [Part::text("hello agent")]);
    assert_eq!(msg.extensions, ["https://example.com/ext/demo/v1"]);
    let meta = msg.metadata.as_ref().expect("metadata");
    assert_eq!(
        meta["https://example.com/ext/demo/v1"],
        json!({"demo": true})
    );
    let config = params.configuration.as_ref().expect("configuration");
    assert_eq!(config.accepted_output_modes, ["text/plain"]);
    assert_eq!(config.history_length, Some(10));
    assert_eq!(config.return_immediately, None);
    assert!(config.task_push_notification_config.is_none());

    let task = send_message_task("02-send-message.response.json");
    assert_eq!(task.id, "eeea7f04-b953-4f99-99b7-a576e307ac6f");
    assert_eq!(
        task.context_id.as_deref(),
        Some("58e94865-262d-4417-9b88-5290a9ab3f9a")
    );
    assert_eq!(task.state(), TaskState::Completed);
    assert_eq!(
        task.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:30.366186Z")
    );
    let artifact = task.artifact("artifact-1").expect("artifact");
    assert_eq!(artifact.name.as_deref(), Some("result"));
    assert_eq!(artifact.parts[0].as_text(), Some("echo: hello agent"));
    let roles: Vec<Role> = task.history.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::User, Role::Agent]);
    assert_eq!(task.history[1].text(), "working...");
}

#[test]
fn get_task_03_is_the_same_task_as_02() {
    let (method, params): (String, GetTaskRequest) = request_params("03-get-task.request.json");
    assert_eq!(method, methods::GET_TASK);
    assert_eq!(params.history_length, Some(5));
    let task: Task = typed("03", result_of("03-get-task.response.json"));
    assert_eq!(task.id, params.id);
    assert_eq!(task, send_message_task("02-send-message.response.json"));
}

#[test]
fn list_tasks_05_normalises_explicit_defaults() {
    let list: ListTasksResponse = typed("05", result_of("05-list-tasks.response.json"));
    assert_eq!(list.next_page_token, None, "\"\" next page token is absent");
    assert_eq!(list.page_size, Some(10));
    assert_eq!(list.total_size, Some(1));
    assert_eq!(list.tasks.len(), 1);
    let listed = &list.tasks[0];
    let part = &listed.history[0].parts[0];
    assert_eq!(part.filename, None);
    assert_eq!(part.media_type, None);
    assert!(listed.history[1].extensions.is_empty());
    assert!(listed.artifacts.is_empty(), "includeArtifacts absent");
    // Same history as GetTask, once the explicit empties are normalised.
    let got: Task = typed("03", result_of("03-get-task.response.json"));
    assert_eq!(listed.history, got.history);
}

#[test]
fn send_message_06_inline_push_config() {
    let (_, params): (String, SendMessageRequest) =
        request_params("06-send-message-with-push-config.request.json");
    let cfg = params
        .configuration
        .and_then(|c| c.task_push_notification_config)
        .expect("push config");
    assert_eq!(cfg.url, "http://127.0.0.1:41242/webhook");
    assert_eq!(cfg.token.as_deref(), Some("client-token-abc"));
    assert_eq!(cfg.task_id, None);
    assert_eq!(cfg.id, None);
    let auth = cfg.authentication.expect("authentication");
    assert_eq!(auth.scheme, "Bearer");
    assert_eq!(auth.credentials.as_deref(), Some("secret-cred-xyz"));

    let task = send_message_task("06-send-message-with-push-config.response.json");
    assert_eq!(task.id, TASK_06);
    assert_eq!(task.state(), TaskState::Completed);
}

#[test]
fn send_message_08_return_immediately() {
    let (_, params): (String, SendMessageRequest) =
        request_params("08-send-message-return-immediately.request.json");
    assert_eq!(
        params.configuration.and_then(|c| c.return_immediately),
        Some(true)
    );
    let task = send_message_task("08-send-message-return-immediately.response.json");
    assert_eq!(task.state(), TaskState::Submitted);
    assert_eq!(task.status.timestamp, None);
    assert_eq!(task.history.len(), 1);
}

#[test]
fn send_message_24_all_part_kinds() {
    let (_, params): (String, SendMessageRequest) =
        request_params("24-send-message-all-part-kinds.request.json");
    let parts = &params.message.parts;
    assert_eq!(parts.len(), 4);
    assert_eq!(parts[0].content, PartContent::Text("with data".into()));
    assert_eq!(parts[1].content, PartContent::Data(json!({"k": [1, 2]})));
    assert_eq!(parts[1].media_type.as_deref(), Some("application/json"));
    assert_eq!(
        parts[2].content,
        PartContent::Url("https://example.com/a.pdf".into())
    );
    assert_eq!(parts[2].filename.as_deref(), Some("a.pdf"));
    assert_eq!(parts[2].media_type.as_deref(), Some("application/pdf"));
    assert_eq!(parts[3].content, PartContent::Raw("aGVsbG8=".into()));
    assert_eq!(parts[3].filename.as_deref(), Some("h.txt"));
    let keys: Vec<&str> = parts.iter().map(|p| p.content.key()).collect();
    assert_eq!(keys, ["text", "data", "url", "raw"]);

    let task = send_message_task("24-send-message-all-part-kinds.response.json");
    let echoed = &task.history[0].parts;
    assert_eq!(
        echoed[1].content,
        PartContent::Data(json!({"k": [1.0, 2.0]}))
    );
    assert_eq!(echoed[3], parts[3]);
}

#[test]
fn multi_turn_26_27_input_required_then_completed() {
    let first = send_message_task("26-multi-turn-1-input-required.response.json");
    assert_eq!(first.state(), TaskState::InputRequired);
    assert!(first.state().is_interrupted() && !first.state().is_terminal());
    let question = first.status.message.as_ref().expect("status message");
    assert_eq!(question.role, Role::Agent);
    assert_eq!(question.text(), "Which city?");

    let (_, params): (String, SendMessageRequest) =
        request_params("27-multi-turn-2-continue-task-historyLength0.request.json");
    assert_eq!(params.message.task_id.as_deref(), Some(first.id.as_str()));
    assert_eq!(params.message.context_id, first.context_id);
    assert_eq!(params.configuration.and_then(|c| c.history_length), Some(0));
    let second = send_message_task("27-multi-turn-2-continue-task-historyLength0.response.json");
    assert_eq!(second.id, first.id);
    assert_eq!(second.state(), TaskState::Completed);
    assert!(second.history.is_empty());
    assert_eq!(second.artifacts[0].parts[0].as_text(), Some("echo: Paris"));
}

#[test]
fn list_tasks_28_filtered_paged() {
    let (_, params): (String, ListTasksRequest) =
        request_params("28-list-tasks-filtered-paged.request.json");
    assert_eq!(params.status, Some(TaskState::Completed));
    assert_eq!(params.page_size, Some(2));
    assert_eq!(params.include_artifacts, Some(true));
    assert_eq!(params.history_length, Some(1));
    let list: ListTasksResponse = typed(
        "28",
        result_of("28-list-tasks-filtered-paged.response.json"),
    );
    assert_eq!(list.tasks.len(), 2);
    assert_eq!(list.total_size, Some(7));
    assert!(list
        .next_page_token
        .as_deref()
        .is_some_and(|t| t.starts_with("eyJ0cyI6")));
    let artifact = &list.tasks[0].artifacts[0];
    assert_eq!(artifact.description, None);
    assert!(artifact.extensions.is_empty());
    assert!(list.tasks.iter().all(|t| t.state() == TaskState::Completed));
}

// ---------------------------------------------------------------- push configs

#[test]
fn push_config_rpcs_09_to_14_and_30() {
    let (method, created): (String, TaskPushNotificationConfig) =
        request_params("09-create-push-config.request.json");
    assert_eq!(method, methods::CREATE_TASK_PUSH_NOTIFICATION_CONFIG);
    assert_eq!(created.id.as_deref(), Some("cfg-1"));
    assert_eq!(
        created.task_id.as_deref(),
        Some("2d13e502-be8a-4961-937e-5e059859174b")
    );
    let echoed: TaskPushNotificationConfig =
        typed("09", result_of("09-create-push-config.response.json"));
    assert_eq!(echoed, created);
    let got: TaskPushNotificationConfig =
        typed("10", result_of("10-get-push-config.response.json"));
    assert_eq!(got, created);

    let (_, get_params): (String, TaskPushNotificationConfigId) =
        request_params("10-get-push-config.request.json");
    assert_eq!(get_params.id, "cfg-1");
    let list: ListTaskPushNotificationConfigsResponse =
        typed("11", result_of("11-list-push-configs.response.json"));
    assert_eq!(list.configs, [created]);
    assert_eq!(list.next_page_token, None);

    let (method, _): (String, TaskPushNotificationConfigId) =
        request_params("14-delete-push-config.request.json");
    assert_eq!(method, methods::DELETE_TASK_PUSH_NOTIFICATION_CONFIG);
    let deleted: JsonRpcResponse = typed("14", load("14-delete-push-config.response.json"));
    assert_eq!(
        deleted.result,
        Some(Value::Null),
        "explicit null result kept"
    );
    assert_eq!(deleted.clone().into_result(), Ok(Value::Null));
    assert_eq!(to_json(&deleted)["result"], Value::Null);
    assert!(to_json(&deleted)
        .as_object()
        .is_some_and(|o| o.contains_key("result")));

    let inline: ListTaskPushNotificationConfigsResponse = typed(
        "30",
        result_of("30-list-push-configs-created-inline.response.json"),
    );
    assert_eq!(inline.configs[0].id.as_deref(), Some(TASK_06));
    assert_eq!(inline.configs[0].token.as_deref(), Some("client-token-abc"));
}

#[test]
fn cancel_12_and_push_13() {
    let task: Task = typed("12", result_of("12-cancel-task-running.response.json"));
    assert_eq!(task.state(), TaskState::Canceled);
    assert!(task.state().is_terminal());
    match push_body("13-push-webhook-post-after-cancel-statusUpdate.json") {
        StreamResponse::StatusUpdate(e) => {
            assert_eq!(e.task_id, task.id);
            assert_eq!(e.status.state, TaskState::Canceled);
            assert_eq!(e.status.timestamp, task.status.timestamp);
        }
        other => panic!("expected statusUpdate, got {other:?}"),
    }
}

// ---------------------------------------------------------------- push bodies

#[test]
fn push_webhook_07_sequence() {
    let events: Vec<StreamResponse> = [
        "07-push-webhook-post-1-task.json",
        "07-push-webhook-post-2-statusUpdate.json",
        "07-push-webhook-post-3-artifactUpdate.json",
        "07-push-webhook-post-4-statusUpdate.json",
    ]
    .into_iter()
    .map(push_body)
    .collect();
    let members: Vec<&str> = events.iter().map(StreamResponse::member_name).collect();
    assert_eq!(
        members,
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    );
    assert!(events.iter().all(|e| e.task_id() == Some(TASK_06)));
    assert!(events.iter().all(|e| e.context_id() == Some(CONTEXT_06)));

    let StreamResponse::Task(task) = &events[0] else {
        panic!("not a task")
    };
    assert_eq!(task.state(), TaskState::Submitted);
    assert_eq!(task.status.timestamp, None);
    assert_eq!(task.history[0].message_id, "msg-0002");

    let StreamResponse::StatusUpdate(working) = &events[1] else {
        panic!("not a statusUpdate")
    };
    assert_eq!(working.status.state, TaskState::Working);
    assert_eq!(
        working.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:30.476696Z")
    );
    let msg = working.status.message.as_ref().expect("status message");
    assert_eq!((msg.role, msg.text().as_str()), (Role::Agent, "working..."));

    let StreamResponse::ArtifactUpdate(art) = &events[2] else {
        panic!("not an artifactUpdate")
    };
    assert_eq!(art.last_chunk, Some(true));
    assert_eq!(art.append, None);
    assert_eq!(art.artifact.artifact_id, "artifact-1");
    assert_eq!(art.artifact.parts[0].as_text(), Some("echo: push please"));

    let StreamResponse::StatusUpdate(done) = &events[3] else {
        panic!("not a statusUpdate")
    };
    assert_eq!(done.status.state, TaskState::Completed);
    assert_eq!(
        done.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:30.476790Z")
    );
    assert_eq!(done.status.message, None);
    assert_eq!(
        events[3].status().map(|s| s.state),
        Some(TaskState::Completed)
    );
}

#[test]
fn from_push_body_accepts_a_bare_task() {
    let mut body = load("07-push-webhook-post-1-task.json")["task"].clone();
    body["kind"] = json!("task"); // unknown sibling keys are ignored
    match StreamResponse::from_push_body(body) {
        Ok(StreamResponse::Task(t)) => {
            assert_eq!(t.id, TASK_06);
            assert_eq!(t.state(), TaskState::Submitted);
        }
        other => panic!("bare task not accepted: {other:?}"),
    }
}

#[test]
fn from_push_body_ignores_unknown_sibling_keys() {
    let mut body = load("07-push-webhook-post-4-statusUpdate.json");
    body["bogusField"] = json!({"x": 1});
    body["task"] = Value::Null; // null member counts as absent
    let event = StreamResponse::from_push_body(body).expect("decodes");
    assert_eq!(event.member_name(), "statusUpdate");
}

#[test]
fn from_push_body_errors_name_the_problem() {
    let update = load("07-push-webhook-post-4-statusUpdate.json")["statusUpdate"].clone();
    let task = load("07-push-webhook-post-1-task.json")["task"].clone();

    let two =
        StreamResponse::from_push_body(json!({"task": task, "statusUpdate": update})).unwrap_err();
    let text = two.to_string();
    assert!(
        text.contains("expected exactly one of task, message, statusUpdate, artifactUpdate"),
        "{text}"
    );
    assert!(text.contains("found task and statusUpdate"), "{text}");

    let none = StreamResponse::from_push_body(json!({"foo": 1})).unwrap_err();
    let text = none.to_string();
    assert!(
        text.contains("expected exactly one of task, message, statusUpdate, artifactUpdate"),
        "{text}"
    );
    assert!(text.contains("found none"), "{text}");

    let array = StreamResponse::from_push_body(json!([1])).unwrap_err();
    assert_eq!(
        array.to_string(),
        "StreamResponse must be a JSON object, found an array"
    );

    let mut missing_state = update.clone();
    missing_state["status"]
        .as_object_mut()
        .expect("status")
        .remove("state");
    let bad = StreamResponse::from_push_body(json!({ "statusUpdate": missing_state })).unwrap_err();
    let text = bad.to_string();
    assert!(text.starts_with("StreamResponse.statusUpdate: "), "{text}");
    assert!(text.contains("missing field `state`"), "{text}");
    assert!(matches!(
        bad,
        PushBodyError::InvalidMember {
            member: "statusUpdate",
            ..
        }
    ));

    // A ProtoJSON enum number is a state (serve.md "Routes"): 3 is TASK_STATE_COMPLETED.
    let mut numbered = update;
    numbered["status"]["state"] = json!(3);
    let StreamResponse::StatusUpdate(u) =
        StreamResponse::from_push_body(json!({ "statusUpdate": numbered })).unwrap()
    else {
        panic!("a status update")
    };
    assert_eq!(u.status.state, TaskState::Completed);

    let bad_bare = StreamResponse::from_push_body(json!({"id": "t", "status": {}})).unwrap_err();
    assert!(
        matches!(bad_bare, PushBodyError::InvalidBareTask { .. }),
        "{bad_bare}"
    );
    assert!(
        bad_bare.to_string().contains("missing field `state`"),
        "{bad_bare}"
    );
}

#[test]
fn strict_stream_response_rejects_bare_task_and_two_members() {
    let task = load("07-push-webhook-post-1-task.json")["task"].clone();
    let err = serde_json::from_value::<StreamResponse>(task)
        .unwrap_err()
        .to_string();
    assert!(err.contains("found none"), "{err}");
    let err = serde_json::from_str::<StreamResponse>(r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]},"artifactUpdate":{}}"#)
        .unwrap_err()
        .to_string();
    assert!(err.contains("found message and artifactUpdate"), "{err}");
    let ok: StreamResponse = serde_json::from_str(
        r#"{"message":{"messageId":"m","role":"ROLE_AGENT","parts":[{"text":"x"}]},"extra":true}"#,
    )
    .expect("message event");
    assert_eq!(ok.task_id(), None);
}

// ---------------------------------------------------------------- SSE

fn sse_events(name: &str) -> Vec<StreamResponse> {
    let responses: Vec<JsonRpcResponse> = typed(name, load(name));
    responses
        .into_iter()
        .map(|r| typed(name, r.into_result().expect("no error")))
        .collect()
}

#[test]
fn sse_15_send_streaming_message() {
    let events = sse_events("15-send-streaming-message.sse-events.json");
    let members: Vec<&str> = events.iter().map(StreamResponse::member_name).collect();
    assert_eq!(
        members,
        ["task", "statusUpdate", "artifactUpdate", "statusUpdate"]
    );
    let states: Vec<TaskState> = events
        .iter()
        .filter_map(|e| e.status().map(|s| s.state))
        .collect();
    assert_eq!(
        states,
        [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed
        ]
    );
    assert!(events
        .iter()
        .all(|e| e.task_id() == Some("f0b35446-4efa-4d26-9a0c-9be3725aa3d2")));
}

#[test]
fn sse_17_subscribe_running_task() {
    let events = sse_events("17-subscribe-running-task.sse-events.json");
    assert_eq!(events.len(), 2);
    let StreamResponse::Task(snapshot) = &events[0] else {
        panic!("first event must be a task")
    };
    assert_eq!(snapshot.state(), TaskState::Working);
    assert_eq!(
        snapshot.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:34.380074Z")
    );
    let StreamResponse::StatusUpdate(last) = &events[1] else {
        panic!("statusUpdate expected")
    };
    assert_eq!(last.status.state, TaskState::Canceled);
    assert_eq!(
        last.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:35.764228Z")
    );
}

// ---------------------------------------------------------------- errors

#[test]
fn error_fixtures_codes_reasons_and_classification() {
    let cases: [(&str, i64, Option<&str>); 11] = [
        (
            "04-cancel-task-completed-error.response.json",
            -32002,
            Some("TASK_NOT_CANCELABLE"),
        ),
        (
            "16-subscribe-terminal-task-error.response.json",
            -32004,
            Some("UNSUPPORTED_OPERATION"),
        ),
        (
            "18-error-missing-a2a-version-header.response.json",
            -32009,
            Some("VERSION_NOT_SUPPORTED"),
        ),
        (
            "19-error-task-not-found.response.json",
            -32001,
            Some("TASK_NOT_FOUND"),
        ),
        (
            "20-error-v03-method-name-on-v10-endpoint.response.json",
            -32601,
            None,
        ),
        (
            "21-error-invalid-params.response.json",
            -32602,
            Some("INVALID_PARAMS"),
        ),
        (
            "22-error-extended-card-unsupported.response.json",
            -32004,
            Some("UNSUPPORTED_OPERATION"),
        ),
        ("23-error-parse-error.response.json", -32700, None),
        (
            "29-error-send-to-terminal-task.response.json",
            -32004,
            Some("UNSUPPORTED_OPERATION"),
        ),
        (
            "32-v03-compat-task-not-found-error.response.json",
            -32001,
            None,
        ),
        (
            "21-error-invalid-params.response.json",
            error_codes::INVALID_PARAMS,
            Some("INVALID_PARAMS"),
        ),
    ];
    for (name, code, reason) in cases {
        let error = error_of(name);
        assert_eq!(error.code, code, "{name}");
        assert_eq!(error.reason(), reason, "{name}");
        assert!(error.is_permanent(), "{name} should be permanent");
    }
    assert_eq!(
        error_of("19-error-task-not-found.response.json").message,
        "Task not found"
    );
    assert_eq!(
        error_of("32-v03-compat-task-not-found-error.response.json").data,
        None
    );
    let parse: JsonRpcResponse = typed("23", load("23-error-parse-error.response.json"));
    assert_eq!(parse.id, Value::Null);
    let display = error_of("19-error-task-not-found.response.json").to_string();
    assert_eq!(
        display,
        "JSON-RPC error -32001: Task not found (TASK_NOT_FOUND)"
    );
}

#[test]
fn error_permanence_classification() {
    for code in [-32700, -32600, -32601, -32602, -32001, -32005, -32009] {
        assert!(JsonRpcError::new(code, "x").is_permanent(), "{code}");
    }
    for code in [-32603, -32000, -32010, -32099, -1, 0, 500] {
        assert!(!JsonRpcError::new(code, "x").is_permanent(), "{code}");
    }
}

#[test]
fn invalid_params_21_request_is_rejected_with_field_name() {
    let req: JsonRpcRequest<Value> = typed("21", load("21-error-invalid-params.request.json"));
    let err = serde_json::from_value::<SendMessageRequest>(req.params)
        .unwrap_err()
        .to_string();
    assert!(err.contains("missing field `messageId`"), "{err}");
}

// ---------------------------------------------------------------- 0.3 compat

/// serve.md "Routes": the 1.0 names, the ProtoJSON enum numbers and the 0.3 names all mean the
/// same state.
#[test]
fn every_wire_form_of_a_state_means_the_same_state() {
    let forms = [
        ("TASK_STATE_SUBMITTED", 1, "submitted", TaskState::Submitted),
        ("TASK_STATE_WORKING", 2, "working", TaskState::Working),
        ("TASK_STATE_COMPLETED", 3, "completed", TaskState::Completed),
        ("TASK_STATE_FAILED", 4, "failed", TaskState::Failed),
        ("TASK_STATE_CANCELED", 5, "canceled", TaskState::Canceled),
        (
            "TASK_STATE_INPUT_REQUIRED",
            6,
            "input-required",
            TaskState::InputRequired,
        ),
        ("TASK_STATE_REJECTED", 7, "rejected", TaskState::Rejected),
        (
            "TASK_STATE_AUTH_REQUIRED",
            8,
            "auth-required",
            TaskState::AuthRequired,
        ),
    ];
    for (name, number, v03, want) in forms {
        assert_eq!(typed::<TaskState>(name, json!(name)), want);
        assert_eq!(typed::<TaskState>(name, json!(number)), want, "{number}");
        assert_eq!(typed::<TaskState>(name, json!(v03)), want, "{v03}");
        assert_eq!(
            serde_json::to_value(want).unwrap(),
            json!(name),
            "written as the 1.0 name"
        );
    }
}

#[test]
fn v03_payloads_decode_leniently() {
    let (method, params): (String, SendMessageRequest) =
        request_params("31-v03-compat-message-send.request.json");
    assert_eq!(method, "message/send");
    assert_eq!(
        params.message.role,
        Role::Unspecified,
        "\"user\" is not a 1.0 role"
    );
    assert_eq!(
        params.message.parts,
        [Part::text("hi from 0.3")],
        "`kind` ignored"
    );
    let task: Task = typed("31", result_of("31-v03-compat-message-send.response.json"));
    assert_eq!(task.id, "ef1d5fe9-4d54-4e18-b989-448686eb81b4");
    assert_eq!(
        task.state(),
        TaskState::Completed,
        "\"completed\" is the 0.3 name of TASK_STATE_COMPLETED"
    );
    assert_eq!(
        task.status.timestamp.as_deref(),
        Some("2026-11-29T11:02:18.851132Z")
    );
    assert!(task.history.iter().all(|m| m.role == Role::Unspecified));
}

#[test]
fn headers_fixture_names_the_notification_token_header() {
    let headers = load("headers.json");
    let names: Vec<&str> = headers["07-push-webhook-post"]["headers"]
        .as_array()
        .expect("header list")
        .iter()
        .filter_map(|h| h[0].as_str())
        .collect();
    assert!(names
        .iter()
        .any(|n| n.eq_ignore_ascii_case(NOTIFICATION_TOKEN_HEADER)));
    let request = &headers["02-send-message"]["request"]["headers"];
    let version = request
        .as_array()
        .expect("headers")
        .iter()
        .find(|h| {
            h[0].as_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(A2A_VERSION_HEADER))
        })
        .and_then(|h| h[1].as_str());
    assert_eq!(version, Some(A2A_VERSION));
}

// ---------------------------------------------------------------- leniency

#[test]
fn empty_strings_are_absent() {
    let msg: Message = typed(
        "msg",
        json!({"messageId": "m", "contextId": "", "taskId": "", "role": "ROLE_USER",
               "parts": [{"text": "", "filename": "", "mediaType": ""}]}),
    );
    assert_eq!(msg.context_id, None);
    assert_eq!(msg.task_id, None);
    assert_eq!(
        msg.parts[0].content,
        PartContent::Text(String::new()),
        "empty text is still content"
    );
    assert_eq!(msg.parts[0].filename, None);
    assert_eq!(msg.parts[0].media_type, None);

    let task: Task = typed(
        "task",
        json!({"id": "t", "contextId": "", "status": {"state": "TASK_STATE_WORKING", "timestamp": ""}}),
    );
    assert_eq!(task.context_id, None);
    assert_eq!(task.status.timestamp, None);

    let cfg: TaskPushNotificationConfig = typed(
        "cfg",
        json!({"url": "http://x", "token": "", "id": "", "taskId": "", "tenant": ""}),
    );
    assert_eq!(cfg, TaskPushNotificationConfig::new("http://x"));
    assert_eq!(to_json(&cfg), json!({"url": "http://x"}));

    let wrapped: Option<String> =
        empty_string_as_none(&mut serde_json::Deserializer::from_str("\"\"")).expect("ok");
    assert_eq!(wrapped, None);
}

#[test]
fn unknown_fields_are_ignored() {
    let task: Task = typed(
        "task",
        json!({"id": "t", "kind": "task", "bogusField": [1, 2],
               "status": {"state": "TASK_STATE_FAILED", "future": {}},
               "history": [{"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "x", "extra": 1}], "kind": "message"}]}),
    );
    assert_eq!(task.state(), TaskState::Failed);
    assert_eq!(task.history[0].parts[0].as_text(), Some("x"));
    let card_ext: AgentExtension = typed("ext", json!({"uri": "u", "required": true, "later": 1}));
    assert!(card_ext.required);
}

#[test]
fn unknown_enum_strings_become_unspecified() {
    for (raw, want) in [
        ("TASK_STATE_PAUSED", TaskState::Unspecified),
        ("paused", TaskState::Unspecified),
        ("Canceled", TaskState::Unspecified),
        ("task_state_canceled", TaskState::Unspecified),
        ("TASK_STATE_UNSPECIFIED", TaskState::Unspecified),
        ("TASK_STATE_AUTH_REQUIRED", TaskState::AuthRequired),
    ] {
        assert_eq!(typed::<TaskState>(raw, json!(raw)), want, "{raw}");
    }
    for bad in [
        json!(0),
        json!(9),
        json!(-1),
        json!(2.5),
        json!(true),
        json!(null),
    ] {
        assert_eq!(
            typed::<TaskState>("state", bad.clone()),
            TaskState::Unspecified,
            "{bad}"
        );
    }
    assert_eq!(typed::<Role>("role", json!("user")), Role::Unspecified);
    assert_eq!(
        typed::<Role>("role", json!("ROLE_ROBOT")),
        Role::Unspecified
    );
    assert_eq!(typed::<Role>("role", json!("ROLE_AGENT")), Role::Agent);
    let list: ListTasksRequest = typed("list", json!({"status": "paused"}));
    assert_eq!(list.status, Some(TaskState::Unspecified));
}

#[test]
fn task_state_methods_and_strings() {
    for state in ALL_STATES {
        assert_eq!(to_json(&state), json!(state.as_str()));
        assert_eq!(state.to_string(), state.as_str());
        assert_eq!(TaskState::from_wire_str(state.as_str()), state);
        assert_eq!(typed::<TaskState>("state", json!(state.as_str())), state);
        let classes = [
            state.is_terminal(),
            state.is_interrupted(),
            state.is_active(),
        ];
        let expected = usize::from(state != TaskState::Unspecified);
        assert_eq!(classes.iter().filter(|c| **c).count(), expected, "{state}");
    }
    let terminal: Vec<TaskState> = ALL_STATES.into_iter().filter(|s| s.is_terminal()).collect();
    assert_eq!(terminal, TERMINAL_STATES);
    assert_eq!(
        TERMINAL_STATES.map(TaskState::as_str),
        [
            "TASK_STATE_COMPLETED",
            "TASK_STATE_FAILED",
            "TASK_STATE_CANCELED",
            "TASK_STATE_REJECTED"
        ]
    );
    assert!(TaskState::InputRequired.is_interrupted() && TaskState::AuthRequired.is_interrupted());
    assert_eq!(TaskState::from_wire_str("canceled"), TaskState::Unspecified);
    assert_eq!(Role::User.to_string(), "ROLE_USER");
    assert_eq!(TaskState::default(), TaskState::Unspecified);
}

#[test]
fn part_oneof_is_enforced() {
    let err = serde_json::from_value::<Part>(json!({"mediaType": "text/plain"}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected exactly one of text, raw, url, data; found none"),
        "{err}"
    );
    let err = serde_json::from_value::<Part>(json!({"text": "a", "url": "http://x"}))
        .unwrap_err()
        .to_string();
    assert!(err.contains("found text and url"), "{err}");
    let err = serde_json::from_str::<Message>(
        r#"{"messageId":"m","role":"ROLE_USER","parts":[{"filename":"f"}]}"#,
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("found none"), "{err}");
    let null_data: Part = typed("part", json!({"data": null}));
    assert_eq!(null_data.content, PartContent::Data(Value::Null));
    assert_eq!(to_json(&null_data), json!({"data": null}));
}

#[test]
fn send_message_response_oneof_is_enforced() {
    let task = load("07-push-webhook-post-1-task.json")["task"].clone();
    let err = serde_json::from_value::<SendMessageResponse>(task.clone())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected exactly one of task, message; found none"),
        "{err}"
    );
    let msg = json!({"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]});
    let err = serde_json::from_value::<SendMessageResponse>(
        json!({"task": task, "message": msg.clone()}),
    )
    .unwrap_err()
    .to_string();
    assert!(err.contains("found task and message"), "{err}");
    let reply: SendMessageResponse = typed("reply", json!({"message": msg, "other": 1}));
    assert!(reply.task().is_none());
    assert!(matches!(reply, SendMessageResponse::Message(ref m) if m.text() == "hi"));
    let err = serde_json::from_value::<SendMessageResponse>(json!({"task": {"id": "t"}}))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("SendMessageResponse.task: missing field `status`"),
        "{err}"
    );
}

// ---------------------------------------------------------------- encoding shapes

#[test]
fn part_serialises_as_single_content_key() {
    assert_eq!(to_json(&Part::text("hi")), json!({"text": "hi"}));
    let mut file = Part::url("https://x/a.pdf");
    file.filename = Some("a.pdf".into());
    file.media_type = Some("application/pdf".into());
    assert_eq!(
        to_json(&file),
        json!({"url": "https://x/a.pdf", "mediaType": "application/pdf", "filename": "a.pdf"})
    );
    let data = Part::data(json!({"k": 1}));
    assert_eq!(to_json(&data), json!({"data": {"k": 1}}));
    let back: Part = typed("part", to_json(&data));
    assert_eq!(back, data);
}

#[test]
fn stream_response_serialises_under_its_member_key() {
    let mut status = TaskStatus::new(TaskState::Completed);
    status.timestamp = Some("2026-11-29T11:02:30.476790Z".into());
    let event = StreamResponse::StatusUpdate(TaskStatusUpdateEvent {
        task_id: TASK_06.into(),
        context_id: CONTEXT_06.into(),
        status,
        metadata: None,
    });
    let encoded = to_json(&event);
    assert_eq!(encoded, load("07-push-webhook-post-4-statusUpdate.json"));
    assert_eq!(
        serde_json::to_string(&event).expect("string"),
        format!(
            r#"{{"statusUpdate":{{"taskId":"{TASK_06}","contextId":"{CONTEXT_06}","status":{{"state":"TASK_STATE_COMPLETED","timestamp":"2026-11-29T11:02:30.476790Z"}}}}}}"#
        )
    );
    assert_eq!(
        StreamResponse::from_push_body(encoded).expect("decodes"),
        event
    );
}

#[test]
fn send_message_response_serialises_under_task_key() {
    let task = Task {
        id: "t1".into(),
        context_id: Some("c1".into()),
        status: TaskStatus::new(TaskState::Submitted),
        artifacts: Vec::new(),
        history: vec![Message::new("m1", Role::User, vec![Part::text("hi")])],
        metadata: None,
    };
    let encoded = to_json(&SendMessageResponse::Task(task.clone()));
    assert_eq!(
        encoded,
        json!({"task": {"id": "t1", "contextId": "c1", "status": {"state": "TASK_STATE_SUBMITTED"},
                        "history": [{"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}]}})
    );
    assert_eq!(
        typed::<SendMessageResponse>("r", encoded),
        SendMessageResponse::Task(task)
    );
}

#[test]
fn request_envelope_serialises_like_the_sdk() {
    let mut request = SendMessageRequest::new(Message::new(
        "msg-0004",
        Role::User,
        vec![Part::text("stream me")],
    ));
    request.configuration = Some(SendMessageConfiguration::default());
    let envelope = JsonRpcRequest::new(
        "f7d2b781-f830-4c1e-9520-1a19bd98d3a6",
        methods::SEND_STREAMING_MESSAGE,
        request,
    );
    assert_eq!(
        to_json(&envelope),
        load("15-send-streaming-message.request.json")
    );

    let ext = AgentExtension {
        uri: "u".into(),
        description: None,
        required: false,
        params: None,
    };
    assert_eq!(to_json(&ext), json!({"uri": "u"}));
    let ext = AgentExtension {
        required: true,
        ..ext
    };
    assert_eq!(to_json(&ext), json!({"uri": "u", "required": true}));

    let ok = JsonRpcResponse::success(json!(7), json!({"task": {}}));
    assert_eq!(
        to_json(&ok),
        json!({"jsonrpc": "2.0", "id": 7, "result": {"task": {}}})
    );
    let err = JsonRpcResponse::failure(
        Value::Null,
        JsonRpcError::new(error_codes::PARSE_ERROR, "bad"),
    );
    assert_eq!(
        to_json(&err),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "bad"}})
    );
}
