//! Rules settled by semantics revision 3 (semantics.md "Time", "States", "Raising", "Questions
//! that expire"; serve.md "Routes" for task states), each driven through `replay::run` on a fresh
//! `MemoryStore` and asserting the value the contract gives. Each test fails on the behaviour
//! before the revision.

use crate::common;

use common::{
    asked, exp, key_of, lapse, lifecycle_answer, question, question_metadata, question_of, raised,
    scenario, t, CTX, FEED, TASK, URI,
};
use serde_json::{json, Value};

// ------------------------------------------------------- zero-value timestamps ("Time")

/// A departure stamped with an unset time re-anchors from its receipt, not from year 1 or 1970.
#[test]
fn a_zero_value_observed_at_is_a_missing_timestamp() {
    for zero in [
        "0001-01-01T00:00:00Z",
        "1970-01-01T00:00:00Z",
        "1970-01-01T01:00:00+01:00",
    ] {
        let out = raised(&[
            exp("D", &t("10T04:00")).grace("PT1H"),
            exp("A", &t("10T10:00"))
                .grace("PT2H")
                .anchor("D", "PT6H")
                .after(&["D"]),
        ])
        .report(&t("10T03:00:05"), "D", zero)
        .until(&t("10T14:00"))
        .run();
        let d = out.record("D");
        assert_eq!(d["status"], "satisfied", "{zero}");
        assert_eq!(d["satisfaction"]["observedAt"], t("10T03:00:05"), "{zero}");
        assert_eq!(
            d["satisfaction"]["claimedObservedAt"], zero,
            "kept exactly as given"
        );
        assert_eq!(d["satisfaction"]["late"], false);
        assert_eq!(out.record("A")["dueAt"], t("10T09:00:05"), "{zero}");
        assert_eq!(
            out.lapses(),
            [lapse("A", "overdue", &t("10T11:00:05"))],
            "{zero}"
        );
        assert_eq!(
            out.lapse_tasks()[0]["request"]["message"]["messageId"],
            format!("lapse:A:overdue:{}", t("10T09:00:05"))
        );
    }
}

/// A zero-value `status.timestamp` is absent: receipt order decides, and the answer is observed
/// at the receipt time.
#[test]
fn a_zero_value_status_timestamp_is_absent() {
    let out = asked(Some(&t("10T01:00")))
        .working(&t("10T02:00"), "1970-01-01T00:00:00Z")
        .run();
    let q = out.record("Q");
    assert_eq!(q["status"], "satisfied");
    assert_eq!(q["satisfaction"]["observedAt"], t("10T02:00"));
    assert_eq!(out.lapses(), []);
}

/// A `status.timestamp` that is not an instant is treated as absent, not refused.
#[test]
fn an_invalid_status_timestamp_is_absent() {
    let out = asked(Some(&t("10T01:00")))
        .working(&t("10T02:00"), "yesterday")
        .run();
    assert_eq!(out.record("Q")["status"], "satisfied");
    assert_eq!(out.record("Q")["satisfaction"]["observedAt"], t("10T02:00"));
}

// ---------------------------------------------------------------- bounds ("States")

/// An expectation raised past its deadline lapses at once and no longer counts for the
/// per-agent bound against the next one of the same event.
#[test]
fn the_agent_bound_counts_after_earlier_items_of_the_same_event() {
    let out = raised(&[
        exp("E1", &t("10T00:30")).subject("shipment", "S1"),
        exp("E2", &t("10T05:00")).subject("shipment", "S2"),
    ])
    .settings(json!({ "maxOpenPerAgent": 1 }))
    .until(&t("10T06:00"))
    .run();
    assert_eq!(out.rejections(), []);
    assert_eq!(
        out.lapses(),
        [
            lapse("E1", "overdue", &t("10T01:00")),
            lapse("E2", "overdue", &t("10T05:00")),
        ]
    );
}

/// Both bounds count the same set: the per-subject bound refuses the same way.
#[test]
fn the_subject_bound_counts_after_earlier_items_of_the_same_event() {
    let out = raised(&[exp("E1", &t("10T00:30")), exp("E2", &t("10T05:00"))])
        .settings(json!({ "maxOpenPerSubject": 1 }))
        .until(&t("10T06:00"))
        .run();
    assert_eq!(out.rejections(), []);
    assert!(out.recorded("E2"));
}

