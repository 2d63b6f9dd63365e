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

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::collections::{version_id, Collection, Collections};
use crate::learnable::{DecidedBy, Learnable, LessonField};
use crate::lesson::{Lesson, LessonResult};
use crate::names::{DefinitionId, Reason, TaughtBy, TenantId, VersionId, Via};
use crate::registry::Registry;
use crate::AuthorityError;

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
}

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
    at: Timestamp,
    #[serde(default, skip_serializing_if = "is_false")]
    redacted: bool,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl HistoryEntry {
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
}

impl TryFrom<StateWire> for DefinitionState {
    type Error = AuthorityError;
    fn try_from(w: StateWire) -> Result<Self, Self::Error> {
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
        Ok(Self {
            tenant: w.tenant,
            id: w.id,
            versions: w.versions,
            active: w.active,
            history: w.history,
            revision: w.revision,
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
pub struct CheckReport {
    /// How many corpus inputs the lesson's value, on its own, would match.
    pub matches: usize,
    /// The inputs whose reading would change, in corpus order.
    pub changes: Vec<Change>,
}

/// One input whose winning entry a lesson would change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    /// Index into the corpus.
    pub input: usize,
    /// The entry it reads as now; `None` when unsettled.
    pub from: Option<String>,
    /// The entry it would read as; `None` when it would be unsettled.
    pub to: Option<String>,
}

/// Creates a definition at version 1 (contract `PUT /v1/definitions/{id}`).
///
/// Every entry value is validated and normalized by its learnable first. Version 1's
/// `versionId` is [`version_id`] of the normalized collections; history gets a `created` entry.
///
/// # Errors
/// - [`AuthorityError::Refused`] for an unknown learnable or a refused value (state not made);
/// - [`AuthorityError::Invalid`] if the content cannot be canonicalized.
///
/// Whether the id already exists (409) is the store's check.
#[allow(clippy::too_many_arguments)]
pub fn create(
    tenant: TenantId,
    id: DefinitionId,
    collections: Collections,
    taught_by: TaughtBy,
    via: Via,
    reason: Option<Reason>,
    now: Timestamp,
    registry: &Registry,
) -> Result<DefinitionState, AuthorityError> {
    let collections = collections.validated(registry)?;
    let vid = version_id(&collections)?;
    let describes = if collections.is_empty() {
        "created with no collections".to_owned()
    } else {
        format!("created with {}", collections.names_for_people())
    };
    let version = Version {
        definition_version: 1,
        version_id: vid.clone(),
        previous_version_id: None,
        collections: Some(collections),
        taught_by: taught_by.clone(),
        via: via.clone(),
        reason: reason.clone(),
        describes: Some(describes.clone()),
        at: now,
        tombstoned: None,
    };
    let created = HistoryEntry {
        kind: HistoryKind::Created,
        definition_version: 1,
        version_id: vid,
        previous_version_id: None,
        taught_by,
        via,
        reason,
        describes: Some(describes),
        at: now,
        redacted: false,
    };
    Ok(DefinitionState {
        tenant,
        id,
        versions: vec![version],
        active: 1,
        history: vec![created],
        revision: 1,
    })
}

/// The parts of a lesson resolved against the active version.
struct Resolved<'a> {
    collections: &'a Collections,
    collection: &'a Collection,
    learnable: &'a dyn Learnable,
    at: String,
    absorbed: crate::learnable::Absorbed,
}

fn resolve<'a>(
    state: &'a DefinitionState,
    lesson: &Lesson,
    registry: &'a Registry,
) -> Result<(&'a Version, Resolved<'a>), AuthorityError> {
    let (active, collections) = state.active_content()?;
    let collection = collections
        .get(lesson.collection().as_str())
        .ok_or_else(|| {
            AuthorityError::refused(
                "collection",
                format!(
                    "this definition has no collection named {:?}; it has: {}",
                    lesson.collection().as_str(),
                    collections.names_for_people()
                ),
            )
        })?;
    let learnable = registry.require(collection.learnable(), lesson.collection())?;
    let at = format!("{}/{}", lesson.collection(), lesson.entry());
    let current = collection.entry(lesson.entry().as_str()).map(|e| e.value());
    let absorbed = learnable
        .absorb(current, lesson.value())
        .map_err(|r| r.at(at.clone()))?;
    Ok((
        active,
        Resolved {
            collections,
            collection,
            learnable,
            at,
            absorbed,
        },
    ))
}

impl Resolved<'_> {
    /// The collections with the absorbed value written in (normalized by the learnable), or
    /// `None` when the lesson changes nothing.
    fn proposed(&self, lesson: &Lesson) -> Result<Option<Collections>, AuthorityError> {
        if !self.absorbed.is_changed() {
            return Ok(None);
        }
        let value = self
            .learnable
            .validate_value(self.absorbed.value())
            .map_err(|r| r.at(self.at.clone()))?;
        let existing = self.collection.entry(lesson.entry().as_str());
        let label = existing.map_or_else(
            || {
                self.learnable
                    .label_for_new_entry(lesson.entry().as_str(), lesson.value())
            },
            |e| e.label().to_owned(),
        );
        let next = self
            .collections
            .with_entry(lesson.collection(), lesson.entry(), label, value);
        Ok(if &next == self.collections {
            None
        } else {
            Some(next)
        })
    }
}

