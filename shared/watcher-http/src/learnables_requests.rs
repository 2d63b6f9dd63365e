//! The Learnables authority's request bodies as types (contracts/learnables.md "Routes"): what
//! the routes parse, and what `docs/openapi.json`'s request schemas are generated from. Lessons
//! (`POST .../lessons`) are `learnables::LessonDto`, published as `schemas/Lesson.json`.
//!
//! `reason` is optional on every write: the contract lists it beside `taughtBy`, and a write
//! without one is recorded with no reason (docs/interpretation.md, learnables §10.3).

use serde::Deserialize;
use serde_json::Value;

/// `PUT /v1/definitions/{id}`: `{ "collections": {...}, "taughtBy", "reason"? }`, version 1 of
/// a new definition (learnables-v1 §10).
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateDefinitionRequest {
    /// The definition's collections by name, each `{ "learnable", "entry", "entries", ... }`
    /// as its learnable defines them; judged by each collection's learnable.
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Map<String, Value>"))]
    pub collections: Value,
    /// The person the definition is written for (`person:` or `role:`), whom the teacher's
    /// credential may act for.
    pub taught_by: String,
    /// Why, recorded in history.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `POST /v1/definitions/{id}/show-back`: `{ "input": Input, "definitionVersion"?: n }` (§11):
/// how the active version (or version `n`) reads one input.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShowBackRequest {
    /// The input as the collection's learnable reads it: for `marks`
    /// `{ "from", "subject", "body", "attachments": [text] }`, for `column-mapping`
    /// `{ "header" }`.
    #[cfg_attr(feature = "schema", schemars(with = "serde_json::Map<String, Value>"))]
    pub input: Value,
    /// The version to read with; the active version when absent.
    #[serde(default)]
    pub definition_version: Option<u64>,
}

/// `POST /v1/definitions/{id}/activate`: `{ "definitionVersion": n, "taughtBy", "reason"? }`:
/// makes version `n` active again (undo, §10.3).
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ActivateRequest {
    /// The version to make active (1 and up).
    pub definition_version: u64,
    /// The person the activation is made for.
    pub taught_by: String,
    /// Why, recorded in history.
    #[serde(default)]
    pub reason: Option<String>,
}

/// `POST /v1/definitions/{id}/versions/{n}/tombstone`: `{ "taughtBy", "reason"? }`: version
/// `n`'s content is no longer served (§14).
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct TombstoneRequest {
    /// The person the tombstone is made for.
    pub taught_by: String,
    /// Why, recorded with the tombstone (history entries about the version lose theirs).
    #[serde(default)]
    pub reason: Option<String>,
}
