//! Duplicate and disordered events from real A2A peers (`specs/agent-card-vs-lifecycle-
//! conformance.md`, `specs/a2a-delegation-in-depth.md`): terminal events delivered twice, statuses
//! without `timestamp`, `input-required → working → input-required` loops, events out of order,
//! a `Task` snapshot after its own updates, and 0.3-shaped pushes. The record stays right.

use crate::common;

use common::{exp, question_metadata, scenario, t};
use serde_json::{json, Value};

const CTX: &str = "ctx-d";

fn question(id: &str, due: &str) -> common::Exp {
    exp(id, due)
        .kind("question.answer")
        .subject("task", "task-d")
        .key(&format!("answered:{id}"))
        .set("basis", json!("declared"))
}

fn lines_of<'a>(out: &'a common::Outcome, ty: &str, id: &str) -> Vec<&'a Value> {
    out.of_type(ty)
        .into_iter()
        .filter(|l| l["expectationId"] == id)
        .collect()
}

#[test]
fn a_terminal_event_delivered_twice_withdraws_once() {
    let out = scenario()
        .push_artifact(&t("10T01:00"), "task-d", CTX, &[exp("E", &t("10T05:00"))])
        .push_state(&t("10T02:00"), "task-d", CTX, "TASK_STATE_CANCELED")
        .push_unstamped_state(&t("10T02:01"), "task-d", CTX, "TASK_STATE_CANCELED")
        .push_state(&t("10T02:02"), "task-d", CTX, "TASK_STATE_FAILED")
        .run();
    assert_eq!(lines_of(&out, "withdrawn", "E").len(), 1);
    let e = out.record("E");
    assert_eq!(e["withdrawal"]["withdrawnAt"], t("10T02:00"));
    assert!(
        e["withdrawal"]["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("TASK_STATE_CANCELED"),
        "the first withdrawing state names the reason: {e}"
    );
    assert_eq!(out.lapses(), []);
}

#[test]
fn completed_delivered_twice_answers_once() {
    let out = scenario()
        .push_question(
            &t("10T01:00"),
            "task-d",
            CTX,
            &[question("Q", &t("10T04:00"))],
        )
        .push_state(&t("10T02:00"), "task-d", CTX, "TASK_STATE_COMPLETED")
        .push_stamped_state(
            &t("10T02:05"),
            "task-d",
            CTX,
            "TASK_STATE_COMPLETED",
            &t("10T02:00"),
        )
        .run();
    assert_eq!(out.record("Q")["satisfaction"]["observedAt"], t("10T02:00"));
    assert_eq!(lines_of(&out, "satisfied", "Q").len(), 1);
    assert_eq!(out.of_type("fact").len(), 1);
}

/// `input-required → working → input-required → working`: each status answers only the question
/// asked before it.
#[test]
fn an_input_required_loop_answers_each_question_in_turn() {
    for stamped in [true, false] {
        // Each status received at `at`, stamped `at` too when `stamped`.
        let stamp = |at: &str| stamped.then(|| t(at));
        let ask = |sc: common::Scenario, at: &str, id: &str| {
            let q = question(id, &t("10T06:00"));
            sc.push_stamped_question(&t(at), "task-d", CTX, stamp(at).as_deref(), &[q])
        };
        let work = |sc: common::Scenario, at: &str| {
            let working = "TASK_STATE_WORKING";
            sc.push_status(&t(at), "task-d", CTX, working, stamp(at).as_deref(), None)
        };
        let sc = work(ask(scenario(), "10T01:00", "Q1"), "10T01:30");
        let out = work(ask(sc, "10T02:00", "Q2"), "10T02:30").run();
        assert_eq!(
            out.record("Q1")["satisfaction"]["observedAt"],
            t("10T01:30"),
            "stamped {stamped}"
        );
        assert_eq!(
            out.record("Q2")["satisfaction"]["observedAt"],
            t("10T02:30"),
            "stamped {stamped}"
        );
        assert_eq!(out.lapses(), [], "stamped {stamped}");
    }
}

/// The agent's WORKING (stamped after the question) arrives before the question itself: the
/// question is raised and answered at once, observed at the WORKING's timestamp.
#[test]
fn a_status_received_before_the_question_it_follows_answers_it() {
    let out = scenario()
        .push_stamped_state(
            &t("10T02:00"),
            "task-d",
            CTX,
            "TASK_STATE_WORKING",
            &t("10T01:45"),
        )
        .push_stamped_question(
            &t("10T02:01"),
            "task-d",
            CTX,
            Some(&t("10T01:30")),
            &[question("Q", &t("10T04:00"))],
        )
        .run();
    let q = out.record("Q");
    assert_eq!(q["status"], "satisfied");
    assert_eq!(q["satisfaction"]["observedAt"], t("10T01:45"));
    assert_eq!(q["satisfaction"]["satisfiedAt"], t("10T02:01"));
}

/// A `Task` snapshot after its own updates, carrying the question again and still
/// input-required: a redelivery, nothing changes; the next WORKING snapshot answers it.
#[test]
fn a_task_snapshot_after_its_own_updates() {
    let meta = question_metadata(&[question("Q", &t("10T04:00"))]);
    let snapshot = |state: &str, with_question: bool| {
        let mut status = json!({ "state": state });
        if with_question {
            status["message"] = json!({ "messageId": "m-q", "role": "ROLE_AGENT",
                                        "parts": [ { "text": "which?" } ], "metadata": meta });
        }
        json!({ "task": { "id": "task-d", "contextId": CTX, "status": status } })
    };
    // The question asked by a status stamped at its receipt, then the snapshot carrying it again.
    let redelivered = scenario()
        .push_status(
            &t("10T01:00"),
            "task-d",
            CTX,
            "TASK_STATE_INPUT_REQUIRED",
            Some(&t("10T01:00")),
            Some(meta.clone()),
        )
        .push_event(&t("10T01:10"), snapshot("TASK_STATE_INPUT_REQUIRED", true));
    let out = redelivered.run();
    assert_eq!(
        out.of_type("duplicate").len() + out.of_type("raised").len(),
        2,
        "{:?}",
        out.lines
    );
    assert_eq!(out.record("Q")["status"], "open");

    let out = redelivered
        .push_event(&t("10T01:20"), snapshot("TASK_STATE_WORKING", false))
        .run();
    assert_eq!(out.record("Q")["satisfaction"]["observedAt"], t("10T01:20"));
}

/// The same events as an A2A 0.3 peer pushes them: `kind` discriminators and lowercase states.
#[test]
fn a_0_3_peers_pushes_mean_the_same() {
    let out = scenario()
        .push_event(
            &t("10T01:00"),
            json!({ "kind": "artifact-update", "taskId": "task-d", "contextId": CTX,
                "artifact": { "artifactId": "a1", "parts": [ { "kind": "text", "text": "booked" } ],
                    "metadata": { common::URI: { "expectations": [ exp("E", &t("10T05:00")).json() ] } } } }),
        )
        .push_event(
            &t("10T01:30"),
            json!({ "kind": "status-update", "taskId": "task-d", "contextId": CTX, "final": false,
                "status": { "state": "input-required", "timestamp": t("10T01:30"),
                    "message": { "kind": "message", "messageId": "m1", "role": "agent",
                        "parts": [ { "kind": "text", "text": "which?" } ],
                        "metadata": question_metadata(&[question("Q", &t("10T04:00"))]) } } }),
        )
        .push_event(
            &t("10T02:00"),
            json!({ "kind": "task", "id": "task-d", "contextId": CTX,
                "status": { "state": "working", "timestamp": t("10T02:00") } }),
        )
        .push_event(
            &t("10T03:00"),
            json!({ "kind": "status-update", "taskId": "task-d", "contextId": CTX, "final": true,
                "status": { "state": "canceled", "timestamp": t("10T03:00") } }),
        )
        .run();
    assert_eq!(out.record("Q")["status"], "satisfied");
    assert_eq!(out.record("E")["status"], "withdrawn");
    assert_eq!(out.lapses(), []);
}
