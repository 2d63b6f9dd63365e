//! Fuzz targets (issue 12 item 9), shared by the `cargo fuzz` crate (`fuzz/`, nightly) and the
//! proptest stand-in that runs on stable in CI (`tests/fuzz_standin.rs`). Each target takes
//! arbitrary bytes, must never panic on them, and asserts the core's invariants with `assert!`
//! (a failed assertion is a finding, as a panic is).
//!
//! * `push_parser`: a push body → `StreamResponse` → items and warnings (serve.md "Routes").
//! * `fact_parser`: a fact body → a reported fact; the source is always the reporter (§13.5).
//! * `time_grammar`: RFC 3339 instants and ISO 8601 durations (semantics.md "Time"): what
//!   parses prints in the output format and parses back to the same value.
//! * `engine`: an event sequence decoded from the bytes, replayed on the in-memory store;
//!   at most one lapse per (expectation, lapse kind) (§13.2), unique `messageId`s, nothing lapses
//!   after it was satisfied or withdrawn, every lapse names a recorded expectation, and the same
//!   sequence replayed again gives the same output (the engine is a pure function of its inputs).

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::{json, Value};
use watcher_core::fact::parse_fact;
use watcher_core::ids::{AgentId, Source};
use watcher_core::ingest::{check_state, push_items, push_warnings};
use watcher_core::time::{Instant, IsoDuration};

use crate::memory::MemoryStore;

const URI: &str = "https://rsaxb.com/a2a/expectations/v1";
const NOW: &str = "2026-09-10T12:00:00Z";

/// A push body: never panics; the translation is deterministic.
pub fn push_parser(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok(event) = a2a_types::StreamResponse::from_push_body(value) else {
        return;
    };
    let _ = check_state(&event);
    let agent = AgentId::parse("booking").expect("a valid agent id");
    let now = Instant::parse(NOW).expect("a valid instant");
    let items = push_items(&event, &agent, now);
    assert_eq!(items, push_items(&event, &agent, now), "deterministic");
    let warnings = push_warnings(&event);
    assert!(
        warnings.iter().all(|w| w.contains("field `")),
        "every warning names its field: {warnings:?}"
    );
}

/// A fact body: never panics; a parsed fact's source is the reporter, whatever the body says.
pub fn fact_parser(data: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let reporter = Source::parse("carrier-feed:fuzz").expect("a valid source");
    match parse_fact(&value, &reporter) {
        Ok(f) => assert_eq!(f.source, reporter, "§13.5: the source is the reporter"),
        Err(e) => assert!(!e.field.is_empty(), "a refusal names its field: {e}"),
    }
}

/// The time grammar: never panics; what parses round-trips through its output form.
pub fn time_grammar(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(t) = Instant::parse(text) {
        let printed = t.to_string();
        assert!(printed.ends_with('Z'), "output is UTC: {printed}");
        assert_eq!(Instant::parse(&printed), Ok(t), "{text:?} → {printed}");
        assert!(Instant::MIN <= t && t <= Instant::MAX, "in range: {text:?}");
    }
    if let Ok(d) = IsoDuration::parse(text) {
        assert_eq!(d.as_str(), text, "kept as written");
        let again = IsoDuration::parse(d.as_str()).expect("parses again");
        assert_eq!(again.as_nanos(), d.as_nanos());
        assert!(d.as_nanos() >= 0, "never negative: {text:?}");
    }
}

/// Reads the fuzzer's bytes as small choices.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn next(&mut self) -> Option<u8> {
        let (first, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(*first)
    }
}

const IDS: [&str; 4] = ["E0", "E1", "E2", "E3"];
const SUBJECTS: [&str; 2] = ["PA-1", "PA-2"];
const STATES: [&str; 4] = [
    "TASK_STATE_CANCELED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
    "TASK_STATE_FAILED",
];
const GRACES: [Option<&str>; 4] = [None, Some("PT30M"), Some("PT2H"), Some("P1D")];

/// `2026-09-10T00:00:00Z` plus `minutes`.
fn at(minutes: i64) -> String {
    let t = Instant::parse("2026-09-10T00:00:00Z").expect("a valid instant");
    Instant::from_nanos(t.as_nanos() + i128::from(minutes) * 60_000_000_000)
        .expect("in range")
        .to_string()
}

fn artifact(task: &str, block: Value) -> Value {
    json!({ "artifactUpdate": { "taskId": task, "contextId": "ctx-f",
        "artifact": { "artifactId": format!("a-{task}"), "parts": [{ "text": "x" }],
            "extensions": [URI], "metadata": { URI: block } } } })
}