/// Absorbs a lesson (§10; contract `POST /v1/definitions/{id}/lessons`).
///
/// The learnable of the lesson's collection absorbs `lesson.value` into the entry (created if
/// new, labelled as the learnable says). If that changes anything, a new version `max + 1` is
/// built from the **active** version's content, with `previousVersionId` = the active
/// version's id, made active, and recorded in history with `taughtBy`, `via`, `reason` and the
/// learnable's `describes` (§10.3). If it changes nothing, the answer is `learned: false` and no
/// state is returned (§10.2).
///
/// Returns `(Some(new_state), result)` when learned, `(None, result)` when not.
///
/// # Errors
/// [`AuthorityError::Refused`] when the collection does not exist (`at` = `collection`), its
/// learnable is unknown, or the learnable refused the value (`at` = `customers/northgate`,
/// `reason` = the learnable's own, §10.1). The state is unchanged in every error case.
pub fn teach(
    state: &DefinitionState,
    lesson: &Lesson,
    via: Via,
    now: Timestamp,
    registry: &Registry,
) -> Result<(Option<DefinitionState>, LessonResult), AuthorityError> {
    let (active, resolved) = resolve(state, lesson, registry)?;
    let describes = resolved.absorbed.describes().to_owned();
    let Some(collections) = resolved.proposed(lesson)? else {
        return Ok((
            None,
            LessonResult {
                learned: false,
                describes,
                definition_version: active.definition_version,
                version_id: Some(active.version_id.clone()),
                previous_version_id: None,
            },
        ));
    };
    let vid = version_id(&collections)?;
    let n = state.latest_version() + 1;
    let previous = active.version_id.clone();
    let mut next = state.next();
    next.versions.push(Version {
        definition_version: n,
        version_id: vid.clone(),
        previous_version_id: Some(previous.clone()),
        collections: Some(collections),
        taught_by: lesson.taught_by().clone(),
        via: via.clone(),
        reason: lesson.reason().cloned(),
        describes: Some(describes.clone()),
        at: now,
        tombstoned: None,
    });
    next.history.push(HistoryEntry {
        kind: HistoryKind::Lesson,
        definition_version: n,
        version_id: vid.clone(),
        previous_version_id: Some(previous.clone()),
        taught_by: lesson.taught_by().clone(),
        via,
        reason: lesson.reason().cloned(),
        describes: Some(describes.clone()),
        at: now,
        redacted: false,
    });
    next.active = n;
    Ok((
        Some(next),
        LessonResult {
            learned: true,
            describes,
            definition_version: n,
            version_id: Some(vid),
            previous_version_id: Some(previous),
        },
    ))
}

/// Evaluates a proposed lesson against a corpus without writing anything (§13.1; contract
/// `POST /v1/definitions/{id}/lessons:check`).
///
/// `matches` counts the inputs that the lesson's value, absorbed into an empty entry, would
/// match. `changes` lists the inputs whose winning entry under the lesson's collection differs
/// between the active version and the active version with the lesson absorbed (`from`/`to` are
/// `None` for an unsettled reading).
///
/// # Errors
/// - as [`teach`] for the lesson ([`AuthorityError::Refused`]);
/// - [`AuthorityError::Invalid`] (field `corpus` or `corpus[i]`) for more than [`MAX_CORPUS`]
///   inputs, or an input the learnable cannot read.
pub fn check(
    state: &DefinitionState,
    lesson: &Lesson,
    corpus: &[Value],
    registry: &Registry,
) -> Result<CheckReport, AuthorityError> {
    if corpus.len() > MAX_CORPUS {
        return Err(AuthorityError::invalid(
            "corpus",
            format!("at most {MAX_CORPUS} inputs per check"),
        ));
    }
    let (_, resolved) = resolve(state, lesson, registry)?;
    let proposed_all = resolved.proposed(lesson)?;
    let proposed = match &proposed_all {
        Some(all) => all
            .get(lesson.collection().as_str())
            .unwrap_or(resolved.collection),
        None => resolved.collection,
    };
    let alone = resolved
        .learnable
        .absorb(None, lesson.value())
        .map_err(|r| r.at(resolved.at.clone()))?;
    let settings = registry.settings();
    let mut report = CheckReport {
        matches: 0,
        changes: Vec::new(),
    };
    for (i, input) in corpus.iter().enumerate() {
        let field = || format!("corpus[{i}]");
        if !input.is_object() {
            return Err(AuthorityError::invalid(field(), "must be a JSON object"));
        }
        let unreadable = |r: crate::Refusal| AuthorityError::invalid(field(), r.reason());
        if resolved
            .learnable
            .matches(alone.value(), input)
            .map_err(unreadable)?
        {
            report.matches += 1;
        }
        let before = resolved
            .learnable
            .read(resolved.collection, input, settings)
            .map_err(unreadable)?;
        let after = resolved
            .learnable
            .read(proposed, input, settings)
            .map_err(unreadable)?;
        if before.winner() != after.winner() {
            report.changes.push(Change {
                input: i,
                from: before.winner().map(str::to_owned),
                to: after.winner().map(str::to_owned),
            });
        }
    }
    Ok(report)
}

