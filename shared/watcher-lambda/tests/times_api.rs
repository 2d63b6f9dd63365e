//! Semantics revision 4 ("Time") through the API function on DynamoDB: a `status.timestamp`
//! later than its receipt counts as its receipt, and the answer the watcher records keeps the
//! timestamp exactly as given, read back from the table through `GET /v1/subjects`.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use std::sync::Arc;

use serde_json::{json, Value};
use watcher_core::time::Instant;
use watcher_runtime::clock::FakeClock;

use crate::common;

use common::{api_event, api_router_on};

const URI: &str = "https://rsaxb.com/a2a/expectations/v1";
const CARD: &str = include_str!("../../../examples/booking-card.json");

async fn call(router: &axum::Router, req: lambda_http::Request) -> (u16, Value) {
    let (status, _, body) = common::call(router, req).await;
    (status, body)
}

async fn push(router: &axum::Router, status: Value) -> Value {
    let event =
        json!({ "statusUpdate": { "taskId": "task-q", "contextId": "ctx-q", "status": status } });
    let (code, body) = call(
        router,
        api_event(
            "POST",
            "/v1/agents/booking/push",
            json!({ "content-type": "application/json", "x-a2a-notification-token": "push-1" }),
            &event.to_string(),
            false,
        ),
    )
    .await;
    assert_eq!(code, 200, "{body}");
    body
}

async fn subject(router: &axum::Router) -> Value {
    let (code, body) = call(router, common::ops_get("/v1/subjects/task/task-q")).await;
    assert_eq!(code, 200, "{body}");
    body
}

/// A WORKING status stamped eleven hours ahead (in `+05:30`) answers no question asked after
/// it; one stamped ahead after the question answers it at its receipt, and the record and the
/// fact keep the timestamp exactly as given.
#[tokio::test(flavor = "multi_thread")]
async fn a_status_stamped_ahead_counts_as_its_receipt_and_is_kept_as_given() {
    let clock = Arc::new(FakeClock::new(
        Instant::parse("2026-09-10T01:00:00Z").unwrap(),
    ));
    let toml = format!("{}{}", common::booking_toml(CARD), common::OPS_TOML);
    let router = api_router_on("times", &toml, Arc::clone(&clock)).await;
    push(
        &router,
        json!({ "state": "TASK_STATE_WORKING", "timestamp": "2026-09-10T17:30:00+05:30" }),
    )
    .await;
    clock.set(Instant::parse("2026-09-10T02:00:00Z").unwrap());
    let asked = push(
        &router,
        json!({ "state": "TASK_STATE_INPUT_REQUIRED", "timestamp": "2026-09-10T02:00:00Z",
            "message": { "messageId": "m-q", "role": "ROLE_AGENT", "parts": [{ "text": "Which warehouse?" }],
                "metadata": { URI: { "expectations": [{
                    "expectationId": "q-1", "kind": "question.answer",
                    "subject": { "type": "task", "id": "task-q" },
                    "expects": "an answer", "satisfiedBy": { "factKey": "answered:task-q" },
                    "dueAt": "2026-09-10T04:00:00Z", "basis": "declared" }] } } } }),
    )
    .await;
    assert_eq!(asked["raised"], json!(["q-1"]), "{asked}");
    let view = subject(&router).await;
    assert_eq!(view["expectations"][0]["status"], "open", "{view:#}");

    clock.set(Instant::parse("2026-09-10T03:00:00Z").unwrap());
    let stamp = "2026-09-10T20:30:00+05:30";
    push(
        &router,
        json!({ "state": "TASK_STATE_WORKING", "timestamp": stamp }),
    )
    .await;
    let view = subject(&router).await;
    let q = &view["expectations"][0];
    assert_eq!(
        q["satisfaction"],
        json!({ "factKey": "answered:task-q", "source": "watcher:task-lifecycle",
            "satisfiedAt": "2026-09-10T03:00:00Z", "observedAt": "2026-09-10T03:00:00Z",
            "claimedObservedAt": stamp, "late": false }),
        "{view:#}"
    );
    let fact = view["facts"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["factKey"] == "answered:task-q"))
        .expect("the answer is on the subject");
    assert_eq!(fact["claimedObservedAt"], stamp, "{view:#}");
}
