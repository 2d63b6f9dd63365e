//! Semantics revisions 3 and 4 through the watcher's routes, in-process on a simulated clock
//! (no process adds anything here: the routes, the engine and the record): task states in every
//! wire form on the push route (serve.md "Routes"), an invalid `status.timestamp` as a warning,
//! zero-value timestamps, the official SDKs' push order for questions, and a status stamped
//! ahead of its receipt (semantics.md "Time", "Questions that expire"). The same kinds are
//! pinned on the engine in `shared/watcher-runtime/tests/rules_revision3.rs`,
//! `rules_revision4.rs` and `cases.rs`.

use jiff::Timestamp;
use serde_json::{json, Value};
use watcher_core::time::Instant;

use crate::common::{expectation, fmt, one_expectation, plus, status_update, InProcess, URI};

const MANIFEST: &str = "exp-manifest-1";
/// The clock's start.
const T0: &str = "2026-09-10T12:00:00Z";

/// A question (§11) stamped `stamp`, raising `id` about shipment `shipment`, answered by
/// `answered:{task}`, due at `due`.
fn question(task: &str, id: &str, shipment: &str, stamp: &str, due: Timestamp) -> Value {
    status_update(
        task,
        json!({
            "state": "TASK_STATE_INPUT_REQUIRED",
            "timestamp": stamp,
            "message": {
                "messageId": format!("m-{id}"), "role": "ROLE_AGENT",
                "parts": [ { "text": "Which warehouse?" } ],
                "metadata": { URI: { "expectations": [ {
                    "expectationId": id, "kind": "shipment.manifest",
                    "subject": { "type": "shipment", "id": shipment },
                    "expects": "an answer", "satisfiedBy": { "factKey": format!("answered:{task}") },
                    "dueAt": fmt(due), "basis": "declared",
                } ] } },
            },
        }),
    )
}

/// The 0.3 name and the ProtoJSON number of CANCELED withdraw what the task raised; a state that
/// names none is 400 problem+json naming `status.state`, and changes nothing.
#[tokio::test]
async fn every_wire_form_of_canceled_withdraws_and_a_non_state_is_refused() {
    let w = InProcess::at(T0);
    let due = plus(w.now(), 3600);
    for (i, state) in [json!("canceled"), json!(5)].into_iter().enumerate() {
        let task = format!("task-c{i}");
        let id = format!("{MANIFEST}-{i}");
        let shipment = format!("PA-C{i}");
        let raised = w.push(&one_expectation(&task, &id, &shipment, due)).await;
        assert_eq!(raised.body["raised"], json!([id]), "{raised:?}");
        let canceled = w
            .push(&status_update(&task, json!({ "state": state })))
            .await;
        assert_eq!(canceled.status, 200, "{state}: {canceled:?}");
        assert_eq!(canceled.body["withdrawn"], json!([id]), "{state}");
        let record = w.shipment(&shipment).await.expect("recorded");
        assert_eq!(expectation(&record, &id)["status"], "withdrawn", "{state}");
    }

    let raised = w
        .push(&one_expectation("task-u", MANIFEST, "PA-U", due))
        .await;
    assert_eq!(raised.status, 200, "{raised:?}");
    for state in [
        json!("TASK_STATE_UNSPECIFIED"),
        json!(0),
        json!("cancelled"),
        json!("TASK_STATE_PAUSED"),
        json!(12),
    ] {
        let answer = w
            .push(&status_update("task-u", json!({ "state": state })))
            .await;
        let detail = answer.assert_problem(400);
        assert!(detail.contains("status.state"), "{state}: {detail}");
    }
    let record = w.shipment("PA-U").await.expect("recorded");
    assert_eq!(expectation(&record, MANIFEST)["status"], "open");
}

/// An invalid `status.timestamp` is treated as absent and reported as a warning.
#[tokio::test]
async fn an_invalid_status_timestamp_is_a_warning() {
    let w = InProcess::at(T0);
    let answer = w
        .push(&status_update(
            "task-w",
            json!({ "state": "TASK_STATE_WORKING", "timestamp": "2026-09-10T05:00Z" }),
        ))
        .await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let warnings = answer.list("warnings");
    assert_eq!(warnings.len(), 1, "{answer:?}");
    assert!(
        warnings[0]
            .as_str()
            .is_some_and(|w| w.contains("status.timestamp")),
        "{answer:?}"
    );
    let clean = w
        .push(&status_update(
            "task-w",
            json!({ "state": "TASK_STATE_WORKING" }),
        ))
        .await;
    assert!(clean.body.get("warnings").is_none(), "{clean:?}");
}

/// A fact stamped with an unset time takes its receipt time; the value as given is kept.
#[tokio::test]
async fn a_zero_value_observed_at_takes_the_receipt_time() {
    let w = InProcess::at(T0);
    let fact = json!({
        "factKey": "shipment.departed:PA-Z",
        "observedAt": "0001-01-01T00:00:00Z",
        "subject": { "type": "shipment", "id": "PA-Z" },
    });
    let answer = w.report(&fact).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    let record = w.shipment("PA-Z").await.expect("recorded");
    let f = &record["facts"][0];
    assert_eq!(f["claimedObservedAt"], "0001-01-01T00:00:00Z", "{record:#}");
    assert_eq!(f["observedAt"], json!(T0), "the receipt time: {record:#}");
    assert_eq!(f["observedAt"], f["receivedAt"], "{record:#}");
}

