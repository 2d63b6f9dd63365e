//! One test per rule of expectations-v1 and semantics.md, each driven through
//! `replay::run` on a fresh `MemoryStore` and asserting the values the contracts give.

use crate::common;

use common::{exp, key_of, question_metadata, s, scenario, t, URI};
use serde_json::{json, Value};

const TASK: &str = "task-1";
const CTX: &str = "ctx-1";
const FEED: &str = "carrier-feed:test";
const SHIP: Option<(&str, &str)> = Some(("shipment", "PA-1"));

fn lapse(id: &str, kind: &str, at: &str) -> (String, String, String) {
    (id.to_string(), kind.to_string(), at.to_string())
}

fn pair(kind: &str, at: &str) -> (String, String) {
    (kind.to_string(), at.to_string())
}

// ---------------------------------------------------------------- skipped (§9.1)

#[test]
fn skipped_is_raised_at_once_before_due() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T20:00")).grace("PT2H"),
                exp("B", &t("10T22:00")).after(&["A"]),
            ],
        )
        .fact(&t("10T05:00"), &key_of("B"), &t("10T04:59"), SHIP, FEED)
        .until(&t("10T06:00"))
        .run();
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
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T20:00")).grace("PT2H"),
                exp("B", &t("10T22:00")).after(&["A"]),
            ],
        )
        .fact(&t("10T05:00"), &key_of("B"), &t("10T04:59"), SHIP, FEED)
        .run();
    assert_eq!(out.lapses(), [lapse("A", "skipped", &t("10T05:00"))]);
    assert_eq!(out.record_lapses("A"), [pair("skipped", &t("10T05:00"))]);
}

#[test]
fn skipped_is_raised_even_after_overdue() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T02:00")),
                exp("B", &t("10T22:00")).after(&["A"]),
            ],
        )
        .fact(&t("10T05:00"), &key_of("B"), &t("10T04:59"), SHIP, FEED)
        .run();
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T02:00")),
            lapse("A", "skipped", &t("10T05:00"))
        ]
    );
}

// ------------------------------------------------------------ anchoring (§9.3)

#[test]
fn a_chain_of_four_anchored_steps_with_the_first_missing_lapses_once() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
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
            ],
        )
        .run();
    assert_eq!(out.lapses(), [lapse("S1", "overdue", &t("10T02:00"))]);
    for id in ["S2", "S3", "S4"] {
        assert_eq!(out.record_lapses(id), [], "{id} waits on its anchor");
        assert_eq!(out.record(id)["status"], "open");
    }
}

#[test]
fn a_late_anchor_reanchors_and_keeps_the_projection() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T02:00")).grace("PT1H"),
                exp("B", &t("10T04:00"))
                    .grace("PT1H")
                    .anchor("A", "PT2H")
                    .after(&["A"]),
            ],
        )
        .fact(&t("10T05:00"), &key_of("A"), &t("10T04:30"), SHIP, FEED)
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
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T09:00")),
                exp("B", &t("10T12:00")).anchor("A", "PT1H"),
            ],
        )
        // Received at 08:30, observed 07:00: B's new due time 08:00 has already passed.
        .fact(&t("10T08:30"), &key_of("A"), &t("10T07:00"), SHIP, FEED)
        .run();
    assert_eq!(out.lapses(), [lapse("B", "overdue", &t("10T08:30"))]);
    assert_eq!(out.lapse_blocks()[0]["dueAt"], t("10T08:00"));
    assert_eq!(out.lapse_blocks()[0]["projectedDueAt"], t("10T12:00"));
}

#[test]
fn an_anchor_already_satisfied_reanchors_at_raising() {
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T09:00"))])
        .fact(&t("10T02:00"), &key_of("A"), &t("10T01:30"), SHIP, FEED)
        .push_artifact(
            &t("10T03:00"),
            TASK,
            CTX,
            &[exp("B", &t("10T12:00")).anchor("A", "PT3H")],
        )
        .run();
    assert_eq!(out.record("B")["dueAt"], t("10T04:30"));
    assert_eq!(out.record("B")["projectedDueAt"], t("10T12:00"));
    assert_eq!(out.lapses(), [lapse("B", "overdue", &t("10T04:30"))]);
}

