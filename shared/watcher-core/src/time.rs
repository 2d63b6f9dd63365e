//! Instants and durations as the watcher reads and writes them (semantics.md, "Time"): the
//! `instants` crate, the one grammar, range and leap-second rule the Learnables authority uses
//! too (see there for the rules).
//!
//! Every instant and duration the watcher reads goes through [`Instant::parse`] /
//! [`Instant::parse_reading`] and [`IsoDuration::parse`]; nothing else in the workspace parses
//! either.

pub use instants::{Instant, InstantReading, IsoDuration, RANGE_TEXT};
