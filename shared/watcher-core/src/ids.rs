//! Identifiers as domain newtypes: each can only hold a non-empty value of bounded length
//! (parse, don't validate). Keys of the store are built from these, always scoped by tenant
//! (semantics.md, "Identity and tenancy").

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize};

/// Longest identifier accepted, in bytes. Bounds what one input can make the store hold.
pub const MAX_ID_LEN: usize = 512;

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Parses a non-empty identifier of at most [`MAX_ID_LEN`] bytes without control
            /// characters.
            ///
            /// # Errors
            /// A reason in a person's words naming what is wrong.
            pub fn parse(value: impl Into<String>) -> Result<Self, String> {
                let value = value.into();
                if value.trim().is_empty() {
                    return Err(format!("{} must not be empty", $what));
                }
                if value.len() > MAX_ID_LEN {
                    return Err(format!("{} is longer than {} bytes", $what, MAX_ID_LEN));
                }
                if value.chars().any(char::is_control) {
                    return Err(format!("{} must not contain control characters", $what));
                }
                Ok(Self(value))
            }

            /// The identifier as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        #[cfg(feature = "schema")]
        impl schemars::JsonSchema for $name {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($name).into()
            }
            fn inline_schema() -> bool {
                true
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                schemars::json_schema!({
                    "type": "string",
                    "minLength": 1,
                    "maxLength": MAX_ID_LEN,
                    "pattern": "^[^\\u0000-\\u001f\\u007f]*\\S[^\\u0000-\\u001f\\u007f]*$",
                    "description": concat!($what, ": non-blank text of at most 512 bytes without control characters")
                })
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let text = String::deserialize(d)?;
                $name::parse(text).map_err(serde::de::Error::custom)
            }
        }
    };
}

id_type!(
    /// A tenant: the boundary nothing crosses (semantics.md, "Identity and tenancy").
    Tenant,
    "tenant"
);
id_type!(
    /// The id of an agent registered with the watcher (its configuration entry).
    AgentId,
    "agent id"
);
id_type!(
    /// `expectationId`, scoped to the raising agent (expectations-v1 §8).
    ExpectationId,
    "expectationId"
);
id_type!(
    /// `satisfiedBy.factKey` / a fact's `factKey`, matched exactly (expectations-v1 §9.2).
    FactKey,
    "factKey"
);
id_type!(
    /// An A2A task id.
    TaskId,
    "taskId"
);
id_type!(
    /// An A2A contextId.
    ContextId,
    "contextId"
);
id_type!(
    /// Who reported a fact, as authenticated by the watcher (expectations-v1 §13.5).
    Source,
    "source"
);

impl Source {
    /// `watcher:task-lifecycle`: the watcher itself, reporting a question answered because its
    /// task left the interrupted state (semantics.md, "Questions that expire").
    pub fn lifecycle() -> Self {
        Source("watcher:task-lifecycle".into())
    }

    /// `agent:{agentId}`: facts an agent carries in its own pushes (semantics.md, "Facts").
    pub fn agent(agent: &AgentId) -> Self {
        Source(format!("agent:{agent}"))
    }
}

impl Tenant {
    /// The tenant used when none is named: `default`.
    pub fn default_tenant() -> Self {
        Tenant("default".into())
    }
}

/// A subject: `{ "type": string, "id": string }`, opaque to the watcher (expectations-v1 §5).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Subject {
    /// The kind of thing, e.g. `shipment`.
    #[serde(rename = "type")]
    pub subject_type: String,
    /// Its identifier, e.g. `PA-2026-0901`.
    pub id: String,
}

impl Subject {
    /// Builds a subject from non-empty type and id.
    ///
    /// # Errors
    /// When either part is empty, too long or holds control characters.
    pub fn parse(subject_type: &str, id: &str) -> Result<Self, String> {
        for (name, v) in [("subject.type", subject_type), ("subject.id", id)] {
            if v.trim().is_empty() {
                return Err(format!("{name} must not be empty"));
            }
            if v.len() > MAX_ID_LEN {
                return Err(format!("{name} is longer than {MAX_ID_LEN} bytes"));
            }
            if v.chars().any(char::is_control) {
                return Err(format!("{name} must not contain control characters"));
            }
        }
        Ok(Subject {
            subject_type: subject_type.to_owned(),
            id: id.to_owned(),
        })
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.subject_type, self.id)
    }
}

/// An expectation's identity within a tenant: the raising agent and its `expectationId`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ExpectationRef {
    /// The agent that raised it.
    pub agent: AgentId,
    /// The agent's id for it.
    pub id: ExpectationId,
}

/// A task's identity within a tenant: the agent that runs it and its task id.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct TaskRef {
    /// The agent whose task it is.
    pub agent: AgentId,
    /// The A2A task id.
    pub task_id: TaskId,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_refuse_empty_long_and_control() {
        assert!(ExpectationId::parse("").is_err());
        assert!(ExpectationId::parse("   ").is_err());
        assert!(ExpectationId::parse("a\nb").is_err());
        assert!(ExpectationId::parse("x".repeat(MAX_ID_LEN + 1)).is_err());
        assert_eq!(ExpectationId::parse("exp-1").unwrap().as_str(), "exp-1");
    }

    #[test]
    fn ids_deserialize_through_parse() {
        let r: Result<FactKey, _> = serde_json::from_str("\"\"");
        assert!(r.is_err());
        let s: Subject = serde_json::from_str(r#"{"type":"shipment","id":"PA-1"}"#).unwrap();
        assert_eq!(s.to_string(), "shipment PA-1");
    }
}