#[test]
fn an_anchor_withdrawn_falls_back_to_the_projection_and_lapses_at_once_if_past() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T06:00")),
                exp("B", &t("10T03:00")).anchor("A", "PT1H"),
            ],
        )
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
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T06:00")),
                exp("B", &t("10T03:00")).grace("PT30M").anchor("A", "PT1H"),
            ],
        )
        .push_withdraw(&t("10T02:00"), TASK, CTX, &["A"], "not needed")
        .run();
    assert_eq!(out.lapses(), [lapse("B", "overdue", &t("10T03:30"))]);
}

// ------------------------------------------------------------- stalled (§9.1)

#[test]
fn stalled_at_the_horizon() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[exp("A", &t("10T02:00"))
                .grace("PT1H")
                .horizon(&t("12T00:00"))],
        )
        .run();
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
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[exp("A", &t("10T02:00"))
                .grace("PT1H")
                .horizon(&t("12T00:00"))],
        )
        .fact(
            &t("11T06:00"),
            "shipment.seen:PA-1",
            &t("11T05:00"),
            SHIP,
            FEED,
        )
        .run();
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T03:00"))]);
    assert_eq!(out.record_lapses("A"), [pair("overdue", &t("10T03:00"))]);
}

#[test]
fn stalled_counts_only_facts_since_the_last_satisfaction() {
    // A fact before the last satisfying fact does not keep the subject alive.
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T04:00")),
                exp("B", &t("10T12:00")).horizon(&t("11T00:00")),
            ],
        )
        .fact(
            &t("10T02:00"),
            "shipment.seen:PA-1",
            &t("10T02:00"),
            SHIP,
            FEED,
        )
        .fact(&t("10T03:00"), &key_of("A"), &t("10T03:00"), SHIP, FEED)
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

// ------------------------------------------- supersession and lineage (§10.3)

#[test]
fn supersession_withdraws_the_predecessor() {
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
        .push_artifact(
            &t("10T03:00"),
            "task-lapse",
            CTX,
            &[exp("B", &t("10T06:00")).key(&key_of("A")).supersedes("A")],
        )
        .run();
    let a = out.record("A");
    assert_eq!(a["status"], "withdrawn");
    assert_eq!(a["supersededBy"], "B");
    assert_eq!(a["withdrawal"]["withdrawnAt"], t("10T03:00"));
    assert_eq!(
        a["withdrawal"]["reason"],
        "superseded by B (expectations-v1 §8.1, §10.3)"
    );
    let b = out.record("B");
    assert_eq!(b["lineage"], json!(1));
    assert_eq!(b["supersedes"], "A");
    assert_eq!(b["status"], "open");
    assert_eq!(
        out.lapses(),
        [
            lapse("A", "overdue", &t("10T02:00")),
            lapse("B", "overdue", &t("10T06:00"))
        ]
    );
    assert_eq!(out.lapse_blocks()[1]["lineage"], json!(1));
    let message = &out.lapse_tasks()[1]["request"]["message"];
    assert_eq!(message["referenceTaskIds"], json!(["task-lapse"]));
    assert_eq!(message["contextId"], CTX);
}

fn chain(n: usize) -> Vec<(String, String)> {
    // A0 due 02:00, A1 supersedes A0 due 03:00, ... each raised once the previous lapsed.
    (0..n)
        .map(|i| (format!("A{i}"), t(&format!("10T{:02}:00", 2 + i))))
        .collect()
}

#[test]
fn lineage_four_is_refused() {
    let mut sc = scenario();
    let links = chain(5);
    for (i, (id, due)) in links.iter().enumerate() {
        let mut e = exp(id, due).key("done:chain");
        if i > 0 {
            e = e.supersedes(&links[i - 1].0);
        }
        sc = sc.push_artifact(&t(&format!("10T{:02}:30", 1 + i)), TASK, CTX, &[e]);
    }
    let out = sc.run();
    for (i, (id, _)) in links.iter().take(4).enumerate() {
        assert_eq!(out.record(id)["lineage"], json!(i), "{id}");
    }
    assert_eq!(
        out.rejection("A4"),
        "lineage 4 exceeds the bound 3 (expectations-v1 §10.3)"
    );
    assert!(!out.recorded("A4"));
    assert_eq!(
        out.record("A3")["status"],
        "open",
        "the refusal disturbs nothing"
    );
    assert_eq!(out.record("A3")["supersededBy"], Value::Null);
}

