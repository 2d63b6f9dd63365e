//! The Learnables authority's answers as types (contracts/learnables.md "Routes"), shared by the
//! routes and by `docs/openapi.json`'s generated components. The learnables' own types
//! (`ServedVersion`, `LessonResult`, `HistoryEntry`, `CheckReport`) are answered as they are.

use learnables::{HistoryEntry, LearnableDescriptor, LearnableSummary, VersionId};
use serde::Serialize;

/// `GET /v1/learnables`: `{ "learnables": [{ "name", "how", "decidedBy", "lessonFields" }] }`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LearnablesList {
    /// The learnables definitions may use.
    pub learnables: Vec<LearnableSummary>,
}

/// `GET /v1/definitions/{id}/descriptors`: `{ "learnables": [LearnableDescriptor] }` (§6.2),
/// the shape of a card's `params`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct DescriptorsList {
    /// One descriptor per collection.
    pub learnables: Vec<LearnableDescriptor>,
}

/// `GET /v1/definitions/{id}/history`: `{ "history": [HistoryEntry] }`, newest first.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct HistoryList {
    /// Every version and activation, newest first.
    pub history: Vec<HistoryEntry>,
}

/// `POST /v1/definitions/{id}/activate` (§10.3): `{ "activated", "definitionVersion",
/// "versionId", "previousVersionId"? }`; `previousVersionId` only when something was recorded.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Activated {
    /// Whether the active version changed (false: it was active already).
    pub activated: bool,
    /// The active version now.
    pub definition_version: u64,
    /// Its content address.
    pub version_id: VersionId,
    /// What was active before, when something was recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub previous_version_id: Option<VersionId>,
}

/// `POST /v1/definitions/{id}/versions/{n}/tombstone` (§14): `{ "tombstoned",
/// "definitionVersion", "versionId" }`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Tombstoned {
    /// Whether it was tombstoned now (false: it already was).
    pub tombstoned: bool,
    /// The version.
    pub definition_version: u64,
    /// Its content address.
    pub version_id: VersionId,
}