/// A deadline at exactly the current instant has not passed: it still counts, for both bounds.
#[test]
fn a_deadline_at_exactly_now_still_counts() {
    for (settings, bound) in [
        (json!({ "maxOpenPerSubject": 1 }), "per subject"),
        (json!({ "maxOpenPerAgent": 1 }), "per agent"),
    ] {
        let out = raised(&[exp("E1", &t("10T02:00"))])
            .settings(settings)
            .raise(&t("10T02:00"), &[exp("E2", &t("10T05:00"))])
            .until(&t("10T06:00"))
            .run();
        let reason = out.rejection("E2");
        assert!(reason.contains(bound), "{bound}: {reason}");
        assert_eq!(out.lapses(), [lapse("E1", "overdue", &t("10T02:00"))]);
    }
}

// ------------------------------------------------- questions ("Questions that expire")

fn snapshot(state: &str) -> Value {
    json!({ "task": { "id": "task-q", "contextId": CTX, "status": { "state": state } } })
}

/// What the official SDKs send: a timestamp-less `Task` snapshot, then statuses stamped by the
/// agent's clock (here behind the watcher's). The snapshot never answers the question.
#[test]
fn a_timestamp_less_snapshot_received_first_never_answers_a_question() {
    let out = scenario()
        .push_event("2026-09-10T01:00:00.000Z", snapshot("TASK_STATE_SUBMITTED"))
        .working("2026-09-10T01:00:00.002Z", "2026-09-10T00:59:59.998Z")
        .ask("2026-09-10T01:00:00.004Z", Some("2026-09-10T00:59:59.999Z"))
        .until(&t("10T06:00"))
        .run();
    out.assert_unanswered("");
}

/// Either status lacking a timestamp: receipt order. A later timestamp-less status answers, at
/// its receipt time.
#[test]
fn without_both_timestamps_receipt_order_decides() {
    let out = asked(Some(&t("10T03:00")))
        .push_event(&t("10T02:00"), snapshot("TASK_STATE_WORKING"))
        .run();
    let q = out.record("Q");
    assert_eq!(q["status"], "satisfied", "received after the question");
    assert_eq!(q["satisfaction"]["observedAt"], t("10T02:00"));

    let out = asked(None).working(&t("10T02:00"), &t("10T00:10")).run();
    let q = out.record("Q");
    assert_eq!(q["status"], "satisfied", "the question has no stamp");
    assert_eq!(q["satisfaction"]["observedAt"], t("10T00:10"));
}

/// Equal timestamps: the later receipt is after.
#[test]
fn equal_timestamps_are_ordered_by_receipt() {
    let out = asked(Some(&t("10T01:00")))
        .working(&t("10T02:00"), &t("10T01:00"))
        .run();
    assert_eq!(out.record("Q")["status"], "satisfied");
}

/// Moving between the interrupted states answers nothing.
#[test]
fn input_required_to_auth_required_answers_nothing() {
    let out = asked(Some(&t("10T01:00")))
        .push_state(&t("10T02:00"), "task-q", CTX, "TASK_STATE_AUTH_REQUIRED")
        .run();
    out.assert_unanswered("");
}

/// The answer is recorded whatever became of the question meanwhile: a successor with the same
/// key, raised from another task, is satisfied on time.
#[test]
fn a_superseded_question_answer_satisfies_its_successor() {
    let successor = question("Q2", "task-q", &t("10T05:00")).supersedes("Q");
    let out = asked(Some(&t("10T01:00")))
        .raise_in_lapse_task(&t("10T01:30"), &[successor])
        .push_unstamped_state(&t("10T03:00"), "task-q", CTX, "TASK_STATE_WORKING")
        .until(&t("10T06:00"))
        .run();
    assert_eq!(out.record("Q")["status"], "withdrawn");
    let q2 = out.record("Q2");
    assert_eq!(q2["status"], "satisfied");
    assert_eq!(
        q2["satisfaction"],
        lifecycle_answer(&t("10T03:00"), &t("10T03:00"))
    );
    assert_eq!(out.lapses(), []);
}

