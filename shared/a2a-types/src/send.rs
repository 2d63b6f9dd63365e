//! `SendMessage` / `SendStreamingMessage` params and result (a2a-v1.md §1.1, §2).

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::message::Message;
use crate::push::TaskPushNotificationConfig;
use crate::serde_util::{json_type_name, nonempty, take_oneof};
use crate::task::Task;

/// Options for a send (a2a-v1.md §2, `SendMessageConfiguration`, 1.0).
///
/// Shape: `{"acceptedOutputModes"?: [mediaType…], "taskPushNotificationConfig"?,
/// "historyLength"?: int32, "returnImmediately"?: bool}`. There is no
/// `blocking` (0.3) in 1.0: `returnImmediately` absent/false means the server
/// answers once the task is terminal or interrupted.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageConfiguration {
    /// Media types the client accepts in the output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub accepted_output_modes: Vec<String>,
    /// Inline webhook registration (its `taskId` stays empty).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_push_notification_config: Option<TaskPushNotificationConfig>,
    /// Absent = server default; `0` = no history; `n` = at most n recent messages.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_length: Option<i32>,
    /// `true` = answer as soon as the task exists.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub return_immediately: Option<bool>,
}

/// Params of `SendMessage` / `SendStreamingMessage` (a2a-v1.md §2, `SendMessageRequest`).
///
/// Shape: `{"tenant"?, "message": Message, "configuration"?: SendMessageConfiguration,
/// "metadata"?}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SendMessageRequest {
    /// Tenant copied from the chosen `AgentInterface`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// The message to send.
    pub message: Message,
    /// Send options.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub configuration: Option<SendMessageConfiguration>,
    /// Free-form request metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl SendMessageRequest {
    /// A request carrying just `message`.
    pub fn new(message: Message) -> Self {
        SendMessageRequest {
            tenant: None,
            message,
            configuration: None,
            metadata: None,
        }
    }
}

/// Result of `SendMessage` (a2a-v1.md §1.1, §2, `SendMessageResponse`).
///
/// Shape: exactly one of `{"task": Task}` or `{"message": Message}`; never a
/// bare Task in 1.0. Unknown sibling keys are ignored when decoding.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum SendMessageResponse {
    /// `{"task": …}`.
    Task(Task),
    /// `{"message": …}`: a direct reply without a task.
    Message(Message),
}

/// The member keys of the `SendMessageResponse` oneof.
pub const SEND_MESSAGE_RESPONSE_MEMBERS: &[&str] = &["task", "message"];

impl<'de> Deserialize<'de> for SendMessageResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        let Value::Object(mut map) = value else {
            return Err(D::Error::custom(format_args!(
                "SendMessageResponse must be a JSON object, found {}",
                json_type_name(&value)
            )));
        };
        let (member, value) = take_oneof(&mut map, SEND_MESSAGE_RESPONSE_MEMBERS)
            .map_err(|e| D::Error::custom(format_args!("SendMessageResponse: {e}")))?;
        let invalid = |e: serde_json::Error| {
            D::Error::custom(format_args!("SendMessageResponse.{member}: {e}"))
        };
        if member == "task" {
            serde_json::from_value(value)
                .map(SendMessageResponse::Task)
                .map_err(invalid)
        } else {
            serde_json::from_value(value)
                .map(SendMessageResponse::Message)
                .map_err(invalid)
        }
    }
}

impl SendMessageResponse {
    /// The task, if the agent answered with one.
    pub fn task(&self) -> Option<&Task> {
        match self {
            SendMessageResponse::Task(t) => Some(t),
            SendMessageResponse::Message(_) => None,
        }
    }
}
