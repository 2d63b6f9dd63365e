//! Lessons whose end is noticed (expectations-v1 §16): `expiresAt` recorded on the version and
//! in the history, one open review per entry, closed by a later lesson or an activation that
//! changes the entry, and what each step opened and closed.

use learnables::{
    activate, review_changes, teach, DefinitionState, Lesson, LessonDto, Registry, ReviewChanges,
};
use serde_json::json;

use crate::common::*;

/// northgate's review, as its subject id names it, for the lesson that made `version`.
fn northgate(version: u64) -> String {
    format!("prealert-triage/customers/northgate@{version}")
}

/// A lesson into `entry` of customers matching `pattern` in the from-line, expiring at
/// `expires` (RFC 3339) when given.
fn lesson_into(entry: &str, pattern: &str, expires: Option<&str>) -> Lesson {
    Lesson::try_from(LessonDto {
        collection: "customers".into(),
        entry: entry.into(),
        value: json!({ "pattern": pattern, "where": "from" }),
        taught_by: DANA.into(),
        reason: Some("until the new desk takes over".into()),
        expires_at: expires.map(str::to_owned),
    })
    .expect("a well-formed lesson")
}

/// `state` after `lesson`, taught at minute `minute`: it changes the entry.
fn taught(state: &DefinitionState, lesson: &Lesson, minute: i64) -> DefinitionState {
    let registry = Registry::builtin();
    teach(state, lesson, via(), at(minute), &registry)
        .expect("taught")
        .0
        .expect("learned: the entry changed")
}

/// Version 2: the customers definition with northgate's billing desk taught, expiring
/// 2027-03-01.
fn with_northgate_expiring() -> (DefinitionState, DefinitionState) {
    let v1 = new_definition(customers_json(), &Registry::builtin());
    let first = lesson_into(
        "northgate",
        "billing@origin\\.example",
        Some("2027-03-01T00:00:00Z"),
    );
    let v2 = taught(&v1, &first, 1);
    (v1, v2)
}

/// The subject ids of what `c` opened and closed.
fn opened_and_closed(c: &ReviewChanges) -> (Vec<String>, Vec<String>) {
    let id = learnables::DefinitionId::parse("prealert-triage").expect("id");
    (
        c.opened.iter().map(|r| r.subject_id(&id)).collect(),
        c.closed.iter().map(|r| r.subject_id(&id)).collect(),
    )
}

#[test]
fn a_lesson_with_an_expiry_records_it_and_opens_one_review_of_its_entry() {
    let (v1, v2) = with_northgate_expiring();
    let expires = instants::Instant::parse("2027-03-01T00:00:00Z").expect("instant");
    assert_eq!(v2.versions()[1].expires_at(), Some(expires));
    let history = serde_json::to_value(&learnables::history(&v2)[0]).expect("json");
    assert_eq!(history["expiresAt"], "2027-03-01T00:00:00Z");
    let changes = review_changes(&v1, &v2);
    assert_eq!(opened_and_closed(&changes), (vec![northgate(2)], vec![]));
    assert_eq!(changes.opened[0].expires_at, expires);
    assert_eq!(changes.opened[0].taught_by.as_str(), DANA);
    // The stored form keeps it: read back, the same open review.
    let back: DefinitionState =
        serde_json::from_value(serde_json::to_value(&v2).expect("json")).expect("read back");
    assert_eq!(back.reviews(), v2.reviews());
}

#[test]
fn a_later_lesson_into_the_entry_closes_its_review_and_another_entrys_lesson_does_not() {
    let (_, v2) = with_northgate_expiring();
    // Another entry: northgate's review stays open.
    let v3 = taught(
        &v2,
        &lesson_into("alhamra", "hamra-desk\\.example", None),
        2,
    );
    assert_eq!(review_changes(&v2, &v3), ReviewChanges::default());
    // The same entry, without an expiry: closed, nothing opened.
    let v4 = taught(
        &v3,
        &lesson_into("northgate", "desk@origin\\.example", None),
        3,
    );
    assert_eq!(
        opened_and_closed(&review_changes(&v3, &v4)),
        (vec![], vec![northgate(2)])
    );
    assert!(v4.reviews().is_empty());
    // The same entry with a new expiry: the old closed, the new opened.
    let renewed = lesson_into(
        "northgate",
        "ops@origin\\.example",
        Some("2027-06-01T00:00:00Z"),
    );
    let v5 = taught(&v2, &renewed, 3);
    assert_eq!(
        opened_and_closed(&review_changes(&v2, &v5)),
        (vec![northgate(3)], vec![northgate(2)])
    );
}

#[test]
fn a_lesson_that_changes_nothing_changes_no_review() {
    let (_, v2) = with_northgate_expiring();
    let same = lesson_into(
        "northgate",
        "billing@origin\\.example",
        Some("2027-09-01T00:00:00Z"),
    );
    let (next, result) = teach(&v2, &same, via(), at(2), &Registry::builtin()).expect("taught");
    assert!(!result.learned, "§10.2: the entry already holds it");
    assert!(next.is_none(), "no version, and so no review, is recorded");
}

