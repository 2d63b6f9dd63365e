//! `GET /v1/schemas/{name}.json`: the JSON Schemas of both extensions' objects (expectations-v1
//! and learnables-v1 Appendix A), served from the checked-in `docs/schemas/` files, which are
//! generated from the Rust types (`UPDATE_SCHEMAS=1 cargo test -p watcher-http --test it schemas::`
//! rewrites them; the same test fails when they are stale). Public: no credential needed.

use axum::extract::Path;
use axum::http::header;
use axum::response::{IntoResponse, Response};

use crate::problem::ApiError;

macro_rules! schema_files {
    ($($name:literal),* $(,)?) => {
        /// `(name, JSON text)` of every published schema, in the Appendices' order.
        pub const SCHEMAS: &[(&str, &str)] = &[
            $(($name, include_str!(concat!("../../../docs/schemas/", $name, ".json"))),)*
        ];
    };
}

schema_files!(
    "ExpectationKind",
    "Expectation",
    "Subject",
    "Fact",
    "Lapse",
    "ExpectationRecord",
    "ExpectationsParams",
    "LearnableDescriptor",
    "LessonField",
    "TeachBlock",
    "Lesson",
    "LessonResult",
);

/// The schema named `name` (without `.json`), if published.
pub fn schema(name: &str) -> Option<&'static str> {
    SCHEMAS.iter().find(|(n, _)| *n == name).map(|(_, s)| *s)
}

/// `GET /v1/schemas/{file}`: `file` is `{name}.json`; 200 `application/schema+json`, or 404
/// problem+json naming the published schemas.
pub async fn get_schema(Path(file): Path<String>) -> Result<Response, ApiError> {
    let found = file.strip_suffix(".json").and_then(schema);
    match found {
        Some(text) => {
            Ok(([(header::CONTENT_TYPE, "application/schema+json")], text).into_response())
        }
        None => {
            let names: Vec<String> = SCHEMAS.iter().map(|(n, _)| format!("{n}.json")).collect();
            Err(ApiError::not_found(format!(
                "no schema {file:?}; published: {}",
                names.join(", ")
            )))
        }
    }
}
