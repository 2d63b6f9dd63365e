//! The DynamoDB store against the store conformance suite, on a local moto server (see
//! `tests/common`): each check gets a fresh table.

mod common;

watcher_runtime::store_conformance!(common::store().await);
