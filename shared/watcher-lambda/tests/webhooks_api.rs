//! Carrier webhooks behind API Gateway (contracts/serve.md "Carrier webhooks"): the API
//! function's router ([`watcher_lambda::api::router`]) driven with API Gateway HTTP API (payload
//! 2.0) events, records in DynamoDB on the emulator. Signed payloads (plain and base64-encoded
//! bodies), a bad signature, a payload that cannot be mapped, and an unmatched event.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use std::sync::Arc;

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;
use watcher_config::Config;
use watcher_core::time::Instant;
use watcher_runtime::clock::FakeClock;
use watcher_runtime::store::Store;

const TIMER_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:watcher-timer";
const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/watcher-scheduler";
const EASYPOST_TOML: &str = include_str!("../../../examples/webhooks/easypost/source.toml");
const EASYPOST_EVENT: &str =
    include_str!("../../../examples/webhooks/easypost/tracker-updated.json");
const EASYPOST_SECRET: &str = "replace-with-the-easypost-webhook-secret";
const AFTERSHIP_TOML: &str = include_str!("../../../examples/webhooks/aftership/source.toml");
const AFTERSHIP_EVENT: &str =
    include_str!("../../../examples/webhooks/aftership/tracking-update.json");
const AFTERSHIP_SECRET: &str = "replace-with-the-aftership-webhook-secret";

fn hmac_sha256(secret: &str, body: &str) -> Vec<u8> {
    let mut m = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).expect("key");
    m.update(body.as_bytes());
    m.finalize().into_bytes().to_vec()
}

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
    let config = Config::from_toml(&format!(
        "{EASYPOST_TOML}\n{AFTERSHIP_TOML}\n[[operators]]\nid = \"ops\"\ntoken = \"ops-1\"\n"
    ))
    .expect("config");
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

async fn call(router: &axum::Router, req: lambda_http::Request) -> (u16, Option<String>, Value) {
    let resp = router.clone().oneshot(req).await.expect("router");
    let status = resp.status().as_u16();
    let ct = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        ct,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn facts_on(router: &axum::Router, path: &str) -> Vec<Value> {
    let (status, _, body) = call(
        router,
        api_event(
            "GET",
            path,
            json!({ "authorization": "Bearer ops-1" }),
            "",
            false,
        ),
    )
    .await;
    match status {
        200 => body["facts"].as_array().cloned().unwrap_or_default(),
        404 => Vec::new(),
        _ => panic!("{path}: {status} {body}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn signed_carrier_payloads_through_the_api_function() {
    let router = api("webhooks").await;
    let easypost = |body: &str, secret: &str| {
        json!({ "content-type": "application/json",
            "x-hmac-signature": format!("hmac-sha256-hex={}", hex::encode(hmac_sha256(secret, body))) })
    };
    let path = "/v1/sources/easypost:tracker/webhook";

    // A bad signature: 401 problem+json, nothing recorded.
    let (status, ct, body) = call(
        &router,
        api_event(
            "POST",
            path,
            easypost(EASYPOST_EVENT, "wrong"),
            EASYPOST_EVENT,
            false,
        ),
    )
    .await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(ct.as_deref(), Some("application/problem+json"));
    assert!(facts_on(&router, "/v1/subjects/shipment/EZ4000000004")
        .await
        .is_empty());

    // A second element that cannot be read: 422 naming the mapping and the pointer; nothing
    // recorded, not even the first element's fact.
    let mut bad: Value = serde_json::from_str(EASYPOST_EVENT).expect("json");
    bad["result"]["tracking_details"][1]["datetime"] = json!(true);
    let bad = bad.to_string();
    let (status, ct, body) = call(
        &router,
        api_event("POST", path, easypost(&bad, EASYPOST_SECRET), &bad, false),
    )
    .await;
    assert_eq!(status, 422, "{body}");
    assert_eq!(ct.as_deref(), Some("application/problem+json"));
    let detail = body["detail"].as_str().unwrap_or_default();
    assert!(
        detail.contains("tracker.updated") && detail.contains("/datetime"),
        "{detail}"
    );
    assert!(facts_on(&router, "/v1/subjects/shipment/EZ4000000004")
        .await
        .is_empty());

    // The good signature: the facts, recorded in DynamoDB with the source's id.
    let (status, _, body) = call(
        &router,
        api_event(
            "POST",
            path,
            easypost(EASYPOST_EVENT, EASYPOST_SECRET),
            EASYPOST_EVENT,
            false,
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({ "results": [
            { "factKey": "shipment.pre_transit:EZ4000000004", "satisfied": [] },
            { "factKey": "shipment.in_transit:EZ4000000004", "satisfied": [] } ] })
    );
    let facts = facts_on(&router, "/v1/subjects/shipment/EZ4000000004").await;
    assert_eq!(facts.len(), 2, "{facts:?}");
    assert!(facts.iter().all(|f| f["source"] == "easypost:tracker"));

    // An event nobody tracks.
    let batch = r#"{"object":"Event","description":"batch.created","result":{}}"#;
    let (status, _, body) = call(
        &router,
        api_event("POST", path, easypost(batch, EASYPOST_SECRET), batch, false),
    )
    .await;
    assert_eq!(
        (status, body),
        (200, json!({ "results": [], "unmatched": true }))
    );

    // AfterShip with the body base64-encoded by API Gateway: the signature is over the raw body.
    let sig = base64::engine::general_purpose::STANDARD
        .encode(hmac_sha256(AFTERSHIP_SECRET, AFTERSHIP_EVENT));
    let (status, _, body) = call(
        &router,
        api_event(
            "POST",
            "/v1/sources/aftership:tracking/webhook",
            json!({ "content-type": "application/json", "aftership-hmac-sha256": sig }),
            AFTERSHIP_EVENT,
            true,
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        body,
        json!({ "results": [{ "factKey": "parcel.OutForDelivery:1Z999AA10123456784", "satisfied": [] }] })
    );
    let facts = facts_on(&router, "/v1/subjects/parcel/1Z999AA10123456784").await;
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert_eq!(facts[0]["observedAt"], "2026-09-11T08:13:00Z");
}
