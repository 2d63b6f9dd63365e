//! The authority's operations on a definition (learnables-v1 §8-§12): create, teach a lesson,
//! check, show back, activate a version, tombstone; each a pure function of the state and the
//! request.

use super::*;

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
#[allow(
    clippy::too_many_arguments,
    reason = "each argument is a distinct dependency"
)]
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
        expires_at: None,
        expiring: Some(BTreeMap::new()),
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
        expires_at: None,
    };
    Ok(DefinitionState {
        tenant,
        id,
        versions: vec![version],
        active: 1,
        history: vec![created],
        revision: 1,
        reviews: BTreeMap::new(),
    })
}

/// The parts of a lesson resolved against the active version.
pub(crate) struct Resolved<'a> {
    pub(crate) collections: &'a Collections,
    pub(crate) collection: &'a Collection,
    pub(crate) learnable: &'a dyn Learnable,
    pub(crate) at: String,
    pub(crate) absorbed: crate::learnable::Absorbed,
}

pub(crate) fn resolve<'a>(
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
    let current = collection
        .entry(lesson.entry().as_str())
        .map(super::super::collections::Entry::value);
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
/// `reason` = the learnable's own, §10.1); [`AuthorityError::Invalid`] (`field` = `expiresAt`)
/// for an expiry not later than `now`. The state is unchanged in every error case.
///
/// A lesson that changes its entry closes the entry's open review, and one taught with
/// `expiresAt` opens a new one ([`crate::review_changes`], expectations-v1 §16). A lesson that
/// changes nothing changes no review either (§10.2: no new version, nothing recorded).
pub fn teach(
    state: &DefinitionState,
    lesson: &Lesson,
    via: Via,
    now: Timestamp,
    registry: &Registry,
) -> Result<(Option<DefinitionState>, LessonResult), AuthorityError> {
    // `now` before year 1 (never, from a clock) is earlier than every expiry.
    let taught = Instant::from_timestamp(now);
    if let Some(at) = lesson
        .expires_at()
        .filter(|at| taught.is_some_and(|t| *at <= t))
    {
        return Err(AuthorityError::invalid(
            "expiresAt",
            format!("{at} is not later than the time the lesson is taught ({now})"),
        ));
    }
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
    // The entry's value is the lesson's now: its expiry (or none) replaces the one inherited.
    let key = review_key(lesson.collection(), lesson.entry());
    let mut expiring = active.expiring().clone();
    expiring.remove(&key);
    if let Some(expires_at) = lesson.expires_at() {
        expiring.insert(
            key,
            Review {
                collection: lesson.collection().clone(),
                entry: lesson.entry().clone(),
                definition_version: n,
                expires_at,
                taught_by: lesson.taught_by().clone(),
                since_history: None,
            },
        );
    }
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
        expires_at: lesson.expires_at(),
        expiring: Some(expiring.clone()),
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
        expires_at: lesson.expires_at(),
    });
    next.active = n;
    next.reviews = reviews_in_force(&state.reviews, &expiring, None);
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
/// The open reviews follow the values it brings into force (expectations-v1 §16): a review
/// whose expiring value stays in force goes on, one whose entry gets another value is closed,
/// and an expiring value brought back into force (an undo of the lesson that replaced it) is
/// reviewed again: due at its expiry, at once if that has passed ([`crate::review_changes`]).
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
        expires_at: None,
    };
    let mut next = state.next();
    next.history.push(entry);
    next.active = version;
    // The reviews follow the values now in force (expectations-v1 §16): a review goes on while
    // its expiring value stays in force, closes when another value comes into force, and an
    // expiring value brought back into force is reviewed again, from this history line.
    let line = next.history.len() as u64;
    next.reviews = reviews_in_force(&state.reviews, target.expiring(), Some(line));
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
        // Never in force again: its expiring values live on in the versions built from it.
        v.expiring = Some(BTreeMap::new());
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
        expires_at: None,
    });
    Ok(Some(next))
}

/// The open reviews once `expiring` (the active version's expiring values) is in force, after
/// `before` (the open reviews until now): a review of the same value goes on; any other value
/// opens a review beginning at the history line `since` (`None`: with the lesson that taught
/// it).
fn reviews_in_force(
    before: &BTreeMap<String, Review>,
    expiring: &BTreeMap<String, Review>,
    since: Option<u64>,
) -> BTreeMap<String, Review> {
    expiring
        .iter()
        .map(|(key, value)| {
            let review = match before.get(key) {
                Some(open) if open.same_value(value) => open.clone(),
                _ => Review {
                    since_history: since,
                    ..value.clone()
                },
            };
            (key.clone(), review)
        })
        .collect()
}
