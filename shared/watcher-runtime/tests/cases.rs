//! The failing inputs found by trying the product (`tests/cases/semantics/`, copied from the team's
//! `cases/semantics/`), each run through `replay::run` and checked against the value its README
//! states.

use crate::common;

use serde_json::Value;

fn run_case(name: &str) -> Vec<Value> {
    let path = format!(
        "{}/tests/cases/semantics/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let doc: Value = serde_json::from_str(&text).expect("a scenario");
    common::run_doc(&doc)
}

fn of_type<'a>(lines: &'a [Value], ty: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l["type"] == ty).collect()
}

/// `"{at} {messageId}"` of every `lapseTask` line, in order.
fn lapse_tasks(lines: &[Value]) -> Vec<String> {
    of_type(lines, "lapseTask")
        .iter()
        .map(|l| {
            format!(
                "{} {}",
                text(&l["at"]),
                text(&l["request"]["message"]["messageId"])
            )
        })
        .collect()
}

/// A JSON string's text, or `""` for anything else.
fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

fn record<'a>(lines: &'a [Value], id: &str) -> &'a Value {
    lines
        .last()
        .and_then(|l| l["expectations"].as_array())
        .and_then(|list| list.iter().find(|r| r["expectationId"] == id))
        .unwrap_or_else(|| panic!("{id} is recorded"))
}

#[test]
fn sdk_snapshot_question() {
    let out = run_case("sdk-snapshot-question.json");
    assert_eq!(record(&out, "q-sdk")["status"], "open");
    assert_eq!(
        lapse_tasks(&out),
        ["2026-09-10T02:00:00Z lapse:q-sdk:overdue:2026-09-10T02:00:00Z"]
    );
}

#[test]
fn question_successor_answered() {
    let out = run_case("question-successor-answered.json");
    let q2 = record(&out, "q2");
    assert_eq!(q2["status"], "satisfied");
    assert_eq!(q2["satisfaction"]["factKey"], "answered:t1");
    assert_eq!(q2["satisfaction"]["source"], "watcher:task-lifecycle");
    assert_eq!(q2["satisfaction"]["observedAt"], "2026-09-10T03:00:00Z");
    assert_eq!(q2["satisfaction"]["late"], false);
    assert_eq!(lapse_tasks(&out), Vec::<String>::new());
}

#[test]
fn agent_bound_same_event() {
    let out = run_case("agent-bound-same-event.json");
    assert!(of_type(&out, "rejected").is_empty(), "{out:?}");
    assert_eq!(
        lapse_tasks(&out),
        [
            "2026-09-10T01:00:00Z lapse:e1:overdue:2026-09-10T00:30:00Z",
            "2026-09-10T05:00:00Z lapse:e2:overdue:2026-09-10T05:00:00Z",
        ]
    );
}

#[test]
fn zero_observed_at() {
    let out = run_case("zero-observed-at.json");
    let za = record(&out, "exp-za");
    assert_eq!(za["dueAt"], "2026-09-10T09:00:05Z");
    let zd = record(&out, "exp-zd");
    assert_eq!(zd["satisfaction"]["observedAt"], "2026-09-10T03:00:05Z");
    assert_eq!(
        zd["satisfaction"]["claimedObservedAt"], "0001-01-01T00:00:00Z",
        "the value as given is kept on the record"
    );
    assert_eq!(
        lapse_tasks(&out),
        ["2026-09-10T11:00:05Z lapse:exp-za:overdue:2026-09-10T09:00:05Z"]
    );
}

#[test]
fn lowercase_canceled() {
    let out = run_case("lowercase-canceled.json");
    let c = record(&out, "exp-c");
    assert_eq!(c["status"], "withdrawn");
    assert_eq!(c["withdrawal"]["withdrawnAt"], "2026-09-10T02:00:00Z");
    let reason = c["withdrawal"]["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("CANCELED"), "{reason}");
    assert_eq!(lapse_tasks(&out), Vec::<String>::new());
}

/// `(expectationId, reason)` of every `rejected` line, in order.
fn rejections(lines: &[Value]) -> Vec<(&str, &str)> {
    of_type(lines, "rejected")
        .iter()
        .map(|l| (text(&l["expectationId"]), text(&l["reason"])))
        .collect()
}

/// The ids of `refused`, in order.
fn ids<'a>(refused: &[(&'a str, &str)]) -> Vec<&'a str> {
    refused.iter().map(|(id, _)| *id).collect()
}

#[test]
fn duration_fraction_on_days() {
    let out = run_case("duration-fraction-on-days.json");
    assert_eq!(rejections(&out), []);
    assert_eq!(record(&out, "e1")["grace"], "P0.5D");
    // 12 h and 3.5 days of grace after a 02:00 due time.
    assert_eq!(
        lapse_tasks(&out),
        [
            "2026-09-10T14:00:00Z lapse:e1:overdue:2026-09-10T02:00:00Z",
            "2026-09-13T14:00:00Z lapse:e2:overdue:2026-09-10T02:00:00Z",
        ]
    );
}

#[test]
fn duration_invalid() {
    let out = run_case("duration-invalid.json");
    let refused = rejections(&out);
    assert_eq!(ids(&refused), ["e1", "e2", "e3"]);
    for (id, reason) in &refused {
        assert!(reason.starts_with("field `grace`"), "{id}: {reason}");
    }
    assert!(refused[0].1.contains("years"), "{}", refused[0].1);
    assert!(refused[1].1.contains("months"), "{}", refused[1].1);
    assert!(refused[2].1.contains("upper case"), "{}", refused[2].1);
    assert_eq!(lapse_tasks(&out), Vec::<String>::new());
}

#[test]
fn instant_not_rfc3339() {
    let out = run_case("instant-not-rfc3339.json");
    let refused = rejections(&out);
    assert_eq!(ids(&refused), ["e1", "e2", "e3", "e4", "e5"]);
    for (id, reason) in &refused {
        assert!(reason.starts_with("field `dueAt`"), "{id}: {reason}");
        assert!(
            !reason.contains("not an RFC 3339 instant"),
            "{id} says what is wrong: {reason}"
        );
    }
    assert_eq!(lapse_tasks(&out), Vec::<String>::new());
}

#[test]
fn rev4_zero_status_answer() {
    let out = run_case("rev4-zero-status-answer.json");
    let e13 = record(&out, "e13");
    assert_eq!(e13["status"], "satisfied");
    let sat = &e13["satisfaction"];
    assert_eq!(sat["factKey"], "answered:ag1:t3:4");
    assert_eq!(sat["source"], "watcher:task-lifecycle");
    assert_eq!(sat["observedAt"], "2026-09-10T23:45:00Z");
    assert_eq!(
        sat["claimedObservedAt"], "1970-01-01T00:00:00Z",
        "the value exactly as given, for the watcher's own lifecycle facts as for reported ones"
    );
}
