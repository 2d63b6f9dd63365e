//! Every captured fixture parses as its type and round-trips.

use super::*;

#[test]
fn every_wire_fixture_parses_as_its_type() {
    let mut names: Vec<String> = fs::read_dir(WIRE_DIR)
        .expect("fixtures dir")
        .map(|e| {
            e.expect("dir entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    assert!(
        names.len() >= 60,
        "only {} fixtures found in {WIRE_DIR}",
        names.len()
    );

    let mut kinds: BTreeMap<&'static str, usize> = BTreeMap::new();
    let mut failures = Vec::new();
    for name in &names {
        match parse_fixture(name) {
            Ok(kind) => *kinds.entry(kind).or_default() += 1,
            Err(e) => failures.push(e),
        }
    }
    assert!(
        failures.is_empty(),
        "fixture failures:\n{}",
        failures.join("\n")
    );
    assert_eq!(kinds.values().sum::<usize>(), names.len());
    assert_eq!(kinds.get("AgentCard"), Some(&2));
    assert_eq!(kinds.get("push body"), Some(&5));
    assert_eq!(kinds.get("sse events"), Some(&2));
    assert_eq!(kinds.get("JSON-RPC error"), Some(&10), "{kinds:?}");
    assert_eq!(kinds.get("SendMessageResponse"), Some(&7));
    assert_eq!(kinds.get("SendMessageRequest"), Some(&9));
    assert_eq!(kinds.get("invalid-params"), Some(&1));
    assert_eq!(kinds.get("v0.3 Task"), Some(&1));
}
