//! JSON Schema (draft 2020-12) of the objects learnables-v1 Appendix A names, generated from the
//! Rust types with `schemars` (feature `schema`). The checked-in copies live in `docs/schemas/`;
//! `watcher-http`'s test `schemas_are_current` regenerates and compares them.

use schemars::generate::SchemaSettings;
use schemars::JsonSchema;
use serde_json::Value;

use crate::{LearnableDescriptor, LessonDto, LessonField, LessonResult, TeachBlock};

fn schema_of<T: JsonSchema>(name: &str, description: &str) -> Value {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let mut schema = generator.into_root_schema_for::<T>().to_value();
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("title".into(), Value::String(name.into()));
        obj.insert("description".into(), Value::String(description.into()));
    }
    schema
}

/// The schemas of learnables-v1 Appendix A, `(name, schema)`, in the Appendix's order.
pub fn schemas() -> Vec<(&'static str, Value)> {
    vec![
        (
            "LearnableDescriptor",
            schema_of::<LearnableDescriptor>(
                "LearnableDescriptor",
                "One entry of an Agent Card's params.learnables: what a person can teach and how (learnables-v1 §6.2).",
            ),
        ),
        (
            "LessonField",
            schema_of::<LessonField>(
                "LessonField",
                "One input a client collects to build a lesson value (learnables-v1 §6.3); a choice field needs choices.",
            ),
        ),
        (
            "TeachBlock",
            schema_of::<TeachBlock>(
                "TeachBlock",
                "The teach block in an input-required question's metadata[URI].teach (learnables-v1 §8); suggested keys must be lesson field names.",
            ),
        ),
        (
            "Lesson",
            schema_of::<LessonDto>(
                "Lesson",
                "One human-supplied value addressed to one entry, with its author (learnables-v1 §9); the value is judged by the learnable.",
            ),
        ),
        (
            "LessonResult",
            schema_of::<LessonResult>(
                "LessonResult",
                "What writing a lesson answers (learnables-v1 §10.4).",
            ),
        ),
    ]
}
