//! What the moto tests of this crate share: the SDK configuration for moto and unique names.

use std::sync::atomic::{AtomicU32, Ordering};

/// The SDK configuration for moto, or a failure saying how to start it.
pub async fn moto_config() -> aws_config::SdkConfig {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!(
            "AWS_ENDPOINT_URL is not set: these tests need moto. Run `bash infra/moto.sh`, then \
             AWS_ENDPOINT_URL=http://127.0.0.1:${{MOTO_PORT:-5005}} AWS_ACCESS_KEY_ID=test \
             AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 cargo test -p watcher-aws"
        )
    });
    let mut loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(watcher_aws::sdk_env::https_client())
        .endpoint_url(endpoint)
        .region(aws_config::Region::new(
            std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into()),
        ));
    if std::env::var("AWS_ACCESS_KEY_ID").is_err() {
        loader = loader.test_credentials();
    }
    loader.load().await
}

/// A name no other test (or earlier run on the same moto) uses.
pub fn unique(prefix: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "{prefix}-{}-{nanos}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}
