//! More of each rule: edge cases of the rules above, one test each.

use super::*;

#[test]
fn a_fact_received_exactly_at_the_horizon_prevents_the_stall() {
    let out = a_with_horizon(&t("11T00:00"))
        .seen(&t("11T00:00"), &t("10T23:00"))
        .run();
    assert_eq!(out.record_lapses("A"), [pair("overdue", &t("10T03:00"))]);
}

#[test]
fn a_due_time_already_past_at_raising_lapses_at_once() {
    let out = scenario()
        .raise(
            &t("10T05:00"),
            &[
                exp("A", &t("10T02:00")).grace("PT1H"),
                exp("B", &t("10T01:00")),
            ],
        )
        .run();
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T05:00")),
            lapse("B", "overdue", &t("10T05:00"))
        ],
        "in raising order"
    );
    assert_eq!(out.lapse_blocks()[0]["lapsedAt"], t("10T05:00"));
}

#[test]
fn references_follow_supersession() {
    let out = raised(&[
        exp("A", &t("10T02:00")),
        exp("B", &t("10T06:00")).anchor("A", "PT2H"),
        exp("C", &t("10T08:00")).after(&["A"]),
    ])
    .raise_in_lapse_task(
        &t("10T02:30"),
        &[exp("A2", &t("10T04:00")).key("done:A2").supersedes("A")],
    )
    // A was withdrawn by supersession: B does not fall back, it waits on A2.
    .fact(&t("10T03:00"), "done:A2", &t("10T02:50"), SHIP, FEED)
    .run();
    assert_eq!(out.record("B")["dueAt"], t("10T04:50"), "re-anchored on A2");
    assert_eq!(out.record("B")["projectedDueAt"], t("10T06:00"));
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T02:00")),
            lapse("B", "overdue", &t("10T04:50")),
            lapse("C", "overdue", &t("10T08:00")),
        ]
    );
    // And `after` naming A reaches A2: satisfying C (after [A]) skips A2 if still open.
    let out = raised(&[
        exp("A", &t("10T02:00")),
        exp("C", &t("10T08:00")).after(&["A"]),
    ])
    .raise(
        &t("10T02:30"),
        &[exp("A2", &t("10T09:00")).supersedes("A").key("done:A2")],
    )
    .report(&t("10T03:00"), "C", &t("10T03:00"))
    .run();
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T02:00")),
            lapse("A2", "skipped", &t("10T03:00"))
        ]
    );
    assert_eq!(out.lapse_blocks()[1]["satisfiedAfter"], json!(["C"]));
    assert_eq!(out.lapse_blocks()[1]["lineage"], json!(1));
}

#[test]
fn the_identity_rule_covers_the_current_due_time() {
    let out = raised(&[
        exp("A", &t("10T02:00")),
        exp("B", &t("10T09:00")).anchor("A", "PT1H"),
    ])
    .report(&t("10T01:30"), "A", &t("10T01:30"))
    // B's current due time is 02:30; a successor due then is identical.
    .raise(&t("10T03:00"), &[exp("B2", &t("10T02:30")).succeeds("B")])
    .run();
    assert!(out
        .rejection("B2")
        .starts_with("field `dueAt`: identical in kind, subject, satisfiedBy and dueAt to B"));
    assert_eq!(out.record("B")["status"], "open");
}

#[test]
fn superseding_a_satisfied_withdrawn_or_unknown_expectation_is_refused() {
    let out = raised(&[exp("A", &t("10T05:00")), exp("W", &t("10T05:00"))])
        .report(&t("10T01:30"), "A", &t("10T01:30"))
        .push_withdraw(&t("10T01:40"), TASK, CTX, &["W"], "")
        .raise(
            &t("10T02:00"),
            &[
                exp("A2", &t("10T06:00")).supersedes("A"),
                exp("W2", &t("10T06:00")).supersedes("W"),
                exp("Z2", &t("10T06:00")).supersedes("Z"),
            ],
        )
        .run();
    assert_eq!(
        out.rejection("A2"),
        "field `supersedes`: A is satisfied; only an open expectation can be superseded (expectations-v1 §10.3)"
    );
    assert_eq!(
        out.rejection("W2"),
        "field `supersedes`: W is withdrawn; only an open expectation can be superseded (expectations-v1 §10.3)"
    );
    assert_eq!(
        out.rejection("Z2"),
        "field `supersedes`: Z is not an expectation this agent raised (expectations-v1 §10.3)"
    );
    assert_eq!(
        out.record("W")["withdrawal"]["reason"],
        "withdrawn by the agent (expectations-v1 §8.1)"
    );
}

