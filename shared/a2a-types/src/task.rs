//! `TaskState`, `TaskStatus`, `Artifact` and `Task` (a2a-v1.md §2, §3).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::message::{Message, Part};
use crate::serde_util::nonempty;

/// Lifecycle state of a task (a2a-v1.md §3).
///
/// Wire form written: the full proto name, e.g. `"TASK_STATE_WORKING"`. Read: the 1.0 proto
/// name, its ProtoJSON enum number (`5` for canceled: ProtoJSON readers accept both), or the A2A
/// 0.3 lowercase name (`"canceled"`, `"input-required"`) — all mean the same state (serve.md
/// "Routes"). Anything else decodes as [`TaskState::Unspecified`], as ProtoJSON maps unknown enum
/// values to 0 (§0); a consumer that acts on states refuses `Unspecified` (the push route answers
/// 400 naming `status.state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
pub enum TaskState {
    /// `TASK_STATE_SUBMITTED` (1): active.
    #[serde(rename = "TASK_STATE_SUBMITTED")]
    Submitted,
    /// `TASK_STATE_WORKING` (2): active.
    #[serde(rename = "TASK_STATE_WORKING")]
    Working,
    /// `TASK_STATE_COMPLETED` (3): terminal.
    #[serde(rename = "TASK_STATE_COMPLETED")]
    Completed,
    /// `TASK_STATE_FAILED` (4): terminal.
    #[serde(rename = "TASK_STATE_FAILED")]
    Failed,
    /// `TASK_STATE_CANCELED` (5): terminal (one L).
    #[serde(rename = "TASK_STATE_CANCELED")]
    Canceled,
    /// `TASK_STATE_INPUT_REQUIRED` (6): interrupted, waiting for the client.
    #[serde(rename = "TASK_STATE_INPUT_REQUIRED")]
    InputRequired,
    /// `TASK_STATE_REJECTED` (7): terminal.
    #[serde(rename = "TASK_STATE_REJECTED")]
    Rejected,
    /// `TASK_STATE_AUTH_REQUIRED` (8): interrupted, waiting for authorization.
    #[serde(rename = "TASK_STATE_AUTH_REQUIRED")]
    AuthRequired,
    /// `TASK_STATE_UNSPECIFIED` (0): invalid / unknown.
    #[default]
    #[serde(rename = "TASK_STATE_UNSPECIFIED")]
    Unspecified,
}

/// The terminal states (a2a-v1.md §3): no more messages, no cancel, no subscribe.
pub const TERMINAL_STATES: [TaskState; 4] = [
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::Rejected,
];

/// The interrupted states (a2a-v1.md §3): the task waits for the client.
pub const INTERRUPTED_STATES: [TaskState; 2] = [TaskState::InputRequired, TaskState::AuthRequired];

/// All nine states in proto-number order.
pub const ALL_STATES: [TaskState; 9] = [
    TaskState::Unspecified,
    TaskState::Submitted,
    TaskState::Working,
    TaskState::Completed,
    TaskState::Failed,
    TaskState::Canceled,
    TaskState::InputRequired,
    TaskState::Rejected,
    TaskState::AuthRequired,
];

impl TaskState {
    /// True for COMPLETED, FAILED, CANCELED and REJECTED.
    pub fn is_terminal(self) -> bool {
        TERMINAL_STATES.contains(&self)
    }

    /// True for INPUT_REQUIRED and AUTH_REQUIRED.
    pub fn is_interrupted(self) -> bool {
        INTERRUPTED_STATES.contains(&self)
    }

    /// True for SUBMITTED and WORKING.
    pub fn is_active(self) -> bool {
        matches!(self, TaskState::Submitted | TaskState::Working)
    }

