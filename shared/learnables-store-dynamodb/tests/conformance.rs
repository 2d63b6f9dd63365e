//! The DynamoDB definition store against the definition store conformance suite, on a local moto
//! server (see `tests/common`): each check gets a fresh table.

use crate::common;

learnables_store::definition_store_conformance!(common::store().await);
