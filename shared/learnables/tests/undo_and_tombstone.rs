//! §10.3 undo by activation; §14 tombstones; contract "Rules" on both.

use crate::common;

use common::*;
use learnables::{
    activate, active, get_version, history, show_back, teach, tombstone, AuthorityError,
    DefinitionState, HistoryKind, Reason, Registry,
};
use serde_json::json;

fn taught() -> (Registry, DefinitionState, DefinitionState) {
    let registry = Registry::builtin();
    let v1 = new_definition(customers_json(), &registry);
    let (v2, _) = teach(&v1, &billing_lesson(), via(), at(5), &registry).expect("taught");
    (registry, v1, v2.expect("learned"))
}

fn reason(text: &str) -> Option<Reason> {
    Some(Reason::parse(text).expect("reason"))
}

#[test]
fn activating_version_1_restores_the_earlier_reading() {
    let (registry, v1, v2) = taught();
    let undone = activate(&v2, 1, dana(), via(), reason("wrong customer"), at(10))
        .expect("activated")
        .expect("a change");
    assert_eq!(undone.active_version(), 1);
    assert_eq!(undone.latest_version(), 2, "activation creates no version");
    assert_eq!(active(&undone), get_version(&v1, 1));
    let read = show_back_now(&undone, billing_message(), &registry);
    assert_eq!(read["customer"]["settled"], json!(false));
    assert_eq!(
        read["customer"]["reads"],
        json!("Still cannot tell whose this is.")
    );

    let h = history(&undone);
    assert_eq!(h[0].kind(), HistoryKind::Activation);
    assert_eq!(h[0].definition_version(), 1);
    assert_eq!(h[0].taught_by().as_str(), DANA);
    assert_eq!(h[0].reason().map(Reason::as_str), Some("wrong customer"));
    assert_eq!(
        h[0].version_id(),
        &get_version(&v2, 1).expect("v1").version_id
    );
    assert_eq!(
        h[0].previous_version_id(),
        Some(&get_version(&v2, 2).expect("v2").version_id)
    );
    assert_eq!(h.len(), 3);

    // Activating the active version records nothing.
    assert_eq!(activate(&undone, 1, dana(), via(), None, at(11)), Ok(None));
    // Redo works the same way.
    let redone = activate(&undone, 2, dana(), via(), None, at(12))
        .expect("ok")
        .expect("a change");
    assert_eq!(active(&redone), get_version(&v2, 2));
    // A missing version cannot be activated.
    assert!(matches!(
        activate(&undone, 9, dana(), via(), None, at(12)),
        Err(AuthorityError::NotFound { .. })
    ));
}

#[test]
fn a_lesson_after_undo_builds_on_the_active_version() {
    let (registry, _, v2) = taught();
    let undone = activate(&v2, 1, dana(), via(), None, at(10))
        .expect("ok")
        .expect("change");
    let l = mark_lesson("alhamra", "hamra", "any");
    let (v3, result) = teach(&undone, &l, via(), at(11), &registry).expect("taught");
    let v3 = v3.expect("learned");
    assert_eq!(result.definition_version, 3, "max + 1, not active + 1");
    assert_eq!(
        result.previous_version_id,
        Some(get_version(&v3, 1).expect("v1").version_id),
        "built from the active version"
    );
    let content = get_version(&v3, 3).expect("v3").collections;
    let northgate = content
        .get("customers")
        .and_then(|c| c.entry("northgate"))
        .map(|e| e.value().clone());
    assert_eq!(
        northgate,
        get_version(&v3, 1)
            .expect("v1")
            .collections
            .get("customers")
            .and_then(|c| c.entry("northgate"))
            .map(|e| e.value().clone()),
        "the undone lesson is not carried into version 3"
    );
}

