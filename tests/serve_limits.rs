//! The named request bounds of config `[limits]` over real HTTP (issue 12 item 6): each refusal
//! is problem+json naming the bound and its value, nothing is recorded, and every other error
//! answer of the router (an unknown route, a wrong method, an extractor's rejection) is
//! problem+json too.

use crate::common;

use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};

use common::*;

/// Small bounds so each can be crossed cheaply (with [`TEACHER_TOML`] after them).
const LIMITS: &str = r"
[limits]
body_bytes = 4096
json_depth = 8
string_bytes = 200
expectations_per_artifact = 2
facts_per_request = 3
check_corpus_entries = 2
";

fn artifact_with(n: usize) -> Value {
    let mut a = one_expectation("task-limits", "exp-0", SHIPMENT, far(), "PT1S");
    let exps = &mut a["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"];
    let first = exps[0].clone();
    let list: Vec<Value> = (0..n)
        .map(|i| {
            let mut e = first.clone();
            e["expectationId"] = json!(format!("exp-{i}"));
            e
        })
        .collect();
    *exps = json!(list);
    a
}

fn far() -> jiff::Timestamp {
    plus(jiff::Timestamp::now(), 86_400)
}

#[tokio::test]
async fn each_bound_is_refused_by_name_and_value_and_records_nothing() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &format!("{LIMITS}\n{TEACHER_TOML}")).await;

    // Body size: 413 naming the limit in bytes, whether or not the length was declared.
    let big = "x".repeat(10_000);
    let a = Answer::of(
        w.http()
            .post(w.url("/v1/facts"))
            .bearer_auth(SOURCE_TOKEN)
            .header("content-type", "application/json")
            .body(format!("{{\"pad\":\"{big}\"}}")),
    )
    .await;
    let d = a.assert_problem(413);
    assert!(d.contains("`body_bytes` = 4096 bytes"), "{d}");
    // A 10 MB body: the client still reads the 413 (the rest is drained, not reset).
    let a = Answer::of(
        w.http()
            .post(w.url("/v1/agents/booking/push"))
            .header("X-A2A-Notification-Token", PUSH_TOKEN)
            .body(vec![b'['; 10 * 1024 * 1024]),
    )
    .await;
    assert!(a.assert_problem(413).contains("4096"));
    // Nesting depth.
    let deep = format!("{}{}", "[".repeat(9), "]".repeat(9));
    let a = Answer::of(
        w.http()
            .post(w.url("/v1/facts"))
            .bearer_auth(SOURCE_TOKEN)
            .header("content-type", "application/json")
            .body(deep),
    )
    .await;
    assert!(a.assert_problem(400).contains("`json_depth` = 8"));

    // String length.
    let a = w
        .report(&json!({ "factKey": "x".repeat(201), "observedAt": "2026-01-01T00:00:00Z" }))
        .await;
    assert!(a.assert_problem(400).contains("`string_bytes` = 200 bytes"));

    // Expectations per artifact: three in one artifact refuse the whole push.
    let a = w.push(&artifact_with(3)).await;
    let d = a.assert_problem(400);
    assert!(d.contains("`expectations_per_artifact` = 2"), "{d}");
    assert!(d.contains("3 expectations"), "{d}");
    assert_eq!(w.shipment(SHIPMENT).await, None, "nothing was recorded");
    // Two are accepted.
    let a = w.push(&artifact_with(2)).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["raised"], json!(["exp-0", "exp-1"]));

    // Facts per request.
    let fact = |i: usize| json!({ "factKey": format!("shipment.departed:S-{i}"), "observedAt": "2026-01-01T00:00:00Z" });
    let a = w
        .report(&json!({ "facts": [fact(1), fact(2), fact(3), fact(4)] }))
        .await;
    let d = a.assert_problem(400);
    assert!(d.contains("`facts_per_request` = 3"), "{d}");
    assert_eq!(w.shipment("S-1").await, None, "nothing was recorded");

    // lessons:check corpus.
    let a = Answer::of(
        w.http()
            .post(w.url("/v1/definitions/invoices/lessons:check"))
            .bearer_auth(TEACHER_TOKEN)
            .json(&json!({
                "lesson": { "collection": "fields", "entry": "invoice_number",
                    "value": { "header": "Inv #" }, "taughtBy": "dana" },
                "corpus": [{ "header": "a" }, { "header": "b" }, { "header": "c" }]
            })),
    )
    .await;
    assert!(a.assert_problem(400).contains("`check_corpus_entries` = 2"));
}

#[tokio::test]
async fn every_error_answer_is_problem_json() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, "").await;
    // An unknown route.
    w.get("/v1/nothing-here").await.assert_problem(404);
    // A wrong method.
    Answer::of(w.http().delete(w.url("/v1/facts")))
        .await
        .assert_problem(405);
    // A path parameter axum cannot decode (invalid UTF-8 after percent-decoding).
    w.get("/v1/subjects/shipment/%FF%FE")
        .await
        .assert_problem(400);
    // Default body bound (1 MiB), named.
    let a = Answer::of(
        w.http()
            .post(w.url("/v1/facts"))
            .bearer_auth(SOURCE_TOKEN)
            .body(vec![b' '; 2 * 1024 * 1024]),
    )
    .await;
    assert!(a
        .assert_problem(413)
        .contains("`body_bytes` = 1048576 bytes"));
}