#[test]
fn an_identical_re_raise_in_the_lineage_is_refused() {
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
        // Same kind, subject, factKey and dueAt as its predecessor.
        .push_artifact(
            &t("10T03:00"),
            TASK,
            CTX,
            &[exp("B", &t("10T02:00")).key(&key_of("A")).supersedes("A")],
        )
        .push_artifact(
            &t("10T03:10"),
            TASK,
            CTX,
            &[exp("C", &t("10T05:00")).key(&key_of("A")).supersedes("A")],
        )
        // Back to the first due time, two generations on.
        .push_artifact(
            &t("10T03:20"),
            TASK,
            CTX,
            &[exp("D", &t("10T02:00")).key(&key_of("A")).supersedes("C")],
        )
        .run();
    for id in ["B", "D"] {
        let reason = out.rejection(id);
        assert!(
            reason.starts_with(
                "field `dueAt`: identical in kind, subject, satisfiedBy and dueAt to A"
            ),
            "{id}: {reason}"
        );
        assert!(reason.contains("§10.3"), "{reason}");
        assert!(!out.recorded(id));
    }
    assert_eq!(out.record("C")["lineage"], json!(1));
    assert_eq!(out.record("C")["status"], "open");
}

// ---------------------------------------------------- raising, id reuse (§8)

#[test]
fn id_reuse_is_refused_and_an_identical_redelivery_is_a_no_op() {
    let a = exp("A", &t("10T02:00"));
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, std::slice::from_ref(&a))
        .push_artifact(&t("10T01:10"), TASK, CTX, std::slice::from_ref(&a))
        .push_artifact(
            &t("10T01:20"),
            TASK,
            CTX,
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
    let once = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &raise)
        .fact(&t("10T01:30"), &key_of("B"), &t("10T01:29"), SHIP, FEED)
        .run();
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &raise)
        .push_artifact(&t("10T01:00"), TASK, CTX, &raise)
        .fact(&t("10T01:30"), &key_of("B"), &t("10T01:29"), SHIP, FEED)
        .fact(&t("10T01:30"), &key_of("B"), &t("10T01:29"), SHIP, FEED)
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

// ------------------------------------------------------- withdrawal (§8.1)

