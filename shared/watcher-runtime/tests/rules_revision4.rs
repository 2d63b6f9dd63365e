//! Time rules settled by semantics revision 4 (semantics.md "Time"; replay.md
//! `claimedObservedAt`): a `status.timestamp` later than its receipt counts as its receipt, for
//! ordering the task's statuses and as the `observedAt` of a question's answer; and the record
//! keeps every effective value's original exactly as given, for the watcher's own lifecycle facts
//! as for reported ones. Each test drives `replay::run` on a fresh `MemoryStore` over a table or
//! a generated set of variants, and asserts the value the contract gives.

use crate::common;

use common::{
    asked, exp, key_of, lapse, lifecycle_answer, question, question_metadata, question_of,
    scenario, t, Scenario,
};
use proptest::prelude::*;
use serde_json::{json, Value};
use watcher_core::time::Instant;

const CTX: &str = "ctx-1";
const FEED: &str = "carrier-feed:test";
const NANOS_PER_SECOND: i128 = 1_000_000_000;

/// `utc` (an instant) written in the offset `±HH:MM`, e.g. `2026-09-10T19:30:00+05:30` for
/// `2026-09-10T14:00:00Z` in `+05:30`.
fn in_offset(utc: &str, offset: &str) -> String {
    let sign: i128 = if offset.starts_with('-') { -1 } else { 1 };
    let hours: i128 = offset[1..3].parse().expect("HH");
    let minutes: i128 = offset[4..6].parse().expect("MM");
    let shift = sign * (hours * 3_600 + minutes * 60) * NANOS_PER_SECOND;
    let local = Instant::from_nanos(Instant::parse(utc).expect("an instant").as_nanos() + shift)
        .expect("in range")
        .to_string();
    format!("{}{offset}", local.trim_end_matches('Z'))
}

/// A status of `task`, either as a `statusUpdate` or as a `Task` snapshot.
fn push_status(
    sc: Scenario,
    snapshot: bool,
    at: &str,
    task: &str,
    state: &str,
    timestamp: Option<&str>,
    metadata: Option<Value>,
) -> Scenario {
    if !snapshot || metadata.is_some() {
        return sc.push_status(at, task, CTX, state, timestamp, metadata);
    }
    let mut status = json!({ "state": state });
    if let Some(ts) = timestamp {
        status["timestamp"] = json!(ts);
    }
    sc.push_event(
        at,
        json!({ "task": { "id": task, "contextId": CTX, "status": status } }),
    )
}

// ------------------------------------------- a status stamped ahead of its receipt ("Time")

/// One status stamped ahead of its receipt (a clock glitch) answers nothing the task asks after
/// it: the question lapses `overdue` at its deadline. Over how far ahead, the offset it is
/// written in, the state, how it is pushed, and how the question is stamped.
#[test]
fn a_status_stamped_ahead_answers_no_later_question() {
    let ahead = [
        "2026-09-10T13:00:00Z".to_owned(),
        in_offset(&t("10T13:00"), "+05:30"),
        in_offset(&t("10T13:00"), "-03:00"),
        "2026-09-10T01:00:00.000000001Z".to_owned(),
        "2026-09-10t13:00:00.5z".to_owned(),
        "9999-12-31T23:59:59Z".to_owned(),
    ];
    let question_stamps = [Some(t("10T02:00")), Some(t("10T01:30")), None];
    for stamp in &ahead {
        for state in [
            "TASK_STATE_WORKING",
            "TASK_STATE_SUBMITTED",
            "TASK_STATE_COMPLETED",
        ] {
            for snapshot in [false, true] {
                for asked in &question_stamps {
                    let sc = push_status(
                        scenario(),
                        snapshot,
                        &t("10T01:00"),
                        "task-q",
                        state,
                        Some(stamp),
                        None,
                    );
                    let out = push_status(
                        sc,
                        snapshot,
                        &t("10T02:00"),
                        "task-q",
                        "TASK_STATE_INPUT_REQUIRED",
                        asked.as_deref(),
                        Some(question_metadata(&[question_of("task-q")])),
                    )
                    .until(&t("10T06:00"))
                    .run();
                    let case = format!(
                        "{state} stamped {stamp}, snapshot {snapshot}, question stamped {asked:?}"
                    );
                    out.assert_unanswered(&case);
                    assert!(
                        out.of_type("fact")
                            .iter()
                            .all(|f| f["source"] != "watcher:task-lifecycle"),
                        "{case}"
                    );
                }
            }
        }
    }
}

