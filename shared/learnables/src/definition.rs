//! Definitions, their immutable versions, and the pure operations on them (learnables-v1 §10.2,
//! §10.3, §10.4, §11, §13.1, §13.4, §14; contract "Routes" and "Rules").
//!
//! A [`DefinitionState`] is plain data a store persists whole. Every operation takes the state
//! (and `now` where it records something) and returns a new state or an answer: none reads a
//! clock or a store. A store writes the new state with compare-and-set on
//! [`DefinitionState::revision`]; a writer that loses the race re-runs the operation on the
//! state that won, so no update is lost (contract "Rules": two writers racing).
//!
//! Nothing here reads a key inside an entry value: values go to the learnable that owns them.

use instants::Instant;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::collections::{version_id, Collection, Collections};
use crate::learnable::{DecidedBy, Learnable, LessonField};
use crate::lesson::{Lesson, LessonResult};
use crate::names::{DefinitionId, Name, Reason, TaughtBy, TenantId, VersionId, Via};
use crate::registry::Registry;
use crate::review::{review_key, Review, ReviewChanges};
use crate::AuthorityError;
use std::collections::BTreeMap;

mod operations;

pub use operations::*;

/// The most inputs one [`check`] evaluates.
pub const MAX_CORPUS: usize = 10_000;

/// One immutable version of a definition (§10.3).
///
/// Wire shape (camelCase): `{ "definitionVersion", "versionId", "previousVersionId", "collections",
/// "taughtBy", "via", "reason", "describes", "at", "tombstoned" }`. Once tombstoned (§14),
/// `collections`, `reason` and `describes` are erased (null) and `tombstoned` records who did it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    definition_version: u64,
    version_id: VersionId,
    previous_version_id: Option<VersionId>,
    collections: Option<Collections>,
    taught_by: TaughtBy,
    via: Via,
    reason: Option<Reason>,
    describes: Option<String>,
    at: Timestamp,
    tombstoned: Option<Tombstone>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<Instant>,
    /// The expiring values in force in this version, by `{collection}/{entry}`: for each entry
    /// whose value came from a lesson taught with `expiresAt`, that lesson's version, expiry and
    /// teacher (as a [`Review`] with no `sinceHistory`). Inherited by the versions built from
    /// it, so it survives a tombstone of the version that taught it. `None` only in a state
    /// stored before it was kept (filled in when read, [`DefinitionState`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expiring: Option<BTreeMap<String, Review>>,
}

/// No expiring values.
static NONE_EXPIRING: BTreeMap<String, Review> = BTreeMap::new();

impl Version {
    /// The version number: 1, 2, ...
    pub fn definition_version(&self) -> u64 {
        self.definition_version
    }

    /// The content address.
    pub fn version_id(&self) -> &VersionId {
        &self.version_id
    }

    /// The content address of the version it was built from (the active one at the time).
    pub fn previous_version_id(&self) -> Option<&VersionId> {
        self.previous_version_id.as_ref()
    }

    /// The content; `None` once tombstoned.
    pub fn collections(&self) -> Option<&Collections> {
        self.collections.as_ref()
    }

    /// Who taught the lesson (or created the definition) that made this version.
    pub fn taught_by(&self) -> &TaughtBy {
        &self.taught_by
    }

    /// The credential it came through.
    pub fn via(&self) -> &Via {
        &self.via
    }

    /// Why; `None` if not given or once tombstoned.
    pub fn reason(&self) -> Option<&Reason> {
        self.reason.as_ref()
    }

    /// What was learned, phrased by the learnable; `None` once tombstoned.
    pub fn describes(&self) -> Option<&str> {
        self.describes.as_deref()
    }

    /// When it was made.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// The tombstone, if it has one.
    pub fn tombstoned(&self) -> Option<&Tombstone> {
        self.tombstoned.as_ref()
    }

    /// When the lesson that made this version should be looked at again, if it was taught
    /// with `expiresAt` (UTC; expectations-v1 §16).
    pub fn expires_at(&self) -> Option<Instant> {
        self.expires_at
    }

    /// The expiring values in force in this version, by `{collection}/{entry}` (see the field);
    /// empty once the version is tombstoned.
    pub fn expiring(&self) -> &BTreeMap<String, Review> {
        self.expiring.as_ref().unwrap_or(&NONE_EXPIRING)
    }
}

