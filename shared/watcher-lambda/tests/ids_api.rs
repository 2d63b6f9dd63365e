//! Ids through API Gateway (issue 12, item 3): every route of the API function taking an id,
//! driven with the API Gateway HTTP API (payload 2.0) event API Gateway sends for it: the route
//! key of `template.yaml`, `rawPath` already decoded, and the decoded `pathParameters`. Ids holding
//! `/`, `?`, `#`, `%`, spaces, unicode and the maximum length reach the handlers exactly as the
//! client gave them (decoded once), compared as given: no case folding, no normalisation, and
//! confusable ids stay distinct.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use serde_json::{json, Value};

use crate::common;

use common::api_router;

const URI: &str = "https://rsaxb.com/a2a/expectations/v1";
const CARD: &str = include_str!("../../../examples/booking-card.json");

/// Ids a client may send: separators of URLs, percent signs (one that looks like an escape
/// included), spaces, non-ASCII, dot segments, case and confusable variants, and the longest.
fn hostile_ids() -> Vec<String> {
    let mut ids: Vec<String> = [
        "PA-2026-0901/leg-2",
        "PA-2026-0901/leg-2/",
        "a?b=c&d",
        "a#b",
        "100%",
        "%41",
        "%2F",
        "a b  c",
        "a+b",
        "étiquette-Ünïcode",
        "e\u{301}tiquette-Ünïcode", // the same text decomposed: a different id
        "📦-PA",
        "..",
        ".",
        "PA-1",
        "pa-1",
        "P\u{410}-1",   // Cyrillic A
        "PA-1\u{200b}", // zero-width space
    ]
    .into_iter()
    .map(String::from)
    .collect();
    ids.push("é".repeat(watcher_core::ids::MAX_ID_LEN / 2));
    ids
}

/// The API function's router with the booking agent, one source and one operator.
async fn api(name: &str) -> axum::Router {
    api_router(
        name,
        &format!(
            "{}{}{}",
            common::booking_toml(CARD),
            common::CARRIER_TOML,
            common::OPS_TOML
        ),
        "2026-09-10T01:00:00Z",
    )
    .await
}

/// The event API Gateway sends for a request matched by `route` (as in template.yaml, e.g.
/// `/v1/subjects/{type}/{id+}`) with `params`: `rawPath` is the route filled with the decoded
/// values, as API Gateway passes it.
fn gateway_event(
    method: &str,
    route: &str,
    params: &[(&str, &str)],
    query: &str,
    headers: Value,
    body: &Value,
) -> lambda_http::Request {
    let mut raw_path = route.to_owned();
    let mut path_parameters = serde_json::Map::new();
    for (name, value) in params {
        let placeholder = if raw_path.contains(&format!("{{{name}+}}")) {
            format!("{{{name}+}}")
        } else {
            format!("{{{name}}}")
        };
        raw_path = raw_path.replace(&placeholder, value);
        path_parameters.insert((*name).to_owned(), json!(value));
    }
    let route_key = format!("{method} {route}");
    let event = json!({
        "version": "2.0", "routeKey": route_key, "rawPath": raw_path, "rawQueryString": query,
        "headers": headers, "pathParameters": path_parameters,
        "requestContext": {
            "accountId": "123456789012", "apiId": "api", "domainName": "api.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "api", "requestId": "req", "routeKey": route_key, "stage": "$default",
            "time": "10/Sep/2026:01:00:00 +0000", "timeEpoch": 1789000000000u64,
            "http": { "method": method, "path": raw_path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test" }
        },
        "body": body.to_string(), "isBase64Encoded": false
    });
    lambda_http::request::from_str(&event.to_string()).expect("API Gateway event")
}

async fn call(router: &axum::Router, req: lambda_http::Request) -> (u16, Value) {
    let (status, _, body) = common::call(router, req).await;
    (status, body)
}

fn artifact(expectation_id: &str, subject_id: &str) -> Value {
    json!({ "artifactUpdate": { "taskId": "task-ids", "contextId": "ctx-ids",
        "artifact": { "artifactId": format!("a-{expectation_id}"), "parts": [{ "text": "Booked" }],
            "metadata": { URI: { "expectations": [{
                "expectationId": expectation_id, "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": subject_id },
                "expects": "the airline manifest",
                "satisfiedBy": { "factKey": "shipment.manifest.received" },
                "dueAt": "2026-09-10T20:15:00Z", "basis": "observed" }] } } } } })
}

