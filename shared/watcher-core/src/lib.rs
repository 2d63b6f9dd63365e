//! The A2A Expectations watcher's core: domain types parsed at the edge, card validation, and
//! the rules of expectations-v1 §8–§11 as a pure engine.
//!
//! * [`time`]: instants and durations (semantics.md "Time");
//! * [`ids`]: identifiers and subjects;
//! * [`expectation`]: the Expectation object (§8);
//! * [`card`]: the extension declaration on an Agent Card (§6);
//! * [`record`]: the watcher's ExpectationRecord;
//! * [`slice`](mod@slice): the part of the record one step reads and writes;
//! * [`engine`]: `(slice, input, now) → (slice', effects)`;
//! * [`lapse`]: the lapse block, text, `messageId` and `SendMessage` request (§10.1);
//! * [`settings`]: deployment bounds;
//! * [`validate`]: offline checks of a card and an artifact, naming each field at fault;
//! * `schema` (feature `schema`): JSON Schema of the published objects.

pub mod card;
pub mod engine;
pub mod expectation;
pub mod fact;
pub mod ids;
pub mod ingest;
pub mod lapse;
pub mod members;
pub mod record;
#[cfg(feature = "schema")]
pub mod schema;
pub mod settings;
pub mod slice;
pub mod time;
pub mod trace;
pub mod validate;

/// The Expectations extension URI (expectations-v1, header).
pub const EXPECTATIONS_URI: &str = "https://rsaxb.com/a2a/expectations/v1";
