//! Withdrawal by the origin task's end (expectations-v1 §8.1).

use super::*;

#[test]
fn cancel_fail_and_reject_withdraw_and_complete_does_not() {
    for state in [
        "TASK_STATE_CANCELED",
        "TASK_STATE_FAILED",
        "TASK_STATE_REJECTED",
    ] {
        let out = raised(&[exp("A", &t("10T02:00"))])
            .push_stamped_state(&t("10T01:30"), TASK, CTX, state, &t("10T01:29"))
            .run();
        let a = out.record("A");
        assert_eq!(a["status"], "withdrawn", "{state}");
        assert_eq!(
            a["withdrawal"],
            json!({
                "withdrawnAt": t("10T01:30"),
                "reason": format!("origin task {TASK} reached {state} (expectations-v1 §8.1)"),
            }),
            "{state}"
        );
        assert_eq!(
            out.lapses(),
            [],
            "{state}: a withdrawn expectation never lapses"
        );
        assert_eq!(a["lapses"], json!([]));
    }
    let out = raised(&[exp("A", &t("10T02:00"))])
        .push_unstamped_state(&t("10T01:30"), TASK, CTX, "TASK_STATE_COMPLETED")
        .run();
    assert_eq!(out.record("A")["status"], "open");
    assert_eq!(out.record("A")["withdrawal"], Value::Null);
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T02:00"))]);
}

#[test]
fn canceling_the_origin_withdraws_its_successors_too() {
    let out = raised(&[exp("A", &t("10T02:00"))])
        .raise_in_lapse_task(&t("10T02:30"), &[exp("B", &t("10T05:00")).succeeds("A")])
        .push_unstamped_state(&t("10T03:00"), TASK, CTX, "TASK_STATE_CANCELED")
        .run();
    let b = out.record("B");
    assert_eq!(b["status"], "withdrawn");
    assert_eq!(
        b["withdrawal"]["reason"],
        format!("origin task {TASK} reached TASK_STATE_CANCELED (expectations-v1 §8.1)")
    );
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T02:00"))]);
}

#[test]
fn an_expectation_from_a_task_already_canceled_is_recorded_and_withdrawn() {
    let out = scenario()
        .push_unstamped_state(&t("10T01:00"), TASK, CTX, "TASK_STATE_CANCELED")
        .raise(&t("10T01:30"), &[exp("A", &t("10T02:00"))])
        .run();
    let a = out.record("A");
    assert_eq!(a["status"], "withdrawn");
    assert_eq!(a["raisedAt"], t("10T01:30"));
    assert_eq!(a["withdrawal"]["withdrawnAt"], t("10T01:30"));
    let reason = s(&a["withdrawal"]["reason"]);
    assert!(
        reason.contains(TASK) && reason.contains("TASK_STATE_CANCELED"),
        "{reason}"
    );
    assert_eq!(out.lapses(), []);
    assert_eq!(out.of_type("raised").len(), 1);
    assert_eq!(out.of_type("withdrawn").len(), 1);
}