/// Who tombstoned a version, when, through which credential, and why (§14).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tombstone {
    /// When.
    pub at: Timestamp,
    /// Who.
    pub taught_by: TaughtBy,
    /// Through which credential.
    pub via: Via,
    /// Why.
    pub reason: Option<Reason>,
}

/// What a history entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum HistoryKind {
    /// The definition was created (version 1).
    Created,
    /// A lesson made a new version.
    Lesson,
    /// An existing version was made active (undo or redo, §10.3).
    Activation,
    /// A version was tombstoned (§14).
    Tombstone,
}

/// One line of a definition's activation history (§10.3, §13.4; contract `GET .../history`).
///
/// Wire shape: `{ "kind", "definitionVersion", "versionId", "previousVersionId", "taughtBy", "via",
/// "reason", "describes", "at", "redacted"? }`; absent values are `null`. `versionId` is the
/// version this entry is about; `previousVersionId` what was active before (for `created` and
/// `tombstone`, null). Entries about a tombstoned version keep `taughtBy`, `via` and `at`, with
/// `reason` and `describes` set to null and `"redacted": true`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct HistoryEntry {
    kind: HistoryKind,
    definition_version: u64,
    version_id: VersionId,
    previous_version_id: Option<VersionId>,
    taught_by: TaughtBy,
    via: Via,
    reason: Option<Reason>,
    describes: Option<String>,
    #[cfg_attr(feature = "schema", schemars(with = "String"))]
    at: Timestamp,
    #[serde(default, skip_serializing_if = "is_false")]
    redacted: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    expires_at: Option<Instant>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl HistoryEntry {
    /// For a lesson taught with `expiresAt`: when it should be looked at again (UTC).
    pub fn expires_at(&self) -> Option<Instant> {
        self.expires_at
    }

    /// What happened.
    pub fn kind(&self) -> HistoryKind {
        self.kind
    }

    /// The version it is about.
    pub fn definition_version(&self) -> u64 {
        self.definition_version
    }

    /// That version's content address.
    pub fn version_id(&self) -> &VersionId {
        &self.version_id
    }

    /// What was active before (lessons, activations).
    pub fn previous_version_id(&self) -> Option<&VersionId> {
        self.previous_version_id.as_ref()
    }

    /// Who.
    pub fn taught_by(&self) -> &TaughtBy {
        &self.taught_by
    }

    /// Through which credential.
    pub fn via(&self) -> &Via {
        &self.via
    }

    /// Why; `None` if not given or redacted.
    pub fn reason(&self) -> Option<&Reason> {
        self.reason.as_ref()
    }

    /// What it did; `None` if redacted.
    pub fn describes(&self) -> Option<&str> {
        self.describes.as_deref()
    }

    /// When.
    pub fn at(&self) -> Timestamp {
        self.at
    }

    /// Whether `reason` and `describes` were erased by a tombstone (§14).
    pub fn is_redacted(&self) -> bool {
        self.redacted
    }
}

