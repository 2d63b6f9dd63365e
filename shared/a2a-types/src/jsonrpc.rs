//! JSON-RPC 2.0 envelope and A2A error classification (a2a-v1.md §1, §4).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::serde_util::present_value;

/// The `jsonrpc` member value.
pub const JSONRPC_VERSION: &str = "2.0";

fn jsonrpc_version() -> String {
    JSONRPC_VERSION.to_owned()
}

/// Error codes used by A2A 1.0 over JSON-RPC (a2a-v1.md §4).
pub mod error_codes {
    /// Body is not JSON.
    pub const PARSE_ERROR: i64 = -32700;
    /// Not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method (incl. 0.3 names on a 1.0-only endpoint).
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Bad or missing params.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Server fault.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// Unknown, inaccessible or purged task (or push config).
    pub const TASK_NOT_FOUND: i64 = -32001;
    /// Cancel on a terminal task.
    pub const TASK_NOT_CANCELABLE: i64 = -32002;
    /// Push RPC without the `pushNotifications` capability.
    pub const PUSH_NOTIFICATION_NOT_SUPPORTED: i64 = -32003;
    /// Operation not supported (no streaming, terminal task, no extended card).
    pub const UNSUPPORTED_OPERATION: i64 = -32004;
    /// Unsupported media type in parts.
    pub const CONTENT_TYPE_NOT_SUPPORTED: i64 = -32005;
    /// The agent produced non-conforming data.
    pub const INVALID_AGENT_RESPONSE: i64 = -32006;
    /// Extended card declared but not configured.
    pub const EXTENDED_AGENT_CARD_NOT_CONFIGURED: i64 = -32007;
    /// A `required:true` extension was not activated by the client.
    pub const EXTENSION_SUPPORT_REQUIRED: i64 = -32008;
    /// The `A2A-Version` is not served.
    pub const VERSION_NOT_SUPPORTED: i64 = -32009;
}

/// `@type` of the `google.rpc.ErrorInfo` entry in `error.data` (a2a-v1.md §4).
pub const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// A JSON-RPC 2.0 request (a2a-v1.md §1).
///
/// Shape: `{"jsonrpc": "2.0", "id": string|number|null, "method": "SendMessage", "params": P}`.
/// Use `P = serde_json::Value` to inspect `method` before choosing the params
/// type, or `Option<P>` for methods whose `params` may be absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcRequest<P> {
    /// Always `"2.0"` (defaulted when absent).
    #[serde(default = "jsonrpc_version")]
    pub jsonrpc: String,
    /// Request id, echoed in the response.
    #[serde(default)]
    pub id: Value,
    /// PascalCase method name, see [`crate::methods`].
    pub method: String,
    /// The method's params object.
    pub params: P,
}

impl<P> JsonRpcRequest<P> {
    /// A `"2.0"` request.
    pub fn new(id: impl Into<Value>, method: impl Into<String>, params: P) -> Self {
        JsonRpcRequest {
            jsonrpc: jsonrpc_version(),
            id: id.into(),
            method: method.into(),
            params,
        }
    }
}

/// A JSON-RPC 2.0 response (a2a-v1.md §1), also each SSE `data:` payload.
///
/// Shape: `{"jsonrpc": "2.0", "id", "result": …}` or `{…, "error": JsonRpcError}`.
/// `result` is kept raw; decode it per method (e.g. `SendMessageResponse`,
/// `Task`, `StreamResponse`). An explicit `"result": null` (the
/// `DeleteTaskPushNotificationConfig` answer) is `Some(Value::Null)`; a missing
/// `result` is `None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcResponse {
    /// Always `"2.0"` (defaulted when absent).
    #[serde(default = "jsonrpc_version")]
    pub jsonrpc: String,
    /// Echo of the request id (`null` for parse errors).
    #[serde(default)]
    pub id: Value,
    /// The success value.
    #[serde(
        default,
        deserialize_with = "present_value",
        skip_serializing_if = "Option::is_none"
    )]
    pub result: Option<Value>,
    /// The failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<JsonRpcError>,
}

impl JsonRpcResponse {
    /// A success response.
    pub fn success(id: Value, result: Value) -> Self {
        JsonRpcResponse {
            jsonrpc: jsonrpc_version(),
            id,
            result: Some(result),
            error: None,
        }
    }

    /// An error response.
    pub fn failure(id: Value, error: JsonRpcError) -> Self {
        JsonRpcResponse {
            jsonrpc: jsonrpc_version(),
            id,
            result: None,
            error: Some(error),
        }
    }

    /// `Err(error)` if an error is present, else the result (`null` if absent).
    pub fn into_result(self) -> Result<Value, JsonRpcError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.result.unwrap_or(Value::Null)),
        }
    }
}

/// A JSON-RPC error object (a2a-v1.md §4).
///
/// Shape: `{"code": int, "message": string, "data"?: any}`. In 1.0 `data` is an
/// array of `@type` objects, normally including a `google.rpc.ErrorInfo`
/// (see [`JsonRpcError::reason`]); 0.3 peers send `null` or an object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JsonRpcError {
    /// Error code, see [`error_codes`].
    pub code: i64,
    /// Human-readable message.
    #[serde(default)]
    pub message: String,
    /// Structured details.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl JsonRpcError {
    /// An error without `data`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        JsonRpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Whether retrying the *same* request is pointless (a2a-v1.md §4).
    ///
    /// Permanent:
    /// - `-32700`, `-32600`, `-32601`, `-32602`: the request itself is malformed,
    ///   names an unknown method or has bad params; resending it unchanged gets
    ///   the same answer.
    /// - `-32001..=-32009`: A2A errors describe the task or the agent's declared
    ///   capabilities (task not found, not cancelable, push/operation/content
    ///   type/extension/version unsupported, extended card not configured, and
    ///   `-32006` invalid agent response). These are deterministic outcomes of
    ///   the request against the agent's state, not transient faults, so a retry
    ///   needs a different request (or a human).
    ///
    /// Retryable: `-32603` InternalError (a server fault, HTTP 500 equivalent)
    /// and every other code (implementation-defined `-32000`, the rest of the
    /// reserved `-32010..=-32099` range, anything unknown): without knowledge of
    /// the cause, treating it as transient errs on the side of not giving up.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self.code,
            -32009
                ..=-32001
                    | error_codes::PARSE_ERROR
                    | error_codes::INVALID_REQUEST
                    | error_codes::METHOD_NOT_FOUND
                    | error_codes::INVALID_PARAMS
        )
    }

    /// The `google.rpc.ErrorInfo.reason` from `data` (e.g. `"TASK_NOT_FOUND"`), if any.
    pub fn reason(&self) -> Option<&str> {
        self.data
            .as_ref()?
            .as_array()?
            .iter()
            .find(|d| d.get("@type").and_then(Value::as_str) == Some(ERROR_INFO_TYPE))?
            .get("reason")?
            .as_str()
    }
}

impl std::fmt::Display for JsonRpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "JSON-RPC error {}: {}", self.code, self.message)?;
        if let Some(reason) = self.reason() {
            write!(f, " ({reason})")?;
        }
        Ok(())
    }
}

impl std::error::Error for JsonRpcError {}
