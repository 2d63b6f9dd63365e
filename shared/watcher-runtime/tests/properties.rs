//! Properties of the watcher over random event sequences (semantics.md "States", "Raising",
//! "Identity and tenancy"; expectations-v1 §9, §10.1, §13.2): a small pool of expectations on
//! two subjects with `after`/`anchor` links and an optional successor, facts for their keys at
//! random times, other facts on the subjects, cancellations, explicit withdrawals, and
//! duplicates of earlier steps.
//!
//! Semantics revision 3 adds edges to the mix: statuses of the origin tasks in every wire form
//! (1.0 names, ProtoJSON numbers, 0.3 names), with an agent timestamp, none, a zero value or an
//! invalid one; timestamp-less `Task` snapshots; questions asked in input-required statuses; and
//! facts stamped at grammar edges: zero values, leap seconds, offsets, lower case, nanoseconds.
//!
//! Facts here always name a subject; see `rules.rs`
//! `a_subjectless_fact_redelivered_after_a_matching_raise_is_a_no_op` for the one case where a
//! redelivery is not yet a no-op.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::{exp, key_of, s, scenario, Exp, Outcome, Scenario};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Value};
use watcher_core::time::Instant;

const CTX: &str = "ctx-p";
const FEED: &str = "carrier-feed:p";
const POOL: usize = 6;
const SUBJECTS: [&str; 2] = ["PA-1", "PA-2"];
/// E0, E1, E2 and E5 are about PA-1; E3 and E4 about PA-2.
const SUBJECT_OF: [usize; POOL] = [0, 0, 0, 1, 1, 0];
const GRACES: [Option<&str>; 3] = [None, Some("PT30M"), Some("PT2H")];

/// `2026-09-10T00:00:00Z` plus `minutes` (which may be negative, down to a day before).
fn at(minutes: i64) -> String {
    let total = minutes + 24 * 60;
    assert!(total >= 0);
    format!(
        "2026-09-{:02}T{:02}:{:02}:00Z",
        9 + total / 1440,
        (total % 1440) / 60,
        total % 60
    )
}

fn id(i: usize) -> String {
    format!("E{i}")
}

#[derive(Debug, Clone)]
struct Pool {
    due: [u16; POOL],
    grace: [usize; POOL],
    horizon: [Option<u16>; POOL],
    task: [u8; POOL],
    after: [bool; POOL],
    anchor: [Option<u16>; POOL],
    successor: bool,
    raise_slot: [u8; POOL],
}

impl Pool {
    /// The fact key of pool member `i` (the successor keeps its predecessor's key).
    fn key(&self, i: usize) -> String {
        if i == 5 && self.successor {
            key_of("E0")
        } else {
            key_of(&id(i))
        }
    }

    fn task(&self, i: usize) -> String {
        format!("task-{}", self.task[i])
    }

    fn expectation(&self, i: usize) -> Exp {
        let due = i64::from(self.due[i]);
        let mut e = exp(&id(i), &at(due))
            .subject("shipment", SUBJECTS[SUBJECT_OF[i]])
            .key(&self.key(i));
        if let Some(g) = GRACES[self.grace[i]] {
            e = e.grace(g);
        }
        if let Some(h) = self.horizon[i] {
            e = e.horizon(&at(due + i64::from(h)));
        }
        let previous = match i {
            1 | 2 => Some(i - 1),
            4 => Some(3),
            _ => None,
        };
        if let Some(p) = previous {
            if self.after[i] {
                e = e.after(&[&id(p)]);
            }
            if let Some(offset) = self.anchor[i] {
                e = e.anchor(&id(p), &format!("PT{offset}M"));
            }
        }
        if i == 5 && self.successor {
            e = e.supersedes("E0");
        }
        e
    }

    /// The `dueAt` as raised, normalised.
    fn raised_due(&self, i: usize) -> String {
        at(i64::from(self.due[i]))
    }
}

