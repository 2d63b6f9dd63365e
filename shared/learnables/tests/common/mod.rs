//! Shared fixtures for the integration tests: the spec's Appendix B definition and helpers.
#![allow(
    dead_code,
    reason = "each test binary uses its own part of this module"
)]

use learnables::{
    create, Collections, DefinitionId, DefinitionState, Lesson, LessonDto, Registry, TaughtBy,
    TenantId, Via,
};
use serde_json::{json, Value};

mod appendix_b;

pub use appendix_b::{
    billing_message, customers as customers_json, fields as fields_json, DANA, REASON,
};

pub fn at(minute: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_786_957_200 + minute * 60).expect("a fixed instant")
}

pub fn via() -> Via {
    Via::parse("teacher-console").expect("a credential id")
}

pub fn dana() -> TaughtBy {
    TaughtBy::parse(DANA).expect("a person")
}

pub fn new_definition(collections: Value, registry: &Registry) -> DefinitionState {
    let collections = Collections::parse(&collections, registry).expect("valid collections");
    create(
        TenantId::parse("acme-logistics").expect("tenant"),
        DefinitionId::parse("prealert-triage").expect("id"),
        collections,
        dana(),
        via(),
        None,
        at(0),
        registry,
    )
    .expect("created")
}

pub fn lesson(collection: &str, entry: &str, value: Value, reason: Option<&str>) -> Lesson {
    Lesson::try_from(LessonDto {
        collection: collection.into(),
        entry: entry.into(),
        value,
        taught_by: DANA.into(),
        reason: reason.map(str::to_owned),
        expires_at: None,
    })
    .expect("a well-formed lesson")
}

/// A lesson by Dana, with no reason, adding the mark `pattern` on `place` (`from`, `subject`,
/// `body`, `any`) to `entry` of `customers`.
pub fn mark_lesson(entry: &str, pattern: &str, place: &str) -> Lesson {
    lesson(
        "customers",
        entry,
        json!({ "pattern": pattern, "where": place }),
        None,
    )
}

/// A lesson by Dana mapping the column headed `header` to `invoice_number` of `fields`.
pub fn header_lesson(header: &str, reason: Option<&str>) -> Lesson {
    lesson(
        "fields",
        "invoice_number",
        json!({ "header": header }),
        reason,
    )
}

pub fn billing_lesson() -> Lesson {
    lesson(
        "customers",
        "northgate",
        json!({ "pattern": "billing@origin\\.example", "where": "from" }),
        Some(REASON),
    )
}

/// The active version's show-back (§11) of `input`.
pub fn show_back_now(state: &DefinitionState, input: Value, registry: &Registry) -> Value {
    learnables::show_back(state, &input, None, registry).expect("show-back")
}
