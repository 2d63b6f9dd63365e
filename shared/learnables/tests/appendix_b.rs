//! learnables-v1 Appendix B on the pure API: unsettled, taught, settled; pinning; idempotence;
//! history (§10.2, §10.3, §10.4, §11).

use crate::common;

use common::*;
use learnables::{
    get_version, history, show_back, teach, version_id, HistoryKind, Registry, UNSETTLED,
};
use serde_json::json;

#[test]
fn appendix_b_flow() {
    let registry = Registry::builtin();
    let v1 = new_definition(customers_json(), &registry);
    let v1_id = get_version(&v1, 1).expect("version 1").version_id;
    assert_eq!(v1.active_version(), 1);

    // 2. A message arrives from billing@origin.example. No mark matches.
    let before = show_back_now(&v1, billing_message(), &registry);
    assert_eq!(before["customer"]["settled"], json!(false));
    assert_eq!(
        before["customer"]["reads"],
        json!("Still cannot tell whose this is.")
    );
    assert_eq!(before["customer"]["reads"], json!(UNSETTLED));
    assert!(before["customer"].get("winner").is_none());

    // 4-5. Dana teaches; the learnable validates, absorbs, and phrases the audit line.
    let (v2, result) = teach(&v1, &billing_lesson(), via(), at(5), &registry).expect("taught");
    let v2 = v2.expect("learned, so there is a new state");
    assert!(result.learned);
    assert_eq!(
        result.describes,
        "matches 'billing@origin\\.example' in the from"
    );
    assert_eq!(result.definition_version, 2);
    assert_eq!(result.previous_version_id.as_ref(), Some(&v1_id));
    let v2_served = get_version(&v2, 2).expect("version 2");
    assert_eq!(result.version_id.as_ref(), Some(&v2_served.version_id));
    assert_eq!(
        version_id(&v2_served.collections).ok(),
        result.version_id,
        "the versionId is the content address"
    );
    assert_eq!(
        serde_json::to_value(&result).expect("json"),
        json!({
            "learned": true,
            "describes": "matches 'billing@origin\\.example' in the from",
            "definitionVersion": 2,
            "versionId": v2_served.version_id,
            "previousVersionId": v1_id
        })
    );
    assert_eq!(v2.active_version(), 2);
    assert_eq!(v2.revision(), v1.revision() + 1);

    // 6. Show-back displays the effect, not the word "Saved" (§11 example, exactly).
    let after = show_back_now(&v2, billing_message(), &registry);
    assert_eq!(
        after,
        json!({
            "customer": {
                "settled": true,
                "winner": "northgate",
                "reads": "Reads as Northgate Motors Ltd, on billing@origin.example",
                "candidates": [
                    { "name": "northgate", "label": "Northgate Motors Ltd", "score": 0.333,
                      "matched": ["billing@origin\\.example"] },
                    { "name": "alhamra", "label": "Al Hamra Trading", "score": 0.0, "matched": [] }
                ]
            }
        })
    );

    // 7. Pinning: version 1 still serves, and reads, exactly as before (§10.3).
    assert_eq!(get_version(&v2, 1), get_version(&v1, 1));
    let pinned = show_back(&v2, &billing_message(), Some(1), &registry).expect("pinned");
    assert_eq!(pinned, before);

    // §10.2: the same lesson again is not an error, learns nothing, makes no version.
    let (again, again_result) =
        teach(&v2, &billing_lesson(), via(), at(9), &registry).expect("not an error");
    assert!(again.is_none());
    assert!(!again_result.learned);
    assert_eq!(again_result.definition_version, 2);
    assert_eq!(again_result.version_id, result.version_id);
    assert_eq!(again_result.previous_version_id, None);
    assert_eq!(
        again_result.describes,
        "already matches 'billing@origin\\.example' in the from"
    );
    assert_eq!(v2.latest_version(), 2);

    // The history carries the lesson with its author and reason, newest first.
    let h = history(&v2);
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].kind(), HistoryKind::Lesson);
    assert_eq!(h[0].definition_version(), 2);
    assert_eq!(h[0].taught_by().as_str(), DANA);
    assert_eq!(h[0].reason().map(learnables::Reason::as_str), Some(REASON));
    assert_eq!(
        h[0].describes(),
        Some("matches 'billing@origin\\.example' in the from")
    );
    assert_eq!(h[0].previous_version_id(), Some(&v1_id));
    assert_eq!(h[0].at(), at(5));
    assert_eq!(h[1].kind(), HistoryKind::Created);
    let wire = serde_json::to_value(&h[0]).expect("json");
    for field in [
        "kind",
        "definitionVersion",
        "versionId",
        "previousVersionId",
        "taughtBy",
        "via",
        "reason",
        "describes",
        "at",
    ] {
        assert!(
            wire.get(field).is_some(),
            "history entry lacks {field}: {wire}"
        );
    }
    assert_eq!(wire["via"], json!("teacher-console"));
    assert_eq!(wire["at"], json!(at(5).to_string()));
}

