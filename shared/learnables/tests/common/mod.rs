//! Shared fixtures for the integration tests: the spec's Appendix B definition and helpers.
#![allow(dead_code)]

use learnables::{
    create, Collections, DefinitionId, DefinitionState, Lesson, LessonDto, Registry, TaughtBy,
    TenantId, Via,
};
use serde_json::{json, Value};

pub const DANA: &str = "dana@warehouse.example";
pub const REASON: &str = "Northgate's billing desk sends the pre-alerts";

pub fn at(minute: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_786_957_200 + minute * 60).expect("a fixed instant")
}

pub fn via() -> Via {
    Via::parse("teacher-console").expect("a credential id")
}

pub fn dana() -> TaughtBy {
    TaughtBy::parse(DANA).expect("a person")
}

/// Customers as in Appendix B: northgate has two marks that do not match the message from
/// billing@origin.example, alhamra one.
pub fn customers_json() -> Value {
    json!({
        "customers": {
            "learnable": "marks",
            "entry": "customer",
            "teaches": "which customer a message belongs to",
            "skills": ["triage_inbound", "recheck_message"],
            "entries": {
                "northgate": { "label": "Northgate Motors Ltd", "value": { "marks": [
                    { "pattern": "@northgate-motors\\.example", "where": "from" },
                    { "pattern": "NGM-\\d{6}", "where": "subject" }
                ] } },
                "alhamra": { "label": "Al Hamra Trading", "value": { "marks": [
                    { "pattern": "alhamra\\.example" }
                ] } }
            }
        }
    })
}

pub fn fields_json() -> Value {
    json!({
        "fields": {
            "learnable": "column-mapping",
            "entry": "field",
            "teaches": "which field a spreadsheet column holds",
            "entries": {
                "invoice_number": { "label": "Invoice number", "value": { "headers": ["Invoice No"] } },
                "amount": { "label": "Amount", "value": { "headers": ["Total"] } }
            }
        }
    })
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

pub fn billing_lesson() -> Lesson {
    lesson(
        "customers",
        "northgate",
        json!({ "pattern": "billing@origin\\.example", "where": "from" }),
        Some(REASON),
    )
}

pub fn billing_message() -> Value {
    json!({
        "from": "billing@origin.example",
        "subject": "Pre-alert PA-2026-0901",
        "body": "Please find the pre-alert attached.",
        "attachments": ["PA-2026-0901.pdf"]
    })
}
