//! Push-notification configuration objects and their RPC params (a2a-v1.md §1.1, §2, §7).

use serde::{Deserialize, Serialize};

use crate::serde_util::nonempty;

/// Credentials the agent sends with each webhook POST (a2a-v1.md §2, `AuthenticationInfo`).
///
/// Shape: `{"scheme": "Bearer", "credentials"?: "…"}`; sent as
/// `Authorization: <scheme> <credentials>` (§7). 0.3 had `schemes: []` instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AuthenticationInfo {
    /// IANA HTTP auth scheme, case-insensitive (e.g. `"Bearer"`, `"Basic"`).
    pub scheme: String,
    /// The credentials.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub credentials: Option<String>,
}

/// A webhook registration for a task (a2a-v1.md §2, `TaskPushNotificationConfig`; flat in 1.0).
///
/// Shape: `{"tenant"?, "id"?, "taskId"?, "url", "token"?, "authentication"?: AuthenticationInfo}`.
/// Also the `params` of `CreateTaskPushNotificationConfig` and the result of
/// Create/Get. `taskId` is empty inside `SendMessageConfiguration`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfig {
    /// Tenant copied from the chosen `AgentInterface`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// Config id (the a2a-sdk uses the task id when omitted).
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The task (required for the push-config RPCs).
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Webhook URL the agent POSTs `StreamResponse` bodies to.
    pub url: String,
    /// Opaque token; the a2a-sdk sends it as `X-A2A-Notification-Token` (§7).
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// Credentials for the `Authorization` header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub authentication: Option<AuthenticationInfo>,
}

impl TaskPushNotificationConfig {
    /// A config with only the webhook `url` set.
    pub fn new(url: impl Into<String>) -> Self {
        TaskPushNotificationConfig {
            tenant: None,
            id: None,
            task_id: None,
            url: url.into(),
            token: None,
            authentication: None,
        }
    }
}

/// Params of `GetTaskPushNotificationConfig` and `DeleteTaskPushNotificationConfig`
/// (a2a-v1.md §1.1). Shape: `{"taskId", "id", "tenant"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskPushNotificationConfigId {
    /// Tenant copied from the chosen `AgentInterface`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task.
    pub task_id: String,
    /// The config id.
    pub id: String,
}

/// Params of `ListTaskPushNotificationConfigs` (a2a-v1.md §1.1).
/// Shape: `{"taskId", "pageSize"?, "pageToken"?, "tenant"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsRequest {
    /// Tenant copied from the chosen `AgentInterface`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The task.
    pub task_id: String,
    /// Maximum number of configs to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page_size: Option<i32>,
    /// Continuation token from a previous page.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub page_token: Option<String>,
}

/// Result of `ListTaskPushNotificationConfigs` (a2a-v1.md §1.1, §2).
/// Shape: `{"configs": [TaskPushNotificationConfig…], "nextPageToken"?}`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListTaskPushNotificationConfigsResponse {
    /// The configs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configs: Vec<TaskPushNotificationConfig>,
    /// Token for the next page; `None` (or `""` on the wire) on the last page.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub next_page_token: Option<String>,
}
