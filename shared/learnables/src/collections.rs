//! A definition's content: named collections of entries, and its content address
//! (contract "Definitions and learnables" and "Rules"; learnables-v1 §5, §6.2, §9).
//!
//! Wire shape of [`Collections`]:
//!
//! ```json
//! { "customers": { "learnable": "marks", "entry": "customer",
//!                  "teaches": "which customer a message belongs to",
//!                  "skills": ["triage_inbound"],
//!                  "entries": { "northgate": { "label": "Northgate Motors Ltd", "value": {} } } } }
//! ```
//!
//! `skills` is optional. An entry's `value` belongs to its learnable: this module checks the
//! structure around it and never reads a key inside it (§9).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::names::{Name, VersionId};
use crate::AuthorityError;

/// A definition's collections, by name. Keys are kept sorted, so serialization is stable.
///
/// Build one with [`Collections::parse`] (structure and every value checked by its learnable)
/// or [`Collections::from_json`] (structure only, e.g. reading back what a store holds).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(transparent)]
pub struct Collections(BTreeMap<Name, Collection>);

/// One collection: which learnable owns it, the descriptor fields that are its own (§6.2
/// `entry`, `teaches`, `skills`), and its entries.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Collection {
    learnable: String,
    entry: String,
    teaches: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    skills: Option<Vec<String>>,
    entries: BTreeMap<Name, Entry>,
}

/// One entry: a label for people and a value for its learnable.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Entry {
    label: String,
    value: Value,
}

const COLLECTION_KEYS: &str = "learnable, entry, teaches, skills, entries";

/// What validates and normalizes entry values by the learnable their collection names: the
/// [`Registry`](crate::Registry). A trait here so that collections need nothing of the
/// learnables that read them.
pub trait ValidatesEntries {
    /// Whether the learnable `learnable` that the collection `collection` names is known.
    ///
    /// # Errors
    /// [`AuthorityError::Refused`] naming the learnables there are (`at` =
    /// `{collection}/learnable`).
    fn knows(&self, learnable: &str, collection: &Name) -> Result<(), AuthorityError>;

    /// `value`, of entry `entry` in the collection `collection` whose learnable is `learnable`,
    /// as the learnable validates and normalizes it.
    ///
    /// # Errors
    /// [`AuthorityError::Refused`] for an unknown learnable (`at` = the collection) or a value
    /// the learnable refused (`at` = `{collection}/{entry}`, the learnable's own reason).
    fn validate_entry(
        &self,
        learnable: &str,
        collection: &Name,
        entry: &Name,
        value: &Value,
    ) -> Result<Value, AuthorityError>;
}

impl Collections {
    /// Parses wire collections and has every entry value validated — and normalized — by the
    /// learnable its collection names (contract: "every value, including those in PUT, is
    /// validated by the learnable").
    ///
    /// # Errors
    /// - [`AuthorityError::Invalid`] for a structural fault, with the JSON path as `field`
    ///   (e.g. `collections.customers.teaches`);
    /// - [`AuthorityError::Refused`] for a learnable the registry does not know, or a value
    ///   its learnable refused (`at` = `customers/northgate`, `reason` = the learnable's).
    pub fn parse(raw: &Value, registry: &dyn ValidatesEntries) -> Result<Self, AuthorityError> {
        Self::from_json(raw)?.validated(registry)
    }

    /// Parses wire collections checking structure only: the shape above, names well-formed,
    /// `entry` nouns unique across collections (show-back keys its report by them, §11). Entry
    /// values are taken as they are; use [`Collections::parse`] for anything a person sent.
    ///
    /// # Errors
    /// [`AuthorityError::Invalid`] with the JSON path of the first fault.
    pub fn from_json(raw: &Value) -> Result<Self, AuthorityError> {
        let obj = as_object(raw, "collections")?;
        let mut out = BTreeMap::new();
        let mut nouns = BTreeSet::new();
        for (key, body) in obj {
            let path = format!("collections.{key}");
            let name = Name::parse(key.as_str()).map_err(|e| reason_at(&path, e))?;
            let collection = Collection::from_json(body, &path)?;
            if !nouns.insert(collection.entry.clone()) {
                return Err(AuthorityError::invalid(
                    format!("{path}.entry"),
                    format!(
                        "another collection already uses the entry noun {:?}; show-back reports by it, so it must be unique",
                        collection.entry
                    ),
                ));
            }
            if out.insert(name, collection).is_some() {
                return Err(same_name(&path));
            }
        }
        Ok(Self(out))
    }

