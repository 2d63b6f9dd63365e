//! The crate's integration tests as one binary (`cargo test --test it`), each file of
//! `tests/` a module: one link of the crate and its dependencies instead of one per file.
//! Run one file's tests with `cargo test --test it <file>::`.

mod at_scale;
mod common;
mod conformance;
mod dynamodb;
mod live_bound;
mod paging;
