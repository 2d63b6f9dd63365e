//! §13.1 over-broad values and §8 suggestions no wider than their evidence: the reference
//! implementation's `PA-2026-0901` → `PA-2026` defect.

use crate::common;

use common::*;
use learnables::{
    check, show_back, suggest_pattern_for_literal, suggest_pattern_for_reference, teach, Learnable,
    Marks, Registry, TeachBlock, EXTENSION_URI,
};
use serde_json::{json, Value};

fn corpus() -> Vec<Value> {
    ["PA-2026-0901", "PA-2026-0902", "PA-2025-0001"]
        .iter()
        .map(|r| json!({ "from": "ops@forwarder.example", "subject": format!("Pre-alert {r}") }))
        .collect()
}

#[test]
fn the_over_broad_pa_2026_lesson_is_caught_before_it_is_taught() {
    let registry = Registry::builtin();
    let state = new_definition(customers_json(), &registry);
    let before = state.clone();
    let broad = mark_lesson("alhamra", "PA-2026", "subject");
    let report = check(&state, &broad, &corpus(), &registry).expect("checked");
    assert_eq!(report.matches, 2);
    assert_eq!(
        serde_json::to_value(&report).expect("json"),
        json!({ "matches": 2, "changes": [
            { "input": 0, "from": null, "to": "alhamra" },
            { "input": 1, "from": null, "to": "alhamra" }
        ] })
    );
    assert_eq!(state, before, "check writes nothing");

    // The suggestion drawn from one message's reference reaches exactly that message.
    let exact = suggest_pattern_for_reference("PA-2026-0901").expect("a pattern");
    let narrow = mark_lesson("alhamra", &exact, "subject");
    let report = check(&state, &narrow, &corpus(), &registry).expect("checked");
    assert_eq!(report.matches, 1);
    assert_eq!(report.changes.len(), 1);
    assert_eq!(report.changes[0].input, 0);
    assert_eq!(report.changes[0].to.as_deref(), Some("alhamra"));
}

#[test]
fn check_reports_readings_that_would_be_lost() {
    let registry = Registry::builtin();
    let state = new_definition(customers_json(), &registry);
    // Today: alhamra 1 of 1 = 1.0, northgate 1 of 2 = 0.5 -> alhamra, by 0.5.
    let message = json!({ "from": "desk@alhamra.example", "subject": "NGM-123456" });
    let now = show_back(&state, &message, None, &registry).expect("show-back");
    assert_eq!(now["customer"]["winner"], json!("alhamra"));
    // A second alhamra mark that this message lacks: alhamra 0.5 vs northgate 0.5 -> unsettled.
    let l = mark_lesson("alhamra", "hamra-ref-\\d+", "body");
    let report = check(&state, &l, std::slice::from_ref(&message), &registry).expect("checked");
    assert_eq!(
        serde_json::to_value(&report).expect("json"),
        json!({ "matches": 0, "changes": [{ "input": 0, "from": "alhamra", "to": null }] })
    );

    let bad_corpus = check(&state, &l, &[json!("text")], &registry);
    assert!(
        matches!(bad_corpus, Err(learnables::AuthorityError::Invalid { field, .. }) if field == "corpus[0]")
    );
    let refused = check(
        &state,
        &lesson("customers", "alhamra", json!({ "pattern": "(" }), None),
        std::slice::from_ref(&message),
        &registry,
    );
    assert!(matches!(
        refused,
        Err(learnables::AuthorityError::Refused { .. })
    ));
}

#[test]
fn the_reference_suggestion_works_with_the_marks_learnable() {
    let registry = Registry::builtin();
    let state = new_definition(customers_json(), &registry);
    let pattern = suggest_pattern_for_reference("PA-2026-0901").expect("a pattern");
    let l = mark_lesson("alhamra", &pattern, "subject");
    let (next, result) = teach(&state, &l, via(), at(1), &registry).expect("accepted by marks");
    assert!(result.learned);
    let next = next.expect("learned");
    let read = |subject: &str| show_back_now(&next, json!({ "subject": subject }), &registry);
    let hit = read("Pre-alert PA-2026-0901 (2 pallets)");
    assert_eq!(hit["customer"]["winner"], json!("alhamra"));
    assert_eq!(
        hit["customer"]["reads"],
        json!("Reads as Al Hamra Trading, on PA-2026-0901")
    );
    for other in [
        "Pre-alert PA-2026-0902",
        "Pre-alert PA-2026-09011",
        "Pre-alert PA-2026",
        "PA-2026-0901-2",
    ] {
        assert_eq!(read(other)["customer"]["settled"], json!(false), "{other}");
    }
    // Case does not matter to marks.
    assert_eq!(read("pa-2026-0901")["customer"]["winner"], json!("alhamra"));
}

#[test]
fn a_teach_block_for_appendix_b() {
    let suggested = suggest_pattern_for_literal("billing@origin.example").expect("pattern");
    assert_eq!(suggested, "billing@origin\\.example");
    let block = TeachBlock::builder("customers", Marks::new().lesson_fields())
        .entries(["northgate", "alhamra", "gulftrade"])
        .suggested(json!({ "pattern": suggested, "where": "from" }))
        .suggestion_label("the address this message came from")
        .build()
        .expect("keys are lesson fields");
    let meta = block.to_metadata();
    let teach_block = &meta[EXTENSION_URI]["teach"];
    assert_eq!(
        teach_block["entries"],
        json!(["northgate", "alhamra", "gulftrade"])
    );
    assert_eq!(
        teach_block["suggested"],
        json!({ "pattern": "billing@origin\\.example", "where": "from" })
    );
    assert_eq!(teach_block["lessonFields"][1]["default"], json!("from"));
}
