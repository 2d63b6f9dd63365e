//! Carrier webhooks behind API Gateway (contracts/serve.md "Carrier webhooks"): the API
//! function's router ([`watcher_lambda::api::router`]) driven with API Gateway HTTP API (payload
//! 2.0) events, records in DynamoDB on the emulator. Signed payloads (plain and base64-encoded
//! bodies), a bad signature, a payload that cannot be mapped, and an unmatched event.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{json, Value};

use crate::common;

use common::{api_event, api_router};

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
/// The API function's router with both carriers' sources and one operator.
async fn api(name: &str) -> axum::Router {
    api_router(
        name,
        &format!("{EASYPOST_TOML}\n{AFTERSHIP_TOML}\n{}", common::OPS_TOML),
        "2026-09-11T09:00:00Z",
    )
    .await
}

async fn call(router: &axum::Router, req: lambda_http::Request) -> (u16, Option<String>, Value) {
    let (status, headers, body) = common::call(router, req).await;
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (status, ct, body)
}

async fn facts_on(router: &axum::Router, path: &str) -> Vec<Value> {
    let (status, _, body) = call(router, common::ops_get(path)).await;
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
