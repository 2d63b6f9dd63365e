//! This store's own failures, carried as the source of a [`StoreError::Backend`], and the
//! mapping of SDK errors to store errors (SDK errors are kept as sources, never stringified).

use aws_sdk_dynamodb::config::http::HttpResponse;
use aws_sdk_dynamodb::error::{BuildError, ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use watcher_runtime::store::{PermanentFailure, StoreError, Unavailable};

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
        // An item throttled inside the transaction (its partition's throughput in use).
        if reasons.iter().any(|r| {
            matches!(
                r.code(),
                Some("ThrottlingError" | "ProvisionedThroughputExceeded")
            )
        }) {
            return StoreError::unavailable(Unavailable::Throttled, e);
        }
    }
    if let Some(TransactWriteItemsError::TransactionInProgressException(_)) = e.as_service_error() {
        return StoreError::unavailable(Unavailable::Contended, e);
    }
    backend(e)
}

/// DynamoDB error codes that mean "throttled": the request may succeed once the partition's or
/// the account's throughput is free again (the SDK's standard mode retried it already).
const THROTTLING_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "Throttling",
    "TooManyRequestsException",
];

/// Why `e` means DynamoDB cannot serve the request now, when it does: throttling, a write to an
/// item an ongoing transaction holds (`TransactionConflictException`, which the SDK does not
/// retry), a server error (5xx, an unreadable response), a timeout, or no connection. `None` for
/// an error retrying cannot mend (validation, access denied, a missing table, a failed
/// condition).
///
/// The one mapping of DynamoDB's errors: this store's (`backend`) and the Learnables
/// definition store's (`learnables-store-dynamodb`, through [`sdk_failure`]).
pub fn classify<E: ProvideErrorMetadata>(e: &SdkError<E, HttpResponse>) -> Option<Unavailable> {
    match e {
        SdkError::TimeoutError(_) => Some(Unavailable::TimedOut),
        SdkError::DispatchFailure(d) if d.is_timeout() => Some(Unavailable::TimedOut),
        SdkError::DispatchFailure(d) if d.is_io() || d.is_other() => Some(Unavailable::Unreachable),
        SdkError::ResponseError(_) => Some(Unavailable::Failed),
        SdkError::ServiceError(s) => {
            if s.err()
                .code()
                .is_some_and(|c| THROTTLING_CODES.contains(&c))
            {
                Some(Unavailable::Throttled)
            } else if s.err().code() == Some("TransactionConflictException") {
                Some(Unavailable::Contended)
            } else if s.raw().status().is_server_error()
                || matches!(
                    s.err().code(),
                    Some("InternalServerError" | "ServiceUnavailable")
                )
            {
                Some(Unavailable::Failed)
            } else {
                None
            }
        }
        _ => None,
    }
}

/// `e` as the error of a store over DynamoDB, classified ([`classify`]): a
/// [`BackendFailure`](watcher_runtime::store::BackendFailure) of its [`Unavailable`] class when
/// DynamoDB cannot serve the request now (the API answers 503 with `Retry-After` and the reason),
/// else a [`PermanentFailure`] (retrying cannot mend it: an HTTP answer is 500). The SDK error is
/// the source either way, never turned into a string. For stores whose error type is not
/// [`StoreError`] (the Learnables definition store's `DefinitionStoreError::Backend`).
pub fn sdk_failure<E>(e: SdkError<E, HttpResponse>) -> Box<dyn std::error::Error + Send + Sync>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match classify(&e) {
        Some(kind) => Box::new(watcher_runtime::store::BackendFailure {
            kind,
            source: Box::new(e),
        }),
        None => Box::new(PermanentFailure {
            source: Box::new(e),
        }),
    }
}

/// What can become a [`StoreError::Backend`]: an SDK error (classified: [`classify`]) or a
/// request that could not be built.
pub(crate) trait IntoBackend {
    /// The store error, with `self` as the source.
    fn into_backend(self) -> StoreError;
}

impl<E> IntoBackend for SdkError<E, HttpResponse>
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    fn into_backend(self) -> StoreError {
        match classify(&self) {
            Some(kind) => StoreError::unavailable(kind, self),
            None => StoreError::backend(self),
        }
    }
}

impl IntoBackend for serde_json::Error {
    fn into_backend(self) -> StoreError {
        StoreError::backend(self)
    }
}

