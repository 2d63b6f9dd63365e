//! The API function: the watcher's routes (contracts/serve.md) behind an API Gateway HTTP API —
//! agents' push webhooks, carrier fact webhooks, and the operators' read routes. The same axum
//! router `a2a-watcher serve` runs, hosted by `lambda_http`.

use std::sync::Arc;

use watcher_runtime::clock::SystemClock;

#[tokio::main]
async fn main() -> Result<(), lambda_http::Error> {
    watcher_lambda::init_tracing();
    let parts = watcher_host::aws::from_env(watcher_host::aws::Function::Api)
        .await
        .map_err(|e| format!("{e:#}"))?;
    let app = watcher_host::aws::api_router(&parts, Arc::new(SystemClock));
    lambda_http::run(app).await
}