#[test]
fn an_expiry_not_later_than_the_lesson_is_refused_naming_the_field() {
    let v1 = new_definition(customers_json(), &Registry::builtin());
    let past = lesson_into(
        "northgate",
        "billing@origin\\.example",
        Some("2026-01-01T00:00:00Z"),
    );
    let err = teach(&v1, &past, via(), at(1), &Registry::builtin()).expect_err("refused");
    assert!(
        matches!(&err, learnables::AuthorityError::Invalid { field, .. } if field == "expiresAt"),
        "{err:?}"
    );
    let malformed = Lesson::try_from(LessonDto {
        collection: "customers".into(),
        entry: "northgate".into(),
        value: json!({ "pattern": "x" }),
        taught_by: DANA.into(),
        reason: None,
        expires_at: Some("next spring".into()),
    })
    .expect_err("not an instant");
    assert!(
        matches!(&malformed, learnables::AuthorityError::Invalid { field, reason } if field == "expiresAt" && reason.contains("next spring")),
        "{malformed:?}"
    );
}

#[test]
fn an_activation_that_changes_the_entry_closes_its_review_one_that_does_not_keeps_it() {
    let (_, v2) = with_northgate_expiring();
    let v3 = taught(
        &v2,
        &lesson_into("alhamra", "hamra-desk\\.example", None),
        2,
    );
    // Back to version 2: alhamra changes, northgate keeps its value; its review stays.
    let to_2 = activate(&v3, 2, dana(), via(), None, at(3))
        .expect("activated")
        .expect("changed");
    assert_eq!(review_changes(&v3, &to_2), ReviewChanges::default());
    // Back to version 1: northgate's lesson undone, its review closed.
    let to_1 = activate(&to_2, 1, dana(), via(), None, at(4))
        .expect("activated")
        .expect("changed");
    assert_eq!(
        opened_and_closed(&review_changes(&to_2, &to_1)),
        (vec![], vec![northgate(2)])
    );
}

/// An expiring value brought back into force by an undo is reviewed again (docs/interpretation.md
/// "Lessons whose end is noticed"): northgate's lesson of version 2 expires; version 3 replaces
/// it without an expiry (closing the review); undoing version 3 puts version 2's value back in
/// force, with its expiry, as a new review named by the activation's history line; redoing
/// version 3 closes it again, and a tombstone of version 2 changes nothing for a version built
/// from it.
#[test]
fn an_expiring_value_back_in_force_is_reviewed_again() {
    let (_, v2) = with_northgate_expiring();
    let v3 = taught(
        &v2,
        &lesson_into("northgate", "desk@origin\\.example", None),
        2,
    );
    assert!(v3.reviews().is_empty());
    let undone = activate(&v3, 2, dana(), via(), None, at(3))
        .expect("activated")
        .expect("changed");
    // History: created, lesson, lesson, activation: line 4.
    let again = format!("{}~4", northgate(2));
    assert_eq!(
        opened_and_closed(&review_changes(&v3, &undone)),
        (vec![again.clone()], vec![])
    );
    assert_eq!(
        undone
            .reviews()
            .values()
            .next()
            .map(|r| r.expires_at.to_string()),
        Some("2027-03-01T00:00:00Z".to_owned()),
        "due at the lesson's own expiry"
    );
    let redone = activate(&undone, 3, dana(), via(), None, at(4))
        .expect("activated")
        .expect("changed");
    assert_eq!(
        opened_and_closed(&review_changes(&undone, &redone)),
        (vec![], vec![again])
    );
    // Version 4 built on version 2 (another entry): northgate's value, and its review, live on
    // when version 2 is tombstoned.
    let back = activate(&redone, 2, dana(), via(), None, at(5))
        .expect("activated")
        .expect("changed");
    let v4 = taught(
        &back,
        &lesson_into("alhamra", "hamra-desk\\.example", None),
        6,
    );
    let gone = learnables::tombstone(&v4, 2, dana(), via(), None, at(7))
        .expect("tombstoned")
        .expect("changed");
    assert_eq!(review_changes(&v4, &gone), ReviewChanges::default());
    assert_eq!(gone.reviews().len(), 1);
    let read_back: DefinitionState =
        serde_json::from_value(serde_json::to_value(&gone).expect("json")).expect("read back");
    assert_eq!(
        read_back, gone,
        "the stored form keeps every version's expiring values"
    );
}

/// A state stored before versions kept their expiring values reads with its open reviews as the
/// active version's, so the next step does not close them.
#[test]
fn a_state_stored_before_expiring_values_were_kept_keeps_its_reviews() {
    let (_, v2) = with_northgate_expiring();
    let mut stored = serde_json::to_value(&v2).expect("json");
    for v in stored["versions"].as_array_mut().expect("versions") {
        v.as_object_mut().expect("a version").remove("expiring");
    }
    let old: DefinitionState = serde_json::from_value(stored).expect("read back");
    let v3 = taught(
        &old,
        &lesson_into("alhamra", "hamra-desk\\.example", None),
        2,
    );
    assert_eq!(review_changes(&old, &v3), ReviewChanges::default());
    assert_eq!(v3.reviews(), v2.reviews());
}
