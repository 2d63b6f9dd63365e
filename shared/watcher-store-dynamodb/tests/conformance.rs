//! The DynamoDB store against the store conformance suite, on a local moto server (see
//! `tests/common`): each check gets a fresh table. DynamoDB expires items through the TTL
//! attribute (`retention = ttl`: `purge` deletes nothing); tests/dynamodb/retention.rs checks the TTLs.

use crate::common;

watcher_runtime::store_conformance!(common::store().await.counting_work(), retention = ttl);