#[derive(Debug, Clone)]
enum Event {
    Raise(usize),
    Withdraw(usize),
    Fact {
        of: usize,
        observed_delta: i16,
        subject: usize,
    },
    Noise {
        subject: usize,
    },
    Cancel(u8),
    /// A status of `task-{task}`: `state` in [`STATES`], written in wire form `form` (0: 1.0
    /// name, 1: enum number, 2: 0.3 name), stamped per `stamp` (0: none, 1: the agent's clock
    /// `skew` minutes off the watcher's, 2: a zero value, 3: not an instant).
    Status {
        task: u8,
        state: usize,
        form: u8,
        stamp: u8,
        skew: i16,
    },
    /// A timestamp-less `Task` snapshot of `task-{task}` in `state` (what the SDKs push first).
    Snapshot {
        task: u8,
        state: usize,
    },
    /// An input-required status of `task-{task}` asking question `Q{q}`, stamped or not.
    Ask {
        task: u8,
        q: u8,
        stamped: bool,
        due: u16,
    },
    /// A fact for pool member `of` stamped at a grammar edge (see [`edge_instant`]).
    EdgeFact {
        of: usize,
        subject: usize,
        form: u8,
    },
}

/// (1.0 name, enum number, 0.3 name) of the states the generator pushes.
const STATES: [(&str, u8, &str); 6] = [
    ("TASK_STATE_SUBMITTED", 1, "submitted"),
    ("TASK_STATE_WORKING", 2, "working"),
    ("TASK_STATE_COMPLETED", 3, "completed"),
    ("TASK_STATE_INPUT_REQUIRED", 6, "input-required"),
    ("TASK_STATE_AUTH_REQUIRED", 8, "auth-required"),
    ("TASK_STATE_CANCELED", 5, "canceled"),
];

impl Event {
    fn rank(&self) -> usize {
        match self {
            Event::Raise(i) => *i,
            Event::Withdraw(_) => 10,
            Event::Fact { .. } | Event::EdgeFact { .. } => 11,
            Event::Noise { .. } => 12,
            Event::Cancel(_) => 13,
            Event::Snapshot { .. } => 14,
            Event::Ask { .. } => 15,
            Event::Status { .. } => 16,
        }
    }
}

/// `observedAt` at a grammar edge for a fact received `m` minutes after the start: 0 and 1 the
/// zero values, 2 a leap second (the last second of the previous day), 3 the receipt minute with
/// an offset, 4 lower-case `t` and `z` with a nanosecond fraction.
fn edge_instant(form: u8, m: i64) -> String {
    let receipt = at(m);
    match form {
        0 => "0001-01-01T00:00:00Z".to_owned(),
        1 => "1970-01-01T00:00:00Z".to_owned(),
        2 => format!("{}T23:59:60Z", &at(m - 1440)[..10]),
        3 => {
            let t = Instant::parse(&receipt).expect("an instant");
            let shifted = Instant::from_nanos(
                t.as_nanos() + 5 * 3_600 * 1_000_000_000 + 30 * 60 * 1_000_000_000,
            )
            .expect("in range")
            .to_string();
            format!("{}+05:30", shifted.trim_end_matches('Z'))
        }
        _ => receipt.replace('T', "t").replace('Z', ".000000001z"),
    }
}

/// Question `Q{q}` of `task-{task}`, due `due` minutes after the start.
fn question(task: u8, q: u8, due: u16) -> Exp {
    exp(&format!("Q{q}"), &at(i64::from(due)))
        .kind("question.answer")
        .subject("task", &format!("task-{task}"))
        .key(&format!("answered:task-{task}"))
        .set("basis", json!("declared"))
}

#[derive(Debug, Clone)]
struct Case {
    pool: Pool,
    events: Vec<(u8, Event)>,
    dups_a: Vec<(Index, Index)>,
    dups_b: Vec<(Index, Index)>,
}

/// Minutes of a 15-minute slot.
fn slot_minutes(slot: u8) -> i64 {
    i64::from(slot) * 15
}

impl Case {
    /// The base steps in order: raises first at an instant (E0 before its successor), then
    /// withdrawals, facts, other facts and cancellations. A withdrawal before its target's
    /// raise is dropped (its later duplicate would otherwise be a different input).
    fn ordered(&self) -> Vec<(i64, Event)> {
        let mut raise_at = [0i64; POOL];
        for (i, r) in raise_at.iter_mut().enumerate() {
            *r = slot_minutes(self.pool.raise_slot[i]);
        }
        // The successor is raised no earlier than what it supersedes.
        raise_at[5] = raise_at[5].max(raise_at[0]);
        let mut all: Vec<(i64, Event)> =
            (0..POOL).map(|i| (raise_at[i], Event::Raise(i))).collect();
        for (slot, e) in &self.events {
            let m = slot_minutes(*slot);
            match e {
                Event::Withdraw(i) if m < raise_at[*i] => {}
                _ => all.push((m, e.clone())),
            }
        }
        all.sort_by_key(|(m, e)| (*m, e.rank()));
        all
    }