#[test]
fn tombstoned_versions_are_gone_and_their_history_redacted() {
    let (registry, _, v2) = taught();
    let undone = activate(&v2, 1, dana(), via(), reason("undo"), at(10))
        .expect("ok")
        .expect("change");
    let erased = tombstone(
        &undone,
        2,
        dana(),
        via(),
        reason("holds a personal address"),
        at(20),
    )
    .expect("tombstoned")
    .expect("a change");

    assert!(matches!(
        get_version(&erased, 2),
        Err(AuthorityError::Gone { .. })
    ));
    assert_eq!(
        get_version(&erased, 2).map_err(|e| e.http_status()),
        Err(410)
    );
    assert!(matches!(
        show_back(&erased, &billing_message(), Some(2), &registry),
        Err(AuthorityError::Gone { .. })
    ));
    assert!(
        matches!(
            activate(&erased, 2, dana(), via(), None, at(21)),
            Err(AuthorityError::Gone { .. })
        ),
        "a tombstoned version cannot be activated"
    );
    // The content is erased from the state itself, not merely hidden.
    let stored = erased.version(2).expect("still listed");
    assert!(stored.collections().is_none());
    assert!(stored.describes().is_none());
    assert!(stored.reason().is_none());
    assert_eq!(
        stored.tombstoned().map(|t| t.taught_by.as_str()),
        Some(DANA)
    );
    let as_json = serde_json::to_string(&erased).expect("json");
    assert!(!as_json.contains("billing@origin"), "{as_json}");
    assert!(
        !as_json.contains(REASON),
        "the lesson's reason is redacted too"
    );

    let h = history(&erased);
    assert_eq!(h[0].kind(), HistoryKind::Tombstone);
    assert_eq!(
        h[0].reason().map(Reason::as_str),
        Some("holds a personal address")
    );
    let lesson_entry = h
        .iter()
        .find(|e| e.kind() == HistoryKind::Lesson)
        .expect("the lesson is still in history");
    assert_eq!(lesson_entry.definition_version(), 2);
    assert_eq!(lesson_entry.taught_by().as_str(), DANA);
    assert_eq!(lesson_entry.via().as_str(), "teacher-console");
    assert_eq!(lesson_entry.at(), at(5));
    assert_eq!(lesson_entry.describes(), None);
    assert_eq!(lesson_entry.reason(), None);
    assert!(lesson_entry.is_redacted());
    let wire = serde_json::to_value(lesson_entry).expect("json");
    assert_eq!(wire["describes"], json!(null));
    assert_eq!(wire["reason"], json!(null));
    assert_eq!(wire["redacted"], json!(true));
    // Entries about other versions are untouched.
    let undo_entry = h
        .iter()
        .find(|e| e.kind() == HistoryKind::Activation)
        .expect("activation");
    assert_eq!(undo_entry.reason().map(Reason::as_str), Some("undo"));

    // Tombstoning again changes nothing; the active version still serves.
    assert_eq!(tombstone(&erased, 2, dana(), via(), None, at(22)), Ok(None));
    assert_eq!(active(&erased).map(|v| v.definition_version), Ok(1));
    assert!(matches!(
        tombstone(&erased, 9, dana(), via(), None, at(22)),
        Err(AuthorityError::NotFound { .. })
    ));
    assert!(matches!(
        get_version(&erased, 9),
        Err(AuthorityError::NotFound { .. })
    ));
}

#[test]
fn tombstoning_the_active_version_is_a_conflict() {
    let (_, _, v2) = taught();
    let result = tombstone(&v2, 2, dana(), via(), None, at(20));
    assert!(matches!(&result, Err(AuthorityError::Conflict { .. })));
    assert_eq!(result.map_err(|e| e.http_status()), Err(409));
}

#[test]
fn state_round_trips_through_json_and_tampering_is_refused() {
    let (_, _, v2) = taught();
    let erased = activate(&v2, 1, dana(), via(), None, at(10))
        .ok()
        .flatten()
        .and_then(|s| tombstone(&s, 2, dana(), via(), None, at(11)).ok().flatten())
        .expect("undone and erased");
    let text = serde_json::to_string(&erased).expect("json");
    let back: DefinitionState = serde_json::from_str(&text).expect("reads back");
    assert_eq!(back, erased);

    let mut tampered: serde_json::Value = serde_json::from_str(&text).expect("json");
    tampered["active"] = json!(2);
    assert!(
        serde_json::from_value::<DefinitionState>(tampered).is_err(),
        "active is tombstoned"
    );
    let mut renumbered: serde_json::Value = serde_json::from_str(&text).expect("json");
    renumbered["versions"][1]["definitionVersion"] = json!(5);
    assert!(serde_json::from_value::<DefinitionState>(renumbered).is_err());
}