    /// Has every entry value validated and normalized by its learnable (see [`Collections::parse`]).
    ///
    /// # Errors
    /// [`AuthorityError::Refused`] for an unknown learnable or a refused value.
    pub fn validated(self, registry: &dyn ValidatesEntries) -> Result<Self, AuthorityError> {
        let mut out = BTreeMap::new();
        for (name, mut collection) in self.0 {
            registry.knows(&collection.learnable, &name)?;
            for (entry_name, entry) in collection.entries.iter_mut() {
                entry.value = registry.validate_entry(
                    &collection.learnable,
                    &name,
                    entry_name,
                    &entry.value,
                )?;
            }
            out.insert(name, collection);
        }
        Ok(Self(out))
    }

    /// The collection named `name`.
    pub fn get(&self, name: &str) -> Option<&Collection> {
        self.0.get(name)
    }

    /// Every collection, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = (&Name, &Collection)> {
        self.0.iter()
    }

    /// How many collections there are.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The collection names, comma-separated, for messages.
    pub(crate) fn names_for_people(&self) -> String {
        let names: Vec<&str> = self.0.keys().map(Name::as_str).collect();
        if names.is_empty() {
            "none".into()
        } else {
            names.join(", ")
        }
    }

    /// A copy with `entry` of `collection` set to `(label, value)`. Adds the entry if new.
    pub(crate) fn with_entry(
        &self,
        collection: &Name,
        entry: &Name,
        label: String,
        value: Value,
    ) -> Self {
        let mut next = self.clone();
        if let Some(c) = next.0.get_mut(collection) {
            c.entries.insert(entry.clone(), Entry { label, value });
        }
        next
    }
}

impl<'de> Deserialize<'de> for Collections {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = Value::deserialize(deserializer)?;
        Self::from_json(&raw).map_err(serde::de::Error::custom)
    }
}

