//! The authority's typed errors (learnables-v1 §10.1, §10.3, §14; contract "Routes").
//!
//! Every public fallible function of the authority returns [`AuthorityError`]. Each variant maps
//! to exactly one HTTP status (see [`AuthorityError::http_status`]) so the shell can turn it into
//! problem+json without inspecting strings.

/// Why the authority would not do what it was asked.
///
/// | variant | HTTP | meaning |
/// |---|---|---|
/// | [`Refused`](Self::Refused) | 422 | the learnable (or the definition) refused the value; `reason` is the learnable's own words (§10.1) |
/// | [`NotFound`](Self::NotFound) | 404 | no such version (or definition) |
/// | [`Gone`](Self::Gone) | 410 | the version was tombstoned; its content is no longer served (§14) |
/// | [`Conflict`](Self::Conflict) | 409 | the operation contradicts the current state (e.g. tombstoning the active version) |
/// | [`Invalid`](Self::Invalid) | 400 | the request is malformed: a field is missing, has the wrong type, or is out of range |
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthorityError {
    /// A value was refused by the learnable that owns it, or a lesson addressed something the
    /// definition does not have (an unknown collection or learnable). `at` names the place
    /// (e.g. `customers/northgate`, `lesson.collection`); `reason` is the human-readable reason,
    /// authored by the learnable for values (§10.1).
    ///
    /// What to do: show `reason` to the person unchanged (422 problem+json `detail`); they fix
    /// the value and send it again. The active version is unchanged.
    #[error("{at}: {reason}")]
    Refused {
        /// Where the refused value sits, e.g. `customers/northgate` or `lesson.value`.
        at: String,
        /// The learnable's own reason, e.g. `"billing@origin\.example(" is not a usable pattern: unclosed group at position 24`.
        reason: String,
    },
    /// The addressed version does not exist.
    ///
    /// What to do: answer 404; the caller should list versions from the history and pick one.
    #[error("{what} does not exist")]
    NotFound {
        /// What was looked for, e.g. `version 7 of prealert-triage`.
        what: String,
    },
    /// The addressed version was tombstoned; its content is erased and never served again (§14).
    ///
    /// What to do: answer 410; the caller should use the active version instead.
    #[error("{what} was tombstoned and is no longer served")]
    Gone {
        /// What was looked for, e.g. `version 2 of prealert-triage`.
        what: String,
    },
    /// The request contradicts the current state, e.g. tombstoning the active version or
    /// activating a tombstoned one.
    ///
    /// What to do: answer 409; the caller should change the state first (e.g. activate another
    /// version, then tombstone this one).
    #[error("{reason}")]
    Conflict {
        /// Why, in words a person can act on.
        reason: String,
    },
    /// The request is malformed: a required field is missing, a field has the wrong type, or a
    /// name is empty or too long. Never used for a value a learnable judged (that is `Refused`).
    ///
    /// What to do: answer 400; the caller fixes `field` as `reason` says.
    #[error("{field}: {reason}")]
    Invalid {
        /// The JSON path of the offending field, e.g. `collections.customers.entry`.
        field: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl AuthorityError {
    /// The HTTP status this error maps to: 422, 404, 410, 409 or 400 (see the table on the type).
    ///
    /// # Example
    /// ```
    /// use learnables::AuthorityError;
    /// let e = AuthorityError::Gone { what: "version 1".into() };
    /// assert_eq!(e.http_status(), 410);
    /// ```
    pub fn http_status(&self) -> u16 {
        match self {
            Self::Refused { .. } => 422,
            Self::NotFound { .. } => 404,
            Self::Gone { .. } => 410,
            Self::Conflict { .. } => 409,
            Self::Invalid { .. } => 400,
        }
    }

    pub(crate) fn invalid(field: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Invalid {
            field: field.into(),
            reason: reason.into(),
        }
    }

    pub(crate) fn refused(at: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Refused {
            at: at.into(),
            reason: reason.into(),
        }
    }
}
