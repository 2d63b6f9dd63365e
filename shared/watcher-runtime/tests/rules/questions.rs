//! Questions (expectations-v1 §11): answered, withdrawn, lapsed.

use super::*;

#[test]
fn a_question_is_answered_when_its_task_is_next_seen_working() {
    let out = asked(Some(&t("10T01:00")))
        .working(&t("10T02:00"), &t("10T01:59:30"))
        .run();
    let q = out.record("Q");
    assert_eq!(q["status"], "satisfied");
    assert_eq!(
        q["satisfaction"],
        lifecycle_answer(&t("10T02:00"), &t("10T01:59:30"))
    );
    assert_eq!(
        q["raisedBy"],
        json!({ "taskId": "task-q", "contextId": CTX })
    );
    assert_eq!(out.lapses(), []);
}

#[test]
fn a_question_is_withdrawn_when_its_task_is_canceled() {
    let out = asked(Some(&t("10T01:00")))
        .push_unstamped_state(&t("10T02:00"), "task-q", CTX, "TASK_STATE_CANCELED")
        .run();
    let q = out.record("Q");
    assert_eq!(q["status"], "withdrawn");
    assert_eq!(
        q["withdrawal"]["reason"],
        "origin task task-q reached TASK_STATE_CANCELED (expectations-v1 §8.1)"
    );
    assert_eq!(out.lapses(), []);
}

#[test]
fn an_unanswered_question_lapses_overdue() {
    let out = asked(Some(&t("10T01:00"))).run();
    assert_eq!(out.lapses(), [lapse("Q", "overdue", &t("10T05:00"))]);
    let block = out.lapse_blocks()[0];
    assert_eq!(block["kind"], "question.answer");
    assert_eq!(block["subject"], json!({ "type": "task", "id": "task-q" }));
    let message = &out.lapse_tasks()[0]["request"]["message"];
    assert_eq!(message["referenceTaskIds"], json!(["task-q"]));
    assert_eq!(message["contextId"], CTX);
}