#[test]
fn cancel_fail_and_reject_withdraw_and_complete_does_not() {
    for state in [
        "TASK_STATE_CANCELED",
        "TASK_STATE_FAILED",
        "TASK_STATE_REJECTED",
    ] {
        let out = scenario()
            .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
            .push_status(&t("10T01:30"), TASK, CTX, state, Some(&t("10T01:29")), None)
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
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
        .push_status(
            &t("10T01:30"),
            TASK,
            CTX,
            "TASK_STATE_COMPLETED",
            None,
            None,
        )
        .run();
    assert_eq!(out.record("A")["status"], "open");
    assert_eq!(out.record("A")["withdrawal"], Value::Null);
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T02:00"))]);
}

#[test]
fn canceling_the_origin_withdraws_its_successors_too() {
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
        .push_artifact(
            &t("10T02:30"),
            "task-lapse",
            CTX,
            &[exp("B", &t("10T05:00")).key(&key_of("A")).supersedes("A")],
        )
        .push_status(&t("10T03:00"), TASK, CTX, "TASK_STATE_CANCELED", None, None)
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
        .push_status(&t("10T01:00"), TASK, CTX, "TASK_STATE_CANCELED", None, None)
        .push_artifact(&t("10T01:30"), TASK, CTX, &[exp("A", &t("10T02:00"))])
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

// ------------------------------------------------------------ questions (§11)

fn question() -> common::Exp {
    exp("Q", &t("10T04:00"))
        .kind("question.answer")
        .subject("task", "task-q")
        .key("task.answered:task-q")
        .grace("PT1H")
        .set("basis", json!("declared"))
}

fn asked() -> common::Scenario {
    scenario().push_status(
        &t("10T01:00"),
        "task-q",
        CTX,
        "TASK_STATE_INPUT_REQUIRED",
        Some(&t("10T01:00")),
        Some(question_metadata(&[question()])),
    )
}

#[test]
fn a_question_is_answered_when_its_task_is_next_seen_working() {
    let out = asked()
        .push_status(
            &t("10T02:00"),
            "task-q",
            CTX,
            "TASK_STATE_WORKING",
            Some(&t("10T01:59:30")),
            None,
        )
        .run();
    let q = out.record("Q");
    assert_eq!(q["status"], "satisfied");
    assert_eq!(
        q["satisfaction"],
        json!({
            "factKey": "task.answered:task-q",
            "source": "watcher:task-lifecycle",
            "satisfiedAt": t("10T02:00"),
            "observedAt": t("10T01:59:30"),
            "late": false,
        })
    );
    assert_eq!(
        q["raisedBy"],
        json!({ "taskId": "task-q", "contextId": CTX })
    );
    assert_eq!(out.lapses(), []);
}

#[test]
fn a_question_is_withdrawn_when_its_task_is_canceled() {
    let out = asked()
        .push_status(
            &t("10T02:00"),
            "task-q",
            CTX,
            "TASK_STATE_CANCELED",
            None,
            None,
        )
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
    let out = asked().run();
    assert_eq!(out.lapses(), [lapse("Q", "overdue", &t("10T05:00"))]);
    let block = out.lapse_blocks()[0];
    assert_eq!(block["kind"], "question.answer");
    assert_eq!(block["subject"], json!({ "type": "task", "id": "task-q" }));
    let message = &out.lapse_tasks()[0]["request"]["message"];
    assert_eq!(message["referenceTaskIds"], json!(["task-q"]));
    assert_eq!(message["contextId"], CTX);
}

// ------------------------------------------------------------------ time

#[test]
fn offsets_are_normalised_to_utc() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[exp("A", "2026-09-10T04:00:00+02:00")
                .grace("PT30M")
                .horizon("2026-09-11T02:00:00.500+02:00")],
        )
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
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T06:00"))])
        .fact(
            &t("10T05:00"),
            &key_of("A"),
            "2026-09-10T06:30:00+02:00",
            SHIP,
            FEED,
        )
        .run();
    assert_eq!(out.record("A")["satisfaction"]["observedAt"], t("10T04:30"));
}

#[test]
fn months_and_negative_durations_are_refused_naming_the_field() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("M", &t("10T02:00")).grace("P1M"),
                exp("N", &t("10T02:00")).grace("-PT1H"),
                exp("O", &t("10T02:00")).anchor("M", "-PT2H"),
                exp("Y", &t("10T02:00")).grace("P1Y"),
            ],
        )
        .run();
    let m = out.rejection("M");
    assert!(
        m.starts_with("field `grace`:") && m.contains("months"),
        "{m}"
    );
    let n = out.rejection("N");
    assert!(
        n.starts_with("field `grace`:") && n.contains("negative"),
        "{n}"
    );
    let o = out.rejection("O");
    assert!(
        o.starts_with("field `anchor.offset`:") && o.contains("negative"),
        "{o}"
    );
    let y = out.rejection("Y");
    assert!(
        y.starts_with("field `grace`:") && y.contains("years"),
        "{y}"
    );
    assert!(out.records().is_empty());
}

#[test]
fn a_fact_observed_in_the_future_of_its_receipt_uses_the_receipt_time() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                // On time by the receipt time, late by the claimed one.
                exp("A", &t("10T06:00")),
                exp("B", &t("10T09:00")).anchor("A", "PT1H"),
                exp("C", &t("10T08:00")),
            ],
        )
        .fact(&t("10T05:00"), &key_of("A"), &t("10T07:00"), SHIP, FEED)
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
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[exp("A", &t("10T02:00")).grace("PT1H")],
        )
        .fact(&t("10T03:00"), &key_of("A"), &t("10T01:45"), SHIP, FEED)
        .run();
    assert_eq!(out.lapses(), []);
    let a = out.record("A");
    assert_eq!(a["status"], "satisfied");
    assert_eq!(a["lapses"], json!([]));
    assert_eq!(a["satisfaction"]["satisfiedAt"], t("10T03:00"));
    assert_eq!(a["satisfaction"]["late"], json!(false));
}