#[test]
fn the_lineage_bound_is_a_setting() {
    let out = raised(&[exp("A", &t("10T02:00"))])
        .settings(json!({ "lineageBound": 1 }))
        .raise(&t("10T02:10"), &[exp("B", &t("10T03:00")).succeeds("A")])
        .raise(
            &t("10T03:10"),
            &[exp("C", &t("10T04:00")).key(&key_of("A")).supersedes("B")],
        )
        .run();
    assert_eq!(out.record("B")["lineage"], json!(1));
    assert_eq!(
        out.rejection("C"),
        "lineage 2 exceeds the bound 1 (expectations-v1 §10.3)"
    );
}

#[test]
fn the_per_agent_bound_is_enforced() {
    let out = raised(&[
        exp("A", &t("10T05:00")),
        exp("B", &t("10T05:00")).subject("shipment", "PA-2"),
        exp("C", &t("10T05:00")).subject("shipment", "PA-3"),
    ])
    .settings(json!({ "maxOpenPerAgent": 2 }))
    .run();
    assert_eq!(
        out.rejection("C"),
        "open expectations of agent booking would exceed the bound 2 per agent (expectations-v1 §13.2)"
    );
    assert_eq!(out.records().len(), 2);
}

#[test]
fn an_agent_carries_facts_in_its_artifacts_after_its_expectations() {
    let out = scenario()
        .raise_carrying(
            &t("10T01:00"),
            &[exp("A", &t("10T05:00"))],
            json!([{ "factKey": key_of("A"), "observedAt": t("10T00:55"), "source": "forged" }]),
        )
        .run();
    let a = out.record("A");
    assert_eq!(a["status"], "satisfied");
    assert_eq!(a["satisfaction"]["source"], "agent:booking");
    assert_eq!(a["satisfaction"]["observedAt"], t("10T00:55"));
}

#[test]
fn a_reported_fact_is_attributed_to_its_reporter() {
    let mut sc = raised(&[exp("A", &t("10T05:00"))]).report(&t("10T02:00"), "A", &t("10T02:00"));
    // The body claims another source; the watcher records the authenticated reporter (§13.5).
    sc.doc["steps"][1]["fact"]["source"] = json!("carrier-feed:someone-else");
    let out = sc.run();
    assert_eq!(out.record("A")["satisfaction"]["source"], FEED);
    assert_eq!(out.of_type("fact")[0]["source"], FEED);
}

#[test]
fn a_keeps_time_agent_configured_to_submit_gets_lapse_tasks() {
    let mut sc = raised(&[exp("A", &t("10T02:00"))]).keeps_time(true);
    sc.doc["agents"][0]["submitLapses"] = json!(true);
    let out = sc.run();
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T02:00"))]);
}

#[test]
fn days_and_weeks_have_a_fixed_length() {
    let out = scenario()
        .until(&t("30T00:00"))
        .raise(
            &t("10T01:00"),
            &[
                exp("A", &t("10T02:00")).grace("P1D"),
                exp("B", &t("10T03:00")).anchor("A", "P1W"),
            ],
        )
        .report(&t("10T02:30"), "A", &t("10T02:30"))
        .run();
    assert_eq!(out.record("B")["dueAt"], t("17T02:30"));
    assert_eq!(out.lapses(), [lapse("B", "overdue", &t("17T02:30"))]);
    let out = raised(&[exp("A", &t("10T02:00")).grace("PT0.5S")]).run();
    assert_eq!(
        out.lapses(),
        [lapse("A", "overdue", "2026-09-10T02:00:00.5Z")]
    );
}

#[test]
fn malformed_fields_are_refused_naming_the_field() {
    let out = raised(&[
        exp("NOOFFSET", "2026-09-10T02:00:00"),
        exp("HORIZON", &t("10T05:00")).horizon(&t("10T04:00")),
        exp("NODUE", &t("10T05:00")).set("dueAt", Value::Null),
        exp("MISTYPED", &t("10T05:00")).set("after", json!("A")),
        exp("BASIS", &t("10T05:00")).set("basis", json!("hearsay")),
    ])
    .run();
    assert!(out.rejection("NOOFFSET").starts_with("field `dueAt`:"));
    assert!(out.rejection("HORIZON").starts_with("field `horizon`:"));
    assert_eq!(
        out.rejection("NODUE"),
        "field `dueAt`: is required (expectations-v1 §8)"
    );
    assert!(out.rejection("MISTYPED").starts_with("field `after`:"));
    assert_eq!(
        out.record("BASIS")["basis"],
        "hearsay",
        "unknown basis kept as given"
    );
    assert_eq!(out.records().len(), 1);
}

#[test]
fn a_question_asked_after_its_task_moved_on_is_answered_at_once() {
    let out = scenario()
        .working(&t("10T02:00"), &t("10T01:50"))
        .ask(&t("10T02:10"), Some(&t("10T01:00")))
        .run();
    let q = out.record("Q");
    assert_eq!(q["status"], "satisfied");
    assert_eq!(q["raisedAt"], t("10T02:10"));
    assert_eq!(q["satisfaction"]["satisfiedAt"], t("10T02:10"));
    assert_eq!(q["satisfaction"]["observedAt"], t("10T01:50"));
    assert_eq!(q["satisfaction"]["source"], "watcher:task-lifecycle");
}

