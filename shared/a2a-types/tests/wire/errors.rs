//! JSON-RPC errors: codes, reasons, permanence.

use super::*;

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