/// A status stamped ahead on another task, or on the task that raised an ordinary expectation,
/// answers nothing either: only the asking task's own later statuses answer its question.
#[test]
fn a_status_stamped_ahead_on_the_origin_task_or_another_task_answers_nothing() {
    for (stamped_task, asking_task) in [("task-o", "task-o"), ("task-other", "task-q")] {
        let out = scenario()
            .push_artifact(
                &t("10T00:30"),
                "task-o",
                CTX,
                &[exp("E", &t("10T04:00")).grace("PT2H")],
            )
            .push_stamped_state(
                &t("10T01:00"),
                stamped_task,
                CTX,
                "TASK_STATE_WORKING",
                &in_offset(&t("10T13:00"), "+05:30"),
            )
            .push_question(
                &t("10T02:00"),
                asking_task,
                CTX,
                &[question_of(asking_task)],
            )
            .until(&t("10T07:00"))
            .run();
        let case = format!("stamped on {stamped_task}, asked by {asking_task}");
        assert_eq!(out.record("Q")["status"], "open", "{case}");
        assert_eq!(out.record("E")["status"], "open", "{case}");
        assert_eq!(
            out.lapses(),
            [
                lapse("Q", "overdue", &t("10T05:00")),
                lapse("E", "overdue", &t("10T06:00"))
            ],
            "{case}"
        );
    }
}

/// A question whose own status is stamped ahead counts as asked at its receipt: the task's next
/// status, stamped on time, answers it.
#[test]
fn a_question_stamped_ahead_is_answered_by_the_next_status() {
    for stamp in [t("10T13:00"), in_offset(&t("10T13:00"), "+05:30")] {
        let out = asked(Some(&stamp))
            .push_state(&t("10T02:00"), "task-q", CTX, "TASK_STATE_WORKING")
            .until(&t("10T06:00"))
            .run();
        let q = out.record("Q");
        assert_eq!(q["status"], "satisfied", "{stamp}");
        assert_eq!(q["satisfaction"]["observedAt"], t("10T02:00"), "{stamp}");
        assert_eq!(q["satisfaction"]["claimedObservedAt"], Value::Null);
        assert_eq!(out.lapses(), [], "{stamp}");
    }
}

/// A status stamped ahead that does come after the question answers it at its receipt time,
/// with the timestamp exactly as given beside it.
#[test]
fn a_status_stamped_ahead_answers_at_its_receipt() {
    for stamp in [
        t("10T14:00"),
        in_offset(&t("10T14:00"), "+05:30"),
        in_offset("2026-09-10T02:00:00.000000001Z", "-09:30"),
        "2026-09-10t14:00:00.250z".to_owned(),
        "9999-12-31T23:59:60Z".to_owned(),
    ] {
        let out = asked(Some(&t("10T01:00")))
            .working(&t("10T02:00"), &stamp)
            .until(&t("10T06:00"))
            .run();
        let mut answer = lifecycle_answer(&t("10T02:00"), &t("10T02:00"));
        answer["claimedObservedAt"] = json!(stamp);
        assert_eq!(out.record("Q")["satisfaction"], answer, "{stamp}");
        assert_eq!(out.lapses(), [], "{stamp}");
    }
}

/// A question arriving after its task already moved on, with a status stamped ahead, is
/// satisfied at once, observed at that status's receipt (not at the question's, nor at the stamp).
#[test]
fn a_question_answered_at_once_is_observed_at_the_answering_status_receipt() {
    let stamp = in_offset(&t("10T03:00"), "+05:30");
    let out = scenario()
        .working(&t("10T01:00"), &stamp)
        .ask(&t("10T02:00"), Some(&t("10T00:30")))
        .until(&t("10T06:00"))
        .run();
    let sat = &out.record("Q")["satisfaction"];
    assert_eq!(sat["satisfiedAt"], t("10T02:00"));
    assert_eq!(sat["observedAt"], t("10T01:00"));
    assert_eq!(sat["claimedObservedAt"], stamp);
    assert_eq!(out.lapses(), []);
}

