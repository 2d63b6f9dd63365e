//! Streaming / push events and the `StreamResponse` oneof (a2a-v1.md §2, §7).

use serde::de::{DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::message::Message;
use crate::serde_util::{json_type_name, take_oneof, OneofError};
use crate::task::{Artifact, Task, TaskStatus};

/// A status change of a task (a2a-v1.md §2, `TaskStatusUpdateEvent`).
///
/// Shape: `{"taskId", "contextId", "status": TaskStatus, "metadata"?}`. The 0.3
/// `final`/`kind` fields are gone; the end of a stream is the connection closing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskStatusUpdateEvent {
    /// The task.
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The new status.
    pub status: TaskStatus,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// A new or extended artifact (a2a-v1.md §2, `TaskArtifactUpdateEvent`).
///
/// Shape: `{"taskId", "contextId", "artifact": Artifact, "append"?: bool,
/// "lastChunk"?: bool, "metadata"?}`. `append: true` adds the parts to the
/// artifact with the same `artifactId`. There is no `index` field.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskArtifactUpdateEvent {
    /// The task.
    pub task_id: String,
    /// The task's context.
    pub context_id: String,
    /// The artifact (or chunk of it).
    pub artifact: Artifact,
    /// Append to an existing artifact with the same id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub append: Option<bool>,
    /// This is the last chunk of the artifact.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_chunk: Option<bool>,
    /// Free-form metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

/// One streaming event / push-notification body (a2a-v1.md §2 `StreamResponse`, §7).
///
/// Shape: exactly one of `{"task": Task}`, `{"message": Message}`,
/// `{"statusUpdate": TaskStatusUpdateEvent}`, `{"artifactUpdate": TaskArtifactUpdateEvent}`.
/// Used as the JSON-RPC `result` of SSE events and, unwrapped, as the webhook
/// POST body. Decoding ignores unknown sibling keys and fails on zero or several
/// members; see [`StreamResponse::from_push_body`] for the lenient webhook form.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum StreamResponse {
    /// `{"task": …}`: a task snapshot (first event of a task stream).
    Task(Task),
    /// `{"message": …}`: a direct message reply (only event of its stream).
    Message(Message),
    /// `{"statusUpdate": …}`.
    StatusUpdate(TaskStatusUpdateEvent),
    /// `{"artifactUpdate": …}`.
    ArtifactUpdate(TaskArtifactUpdateEvent),
}

/// The member keys of the `StreamResponse` oneof, in proto order.
pub const STREAM_RESPONSE_MEMBERS: &[&str] = &["task", "message", "statusUpdate", "artifactUpdate"];

/// Why a push body / stream event could not be decoded as a [`StreamResponse`].
#[derive(Debug)]
pub enum PushBodyError {
    /// The body is not a JSON object.
    NotAnObject {
        /// JSON type that was found instead (e.g. `"an array"`).
        found: &'static str,
    },
    /// Zero or several of `task`, `message`, `statusUpdate`, `artifactUpdate`.
    Oneof {
        /// The underlying oneof error.
        error: OneofError,
        /// Whether a bare Task (top-level `id` + `status`) would have been accepted.
        bare_task_allowed: bool,
    },
    /// The member was found but its value does not decode.
    InvalidMember {
        /// The member key, e.g. `"statusUpdate"`.
        member: &'static str,
        /// Where inside the member, e.g. `artifact.parts` (empty at the member itself).
        path: String,
        /// The serde error (its message names the offending field).
        source: serde_json::Error,
    },
    /// The body looked like a bare Task but does not decode as one.
    InvalidBareTask {
        /// Where inside the Task, e.g. `status.state` (empty at the Task itself).
        path: String,
        /// The serde error.
        source: serde_json::Error,
    },
}

impl std::fmt::Display for PushBodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PushBodyError::NotAnObject { found } => {
                write!(f, "StreamResponse must be a JSON object, found {found}")
            }
            PushBodyError::Oneof {
                error,
                bare_task_allowed,
            } => {
                write!(f, "StreamResponse: {error}")?;
                if *bare_task_allowed && matches!(error, OneofError::Missing { .. }) {
                    f.write_str(" (and no bare Task with top-level id and status)")?;
                }
                Ok(())
            }
            PushBodyError::InvalidMember {
                member,
                path,
                source,
            } if !path.is_empty() => {
                write!(f, "StreamResponse.{member}: field `{path}`: {source}")
            }
            PushBodyError::InvalidMember { member, source, .. } => {
                write!(f, "StreamResponse.{member}: {source}")
            }
            PushBodyError::InvalidBareTask { path, source } if !path.is_empty() => {
                write!(f, "bare Task push body: field `{path}`: {source}")
            }
            PushBodyError::InvalidBareTask { source, .. } => {
                write!(f, "bare Task push body: {source}")
            }
        }
    }
}

