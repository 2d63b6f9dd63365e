//! The instant cases of semantics.md "Time" (`tests/cases.json`) read by [`Instant::parse`]: each
//! accepted case reads as its `reads` (and prints back so), each refused case is refused with a
//! reason holding its `why`. The same file is walked through every field, query parameter,
//! webhook mapping and command-line flag that takes an instant (watcher-http
//! `tests/instants.rs`, the root crate's `tests/instants_cli.rs`), so they read alike.

use instants::Instant;
use serde_json::Value;

const CASES: &str = include_str!("cases.json");

fn list(member: &str, key: &str) -> Vec<(String, String)> {
    let cases: Value = serde_json::from_str(CASES).expect("cases.json is JSON");
    cases[member]
        .as_array()
        .expect("a list of cases")
        .iter()
        .map(|c| {
            (
                c["given"].as_str().expect("given").to_owned(),
                c[key].as_str().expect("reads or why").to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_accepted_cases_read_as_the_contract_says() {
    let accepted = list("accepted", "reads");
    assert!(accepted.len() >= 20);
    for (given, reads) in accepted {
        let at = Instant::parse(&given).unwrap_or_else(|e| panic!("{given:?}: {e}"));
        assert_eq!(at.to_string(), reads, "{given:?}");
        assert_eq!(Instant::parse(&reads), Ok(at), "{reads:?} reads back");
    }
}

#[test]
fn the_refused_cases_are_refused_saying_why() {
    let refused = list("refused", "why");
    assert!(refused.len() >= 20);
    for (given, why) in refused {
        let reason = Instant::parse(&given).expect_err(&given);
        assert!(reason.contains(&why), "{given:?}: {reason}");
    }
}
