//! The deployment's configuration (the TOML of contracts/serve.md, every party's token
//! included) read from AWS Secrets Manager at a function's cold start (issue 12 item 1;
//! docs/security.md). The functions' environment holds only the secret's name
//! ([`CONFIG_SECRET_ID_VAR`]) and optionally a version to pin ([`CONFIG_SECRET_VERSION_VAR`]);
//! the text is fetched once per execution environment and kept in memory for its life.

use aws_sdk_secretsmanager::Client;

/// Environment variable naming the secret (name or ARN) whose `SecretString` is the TOML.
pub const CONFIG_SECRET_ID_VAR: &str = "WATCHER_CONFIG_SECRET_ID";

/// Optional environment variable: the secret's `VersionId` to read (empty or unset: the
/// current version). Changing it in the template makes every function start afresh on it.
pub const CONFIG_SECRET_VERSION_VAR: &str = "WATCHER_CONFIG_SECRET_VERSION";

/// Why the configuration could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigSecretError {
    /// [`CONFIG_SECRET_ID_VAR`] is not set or empty.
    #[error("the environment variable {CONFIG_SECRET_ID_VAR} is not set: it names the Secrets Manager secret holding the configuration")]
    NotNamed,
    /// Secrets Manager refused or failed (missing permission, no such secret or version).
    #[error("could not read the secret {id:?} from Secrets Manager: {reason}")]
    Fetch {
        /// The secret's id.
        id: String,
        /// The service's error (never the secret's value).
        reason: String,
    },
    /// The secret has no `SecretString` (a binary secret).
    #[error("the secret {id:?} holds no SecretString; store the TOML as text")]
    NotText {
        /// The secret's id.
        id: String,
    },
}

/// Reads the configuration's TOML from the secret `id` (at `version`, or the current one).
///
/// # Errors
/// [`ConfigSecretError::Fetch`] or [`ConfigSecretError::NotText`], naming the secret.
pub async fn fetch_config(
    client: &Client,
    id: &str,
    version: Option<&str>,
) -> Result<String, ConfigSecretError> {
    let mut req = client.get_secret_value().secret_id(id);
    if let Some(v) = version.filter(|v| !v.trim().is_empty()) {
        req = req.version_id(v);
    }
    let out = req.send().await.map_err(|e| ConfigSecretError::Fetch {
        id: id.to_owned(),
        reason: aws_sdk_secretsmanager::error::DisplayErrorContext(&e).to_string(),
    })?;
    out.secret_string()
        .map(str::to_owned)
        .ok_or_else(|| ConfigSecretError::NotText { id: id.to_owned() })
}

/// [`fetch_config`] for the secret the environment names ([`CONFIG_SECRET_ID_VAR`],
/// [`CONFIG_SECRET_VERSION_VAR`]), with a client from `aws`. Call once per cold start.
///
/// # Errors
/// [`ConfigSecretError::NotNamed`], then as [`fetch_config`].
pub async fn config_from_env(aws: &aws_types::SdkConfig) -> Result<String, ConfigSecretError> {
    let id = std::env::var(CONFIG_SECRET_ID_VAR)
        .ok()
        .filter(|v| !v.trim().is_empty())
        .ok_or(ConfigSecretError::NotNamed)?;
    let version = std::env::var(CONFIG_SECRET_VERSION_VAR).ok();
    fetch_config(&Client::new(aws), &id, version.as_deref()).await
}
