//! Lessons whose end is noticed (expectations-v1 §16): a lesson taught with `expiresAt` opens a
//! review of its entry, due then; a later lesson that changes the entry, or an activation that
//! changes its value, closes it. The definition keeps its open reviews (one per entry at most),
//! and [`crate::review_changes`] says what a step opened and closed, for the watcher to raise and
//! satisfy the `lesson.review` expectations.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::names::{DefinitionId, Name, TaughtBy};

/// One entry's open review: the version whose lesson taught it with an expiry, and when.
///
/// Stored form (camelCase): `{ "collection", "entry", "definitionVersion", "expiresAt",
/// "taughtBy" }`, `expiresAt` an RFC 3339 UTC instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// The collection the lesson wrote into.
    pub collection: Name,
    /// The entry the lesson wrote into.
    pub entry: Name,
    /// The version the lesson made.
    pub definition_version: u64,
    /// When the knowledge should be looked at again (UTC).
    pub expires_at: Timestamp,
    /// Who taught it.
    pub taught_by: TaughtBy,
}

impl Review {
    /// The key of its entry in a definition: `{collection}/{entry}`.
    pub fn key(&self) -> String {
        review_key(&self.collection, &self.entry)
    }

    /// The review's subject id: `{definition}/{collection}/{entry}@{definitionVersion}`, unique
    /// in a tenant (a definition id is), e.g. `prealert-triage/customers/northgate@3`.
    pub fn subject_id(&self, definition: &DefinitionId) -> String {
        format!(
            "{}/{}/{}@{}",
            definition.as_str(),
            self.collection.as_str(),
            self.entry.as_str(),
            self.definition_version
        )
    }
}

/// The key of an entry's review in a definition.
pub(crate) fn review_key(collection: &Name, entry: &Name) -> String {
    format!("{}/{}", collection.as_str(), entry.as_str())
}

/// What one step did to a definition's reviews.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReviewChanges {
    /// Reviews the step opened: raise each.
    pub opened: Vec<Review>,
    /// Reviews the step closed (the entry was changed by a person): satisfy each.
    pub closed: Vec<Review>,
}

impl ReviewChanges {
    /// Whether the step opened or closed nothing.
    pub fn is_empty(&self) -> bool {
        self.opened.is_empty() && self.closed.is_empty()
    }
}
