//! Instants and durations: UTC, offsets, refused durations, facts from the future, the deadline instant.

use super::*;

#[test]
fn offsets_are_normalised_to_utc() {
    let out = raised(&[exp("A", "2026-09-10T04:00:00+02:00")
        .grace("PT30M")
        .horizon("2026-09-11T02:00:00.500+02:00")])
    .run();
    let a = out.record("A");
    assert_eq!(a["projectedDueAt"], "2026-09-10T02:00:00Z");
    assert_eq!(a["dueAt"], "2026-09-10T02:00:00Z");
    assert_eq!(a["horizon"], "2026-09-11T00:00:00.5Z");
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", "2026-09-10T02:30:00Z"),
            lapse("A", "stalled", "2026-09-11T00:00:00.5Z")
        ]
    );
    assert_eq!(
        out.lapse_tasks()[0]["request"]["message"]["messageId"],
        "lapse:A:overdue:2026-09-10T02:00:00Z"
    );
}

#[test]
fn a_fact_observed_at_with_an_offset_is_normalised() {
    let out = raised(&[exp("A", &t("10T06:00"))])
        .report(&t("10T05:00"), "A", "2026-09-10T06:30:00+02:00")
        .run();
    assert_eq!(out.record("A")["satisfaction"]["observedAt"], t("10T04:30"));
}

#[test]
fn months_and_negative_durations_are_refused_naming_the_field() {
    let out = raised(&[
        exp("M", &t("10T02:00")).grace("P1M"),
        exp("N", &t("10T02:00")).grace("-PT1H"),
        exp("O", &t("10T02:00")).anchor("M", "-PT2H"),
        exp("Y", &t("10T02:00")).grace("P1Y"),
    ])
    .run();
    for (id, field, why) in [
        ("M", "field `grace`:", "months"),
        ("N", "field `grace`:", "negative"),
        ("O", "field `anchor.offset`:", "negative"),
        ("Y", "field `grace`:", "years"),
    ] {
        let reason = out.rejection(id);
        assert!(
            reason.starts_with(field) && reason.contains(why),
            "{id}: {reason}"
        );
    }
    assert!(out.records().is_empty());
}

#[test]
fn a_fact_observed_in_the_future_of_its_receipt_uses_the_receipt_time() {
    let out = raised(&[
        // On time by the receipt time, late by the claimed one.
        exp("A", &t("10T06:00")),
        exp("B", &t("10T09:00")).anchor("A", "PT1H"),
        exp("C", &t("10T08:00")),
    ])
    .report(&t("10T05:00"), "A", &t("10T07:00"))
    .run();
    let a = out.record("A");
    assert_eq!(
        a["satisfaction"],
        json!({
            "factKey": key_of("A"),
            "source": FEED,
            "satisfiedAt": t("10T05:00"),
            "observedAt": t("10T05:00"),
            "claimedObservedAt": t("10T07:00"),
            "late": false,
        })
    );
    assert_eq!(
        out.record("B")["dueAt"],
        t("10T06:00"),
        "re-anchored on the receipt time"
    );
    assert_eq!(
        out.lapses(),
        [
            lapse("B", "overdue", &t("10T06:00")),
            lapse("C", "overdue", &t("10T08:00"))
        ]
    );
    for b in out.lapse_blocks() {
        assert_eq!(b["lastFactAt"], t("10T05:00"));
    }
}

#[test]
fn a_fact_received_exactly_at_the_deadline_is_on_time() {
    let out = raised(&[exp("A", &t("10T02:00")).grace("PT1H")])
        .report(&t("10T03:00"), "A", &t("10T01:45"))
        .run();
    assert_eq!(out.lapses(), []);
    let a = out.record("A");
    assert_eq!(a["status"], "satisfied");
    assert_eq!(a["lapses"], json!([]));
    assert_eq!(a["satisfaction"]["satisfiedAt"], t("10T03:00"));
    assert_eq!(a["satisfaction"]["late"], json!(false));
}
