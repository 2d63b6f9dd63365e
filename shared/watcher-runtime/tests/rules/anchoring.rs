//! Anchoring (expectations-v1 §9.3): re-anchored due times, projections kept, fallbacks.

use super::*;

#[test]
fn a_chain_of_four_anchored_steps_with_the_first_missing_lapses_once() {
    let out = raised(&[
        exp("S1", &t("10T02:00")),
        exp("S2", &t("10T03:00"))
            .anchor("S1", "PT1H")
            .after(&["S1"]),
        exp("S3", &t("10T04:00"))
            .anchor("S2", "PT1H")
            .after(&["S2"]),
        exp("S4", &t("10T05:00"))
            .anchor("S3", "PT1H")
            .after(&["S3"]),
    ])
    .run();
    assert_eq!(out.lapses(), [lapse("S1", "overdue", &t("10T02:00"))]);
    for id in ["S2", "S3", "S4"] {
        assert_eq!(out.record_lapses(id), [], "{id} waits on its anchor");
        assert_eq!(out.record(id)["status"], "open");
    }
}

#[test]
fn a_late_anchor_reanchors_and_keeps_the_projection() {
    let out = raised(&[
        exp("A", &t("10T02:00")).grace("PT1H"),
        exp("B", &t("10T04:00"))
            .grace("PT1H")
            .anchor("A", "PT2H")
            .after(&["A"]),
    ])
    .report(&t("10T05:00"), "A", &t("10T04:30"))
    .run();
    let a = out.record("A");
    assert_eq!(a["status"], "satisfied");
    assert_eq!(a["satisfaction"]["late"], json!(true));
    assert_eq!(a["satisfaction"]["observedAt"], t("10T04:30"));
    assert_eq!(a["satisfaction"]["satisfiedAt"], t("10T05:00"));
    let b = out.record("B");
    assert_eq!(b["dueAt"], t("10T06:30"), "anchor observedAt + offset");
    assert_eq!(b["projectedDueAt"], t("10T04:00"), "projection kept");
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T03:00")),
            lapse("B", "overdue", &t("10T07:30"))
        ]
    );
    let block = out.lapse_blocks()[1];
    assert_eq!(block["dueAt"], t("10T06:30"));
    assert_eq!(block["projectedDueAt"], t("10T04:00"));
    assert_eq!(block["lastFactAt"], t("10T04:30"));
    assert_eq!(
        out.lapse_tasks()[1]["request"]["message"]["messageId"],
        format!("lapse:B:overdue:{}", t("10T06:30"))
    );
    let reanchored = out.of_type("reanchored");
    assert_eq!(reanchored.len(), 1);
    assert_eq!(reanchored[0]["expectationId"], "B");
    assert_eq!(reanchored[0]["dueAt"], t("10T06:30"));
}

#[test]
fn a_reanchor_into_the_past_lapses_at_once() {
    let out = raised(&[
        exp("A", &t("10T09:00")),
        exp("B", &t("10T12:00")).anchor("A", "PT1H"),
    ])
    // Received at 08:30, observed 07:00: B's new due time 08:00 has already passed.
    .report(&t("10T08:30"), "A", &t("10T07:00"))
    .run();
    assert_eq!(out.lapses(), [lapse("B", "overdue", &t("10T08:30"))]);
    assert_eq!(out.lapse_blocks()[0]["dueAt"], t("10T08:00"));
    assert_eq!(out.lapse_blocks()[0]["projectedDueAt"], t("10T12:00"));
}

#[test]
fn an_anchor_already_satisfied_reanchors_at_raising() {
    let out = raised(&[exp("A", &t("10T09:00"))])
        .report(&t("10T02:00"), "A", &t("10T01:30"))
        .raise(
            &t("10T03:00"),
            &[exp("B", &t("10T12:00")).anchor("A", "PT3H")],
        )
        .run();
    assert_eq!(out.record("B")["dueAt"], t("10T04:30"));
    assert_eq!(out.record("B")["projectedDueAt"], t("10T12:00"));
    assert_eq!(out.lapses(), [lapse("B", "overdue", &t("10T04:30"))]);
}

#[test]
fn an_anchor_withdrawn_falls_back_to_the_projection_and_lapses_at_once_if_past() {
    let out = raised(&[
        exp("A", &t("10T06:00")),
        exp("B", &t("10T03:00")).anchor("A", "PT1H"),
    ])
    .push_withdraw(&t("10T05:00"), TASK, CTX, &["A"], "booking moved")
    .run();
    let a = out.record("A");
    assert_eq!(a["status"], "withdrawn");
    assert_eq!(a["withdrawal"]["withdrawnAt"], t("10T05:00"));
    assert!(
        s(&a["withdrawal"]["reason"]).contains("booking moved"),
        "{}",
        a["withdrawal"]
    );
    assert_eq!(out.lapses(), [lapse("B", "overdue", &t("10T05:00"))]);
    let block = out.lapse_blocks()[0];
    assert_eq!(block["dueAt"], t("10T03:00"));
    assert_eq!(block["projectedDueAt"], t("10T03:00"));
    assert_eq!(out.record_lapses("A"), [], "withdrawn before its due time");
}

#[test]
fn an_anchor_withdrawn_before_the_projection_lapses_on_it() {
    let out = raised(&[
        exp("A", &t("10T06:00")),
        exp("B", &t("10T03:00")).grace("PT30M").anchor("A", "PT1H"),
    ])
    .push_withdraw(&t("10T02:00"), TASK, CTX, &["A"], "not needed")
    .run();
    assert_eq!(out.lapses(), [lapse("B", "overdue", &t("10T03:30"))]);
}
