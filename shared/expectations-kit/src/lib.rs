//! For the author of an A2A agent that uses the Expectations extension
//! (`https://rsaxb.com/a2a/expectations/v1`) and the Learnables extension
//! (`https://rsaxb.com/a2a/learnables/v1`), without the rest of the watcher:
//!
//! * the extension's types, re-exported from the watcher's pure core ([`Expectation`],
//!   [`Subject`], [`LapseBlock`], [`Instant`], [`IsoDuration`], …), so what the agent writes is
//!   read by exactly the code that reads it in the watcher;
//! * [`ExpectationBuilder`]: builds an [`Expectation`] and checks it with the watcher's own
//!   parser on [`ExpectationBuilder::build`], so it cannot produce one the watcher would refuse
//!   for its fields; [`ExpectationBuilder::build_for`] also checks the kind against the card;
//! * [`artifact_metadata`] / [`withdraw_metadata`]: the `metadata` to put on an Artifact;
//! * [`LapseTask::from_message`]: the lapse task the watcher sends to the `lapseSkill`
//!   (expectations-v1 §10.1), parsed, naming the field at fault;
//! * [`TeachBlock`] (learnables-v1 §8) and the suggestion helpers, re-exported from the
//!   Learnables core;
//! * [`validate`]: the offline checks behind `a2a-watcher validate`.
//!
//! Raising an expectation:
//!
//! ```
//! use expectations_kit::{artifact_metadata, ExpectationBuilder, EXPECTATIONS_URI};
//!
//! let manifest = ExpectationBuilder::new("exp-01J8Q0MANIFEST", "shipment.manifest")
//!     .subject("shipment", "PA-2026-0901")
//!     .expects("the airline manifest for PA-2026-0901")
//!     .satisfied_by("shipment.manifest.received:PA-2026-0901")
//!     .due_at("2026-09-10T20:15:00Z")
//!     .grace("PT2H")
//!     .basis("observed")
//!     .build()?;
//! let metadata = artifact_metadata(&[manifest]);
//! assert_eq!(
//!     metadata[EXPECTATIONS_URI]["expectations"][0]["dueAt"],
//!     "2026-09-10T20:15:00Z"
//! );
//! # Ok::<(), expectations_kit::ParseError>(())
//! ```
//!
//! A field the watcher would refuse is refused here, naming it:
//!
//! ```
//! use expectations_kit::ExpectationBuilder;
//!
//! let err = ExpectationBuilder::new("exp-1", "shipment.manifest")
//!     .subject("shipment", "PA-2026-0901")
//!     .expects("the airline manifest")
//!     .satisfied_by("shipment.manifest.received:PA-2026-0901")
//!     .due_at("2026-09-10T20:15:00") // no offset
//!     .basis("observed")
//!     .build()
//!     .unwrap_err();
//! assert_eq!(err.field, "dueAt");
//! assert!(err.reason.contains("no offset"));
//! ```

//!
//! Asking a person a question that can teach the agent (learnables-v1 §8): a teach block in the
//! `input-required` status message's metadata, with a suggestion no wider than its evidence.
//!
//! ```
//! use expectations_kit::{suggest_pattern_for_literal, LessonField, TeachBlock, LEARNABLES_URI};
//! use serde_json::json;
//!
//! let fields = vec![LessonField::text("pattern", "Text that gives it away")];
//! let pattern = suggest_pattern_for_literal("billing@origin.example")?;
//! let block = TeachBlock::builder("customers", fields)
//!     .entries(["northgate", "harbour"])
//!     .suggested(json!({ "pattern": pattern }))
//!     .suggestion_label("the address this message came from")
//!     .build()?;
//! let metadata = block.to_metadata();
//! assert_eq!(metadata[LEARNABLES_URI]["teach"]["suggested"]["pattern"], "billing@origin\\.example");
//! // A suggested key that is not a lesson field is refused (§8 MUST).
//! let wrong = TeachBlock::builder("customers", vec![LessonField::text("pattern", "Text")])
//!     .suggested(json!({ "regex": "x" }))
//!     .build();
//! assert!(wrong.is_err());
//! # Ok::<(), expectations_kit::TeachBlockError>(())
//! ```
//!
//! Nothing here needs the watcher's store, HTTP server or runtime: the crate depends on the
//! watcher's pure core (`watcher-core`) and the Learnables core (`learnables`) only.

mod builder;
mod lapse_task;

pub use builder::{artifact_metadata, withdraw_metadata, ExpectationBuilder, KitError};
pub use lapse_task::{LapseTask, LapseTaskError};

pub use learnables::{
    suggest_pattern_for_literal, suggest_pattern_for_reference, LessonField, TeachBlock,
    TeachBlockBuilder, TeachBlockError, EXTENSION_URI as LEARNABLES_URI,
};
pub use watcher_core::card::{
    declaration_from_card, CardError, ExpectationKind, ExpectationsDeclaration,
};
pub use watcher_core::expectation::{Anchor, Expectation, Matcher, ParseError};
pub use watcher_core::fact::FactBody;
pub use watcher_core::ids::{ExpectationId, FactKey, Subject};
pub use watcher_core::lapse::LapseBlock;
pub use watcher_core::record::LapseKind;
pub use watcher_core::time::{Instant, IsoDuration};
pub use watcher_core::validate;
pub use watcher_core::EXPECTATIONS_URI;