impl IntoBackend for BuildError {
    fn into_backend(self) -> StoreError {
        StoreError::backend(self)
    }
}

/// `e` as a [`StoreError::Backend`], a transient one marked with its class
/// ([`watcher_runtime::store::BackendFailure`]) so that callers answer 503 with the reason.
pub(crate) fn backend(e: impl IntoBackend) -> StoreError {
    e.into_backend()
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
pub(crate) fn landed<T, E>(result: Result<T, SdkError<E, HttpResponse>>) -> Result<bool, StoreError>
where
    E: ConditionFailed + ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    match result {
        Ok(_) => Ok(true),
        Err(e) if e.as_service_error().is_some_and(E::condition_failed) => Ok(false),
        Err(e) => Err(backend(e)),
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_dynamodb::error::ErrorMetadata;
    use aws_sdk_dynamodb::operation::get_item::GetItemError;
    use aws_smithy_runtime_api::client::result::ConnectorError;
    use aws_smithy_runtime_api::http::StatusCode;
    use aws_smithy_types::body::SdkBody;

    use super::*;

    fn service(status: u16, code: &str) -> SdkError<GetItemError, HttpResponse> {
        SdkError::service_error(
            GetItemError::generic(ErrorMetadata::builder().code(code).message("m").build()),
            HttpResponse::new(StatusCode::try_from(status).unwrap(), SdkBody::empty()),
        )
    }

    /// Each way DynamoDB says "not now" becomes a store error of that class (the API's 503
    /// reason and `Retry-After`); one retrying cannot mend stays unclassified.
    #[test]
    fn sdk_errors_are_classified_as_dynamodb_answers_them() {
        let cases: Vec<(SdkError<GetItemError, HttpResponse>, Option<Unavailable>)> = vec![
            (
                service(400, "ProvisionedThroughputExceededException"),
                Some(Unavailable::Throttled),
            ),
            (
                service(400, "ThrottlingException"),
                Some(Unavailable::Throttled),
            ),
            (
                service(400, "RequestLimitExceeded"),
                Some(Unavailable::Throttled),
            ),
            (
                service(500, "InternalServerError"),
                Some(Unavailable::Failed),
            ),
            (
                service(503, "ServiceUnavailable"),
                Some(Unavailable::Failed),
            ),
            (
                SdkError::timeout_error("operation timed out"),
                Some(Unavailable::TimedOut),
            ),
            (
                SdkError::dispatch_failure(ConnectorError::timeout("read timed out".into())),
                Some(Unavailable::TimedOut),
            ),
            (
                SdkError::dispatch_failure(ConnectorError::io("connection reset".into())),
                Some(Unavailable::Unreachable),
            ),
            (
                service(400, "TransactionConflictException"),
                Some(Unavailable::Contended),
            ),
            (service(400, "ValidationException"), None),
            (service(400, "AccessDeniedException"), None),
            (service(400, "ResourceNotFoundException"), None),
        ];
        for (e, want) in cases {
            let text = format!("{e:?}");
            let got = backend(e);
            assert_eq!(got.unavailability(), want, "{text}");
            assert!(matches!(got, StoreError::Backend(_)), "{text}");
        }
    }

    /// [`sdk_failure`] marks each error with its class, or as permanent, and keeps the SDK
    /// error as the source.
    #[test]
    fn sdk_failures_are_transient_of_a_class_or_permanent() {
        use watcher_runtime::store::{is_permanent, unavailability_of};
        let cases = [
            (
                service(400, "ProvisionedThroughputExceededException"),
                Some(Unavailable::Throttled),
            ),
            (
                service(400, "TransactionConflictException"),
                Some(Unavailable::Contended),
            ),
            (
                service(500, "InternalServerError"),
                Some(Unavailable::Failed),
            ),
            (service(400, "AccessDeniedException"), None),
            (service(400, "ResourceNotFoundException"), None),
        ];
        for (e, want) in cases {
            let text = format!("{e:?}");
            let got = sdk_failure(e);
            assert_eq!(unavailability_of(got.as_ref()), want, "{text}");
            assert_eq!(is_permanent(got.as_ref()), want.is_none(), "{text}");
            let sdk = std::error::Error::source(got.as_ref())
                .and_then(|s| s.downcast_ref::<SdkError<GetItemError, HttpResponse>>());
            assert!(sdk.is_some(), "the SDK error is the source: {text}");
        }
    }
}
