//! The watcher's shell: the [`store::Store`] port with its indexes, the in-memory store, the
//! agent directory, the step loop ([`watcher::Watcher`]) and replay (contracts/replay.md).

pub mod authority;
pub mod clock;
pub mod directory;
pub mod facts;
pub mod index;
pub mod lease;
pub mod lesson_review;
pub mod memory;
pub mod metrics;
pub mod operators;
pub mod origin_following;
pub mod origins;
pub mod outbox_entry;
pub mod ports;
pub mod push;
pub mod replay;
pub mod resolution;
pub mod retention;
/// The one retry policy (the `backoff` crate): exponential backoff with full jitter.
pub use backoff as retry;
pub mod sequence;
pub mod store;
pub mod task_progress;
pub mod trace_cause;
pub mod view;
pub mod watcher;

#[cfg(feature = "test-utils")]
pub mod conformance;
/// Fuzz targets for `fuzz/` (cargo fuzz) and their proptest stand-in (issue 12 item 9).
#[cfg(feature = "test-utils")]
pub mod fuzzing;
