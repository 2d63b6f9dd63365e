//! The published JSON Schemas (docs/schemas/) are the ones the Rust types generate, and the route
//! serves each of them. `UPDATE_SCHEMAS=1 cargo test -p watcher-http --test it schemas::` rewrites the
//! files after a type changes.

use std::path::PathBuf;

use serde_json::Value;

fn generated() -> Vec<(&'static str, Value)> {
    let mut all = watcher_core::schema::schemas();
    all.extend(learnables::schema::schemas());
    all
}

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas")
}

#[test]
fn schemas_are_current() {
    let update = std::env::var_os("UPDATE_SCHEMAS").is_some_and(|v| v == "1");
    let mut stale = Vec::new();
    for (name, schema) in generated() {
        let text = serde_json::to_string_pretty(&schema).expect("a schema serialises") + "\n";
        let path = dir().join(format!("{name}.json"));
        if update {
            std::fs::write(&path, &text).expect("write the schema");
            continue;
        }
        let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
        if on_disk != text {
            stale.push(name);
        }
    }
    assert!(
        stale.is_empty(),
        "docs/schemas/ is stale for {stale:?}: run `UPDATE_SCHEMAS=1 cargo test -p watcher-http --test it schemas::`"
    );
}

#[test]
fn the_served_list_is_the_generated_list() {
    let served: Vec<&str> = watcher_http::schemas::SCHEMAS
        .iter()
        .map(|(n, _)| *n)
        .collect();
    let generated: Vec<&str> = generated().iter().map(|(n, _)| *n).collect();
    assert_eq!(served, generated);
    let listed: Vec<String> = std::fs::read_dir(dir())
        .expect("docs/schemas exists")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(listed.len(), generated.len(), "{listed:?}");
}

/// The generated schema `name`, as JSON.
fn schema(name: &str) -> Value {
    serde_json::from_str(watcher_http::schemas::schema(name).unwrap()).unwrap()
}

/// The members `schema` requires.
fn required_of(schema: &Value) -> Vec<&str> {
    schema["required"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

/// Asserts that `schema` requires each of the space-separated `members`.
#[track_caller]
fn assert_requires(schema: &Value, members: &str) {
    let required = required_of(schema);
    for f in members.split(' ') {
        assert!(required.contains(&f), "{f} in {required:?}");
    }
}

#[test]
fn the_spec_examples_satisfy_the_required_fields() {
    // The schemas name the spec's required fields (expectations-v1 §8, §10.1 table).
    let expectation = schema("Expectation");
    assert_requires(
        &expectation,
        "expectationId kind subject expects satisfiedBy dueAt basis",
    );
    assert!(!required_of(&expectation).contains(&"grace"));
    let lapse = schema("Lapse");
    assert_requires(
        &lapse,
        "expectationId kind subject expects lapse projectedDueAt dueAt lapsedAt lineage",
    );
    assert!(!required_of(&lapse).contains(&"lastFactAt"));
    let kinds: Vec<&str> = lapse["$defs"]["LapseKind"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|v| v["const"].as_str())
        .collect();
    assert_eq!(kinds, ["overdue", "skipped", "stalled"]);
}
