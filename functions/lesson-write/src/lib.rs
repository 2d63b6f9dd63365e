//! The lesson-write function: the Learnables authority (contracts/learnables.md) as an AWS Lambda
//! function behind an API Gateway HTTP API (payload format 2.0), over the DynamoDB definition
//! store.
//!
//! It serves exactly the routes and bodies `a2a-watcher serve` serves, because both mount the same
//! router factory, [`watcher_http::learnables_router`] (style: one router factory for three
//! hosts — `lambda_http::run` here, `axum::serve` in `serve`, `oneshot` in tests).
//!
//! - [`FunctionConfig`] — the table from the environment ([`DEFINITIONS_TABLE_NAME`]) and the
//!   configuration from Secrets Manager (the secret the environment names,
//!   `WATCHER_CONFIG_SECRET_ID`; never the configuration itself), parsed and checked at start-up;
//! - [`dynamodb_client`] — the SDK client, built once in `main`;
//! - [`app`] / [`app_with_clock`] — the router over a [`DefinitionStore`], for `main` and for
//!   tests.
//!
//! ```no_run
//! # async fn example() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! use std::sync::Arc;
//! use learnables_store_dynamodb::DynamoDefinitionStore;
//! use lesson_write::{app, dynamodb_client, FunctionConfig};
//!
//! let aws = watcher_aws::sdk_env::sdk_config_from_env()?;
//! let config = FunctionConfig::from_secret(&aws).await?;
//! let store = DynamoDefinitionStore::new(dynamodb_client(&aws), config.table());
//! lambda_http::run(app(Arc::new(store), &config)).await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

use std::ffi::OsString;
use std::sync::Arc;

use axum::Router;
use learnables::Registry;
use learnables_store::DefinitionStore;
use watcher_config::Config;
use watcher_http::lesson_reviews::{LessonReviews, Owners};
use watcher_http::{learnables_router, Credentials, LearnablesState};
use watcher_runtime::clock::{Clock, SystemClock};

/// Environment variable: the name of the DynamoDB table definitions live in (layout:
/// [`learnables_store_dynamodb::create_table`]).
pub const DEFINITIONS_TABLE_NAME: &str = "DEFINITIONS_TABLE_NAME";

/// The name tests give the deployment's configuration (TOML text, contracts/serve.md
/// "Configuration") in [`FunctionConfig::from_lookup`]; the deployed function reads it from
/// Secrets Manager ([`FunctionConfig::from_secret`]), never from an environment variable. The
/// function uses its credentials: `[[teachers]]` write, `[[operators]]` read, and `[[sources]]`
/// and `[[agents]]` tokens are recognised only to be refused (403).
pub const WATCHER_CONFIG: &str = "WATCHER_CONFIG";

/// Why the function cannot start. Not retryable: the function's environment needs fixing.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// A required environment variable is not set, or is empty.
    ///
    /// What to do: set it in the function's configuration (template.yaml `Environment`).
    #[error("the environment variable {name} is not set")]
    Missing {
        /// The variable.
        name: &'static str,
    },
    /// An environment variable holds bytes that are not UTF-8.
    ///
    /// What to do: set it to UTF-8 text.
    #[error("the environment variable {name} is not UTF-8 text")]
    NotUnicode {
        /// The variable.
        name: &'static str,
    },
    /// [`WATCHER_CONFIG`] is not a valid configuration (TOML syntax, a wrong type, a duplicate
    /// id); the source says where.
    ///
    /// What to do: fix the TOML; `a2a-watcher serve` reads the same format.
    #[error("{WATCHER_CONFIG} is not a valid watcher configuration")]
    Config(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The configuration's credentials are unusable (a token used twice, an invalid tenant);
    /// the source says which.
    ///
    /// What to do: fix the `[[teachers]]`, `[[operators]]`, `[[sources]]` or `[[agents]]`
    /// entries of [`WATCHER_CONFIG`].
    #[error("the credentials in {WATCHER_CONFIG} are not usable")]
    Credentials(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The configuration's secret could not be read (not named, no permission, no such secret).
    ///
    /// What to do: set `WATCHER_CONFIG_SECRET_ID` (template.yaml does) and grant
    /// `secretsmanager:GetSecretValue` on it.
    #[error("the configuration could not be read from Secrets Manager")]
    Secret(#[source] watcher_aws::config_secret::ConfigSecretError),
}

/// The function's configuration, checked: the definitions table and the credentials.
#[derive(Clone)]
pub struct FunctionConfig {
    table: String,
    credentials: Arc<Credentials>,
    owners: Owners,
}

impl std::fmt::Debug for FunctionConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The credentials hold bearer tokens: never printed.
        f.debug_struct("FunctionConfig")
            .field("table", &self.table)
            .finish_non_exhaustive()
    }
}

