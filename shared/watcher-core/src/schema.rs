//! JSON Schema (draft 2020-12) of the objects expectations-v1 Appendix A names, generated from
//! the Rust types with `schemars` (feature `schema`). The checked-in copies live in
//! `docs/schemas/`; `watcher-http`'s test `schemas_are_current` regenerates and compares them.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

use crate::card::{ExpectationKind, ExpectationsDeclaration};
use crate::expectation::Expectation;
use crate::fact::FactBody;
use crate::ids::Subject;
use crate::lapse::LapseBlock;
use crate::record::ContractRecord;

/// One schema: `title` set to `name`, definitions inlined under `$defs`.
pub fn schema_of<T: JsonSchema>(name: &str, description: &str) -> Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("title".into(), Value::String(name.into()));
        obj.insert("description".into(), Value::String(description.into()));
    }
    schema
}

/// The schemas of expectations-v1 Appendix A, `(name, schema)`, in the Appendix's order, then
/// `ExpectationsParams` (the card's extension `params`, §6.1).
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "ExpectationKind",
            schema_of::<ExpectationKind>(
                "ExpectationKind",
                "One class of expectation an agent declares on its card (expectations-v1 §6.2).",
            ),
        ),
        (
            "Expectation",
            schema_of::<Expectation>(
                "Expectation",
                "An expectation as an agent raises it in metadata[URI].expectations (expectations-v1 §8). The watcher also refuses a horizon earlier than dueAt and a dueAt + grace beyond 9999-12-31T23:59:59.999999999Z.",
            ),
        ),
        (
            "Subject",
            schema_of::<Subject>(
                "Subject",
                "What an expectation or fact is about: { type, id }, opaque to the watcher (expectations-v1 §5).",
            ),
        ),
        (
            "Fact",
            schema_of::<FactBody>(
                "Fact",
                "A fact as a reporter posts it (expectations-v1 §9.2); the watcher records the authenticated reporter as its source (§13.5).",
            ),
        ),
        (
            "Lapse",
            schema_of::<LapseBlock>(
                "Lapse",
                "The lapse block in a lapse task's message.metadata[URI].lapse (expectations-v1 §10.1).",
            ),
        ),
        (
            "ExpectationRecord",
            schema_of::<ContractRecord>(
                "ExpectationRecord",
                "The watcher's record of one expectation as its routes show it (expectations-v1 Appendix A; docs/contracts/replay.md \"record\").",
            ),
        ),
        (
            "ExpectationsParams",
            schema_of::<ExpectationsDeclaration>(
                "ExpectationsParams",
                "The extension's params on an Agent Card (expectations-v1 §6.1); lapseSkill must also name a skill on the card and kinds must be unique, which `a2a-watcher validate card` checks.",
            ),
        ),
    ]
}