// ------------------------------------------------------------- refusals

#[test]
fn a_kind_not_on_the_card_is_refused() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[exp("A", &t("10T02:00")).kind("shipment.customs")],
        )
        .run();
    assert_eq!(
        out.rejection("A"),
        "field `kind`: \"shipment.customs\" is not declared on the agent's card (expectations-v1 §6.2, §8)"
    );
    assert!(out.records().is_empty());
    assert_eq!(out.lapses(), []);
}

#[test]
fn a_cycle_through_anchor_and_after_is_refused() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T02:00")).after(&["B"]),
                exp("B", &t("10T03:00")).anchor("A", "PT1H"),
                exp("C", &t("10T03:00")).after(&["C"]),
            ],
        )
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
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
        .push_artifact(
            &t("10T01:10"),
            TASK,
            CTX,
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
    let out = scenario()
        .settings(json!({ "maxOpenPerSubject": 2 }))
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T05:00")),
                exp("B", &t("10T05:00")),
                exp("C", &t("10T05:00")),
                exp("X", &t("10T05:00")).subject("shipment", "PA-2"),
            ],
        )
        .fact(&t("10T02:00"), &key_of("A"), &t("10T02:00"), SHIP, FEED)
        .push_artifact(&t("10T02:30"), TASK, CTX, &[exp("D", &t("10T05:00"))])
        .push_artifact(&t("10T02:40"), TASK, CTX, &[exp("E", &t("10T05:00"))])
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

// ------------------------------------------------------------ tenancy (§13.5)

#[test]
fn facts_are_tenant_scoped() {
    let out = scenario()
        .tenant("tenant-a")
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[exp("A", &t("10T02:00")), exp("B", &t("10T03:00"))],
        )
        .fact_in(
            "tenant-b",
            &t("10T01:30"),
            &key_of("A"),
            &t("10T01:30"),
            SHIP,
            FEED,
        )
        .fact_in(
            "tenant-a",
            &t("10T01:40"),
            &key_of("B"),
            &t("10T01:40"),
            SHIP,
            FEED,
        )
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

// --------------------------------------------------- who keeps time (§12.2)

#[test]
fn a_keeps_time_agent_gets_no_lapse_task_but_the_lapse_is_recorded() {
    let out = scenario()
        .keeps_time(true)
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
        .run();
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

// ------------------------------------------------------ order at one instant

#[test]
fn timers_at_one_instant_fire_in_raising_order_overdue_before_stalled() {
    let out = scenario()
        .push_artifact(&t("10T00:10"), TASK, CTX, &[exp("P", &t("10T02:00"))])
        .push_artifact(
            &t("10T00:20"),
            TASK,
            CTX,
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
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
        .fact(
            &t("10T02:00"),
            "shipment.seen:PA-1",
            &t("10T02:00"),
            SHIP,
            FEED,
        )
        .fact(&t("10T02:00"), &key_of("A"), &t("10T02:00"), SHIP, FEED)
        .run();
    assert_eq!(out.lapses(), []);
    assert_eq!(out.record("A")["status"], "satisfied");
}

#[test]
fn lapse_task_shape() {
    let out = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
        .run();
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

// ------------------------------------------------------------ more of each rule

#[test]
fn a_fact_received_exactly_at_the_horizon_prevents_the_stall() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[exp("A", &t("10T02:00"))
                .grace("PT1H")
                .horizon(&t("11T00:00"))],
        )
        .fact(
            &t("11T00:00"),
            "shipment.seen:PA-1",
            &t("10T23:00"),
            SHIP,
            FEED,
        )
        .run();
    assert_eq!(out.record_lapses("A"), [pair("overdue", &t("10T03:00"))]);
}

#[test]
fn a_due_time_already_past_at_raising_lapses_at_once() {
    let out = scenario()
        .push_artifact(
            &t("10T05:00"),
            TASK,
            CTX,
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
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T02:00")),
                exp("B", &t("10T06:00")).anchor("A", "PT2H"),
                exp("C", &t("10T08:00")).after(&["A"]),
            ],
        )
        .push_artifact(
            &t("10T02:30"),
            "task-lapse",
            CTX,
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
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T02:00")),
                exp("C", &t("10T08:00")).after(&["A"]),
            ],
        )
        .push_artifact(
            &t("10T02:30"),
            TASK,
            CTX,
            &[exp("A2", &t("10T09:00")).supersedes("A").key("done:A2")],
        )
        .fact(&t("10T03:00"), &key_of("C"), &t("10T03:00"), SHIP, FEED)
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
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T02:00")),
                exp("B", &t("10T09:00")).anchor("A", "PT1H"),
            ],
        )
        .fact(&t("10T01:30"), &key_of("A"), &t("10T01:30"), SHIP, FEED)
        // B's current due time is 02:30; a successor due then is identical.
        .push_artifact(
            &t("10T03:00"),
            TASK,
            CTX,
            &[exp("B2", &t("10T02:30")).key(&key_of("B")).supersedes("B")],
        )
        .run();
    assert!(out
        .rejection("B2")
        .starts_with("field `dueAt`: identical in kind, subject, satisfiedBy and dueAt to B"));
    assert_eq!(out.record("B")["status"], "open");
}