    fn base(&self) -> Scenario {
        let mut sc = scenario().until(&at(3 * 24 * 60));
        for (m, e) in self.ordered() {
            let now = at(m);
            sc = match e {
                Event::Raise(i) => {
                    sc.push_artifact(&now, &self.pool.task(i), CTX, &[self.pool.expectation(i)])
                }
                Event::Withdraw(i) => {
                    sc.push_withdraw(&now, &self.pool.task(i), CTX, &[&id(i)], "no longer needed")
                }
                Event::Fact {
                    of,
                    observed_delta,
                    subject,
                } => sc.fact(
                    &now,
                    &self.pool.key(of),
                    &at(m + i64::from(observed_delta)),
                    Some(("shipment", SUBJECTS[subject])),
                    FEED,
                ),
                Event::Noise { subject } => sc.fact(
                    &now,
                    &format!("shipment.seen:{}", SUBJECTS[subject]),
                    &at(m - 1),
                    Some(("shipment", SUBJECTS[subject])),
                    FEED,
                ),
                Event::Cancel(task) => {
                    sc.push_state(&now, &format!("task-{task}"), CTX, "TASK_STATE_CANCELED")
                }
                Event::Status {
                    task,
                    state,
                    form,
                    stamp,
                    skew,
                } => {
                    let (name, number, v03) = STATES[state];
                    let state = match form {
                        0 => json!(name),
                        1 => json!(number),
                        _ => json!(v03),
                    };
                    let mut status = json!({ "state": state });
                    match stamp {
                        1 => status["timestamp"] = json!(at(m + i64::from(skew))),
                        2 => status["timestamp"] = json!("0001-01-01T00:00:00Z"),
                        3 => status["timestamp"] = json!("not a time"),
                        _ => {}
                    }
                    sc.push_event(
                        &now,
                        json!({ "statusUpdate": {
                            "taskId": format!("task-{task}"), "contextId": CTX, "status": status,
                        } }),
                    )
                }
                Event::Snapshot { task, state } => sc.push_event(
                    &now,
                    json!({ "task": {
                        "id": format!("task-{task}"), "contextId": CTX,
                        "status": { "state": STATES[state].0 },
                    } }),
                ),
                Event::Ask {
                    task,
                    q,
                    stamped,
                    due,
                } => sc.push_status(
                    &now,
                    &format!("task-{task}"),
                    CTX,
                    "TASK_STATE_INPUT_REQUIRED",
                    stamped.then_some(now.as_str()),
                    Some(common::question_metadata(&[question(task, q, due)])),
                ),
                Event::EdgeFact { of, subject, form } => sc.fact(
                    &now,
                    &self.pool.key(of),
                    &edge_instant(form, m),
                    Some(("shipment", SUBJECTS[subject])),
                    FEED,
                ),
            };
        }
        sc
    }
}

/// Whether a copy of `step` delivered later must change nothing. A status that is not
/// withdrawing is not: "after" between statuses of one task is receipt order where a timestamp
/// is missing (semantics.md "Questions that expire"), so a status redelivered after a question
/// is, to the watcher, the task moving on. Delivered twice in a row, it is a no-op (checked by
/// `a_step_delivered_twice_is_delivered_once`).
fn reorderable(step: &Value) -> bool {
    let event = &step["push"]["event"];
    if event.get("task").is_some() {
        return false;
    }
    match event["statusUpdate"]["status"]["state"].as_str() {
        Some("TASK_STATE_CANCELED") => true,
        Some(_) => false,
        None => event["statusUpdate"].is_null(),
    }
}

/// `base` with a copy of step `i` inserted after step `max(i, j)`, at that step's instant.
fn with_duplicates(base: &Scenario, dups: &[(Index, Index)]) -> Scenario {
    let steps = base.steps().clone();
    let n = steps.len();
    let mut after: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for (i, j) in dups {
        let i = i.index(n);
        if !reorderable(&steps[i]) {
            continue;
        }
        let p = i.max(j.index(n));
        after.entry(p).or_default().push(i);
    }
    let mut out = Vec::new();
    for (p, step) in steps.iter().enumerate() {
        out.push(step.clone());
        for &i in after.get(&p).into_iter().flatten() {
            let mut copy = steps[i].clone();
            copy["at"] = step["at"].clone();
            out.push(copy);
        }
    }
    let mut sc = base.clone();
    sc.doc["steps"] = Value::Array(out);
    sc
}

