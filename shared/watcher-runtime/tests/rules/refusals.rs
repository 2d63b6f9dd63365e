//! Refusals: undeclared kinds, cycles, references across subjects, the per-subject bound.

use super::*;

#[test]
fn a_kind_not_on_the_card_is_refused() {
    let out = raised(&[exp("A", &t("10T02:00")).kind("shipment.customs")]).run();
    assert_eq!(
        out.rejection("A"),
        "field `kind`: \"shipment.customs\" is not declared on the agent's card (expectations-v1 §6.2, §8)"
    );
    assert!(out.records().is_empty());
    assert_eq!(out.lapses(), []);
}

#[test]
fn a_cycle_through_anchor_and_after_is_refused() {
    let out = raised(&[
        exp("A", &t("10T02:00")).after(&["B"]),
        exp("B", &t("10T03:00")).anchor("A", "PT1H"),
        exp("C", &t("10T03:00")).after(&["C"]),
    ])
    .run();
    assert!(out.recorded("A"));
    assert_eq!(
        out.rejection("B"),
        "field `after`/`anchor`: a cycle through anchor and after: B → A → B (expectations-v1 §9.1, §9.3)"
    );
    assert_eq!(
        out.rejection("C"),
        "field `after[0]`: names the expectation itself, a cycle through anchor and after (expectations-v1 §9.1, §9.3)"
    );
    assert_eq!(out.records().len(), 1);
}

#[test]
fn an_anchor_or_after_naming_another_subject_is_refused() {
    let out = raised(&[exp("A", &t("10T02:00"))])
        .raise(
            &t("10T01:10"),
            &[
                exp("B", &t("10T03:00"))
                    .subject("shipment", "PA-2")
                    .anchor("A", "PT1H"),
                exp("C", &t("10T03:00"))
                    .subject("shipment", "PA-2")
                    .after(&["A"]),
            ],
        )
        .run();
    assert_eq!(
        out.rejection("B"),
        "field `anchor.expectationId`: A is about shipment PA-1, not shipment PA-2 (expectations-v1 §8)"
    );
    assert_eq!(
        out.rejection("C"),
        "field `after[0]`: A is about shipment PA-1, not shipment PA-2 (expectations-v1 §8)"
    );
    assert_eq!(out.records().len(), 1);
}

#[test]
fn the_per_subject_bound_is_enforced() {
    let out = raised(&[
        exp("A", &t("10T05:00")),
        exp("B", &t("10T05:00")),
        exp("C", &t("10T05:00")),
        exp("X", &t("10T05:00")).subject("shipment", "PA-2"),
    ])
    .settings(json!({ "maxOpenPerSubject": 2 }))
    .report(&t("10T02:00"), "A", &t("10T02:00"))
    .raise(&t("10T02:30"), &[exp("D", &t("10T05:00"))])
    .raise(&t("10T02:40"), &[exp("E", &t("10T05:00"))])
    .run();
    assert_eq!(
        out.rejection("C"),
        "open expectations on shipment PA-1 would exceed the bound 2 per subject (expectations-v1 §13.2)"
    );
    assert!(out.recorded("X"), "another subject has its own bound");
    assert!(
        out.recorded("D"),
        "a satisfied expectation no longer counts"
    );
    assert_eq!(
        out.rejection("E"),
        "open expectations on shipment PA-1 would exceed the bound 2 per subject (expectations-v1 §13.2)"
    );
    let ids: Vec<String> = out
        .records()
        .iter()
        .map(|r| s(&r["expectationId"]))
        .collect();
    assert_eq!(ids, ["A", "B", "X", "D"]);
}
