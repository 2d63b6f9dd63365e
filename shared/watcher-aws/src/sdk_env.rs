//! The AWS SDK configuration of a Lambda function, read from the environment Lambda gives it.
//!
//! Why not `aws_config::defaults(...).load()`: its default chain (shared profile files, SSO,
//! IMDS, ECS, STS web identity and assume-role) is for machines a function never runs on, and it
//! links the whole STS client and aws-config into every function binary; without them the `api`
//! function fits issue 10's 15 MB. Lambda puts the execution role's credentials and the region
//! in the environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`,
//! `AWS_REGION`), valid for the execution environment's life, which is what is read here. The
//! HTTP client is [`https_client`]; sleep and time source are the SDK clients' own defaults (the
//! `rt-tokio` feature); retries and timeouts are set as aws-config sets them.

use std::time::Duration;

use aws_sdk_dynamodb::config::BehaviorVersion;
use aws_types::region::Region;
use aws_types::sdk_config::{RetryConfig, SharedCredentialsProvider, TimeoutConfig};
use aws_types::SdkConfig;

/// The HTTPS client of every SDK configuration the watcher makes: the SDK's hyper 1 client on
/// rustls with ring, and the system's root certificates.
///
/// Why not the SDK's default: it is rustls on aws-lc-rs, a second cryptography library beside
/// the ring that reqwest (the A2A client) already links, and a long C build; the SDK's `rustls`
/// feature is its hyper 0.14 client, deprecated (it logs a warning at every start). Connections
/// are pooled per client, as the SDK's default does; build the configuration once per process.
pub fn https_client() -> aws_types::sdk_config::SharedHttpClient {
    aws_smithy_http_client::Builder::new()
        .tls_provider(aws_smithy_http_client::tls::Provider::Rustls(
            aws_smithy_http_client::tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
}

/// A variable the SDK configuration needs is missing or empty.
#[derive(Debug, thiserror::Error)]
#[error("environment variable {0} is not set (Lambda sets it for every function)")]
pub struct MissingVariable(pub &'static str);

/// `name`'s value, if set and not empty.
fn read(env: &dyn Fn(&str) -> Option<String>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.is_empty())
}

/// The SDK configuration from `env` (a variable's value by name; [`sdk_config_from_env`] reads
/// the process environment):
///
/// * region: `AWS_REGION`, else `AWS_DEFAULT_REGION` (required);
/// * credentials: `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (required), with
///   `AWS_SESSION_TOKEN` when set;
/// * endpoint: `AWS_ENDPOINT_URL` when set (a local emulator such as moto), for every service;
///   of aws-config's per-service `AWS_ENDPOINT_URL_<SERVICE>`, only `AWS_ENDPOINT_URL_DYNAMODB`
///   is read, by [`dynamodb_client`] (on Lambda neither is set; the local stack runs DynamoDB in
///   an emulator of its own);
/// * standard retries (3 attempts, exponential backoff with full jitter, throttling retried
///   under the client's retry quota), set explicitly rather than left to `BehaviorVersion`'s
///   default, and a 3.1 s connect timeout, as aws-config's defaults. Every client the functions
///   build comes from this configuration. What the SDK answers rather than retries (a
///   cancelled transaction, a failed condition, unprocessed keys) is retried by the callers
///   with the same policy, written once: `watcher_runtime::retry`;
/// * the HTTP client [`https_client`].
///
/// # Errors
/// [`MissingVariable`] naming the first required variable that is missing.
pub fn sdk_config_with(env: &dyn Fn(&str) -> Option<String>) -> Result<SdkConfig, MissingVariable> {
    let region = read(env, "AWS_REGION")
        .or_else(|| read(env, "AWS_DEFAULT_REGION"))
        .ok_or(MissingVariable("AWS_REGION"))?;
    let key = read(env, "AWS_ACCESS_KEY_ID").ok_or(MissingVariable("AWS_ACCESS_KEY_ID"))?;
    let secret =
        read(env, "AWS_SECRET_ACCESS_KEY").ok_or(MissingVariable("AWS_SECRET_ACCESS_KEY"))?;
    let credentials = aws_credential_types::Credentials::new(
        key,
        secret,
        read(env, "AWS_SESSION_TOKEN"),
        None,
        "Environment",
    );
    let mut builder = SdkConfig::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new(region))
        .credentials_provider(SharedCredentialsProvider::new(credentials))
        .http_client(https_client())
        .retry_config(RetryConfig::standard())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_millis(3100))
                .build(),
        );
    if let Some(url) = read(env, "AWS_ENDPOINT_URL") {
        builder = builder.endpoint_url(url);
    }
    Ok(builder.build())
}