/// `base` with step `i` delivered twice in a row.
fn repeated(base: &Scenario, i: usize) -> Scenario {
    let mut sc = base.clone();
    let steps = sc.doc["steps"].as_array_mut().expect("steps");
    let copy = steps[i].clone();
    steps.insert(i + 1, copy);
    sc
}

fn instant(v: &Value) -> Instant {
    Instant::parse(v.as_str().expect("an instant")).expect("an RFC 3339 instant")
}

/// What must match between runs: the record and the lapse tasks.
fn observable(out: &Outcome) -> (Vec<Value>, Vec<Value>) {
    (
        out.records().clone(),
        out.lapse_tasks().into_iter().cloned().collect(),
    )
}

/// The invariants every run must keep.
fn check_invariants(case: &Case, out: &Outcome) -> Result<(), TestCaseError> {
    // At most one lapse per (expectation, kind), in the record and in the tasks; the tasks are
    // exactly the record's lapses.
    let mut recorded: BTreeSet<String> = BTreeSet::new();
    for r in out.records() {
        let eid = s(&r["expectationId"]);
        let mut kinds = BTreeSet::new();
        for l in r["lapses"].as_array().expect("lapses") {
            prop_assert!(
                kinds.insert(s(&l["lapse"])),
                "{eid} lapsed {} twice",
                l["lapse"]
            );
            recorded.insert(s(&l["messageId"]));
            let lapsed = instant(&l["lapsedAt"]);
            // No lapse after satisfaction or withdrawal.
            if !r["satisfaction"].is_null() {
                prop_assert!(
                    lapsed <= instant(&r["satisfaction"]["satisfiedAt"]),
                    "{eid}: lapse after satisfaction: {r}"
                );
            }
            if !r["withdrawal"].is_null() {
                prop_assert!(
                    lapsed <= instant(&r["withdrawal"]["withdrawnAt"]),
                    "{eid}: lapse after withdrawal: {r}"
                );
            }
        }
        // Satisfaction and withdrawal are final and exclusive.
        match s(&r["status"]).as_str() {
            "open" => prop_assert!(
                r["satisfaction"].is_null() && r["withdrawal"].is_null(),
                "{r}"
            ),
            "satisfied" => prop_assert!(
                !r["satisfaction"].is_null() && r["withdrawal"].is_null(),
                "{r}"
            ),
            "withdrawn" => prop_assert!(
                r["satisfaction"].is_null() && !r["withdrawal"].is_null(),
                "{r}"
            ),
            other => prop_assert!(false, "status {other}"),
        }
        // projectedDueAt never changes: it is the dueAt as raised.
        if let Some(n) = eid.strip_prefix('E') {
            let i: usize = n.parse().expect("E<n>");
            prop_assert_eq!(s(&r["projectedDueAt"]), case.pool.raised_due(i));
        }
        // The effective observedAt is never after receipt, never a zero value, and the value
        // as given is kept whenever it differs (semantics.md "Time").
        if !r["satisfaction"].is_null() {
            let sat = &r["satisfaction"];
            let observed = instant(&sat["observedAt"]);
            prop_assert!(observed <= instant(&sat["satisfiedAt"]), "{r}");
            prop_assert!(!observed.is_zero_value(), "{r}");
            if let Some(claimed) = sat["claimedObservedAt"].as_str() {
                prop_assert_ne!(claimed, s(&sat["observedAt"]), "{}", r);
            }
        }
        // No current due time is re-anchored before the scenario (no year 1 or 1970).
        prop_assert!(s(&r["dueAt"]).as_str() > "2026-09-08", "{r}");
    }
    let mut sent: BTreeSet<String> = BTreeSet::new();
    for block in out.lapse_blocks() {
        let mid = format!(
            "lapse:{}:{}:{}",
            s(&block["expectationId"]),
            s(&block["lapse"]),
            s(&block["dueAt"])
        );
        prop_assert!(sent.insert(mid.clone()), "lapse task {mid} twice");
        let r = out.record(&s(&block["expectationId"]));
        prop_assert_eq!(&block["projectedDueAt"], &r["projectedDueAt"]);
    }
    prop_assert_eq!(&sent, &recorded);
    // Each expectation is satisfied at most once and withdrawn at most once, never both.
    let mut closed: BTreeMap<String, &str> = BTreeMap::new();
    for line in &out.lines {
        let ty = line["type"].as_str().unwrap_or("");
        if ty == "satisfied" || ty == "withdrawn" {
            let eid = s(&line["expectationId"]);
            prop_assert!(
                closed
                    .insert(
                        eid.clone(),
                        if ty == "satisfied" {
                            "satisfied"
                        } else {
                            "withdrawn"
                        }
                    )
                    .is_none(),
                "{eid} closed twice: {line}"
            );
        }
        // A lapse line never follows the closing of its expectation.
        if ty == "lapseTask" {
            let eid =
                s(&line["request"]["message"]["metadata"][common::URI]["lapse"]["expectationId"]);
            prop_assert!(
                !closed.contains_key(&eid),
                "{eid} lapsed after it was closed: {line}"
            );
        }
    }
    Ok(())
}

