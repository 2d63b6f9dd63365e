//! Lessons whose end is noticed (expectations-v1 §16): `expiresAt` recorded on the version and
//! in the history, one open review per entry, closed by a later lesson or an activation that
//! changes the entry, and what each step opened and closed.

use learnables::{activate, review_changes, teach, Lesson, LessonDto, Registry, ReviewChanges};
use serde_json::json;

use crate::common::*;

fn expiring(collection: &str, entry: &str, pattern: &str, expires: &str) -> Lesson {
    Lesson::try_from(LessonDto {
        collection: collection.into(),
        entry: entry.into(),
        value: json!({ "pattern": pattern, "where": "from" }),
        taught_by: DANA.into(),
        reason: Some("until the new desk takes over".into()),
        expires_at: Some(expires.into()),
    })
    .expect("a well-formed lesson")
}

fn opened_and_closed(c: &ReviewChanges) -> (Vec<String>, Vec<String>) {
    let id = learnables::DefinitionId::parse("prealert-triage").expect("id");
    (
        c.opened.iter().map(|r| r.subject_id(&id)).collect(),
        c.closed.iter().map(|r| r.subject_id(&id)).collect(),
    )
}

#[test]
fn a_lesson_with_an_expiry_records_it_and_opens_one_review_of_its_entry() {
    let registry = Registry::builtin();
    let v1 = new_definition(customers_json(), &registry);
    let lesson = expiring(
        "customers",
        "northgate",
        "billing@origin\\.example",
        "2027-03-01T00:00:00Z",
    );
    let (v2, result) = teach(&v1, &lesson, via(), at(1), &registry).expect("taught");
    let v2 = v2.expect("learned");
    assert_eq!(result.definition_version, 2);
    let expires: jiff::Timestamp = "2027-03-01T00:00:00Z".parse().expect("instant");
    assert_eq!(v2.versions()[1].expires_at(), Some(expires));
    let history = serde_json::to_value(&learnables::history(&v2)[0]).expect("json");
    assert_eq!(history["expiresAt"], "2027-03-01T00:00:00Z");
    let changes = review_changes(&v1, &v2);
    assert_eq!(
        opened_and_closed(&changes),
        (
            vec!["prealert-triage/customers/northgate@2".to_owned()],
            vec![]
        )
    );
    assert_eq!(changes.opened[0].expires_at, expires);
    assert_eq!(changes.opened[0].taught_by.as_str(), DANA);
    // The stored form keeps it: read back, the same open review.
    let back: learnables::DefinitionState =
        serde_json::from_value(serde_json::to_value(&v2).expect("json")).expect("read back");
    assert_eq!(back.reviews(), v2.reviews());
}

#[test]
fn a_later_lesson_into_the_entry_closes_its_review_and_another_entrys_lesson_does_not() {
    let registry = Registry::builtin();
    let v1 = new_definition(customers_json(), &registry);
    let first = expiring(
        "customers",
        "northgate",
        "billing@origin\\.example",
        "2027-03-01T00:00:00Z",
    );
    let v2 = teach(&v1, &first, via(), at(1), &registry)
        .expect("taught")
        .0
        .expect("learned");
    // Another entry: northgate's review stays open.
    let other = lesson(
        "customers",
        "alhamra",
        json!({ "pattern": "hamra-desk\\.example" }),
        None,
    );
    let v3 = teach(&v2, &other, via(), at(2), &registry)
        .expect("taught")
        .0
        .expect("learned");
    assert_eq!(review_changes(&v2, &v3), ReviewChanges::default());
    // The same entry, without an expiry: closed, nothing opened.
    let again = lesson(
        "customers",
        "northgate",
        json!({ "pattern": "desk@origin\\.example" }),
        None,
    );
    let v4 = teach(&v3, &again, via(), at(3), &registry)
        .expect("taught")
        .0
        .expect("learned");
    assert_eq!(
        opened_and_closed(&review_changes(&v3, &v4)),
        (
            vec![],
            vec!["prealert-triage/customers/northgate@2".to_owned()]
        )
    );
    assert!(v4.reviews().is_empty());
    // The same entry with a new expiry: the old closed, the new opened.
    let renewed = expiring(
        "customers",
        "northgate",
        "ops@origin\\.example",
        "2027-06-01T00:00:00Z",
    );
    let v5 = teach(&v2, &renewed, via(), at(3), &registry)
        .expect("taught")
        .0
        .expect("learned");
    assert_eq!(
        opened_and_closed(&review_changes(&v2, &v5)),
        (
            vec!["prealert-triage/customers/northgate@3".to_owned()],
            vec!["prealert-triage/customers/northgate@2".to_owned()]
        )
    );
}

#[test]
fn a_lesson_that_changes_nothing_changes_no_review() {
    let registry = Registry::builtin();
    let v1 = new_definition(customers_json(), &registry);
    let first = expiring(
        "customers",
        "northgate",
        "billing@origin\\.example",
        "2027-03-01T00:00:00Z",
    );
    let v2 = teach(&v1, &first, via(), at(1), &registry)
        .expect("taught")
        .0
        .expect("learned");
    let same = expiring(
        "customers",
        "northgate",
        "billing@origin\\.example",
        "2027-09-01T00:00:00Z",
    );
    let (next, result) = teach(&v2, &same, via(), at(2), &registry).expect("taught");
    assert!(!result.learned, "§10.2: the entry already holds it");
    assert!(next.is_none(), "no version, and so no review, is recorded");
}

#[test]
fn an_expiry_not_later_than_the_lesson_is_refused_naming_the_field() {
    let registry = Registry::builtin();
    let v1 = new_definition(customers_json(), &registry);
    let past = expiring(
        "customers",
        "northgate",
        "billing@origin\\.example",
        "2026-01-01T00:00:00Z",
    );
    let err = teach(&v1, &past, via(), at(1), &registry).expect_err("refused");
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
    let registry = Registry::builtin();
    let v1 = new_definition(customers_json(), &registry);
    let first = expiring(
        "customers",
        "northgate",
        "billing@origin\\.example",
        "2027-03-01T00:00:00Z",
    );
    let v2 = teach(&v1, &first, via(), at(1), &registry)
        .expect("taught")
        .0
        .expect("learned");
    let other = lesson(
        "customers",
        "alhamra",
        json!({ "pattern": "hamra-desk\\.example" }),
        None,
    );
    let v3 = teach(&v2, &other, via(), at(2), &registry)
        .expect("taught")
        .0
        .expect("learned");
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
        (
            vec![],
            vec!["prealert-triage/customers/northgate@2".to_owned()]
        )
    );
}