/// The official SDKs' order: a timestamp-less `Task` snapshot (received first, after the
/// agent's stamps by the watcher's clock), WORKING and then INPUT_REQUIRED stamped by the agent.
/// The question stays open until a status the agent stamps after it.
#[tokio::test]
async fn an_sdk_agents_question_stays_open() {
    let w = InProcess::at(T0);
    let now = w.now();
    let task = "task-sdk";
    let snapshot = json!({ "task": { "id": task, "contextId": "ctx-task-sdk",
                                     "status": { "state": "TASK_STATE_SUBMITTED" } } });
    assert_eq!(w.push(&snapshot).await.status, 200);
    let working = status_update(
        task,
        json!({ "state": "TASK_STATE_WORKING", "timestamp": fmt(plus(now, -2)) }),
    );
    assert_eq!(w.push(&working).await.status, 200);
    let asked = w
        .push(&question(
            task,
            "q-sdk",
            "PA-Q",
            &fmt(plus(now, -1)),
            plus(now, 3600),
        ))
        .await;
    assert_eq!(asked.body["raised"], json!(["q-sdk"]), "{asked:?}");
    let r = w.shipment("PA-Q").await.expect("recorded");
    assert_eq!(expectation(&r, "q-sdk")["status"], "open", "{r:#}");
    // A WORKING status the agent stamps after its question answers it.
    let answered = status_update(
        task,
        json!({ "state": "TASK_STATE_WORKING", "timestamp": fmt(now) }),
    );
    assert_eq!(w.push(&answered).await.status, 200);
    let r = w.shipment("PA-Q").await.expect("recorded");
    let q = expectation(&r, "q-sdk");
    assert_eq!(q["status"], "satisfied", "{q:#}");
    assert_eq!(q["satisfaction"]["source"], "watcher:task-lifecycle");
    assert_eq!(q["satisfaction"]["observedAt"], json!(fmt(now)));
}

/// An A2A 0.3 peer's push (`kind` discriminator, lowercase state) goes through the 0.3 adapter.
#[tokio::test]
async fn a_0_3_push_withdraws_like_a_1_0_push() {
    let w = InProcess::at(T0);
    let due = plus(w.now(), 3600);
    let raised = w
        .push(&one_expectation("task-03", MANIFEST, "PA-03", due))
        .await;
    assert_eq!(raised.body["raised"], json!([MANIFEST]), "{raised:?}");
    let push = json!({ "kind": "status-update", "taskId": "task-03", "contextId": "ctx-task-03",
                       "final": true, "status": { "state": "canceled" } });
    let answer = w.push(&push).await;
    assert_eq!(answer.status, 200, "{answer:?}");
    assert_eq!(answer.body["withdrawn"], json!([MANIFEST]));
}

/// Revision 4: a WORKING status stamped twelve hours ahead (a clock glitch) answers no question
/// asked after it; one stamped ahead after the question answers it at its receipt, and the
/// subject view keeps the timestamp exactly as given (`+05:30`) beside the effective value, on
/// the record and on the fact (semantics.md "Time").
#[tokio::test]
async fn a_status_stamped_ahead_answers_at_its_receipt_and_is_kept_as_given() {
    let w = InProcess::at(T0);
    let now = w.now();
    let task = "task-ahead";
    // 12 h ahead, written in +05:30: the wall-clock text of `from` + 12 h + 5 h 30.
    let ahead = |from: Timestamp| {
        let local = fmt(plus(from, 12 * 3600 + 5 * 3600 + 30 * 60));
        format!("{}+05:30", local.trim_end_matches('Z'))
    };
    let glitch = status_update(
        task,
        json!({ "state": "TASK_STATE_WORKING", "timestamp": ahead(now) }),
    );
    assert_eq!(w.push(&glitch).await.status, 200);
    w.clock.set(Instant::from_timestamp(plus(now, 1)).unwrap());
    let asked = w
        .push(&question(
            task,
            "q-ahead",
            "PA-AHEAD",
            &fmt(plus(now, 1)),
            plus(now, 3600),
        ))
        .await;
    assert_eq!(asked.body["raised"], json!(["q-ahead"]), "{asked:?}");
    let r = w.shipment("PA-AHEAD").await.expect("recorded");
    assert_eq!(expectation(&r, "q-ahead")["status"], "open", "{r:#}");

    let received = plus(now, 2);
    w.clock.set(Instant::from_timestamp(received).unwrap());
    let stamp = ahead(received);
    let answered = status_update(
        task,
        json!({ "state": "TASK_STATE_WORKING", "timestamp": stamp }),
    );
    assert_eq!(w.push(&answered).await.status, 200);
    let r = w.shipment("PA-AHEAD").await.expect("recorded");
    let sat = &expectation(&r, "q-ahead")["satisfaction"];
    assert_eq!(sat["source"], "watcher:task-lifecycle", "{r:#}");
    assert_eq!(sat["claimedObservedAt"], json!(stamp), "{r:#}");
    assert_eq!(sat["observedAt"], sat["satisfiedAt"], "{r:#}");
    assert_eq!(
        sat["observedAt"],
        json!(fmt(received)),
        "at its receipt: {r:#}"
    );
    let fact = r["facts"]
        .as_array()
        .and_then(|f| f.iter().find(|f| f["factKey"] == "answered:task-ahead"))
        .expect("the answer is on the subject");
    assert_eq!(fact["claimedObservedAt"], json!(stamp), "{r:#}");
}