fn pool() -> impl Strategy<Value = Pool> {
    (
        prop::array::uniform6(30u16..1800),
        prop::array::uniform6(0usize..GRACES.len()),
        prop::array::uniform6(prop::option::weighted(0.4, 0u16..1800)),
        prop::array::uniform6(0u8..2),
        prop::array::uniform6(any::<bool>()),
        prop::array::uniform6(prop::option::weighted(0.6, 15u16..600)),
        any::<bool>(),
        prop::array::uniform6(0u8..96),
    )
        .prop_map(
            |(due, grace, horizon, task, after, anchor, successor, raise_slot)| Pool {
                due,
                grace,
                horizon,
                task,
                after,
                anchor,
                successor,
                raise_slot,
            },
        )
}

fn event() -> impl Strategy<Value = (u8, Event)> {
    let e = prop_oneof![
        6 => (0usize..POOL, -120i16..30, 0usize..2).prop_map(|(of, observed_delta, subject)| Event::Fact { of, observed_delta, subject }),
        2 => (0usize..2).prop_map(|subject| Event::Noise { subject }),
        1 => (0u8..2).prop_map(Event::Cancel),
        1 => (0usize..POOL).prop_map(Event::Withdraw),
        3 => (0u8..2, 0usize..STATES.len(), 0u8..3, 0u8..4, -30i16..30).prop_map(|(task, state, form, stamp, skew)| Event::Status { task, state, form, stamp, skew }),
        1 => (0u8..2, 0usize..STATES.len()).prop_map(|(task, state)| Event::Snapshot { task, state }),
        2 => (0u8..2, 0u8..2, any::<bool>(), 60u16..1800).prop_map(|(task, q, stamped, due)| Event::Ask { task, q, stamped, due }),
        2 => (0usize..POOL, 0usize..2, 0u8..5).prop_map(|(of, subject, form)| Event::EdgeFact { of, subject, form }),
    ];
    (0u8..144, e)
}

fn case() -> impl Strategy<Value = Case> {
    (
        pool(),
        prop::collection::vec(event(), 0..16),
        prop::collection::vec((any::<Index>(), any::<Index>()), 1..6),
        prop::collection::vec((any::<Index>(), any::<Index>()), 1..6),
    )
        .prop_map(|(pool, events, dups_a, dups_b)| Case {
            pool,
            events,
            dups_a,
            dups_b,
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64), ..ProptestConfig::default() })]

    /// At most one lapse per (expectation, kind); no lapse after satisfaction or withdrawal;
    /// satisfaction and withdrawal final; `projectedDueAt` is the `dueAt` as raised.
    #[test]
    fn invariants_hold(case in case()) {
        let out = case.base().run();
        check_invariants(&case, &out)?;
    }

    /// Delivering any step twice in a row gives the same record and lapse tasks as once.
    #[test]
    fn a_step_delivered_twice_is_delivered_once(case in case()) {
        let base = case.base();
        let once = base.run();
        let expected = observable(&once);
        for i in 0..base.steps().len() {
            let twice = repeated(&base, i).run();
            check_invariants(&case, &twice)?;
            prop_assert_eq!(&observable(&twice), &expected, "step {} repeated: {}", i, base.steps()[i]);
        }
    }

    /// Duplicates of earlier steps, wherever they fall later, change nothing.
    #[test]
    fn results_do_not_depend_on_how_duplicates_interleave(case in case()) {
        let base = case.base();
        let expected = observable(&base.run());
        for dups in [&case.dups_a, &case.dups_b] {
            let variant = with_duplicates(&base, dups);
            let out = variant.run();
            check_invariants(&case, &out)?;
            prop_assert_eq!(&observable(&out), &expected, "steps: {}", json!(variant.steps()));
        }
    }
}
