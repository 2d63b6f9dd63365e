//! [`ConfigError`]: why a configuration could not be read. Its messages are the ones users see
//! (`a2a-watcher` prints the error and its causes, joined with ": "; so does `{:#}`).

use std::error::Error as _;
use std::fmt;
use std::path::PathBuf;

/// A configuration that could not be read or is not usable. Each variant says what to fix.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The configuration file could not be read. What to do: check the path and its
    /// permissions.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The configuration file is not valid; `source` says where and why.
    InvalidFile {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<ConfigError>,
    },
    /// A configuration held in memory (such as the Lambda functions' secret) is not valid;
    /// `source` says where and why.
    Invalid {
        /// Why.
        #[source]
        source: Box<ConfigError>,
    },
    /// TOML syntax, or a key of the wrong type (with line and column). What to do: correct the
    /// line named.
    Toml(toml::de::Error),
    /// The configuration could not be written back after its credentials were read from files
    /// or variables (not expected).
    TomlWrite(toml::ser::Error),
    /// A credential given as `<key>_file` or `<key>_env` could not be read
    /// ([`crate::secrets`]); the message names the key's path. What to do: give the file or
    /// variable, or the credential once.
    Secret(String),
    /// Two agents share an id. What to do: give each agent its own `id`.
    DuplicateAgent(String),
    /// Two agents of a tenant list the same definition in `learnables`. What to do: keep it in
    /// one agent's list (a definition's `lesson.review` goes to one owner).
    DefinitionOwners {
        /// The definition's id.
        definition: String,
        /// The tenant.
        tenant: String,
        /// The two agents.
        agents: (String, String),
    },
    /// An agent or a source takes the id the Learnables authority raises and reports as
    /// (`learnables-authority`, expectations-v1 §16). What to do: give it another `id`.
    ReservedId {
        /// `agents` or `sources`.
        section: &'static str,
        /// The id.
        id: String,
    },
    /// A source's webhook mappings or signature do not compile (contracts/serve.md "Carrier
    /// webhooks"). What to do: correct the pointer, template or signature named.
    Webhook {
        /// The source.
        id: String,
        /// Why, from `watcher_webhooks`.
        reason: String,
    },
    /// A source with a signature shares its id with another source (a signed request names its
    /// source only by the path). What to do: give the signed source its own `id`.
    SignedSourceShared(String),
    /// An agent's `resolve_on` names a state that is not a terminal A2A `TaskState`
    /// (expectations-v1 §13.1: the lapse task's end resolves its incident). What to do: list
    /// terminal states only (`TASK_STATE_COMPLETED`, `TASK_STATE_FAILED`, `TASK_STATE_CANCELED`,
    /// `TASK_STATE_REJECTED`).
    ResolveOn {
        /// The agent.
        agent: String,
        /// The state and why.
        reason: String,
    },
    /// A `[[notify]]` channel is not usable. What to do: correct the field named.
    Notify {
        /// The channel.
        id: String,
        /// The field and why.
        reason: String,
    },
}

impl fmt::Display for ConfigError {
    /// The error's own message; with `{:#}`, followed by each cause's, joined with ": " (as
    /// `anyhow` prints a chain).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, .. } => write!(f, "Failed to read {}", path.display())?,
            ConfigError::InvalidFile { path, .. } => {
                write!(f, "{} is not a valid configuration", path.display())?;
            }
            ConfigError::Invalid { .. } => f.write_str("the configuration is not valid")?,
            ConfigError::Toml(e) => write!(f, "{e}")?,
            ConfigError::TomlWrite(e) => write!(f, "{e}")?,
            ConfigError::Secret(message) => f.write_str(message)?,
            ConfigError::DuplicateAgent(id) => write!(f, "agents: the id {id:?} is used twice")?,
            ConfigError::DefinitionOwners {
                definition,
                tenant,
                agents: (a, b),
            } => write!(
                f,
                "agents: the definition {definition:?} of tenant {tenant:?} is in the learnables of \
                 both {a:?} and {b:?}; a definition has one owner"
            )?,
            ConfigError::ReservedId { section, id } => write!(
                f,
                "{section}: the id {id:?} is the Learnables authority's (it raises lesson.review \
                 expectations); choose another"
            )?,
            ConfigError::Webhook { id, reason } => write!(f, "sources: source {id:?}: {reason}")?,
            ConfigError::SignedSourceShared(id) => write!(
                f,
                "sources: source {id:?} has a signature, so its id must not be used by another source"
            )?,
            ConfigError::ResolveOn { agent, reason } => {
                write!(f, "agents: agent {agent:?}: resolve_on: {reason}")?;
            }
            ConfigError::Notify { id, reason } => write!(f, "notify: channel {id:?}: {reason}")?,
        }
        if f.alternate() {
            let mut cause = self.source();
            while let Some(c) = cause {
                write!(f, ": {c}")?;
                cause = c.source();
            }
        }
        Ok(())
    }
}

impl From<toml::de::Error> for ConfigError {
    fn from(e: toml::de::Error) -> Self {
        ConfigError::Toml(e)
    }
}

impl From<toml::ser::Error> for ConfigError {
    fn from(e: toml::ser::Error) -> Self {
        ConfigError::TomlWrite(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alternate_form_carries_the_causes() {
        let e = ConfigError::Invalid {
            source: Box::new(ConfigError::Secret("agents[0].token_env: unset".into())),
        };
        assert_eq!(e.to_string(), "the configuration is not valid");
        assert_eq!(
            format!("{e:#}"),
            "the configuration is not valid: agents[0].token_env: unset"
        );
    }
}