/// A question is answered once: later statuses of the task report no further facts.
#[test]
fn a_question_is_answered_once() {
    let out = asked(Some(&t("10T01:00")))
        .push_state(&t("10T02:00"), "task-q", CTX, "TASK_STATE_WORKING")
        .push_state(&t("10T02:30"), "task-q", CTX, "TASK_STATE_WORKING")
        .push_event(&t("10T03:00"), snapshot("TASK_STATE_COMPLETED"))
        .run();
    let lifecycle_facts: Vec<&Value> = out
        .of_type("fact")
        .into_iter()
        .filter(|f| f["source"] == "watcher:task-lifecycle")
        .collect();
    assert_eq!(lifecycle_facts.len(), 1, "{lifecycle_facts:?}");
}

/// A withdrawing state is final for its task: a status received afterwards answers nothing,
/// and a question asked afterwards is withdrawn at once.
#[test]
fn a_withdrawing_state_is_final_for_its_task() {
    let out = scenario()
        .push_artifact(&t("10T00:30"), "task-q", CTX, &[exp("E", &t("10T04:00"))])
        .push_state(&t("10T01:00"), "task-q", CTX, "TASK_STATE_CANCELED")
        .ask(&t("10T01:30"), Some(&t("10T01:30")))
        .push_state(&t("10T02:00"), "task-q", CTX, "TASK_STATE_WORKING")
        .run();
    assert_eq!(out.record("E")["status"], "withdrawn");
    assert_eq!(out.record("Q")["status"], "withdrawn");
    assert!(out
        .of_type("fact")
        .iter()
        .all(|f| f["source"] != "watcher:task-lifecycle"));
    assert_eq!(out.lapses(), []);
}

/// Expectations in a WORKING status message are ordinary: the task's later statuses do not
/// answer them.
#[test]
fn an_expectation_in_a_working_status_message_is_ordinary() {
    let out = scenario()
        .push_status(
            &t("10T01:00"),
            "task-q",
            CTX,
            "TASK_STATE_WORKING",
            Some(&t("10T01:00")),
            Some(question_metadata(&[question_of("task-q")])),
        )
        .push_state(&t("10T02:00"), "task-q", CTX, "TASK_STATE_COMPLETED")
        .run();
    out.assert_unanswered("");
}

// ------------------------------------------------------ task states (serve.md "Routes")

/// `E` due 05:00 raised at 01:00 from [`TASK`], then a `statusUpdate` of [`TASK`] to `state`
/// (as written on the wire: a name or a ProtoJSON number) at 02:00.
fn raised_then_state(state: &Value) -> common::Scenario {
    raised(&[exp("E", &t("10T05:00"))]).push_event(
        &t("10T02:00"),
        json!({ "statusUpdate": { "taskId": TASK, "contextId": CTX, "status": { "state": state } } }),
    )
}

/// The 0.3 name and the ProtoJSON number of a withdrawing state withdraw like the 1.0 name.
#[test]
fn every_wire_form_of_a_withdrawing_state_withdraws() {
    for state in [
        json!("TASK_STATE_CANCELED"),
        json!("canceled"),
        json!(5),
        json!("failed"),
        json!(4),
        json!("rejected"),
        json!(7),
    ] {
        let out = raised_then_state(&state).run();
        assert_eq!(out.record("E")["status"], "withdrawn", "{state}");
        assert_eq!(out.lapses(), [], "{state}");
    }
}

/// The 0.3 `input-required` asks a question like the 1.0 name.
#[test]
fn a_v03_input_required_asks_a_question() {
    let out = scenario()
        .push_event(
            &t("10T01:00"),
            json!({ "statusUpdate": { "taskId": "task-q", "contextId": CTX, "status": {
                "state": "input-required",
                "timestamp": t("10T01:00"),
                "message": { "messageId": "m1", "role": "ROLE_AGENT",
                             "parts": [ { "text": "which?" } ],
                             "metadata": question_metadata(&[question_of("task-q")]) },
            } } }),
        )
        .push_event(
            &t("10T02:00"),
            json!({ "statusUpdate": { "taskId": "task-q", "contextId": CTX,
                    "status": { "state": "working" } } }),
        )
        .run();
    assert_eq!(out.record("Q")["status"], "satisfied");
}

/// A state that names none is refused: the scenario step is malformed (serve answers 400).
#[test]
fn a_state_naming_no_state_is_refused() {
    for state in [
        json!("TASK_STATE_UNSPECIFIED"),
        json!(0),
        json!("paused"),
        json!("Canceled"),
        json!(42),
    ] {
        let doc = raised_then_state(&state).doc;
        let err = common::try_run_doc(&doc).expect_err("refused");
        assert!(err.contains("status.state"), "{state}: {err}");
    }
}