#[test]
fn a_lesson_may_create_an_entry_labelled_by_its_name() {
    let registry = Registry::builtin();
    let v1 = new_definition(customers_json(), &registry);
    let l = lesson(
        "customers",
        "gulftrade",
        json!({ "pattern": "gulftrade\\.example" }),
        None,
    );
    let (v2, result) = teach(&v1, &l, via(), at(1), &registry).expect("taught");
    assert!(result.learned);
    let v2 = v2.expect("new state");
    let served = get_version(&v2, 2).expect("v2");
    let entry = served
        .collections
        .get("customers")
        .and_then(|c| c.entry("gulftrade"))
        .expect("entry created");
    assert_eq!(entry.label(), "gulftrade");
    assert_eq!(
        entry.value(),
        &json!({ "marks": [{ "pattern": "gulftrade\\.example", "where": "from" }] })
    );
    let read = show_back_now(&v2, json!({ "from": "ops@GULFTRADE.example" }), &registry);
    assert_eq!(read["customer"]["winner"], json!("gulftrade"));
    assert_eq!(
        read["customer"]["reads"],
        json!("Reads as gulftrade, on GULFTRADE.example")
    );
}

#[test]
fn show_back_reports_every_collection_by_its_entry_noun() {
    let registry = Registry::builtin();
    let mut both = customers_json();
    if let (Some(all), Some(fields)) = (both.as_object_mut(), fields_json().get("fields")) {
        all.insert("fields".into(), fields.clone());
    }
    let state = new_definition(both, &registry);
    let report = show_back_now(
        &state,
        json!({ "from": "x@alhamra.example", "header": "invoice no" }),
        &registry,
    );
    assert_eq!(report["customer"]["winner"], json!("alhamra"));
    assert_eq!(report["field"]["winner"], json!("invoice_number"));
    assert_eq!(
        report["field"]["reads"],
        json!("Reads as Invoice number, on the column headed 'invoice no'")
    );
}

#[test]
fn show_back_refuses_what_it_cannot_read() {
    let registry = Registry::builtin();
    let state = new_definition(customers_json(), &registry);
    let not_object = show_back(&state, &json!("hello"), None, &registry);
    assert!(
        matches!(not_object, Err(learnables::AuthorityError::Invalid { field, .. }) if field == "input")
    );
    let wrong_type = show_back(&state, &json!({ "from": ["a"] }), None, &registry);
    assert!(matches!(
        wrong_type,
        Err(learnables::AuthorityError::Invalid { field, reason }) if field == "input" && reason.contains("\"from\" must be text")
    ));
    let missing = show_back(&state, &billing_message(), Some(7), &registry);
    assert!(matches!(
        missing,
        Err(learnables::AuthorityError::NotFound { .. })
    ));
}
