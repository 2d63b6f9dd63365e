//! The crate's integration tests as one binary (`cargo test --test it`), each file of
//! `tests/` a module: one link of the crate and its dependencies instead of one per file.
//! Run one file's tests with `cargo test --test it <file>::`.

mod common;
mod delivery;
mod lanes;
mod lineage;
mod origin_checks;
mod reconcile_store;
