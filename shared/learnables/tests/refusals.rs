//! §10.1 and §13.3: the learnable judges, refuses with its own reason, at absorption time; the
//! active version is unchanged.

use crate::common;

use common::*;
use learnables::{
    active, create, teach, AuthorityError, Collections, DefinitionId, Registry, TenantId,
};
use serde_json::json;

fn refused(result: Result<impl std::fmt::Debug, AuthorityError>) -> (String, String) {
    match result {
        Err(AuthorityError::Refused { at, reason }) => (at, reason),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn unbalanced_paren_is_refused_with_the_regex_compilers_reason() {
    let registry = Registry::builtin();
    let state = new_definition(customers_json(), &registry);
    let before = state.clone();
    let bad = lesson(
        "customers",
        "northgate",
        json!({ "pattern": "billing@origin\\.example(", "where": "from" }),
        Some(REASON),
    );
    let (at_, reason) = refused(teach(&state, &bad, via(), at(1), &registry));
    assert_eq!(at_, "customers/northgate");
    assert_eq!(
        reason,
        "\"billing@origin\\\\.example(\" is not a usable pattern: unclosed group at position 24"
    );
    // The reason is the regex crate's own words.
    let pattern = bad.value()["pattern"].as_str().unwrap_or_default();
    let compiler = regex::Regex::new(pattern)
        .expect_err("does not compile")
        .to_string();
    assert!(compiler.contains("error: unclosed group"), "{compiler}");
    assert_eq!(state, before, "the state is unchanged");
    assert_eq!(active(&state).map(|v| v.definition_version), Ok(1));
}

#[test]
fn a_pattern_over_the_size_limit_is_refused_never_run() {
    let registry = Registry::builtin();
    let state = new_definition(customers_json(), &registry);
    for pattern in ["\\w{5000}", "a{10000}{10000}", "(?:[a-z]{1,500}){1,500}"] {
        let bad = lesson(
            "customers",
            "northgate",
            json!({ "pattern": pattern }),
            None,
        );
        let (_, reason) = refused(teach(&state, &bad, via(), at(1), &registry));
        assert!(
            reason.starts_with(&format!(
                "{pattern:?} is not a usable pattern: it compiles to more than 1024 KiB"
            )),
            "{reason}"
        );
    }
}

#[test]
fn the_same_refusals_apply_to_values_in_put() {
    let registry = Registry::builtin();
    let mut raw = customers_json();
    raw["customers"]["entries"]["alhamra"]["value"]["marks"][0]["pattern"] = json!("(unclosed");
    let (at_, reason) = refused(Collections::parse(&raw, &registry));
    assert_eq!(at_, "customers/alhamra");
    assert!(
        reason.contains("is not a usable pattern: unclosed group"),
        "{reason}"
    );

    // create() validates too, even given collections parsed for structure only.
    let structural = Collections::from_json(&raw).expect("well-formed structure");
    let (_, again) = refused(create(
        TenantId::parse("t").expect("tenant"),
        DefinitionId::parse("d").expect("id"),
        structural,
        dana(),
        via(),
        None,
        at(0),
        &registry,
    ));
    assert_eq!(again, reason);
}

#[test]
fn an_unknown_learnable_is_refused_with_a_clear_reason() {
    let registry = Registry::builtin();
    let raw =
        json!({ "customers": { "learnable": "psychic", "entry": "customer", "teaches": "t" } });
    let (at_, reason) = refused(Collections::parse(&raw, &registry));
    assert_eq!(at_, "customers/learnable");
    assert_eq!(
        reason,
        "there is no learnable named \"psychic\"; the learnables here are: marks, column-mapping"
    );
}

#[test]
fn a_lesson_for_a_missing_collection_is_refused_naming_it() {
    let registry = Registry::builtin();
    let state = new_definition(customers_json(), &registry);
    let l = lesson("suppliers", "x", json!({ "pattern": "x" }), None);
    let (at_, reason) = refused(teach(&state, &l, via(), at(1), &registry));
    assert_eq!(at_, "collection");
    assert_eq!(
        reason,
        "this definition has no collection named \"suppliers\"; it has: customers"
    );
}

#[test]
fn malformed_lesson_values_are_refused_by_the_learnable() {
    let registry = Registry::builtin();
    let state = new_definition(customers_json(), &registry);
    for (value, words) in [
        (
            json!({ "pattern": "x", "where": "cc" }),
            "\"cc\" is not a place to look",
        ),
        (json!({ "where": "from" }), "needs a \"pattern\""),
        (json!(["x"]), "is an object"),
        (json!({ "pattern": ".*" }), "would match every message"),
    ] {
        let l = lesson("customers", "northgate", value, None);
        let (_, reason) = refused(teach(&state, &l, via(), at(1), &registry));
        assert!(reason.contains(words), "{reason}");
    }
}

#[test]
fn refusals_map_to_422() {
    let e = AuthorityError::Refused {
        at: "a".into(),
        reason: "b".into(),
    };
    assert_eq!(e.http_status(), 422);
    assert_eq!(
        AuthorityError::NotFound { what: "x".into() }.http_status(),
        404
    );
    assert_eq!(
        AuthorityError::Conflict { reason: "x".into() }.http_status(),
        409
    );
    assert_eq!(
        AuthorityError::Invalid {
            field: "f".into(),
            reason: "r".into()
        }
        .http_status(),
        400
    );
}