// --------------------------------------------------------- smaller settled readings

/// `supersedes` naming an expectation about another subject refuses the new one.
#[test]
fn supersedes_naming_another_subject_is_refused() {
    let out = raised(&[exp("A", &t("10T05:00"))])
        .raise(
            &t("10T01:10"),
            &[exp("B", &t("10T06:00"))
                .subject("shipment", "PA-2")
                .supersedes("A")],
        )
        .run();
    assert!(!out.recorded("B"));
    assert!(
        out.rejection("B").contains("supersedes"),
        "{}",
        out.rejection("B")
    );
    assert_eq!(out.record("A")["status"], "open");
}

/// An anchor resolves on its own subject only: an id raised later on another subject never
/// re-anchors it; its horizon still applies.
#[test]
fn an_anchor_resolves_on_its_own_subject_only() {
    let out = raised(&[exp("A", &t("10T05:00"))
        .anchor("D", "PT2H")
        .horizon(&t("10T08:00"))])
    .raise(
        &t("10T01:10"),
        &[exp("D", &t("10T03:00")).subject("shipment", "PA-2")],
    )
    .fact(
        &t("10T02:00"),
        &key_of("D"),
        &t("10T02:00"),
        Some(("shipment", "PA-2")),
        FEED,
    )
    .until(&t("10T09:00"))
    .run();
    assert_eq!(out.record("D")["status"], "satisfied");
    let a = out.record("A");
    assert_eq!(a["dueAt"], t("10T05:00"), "not re-anchored");
    assert_eq!(
        out.lapses(),
        [lapse("A", "stalled", &t("10T08:00"))],
        "waiting on its anchor, it never lapses overdue; the horizon applies"
    );
}

/// Raised past its deadline and satisfied by a fact carried in the same event: late, not
/// overdue.
#[test]
fn raised_past_its_deadline_and_satisfied_in_the_same_event_is_late() {
    let out = scenario()
        .raise_carrying(
            &t("10T01:00"),
            &[exp("E", &t("10T00:30"))],
            json!([ { "factKey": key_of("E"), "observedAt": t("10T00:50") } ]),
        )
        .run();
    let r = out.record("E");
    assert_eq!(r["status"], "satisfied");
    assert_eq!(r["satisfaction"]["late"], true);
    assert_eq!(out.lapses(), []);
    let _ = URI;
}

// ------------------------------------------------------------ leap seconds ("Time")

/// A leap second is read as the last nanosecond of its minute and kept as given.
#[test]
fn a_leap_second_is_the_last_nanosecond_of_its_minute() {
    let out = raised(&[exp("A", "2026-09-10T23:59:59.999999999Z").grace("PT1H")])
        .report(&t("11T01:00"), "A", "2026-09-10T23:59:60Z")
        .run();
    let sat = &out.record("A")["satisfaction"];
    assert_eq!(sat["observedAt"], "2026-09-10T23:59:59.999999999Z");
    assert_eq!(sat["claimedObservedAt"], "2026-09-10T23:59:60Z");
    assert_eq!(sat["late"], false, "at, not after, the due time");
}

/// An invalid `observedAt` on a fact an agent carries refuses that fact alone.
#[test]
fn an_invalid_carried_observed_at_refuses_that_fact_alone() {
    let out = raised(&[exp("A", &t("10T05:00")), exp("B", &t("10T05:00"))])
        .push_block(
            &t("10T02:00"),
            TASK,
            CTX,
            json!({ "facts": [
                { "factKey": key_of("A"), "observedAt": "2026-09-10T01:30Z",
                  "subject": { "type": "shipment", "id": "PA-1" } },
                { "factKey": key_of("B"), "observedAt": t("10T01:30"),
                  "subject": { "type": "shipment", "id": "PA-1" } },
            ] }),
        )
        .run();
    assert_eq!(out.record("A")["status"], "open");
    assert_eq!(out.record("B")["status"], "satisfied");
    let reasons: Vec<String> = out
        .of_type("rejected")
        .iter()
        .map(|r| common::s(&r["reason"]))
        .collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert!(reasons[0].contains("observedAt"), "{reasons:?}");
}