#[tokio::test(flavor = "multi_thread")]
async fn subject_ids_round_trip_through_the_gateway_and_stay_distinct() {
    let router = api("ids-subjects").await;
    let ids = hostile_ids();
    for (i, id) in ids.iter().enumerate() {
        let (status, body) = call(
            &router,
            gateway_event(
                "POST",
                "/v1/agents/{agentId}/push",
                &[("agentId", "booking")],
                "",
                json!({ "content-type": "application/json", "x-a2a-notification-token": "push-1" }),
                &artifact(&format!("exp-{i}"), id),
            ),
        )
        .await;
        assert_eq!(status, 200, "push on {id:?}: {body}");
        assert_eq!(
            body["raised"],
            json!([format!("exp-{i}")]),
            "{id:?}: {body}"
        );
    }
    for (i, id) in ids.iter().enumerate() {
        let (status, body) = call(
            &router,
            gateway_event(
                "GET",
                "/v1/subjects/{type}/{id+}",
                &[("type", "shipment"), ("id", id)],
                "",
                json!({ "authorization": "Bearer ops-1" }),
                &Value::Null,
            ),
        )
        .await;
        assert_eq!(status, 200, "GET {id:?}: {body}");
        assert_eq!(body["subject"]["id"], json!(id), "{body}");
        // Each id is its own subject: only the expectation raised on exactly it.
        let raised: Vec<&str> = body["expectations"]
            .as_array()
            .or_else(|| body["records"].as_array())
            .expect("the subject's expectations")
            .iter()
            .filter_map(|r| r["expectationId"].as_str())
            .collect();
        assert_eq!(raised, [format!("exp-{i}")], "{id:?}: {body}");
    }
    // An id never raised on is not found, even when it differs only by case or a confusable.
    let (status, body) = call(
        &router,
        gateway_event(
            "GET",
            "/v1/subjects/{type}/{id+}",
            &[("type", "shipment"), ("id", "Pa-1")],
            "",
            json!({ "authorization": "Bearer ops-1" }),
            &Value::Null,
        ),
    )
    .await;
    assert_eq!(status, 404, "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn agent_and_source_ids_reach_the_handlers_as_given() {
    let router = api("ids-agents").await;
    for id in hostile_ids() {
        // Another agent's id with this agent's token: refused naming exactly the id asked for.
        let named = format!("{id:?}");
        for (method, route) in [
            ("POST", "/v1/agents/{agentId}/push"),
            ("GET", "/v1/agents/{agentId}/rejections"),
        ] {
            let (status, body) = call(
                &router,
                gateway_event(
                    method,
                    route,
                    &[("agentId", &id)],
                    "",
                    json!({ "content-type": "application/json", "x-a2a-notification-token": "push-1",
                            "authorization": "Bearer push-1" }),
                    &json!({}),
                ),
            )
            .await;
            assert_eq!(status, 403, "{method} {route} {id:?}: {body}");
            assert!(
                body["detail"].as_str().unwrap_or_default().contains(&named),
                "{route} {id:?}: {body}"
            );
        }
        let (status, body) = call(
            &router,
            gateway_event(
                "POST",
                "/v1/sources/{sourceId}/webhook",
                &[("sourceId", &id)],
                "",
                json!({ "content-type": "application/json", "authorization": "Bearer src-1" }),
                &json!({}),
            ),
        )
        .await;
        assert_eq!(status, 403, "webhook {id:?}: {body}");
        assert!(
            body["detail"].as_str().unwrap_or_default().contains(&named),
            "webhook {id:?}: {body}"
        );
    }
    // The configured source's own id (it holds a ':') reaches the handler as its own: not
    // refused as another source's (a plain fact body that matches nothing is answered 200).
    let (status, body) = call(
        &router,
        gateway_event(
            "POST",
            "/v1/sources/{sourceId}/webhook",
            &[("sourceId", "carrier-feed:emirates")],
            "",
            json!({ "content-type": "application/json", "authorization": "Bearer src-1" }),
            &json!({}),
        ),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["unmatched"], json!(true), "{body}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_id_holding_a_query_is_not_read_as_one() {
    let router = api("ids-query").await;
    let (status, body) = call(
        &router,
        gateway_event(
            "GET",
            "/v1/subjects/{type}/{id+}",
            &[("type", "shipment"), ("id", "a?limit=1")],
            "x=1",
            json!({ "authorization": "Bearer ops-1" }),
            &Value::Null,
        ),
    )
    .await;
    // Nothing recorded about that id: the 404 names the whole id, `?limit=1` included.
    assert_eq!(status, 404, "{body}");
    assert!(
        body["detail"]
            .as_str()
            .unwrap_or_default()
            .contains("a?limit=1"),
        "{body}"
    );
}