impl FunctionConfig {
    /// Checks a configuration: `table` is the definitions table's name, `watcher_config` the
    /// TOML text of [`WATCHER_CONFIG`].
    ///
    /// # Errors
    /// [`ConfigError::Missing`] (naming [`DEFINITIONS_TABLE_NAME`]) for an empty table name;
    /// [`ConfigError::Config`] when the TOML is not a valid configuration;
    /// [`ConfigError::Credentials`] when its credentials are unusable.
    pub fn new(table: impl Into<String>, watcher_config: &str) -> Result<Self, ConfigError> {
        let table = table.into();
        if table.trim().is_empty() {
            return Err(ConfigError::Missing {
                name: DEFINITIONS_TABLE_NAME,
            });
        }
        let config =
            Config::from_toml(watcher_config).map_err(|e| ConfigError::Config(e.into()))?;
        let credentials =
            watcher_host::credentials(&config).map_err(|e| ConfigError::Credentials(e.into()))?;
        let owners =
            watcher_host::learnable_owners(&config).map_err(|e| ConfigError::Config(e.into()))?;
        Ok(FunctionConfig {
            table,
            credentials: Arc::new(credentials),
            owners,
        })
    }

    /// Reads [`DEFINITIONS_TABLE_NAME`] from the process environment and the configuration
    /// from the Secrets Manager secret the environment names (`WATCHER_CONFIG_SECRET_ID`,
    /// optionally `WATCHER_CONFIG_SECRET_VERSION`), once, at cold start.
    ///
    /// # Errors
    /// [`ConfigError::Missing`], [`ConfigError::Secret`], then as [`FunctionConfig::new`].
    pub async fn from_secret(aws: &aws_types::SdkConfig) -> Result<Self, ConfigError> {
        Ok(Self::from_secret_text(aws).await?.0)
    }

    /// [`FunctionConfig::from_secret`], with the secret's TOML text too (`main` builds the
    /// watcher's parts from the same text: the secret is read once).
    ///
    /// # Errors
    /// As [`FunctionConfig::from_secret`].
    pub async fn from_secret_text(
        aws: &aws_types::SdkConfig,
    ) -> Result<(Self, String), ConfigError> {
        let table = std::env::var(DEFINITIONS_TABLE_NAME).unwrap_or_default();
        if table.trim().is_empty() {
            return Err(ConfigError::Missing {
                name: DEFINITIONS_TABLE_NAME,
            });
        }
        let toml = watcher_aws::config_secret::config_from_env(aws)
            .await
            .map_err(ConfigError::Secret)?;
        Ok((Self::new(table, &toml)?, toml))
    }

    /// Reads and checks the configuration from `lookup`, which answers [`DEFINITIONS_TABLE_NAME`]
    /// and [`WATCHER_CONFIG`] (for tests: no process-wide environment, no Secrets Manager).
    ///
    /// # Errors
    /// [`ConfigError::Missing`] or [`ConfigError::NotUnicode`] naming the variable; then as
    /// [`FunctionConfig::new`].
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<OsString>) -> Result<Self, ConfigError> {
        let var = |name: &'static str| -> Result<String, ConfigError> {
            let value = lookup(name).ok_or(ConfigError::Missing { name })?;
            let value = value
                .into_string()
                .map_err(|_| ConfigError::NotUnicode { name })?;
            if value.trim().is_empty() {
                return Err(ConfigError::Missing { name });
            }
            Ok(value)
        };
        let table = var(DEFINITIONS_TABLE_NAME)?;
        let watcher_config = var(WATCHER_CONFIG)?;
        Self::new(table, &watcher_config)
    }

    /// Who owns each definition (`[[agents]] learnables`): the agent a `lesson.review` is
    /// raised as when its card declares the kind.
    pub fn owners(&self) -> &Owners {
        &self.owners
    }

    /// The definitions table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The credentials every request is checked against.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }
}

/// The DynamoDB client of the function ([`watcher_aws::sdk_env::dynamodb_client`]: the SDK
/// configuration's endpoint, or `AWS_ENDPOINT_URL_DYNAMODB` when that is set, as for a local
/// emulator). Call it once, in `main`, and share the client.
pub fn dynamodb_client(aws: &aws_types::SdkConfig) -> aws_sdk_dynamodb::Client {
    watcher_aws::sdk_env::dynamodb_client(aws)
}

/// The authority's router over `store`, with the credentials of `config`, the system clock and
/// the built-in learnables: what `main` hands to `lambda_http::run`.
pub fn app(store: Arc<dyn DefinitionStore>, config: &FunctionConfig) -> Router {
    app_with_clock(store, config, Arc::new(SystemClock))
}

/// [`app`] with the clock given: `clock` stamps the `at` of every version and history entry
/// (tests pass a `FakeClock`). No watcher beside it: an `expiresAt` is recorded and nothing
/// raises its review ([`app_with_reviews`] gives them to one).
pub fn app_with_clock(
    store: Arc<dyn DefinitionStore>,
    config: &FunctionConfig,
    clock: Arc<dyn Clock>,
) -> Router {
    app_with_reviews(store, config, clock, None)
}

/// The router `main` runs: [`app_with_clock`], with the reviews of lessons taught with
/// `expiresAt` given to `reviews` (expectations-v1 §16): the watcher over the deployment's
/// table, whose schedules lapse them.
pub fn app_with_reviews(
    store: Arc<dyn DefinitionStore>,
    config: &FunctionConfig,
    clock: Arc<dyn Clock>,
    reviews: Option<Arc<dyn LessonReviews>>,
) -> Router {
    learnables_router(LearnablesState {
        store,
        credentials: Arc::clone(&config.credentials),
        clock,
        registry: Arc::new(Registry::builtin()),
        reviews,
    })
}