#[test]
fn superseding_a_satisfied_withdrawn_or_unknown_expectation_is_refused() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[exp("A", &t("10T05:00")), exp("W", &t("10T05:00"))],
        )
        .fact(&t("10T01:30"), &key_of("A"), &t("10T01:30"), SHIP, FEED)
        .push_withdraw(&t("10T01:40"), TASK, CTX, &["W"], "")
        .push_artifact(
            &t("10T02:00"),
            TASK,
            CTX,
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
    let out = scenario()
        .settings(json!({ "lineageBound": 1 }))
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))])
        .push_artifact(
            &t("10T02:10"),
            TASK,
            CTX,
            &[exp("B", &t("10T03:00")).key(&key_of("A")).supersedes("A")],
        )
        .push_artifact(
            &t("10T03:10"),
            TASK,
            CTX,
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
    let out = scenario()
        .settings(json!({ "maxOpenPerAgent": 2 }))
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T05:00")),
                exp("B", &t("10T05:00")).subject("shipment", "PA-2"),
                exp("C", &t("10T05:00")).subject("shipment", "PA-3"),
            ],
        )
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
        .push_block(
            &t("10T01:00"),
            TASK,
            CTX,
            json!({
                "expectations": [exp("A", &t("10T05:00")).json()],
                "facts": [{ "factKey": key_of("A"), "observedAt": t("10T00:55"), "source": "forged" }],
            }),
        )
        .run();
    let a = out.record("A");
    assert_eq!(a["status"], "satisfied");
    assert_eq!(a["satisfaction"]["source"], "agent:booking");
    assert_eq!(a["satisfaction"]["observedAt"], t("10T00:55"));
}

#[test]
fn a_reported_fact_is_attributed_to_its_reporter() {
    let mut sc = scenario()
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T05:00"))])
        .fact(&t("10T02:00"), &key_of("A"), &t("10T02:00"), SHIP, FEED);
    // The body claims another source; the watcher records the authenticated reporter (§13.5).
    sc.doc["steps"][1]["fact"]["source"] = json!("carrier-feed:someone-else");
    let out = sc.run();
    assert_eq!(out.record("A")["satisfaction"]["source"], FEED);
    assert_eq!(out.of_type("fact")[0]["source"], FEED);
}

#[test]
fn a_keeps_time_agent_configured_to_submit_gets_lapse_tasks() {
    let mut sc = scenario().keeps_time(true).push_artifact(
        &t("10T01:00"),
        TASK,
        CTX,
        &[exp("A", &t("10T02:00"))],
    );
    sc.doc["agents"][0]["submitLapses"] = json!(true);
    let out = sc.run();
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T02:00"))]);
}

