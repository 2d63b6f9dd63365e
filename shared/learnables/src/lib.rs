//! The pure core of a Learnables-v1 authority (`https://rsaxb.com/a2a/learnables/v1`, §12.1
//! external profile): learnables, definitions, immutable versions, lessons, show-back.
//!
//! No HTTP, no database, no clock: the shell parses requests into the types here, calls one
//! function with `now`, and persists the [`DefinitionState`] it gets back (compare-and-set on
//! [`DefinitionState::revision`]).
//!
//! - [`Learnable`] — everything about a value (validation, absorption, `describes`, reading an
//!   input) lives behind this trait; the authority never reads a key inside a value (§9).
//!   Built in: [`Marks`] and [`ColumnMapping`], held by a [`Registry`].
//! - [`Collections`] — a definition's content; [`version_id`] is its RFC 8785 content address.
//! - [`create`], [`teach`], [`check`], [`show_back`], [`activate`], [`tombstone`],
//!   [`get_version`], [`active`], [`history`], [`descriptors`] — pure operations (§10, §11,
//!   §13.1, §14).
//! - [`AuthorityError`] — every failure, each variant one HTTP status.
//! - [`TeachBlock`], [`suggest_pattern_for_reference`] — agent-side helpers (§8).
//!
//! ```
//! use learnables::*;
//! use serde_json::json;
//!
//! # fn main() -> Result<(), AuthorityError> {
//! let registry = Registry::builtin();
//! let collections = Collections::parse(&json!({ "customers": {
//!     "learnable": "marks", "entry": "customer", "teaches": "which customer a message belongs to",
//!     "entries": { "northgate": { "label": "Northgate Motors Ltd", "value": { "marks": [] } } }
//! } }), &registry)?;
//! let now = jiff::Timestamp::from_second(1_786_957_200).expect("in range");
//! let state = create(
//!     TenantId::parse("acme")?, DefinitionId::parse("prealert-triage")?, collections,
//!     TaughtBy::parse("dana@warehouse.example")?, Via::parse("ops-console")?, None, now, &registry,
//! )?;
//! let lesson = Lesson::try_from(LessonDto {
//!     collection: "customers".into(),
//!     entry: "northgate".into(),
//!     value: json!({ "pattern": "billing@origin\\.example", "where": "from" }),
//!     taught_by: "dana@warehouse.example".into(),
//!     reason: Some("Northgate's billing desk sends the pre-alerts".into()),
//!     expires_at: None,
//! })?;
//! let (next, result) = teach(&state, &lesson, Via::parse("ops-console")?, now, &registry)?;
//! assert!(result.learned);
//! assert_eq!(result.describes, "matches 'billing@origin\\.example' in the from");
//! let next = next.expect("learned, so a new state");
//! let report = show_back(&next, &json!({ "from": "billing@origin.example" }), None, &registry)?;
//! assert_eq!(report["customer"]["reads"], "Reads as Northgate Motors Ltd, on billing@origin.example");
//! # Ok(()) }
//! ```

mod collections;
mod column_mapping;
mod definition;
mod error;
mod learnable;
mod lesson;
mod marks;
mod names;
mod registry;
mod review;
#[cfg(feature = "schema")]
pub mod schema;
mod teach_block;
pub mod text;

pub use collections::{version_id, Collection, Collections, Entry, ValidatesEntries};
pub use column_mapping::{ColumnMapping, HEADER_MAX_CHARS};
pub use definition::{
    activate, active, check, create, descriptors, get_version, history, review_changes, show_back,
    teach, tombstone, Change, CheckReport, DefinitionState, HistoryEntry, HistoryKind,
    LearnableDescriptor, ServedVersion, Tombstone, Version, MAX_CORPUS,
};
pub use error::AuthorityError;
pub use learnable::{
    Absorbed, Candidate, DecidedBy, Learnable, LessonField, Margin, Reading, Refusal, Settings,
};
pub use lesson::{Lesson, LessonDto, LessonResult};
pub use marks::{Marks, PATTERN_MAX_CHARS, PATTERN_SIZE_LIMIT, UNSETTLED};
pub use names::{DefinitionId, Name, Reason, TaughtBy, TenantId, VersionId, Via};
pub use registry::{LearnableSummary, Registry};
pub use review::{Review, ReviewChanges};
pub use teach_block::{
    suggest_pattern_for_literal, suggest_pattern_for_reference, TeachBlock, TeachBlockBuilder,
    TeachBlockError, EXTENSION_URI,
};
