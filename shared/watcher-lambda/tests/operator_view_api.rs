//! The operator's view behind API Gateway: the API function's router
//! ([`watcher_lambda::api::router`]) serves the web page (`/ui`: login form, cookie, pages as
//! HTML) and the timeline route, driven with API Gateway HTTP API (payload 2.0) events over
//! DynamoDB on the emulator.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use serde_json::json;

use crate::common;

use common::{api_event, api_router};

/// The API function's router with one operator (`ops-1`).
async fn api(name: &str) -> axum::Router {
    api_router(name, common::OPS_TOML, "2026-09-11T09:00:00Z").await
}

async fn call(
    router: &axum::Router,
    req: lambda_http::Request,
) -> (u16, axum::http::HeaderMap, String) {
    let (status, headers, bytes) = common::respond(router, req).await;
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
    let cookie = headers["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly")
            && cookie.contains("SameSite=Strict")
            && cookie.contains("; Secure"),
        "{cookie}"
    );
    let session = cookie.split(';').next().unwrap().to_owned();
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
    let (status, headers, body) = call(&router, common::ops_get(path)).await;
    assert_eq!(status, 404);
    assert_eq!(headers["content-type"], "application/problem+json");
    assert!(body.contains("nothing is recorded about"), "{body}");
}