impl Collection {
    fn from_json(raw: &Value, path: &str) -> Result<Self, AuthorityError> {
        let obj = as_object(raw, path)?;
        for key in obj.keys() {
            match key.as_str() {
                "learnable" | "entry" | "teaches" | "skills" | "entries" => {}
                "how" | "decidedBy" | "lessonFields" => {
                    return Err(AuthorityError::invalid(
                        format!("{path}.{key}"),
                        "comes from the learnable; leave it out",
                    ))
                }
                _ => {
                    return Err(AuthorityError::invalid(
                        format!("{path}.{key}"),
                        format!("unknown field; a collection has {COLLECTION_KEYS}"),
                    ))
                }
            }
        }
        let learnable = required_text(obj, path, "learnable")?;
        let entry = required_text(obj, path, "entry")?;
        let teaches = required_text(obj, path, "teaches")?;
        let skills = match obj.get("skills") {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let mut skills = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item.as_str() {
                        Some(s) if !s.trim().is_empty() => skills.push(s.to_owned()),
                        _ => {
                            return Err(AuthorityError::invalid(
                                format!("{path}.skills[{i}]"),
                                "must be a non-empty skill id",
                            ))
                        }
                    }
                }
                Some(skills)
            }
            Some(_) => {
                return Err(AuthorityError::invalid(
                    format!("{path}.skills"),
                    "must be an array of skill ids",
                ))
            }
        };
        let mut entries = BTreeMap::new();
        if let Some(raw_entries) = obj.get("entries") {
            let entries_path = format!("{path}.entries");
            for (key, body) in as_object(raw_entries, &entries_path)? {
                let entry_path = format!("{entries_path}.{key}");
                let name = Name::parse(key.as_str()).map_err(|e| reason_at(&entry_path, e))?;
                if entries
                    .insert(name, Entry::from_json(body, &entry_path)?)
                    .is_some()
                {
                    return Err(same_name(&entry_path));
                }
            }
        }
        Ok(Self {
            learnable,
            entry,
            teaches,
            skills,
            entries,
        })
    }

    /// The name of the learnable that owns this collection, e.g. `"marks"`.
    pub fn learnable(&self) -> &str {
        &self.learnable
    }

    /// Singular noun for one entry, e.g. `"customer"` (§6.2 `entry`); show-back keys its report
    /// by it.
    pub fn entry_noun(&self) -> &str {
        &self.entry
    }

    /// What a person is deciding (§6.2 `teaches`).
    pub fn teaches(&self) -> &str {
        &self.teaches
    }

    /// Skill ids this collection affects; `None` means all (§6.2 `skills`).
    pub fn skills(&self) -> Option<&[String]> {
        self.skills.as_deref()
    }

    /// Every entry, sorted by name.
    pub fn entries(&self) -> impl Iterator<Item = (&Name, &Entry)> {
        self.entries.iter()
    }

    /// The entry named `name`.
    pub fn entry(&self, name: &str) -> Option<&Entry> {
        self.entries.get(name)
    }

    /// How many entries there are.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// Two members whose names differ only in Unicode form (NFC and NFD `Café`): one name
/// ([`Name`] keeps NFC), so the second would silently replace the first.
fn same_name(path: &str) -> AuthorityError {
    AuthorityError::invalid(
        path,
        "names the same as another member written in another Unicode form (names are compared in NFC); give each name once",
    )
}

impl Entry {
    fn from_json(raw: &Value, path: &str) -> Result<Self, AuthorityError> {
        let obj = as_object(raw, path)?;
        if let Some(key) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "label" | "value"))
        {
            return Err(AuthorityError::invalid(
                format!("{path}.{key}"),
                "unknown field; an entry has label and value",
            ));
        }
        let label = required_text(obj, path, "label")?;
        let value = obj.get("value").cloned().ok_or_else(|| {
            AuthorityError::invalid(
                format!("{path}.value"),
                "is required (its learnable says what it holds)",
            )
        })?;
        Ok(Self { label, value })
    }

    /// The entry's label for people, e.g. `"Northgate Motors Ltd"`.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The entry's value: opaque here, meaningful to its learnable.
    pub fn value(&self) -> &Value {
        &self.value
    }
}

/// The content address of `collections`: `"sha256:"` + lowercase hex SHA-256 of their RFC 8785
/// (JCS) canonical JSON (contract "Rules"). Independent of key order; equal content, equal id.
///
/// # Errors
/// [`AuthorityError::Invalid`] (field `collections`) if the content cannot be canonicalized —
/// not expected for values that came from JSON.
///
/// # Example
/// ```
/// use learnables::{version_id, Collections};
/// let c = Collections::from_json(&serde_json::json!({})).unwrap();
/// // SHA-256 of "{}"
/// assert_eq!(
///     version_id(&c).unwrap().as_str(),
///     "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
/// );
/// ```
pub fn version_id(collections: &Collections) -> Result<VersionId, AuthorityError> {
    let canonical = serde_json_canonicalizer::to_vec(collections).map_err(|e| {
        AuthorityError::invalid("collections", format!("cannot be canonicalized: {e}"))
    })?;
    let digest = Sha256::digest(&canonical);
    let mut hex = String::with_capacity(7 + 64);
    hex.push_str("sha256:");
    for byte in digest {
        hex.push(char::from(HEX[usize::from(byte >> 4)]));
        hex.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    VersionId::parse(hex)
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn as_object<'a>(raw: &'a Value, path: &str) -> Result<&'a Map<String, Value>, AuthorityError> {
    raw.as_object()
        .ok_or_else(|| AuthorityError::invalid(path, "must be a JSON object"))
}

