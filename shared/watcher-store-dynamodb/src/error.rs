//! This store's own failures, carried as the source of a [`StoreError::Backend`], and the
//! mapping of SDK errors to store errors (SDK errors are kept as sources, never stringified).

use aws_sdk_dynamodb::error::SdkError;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use watcher_runtime::store::StoreError;

/// Largest item DynamoDB stores, in bytes (names and values together).
pub const MAX_ITEM_BYTES: usize = 400 * 1024;

/// Most writes one `TransactWriteItems` call holds.
pub const MAX_TRANSACTION_ITEMS: usize = 100;

/// Largest total size of one `TransactWriteItems` call, in bytes.
pub const MAX_TRANSACTION_BYTES: usize = 4 * 1024 * 1024;

/// A commit this store cannot write. Not retryable: the same commit fails the same way.
#[derive(Debug, thiserror::Error)]
pub enum DynamoStoreError {
    /// A subject or task would exceed DynamoDB's 400 KB item limit. What to do: nothing in
    /// the store; the subject holds too many facts or records for one item (docs/dynamodb.md,
    /// "Large states"). The subject stays as last stored.
    #[error(
        "{what} would be {bytes} bytes stored, over DynamoDB's item limit of {max} bytes; \
         the commit was refused and nothing was written (docs/dynamodb.md, \"Large states\")",
        max = MAX_ITEM_BYTES
    )]
    ItemTooLarge {
        /// Which item, in words (`subject shipment PA-1 of tenant default`).
        what: String,
        /// Its estimated stored size.
        bytes: usize,
    },
    /// The commit needs more than one DynamoDB transaction holds (100 writes, 4 MB). What to
    /// do: split the input (fewer expectations per push, a fact that concerns fewer subjects);
    /// nothing was written (docs/dynamodb.md, "Transaction size").
    #[error(
        "the commit needs {items} writes of {bytes} bytes in all; one DynamoDB transaction holds \
         at most {max_items} writes and {max_bytes} bytes, so it was refused and nothing was \
         written (docs/dynamodb.md, \"Transaction size\")",
        max_items = MAX_TRANSACTION_ITEMS,
        max_bytes = MAX_TRANSACTION_BYTES
    )]
    TransactionTooLarge {
        /// Writes the commit needs.
        items: usize,
        /// Their estimated size together.
        bytes: usize,
    },
}

/// The outcome of a failed `TransactWriteItems`: a lost compare-and-set (one of the items'
/// conditions failed, or another transaction held one of them) is a [`StoreError::Conflict`]
/// naming the first such item; anything else is the backend's, with the SDK error as source.
pub(crate) fn transaction_error(
    e: SdkError<TransactWriteItemsError>,
    describe: impl Fn(usize) -> String,
) -> StoreError {
    if let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) =
        e.as_service_error()
    {
        let reasons = cancel.cancellation_reasons();
        // Codes other than these (ValidationError, ThrottlingError, ...) are not conflicts:
        // reloading would not help, or the SDK already retried.
        let lost = reasons.iter().position(|r| {
            matches!(
                r.code(),
                Some("ConditionalCheckFailed" | "TransactionConflict")
            )
        });
        let other = reasons.iter().any(|r| {
            !matches!(
                r.code(),
                None | Some("None" | "ConditionalCheckFailed" | "TransactionConflict")
            )
        });
        if let (Some(i), false) = (lost, other) {
            return StoreError::Conflict(describe(i));
        }
    }
    StoreError::backend(e)
}

/// The error of a write that may carry a condition: whether it failed because the condition
/// did not hold.
pub(crate) trait ConditionFailed {
    /// Whether this is DynamoDB's `ConditionalCheckFailedException`.
    fn condition_failed(&self) -> bool;
}

impl ConditionFailed for PutItemError {
    fn condition_failed(&self) -> bool {
        self.is_conditional_check_failed_exception()
    }
}

impl ConditionFailed for UpdateItemError {
    fn condition_failed(&self) -> bool {
        self.is_conditional_check_failed_exception()
    }
}

/// Whether the conditional write answered by `result` landed: `Ok(false)` when its condition
/// did not hold.
///
/// # Errors
/// The backend's error for any other failure (kept as the source).
pub(crate) fn landed<T, E, R>(result: Result<T, SdkError<E, R>>) -> Result<bool, StoreError>
where
    E: ConditionFailed + std::error::Error + Send + Sync + 'static,
    R: std::fmt::Debug + Send + Sync + 'static,
{
    match result {
        Ok(_) => Ok(true),
        Err(e) if e.as_service_error().is_some_and(E::condition_failed) => Ok(false),
        Err(e) => Err(StoreError::backend(e)),
    }
}
