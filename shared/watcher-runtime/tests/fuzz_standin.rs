//! The proptest stand-in for the `cargo fuzz` targets (issue 12 item 9): the same target
//! functions (`watcher_runtime::fuzzing`), fed by proptest on the stable toolchain so CI runs
//! them on every change — a few hundred cases each. Parser inputs are valid documents with
//! random byte edits (insertions, replacements, truncation), so most of them get past the JSON
//! reader and reach the parsers; the engine takes raw bytes, each of which is a choice.

use proptest::prelude::*;
use watcher_runtime::fuzzing;

const URI: &str = "https://rsaxb.com/a2a/expectations/v1";

fn push_seeds() -> Vec<String> {
    vec![
        format!(
            r#"{{"artifactUpdate":{{"taskId":"t","contextId":"c","artifact":{{"artifactId":"a","parts":[{{"text":"x"}}],"extensions":["{URI}"],"metadata":{{"{URI}":{{"expectations":[{{"expectationId":"e1","kind":"shipment.manifest","subject":{{"type":"shipment","id":"PA-1"}},"expects":"x","satisfiedBy":{{"factKey":"k"}},"dueAt":"2026-09-10T20:15:00Z","grace":"PT1H","anchor":{{"expectationId":"e0","offset":"PT1H"}},"after":["e0"],"horizon":"2026-09-12T00:00:00Z"}}],"withdraw":["e0"],"reason":"r","facts":[{{"factKey":"k","observedAt":"2026-09-10T20:15:00Z"}}]}}}}}}}}}}"#
        ),
        r#"{"statusUpdate":{"taskId":"t","contextId":"c","status":{"state":"TASK_STATE_INPUT_REQUIRED","timestamp":"2026-09-10T20:15:00Z","message":{"messageId":"m","role":"ROLE_AGENT","parts":[]}}}}"#.to_owned(),
        r#"{"id":"t","contextId":"c","status":{"state":"canceled"},"artifacts":[]}"#.to_owned(),
        r#"{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"input-required"},"final":false}"#.to_owned(),
        format!(r#"{{"message":{{"messageId":"m","role":"ROLE_AGENT","parts":[],"metadata":{{"{URI}":{{"facts":[{{"factKey":"k","observedAt":"1970-01-01T00:00:00Z"}}]}}}}}}}}"#),
    ]
}

fn fact_seeds() -> Vec<String> {
    vec![
        r#"{"factKey":"shipment.departed:PA-1","observedAt":"2026-09-11T02:41:00Z","source":"someone-else","subject":{"type":"shipment","id":"PA-1"}}"#.into(),
        r#"{"factKey":"k","observedAt":"2016-12-31T23:59:60Z"}"#.into(),
        r#"{"factKey":"k","observedAt":"0001-01-01T00:00:00Z","extra":[1,2,{"a":null}]}"#.into(),
    ]
}

fn time_seeds() -> Vec<String> {
    [
        "2026-09-10T20:15:00Z",
        "2026-09-10t20:15:00.123456789z",
        "2026-09-10T22:15:00+02:00",
        "9999-12-31T23:59:59.999999999Z",
        "0001-01-01T00:00:00Z",
        "2016-12-31T23:59:60Z",
        "P1DT2H30M",
        "PT1,5H",
        "P1W",
        "PT0S",
        "P0.5D",
        "PT0.000000001S",
    ]
    .iter()
    .map(ToString::to_string)
    .collect()
}

/// A seed with random edits: each `(position, byte, kind)` replaces, inserts or deletes one
/// byte; then the result is cut at `cut` (when shorter).
fn mutated(seeds: Vec<String>) -> impl Strategy<Value = Vec<u8>> {
    (
        prop::sample::select(seeds),
        prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..4), 0..4),
        any::<prop::sample::Index>(),
        any::<bool>(),
    )
        .prop_map(|(seed, edits, cut, truncate)| {
            let mut bytes = seed.into_bytes();
            for (at, byte, kind) in edits {
                if bytes.is_empty() {
                    bytes.push(byte);
                    continue;
                }
                let i = at.index(bytes.len());
                match kind {
                    0 => bytes[i] = byte,
                    1 => bytes.insert(i, byte),
                    2 => {
                        bytes.remove(i);
                    }
                    // A printable character, so edits stay inside the grammar's alphabet often.
                    _ => bytes[i] = b"0123456789TZtz:.,+-PWDHMS \"{}[]"[usize::from(byte) % 31],
                }
            }
            if truncate && !bytes.is_empty() {
                bytes.truncate(cut.index(bytes.len()));
            }
            bytes
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn push_parser(data in mutated(push_seeds())) {
        fuzzing::push_parser(&data);
    }

    #[test]
    fn fact_parser(data in mutated(fact_seeds())) {
        fuzzing::fact_parser(&data);
    }

    #[test]
    fn time_grammar(data in mutated(time_seeds())) {
        fuzzing::time_grammar(&data);
    }

    #[test]
    fn time_grammar_on_any_text(text in "[0-9TtZz:.,+\\- PWDHMSY]{0,36}") {
        fuzzing::time_grammar(text.as_bytes());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn engine(data in prop::collection::vec(any::<u8>(), 0..120)) {
        let _lapses = fuzzing::engine(&data);
    }
}

/// The engine target is not vacuous: a scenario with a lapse exercises the lapse checks.
#[test]
fn the_engine_target_sees_lapses() {
    // Raise E0 due 60 minutes before the first step's clock + 0 (op 0, no advance, pick 0,
    // due byte 0 → minutes − 60, no grace): it lapses overdue at once.
    let doc = fuzzing::scenario(&[0, 0, 0, 0, 0]);
    assert_eq!(doc["steps"].as_array().map(Vec::len), Some(1));
    assert_eq!(fuzzing::engine(&[0, 0, 0, 0, 0]), 1, "one overdue lapse");
}
