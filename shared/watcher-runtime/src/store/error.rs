//! How a store fails: [`StoreError`], and the transient classes of a backend failure
//! ([`Unavailable`]) an HTTP answer's reason and `Retry-After` come from.

/// A store failure.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A conditional write lost: something changed since it was loaded. Reload and retry.
    #[error("conflict: {0} changed since it was loaded")]
    Conflict(String),
    /// The backend failed. Retrying may help; the cause says. The cause is in the message and
    /// not also the error's `source`, so a chain printed whole (`{:#}`) says it once.
    #[error("store backend failed: {0}")]
    Backend(Box<dyn std::error::Error + Send + Sync>),
    /// Stored data could not be read back. Not retryable; the record needs attention.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

impl StoreError {
    /// Wraps a backend error.
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        StoreError::Backend(Box::new(e))
    }

    /// Wraps a backend error known to be transient, of class `kind` ([`BackendFailure`]): the
    /// API answers it 503 with `Retry-After` and the reason.
    pub fn unavailable(
        kind: Unavailable,
        e: impl std::error::Error + Send + Sync + 'static,
    ) -> Self {
        StoreError::Backend(Box::new(BackendFailure {
            kind,
            source: Box::new(e),
        }))
    }

    /// Why the store cannot serve the request now, when its backend said ([`BackendFailure`]);
    /// `None` for a conflict, corrupt data, or a backend failure of no known class.
    pub fn unavailability(&self) -> Option<Unavailable> {
        match self {
            StoreError::Backend(e) => unavailability_of(e.as_ref()),
            _ => None,
        }
    }
}

/// Why a dependency could not serve a request now (throttling, a 5xx, a timeout): the class
/// an HTTP answer's reason and `Retry-After` come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unavailable {
    /// The dependency throttled the request (DynamoDB `ProvisionedThroughputExceededException`,
    /// `ThrottlingException`, `RequestLimitExceeded`; a batch's keys left unprocessed after every
    /// retry).
    Throttled,
    /// Other writers kept winning every retry (`TransactionConflict`, a compare-and-set lost
    /// each time).
    Contended,
    /// The dependency answered a server error (HTTP 5xx) or an unreadable response.
    Failed,
    /// The request timed out.
    TimedOut,
    /// The dependency could not be reached (connection refused or reset, DNS).
    Unreachable,
}

impl Unavailable {
    /// Seconds a client should wait before trying again: 1 for throttling and contention
    /// (they pass in moments), 5 for a failing or unreachable dependency.
    pub fn retry_after_secs(self) -> u64 {
        match self {
            Unavailable::Throttled | Unavailable::Contended => 1,
            Unavailable::Failed | Unavailable::TimedOut | Unavailable::Unreachable => 5,
        }
    }

    /// The reason in words, for a problem's `detail`.
    pub fn reason(self) -> &'static str {
        match self {
            Unavailable::Throttled => "the store throttled the request (its throughput is in use)",
            Unavailable::Contended => "other writers kept changing the same records",
            Unavailable::Failed => "the store answered a server error",
            Unavailable::TimedOut => "the store did not answer in time",
            Unavailable::Unreachable => "the store could not be reached",
        }
    }
}

/// A backend failure of a known transient class: the backend's own error (`source`) and why it
/// cannot serve now (`kind`). Displays as its source.
#[derive(Debug)]
pub struct BackendFailure {
    /// The class.
    pub kind: Unavailable,
    /// The backend's error (an SDK error, kept, never stringified).
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl std::fmt::Display for BackendFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.fmt(f)
    }
}

impl std::error::Error for BackendFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

/// A backend failure that retrying cannot mend: the backend refused the request for a reason
/// that is the deployment's to fix (access denied, a missing table, a request it finds invalid),
/// not a moment's. Displays as its source. An HTTP answer for it is 500: no `Retry-After` would
/// be true. A backend failure marked neither this nor [`BackendFailure`] is of no known class.
#[derive(Debug)]
pub struct PermanentFailure {
    /// The backend's error (an SDK error, kept, never stringified).
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

impl std::fmt::Display for PermanentFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.source.fmt(f)
    }
}

impl std::error::Error for PermanentFailure {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(self.source.as_ref())
    }
}

/// Whether `e`'s chain (itself, then its sources) holds a [`PermanentFailure`].
pub fn is_permanent(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(e);
    while let Some(e) = next {
        if e.is::<PermanentFailure>() {
            return true;
        }
        next = e.source();
    }
    false
}

/// The [`Unavailable`] class of the first [`BackendFailure`] in `e`'s chain (itself, then its
/// sources).
pub fn unavailability_of(e: &(dyn std::error::Error + 'static)) -> Option<Unavailable> {
    let mut next = Some(e);
    while let Some(e) = next {
        if let Some(f) = e.downcast_ref::<BackendFailure>() {
            return Some(f.kind);
        }
        next = e.source();
    }
    None
}