// ------------------------------------- the answer keeps the timestamp as given ("Time")

/// Zero-value and leap-second status timestamps, in any offset, are kept exactly as given on the
/// question's answer beside the effective value; one equal to the effective instant adds nothing.
#[test]
fn the_answer_keeps_the_status_timestamp_as_given() {
    let cases: [(&str, &str, Option<&str>); 9] = [
        ("1970-01-01T00:00:00Z", "2026-09-10T02:00:00Z", None),
        ("0001-01-01T00:00:00Z", "2026-09-10T02:00:00Z", None),
        ("1970-01-01T05:30:00+05:30", "2026-09-10T02:00:00Z", None),
        ("1970-01-01t00:00:00.000z", "2026-09-10T02:00:00Z", None),
        (
            "2016-12-31T23:59:60Z",
            "2016-12-31T23:59:59.999999999Z",
            None,
        ),
        (
            "2017-01-01T05:29:60+05:30",
            "2016-12-31T23:59:59.999999999Z",
            None,
        ),
        (
            "2016-12-31T23:59:60.5Z",
            "2016-12-31T23:59:59.999999999Z",
            None,
        ),
        // The effective instant as given in another offset: nothing differs but the writing.
        (
            "2026-09-10T07:00:00+05:30",
            "2026-09-10T01:30:00Z",
            Some("no claim"),
        ),
        (
            "2026-09-10T01:30:00Z",
            "2026-09-10T01:30:00Z",
            Some("no claim"),
        ),
    ];
    for (given, observed, no_claim) in cases {
        for state in ["TASK_STATE_WORKING", "TASK_STATE_COMPLETED"] {
            let out = asked(None)
                .push_stamped_state(&t("10T02:00"), "task-q", CTX, state, given)
                .until(&t("10T06:00"))
                .run();
            let sat = &out.record("Q")["satisfaction"];
            let case = format!("{state} stamped {given}");
            assert_eq!(sat["source"], "watcher:task-lifecycle", "{case}");
            assert_eq!(sat["observedAt"], observed, "{case}");
            let claim = if no_claim.is_some() {
                Value::Null
            } else {
                json!(given)
            };
            assert_eq!(sat["claimedObservedAt"], claim, "{case}");
            assert_eq!(out.lapses(), [], "{case}");
        }
    }
}

/// A leap second later than its receipt counts as the receipt, and is kept as given.
#[test]
fn a_leap_second_ahead_of_receipt_counts_as_the_receipt() {
    let mut sc = scenario();
    sc.doc["start"] = json!("2016-12-31T00:00:00Z");
    let q = question("Q", "task-q", "2016-12-31T04:00:00Z").grace("PT1H");
    for (given, answers) in [
        ("2016-12-31T23:59:60Z", true),
        ("2017-01-01T00:59:60+01:00", true),
        ("2016-12-31T23:59:60Z", false),
    ] {
        let working = |sc: Scenario, at: &str| sc.working(at, given);
        let ask =
            |sc: Scenario, at: &str| sc.push_question(at, "task-q", CTX, std::slice::from_ref(&q));
        let sc = sc.clone().until("2016-12-31T06:00:00Z");
        let out = if answers {
            working(ask(sc, "2016-12-31T01:00:00Z"), "2016-12-31T02:00:00Z")
        } else {
            ask(working(sc, "2016-12-31T01:00:00Z"), "2016-12-31T02:00:00Z")
        }
        .run();
        let rec = out.record("Q");
        if answers {
            assert_eq!(rec["satisfaction"]["observedAt"], "2016-12-31T02:00:00Z");
            assert_eq!(rec["satisfaction"]["claimedObservedAt"], given);
            assert_eq!(out.lapses(), [], "{given}");
        } else {
            assert_eq!(rec["status"], "open", "{given}");
            assert_eq!(
                out.lapses(),
                [lapse("Q", "overdue", "2016-12-31T05:00:00Z")],
                "{given}"
            );
        }
    }
}

