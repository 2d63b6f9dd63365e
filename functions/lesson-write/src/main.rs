//! `lesson-write`: the Learnables authority on AWS Lambda, behind an API Gateway HTTP API
//! (payload format 2.0).
//!
//! Environment: `DEFINITIONS_TABLE_NAME` (the definitions table), `WATCHER_CONFIG_SECRET_ID`
//! (the Secrets Manager secret whose SecretString is the deployment's TOML configuration, read
//! once at cold start for its credentials; `WATCHER_CONFIG_SECRET_VERSION` optional), `RUST_LOG` (optional, default `info`),
//! and the standard AWS variables the Lambda runtime sets (`AWS_ENDPOINT_URL` for an emulator).

use std::sync::Arc;

use learnables_store_dynamodb::DynamoDefinitionStore;
use lesson_write::{app, dynamodb_client, FunctionConfig};
use tracing_subscriber::EnvFilter;

/// `error` and each of its sources, joined with ": ".
fn cause_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| "info".into()))
        // CloudWatch stamps every line; the JSON stays small.
        .without_time()
        .with_current_span(false)
        .init();

    let aws = watcher_aws::sdk_env::sdk_config_from_env()?;
    let config = FunctionConfig::from_secret(&aws).await.inspect_err(|e| {
        tracing::error!(error.cause_chain = %cause_chain(e), "Failed to read the configuration");
    })?;
    // Built once per execution environment and shared by every invocation (style item 6).
    let store = DynamoDefinitionStore::new(dynamodb_client(&aws), config.table());
    tracing::info!(table = config.table(), "lesson-write ready");
    lambda_http::run(app(Arc::new(store), &config)).await
}
