//! A push whose expectations were all refused because their `expectationId`s were already
//! recorded for the agent (id reuse, expectations-v1 §8; semantics.md "Raising") says so: each
//! refusal's reason in `rejected`, and a `summary` of why nothing was raised and how to start
//! afresh (the README's walkthrough run a second time on the same database).

use serde_json::json;
use watcher_core::engine::raise::id_reused_reason;

use crate::common::{one_expectation, plus, InProcess, URI};

const T0: &str = "2026-09-10T12:00:00Z";

#[tokio::test]
async fn a_push_whose_every_expectation_reuses_an_id_says_why_nothing_was_raised() {
    let w = InProcess::at(T0);
    let due = plus(w.now(), 3600);
    let first = w
        .push(&one_expectation("task-1", "exp-1", "PA-1", due))
        .await;
    assert_eq!(first.body["raised"], json!(["exp-1"]), "{first:?}");
    assert!(first.body.get("summary").is_none(), "{first:?}");

    // The same id again with another due time: the walkthrough's artifact posted a second time.
    let again = w
        .push(&one_expectation("task-1", "exp-1", "PA-1", plus(due, 60)))
        .await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(again.body["raised"], json!([]));
    assert_eq!(
        again.body["rejected"],
        json!([{ "expectationId": "exp-1", "reason": id_reused_reason("exp-1") }])
    );
    let summary = again.body["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("nothing was raised: the one expectation this push carried was refused: its expectationId was already recorded for this agent")
            && summary.contains("an expectationId is never reused (expectations-v1 §8)")
            && summary.contains("a new `database` file"),
        "{summary}"
    );

    // From another task, the same content: refused as reuse too.
    let other_task = w
        .push(&one_expectation("task-2", "exp-1", "PA-1", due))
        .await;
    assert!(
        other_task.body["summary"].as_str().is_some(),
        "{other_task:?}"
    );
}

#[tokio::test]
async fn the_summary_counts_every_reused_id_and_is_absent_when_anything_else_happened() {
    let w = InProcess::at(T0);
    let due = plus(w.now(), 3600);
    let two = |a: &str, b: &str, kind_b: &str, shift: i64| {
        let one = |id: &str, kind: &str| {
            json!({ "expectationId": id, "kind": kind,
                "subject": { "type": "shipment", "id": "PA-2" },
                "expects": "the airline manifest",
                "satisfiedBy": { "factKey": format!("shipment.manifest.received:{id}") },
                "dueAt": crate::common::fmt(plus(due, shift)), "basis": "observed" })
        };
        json!({ "artifactUpdate": { "taskId": "task-2", "contextId": "ctx-2",
            "artifact": { "artifactId": "a-2", "parts": [{ "text": "booked" }],
                "extensions": [URI],
                "metadata": { URI: { "expectations": [one(a, "shipment.manifest"), one(b, kind_b)] } } } } })
    };
    let first = w.push(&two("exp-a", "exp-b", "shipment.manifest", 0)).await;
    assert_eq!(first.body["raised"], json!(["exp-a", "exp-b"]), "{first:?}");

    // Both ids again, other content: two refusals, both reuse.
    let both = w
        .push(&two("exp-a", "exp-b", "shipment.manifest", 60))
        .await;
    assert_eq!(both.body["raised"], json!([]));
    assert_eq!(both.list("rejected").len(), 2);
    let summary = both.body["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with("nothing was raised: all 2 expectations this push carried were refused: their expectationIds were already recorded"),
        "{summary}"
    );

    // One reused id beside a new one: something was raised, no summary.
    let mixed = w
        .push(&two("exp-a", "exp-c", "shipment.manifest", 120))
        .await;
    assert_eq!(mixed.body["raised"], json!(["exp-c"]), "{mixed:?}");
    assert!(mixed.body.get("summary").is_none(), "{mixed:?}");

    // A reused id beside another refusal (a kind the card does not declare): no summary, the
    // reasons say why.
    let other = w
        .push(&two("exp-a", "exp-d", "shipment.teleport", 180))
        .await;
    assert_eq!(other.body["raised"], json!([]), "{other:?}");
    assert_eq!(other.list("rejected").len(), 2);
    assert!(other.body.get("summary").is_none(), "{other:?}");

    // The same content again: a replay, named in `alreadyRecorded`, no summary.
    let replay = w.push(&two("exp-a", "exp-b", "shipment.manifest", 0)).await;
    assert_eq!(replay.body["alreadyRecorded"], json!(["exp-a", "exp-b"]));
    assert!(replay.body.get("summary").is_none(), "{replay:?}");
}