#[test]
fn days_and_weeks_have_a_fixed_length() {
    let out = scenario()
        .until(&t("30T00:00"))
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T02:00")).grace("P1D"),
                exp("B", &t("10T03:00")).anchor("A", "P1W"),
            ],
        )
        .fact(&t("10T02:30"), &key_of("A"), &t("10T02:30"), SHIP, FEED)
        .run();
    assert_eq!(out.record("B")["dueAt"], t("17T02:30"));
    assert_eq!(out.lapses(), [lapse("B", "overdue", &t("17T02:30"))]);
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[exp("A", &t("10T02:00")).grace("PT0.5S")],
        )
        .run();
    assert_eq!(
        out.lapses(),
        [lapse("A", "overdue", "2026-09-10T02:00:00.5Z")]
    );
}

#[test]
fn malformed_fields_are_refused_naming_the_field() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("NOOFFSET", "2026-09-10T02:00:00"),
                exp("HORIZON", &t("10T05:00")).horizon(&t("10T04:00")),
                exp("NODUE", &t("10T05:00")).set("dueAt", Value::Null),
                exp("MISTYPED", &t("10T05:00")).set("after", json!("A")),
                exp("BASIS", &t("10T05:00")).set("basis", json!("hearsay")),
            ],
        )
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
        .push_status(
            &t("10T02:00"),
            "task-q",
            CTX,
            "TASK_STATE_WORKING",
            Some(&t("10T01:50")),
            None,
        )
        .push_status(
            &t("10T02:10"),
            "task-q",
            CTX,
            "TASK_STATE_INPUT_REQUIRED",
            Some(&t("10T01:00")),
            Some(question_metadata(&[question()])),
        )
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
    let out = asked()
        .push_status(
            &t("10T02:00"),
            "task-q",
            CTX,
            "TASK_STATE_WORKING",
            Some(&t("10T00:30")),
            None,
        )
        .run();
    assert_eq!(out.record("Q")["status"], "open");
    assert_eq!(out.lapses(), [lapse("Q", "overdue", &t("10T05:00"))]);
}

#[test]
fn a_question_is_answered_on_completion_at_the_receipt_time_without_a_timestamp() {
    let out = asked()
        .push_status(
            &t("10T03:00"),
            "task-q",
            CTX,
            "TASK_STATE_COMPLETED",
            None,
            None,
        )
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
    let mut sc = scenario().push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T02:00"))]);
    sc.doc["agents"][0]["card"]["supportedInterfaces"][0]["tenant"] = json!("acme");
    let out = sc.run();
    assert_eq!(out.lapse_tasks()[0]["request"]["tenant"], "acme");
}

#[test]
fn an_anchored_expectation_waiting_on_a_lapsed_anchor_still_stalls_at_its_horizon() {
    let out = scenario()
        .push_artifact(
            &t("10T01:00"),
            TASK,
            CTX,
            &[
                exp("A", &t("10T02:00")),
                exp("B", &t("10T04:00"))
                    .anchor("A", "PT1H")
                    .horizon(&t("11T00:00")),
            ],
        )
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
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T05:00"))])
        .fact(&t("10T02:00"), &key_of("A"), &t("10T00:30"), None, FEED)
        .run();
    assert_eq!(out.record("A")["status"], "open");
    assert_eq!(out.of_type("fact")[1]["duplicate"], json!(true));
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T05:00"))]);
}

#[test]
fn a_fact_with_a_subject_redelivered_after_a_matching_raise_is_a_no_op() {
    let out = scenario()
        .fact(&t("10T00:30"), &key_of("A"), &t("10T00:30"), SHIP, FEED)
        .push_artifact(&t("10T01:00"), TASK, CTX, &[exp("A", &t("10T05:00"))])
        .fact(&t("10T02:00"), &key_of("A"), &t("10T00:30"), SHIP, FEED)
        .run();
    assert_eq!(
        out.record("A")["status"],
        "open",
        "no retroactive satisfaction either"
    );
    assert_eq!(out.of_type("fact")[1]["duplicate"], json!(true));
    assert_eq!(out.lapses(), [lapse("A", "overdue", &t("10T05:00"))]);
}