/// The scenario (contracts/replay.md) the bytes describe: up to 24 steps, each one byte for what
/// and a few for which and when, over four expectation ids on two subjects.
pub fn scenario(data: &[u8]) -> Value {
    let card: Value = serde_json::from_str(include_str!("../../../examples/booking-card.json"))
        .expect("examples/booking-card.json is JSON");
    let mut b = Bytes(data);
    let mut minutes: i64 = 0;
    let mut steps = Vec::new();
    while let Some(op) = b.next() {
        if steps.len() >= 24 {
            break;
        }
        minutes += i64::from(b.next().unwrap_or(0) % 64) * 7;
        let pick = usize::from(b.next().unwrap_or(0));
        let id = IDS[pick % IDS.len()];
        let task = format!("task-{}", pick % 3);
        let event = match op % 6 {
            0 | 1 => {
                let due = minutes + i64::from(b.next().unwrap_or(0) % 32) * 15 - 60;
                let mut e = json!({ "expectationId": id, "kind": "shipment.manifest",
                    "subject": { "type": "shipment", "id": SUBJECTS[(pick / 4) % 2] },
                    "expects": "x", "satisfiedBy": { "factKey": format!("k:{id}") },
                    "dueAt": at(due), "basis": "observed" });
                let extra = b.next().unwrap_or(0);
                if let Some(g) = GRACES[usize::from(extra) % GRACES.len()] {
                    e["grace"] = json!(g);
                }
                if extra & 0x10 != 0 {
                    e["horizon"] = json!(at(due + 600));
                }
                let other = IDS[usize::from(extra >> 5) % IDS.len()];
                if extra & 0x04 != 0 {
                    e["after"] = json!([other]);
                }
                if extra & 0x08 != 0 {
                    e["anchor"] = json!({ "expectationId": other, "offset": "PT1H" });
                }
                if op % 6 == 1 {
                    e["supersedes"] = json!(other);
                }
                json!({ "push": { "agent": "booking",
                    "event": artifact(&task, json!({ "expectations": [e] })) } })
            }
            2 => json!({ "fact": { "factKey": format!("k:{id}"), "observedAt": at(minutes - 5),
                    "subject": { "type": "shipment", "id": SUBJECTS[(pick / 4) % 2] } },
                "reporter": "carrier-feed:f" }),
            3 => {
                let state = STATES[pick % STATES.len()];
                json!({ "push": { "agent": "booking", "event": { "statusUpdate": {
                    "taskId": task, "contextId": "ctx-f", "status": { "state": state } } } } })
            }
            4 => json!({ "push": { "agent": "booking",
                    "event": artifact(&task, json!({ "withdraw": [id], "reason": "fuzz" })) } }),
            _ => json!({ "fact": { "factKey": "other", "observedAt": at(minutes),
                    "subject": { "type": "shipment", "id": SUBJECTS[pick % 2] } },
                "reporter": "carrier-feed:f" }),
        };
        let mut step = event;
        step["at"] = json!(at(minutes));
        steps.push(step);
    }
    json!({
        "start": at(0),
        "until": at(minutes + 3 * 1440),
        "agents": [ { "id": "booking", "tenant": "default", "card": card } ],
        "steps": steps,
    })
}

/// Replays `doc` on a fresh in-memory store.
fn replay(doc: &Value) -> Vec<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a runtime");
    runtime
        .block_on(crate::replay::run(doc, Arc::new(MemoryStore::default())))
        .expect("a well-formed scenario runs")
}

/// The (expectationId, lapse kind, messageId, lapsedAt) of every lapse the output reports.
fn lapses(lines: &[Value]) -> Vec<(String, String, String, String)> {
    lines
        .iter()
        .filter_map(|l| {
            let block = match l["type"].as_str()? {
                "lapseTask" => &l["request"]["message"]["metadata"][URI]["lapse"],
                "lapse" => &l["lapse"],
                _ => return None,
            };
            let message_id = l["request"]["message"]["messageId"]
                .as_str()
                .or(l["messageId"].as_str())?;
            Some((
                block["expectationId"].as_str()?.to_owned(),
                block["lapse"].as_str()?.to_owned(),
                message_id.to_owned(),
                block["lapsedAt"].as_str()?.to_owned(),
            ))
        })
        .collect()
}

/// The engine on an event sequence decoded from `data`, with the core's invariants asserted.
/// Returns how many lapses the sequence produced.
pub fn engine(data: &[u8]) -> usize {
    let doc = scenario(data);
    let lines = replay(&doc);
    let found = lapses(&lines);
    let mut kinds = BTreeSet::new();
    let mut ids = BTreeSet::new();
    for (exp, kind, message_id, _) in &found {
        assert!(
            kinds.insert((exp.clone(), kind.clone())),
            "§13.2: {exp} lapsed {kind} twice"
        );
        assert!(ids.insert(message_id.clone()), "{message_id} twice");
    }
    let record = lines
        .last()
        .filter(|l| l["type"] == "record")
        .expect("the last line is the record");
    let records = record["expectations"].as_array().expect("a list");
    for (exp, kind, _, lapsed_at) in &found {
        let r = records
            .iter()
            .find(|r| r["expectationId"] == json!(exp))
            .unwrap_or_else(|| panic!("{exp} lapsed but is not recorded"));
        let listed = r["lapses"]
            .as_array()
            .is_some_and(|l| l.iter().any(|x| x["lapse"] == json!(kind)));
        assert!(listed, "{exp}'s record lists its {kind} lapse");
        let lapsed = Instant::parse(lapsed_at).expect("an instant");
        for closed in [
            &r["satisfaction"]["satisfiedAt"],
            &r["withdrawal"]["withdrawnAt"],
        ] {
            if let Some(t) = closed.as_str() {
                let t = Instant::parse(t).expect("an instant");
                assert!(
                    lapsed <= t,
                    "{exp} lapsed {kind} at {lapsed} after closing at {t}"
                );
            }
        }
    }
    assert_eq!(lines, replay(&doc), "the same inputs give the same output");
    found.len()
}