/// A definition: one tenant's versioned, addressable unit of agent knowledge (§5), as a store
/// keeps it.
///
/// Wire shape (camelCase): `{ "tenant", "id", "versions": [Version], "active", "history":
/// [HistoryEntry] (oldest first), "revision" }`. Deserializing checks the invariants (versions
/// numbered 1..n, the active version exists and is not tombstoned, content present exactly
/// when not tombstoned), so a state read back from a store is as trustworthy as one built here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "StateWire")]
pub struct DefinitionState {
    tenant: TenantId,
    id: DefinitionId,
    versions: Vec<Version>,
    active: u64,
    history: Vec<HistoryEntry>,
    revision: u64,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    reviews: BTreeMap<String, Review>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StateWire {
    tenant: TenantId,
    id: DefinitionId,
    versions: Vec<Version>,
    active: u64,
    history: Vec<HistoryEntry>,
    revision: u64,
    #[serde(default)]
    reviews: BTreeMap<String, Review>,
}

impl TryFrom<StateWire> for DefinitionState {
    type Error = AuthorityError;
    fn try_from(mut w: StateWire) -> Result<Self, Self::Error> {
        let bad = |reason: String| AuthorityError::invalid("state", reason);
        if w.versions.is_empty() {
            return Err(bad("a definition has at least one version".into()));
        }
        for (i, v) in w.versions.iter().enumerate() {
            if v.definition_version != i as u64 + 1 {
                return Err(bad(format!(
                    "versions must be numbered 1, 2, ...; found {} at position {}",
                    v.definition_version,
                    i + 1
                )));
            }
            if v.tombstoned.is_some() == v.collections.is_some() {
                return Err(bad(format!(
                    "version {} must hold content exactly when it is not tombstoned",
                    v.definition_version
                )));
            }
        }
        let active_ok = w
            .versions
            .get(
                usize::try_from(w.active)
                    .unwrap_or(usize::MAX)
                    .wrapping_sub(1),
            )
            .is_some_and(|v| v.tombstoned.is_none());
        if !active_ok {
            return Err(bad(format!(
                "the active version {} must exist and not be tombstoned",
                w.active
            )));
        }
        if w.revision == 0 {
            return Err(bad("revision starts at 1".into()));
        }
        // A state stored before versions kept their expiring values: the active version's are
        // its open reviews; an older version's are unknown, and taken as none.
        for v in &mut w.versions {
            if v.expiring.is_none() {
                let open = (v.definition_version == w.active).then(|| {
                    w.reviews
                        .iter()
                        .map(|(k, r)| {
                            let value = Review {
                                since_history: None,
                                ..r.clone()
                            };
                            (k.clone(), value)
                        })
                        .collect()
                });
                v.expiring = Some(open.unwrap_or_default());
            }
        }
        Ok(Self {
            tenant: w.tenant,
            id: w.id,
            versions: w.versions,
            active: w.active,
            history: w.history,
            revision: w.revision,
            reviews: w.reviews,
        })
    }
}

impl DefinitionState {
    /// The tenant it belongs to (§13.2). The shell checks every credential against it.
    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// The definition's id.
    pub fn id(&self) -> &DefinitionId {
        &self.id
    }

    /// The open reviews (expectations-v1 §16), by `{collection}/{entry}`: at most one per
    /// entry, for each entry whose value in force came from a lesson taught with `expiresAt`
    /// (the active version's [`Version::expiring`]), one review per period in force.
    pub fn reviews(&self) -> &BTreeMap<String, Review> {
        &self.reviews
    }

    /// The open review of entry `entry` of collection `collection`, if it has one.
    pub fn review_of(&self, collection: &Name, entry: &Name) -> Option<&Review> {
        self.reviews.get(&review_key(collection, entry))
    }

    /// Every version, oldest first (tombstoned ones included, without content).
    pub fn versions(&self) -> &[Version] {
        &self.versions
    }

    /// The active version's number.
    pub fn active_version(&self) -> u64 {
        self.active
    }

    /// The highest version number.
    pub fn latest_version(&self) -> u64 {
        self.versions.len() as u64
    }

    /// A counter bumped by every change, for compare-and-set: write the new state only if the
    /// stored one still has the revision the operation started from.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    /// Version `n`, whatever its state.
    pub fn version(&self, n: u64) -> Option<&Version> {
        let index = usize::try_from(n).ok()?.checked_sub(1)?;
        self.versions.get(index)
    }

    fn what(&self, n: u64) -> String {
        format!("version {n} of {}", self.id)
    }

    /// The content of version `n`, or why it cannot be had.
    fn content(&self, n: u64) -> Result<(&Version, &Collections), AuthorityError> {
        let version = self
            .version(n)
            .ok_or_else(|| AuthorityError::NotFound { what: self.what(n) })?;
        match &version.collections {
            Some(c) if version.tombstoned.is_none() => Ok((version, c)),
            _ => Err(AuthorityError::Gone { what: self.what(n) }),
        }
    }

    fn active_content(&self) -> Result<(&Version, &Collections), AuthorityError> {
        self.content(self.active)
    }

    /// A copy with `revision` bumped, ready for the caller's changes.
    fn next(&self) -> Self {
        let mut next = self.clone();
        next.revision = self.revision.saturating_add(1);
        next
    }
}

/// A version as served: `{ "definitionVersion", "versionId", "collections" }` (contract
/// `GET /v1/definitions/{id}` and `.../versions/{n}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ServedVersion {
    /// The version number.
    pub definition_version: u64,
    /// Its content address.
    pub version_id: VersionId,
    /// Its content.
    pub collections: Collections,
}

