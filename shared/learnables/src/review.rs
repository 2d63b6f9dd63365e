//! Lessons whose end is noticed (expectations-v1 §16): while an entry's value in force came from
//! a lesson taught with `expiresAt`, the entry has one open review, due then. The value in force
//! is the entry's value in the active version, and its expiry is that of the lesson that last
//! changed the entry on the chain of versions the active one was built from (each version keeps
//! its entries' expiring values, [`crate::Version::expiring`]); a lesson, an undo or an
//! activation that brings another value into force closes the review, and one that brings an
//! expiring value into force opens one (a value back in force by an activation is a new review,
//! [`Review::since_history`]). A tombstone changes no review. The definition keeps its open
//! reviews (one per entry at most), and [`crate::review_changes`] says what a step opened and
//! closed, for the watcher to raise and satisfy the `lesson.review` expectations.

use instants::Instant;
use serde::{Deserialize, Serialize};

use crate::names::{DefinitionId, Name, TaughtBy};

/// One entry's open review: the version whose lesson taught the value in force with an expiry,
/// and when; one *period* of that value in force (docs/interpretation.md "Lessons whose end is
/// noticed").
///
/// Stored form (camelCase): `{ "collection", "entry", "definitionVersion", "expiresAt",
/// "taughtBy", "sinceHistory"? }`, `expiresAt` an RFC 3339 UTC instant.
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
    pub expires_at: Instant,
    /// Who taught it.
    pub taught_by: TaughtBy,
    /// The history line (1 = the creation, oldest first) of the activation that brought the
    /// value back into force, when the period began with an undo or an activation rather than
    /// with the lesson: a value back in force is reviewed again, as a new review.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since_history: Option<u64>,
}

impl Review {
    /// The key of its entry in a definition: `{collection}/{entry}`.
    pub fn key(&self) -> String {
        review_key(&self.collection, &self.entry)
    }

    /// The review's subject id: `{definition}/{collection}/{entry}@{definitionVersion}`, unique
    /// in a tenant (a definition id is), e.g. `prealert-triage/customers/northgate@3`; for a
    /// period begun by an activation, `~{sinceHistory}` follows, e.g.
    /// `prealert-triage/customers/northgate@3~7`.
    pub fn subject_id(&self, definition: &DefinitionId) -> String {
        let base = format!(
            "{}/{}/{}@{}",
            definition.as_str(),
            self.collection.as_str(),
            self.entry.as_str(),
            self.definition_version
        );
        match self.since_history {
            Some(line) => format!("{base}~{line}"),
            None => base,
        }
    }

    /// Whether `self` and `other` are the same expiring value: taught into the same entry by
    /// the same version's lesson, with the same expiry (whichever period they belong to).
    pub(crate) fn same_value(&self, other: &Review) -> bool {
        self.collection == other.collection
            && self.entry == other.entry
            && self.definition_version == other.definition_version
            && self.expires_at == other.expires_at
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
