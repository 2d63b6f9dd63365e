//! A2A 1.0 wire types (ProtoJSON mapping) as the watcher reads and writes them.
//!
//! Field names are lowerCamelCase, enums are full proto names
//! (`"TASK_STATE_WORKING"`), oneofs are exactly one member key
//! (a2a-v1.md §0). Decoding is lenient the way ProtoJSON receivers are:
//! unknown fields are ignored, unknown enum strings become `*_UNSPECIFIED`,
//! and `""` in optional string fields means absent. Encoding omits absent
//! options and empty lists.
//!
//! Modules: [`message`] (Role, Part, Message), [`task`] (TaskState, Task…),
//! [`stream`] (events, StreamResponse, push bodies), [`send`] (SendMessage),
//! [`push`] (push configs), [`rpc`] (method names, other params/results),
//! [`jsonrpc`] (envelope, errors), [`card`] (AgentCard); [`v03`] translates A2A 0.3 peers'
//! payloads, cards and calls to and from these types.

#![warn(missing_docs)]

pub mod card;
pub mod jsonrpc;
pub mod message;
pub mod push;
pub mod rpc;
pub mod send;
pub mod serde_util;
pub mod stream;
pub mod task;
pub mod v03;

pub use card::{
    AgentCapabilities, AgentCard, AgentExtension, AgentInterface, AgentProvider, AgentSkill,
    PROTOCOL_BINDING_JSONRPC,
};
pub use jsonrpc::{
    error_codes, JsonRpcError, JsonRpcRequest, JsonRpcResponse, ERROR_INFO_TYPE, JSONRPC_VERSION,
};
pub use message::{Message, Part, PartContent, Role};
pub use push::{
    AuthenticationInfo, ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse, TaskPushNotificationConfig,
    TaskPushNotificationConfigId,
};
pub use rpc::{
    methods, CancelTaskRequest, GetExtendedAgentCardRequest, GetTaskRequest, ListTasksRequest,
    ListTasksResponse, SubscribeToTaskRequest,
};
pub use send::{SendMessageConfiguration, SendMessageRequest, SendMessageResponse};
pub use serde_util::{empty_string_as_none, json_type_name, OneofError};
pub use stream::{PushBodyError, StreamResponse, TaskArtifactUpdateEvent, TaskStatusUpdateEvent};
pub use task::{
    Artifact, Task, TaskState, TaskStatus, ALL_STATES, INTERRUPTED_STATES, TERMINAL_STATES,
};

/// Protocol version this crate speaks; the value of the `A2A-Version` header (a2a-v1.md §5).
pub const A2A_VERSION: &str = "1.0";

/// Header carrying the protocol version (a2a-v1.md §5).
pub const A2A_VERSION_HEADER: &str = "A2A-Version";

/// Header listing the extension URIs to activate / activated (a2a-v1.md §5).
pub const A2A_EXTENSIONS_HEADER: &str = "A2A-Extensions";

/// Header the a2a-sdk uses for `TaskPushNotificationConfig.token` on webhook POSTs (a2a-v1.md §7).
pub const NOTIFICATION_TOKEN_HEADER: &str = "X-A2A-Notification-Token";

/// Well-known path of the public agent card (a2a-v1.md §6).
pub const AGENT_CARD_PATH: &str = "/.well-known/agent-card.json";