fn required_text(
    obj: &Map<String, Value>,
    path: &str,
    key: &str,
) -> Result<String, AuthorityError> {
    match obj.get(key) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s.clone()),
        Some(Value::String(_)) => Err(AuthorityError::invalid(
            format!("{path}.{key}"),
            "must not be empty",
        )),
        Some(_) => Err(AuthorityError::invalid(
            format!("{path}.{key}"),
            "must be text",
        )),
        None => Err(AuthorityError::invalid(
            format!("{path}.{key}"),
            "is required",
        )),
    }
}

/// Re-homes a name error to the JSON path where the name sits.
fn reason_at(path: &str, err: AuthorityError) -> AuthorityError {
    match err {
        AuthorityError::Invalid { reason, .. } => AuthorityError::invalid(path, reason),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn field_of(r: Result<Collections, AuthorityError>) -> Option<String> {
        match r {
            Err(AuthorityError::Invalid { field, .. }) => Some(field),
            _ => None,
        }
    }

    #[test]
    fn structure_faults_name_their_path() {
        let missing_teaches = json!({ "customers": { "learnable": "marks", "entry": "customer" } });
        assert_eq!(
            field_of(Collections::from_json(&missing_teaches)).as_deref(),
            Some("collections.customers.teaches")
        );
        let how =
            json!({ "c": { "learnable": "marks", "entry": "e", "teaches": "t", "how": "x" } });
        assert_eq!(
            field_of(Collections::from_json(&how)).as_deref(),
            Some("collections.c.how")
        );
        let no_value = json!({ "c": { "learnable": "marks", "entry": "e", "teaches": "t",
            "entries": { "n": { "label": "N" } } } });
        assert_eq!(
            field_of(Collections::from_json(&no_value)).as_deref(),
            Some("collections.c.entries.n.value")
        );
        assert_eq!(
            field_of(Collections::from_json(&json!([]))).as_deref(),
            Some("collections")
        );
    }

    #[test]
    fn a_name_twice_in_two_unicode_forms_is_refused() {
        let entries = json!({ "c": { "learnable": "marks", "entry": "e", "teaches": "t",
            "entries": {
                "Caf\u{E9}": { "label": "one", "value": {} },
                "Cafe\u{301}": { "label": "two", "value": {} }
            } } });
        assert_eq!(
            field_of(Collections::from_json(&entries)).as_deref(),
            Some("collections.c.entries.Cafe\u{301}")
        );
        let collections = json!({
            "Caf\u{E9}": { "learnable": "marks", "entry": "a", "teaches": "t" },
            "Cafe\u{301}": { "learnable": "marks", "entry": "b", "teaches": "t" }
        });
        assert_eq!(
            field_of(Collections::from_json(&collections)).as_deref(),
            Some("collections.Cafe\u{301}")
        );
    }

    #[test]
    fn entry_nouns_must_be_unique() {
        let twice = json!({
            "a": { "learnable": "marks", "entry": "customer", "teaches": "t" },
            "b": { "learnable": "marks", "entry": "customer", "teaches": "t" }
        });
        assert_eq!(
            field_of(Collections::from_json(&twice)).as_deref(),
            Some("collections.b.entry")
        );
    }

    #[test]
    fn entries_default_to_none_and_skills_are_kept() {
        let c = Collections::from_json(&json!({
            "c": { "learnable": "marks", "entry": "e", "teaches": "t", "skills": ["s1"] }
        }));
        let c = c.ok();
        let coll = c.as_ref().and_then(|c| c.get("c"));
        assert_eq!(coll.map(Collection::len), Some(0));
        assert_eq!(
            coll.and_then(Collection::skills),
            Some(&["s1".to_owned()][..])
        );
    }
}
