//! Content addressing (contract "Rules": RFC 8785 JCS), descriptors (§6.2) and the §10.2
//! idempotence property.

use crate::common;

use common::*;
use learnables::{descriptors, teach, version_id, Collections, Registry};
use proptest::prelude::*;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

#[test]
fn version_id_is_the_sha256_of_the_jcs_form() {
    let c = Collections::from_json(&json!({
        "c": { "teaches": "t", "learnable": "marks", "entry": "e",
               "entries": { "n": { "value": { "z": 1, "a": [1.0, "é"] }, "label": "N" } } }
    }))
    .expect("structure");
    let canonical = r#"{"c":{"entries":{"n":{"label":"N","value":{"a":[1,"é"],"z":1}}},"entry":"e","learnable":"marks","teaches":"t"}}"#;
    let expected = format!("sha256:{:x}", Sha256::digest(canonical.as_bytes()));
    assert_eq!(version_id(&c).expect("id").as_str(), expected);
}

#[test]
fn version_id_ignores_key_order() {
    let a = Collections::from_json(&json!({
        "b": { "learnable": "marks", "entry": "x", "teaches": "t", "entries": {} },
        "a": { "learnable": "marks", "entry": "y", "teaches": "t",
               "entries": { "n": { "label": "N", "value": { "p": 1, "q": { "s": 2, "r": 3 } } } } }
    }))
    .expect("a");
    let b = Collections::from_json(&json!({
        "a": { "entries": { "n": { "value": { "q": { "r": 3, "s": 2 }, "p": 1 }, "label": "N" } },
               "teaches": "t", "entry": "y", "learnable": "marks" },
        "b": { "teaches": "t", "entries": {}, "learnable": "marks", "entry": "x" }
    }))
    .expect("b");
    assert_eq!(version_id(&a).expect("a"), version_id(&b).expect("b"));
    let changed = Collections::from_json(&json!({
        "b": { "learnable": "marks", "entry": "x", "teaches": "t", "entries": {} },
        "a": { "learnable": "marks", "entry": "y", "teaches": "t",
               "entries": { "n": { "label": "N", "value": { "p": 2, "q": { "s": 2, "r": 3 } } } } }
    }))
    .expect("changed");
    assert_ne!(
        version_id(&a).expect("a"),
        version_id(&changed).expect("changed")
    );
}

#[test]
fn descriptors_carry_the_collection_and_the_learnable() {
    let registry = Registry::builtin();
    let state = new_definition(customers_json(), &registry);
    let d = descriptors(&state, &registry).expect("descriptors");
    let wire = serde_json::to_value(&d).expect("json");
    assert_eq!(wire[0]["collection"], json!("customers"));
    assert_eq!(wire[0]["entry"], json!("customer"));
    assert_eq!(
        wire[0]["skills"],
        json!(["triage_inbound", "recheck_message"])
    );
    assert_eq!(
        wire[0]["teaches"],
        json!("which customer a message belongs to")
    );
    assert_eq!(wire[0]["decidedBy"], json!("rules"));
    assert!(wire[0]["how"]
        .as_str()
        .is_some_and(|h| h.contains("identification margin")));
    // §6.1's lesson fields, exactly.
    assert_eq!(
        wire[0]["lessonFields"],
        json!([
            { "name": "pattern", "label": "Text that gives it away", "kind": "text",
              "help": "An address, a reference, a phrase. Matched without regard to case; regular expressions work if you want one." },
            { "name": "where", "label": "Where to look for it", "kind": "choice",
              "choices": ["from", "subject", "body", "attachments", "any"], "default": "from",
              "help": "Narrower is safer. 'any' matches the whole message." }
        ])
    );
}

fn marks_lesson() -> impl Strategy<Value = Value> {
    (
        "[a-z0-9@.+_-]{1,24}",
        prop::option::of(prop::sample::select(vec![
            "from",
            "subject",
            "body",
            "attachments",
            "any",
        ])),
    )
        .prop_map(|(text, place)| {
            let pattern = regex::escape(&text);
            match place {
                Some(w) => json!({ "pattern": pattern, "where": w }),
                None => json!({ "pattern": pattern }),
            }
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// §10.2: teaching the same lesson twice never creates a second version.
    #[test]
    fn teaching_twice_learns_once(
        value in marks_lesson(),
        entry in prop::sample::select(vec!["northgate", "alhamra", "newcomer"]),
        header in "[A-Za-z][A-Za-z .#]{0,20}",
        field in prop::sample::select(vec!["invoice_number", "amount", "weight"]),
    ) {
        let registry = Registry::builtin();
        let mut both = customers_json();
        if let (Some(all), Some(fields)) = (both.as_object_mut(), fields_json().get("fields")) {
            all.insert("fields".into(), fields.clone());
        }
        let state = new_definition(both, &registry);
        for l in [
            lesson("customers", entry, value, None),
            lesson("fields", field, json!({ "header": header }), None),
        ] {
            let (first, r1) = teach(&state, &l, via(), at(1), &registry).expect("accepted");
            let once = first.unwrap_or_else(|| state.clone());
            let (second, r2) = teach(&once, &l, via(), at(2), &registry).expect("accepted");
            prop_assert!(second.is_none());
            prop_assert!(!r2.learned);
            prop_assert_eq!(r2.definition_version, r1.definition_version);
            prop_assert_eq!(r2.version_id, r1.version_id);
            prop_assert!(once.latest_version() <= 2);
        }
    }
}
