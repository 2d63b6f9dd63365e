//! The Learnables authority's [`DefinitionStore`] over one DynamoDB table, for the AWS
//! deployment (the lesson-write function; contracts/learnables.md).
//!
//! One item per definition, holding the definition's whole [`DefinitionState`]:
//!
//! | attribute | type | value |
//! |---|---|---|
//! | `pk` | S | `DEF#{tenant}#{id}`, each component escaped (`%` → `%25`, `#` → `%23`) |
//! | `sk` | S | `STATE` |
//! | `revision` | N | [`DefinitionState::revision`], the compare-and-set counter |
//! | `state` | S | the JSON serde form of the [`DefinitionState`] |
//!
//! - [`DefinitionStore::create`] is a `PutItem` conditional on `attribute_not_exists(pk)`;
//! - [`DefinitionStore::replace`] is a `PutItem` conditional on `revision = :expected`, so of two
//!   writers that loaded the same revision exactly one wins and the other gets
//!   [`DefinitionStoreError::Conflict`] ([`learnables_store::absorb_with_retry`] reloads and
//!   re-applies its lesson on the winner's state: no update is lost);
//! - [`DefinitionStore::get`] is a strongly consistent `GetItem`, so a lesson is visible to the
//!   show-back that follows it.
//!
//! A failed condition is a `Conflict`; every other SDK error is a
//! [`DefinitionStoreError::Backend`] classified as the watcher's DynamoDB store classifies its
//! own ([`watcher_store_dynamodb::sdk_failure`], one mapping for both): a
//! [`BackendFailure`](watcher_runtime::store::BackendFailure) of its class when DynamoDB cannot
//! serve the request now (throttled, a write to an item a transaction holds, a 5xx, a timeout,
//! no connection), which the HTTP layer answers 503 with `Retry-After` and the reason; else a
//! [`PermanentFailure`](watcher_runtime::store::PermanentFailure) (access denied, a missing
//! table, a request DynamoDB finds invalid), answered 500. The SDK error is the source either
//! way (never a string), so callers can still see what failed. A state too large for one
//! DynamoDB item ([`MAX_ITEM_BYTES`]) is refused before anything is sent, as
//! [`DefinitionStoreError::TooLarge`] (not retryable; the HTTP layer answers 413).
//!
//! The table's layout is [`create_table`]'s: `pk`/`sk` string keys, on-demand billing, no
//! indexes, no TTL (definitions never expire; tombstoning is inside the state, learnables-v1
//! §14). The `DEF#` prefix and the `STATE` sort key never occur among the watcher's own items
//! (`watcher-store-dynamodb`), so the two stores could share a table, although the deployment
//! gives definitions a table of their own (`DEFINITIONS_TABLE_NAME`).
//!
//! ```no_run
//! # async fn example() -> Result<(), learnables_store::DefinitionStoreError> {
//! use learnables_store_dynamodb::DynamoDefinitionStore;
//! let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
//! let client = aws_sdk_dynamodb::Client::new(&config);
//! let store = DynamoDefinitionStore::new(client, "learnables-definitions");
//! # Ok(()) }
//! ```
//!
//! [`DefinitionStore`]: learnables_store::DefinitionStore
//! [`DefinitionStore::create`]: learnables_store::DefinitionStore::create
//! [`DefinitionStore::replace`]: learnables_store::DefinitionStore::replace
//! [`DefinitionStore::get`]: learnables_store::DefinitionStore::get

#![warn(missing_docs)]

mod keys;
mod table;
#[cfg(feature = "test-utils")]
pub mod testing;

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::builders::PutItemFluentBuilder;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use learnables::{DefinitionId, DefinitionState, TenantId};
use learnables_store::{DefinitionBackend, DefinitionStoreError, Swapped};
use watcher_store_dynamodb::sdk_failure;

pub use crate::keys::definition_pk;
pub use crate::table::{create_table, CREATE_TABLE_WAIT, PK, REVISION, SK, STATE, STATE_SK};

/// Largest item DynamoDB stores, in bytes (attribute names and values together): the `limit` of
/// the [`DefinitionStoreError::TooLarge`] this store returns. Every version keeps its whole
/// content (learnables-v1 §10.3), so a definition grows with each lesson towards it.
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// One DynamoDB item: attribute name to value.
type Item = HashMap<String, AttributeValue>;

/// A [`DefinitionStore`](learnables_store::DefinitionStore) over the DynamoDB table `table`
/// (layout: [`create_table`]): the [`DefinitionBackend`] whose writes are conditional puts.
///
/// Build the client once (in `main`) and pass it in; cloning the store shares the client.
#[derive(Debug, Clone)]
pub struct DynamoDefinitionStore {
    client: Client,
    table: String,
}

