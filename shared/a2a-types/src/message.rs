//! `Role`, `Part` and `Message` (a2a-v1.md §2).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::serde_util::{empty_string_as_none, nonempty, present_value};

/// Sender of a [`Message`] (a2a-v1.md §2, `Message.role`).
///
/// Wire form: `"ROLE_USER"` | `"ROLE_AGENT"` | `"ROLE_UNSPECIFIED"`. Any other
/// string (e.g. the 0.3 `"user"`) decodes as [`Role::Unspecified`], matching the
/// ProtoJSON behaviour of mapping unknown enum strings to the 0 value (§0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum Role {
    /// `ROLE_USER`: the client side.
    #[serde(rename = "ROLE_USER")]
    User,
    /// `ROLE_AGENT`: the remote agent.
    #[serde(rename = "ROLE_AGENT")]
    Agent,
    /// `ROLE_UNSPECIFIED` (invalid on a real message) or an unknown string.
    #[default]
    #[serde(rename = "ROLE_UNSPECIFIED", other)]
    Unspecified,
}

impl Role {
    /// The ProtoJSON string, e.g. `"ROLE_USER"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Unspecified => "ROLE_UNSPECIFIED",
            Role::User => "ROLE_USER",
            Role::Agent => "ROLE_AGENT",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The content oneof of a [`Part`] (a2a-v1.md §2): exactly one of the keys
/// `text` (string), `raw` (base64 string), `url` (string) or `data` (any JSON).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum PartContent {
    /// `{"text": "..."}`.
    Text(String),
    /// `{"raw": "<base64>"}`; kept encoded, the consumer decodes it.
    Raw(String),
    /// `{"url": "https://..."}`.
    Url(String),
    /// `{"data": <any JSON value>}`; numbers may come back as floats (§0).
    Data(Value),
}

impl PartContent {
    /// The wire key of this member: `"text"`, `"raw"`, `"url"` or `"data"`.
    pub fn key(&self) -> &'static str {
        match self {
            PartContent::Text(_) => "text",
            PartContent::Raw(_) => "raw",
            PartContent::Url(_) => "url",
            PartContent::Data(_) => "data",
        }
    }
}

/// One piece of message or artifact content (a2a-v1.md §2, `Part`).
///
/// Shape: `{"text"|"raw"|"url"|"data": …, "mediaType"?, "filename"?, "metadata"?}`,
/// e.g. `{"text":"hi"}` or `{"raw":"aGVsbG8=","filename":"h.txt","mediaType":"text/plain"}`.
/// Decoding fails unless exactly one content key is present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "PartWire")]
pub struct Part {
    /// The content member, flattened into the part object.
    #[serde(flatten)]
    pub content: PartContent,
    /// Media type such as `"text/plain"` (0.3 called it `mimeType`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    /// Optional file name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filename: Option<String>,
    /// Free-form metadata (`google.protobuf.Struct`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
}

impl Part {
    fn with_content(content: PartContent) -> Self {
        Part {
            content,
            media_type: None,
            filename: None,
            metadata: None,
        }
    }

    /// A text part: `{"text": s}`.
    pub fn text(s: impl Into<String>) -> Self {
        Self::with_content(PartContent::Text(s.into()))
    }

    /// A data part: `{"data": value}`.
    pub fn data(value: Value) -> Self {
        Self::with_content(PartContent::Data(value))
    }

    /// A URL part: `{"url": url}`.
    pub fn url(url: impl Into<String>) -> Self {
        Self::with_content(PartContent::Url(url.into()))
    }

    /// The text, if this is a text part.
    pub fn as_text(&self) -> Option<&str> {
        match &self.content {
            PartContent::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// The on-the-wire form of a [`Part`], used to enforce the content oneof.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PartWire {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    raw: Option<String>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default, deserialize_with = "present_value")]
    data: Option<Value>,
    #[serde(default, deserialize_with = "empty_string_as_none")]
    media_type: Option<String>,
    #[serde(default, deserialize_with = "empty_string_as_none")]
    filename: Option<String>,
    #[serde(default)]
    metadata: Option<Map<String, Value>>,
}

/// Error text for a part whose content oneof is not exactly one key.
const PART_CONTENT_KEYS: &str = "text, raw, url, data";

impl TryFrom<PartWire> for Part {
    type Error = String;

    fn try_from(w: PartWire) -> Result<Self, Self::Error> {
        let candidates = [
            w.text.map(PartContent::Text),
            w.raw.map(PartContent::Raw),
            w.url.map(PartContent::Url),
            w.data.map(PartContent::Data),
        ];
        let mut present: Vec<PartContent> = candidates.into_iter().flatten().collect();
        let content = match present.len() {
            1 => present.remove(0),
            0 => {
                return Err(format!(
                    "part: expected exactly one of {PART_CONTENT_KEYS}; found none"
                ))
            }
            _ => {
                let keys: Vec<&str> = present.iter().map(PartContent::key).collect();
                return Err(format!(
                    "part: expected exactly one of {PART_CONTENT_KEYS}; found {}",
                    keys.join(" and ")
                ));
            }
        };
        Ok(Part {
            content,
            media_type: w.media_type,
            filename: w.filename,
            metadata: w.metadata,
        })
    }
}

/// A message between client and agent (a2a-v1.md §2, `Message`).
///
/// Shape: `{"messageId", "contextId"?, "taskId"?, "role", "parts": [Part…],
/// "metadata"?, "extensions"?: [uri…], "referenceTaskIds"?: [id…]}`.
/// `messageId` and `role` are required; `""` ids decode as absent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Message {
    /// Sender-minted id (UUID suggested).
    pub message_id: String,
    /// Conversation context; set on server-originated messages.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub context_id: Option<String>,
    /// Task this message belongs to, if any.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
    /// Who sent it.
    pub role: Role,
    /// Content (≥1 in a valid message).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<Part>,
    /// Free-form metadata; extension data is keyed by extension URI (§5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// URIs of extensions used by this message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<String>,
    /// Ids of other tasks this message refers to.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reference_task_ids: Vec<String>,
}

impl Message {
    /// A message with the given id, role and parts and nothing else set.
    pub fn new(message_id: impl Into<String>, role: Role, parts: Vec<Part>) -> Self {
        Message {
            message_id: message_id.into(),
            context_id: None,
            task_id: None,
            role,
            parts,
            metadata: None,
            extensions: Vec::new(),
            reference_task_ids: Vec::new(),
        }
    }

    /// The concatenated text of all text parts (separated by `"\n"`).
    pub fn text(&self) -> String {
        self.parts
            .iter()
            .filter_map(Part::as_text)
            .collect::<Vec<_>>()
            .join("\n")
    }
}
