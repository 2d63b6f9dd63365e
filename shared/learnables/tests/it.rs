//! The crate's integration tests as one binary (`cargo test --test it`), each file of
//! `tests/` a module: one link of the crate and its dependencies instead of one per file.
//! Run one file's tests with `cargo test --test it <file>::`.

mod appendix_b;
mod check_and_suggestions;
mod common;
mod lesson_review;
mod one_code_path;
mod refusals;
mod undo_and_tombstone;
mod versions_and_properties;