    /// The ProtoJSON string, e.g. `"TASK_STATE_COMPLETED"`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskState::Unspecified => "TASK_STATE_UNSPECIFIED",
            TaskState::Submitted => "TASK_STATE_SUBMITTED",
            TaskState::Working => "TASK_STATE_WORKING",
            TaskState::Completed => "TASK_STATE_COMPLETED",
            TaskState::Failed => "TASK_STATE_FAILED",
            TaskState::Canceled => "TASK_STATE_CANCELED",
            TaskState::InputRequired => "TASK_STATE_INPUT_REQUIRED",
            TaskState::Rejected => "TASK_STATE_REJECTED",
            TaskState::AuthRequired => "TASK_STATE_AUTH_REQUIRED",
        }
    }

    /// Parses a ProtoJSON string; unknown strings give [`TaskState::Unspecified`].
    pub fn from_wire_str(s: &str) -> TaskState {
        ALL_STATES
            .into_iter()
            .find(|state| state.as_str() == s)
            .unwrap_or(TaskState::Unspecified)
    }

    /// The state a ProtoJSON enum number names (`0`..=`8`, a2a-v1.md §3); `None` otherwise.
    pub fn from_number(n: i64) -> Option<TaskState> {
        usize::try_from(n)
            .ok()
            .and_then(|i| ALL_STATES.get(i).copied())
    }

    /// The state an A2A 0.3 lowercase name (`"input-required"`) names; `None` otherwise. 0.3's
    /// `"unknown"` is [`TaskState::Unspecified`].
    pub fn from_v03_name(s: &str) -> Option<TaskState> {
        Some(match s {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "completed" => TaskState::Completed,
            "failed" => TaskState::Failed,
            "canceled" => TaskState::Canceled,
            "input-required" => TaskState::InputRequired,
            "rejected" => TaskState::Rejected,
            "auth-required" => TaskState::AuthRequired,
            "unknown" => TaskState::Unspecified,
            _ => return None,
        })
    }

    /// Reads any wire form of a state: 1.0 name, enum number, or 0.3 name. `None` for a value
    /// that names no state (which is not the same as a value naming `TASK_STATE_UNSPECIFIED`).
    pub fn from_wire_value(v: &Value) -> Option<TaskState> {
        match v {
            Value::String(s) => ALL_STATES
                .into_iter()
                .find(|state| state.as_str() == s)
                .or_else(|| TaskState::from_v03_name(s)),
            Value::Number(n) => n.as_i64().and_then(TaskState::from_number),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for TaskState {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        Ok(TaskState::from_wire_value(&v).unwrap_or(TaskState::Unspecified))
    }
}

impl std::fmt::Display for TaskState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Current status of a task (a2a-v1.md §2, `TaskStatus`).
///
/// Shape: `{"state": TaskState, "message"?: Message, "timestamp"?: "2026-…Z"}`.
/// The timestamp is kept as the RFC 3339 string; parsing is left to the consumer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatus {
    /// The state.
    pub state: TaskState,
    /// Optional agent message, e.g. the question for INPUT_REQUIRED.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<Message>,
    /// RFC 3339 UTC timestamp string (absent e.g. on the first SUBMITTED snapshot).
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<String>,
}

impl TaskStatus {
    /// A status with only `state` set.
    pub fn new(state: TaskState) -> Self {
        TaskStatus {
            state,
            message: None,
            timestamp: None,
        }
    }
}

/// An output of a task (a2a-v1.md §2, `Artifact`).
///
/// Shape: `{"artifactId", "name"?, "description"?, "parts": [Part…], "metadata"?,
/// "extensions"?: [uri…]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Artifact {
    /// Unique within the task.
    pub artifact_id: String,
    /// Human-readable name.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Human-readable description.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Content (≥1 in a valid artifact).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    /// Free-form metadata; extension data is keyed by extension URI (§5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of extensions used by this artifact.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
}

/// A unit of work on the agent (a2a-v1.md §2, `Task`).
///
/// Shape: `{"id", "contextId"?, "status": TaskStatus, "artifacts"?: [Artifact…],
/// "history"?: [Message…], "metadata"?}`. There is no `kind` in 1.0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Task {
    /// Server-generated task id.
    pub id: String,
    /// Conversation context (present in practice).
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Current status.
    pub status: TaskStatus,
    /// Outputs produced so far.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artifacts: Vec<Artifact>,
    /// Message history (may be truncated by `historyLength`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Task {
    /// The task's current state.
    pub fn state(&self) -> TaskState {
        self.status.state
    }

    /// The artifact with the given id, if present.
    pub fn artifact(&self, artifact_id: &str) -> Option<&Artifact> {
        self.artifacts.iter().find(|a| a.artifact_id == artifact_id)
    }
}