impl std::error::Error for PushBodyError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PushBodyError::NotAnObject { .. } => None,
            PushBodyError::Oneof { error, .. } => Some(error),
            PushBodyError::InvalidMember { source, .. }
            | PushBodyError::InvalidBareTask { source, .. } => Some(source),
        }
    }
}

fn decode_member<T: DeserializeOwned>(
    member: &'static str,
    value: Value,
) -> Result<T, PushBodyError> {
    decode_at(value).map_err(|(path, source)| PushBodyError::InvalidMember {
        member,
        path,
        source,
    })
}

/// Decodes `value`, naming where a failure is (`artifact.parts[0]`; empty at the root) with
/// `serde_path_to_error` (issue 12: every refusal names the field).
fn decode_at<T: DeserializeOwned>(value: Value) -> Result<T, (String, serde_json::Error)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        (path, e.into_inner())
    })
}

impl StreamResponse {
    /// Decodes a strict `StreamResponse` object (exactly one member key; other
    /// keys ignored). This is what the `Deserialize` impl uses.
    pub fn from_value(value: Value) -> Result<StreamResponse, PushBodyError> {
        let Value::Object(map) = value else {
            return Err(PushBodyError::NotAnObject {
                found: json_type_name(&value),
            });
        };
        Self::from_map(map, false)
    }

    /// Decodes a webhook POST body (a2a-v1.md §7).
    ///
    /// Accepts a `StreamResponse` object (exactly one of `task`, `message`,
    /// `statusUpdate`, `artifactUpdate`; unknown sibling keys ignored) or, for
    /// lenient senders, a bare `Task` object (no member key, but `id` and
    /// `status` at the top level). Errors name the problem: the oneof violation,
    /// or the member plus serde's message for the bad field.
    ///
    /// An A2A 0.3 event (`kind` = `task`, `status-update`, `artifact-update`, `message`) is first
    /// translated by the 0.3 adapter ([`crate::v03::event_to_v1`]).
    pub fn from_push_body(value: Value) -> Result<StreamResponse, PushBodyError> {
        let value = crate::v03::event_to_v1(&value).unwrap_or(value);
        let Value::Object(map) = value else {
            return Err(PushBodyError::NotAnObject {
                found: json_type_name(&value),
            });
        };
        Self::from_map(map, true)
    }

    fn from_map(mut map: Map<String, Value>, allow_bare_task: bool) -> Result<Self, PushBodyError> {
        match take_oneof(&mut map, STREAM_RESPONSE_MEMBERS) {
            Ok((member, value)) => match member {
                "task" => decode_member(member, value).map(StreamResponse::Task),
                "message" => decode_member(member, value).map(StreamResponse::Message),
                "statusUpdate" => decode_member(member, value).map(StreamResponse::StatusUpdate),
                _ => decode_member(member, value).map(StreamResponse::ArtifactUpdate),
            },
            Err(OneofError::Missing { .. })
                if allow_bare_task && map.contains_key("id") && map.contains_key("status") =>
            {
                decode_at(Value::Object(map))
                    .map(StreamResponse::Task)
                    .map_err(|(path, source)| PushBodyError::InvalidBareTask { path, source })
            }
            Err(error) => Err(PushBodyError::Oneof {
                error,
                bare_task_allowed: allow_bare_task,
            }),
        }
    }

    /// The wire key of this event: `"task"`, `"message"`, `"statusUpdate"` or `"artifactUpdate"`.
    pub fn member_name(&self) -> &'static str {
        match self {
            StreamResponse::Task(_) => "task",
            StreamResponse::Message(_) => "message",
            StreamResponse::StatusUpdate(_) => "statusUpdate",
            StreamResponse::ArtifactUpdate(_) => "artifactUpdate",
        }
    }

    /// The task id the event refers to (`None` for a message without `taskId`).
    pub fn task_id(&self) -> Option<&str> {
        match self {
            StreamResponse::Task(t) => Some(&t.id),
            StreamResponse::Message(m) => m.task_id.as_deref(),
            StreamResponse::StatusUpdate(e) => Some(&e.task_id),
            StreamResponse::ArtifactUpdate(e) => Some(&e.task_id),
        }
    }

    /// The context id the event refers to, if any.
    pub fn context_id(&self) -> Option<&str> {
        match self {
            StreamResponse::Task(t) => t.context_id.as_deref(),
            StreamResponse::Message(m) => m.context_id.as_deref(),
            StreamResponse::StatusUpdate(e) => Some(&e.context_id),
            StreamResponse::ArtifactUpdate(e) => Some(&e.context_id),
        }
    }

    /// The status carried by a `task` or `statusUpdate` event.
    pub fn status(&self) -> Option<&TaskStatus> {
        match self {
            StreamResponse::Task(t) => Some(&t.status),
            StreamResponse::StatusUpdate(e) => Some(&e.status),
            StreamResponse::Message(_) | StreamResponse::ArtifactUpdate(_) => None,
        }
    }
}

impl<'de> Deserialize<'de> for StreamResponse {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(deserializer)?;
        StreamResponse::from_value(value).map_err(D::Error::custom)
    }
}
