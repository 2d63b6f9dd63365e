//! Raising and id reuse (expectations-v1 §8).

use super::*;

#[test]
fn id_reuse_is_refused_and_an_identical_redelivery_is_a_no_op() {
    let a = exp("A", &t("10T02:00"));
    let out = raised(std::slice::from_ref(&a))
        .raise(&t("10T01:10"), std::slice::from_ref(&a))
        .raise(
            &t("10T01:20"),
            &[a.clone().set("dueAt", json!(t("10T05:00")))],
        )
        .push_artifact(&t("10T01:30"), "task-2", CTX, &[a])
        .run();
    let duplicates = out.of_type("duplicate");
    assert_eq!(duplicates.len(), 1);
    assert_eq!(duplicates[0]["expectationId"], "A");
    let reasons = out.rejection_reasons("A");
    assert_eq!(
        reasons.len(),
        2,
        "other content, then another task: {reasons:?}"
    );
    for r in &reasons {
        assert!(
            r.starts_with("field `expectationId`: A was already raised by this agent"),
            "{r}"
        );
        assert!(r.contains("(expectations-v1 §8)"), "{r}");
    }
    assert_eq!(out.records().len(), 1);
    assert_eq!(out.record("A")["dueAt"], t("10T02:00"));
    assert_eq!(out.record("A")["raisedAt"], t("10T01:00"));
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T02:00"))]);
}

#[test]
fn a_whole_push_delivered_twice_is_a_no_op() {
    let raise = [exp("A", &t("10T02:00")), exp("B", &t("10T03:00"))];
    let once = raised(&raise)
        .report(&t("10T01:30"), "B", &t("10T01:29"))
        .run();
    let out = raised(&raise)
        .raise(&t("10T01:00"), &raise)
        .report(&t("10T01:30"), "B", &t("10T01:29"))
        .report(&t("10T01:30"), "B", &t("10T01:29"))
        .run();
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T02:00"))]);
    assert_eq!(
        out.lapse_tasks(),
        once.lapse_tasks(),
        "no second lapse task"
    );
    assert_eq!(out.of_type("raised").len(), 2);
    let duplicates: Vec<String> = out
        .of_type("duplicate")
        .iter()
        .map(|d| s(&d["expectationId"]))
        .collect();
    assert_eq!(duplicates, ["A", "B"]);
    let facts = out.of_type("fact");
    assert_eq!(facts.len(), 2);
    assert_eq!(facts[0]["duplicate"], json!(false));
    assert_eq!(facts[0]["satisfied"], json!(["B"]));
    assert_eq!(facts[1]["duplicate"], json!(true));
    assert_eq!(facts[1]["satisfied"], json!([]));
    assert_eq!(out.records(), once.records(), "the same record as once");
}
