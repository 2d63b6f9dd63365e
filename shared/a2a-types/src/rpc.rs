//! Method names and the params/results of the task RPCs (a2a-v1.md §1.1).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::serde_util::nonempty;
use crate::task::{Task, TaskState};

/// JSON-RPC method names of A2A 1.0 (a2a-v1.md §1.1): PascalCase, same as gRPC.
pub mod methods {
    /// `SendMessage`: `SendMessageRequest` → `SendMessageResponse`.
    pub const SEND_MESSAGE: &str = "SendMessage";
    /// `SendStreamingMessage`: `SendMessageRequest` → SSE of `StreamResponse`.
    pub const SEND_STREAMING_MESSAGE: &str = "SendStreamingMessage";
    /// `GetTask`: `GetTaskRequest` → `Task`.
    pub const GET_TASK: &str = "GetTask";
    /// `ListTasks`: `ListTasksRequest` → `ListTasksResponse`.
    pub const LIST_TASKS: &str = "ListTasks";
    /// `CancelTask`: `CancelTaskRequest` → `Task`.
    pub const CANCEL_TASK: &str = "CancelTask";
    /// `SubscribeToTask`: `SubscribeToTaskRequest` → SSE of `StreamResponse`.
    pub const SUBSCRIBE_TO_TASK: &str = "SubscribeToTask";
    /// `CreateTaskPushNotificationConfig`: `TaskPushNotificationConfig` → same.
    pub const CREATE_TASK_PUSH_NOTIFICATION_CONFIG: &str = "CreateTaskPushNotificationConfig";
    /// `GetTaskPushNotificationConfig`: `TaskPushNotificationConfigId` → `TaskPushNotificationConfig`.
    pub const GET_TASK_PUSH_NOTIFICATION_CONFIG: &str = "GetTaskPushNotificationConfig";
    /// `ListTaskPushNotificationConfigs` (plural): → `ListTaskPushNotificationConfigsResponse`.
    pub const LIST_TASK_PUSH_NOTIFICATION_CONFIGS: &str = "ListTaskPushNotificationConfigs";
    /// `DeleteTaskPushNotificationConfig`: `TaskPushNotificationConfigId` → `null`.
    pub const DELETE_TASK_PUSH_NOTIFICATION_CONFIG: &str = "DeleteTaskPushNotificationConfig";
    /// `GetExtendedAgentCard`: `GetExtendedAgentCardRequest` → `AgentCard`.
    pub const GET_EXTENDED_AGENT_CARD: &str = "GetExtendedAgentCard";

    /// All 1.0 method names.
    pub const ALL: [&str; 11] = [
        SEND_MESSAGE,
        SEND_STREAMING_MESSAGE,
        GET_TASK,
        LIST_TASKS,
        CANCEL_TASK,
        SUBSCRIBE_TO_TASK,
        CREATE_TASK_PUSH_NOTIFICATION_CONFIG,
        GET_TASK_PUSH_NOTIFICATION_CONFIG,
        LIST_TASK_PUSH_NOTIFICATION_CONFIGS,
        DELETE_TASK_PUSH_NOTIFICATION_CONFIG,
        GET_EXTENDED_AGENT_CARD,
    ];
}

/// Params of `GetTask` (a2a-v1.md §1.1). Shape: `{"id", "historyLength"?, "tenant"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetTaskRequest {
    /// Tenant copied from the chosen `AgentInterface`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id.
    pub id: String,
    /// Absent = server default; `0` = no history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
}

/// Params of `CancelTask` (a2a-v1.md §1.1). Shape: `{"id", "metadata"?, "tenant"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CancelTaskRequest {
    /// Tenant copied from the chosen `AgentInterface`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id.
    pub id: String,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// Params of `SubscribeToTask` (a2a-v1.md §1.1). Shape: `{"id", "tenant"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscribeToTaskRequest {
    /// Tenant copied from the chosen `AgentInterface`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task id.
    pub id: String,
}

/// Params of `ListTasks` (a2a-v1.md §1.1).
///
/// Shape: `{"contextId"?, "status"?: TaskState, "pageSize"?, "pageToken"?,
/// "historyLength"?, "statusTimestampAfter"?: RFC 3339, "includeArtifacts"?, "tenant"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksRequest {
    /// Tenant copied from the chosen `AgentInterface`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Only tasks of this context.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Only tasks in this state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<TaskState>,
    /// 1..=100, default 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// Continuation token from a previous page.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
    /// History messages per task.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// Only tasks whose status timestamp is ≥ this RFC 3339 time.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub status_timestamp_after: Option<String>,
    /// Include artifacts (absent/false: no `artifacts` key in results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub include_artifacts: Option<bool>,
}

/// Result of `ListTasks` (a2a-v1.md §1.1, §2).
///
/// Shape: `{"tasks": [Task…], "nextPageToken", "pageSize", "totalSize"}`;
/// `nextPageToken` is `""` on the last page, decoded here as `None`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTasksResponse {
    /// The page of tasks, newest status first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tasks: Vec<Task>,
    /// Token for the next page; `None` on the last page.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
    /// Page size used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// Number of all matching tasks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_size: Option<i32>,
}

/// Params of `GetExtendedAgentCard` (a2a-v1.md §1.1). Shape: `{"tenant"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetExtendedAgentCardRequest {
    /// Tenant copied from the chosen `AgentInterface`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
}
