//! `stalled` (expectations-v1 §9.1): the horizon and the facts since.

use super::*;

#[test]
fn stalled_at_the_horizon() {
    let out = a_with_horizon(&t("12T00:00")).run();
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T03:00")),
            lapse("A", "stalled", &t("12T00:00"))
        ]
    );
    let block = out.lapse_blocks()[1];
    assert_eq!(block["dueAt"], t("10T02:00"));
    assert!(block.get("lastFactAt").is_none());
    assert_eq!(
        out.lapse_tasks()[1]["request"]["message"]["messageId"],
        format!("lapse:A:stalled:{}", t("10T02:00"))
    );
}

#[test]
fn not_stalled_when_a_fact_on_the_subject_arrived_since() {
    let out = a_with_horizon(&t("12T00:00"))
        .seen(&t("11T06:00"), &t("11T05:00"))
        .run();
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T03:00"))]);
    assert_eq!(out.record_lapses("A"), [pair("overdue", &t("10T03:00"))]);
}

#[test]
fn stalled_counts_only_facts_since_the_last_satisfaction() {
    // A fact before the last satisfying fact does not keep the subject alive.
    let out = raised(&[
        exp("A", &t("10T04:00")),
        exp("B", &t("10T12:00")).horizon(&t("11T00:00")),
    ])
    .seen(&t("10T02:00"), &t("10T02:00"))
    .report(&t("10T03:00"), "A", &t("10T03:00"))
    .run();
    assert_eq!(
        out.lapses(),
        [
            lapse("B", "overdue", &t("10T12:00")),
            lapse("B", "stalled", &t("11T00:00"))
        ]
    );
    assert_eq!(out.lapse_blocks()[1]["lastFactAt"], t("10T03:00"));
}