/// A Learnable Descriptor (§6.2), ready to publish in an Agent Card's `params.learnables`.
///
/// Wire shape: `{ "collection", "entry", "skills"?, "teaches", "how", "decidedBy", "lessonFields" }`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct LearnableDescriptor {
    /// The collection's name.
    pub collection: String,
    /// Singular noun for one entry.
    pub entry: String,
    /// Skill ids affected; absent means all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
    /// What a person is deciding.
    pub teaches: String,
    /// How the agent decides today, from the learnable.
    pub how: String,
    /// From the learnable.
    pub decided_by: DecidedBy,
    /// From the learnable.
    pub lesson_fields: Vec<LessonField>,
}

/// What a proposed lesson would do to a corpus (§13.1; contract `POST .../lessons:check`).
///
/// Wire shape: `{ "matches": n, "changes": [{ "input": i, "from": entry|null, "to": entry|null }] }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CheckReport {
    /// How many corpus inputs the lesson's value, on its own, would match.
    pub matches: usize,
    /// The inputs whose reading would change, in corpus order.
    pub changes: Vec<Change>,
}

/// One input whose winning entry a lesson would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Change {
    /// Index into the corpus.
    pub input: usize,
    /// The entry it reads as now; `None` when unsettled.
    pub from: Option<String>,
    /// The entry it would read as; `None` when it would be unsettled.
    pub to: Option<String>,
}

/// Version `n` as served (contract `GET .../versions/{n}`): the same content every time
/// (pinning, §10.3).
///
/// # Errors
/// [`AuthorityError::NotFound`] if there is no version `n`; [`AuthorityError::Gone`] once it is
/// tombstoned.
pub fn get_version(state: &DefinitionState, n: u64) -> Result<ServedVersion, AuthorityError> {
    let (version, collections) = state.content(n)?;
    Ok(ServedVersion {
        definition_version: version.definition_version,
        version_id: version.version_id.clone(),
        collections: collections.clone(),
    })
}

/// The active version as served (contract `GET /v1/definitions/{id}`).
///
/// # Errors
/// None for a state built or deserialized by this crate (the active version always has
/// content); [`AuthorityError::Gone`] otherwise.
pub fn active(state: &DefinitionState) -> Result<ServedVersion, AuthorityError> {
    get_version(state, state.active)
}

/// The history, newest first (contract `GET .../history`): every creation, lesson, activation
/// and tombstone, each with `definitionVersion`, `versionId`, `previousVersionId`, `taughtBy`,
/// `via`, `reason`, `describes`, `at` and `kind`.
pub fn history(state: &DefinitionState) -> Vec<HistoryEntry> {
    state.history.iter().rev().cloned().collect()
}

/// The active version's Learnable Descriptors (§6.2), one per collection, in collection-name
/// order: the collection's own `entry`, `teaches` and `skills`, and the learnable's `how`,
/// `decidedBy` and `lessonFields` (contract `GET .../descriptors`).
///
/// # Errors
/// [`AuthorityError::Refused`] for a collection whose learnable is not registered.
pub fn descriptors(
    state: &DefinitionState,
    registry: &Registry,
) -> Result<Vec<LearnableDescriptor>, AuthorityError> {
    let (_, collections) = state.active_content()?;
    collections
        .iter()
        .map(|(name, c)| {
            let learnable = registry.require(c.learnable(), name)?;
            Ok(LearnableDescriptor {
                collection: name.as_str().to_owned(),
                entry: c.entry_noun().to_owned(),
                skills: c.skills().map(<[String]>::to_vec),
                teaches: c.teaches().to_owned(),
                how: learnable.how().to_owned(),
                decided_by: learnable.decided_by(),
                lesson_fields: learnable.lesson_fields(),
            })
        })
        .collect()
}

/// What changed between a definition's reviews `before` a step and `after` it: a review in
/// `before` that `after` no longer holds (or holds for a later version) was closed; one in
/// `after` that `before` did not hold was opened. Costs the open reviews of the two states,
/// one per entry at most.
pub fn review_changes(before: &DefinitionState, after: &DefinitionState) -> ReviewChanges {
    let mut changes = ReviewChanges::default();
    for (key, review) in before.reviews() {
        if after.reviews().get(key) != Some(review) {
            changes.closed.push(review.clone());
        }
    }
    for (key, review) in after.reviews() {
        if before.reviews().get(key) != Some(review) {
            changes.opened.push(review.clone());
        }
    }
    changes
}