impl DynamoDefinitionStore {
    /// A store over `table` through `client`. Sends nothing: a missing table shows up as a
    /// [`DefinitionStoreError::Backend`] on the first call.
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        DynamoDefinitionStore {
            client,
            table: table.into(),
        }
    }

    /// The table's name.
    pub fn table(&self) -> &str {
        &self.table
    }

    /// The SDK client.
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// The item storing `state`, checked against DynamoDB's size limit.
    fn item(&self, state: &DefinitionState) -> Result<Item, DefinitionStoreError> {
        let json = serde_json::to_string(state).map_err(DefinitionStoreError::backend)?;
        let mut item: Item = HashMap::new();
        item.insert(PK.into(), s(definition_pk(state.tenant(), state.id())));
        item.insert(SK.into(), s(STATE_SK));
        item.insert(REVISION.into(), n(state.revision()));
        item.insert(STATE.into(), s(json));
        let bytes = item_size(&item);
        if bytes > MAX_ITEM_BYTES {
            return Err(DefinitionStoreError::TooLarge {
                what: format!("definition {}/{}", state.tenant(), state.id()),
                bytes,
                limit: MAX_ITEM_BYTES,
            });
        }
        Ok(item)
    }

    /// A `PutItem` of the item storing `state` (checked against the size limit), to be given
    /// its condition.
    fn put(&self, state: &DefinitionState) -> Result<PutItemFluentBuilder, DefinitionStoreError> {
        Ok(self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(self.item(state)?)))
    }
}

fn s(text: impl Into<String>) -> AttributeValue {
    AttributeValue::S(text.into())
}

fn n(number: u64) -> AttributeValue {
    AttributeValue::N(number.to_string())
}

/// An item's size as DynamoDB counts it: the UTF-8 bytes of every attribute name and value.
/// (DynamoDB stores a number in at most its digit count, so counting digits never
/// underestimates.)
fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, value)| {
            name.len()
                + match value {
                    AttributeValue::S(x) | AttributeValue::N(x) => x.len(),
                    // Not written by this store; counted generously.
                    other => format!("{other:?}").len(),
                }
        })
        .sum()
}

/// Reads an item back, checking it is a valid state for its key and revision.
fn from_item(
    tenant: &TenantId,
    id: &DefinitionId,
    item: &Item,
) -> Result<DefinitionState, DefinitionStoreError> {
    let corrupt =
        |what: &str| DefinitionStoreError::Corrupt(format!("definition {tenant}/{id}: {what}"));
    let revision = match item.get(REVISION) {
        Some(AttributeValue::N(text)) => text
            .parse::<u64>()
            .map_err(|_| corrupt(&format!("the revision {text:?} is not a whole number")))?,
        _ => return Err(corrupt("the item has no numeric `revision`")),
    };
    let Some(AttributeValue::S(json)) = item.get(STATE) else {
        return Err(corrupt("the item has no string `state`"));
    };
    let state: DefinitionState = serde_json::from_str(json).map_err(|e| corrupt(&e.to_string()))?;
    if state.tenant() != tenant || state.id() != id {
        return Err(corrupt(&format!(
            "the item holds definition {}/{}",
            state.tenant(),
            state.id()
        )));
    }
    if state.revision() != revision {
        return Err(corrupt(&format!(
            "the item says revision {revision}, its state {}",
            state.revision()
        )));
    }
    Ok(state)
}

/// Whether a `PutItem` failed only because its condition did not hold.
fn condition_failed(e: &SdkError<PutItemError>) -> bool {
    matches!(
        e.as_service_error(),
        Some(PutItemError::ConditionalCheckFailedException(_))
    )
}

/// What a `PutItem` conditional on the revision found when its condition failed: the revision
/// of the item DynamoDB returned (`ReturnValuesOnConditionCheckFailure::AllOld`), or no item.
fn found(e: &SdkError<PutItemError>) -> Swapped {
    match e.as_service_error() {
        Some(PutItemError::ConditionalCheckFailedException(c)) => {
            match c.item().and_then(|item| item.get(REVISION)) {
                Some(AttributeValue::N(r)) => Swapped::AtRevision(r.clone()),
                _ => Swapped::Missing,
            }
        }
        _ => Swapped::Missing,
    }
}

#[async_trait]
impl DefinitionBackend for DynamoDefinitionStore {
    async fn load(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(definition_pk(tenant, id)))
            .key(SK, s(STATE_SK))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| DefinitionStoreError::Backend(sdk_failure(e)))?;
        out.item
            .map(|item| from_item(tenant, id, &item))
            .transpose()
    }

    async fn insert(&self, state: &DefinitionState) -> Result<bool, DefinitionStoreError> {
        match self
            .put(state)?
            .condition_expression("attribute_not_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .send()
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if condition_failed(&e) => Ok(false),
            Err(e) => Err(DefinitionStoreError::Backend(sdk_failure(e))),
        }
    }

    async fn swap(
        &self,
        state: &DefinitionState,
        expected_revision: u64,
    ) -> Result<Swapped, DefinitionStoreError> {
        // `#rev = :expected` is false when there is no item, so replacing a definition that
        // does not exist fails the condition too.
        match self
            .put(state)?
            .condition_expression("#rev = :expected")
            .expression_attribute_names("#rev", REVISION)
            .expression_attribute_values(":expected", n(expected_revision))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await
        {
            Ok(_) => Ok(Swapped::Done),
            Err(e) if condition_failed(&e) => Ok(found(&e)),
            Err(e) => Err(DefinitionStoreError::Backend(sdk_failure(e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_counts_names_and_values() {
        let mut item: Item = HashMap::new();
        item.insert("pk".into(), s("DEF#a#b"));
        item.insert("revision".into(), n(12));
        assert_eq!(item_size(&item), 2 + 7 + 8 + 2);
    }
}
