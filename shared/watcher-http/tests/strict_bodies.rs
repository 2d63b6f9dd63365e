//! Every JSON body the watcher reads refuses a member that appears twice, with problem+json
//! naming it (`the member "factKey" appears twice`), on the push, facts and carrier webhook
//! routes, and records nothing; an agent's own metadata, which the watcher forwards untouched,
//! is not checked. Driven with `oneshot` over an in-memory store.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;
use watcher_core::ids::Tenant;
use watcher_http::{Role, SourceWebhook};
use watcher_runtime::memory::MemoryStore;
use watcher_webhooks::{MappingConfig, SourceHook};

const ARTIFACT: &str = include_str!("../../../examples/booking-artifact.json");
const PUSH: &str = "push-token";
const SOURCE: &str = "source-token";
const OPERATOR: &str = "ops-token";

fn app() -> Router {
    let directory = crate::common::agents(&["booking"]);
    let mut credentials = crate::common::credentials(&[
        (PUSH, Role::Agent, "booking"),
        (SOURCE, Role::Source, "carrier"),
        (OPERATOR, Role::Operator, "ops"),
    ]);
    let mapping: MappingConfig = serde_json::from_value(json!({
        "name": "departed",
        "fact_key": "shipment.departed:{/shipment}",
        "observed_at": "/at",
        "subject": { "type": "shipment", "id": "{/shipment}" }
    }))
    .unwrap();
    credentials
        .insert_webhook(SourceWebhook {
            tenant: Tenant::default_tenant(),
            id: "carrier".into(),
            hook: SourceHook::compile(None, &[mapping]).unwrap(),
        })
        .unwrap();
    crate::common::router_at(
        Arc::new(MemoryStore::new()),
        directory,
        credentials,
        "2026-09-10T12:00:00Z",
    )
}

/// `method uri` with `token` and the body `text` as sent: status, Content-Type, JSON body.
async fn call(
    app: &Router,
    method: &str,
    uri: &str,
    token: &str,
    text: &str,
) -> (u16, String, Value) {
    let mut req = Request::builder()
        .method(method)
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"));
    if !text.is_empty() {
        req = req.header(header::CONTENT_TYPE, "application/json");
    }
    let res = app
        .clone()
        .oneshot(req.body(Body::from(text.to_owned())).unwrap())
        .await
        .unwrap();
    let status = res.status().as_u16();
    let ct = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        ct,
        serde_json::from_slice(&body).unwrap_or(Value::Null),
    )
}

/// Asserts a 400 problem+json whose detail is exactly `the member "{member}" appears twice`.
fn assert_refused(answer: (u16, String, Value), member: &str) {
    let (status, ct, body) = answer;
    assert_eq!(status, 400, "{body}");
    assert_eq!(ct, "application/problem+json");
    assert_eq!(body["status"], 400);
    assert_eq!(
        body["detail"],
        json!(format!("the member \"{member}\" appears twice"))
    );
}

/// The facts recorded for the shipment, through the operator's subject route.
async fn facts_of(app: &Router, shipment: &str) -> Value {
    let (status, _, body) = call(
        app,
        "GET",
        &format!("/v1/subjects/shipment/{shipment}"),
        OPERATOR,
        "",
    )
    .await;
    if status == 404 {
        return json!([]);
    }
    assert_eq!(status, 200, "{body}");
    body["facts"].clone()
}

#[tokio::test]
async fn a_fact_with_a_member_twice_is_refused_by_name_and_not_recorded() {
    let app = app();
    let twice = r#"{"factKey": "shipment.departed:PA-1", "observedAt": "2026-09-10T11:00:00Z",
        "subject": {"type": "shipment", "id": "PA-1"}, "factKey": "shipment.departed:PA-2"}"#;
    assert_refused(
        call(&app, "POST", "/v1/facts", SOURCE, twice).await,
        "factKey",
    );
    let nested = r#"{"facts": [{"factKey": "shipment.departed:PA-1",
        "observedAt": "2026-09-10T11:00:00Z", "subject": {"type": "shipment", "id": "PA-1", "id": "PA-2"}}]}"#;
    assert_refused(call(&app, "POST", "/v1/facts", SOURCE, nested).await, "id");
    assert_eq!(facts_of(&app, "PA-1").await, json!([]));
    assert_eq!(facts_of(&app, "PA-2").await, json!([]));
    // The same fact sent once is recorded: the refusal was the repeat, nothing else.
    let once = r#"{"factKey": "shipment.departed:PA-1", "observedAt": "2026-09-10T11:00:00Z",
        "subject": {"type": "shipment", "id": "PA-1"}}"#;
    let (status, _, body) = call(&app, "POST", "/v1/facts", SOURCE, once).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        facts_of(&app, "PA-1").await.as_array().map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn a_webhook_payload_with_a_member_twice_is_refused_by_name() {
    let app = app();
    let uri = "/v1/sources/carrier/webhook";
    let twice = r#"{"shipment": "PA-1", "at": "2026-09-10T11:00:00Z", "shipment": "PA-2"}"#;
    assert_refused(call(&app, "POST", uri, SOURCE, twice).await, "shipment");
    assert_eq!(facts_of(&app, "PA-2").await, json!([]));
    let once = r#"{"shipment": "PA-2", "at": "2026-09-10T11:00:00Z"}"#;
    let (status, _, body) = call(&app, "POST", uri, SOURCE, once).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        facts_of(&app, "PA-2").await.as_array().map(Vec::len),
        Some(1)
    );
}

#[tokio::test]
async fn a_push_with_a_member_twice_where_the_watcher_reads_is_refused_by_name() {
    let app = app();
    let uri = "/v1/agents/booking/push";
    // The artifact's first expectation, its `expectationId` given twice.
    let twice = ARTIFACT.replacen(
        r#""expectationId": "exp-01J8Q0MANIFEST","#,
        r#""expectationId": "exp-01J8Q0MANIFEST", "expectationId": "exp-other","#,
        1,
    );
    assert_ne!(twice, ARTIFACT, "the fixture holds the expectation");
    assert_refused(call(&app, "POST", uri, PUSH, &twice).await, "expectationId");
    let (_, _, subject) = call(
        &app,
        "GET",
        "/v1/subjects/shipment/PA-2026-0901",
        OPERATOR,
        "",
    )
    .await;
    assert!(
        subject["expectations"].as_array().is_none_or(Vec::is_empty),
        "nothing raised: {subject}"
    );
    // A member twice in the agent's own metadata (not the Expectations extension's) is the
    // agent's business: the push is taken.
    let mut artifact: Value = serde_json::from_str(ARTIFACT).unwrap();
    artifact["artifactUpdate"]["artifact"]["metadata"]["x-booking"] = json!({ "n": 1 });
    let own = artifact
        .to_string()
        .replacen(r#""n":1"#, r#""n":1,"n":2"#, 1);
    assert!(own.contains(r#""n":1,"n":2"#));
    let (status, _, body) = call(&app, "POST", uri, PUSH, &own).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["raised"].as_array().map(Vec::len), Some(3), "{body}");
}
