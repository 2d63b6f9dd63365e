//! `skipped` (expectations-v1 §9.1): raised at once when a later expectation is satisfied.

use super::*;

/// `A` due 20:00 with two hours' grace and `B` after it, raised at 01:00; `B`'s fact received at
/// 05:00, observed 04:59, long before `A`'s due time.
fn b_satisfied_before_a_is_due() -> common::Scenario {
    raised(&[
        exp("A", &t("10T20:00")).grace("PT2H"),
        exp("B", &t("10T22:00")).after(&["A"]),
    ])
    .report(&t("10T05:00"), "B", &t("10T04:59"))
}

#[test]
fn skipped_is_raised_at_once_before_due() {
    let out = b_satisfied_before_a_is_due().until(&t("10T06:00")).run();
    assert_eq!(out.lapses(), [lapse("A", "skipped", &t("10T05:00"))]);
    let b = out.lapse_blocks()[0];
    assert_eq!(b["dueAt"], t("10T20:00"));
    assert_eq!(b["projectedDueAt"], t("10T20:00"));
    assert_eq!(b["lapsedAt"], t("10T05:00"));
    assert_eq!(b["satisfiedAfter"], json!(["B"]));
    assert_eq!(b["lastFactAt"], t("10T04:59"));
    assert_eq!(
        out.lapse_tasks()[0]["request"]["message"]["messageId"],
        format!("lapse:A:skipped:{}", t("10T20:00"))
    );
    assert_eq!(out.record("A")["status"], "open", "a lapse does not close");
    assert_eq!(out.record("B")["status"], "satisfied");
}

#[test]
fn skipped_suppresses_the_later_overdue() {
    let out = b_satisfied_before_a_is_due().run();
    assert_eq!(out.lapses(), [lapse("A", "skipped", &t("10T05:00"))]);
    assert_eq!(out.record_lapses("A"), [pair("skipped", &t("10T05:00"))]);
}

#[test]
fn skipped_is_raised_even_after_overdue() {
    let out = raised(&[
        exp("A", &t("10T02:00")),
        exp("B", &t("10T22:00")).after(&["A"]),
    ])
    .report(&t("10T05:00"), "B", &t("10T04:59"))
    .run();
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T02:00")),
            lapse("A", "skipped", &t("10T05:00"))
        ]
    );
}