/// A reported fact keeps its `observedAt` as given too, whatever the offset: a claim later than
/// receipt, a zero value and a leap second; the effective value is the receipt time or the leap
/// second's last nanosecond.
#[test]
fn a_fact_keeps_its_observed_at_as_given() {
    for (given, observed) in [
        (in_offset(&t("10T09:00"), "+05:30"), "2026-09-10T03:00:00Z"),
        (in_offset(&t("10T09:00"), "-04:00"), "2026-09-10T03:00:00Z"),
        (
            "1970-01-01T05:30:00+05:30".to_owned(),
            "2026-09-10T03:00:00Z",
        ),
        (
            "2026-09-10T05:29:60+05:30".to_owned(),
            "2026-09-09T23:59:59.999999999Z",
        ),
    ] {
        let out = scenario()
            .push_artifact(&t("10T01:00"), "task-1", CTX, &[exp("A", &t("10T05:00"))])
            .fact(
                &t("10T03:00"),
                &key_of("A"),
                &given,
                Some(("shipment", "PA-1")),
                FEED,
            )
            .run();
        let sat = &out.record("A")["satisfaction"];
        assert_eq!(sat["observedAt"], observed, "{given}");
        assert_eq!(sat["claimedObservedAt"], json!(given), "{given}");
    }
}

// ------------------------------------------------------------------ generated variants

/// An instant `seconds` (and `nanos`) after 2026-09-10T00:00:00Z.
fn after_start(seconds: i64, nanos: u32) -> String {
    let start = Instant::parse(&t("10T00:00")).expect("an instant");
    Instant::from_nanos(
        start.as_nanos() + i128::from(seconds) * NANOS_PER_SECOND + i128::from(nanos),
    )
    .expect("in range")
    .to_string()
}

const OFFSETS: [&str; 5] = ["+00:00", "+05:30", "-03:00", "+14:00", "-12:00"];

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(24),
        ..ProptestConfig::default()
    })]

    /// However far ahead, in whatever offset, a status stamped later than its receipt before a
    /// question never answers it; after the question it answers at its receipt, kept as given.
    #[test]
    fn a_status_ahead_counts_as_its_receipt(
        ahead_seconds in 1i64..400_000,
        ahead_nanos in 0u32..1_000_000_000,
        offset in 0usize..OFFSETS.len(),
        before_question in any::<bool>(),
        snapshot in any::<bool>(),
    ) {
        // The status is received at 01:00 or 02:00; the question at the other.
        let (status_at, ask_at) = if before_question {
            (t("10T01:00"), t("10T02:00"))
        } else {
            (t("10T02:00"), t("10T01:00"))
        };
        let received = if before_question { 3_600 } else { 7_200 };
        let stamp = in_offset(&after_start(received + ahead_seconds, ahead_nanos), OFFSETS[offset]);
        let ask = |sc: Scenario| {
            sc.ask(&ask_at, Some(&ask_at))
        };
        let status = |sc: Scenario| {
            push_status(sc, snapshot, &status_at, "task-q", "TASK_STATE_WORKING", Some(&stamp), None)
        };
        let sc = scenario().until(&t("10T06:00"));
        let out = if before_question { ask(status(sc)) } else { status(ask(sc)) }.run();
        let q = out.record("Q");
        if before_question {
            prop_assert_eq!(&q["status"], "open", "{}", stamp);
            prop_assert_eq!(out.lapses(), [lapse("Q", "overdue", &t("10T05:00"))]);
        } else {
            prop_assert_eq!(&q["satisfaction"]["observedAt"], &json!(status_at), "{}", stamp);
            prop_assert_eq!(&q["satisfaction"]["claimedObservedAt"], &json!(stamp));
            prop_assert_eq!(out.lapses(), []);
        }
    }
}
