//! This crate's own errors, and the mapping of SDK errors to [`PortError`]s (SDK errors are kept
//! as sources, never stringified).

use aws_sdk_scheduler::config::http::HttpResponse;
use aws_sdk_scheduler::error::{ProvideErrorMetadata, SdkError};
use watcher_runtime::ports::PortError;

/// A configuration of an adapter that cannot work. Fatal: fix the deployment's settings.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The schedule group name is not 1 to 64 characters of `[0-9a-zA-Z-_.]`. What to do: fix
    /// the group name in the deployment's settings.
    #[error("invalid schedule group name: {0}")]
    GroupName(#[source] crate::names::ScheduleInputError),
    /// An ARN setting is empty or does not start with `arn:`. What to do: set it to the full ARN.
    #[error("{setting} must be a full ARN (arn:...), got {value:?}")]
    Arn {
        /// Which setting (`target_arn`, `role_arn`, `dlq_arn`, `kms_key_arn`).
        setting: &'static str,
        /// What it held.
        value: String,
    },
    /// A retry policy outside Scheduler's bounds (0..=185 attempts, 60..=86400 seconds). What to
    /// do: choose values inside them.
    #[error(
        "retry policy out of bounds: {attempts} attempts (0..=185) and {max_age_secs} s maximum \
         event age (60..=86400)"
    )]
    RetryPolicy {
        /// Retry attempts asked for.
        attempts: i32,
        /// Maximum event age asked for, in seconds.
        max_age_secs: i32,
    },
    /// A schedule lead below zero or above SQS's 900 s delay. What to do: use
    /// [`SCHEDULE_LEAD`](crate::SCHEDULE_LEAD) (60 s).
    #[error("schedule lead {lead:?} is outside 0 to 900 s")]
    Lead {
        /// The lead asked for.
        lead: jiff::SignedDuration,
    },
}

/// A message this crate's functions cannot read: the schedule's target input or the lapse
/// queue's body. Not retryable: the same text fails the same way; send it to the dead-letter
/// queue.
#[derive(Debug, thiserror::Error)]
pub enum MessageError {
    /// Not JSON of the expected shape (a field missing, an id empty or too long).
    #[error("malformed {what}")]
    Malformed {
        /// `timer input` or `lapse queue message`.
        what: &'static str,
        /// The parse failure.
        #[source]
        source: serde_json::Error,
    },
    /// JSON of the right shape with a value the watcher cannot use.
    #[error("invalid {what}: {reason}")]
    Invalid {
        /// `timer input` or `lapse queue message`.
        what: &'static str,
        /// What is wrong, in words.
        reason: String,
    },
}

/// Service error codes after which a later retry can succeed (both services' spellings).
const RETRYABLE_CODES: &[&str] = &[
    "ThrottlingException",
    "Throttling",
    "RequestThrottled",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "ServiceUnavailable",
    "ServiceUnavailableException",
    "InternalServerException",
    "InternalServerError",
    "InternalError",
    "InternalFailure",
    "RequestTimeout",
    "KMS.ThrottlingException",
    // Scheduler: a concurrent change to the same schedule; the next attempt sees the result.
    "ConflictException",
];

/// Whether a retry can help after `e`: throttling, 5xx, timeouts and transport failures yes;
/// validation, permissions, a missing resource and malformed requests no.
pub(crate) fn is_retryable<E: ProvideErrorMetadata>(e: &SdkError<E, HttpResponse>) -> bool {
    match e {
        SdkError::TimeoutError(_) => true,
        SdkError::DispatchFailure(d) => !d.is_user(),
        // A response that could not be read (cut short, garbled by a proxy): a retry may read it.
        SdkError::ResponseError(_) => true,
        SdkError::ServiceError(s) => {
            let status = s.raw().status().as_u16();
            status >= 500
                || status == 429
                || s.err().code().is_some_and(|c| RETRYABLE_CODES.contains(&c))
        }
        // Construction failures (the request could not be built) and anything unknown.
        _ => false,
    }
}

/// `e` as a [`PortError`]: its class from [`is_retryable`], its reason `what` and the service's
/// error code, and `e` itself as the source.
pub(crate) fn port_error<E>(what: String, e: SdkError<E, HttpResponse>) -> PortError
where
    E: ProvideErrorMetadata + std::error::Error + Send + Sync + 'static,
{
    let reason = match e.code() {
        Some(code) => format!("{what} ({code})"),
        None => what,
    };
    let retryable = is_retryable(&e);
    PortError::new(retryable, reason, Some(Box::new(e)))
}

/// A failure of this crate's own checks before any call: never retryable.
pub(crate) fn permanent(
    reason: impl Into<String>,
    e: impl std::error::Error + Send + Sync + 'static,
) -> PortError {
    PortError::Permanent {
        reason: reason.into(),
        source: Some(Box::new(e)),
    }
}

#[cfg(test)]
mod tests {
    use aws_sdk_scheduler::error::ErrorMetadata;
    use aws_sdk_scheduler::operation::delete_schedule::DeleteScheduleError;
    use aws_smithy_runtime_api::client::result::ConnectorError;
    use aws_smithy_runtime_api::http::StatusCode;
    use aws_smithy_types::body::SdkBody;

    use super::*;

    fn service(status: u16, code: Option<&str>) -> SdkError<DeleteScheduleError, HttpResponse> {
        let mut meta = ErrorMetadata::builder().message("from the service");
        if let Some(code) = code {
            meta = meta.code(code);
        }
        SdkError::service_error(
            DeleteScheduleError::generic(meta.build()),
            HttpResponse::new(StatusCode::try_from(status).unwrap(), SdkBody::empty()),
        )
    }

    fn boxed(text: &str) -> Box<dyn std::error::Error + Send + Sync> {
        text.into()
    }

    #[test]
    fn throttling_5xx_timeouts_and_transport_failures_are_retryable() {
        for e in [
            service(400, Some("ThrottlingException")),
            service(429, None),
            service(500, Some("InternalServerException")),
            service(503, None),
            service(409, Some("ConflictException")),
            SdkError::timeout_error(boxed("timed out")),
            SdkError::dispatch_failure(ConnectorError::io(boxed("connection reset"))),
            SdkError::dispatch_failure(ConnectorError::timeout(boxed("connect timeout"))),
        ] {
            assert!(is_retryable(&e), "{e:?}");
        }
    }

    #[test]
    fn validation_permissions_and_bad_requests_are_permanent() {
        for e in [
            service(400, Some("ValidationException")),
            service(403, Some("AccessDeniedException")),
            service(404, Some("ResourceNotFoundException")),
            service(402, Some("ServiceQuotaExceededException")),
            SdkError::construction_failure(boxed("no region")),
            SdkError::dispatch_failure(ConnectorError::user(boxed("bad endpoint"))),
        ] {
            assert!(!is_retryable(&e), "{e:?}");
        }
    }

    #[test]
    fn port_errors_name_the_code_and_keep_the_sdk_error() {
        let e = port_error(
            "delete schedule d-x in group g".into(),
            service(400, Some("ThrottlingException")),
        );
        let PortError::Retryable { reason, source } = &e else {
            panic!("{e:?}");
        };
        assert_eq!(
            reason,
            "delete schedule d-x in group g (ThrottlingException)"
        );
        let source = source.as_deref().expect("source kept");
        assert!(source
            .downcast_ref::<SdkError<DeleteScheduleError, HttpResponse>>()
            .is_some());

        let e = port_error("x".into(), service(400, Some("ValidationException")));
        assert!(matches!(e, PortError::Permanent { .. }), "{e:?}");
    }
}