/// Reads `input` under a version — the active one unless `version` is given — and reports, for
/// every collection, what its learnable makes of it (§11; contract `POST .../show-back`).
///
/// Returns a JSON object keyed by each collection's `entry` noun:
/// `{ "customer": { "settled", "winner"?, "reads", "candidates": [...] } }`.
///
/// # Errors
/// - [`AuthorityError::NotFound`] / [`AuthorityError::Gone`] for a missing / tombstoned `version`;
/// - [`AuthorityError::Invalid`] (field `input`) when `input` is not an object or a learnable
///   cannot read it (the learnable's reason);
/// - [`AuthorityError::Refused`] for a collection whose learnable is not registered.
pub fn show_back(
    state: &DefinitionState,
    input: &Value,
    version: Option<u64>,
    registry: &Registry,
) -> Result<Value, AuthorityError> {
    let (_, collections) = state.content(version.unwrap_or(state.active))?;
    if !input.is_object() {
        return Err(AuthorityError::invalid("input", "must be a JSON object"));
    }
    let mut report = Map::new();
    for (name, collection) in collections.iter() {
        let learnable = registry.require(collection.learnable(), name)?;
        let reading = learnable
            .show_back(collection, input, registry.settings())
            .map_err(|r| AuthorityError::invalid("input", r.reason()))?;
        report.insert(collection.entry_noun().to_owned(), reading);
    }
    Ok(Value::Object(report))
}

/// Makes an existing version active again — undo, or redo (§10.3; contract
/// `POST .../activate`). Creates no version; records an `activation` history entry whose
/// `previousVersionId` is the version it replaced.
///
/// Returns `None` when `version` is already active (nothing recorded).
///
/// # Errors
/// [`AuthorityError::NotFound`] for a version that does not exist; [`AuthorityError::Gone`] for
/// a tombstoned one.
pub fn activate(
    state: &DefinitionState,
    version: u64,
    taught_by: TaughtBy,
    via: Via,
    reason: Option<Reason>,
    now: Timestamp,
) -> Result<Option<DefinitionState>, AuthorityError> {
    let (target, _) = state.content(version)?;
    if version == state.active {
        return Ok(None);
    }
    let (replaced, _) = state.active_content()?;
    let describes = format!(
        "made version {version} active in place of version {}",
        state.active
    );
    let entry = HistoryEntry {
        kind: HistoryKind::Activation,
        definition_version: version,
        version_id: target.version_id.clone(),
        previous_version_id: Some(replaced.version_id.clone()),
        taught_by,
        via,
        reason,
        describes: Some(describes),
        at: now,
        redacted: false,
    };
    let mut next = state.next();
    next.history.push(entry);
    next.active = version;
    Ok(Some(next))
}

/// Tombstones a version (§14; contract `POST .../versions/{n}/tombstone`): its content is erased
/// and never served again, its own `reason` and `describes` are erased, and every earlier
/// history entry about it keeps `taughtBy`, `via` and `at` with `reason` and `describes`
/// redacted. A `tombstone` history entry records who did it and why.
///
/// Returns `None` when the version is already tombstoned.
///
/// # Errors
/// [`AuthorityError::NotFound`] for a version that does not exist; [`AuthorityError::Conflict`]
/// for the active version (activate another first).
pub fn tombstone(
    state: &DefinitionState,
    version: u64,
    taught_by: TaughtBy,
    via: Via,
    reason: Option<Reason>,
    now: Timestamp,
) -> Result<Option<DefinitionState>, AuthorityError> {
    let target = state
        .version(version)
        .ok_or_else(|| AuthorityError::NotFound {
            what: state.what(version),
        })?;
    if target.tombstoned.is_some() {
        return Ok(None);
    }
    if version == state.active {
        return Err(AuthorityError::Conflict {
            reason: format!(
                "version {version} is active; activate another version first, then tombstone this one"
            ),
        });
    }
    let vid = target.version_id.clone();
    let mut next = state.next();
    for v in next
        .versions
        .iter_mut()
        .filter(|v| v.definition_version == version)
    {
        v.collections = None;
        v.reason = None;
        v.describes = None;
        v.tombstoned = Some(Tombstone {
            at: now,
            taught_by: taught_by.clone(),
            via: via.clone(),
            reason: reason.clone(),
        });
    }
    for h in next
        .history
        .iter_mut()
        .filter(|h| h.definition_version == version)
    {
        h.reason = None;
        h.describes = None;
        h.redacted = true;
    }
    next.history.push(HistoryEntry {
        kind: HistoryKind::Tombstone,
        definition_version: version,
        version_id: vid,
        previous_version_id: None,
        taught_by,
        via,
        reason,
        describes: Some(format!(
            "tombstoned version {version}; its content is no longer served"
        )),
        at: now,
        redacted: false,
    });
    Ok(Some(next))
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
