//! The crate's integration tests as one binary (`cargo test --test it`), each file of
//! `tests/` a module: one link of the crate and its dependencies instead of one per file.
//! Run one file's tests with `cargo test --test it <file>::`.

mod cases;
mod common;
mod conflict_backoff;
mod fire_due;
mod fire_hand_over;
mod fuzz_standin;
mod lesson_review;
mod memory_conformance;
mod properties;
mod report_facts;
mod rules;
mod rules_disorder;
mod rules_revision3;
mod rules_revision4;
mod sequence_order;
mod timer_effects;
mod worked_example;
