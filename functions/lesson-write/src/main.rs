//! `lesson-write`: the Learnables authority on AWS Lambda, behind an API Gateway HTTP API
//! (payload format 2.0).
//!
//! Environment: `DEFINITIONS_TABLE_NAME` (the definitions table), the watcher's variables the
//! `api` function reads too (`TABLE_NAME`, `SCHEDULE_GROUP`, `TIMER_FUNCTION_ARN`,
//! `SCHEDULER_ROLE_ARN`, `QUEUE_URL`, `TIMER_QUEUE_URL`: the reviews of lessons taught with
//! `expiresAt` are raised there), `WATCHER_CONFIG_SECRET_ID`
//! (the Secrets Manager secret whose SecretString is the deployment's TOML configuration, read
//! once at cold start for its credentials; `WATCHER_CONFIG_SECRET_VERSION` optional), `RUST_LOG` (optional, default `info`),
//! and the standard AWS variables the Lambda runtime sets (`AWS_ENDPOINT_URL` for an emulator).

use std::sync::Arc;

use learnables_store_dynamodb::DynamoDefinitionStore;
use lesson_write::{app_with_reviews, dynamodb_client, FunctionConfig};
use tracing_subscriber::EnvFilter;
use watcher_http::lesson_reviews::WatcherReviews;
use watcher_runtime::clock::{Clock, SystemClock};

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
    let (config, toml) = FunctionConfig::from_secret_text(&aws)
        .await
        .inspect_err(|e| {
            tracing::error!(error.cause_chain = %cause_chain(e), "Failed to read the configuration");
        })?;
    // Built once per execution environment and shared by every invocation (style item 6).
    let store = DynamoDefinitionStore::new(dynamodb_client(&aws), config.table());
    // The watcher over the deployment's table and schedules, for the reviews of lessons taught
    // with `expiresAt` (expectations-v1 §16).
    let parts =
        watcher_host::aws::from_config(watcher_host::aws::Function::LessonWrite, &aws, &toml)
            .await
            .map_err(|e| format!("{e:#}"))?;
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let reviews = WatcherReviews {
        owners: config.owners().clone(),
        watcher: parts.watcher.clone(),
        clock: clock.clone(),
        // No in-process loops to wake: the schedules carry the work.
        wake: Arc::new(tokio::sync::Notify::new()),
    };
    tracing::info!(table = config.table(), "lesson-write ready");
    lambda_http::run(app_with_reviews(
        Arc::new(store),
        &config,
        clock,
        Some(Arc::new(reviews)),
    ))
    .await
}
