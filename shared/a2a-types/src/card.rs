//! Agent card (a2a-v1.md §6).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::serde_util::nonempty;

/// `protocolBinding` of the JSON-RPC binding.
pub const PROTOCOL_BINDING_JSONRPC: &str = "JSONRPC";

/// An agent's self-description, served at `/.well-known/agent-card.json` (a2a-v1.md §6).
///
/// Shape: `{"name", "description", "supportedInterfaces": [AgentInterface…],
/// "provider"?, "version", "documentationUrl"?, "capabilities": AgentCapabilities,
/// "securitySchemes"?: {name: SecurityScheme}, "securityRequirements"?: […],
/// "defaultInputModes": […], "defaultOutputModes": […], "skills": [AgentSkill…],
/// "signatures"?: […], "iconUrl"?}`. Security schemes/requirements and
/// signatures are kept as raw JSON. Legacy 0.3 top-level keys (`url`,
/// `preferredTransport`, `protocolVersion`) of hybrid cards are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCard {
    /// Agent name.
    pub name: String,
    /// Agent description.
    pub description: String,
    /// Interfaces, first = preferred.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub supported_interfaces: Vec<AgentInterface>,
    /// Who runs the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<AgentProvider>,
    /// The agent's own version (not the protocol version).
    pub version: String,
    /// Documentation link.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub documentation_url: Option<String>,
    /// Optional features.
    pub capabilities: AgentCapabilities,
    /// Map of scheme name → SecurityScheme (raw ProtoJSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_schemes: Option<Map<String, Value>>,
    /// SecurityRequirement objects (raw ProtoJSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_requirements: Option<Vec<Value>>,
    /// Media types accepted by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_input_modes: Vec<String>,
    /// Media types produced by default.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub default_output_modes: Vec<String>,
    /// Skills.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<AgentSkill>,
    /// AgentCardSignature objects (raw ProtoJSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signatures: Option<Vec<Value>>,
    /// Icon link.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub icon_url: Option<String>,
}

impl AgentCard {
    /// The declared extension with this URI (`capabilities.extensions`).
    pub fn extension(&self, uri: &str) -> Option<&AgentExtension> {
        self.capabilities.extensions.iter().find(|e| e.uri == uri)
    }

    /// The first JSON-RPC interface speaking protocol 1.x
    /// (`protocolBinding == "JSONRPC"` and `protocolVersion` starting with `"1."`).
    pub fn jsonrpc_interface(&self) -> Option<&AgentInterface> {
        self.supported_interfaces.iter().find(|i| {
            i.protocol_binding == PROTOCOL_BINDING_JSONRPC && i.protocol_version.starts_with("1.")
        })
    }

    /// The first JSON-RPC interface speaking A2A 0.3 (`protocolVersion` starting with `"0.3"`),
    /// for an agent that offers no 1.x interface (see [`crate::v03`]).
    pub fn jsonrpc_v03_interface(&self) -> Option<&AgentInterface> {
        self.supported_interfaces.iter().find(|i| {
            i.protocol_binding == PROTOCOL_BINDING_JSONRPC && i.protocol_version.starts_with("0.3")
        })
    }

    /// The skill with this id.
    pub fn skill(&self, id: &str) -> Option<&AgentSkill> {
        self.skills.iter().find(|s| s.id == id)
    }
}

/// One endpoint of an agent (a2a-v1.md §6, `AgentInterface`).
///
/// Shape: `{"url", "protocolBinding": "JSONRPC"|"GRPC"|"HTTP+JSON"|<uri>,
/// "tenant"?, "protocolVersion": "1.0"|"0.3"…}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentInterface {
    /// Endpoint URL (no fixed path).
    pub url: String,
    /// Binding name.
    pub protocol_binding: String,
    /// Tenant to copy into every request's `tenant`.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub tenant: Option<String>,
    /// A2A protocol version served there (Major.Minor).
    pub protocol_version: String,
}

/// Operator of the agent (a2a-v1.md §6). Shape: `{"url", "organization"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentProvider {
    /// Provider website.
    pub url: String,
    /// Organization name.
    pub organization: String,
}

/// Optional features of the agent (a2a-v1.md §6, `AgentCapabilities`).
///
/// Shape: `{"streaming"?, "pushNotifications"?, "extensions"?: [AgentExtension…],
/// "extendedAgentCard"?}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentCapabilities {
    /// Supports `SendStreamingMessage` / `SubscribeToTask`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub streaming: Option<bool>,
    /// Supports push-notification configs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push_notifications: Option<bool>,
    /// Supported extensions.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<AgentExtension>,
    /// Serves `GetExtendedAgentCard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_agent_card: Option<bool>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A supported protocol extension (a2a-v1.md §5, §6, `AgentExtension`).
///
/// Shape: `{"uri", "description"?, "required"?: bool (default false, omitted
/// when false), "params"?: object}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentExtension {
    /// Extension URI (versioned).
    pub uri: String,
    /// Description.
    #[serde(default, with = "nonempty", skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Clients must activate it (else `-32008`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub required: bool,
    /// Extension configuration.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Map<String, Value>>,
}

/// A capability the agent advertises (a2a-v1.md §6, `AgentSkill`).
///
/// Shape: `{"id", "name", "description", "tags": […], "examples"?: […],
/// "inputModes"?: […], "outputModes"?: […], "securityRequirements"?: […]}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentSkill {
    /// Skill id.
    pub id: String,
    /// Skill name.
    pub name: String,
    /// Skill description.
    pub description: String,
    /// Keywords.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<String>,
    /// Example prompts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Accepted media types (override card defaults).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_modes: Vec<String>,
    /// Produced media types (override card defaults).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub output_modes: Vec<String>,
    /// SecurityRequirement objects (raw ProtoJSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_requirements: Option<Vec<Value>>,
}
