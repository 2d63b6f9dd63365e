//! The operator's view behind API Gateway: the API function's router
//! ([`watcher_lambda::api::router`]) serves the web page (`/ui`: login form, cookie, pages as
//! HTML) and the timeline route, driven with API Gateway HTTP API (payload 2.0) events over
//! DynamoDB on the emulator.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use std::sync::Arc;

use base64::Engine as _;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;
use watcher_config::Config;
use watcher_core::time::Instant;
use watcher_runtime::clock::FakeClock;
use watcher_runtime::store::Store;

const TIMER_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:watcher-timer";
const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/watcher-scheduler";

/// The API function's router over a fresh table, schedule group and queue on the emulator.
async fn api(name: &str) -> axum::Router {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!("AWS_ENDPOINT_URL is not set: start the emulator with `bash infra/moto.sh` and export AWS_ENDPOINT_URL (infra/test-all.sh does both)")
    });
    let aws = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_config::Region::new("us-east-1"))
        .load()
        .await;
    let unique = format!(
        "{name}-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    );
    let ddb = aws_sdk_dynamodb::Client::new(&aws);
    watcher_store_dynamodb::create_table(&ddb, &unique, std::time::Duration::from_secs(30))
        .await
        .expect("table");
    let scheduler = aws_sdk_scheduler::Client::new(&aws);
    watcher_aws::provision::ensure_schedule_group(&scheduler, &unique)
        .await
        .expect("schedule group");
    let sqs = aws_sdk_sqs::Client::new(&aws);
    let queues = watcher_aws::provision::create_lapse_queues(&sqs, &unique, 10)
        .await
        .expect("queues");
    let config =
        Config::from_toml("[[operators]]\nid = \"ops\"\ntoken = \"ops-1\"\n").expect("config");
    let store: Arc<dyn Store> =
        Arc::new(watcher_store_dynamodb::DynamoStore::new(ddb, &unique, 30));
    let timers = Arc::new(
        watcher_aws::SchedulerTimers::new(
            scheduler,
            watcher_aws::SchedulerConfig::new(&unique, TIMER_ARN, ROLE_ARN),
        )
        .expect("timers"),
    );
    let queue = Arc::new(watcher_aws::SqsLapseQueue::new(sqs, &queues.queue_url));
    let parts = watcher_lambda::env::assemble(store, timers, queue, &config)
        .await
        .expect("parts");
    let clock = Arc::new(FakeClock::new(
        Instant::parse("2026-09-11T09:00:00Z").expect("instant"),
    ));
    watcher_lambda::api::router(&parts, clock)
}

/// An API Gateway HTTP API (payload 2.0) event; `base64` sends the body base64-encoded, as API
/// Gateway does for bodies it does not take for text.
fn api_event(
    method: &str,
    path: &str,
    headers: Value,
    body: &str,
    base64: bool,
) -> lambda_http::Request {
    let body = if base64 {
        base64::engine::general_purpose::STANDARD.encode(body)
    } else {
        body.to_owned()
    };
    let event = json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012", "apiId": "api", "domainName": "api.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "api", "requestId": "req", "routeKey": "$default", "stage": "$default",
            "time": "11/Sep/2026:09:00:00 +0000", "timeEpoch": 1789117200000u64,
            "http": { "method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "carrier" }
        },
        "body": body, "isBase64Encoded": base64
    });
    lambda_http::request::from_str(&event.to_string()).expect("API Gateway event")
}

async fn call(
    router: &axum::Router,
    req: lambda_http::Request,
) -> (u16, axum::http::HeaderMap, String) {
    let resp = router.clone().oneshot(req).await.expect("router");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_web_page_and_the_timeline_through_the_api_function() {
    let router = api("opview").await;
    let (status, headers, body) =
        call(&router, api_event("GET", "/ui", json!({}), "", false)).await;
    assert_eq!(status, 200);
    assert!(headers["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(body.contains(r#"name="token""#));

    // API Gateway is HTTPS: the cookie is Secure.
    let (status, headers, _) = call(
        &router,
        api_event(
            "POST",
            "/ui/login",
            json!({ "content-type": "application/x-www-form-urlencoded", "x-forwarded-proto": "https" }),
            "token=ops-1",
            false,
        ),
    )
    .await;
    assert_eq!(status, 303);
    let cookie = headers["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
            && cookie.contains("; Secure"),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap().to_string();
    let (status, _, body) = call(
        &router,
        api_event(
            "GET",
            "/ui/subjects",
            json!({ "cookie": session }),
            "",
            false,
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        body.contains("No open expectation has a pending deadline"),
        "{body}"
    );

    // The timeline route: operators only; nothing recorded answers 404 problem+json.
    let path = "/v1/subjects/shipment/PA-1/timeline.svg";
    let (status, _, _) = call(&router, api_event("GET", path, json!({}), "", false)).await;
    assert_eq!(status, 401);
    let (status, headers, body) = call(
        &router,
        api_event(
            "GET",
            path,
            json!({ "authorization": "Bearer ops-1" }),
            "",
            false,
        ),
    )
    .await;
    assert_eq!(status, 404);
    assert_eq!(headers["content-type"], "application/problem+json");
    assert!(body.contains("nothing is recorded about"), "{body}");
}
