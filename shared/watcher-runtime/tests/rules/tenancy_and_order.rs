//! Tenancy (§13.5), who keeps time (§12.2), order at one instant, and the lapse task's shape.

use super::*;

#[test]
fn facts_are_tenant_scoped() {
    let out = raised(&[exp("A", &t("10T02:00")), exp("B", &t("10T03:00"))])
        .tenant("tenant-a")
        .report_in("tenant-b", &t("10T01:30"), "A", &t("10T01:30"))
        .report_in("tenant-a", &t("10T01:40"), "B", &t("10T01:40"))
        .run();
    let a = out.record("A");
    assert_eq!(a["tenant"], "tenant-a");
    assert_eq!(
        a["satisfaction"],
        Value::Null,
        "tenant B's fact does not reach tenant A"
    );
    assert_eq!(out.record("B")["status"], "satisfied");
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T02:00"))]);
    assert_eq!(
        out.lapse_blocks()[0]["lastFactAt"],
        t("10T01:40"),
        "only tenant A's facts are on its subject"
    );
}

#[test]
fn a_keeps_time_agent_gets_no_lapse_task_but_the_lapse_is_recorded() {
    let out = raised(&[exp("A", &t("10T02:00"))]).keeps_time(true).run();
    assert_eq!(out.lapse_tasks().len(), 0);
    assert_eq!(out.record_lapses("A"), [pair("overdue", &t("10T02:00"))]);
    assert_eq!(
        out.record("A")["lapses"][0]["messageId"],
        format!("lapse:A:overdue:{}", t("10T02:00"))
    );
    let shown = out.of_type("lapse");
    assert_eq!(shown.len(), 1);
    assert_eq!(shown[0]["at"], t("10T02:00"));
    assert_eq!(shown[0]["lapse"]["lapse"], "overdue");
}

#[test]
fn timers_at_one_instant_fire_in_raising_order_overdue_before_stalled() {
    let out = scenario()
        .raise(&t("10T00:10"), &[exp("P", &t("10T02:00"))])
        .raise(
            &t("10T00:20"),
            &[
                exp("Q", &t("10T01:00"))
                    .grace("PT1H")
                    .horizon(&t("10T02:00")),
                exp("R", &t("10T02:00")),
            ],
        )
        .run();
    assert_eq!(
        out.lapses(),
        [
            lapse("P", "overdue", &t("10T02:00")),
            lapse("Q", "overdue", &t("10T02:00")),
            lapse("Q", "stalled", &t("10T02:00")),
            lapse("R", "overdue", &t("10T02:00")),
        ]
    );
}

#[test]
fn inputs_at_a_timer_instant_are_applied_before_it() {
    // Two steps at the deadline: the second satisfies; the timer fires after both.
    let out = raised(&[exp("A", &t("10T02:00"))])
        .seen(&t("10T02:00"), &t("10T02:00"))
        .report(&t("10T02:00"), "A", &t("10T02:00"))
        .run();
    assert_eq!(out.lapses(), []);
    assert_eq!(out.record("A")["status"], "satisfied");
}

#[test]
fn lapse_task_shape() {
    let out = raised(&[exp("A", &t("10T02:00"))]).run();
    let task = out.lapse_tasks()[0];
    let message = &task["request"]["message"];
    assert_eq!(message["role"], "ROLE_USER");
    assert!(message.get("taskId").is_none());
    assert_eq!(message["extensions"], json!([URI]));
    assert_eq!(
        task["request"]["configuration"]["returnImmediately"],
        json!(true)
    );
    let block = &message["metadata"][URI]["lapse"];
    for field in [
        "expectationId",
        "kind",
        "subject",
        "expects",
        "lapse",
        "projectedDueAt",
        "dueAt",
        "lapsedAt",
        "lineage",
    ] {
        assert!(block.get(field).is_some(), "{field} is required (§10.1)");
    }
    assert!(block.get("satisfiedAfter").is_none());
    assert!(block.get("lastFactAt").is_none());
}
