//! The crate's integration tests as one binary (`cargo test --test it`), each file of
//! `tests/` a module: one link of the crate and its dependencies instead of one per file.
//! Run one file's tests with `cargo test --test it <file>::`.

mod common;
mod delivery_ops;
mod health;
mod incidents;
mod instants;
mod learnables_http;
mod openapi;
mod pagination;
mod reused_ids;
mod schemas;
mod semantics;
mod strict_bodies;
mod template_routes;
mod warnings;
mod web_page;