#[test]
fn a_stale_status_does_not_answer_a_later_question() {
    let out = asked(Some(&t("10T01:00")))
        .working(&t("10T02:00"), &t("10T00:30"))
        .run();
    out.assert_unanswered("");
}

#[test]
fn a_question_is_answered_on_completion_at_the_receipt_time_without_a_timestamp() {
    let out = asked(Some(&t("10T01:00")))
        .push_unstamped_state(&t("10T03:00"), "task-q", CTX, "TASK_STATE_COMPLETED")
        .run();
    let q = out.record("Q");
    assert_eq!(q["status"], "satisfied");
    assert_eq!(q["satisfaction"]["observedAt"], t("10T03:00"));
}

#[test]
fn within_one_pushed_event_raises_come_before_withdrawals_and_facts() {
    // A Task whose first artifact withdraws B and reports A's fact, and whose second artifact
    // raises A and B: expectations first, then withdrawals, then facts (semantics.md "Facts").
    let task = json!({ "task": {
        "id": TASK,
        "contextId": CTX,
        "status": { "state": "TASK_STATE_WORKING" },
        "artifacts": [
            { "artifactId": "a1", "parts": [ { "text": "progress" } ], "metadata": { URI: {
                "facts": [ { "factKey": key_of("A"), "observedAt": t("10T00:50") } ],
                "withdraw": ["B"],
                "reason": "rebooked",
            } } },
            { "artifactId": "a2", "parts": [ { "text": "booking" } ], "metadata": { URI: {
                "expectations": [ exp("A", &t("10T05:00")).json(), exp("B", &t("10T05:00")).json() ],
            } } },
        ],
    } });
    let out = scenario().push_event(&t("10T01:00"), task).run();
    let a = out.record("A");
    assert_eq!(a["status"], "satisfied");
    assert_eq!(a["satisfaction"]["source"], "agent:booking");
    assert_eq!(a["satisfaction"]["observedAt"], t("10T00:50"));
    let b = out.record("B");
    assert_eq!(b["status"], "withdrawn");
    assert_eq!(
        b["withdrawal"]["reason"],
        "withdrawn by the agent: rebooked (expectations-v1 §8.1)"
    );
    assert_eq!(out.lapses(), []);
    let types: Vec<String> = out.lines.iter().map(|l| s(&l["type"])).collect();
    assert_eq!(
        types,
        [
            "raised",
            "raised",
            "withdrawn",
            "satisfied",
            "fact",
            "record"
        ]
    );
}

#[test]
fn the_interface_tenant_is_copied_into_the_lapse_request() {
    let mut sc = raised(&[exp("A", &t("10T02:00"))]);
    sc.doc["agents"][0]["card"]["supportedInterfaces"][0]["tenant"] = json!("acme");
    let out = sc.run();
    assert_eq!(out.lapse_tasks()[0]["request"]["tenant"], "acme");
}

#[test]
fn an_anchored_expectation_waiting_on_a_lapsed_anchor_still_stalls_at_its_horizon() {
    let out = raised(&[
        exp("A", &t("10T02:00")),
        exp("B", &t("10T04:00"))
            .anchor("A", "PT1H")
            .horizon(&t("11T00:00")),
    ])
    .run();
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T02:00")),
            lapse("B", "stalled", &t("11T00:00"))
        ]
    );
    assert_eq!(
        out.lapse_blocks()[1]["dueAt"],
        t("10T04:00"),
        "still the projection"
    );
}

#[test]
fn a_subjectless_fact_redelivered_after_a_matching_raise_is_a_no_op() {
    // semantics.md "Identity and tenancy": a fact is identified by (tenant, source, factKey,
    // observedAt); receiving the same fact again is a no-op.
    let out = scenario()
        .fact(&t("10T00:30"), &key_of("A"), &t("10T00:30"), None, FEED)
        .raise(&t("10T01:00"), &[exp("A", &t("10T05:00"))])
        .fact(&t("10T02:00"), &key_of("A"), &t("10T00:30"), None, FEED)
        .run();
    assert_eq!(out.record("A")["status"], "open");
    assert_eq!(out.of_type("fact")[1]["duplicate"], json!(true));
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T05:00"))]);
}

#[test]
fn a_fact_with_a_subject_redelivered_after_a_matching_raise_is_a_no_op() {
    let out = scenario()
        .report(&t("10T00:30"), "A", &t("10T00:30"))
        .raise(&t("10T01:00"), &[exp("A", &t("10T05:00"))])
        .report(&t("10T02:00"), "A", &t("10T00:30"))
        .run();
    assert_eq!(
        out.record("A")["status"],
        "open",
        "no retroactive satisfaction either"
    );
    assert_eq!(out.of_type("fact")[1]["duplicate"], json!(true));
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T05:00"))]);
}
