//! The API function's root and its strict JSON bodies, driven with API Gateway HTTP API (payload
//! 2.0) events over DynamoDB on the emulator: `GET /` sends a browser to `/ui` (303) and answers
//! a program asking for JSON with the index of the API; a push, a fact and a carrier webhook body
//! with a member given twice are refused with problem+json naming the member, and nothing is
//! recorded.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use serde_json::{json, Value};

use crate::common;

use common::{api_event, api_router, call};

const CARD: &str = include_str!("../../../examples/booking-card.json");
const ARTIFACT: &str = include_str!("../../../examples/booking-artifact.json");

/// The API function's router with the booking agent (`push-1`), a carrier source with one
/// mapping (`src-1`) and an operator (`ops-1`).
async fn api(name: &str) -> axum::Router {
    let config = format!(
        r#"{booking}endpoint = "http://127.0.0.1:9/a2a"

[[sources]]
id = "carrier"
token = "src-1"

[[sources.mappings]]
name = "departed"
fact_key = "shipment.departed:{{/shipment}}"
observed_at = "/at"
subject = {{ type = "shipment", id = "{{/shipment}}" }}

{ops}"#,
        booking = common::booking_toml(CARD),
        ops = common::OPS_TOML,
    );
    api_router(name, &config, "2026-09-10T12:00:00Z").await
}

fn post(path: &str, token: &str, body: &str) -> lambda_http::Request {
    api_event(
        "POST",
        path,
        json!({ "content-type": "application/json", "authorization": format!("Bearer {token}") }),
        body,
        false,
    )
}

/// Asserts a 400 problem+json whose detail is exactly `the member "{member}" appears twice`.
fn assert_refused((status, headers, body): (u16, axum::http::HeaderMap, Value), member: &str) {
    assert_eq!(status, 400, "{body}");
    assert_eq!(headers["content-type"], "application/problem+json");
    assert_eq!(
        body["detail"],
        json!(format!("the member \"{member}\" appears twice"))
    );
}

async fn subject(router: &axum::Router, id: &str) -> Value {
    let (status, _, body) = call(
        router,
        common::ops_get(&format!("/v1/subjects/shipment/{id}")),
    )
    .await;
    match status {
        200 => body,
        404 => json!({ "expectations": [], "facts": [] }),
        _ => panic!("{id}: {status} {body}"),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_root_of_the_api_function() {
    let router = api("root").await;
    let browser = json!({ "accept": "text/html,application/xhtml+xml,*/*;q=0.8" });
    let (status, headers, _) = call(&router, api_event("GET", "/", browser, "", false)).await;
    assert_eq!(status, 303);
    assert_eq!(headers["location"], "/ui");
    let program = json!({ "accept": "application/json" });
    let (status, _, index) = call(&router, api_event("GET", "/", program, "", false)).await;
    assert_eq!(status, 200, "{index}");
    assert_eq!(index["name"], "a2a-watcher");
    assert_eq!(index["links"]["openapi"], "/openapi.json");
    assert_eq!(index["links"]["health"], "/healthz");
    assert_eq!(index["links"]["schemas"]["Fact"], "/v1/schemas/Fact.json");
    let (status, _, doc) = call(
        &router,
        api_event("GET", "/openapi.json", json!({}), "", false),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
}

#[tokio::test(flavor = "multi_thread")]
async fn bodies_with_a_member_twice_are_refused_by_name() {
    let router = api("strict").await;
    // A fact.
    let fact = r#"{"factKey": "shipment.departed:PA-1", "observedAt": "2026-09-10T11:00:00Z",
        "subject": {"type": "shipment", "id": "PA-1"}, "factKey": "shipment.departed:PA-2"}"#;
    assert_refused(
        call(&router, post("/v1/facts", "src-1", fact)).await,
        "factKey",
    );
    // A carrier webhook payload.
    let payload = r#"{"shipment": "PA-1", "at": "2026-09-10T11:00:00Z", "shipment": "PA-2"}"#;
    assert_refused(
        call(
            &router,
            post("/v1/sources/carrier/webhook", "src-1", payload),
        )
        .await,
        "shipment",
    );
    for id in ["PA-1", "PA-2"] {
        assert_eq!(subject(&router, id).await["facts"], json!([]), "{id}");
    }
    // A push whose expectation gives `expectationId` twice.
    let push = ARTIFACT.replacen(
        r#""expectationId": "exp-01J8Q0MANIFEST","#,
        r#""expectationId": "exp-01J8Q0MANIFEST", "expectationId": "exp-other","#,
        1,
    );
    assert_ne!(push, ARTIFACT);
    assert_refused(
        call(&router, post("/v1/agents/booking/push", "push-1", &push)).await,
        "expectationId",
    );
    assert_eq!(
        subject(&router, "PA-2026-0901").await["expectations"],
        json!([]),
        "nothing raised"
    );
    // The same payload sent once is taken: the refusal was the repeat.
    let once = r#"{"shipment": "PA-2", "at": "2026-09-10T11:00:00Z"}"#;
    let (status, _, body) = call(&router, post("/v1/sources/carrier/webhook", "src-1", once)).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        subject(&router, "PA-2").await["facts"]
            .as_array()
            .map(Vec::len),
        Some(1)
    );
}