/// [`sdk_config_with`] over the process environment: what each function's `main` calls once.
///
/// # Errors
/// As [`sdk_config_with`].
pub fn sdk_config_from_env() -> Result<SdkConfig, MissingVariable> {
    sdk_config_with(&|name| std::env::var(name).ok())
}

/// The DynamoDB client of `aws` ([`sdk_config_from_env`]), sent to `AWS_ENDPOINT_URL_DYNAMODB`
/// instead when that is set and not empty (aws-config's per-service variable; the local stack,
/// `infra/aws-local.sh`, serves DynamoDB from an emulator process of its own so that it does
/// not queue behind SQS and Scheduler requests). Build it once, in `main`, and share it.
pub fn dynamodb_client(aws: &SdkConfig) -> aws_sdk_dynamodb::Client {
    dynamodb_client_with(aws, &|name| std::env::var(name).ok())
}

/// [`dynamodb_client`] with the environment read through `env`.
pub fn dynamodb_client_with(
    aws: &SdkConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> aws_sdk_dynamodb::Client {
    let mut config = aws_sdk_dynamodb::config::Builder::from(aws);
    if let Some(url) = dynamodb_endpoint(aws, env) {
        config = config.endpoint_url(url);
    }
    aws_sdk_dynamodb::Client::from_conf(config.build())
}

/// Where [`dynamodb_client_with`] sends requests: `AWS_ENDPOINT_URL_DYNAMODB` when set and not
/// empty, else `aws`'s endpoint (`AWS_ENDPOINT_URL`), else `None` (AWS's own).
pub fn dynamodb_endpoint(aws: &SdkConfig, env: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    read(env, "AWS_ENDPOINT_URL_DYNAMODB").or_else(|| aws.endpoint_url().map(str::to_owned))
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_credential_types::provider::ProvideCredentials;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name: &str| map.get(name).cloned()
    }

    #[tokio::test]
    async fn lambdas_environment_gives_region_credentials_and_endpoint() {
        let env = env_of(&[
            ("AWS_REGION", "eu-west-1"),
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("AWS_SESSION_TOKEN", "token"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
        ]);
        let config = sdk_config_with(&env).unwrap();
        assert_eq!(config.region().map(AsRef::as_ref), Some("eu-west-1"));
        assert_eq!(config.endpoint_url(), Some("http://127.0.0.1:5000"));
        let creds = config
            .credentials_provider()
            .unwrap()
            .provide_credentials()
            .await
            .unwrap();
        assert_eq!(creds.access_key_id(), "AKIDEXAMPLE");
        assert_eq!(creds.secret_access_key(), "secret");
        assert_eq!(creds.session_token(), Some("token"));
        assert_eq!(
            config.retry_config().map(RetryConfig::max_attempts),
            Some(3)
        );
    }

    #[test]
    fn the_default_region_and_no_token_or_endpoint_are_fine() {
        let env = env_of(&[
            ("AWS_DEFAULT_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "a"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_ENDPOINT_URL", ""),
        ]);
        let config = sdk_config_with(&env).unwrap();
        assert_eq!(config.region().map(AsRef::as_ref), Some("us-east-1"));
        assert_eq!(config.endpoint_url(), None);
        // The SDK crates carry no HTTPS client of their own (Cargo.toml): without this one
        // every client would fail its first request.
        assert!(
            config.http_client().is_some(),
            "the configuration has its HTTPS client"
        );
    }

    #[test]
    fn dynamodb_may_have_an_endpoint_of_its_own() {
        let base = [
            ("AWS_REGION", "us-east-1"),
            ("AWS_ACCESS_KEY_ID", "a"),
            ("AWS_SECRET_ACCESS_KEY", "s"),
            ("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"),
        ];
        let config = sdk_config_with(&env_of(&base)).unwrap();
        let own = env_of(&[("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:5001")]);
        assert_eq!(
            dynamodb_endpoint(&config, &own).as_deref(),
            Some("http://127.0.0.1:5001")
        );
        assert_eq!(
            dynamodb_endpoint(&config, &env_of(&[("AWS_ENDPOINT_URL_DYNAMODB", "")])).as_deref(),
            Some("http://127.0.0.1:5000"),
            "without its own, the shared endpoint"
        );
        let on_aws = sdk_config_with(&env_of(&base[..3])).unwrap();
        assert_eq!(dynamodb_endpoint(&on_aws, &env_of(&[])), None);
    }

    #[test]
    fn a_missing_variable_is_named() {
        let err = sdk_config_with(&env_of(&[("AWS_REGION", "us-east-1")])).unwrap_err();
        assert_eq!(err.0, "AWS_ACCESS_KEY_ID");
        let err = sdk_config_with(&env_of(&[])).unwrap_err();
        assert_eq!(err.0, "AWS_REGION");
        assert!(err.to_string().contains("AWS_REGION"));
    }
}
