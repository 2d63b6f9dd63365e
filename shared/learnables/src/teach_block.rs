//! Agent-side helpers: the teach block attached to an `input-required` question, and
//! suggestions no wider than their evidence (learnables-v1 §8, §13.1).
//!
//! These are for agent authors; the authority does not use them.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::learnable::LessonField;

/// This extension's URI; keys the teach block in a Message's `metadata` (§8) and appears in
/// the `A2A-Extensions` header (§7).
pub const EXTENSION_URI: &str = "https://rsaxb.com/a2a/learnables/v1";

/// Why a teach block or a suggestion could not be made (§8).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TeachBlockError {
    /// The collection name is empty.
    ///
    /// What to do: name a collection declared on the card.
    #[error("a teach block must name a collection")]
    EmptyCollection,
    /// `suggested` is not a JSON object.
    ///
    /// What to do: pass an object keyed by lesson field names.
    #[error("`suggested` must be an object keyed by lesson field names")]
    SuggestedNotObject,
    /// A `suggested` key is not one of the learnable's lesson field names (§8 MUST).
    ///
    /// What to do: drop the key, or use one of `allowed`.
    #[error("suggested key {key:?} is not a lesson field; the fields are: {}", allowed.join(", "))]
    UnknownSuggestedKey {
        /// The offending key.
        key: String,
        /// The lesson field names.
        allowed: Vec<String>,
    },
    /// A suggested value for a `choice` field is not one of its choices (§6.3).
    ///
    /// What to do: suggest one of `choices`.
    #[error("suggested {field:?} = {value:?} is not one of: {}", choices.join(", "))]
    NotAChoice {
        /// The field.
        field: String,
        /// The suggested value.
        value: String,
        /// Its permitted values.
        choices: Vec<String>,
    },
    /// The reference or text to suggest a pattern for is empty.
    ///
    /// What to do: make no suggestion; let the person type one.
    #[error("there is nothing to suggest a pattern for")]
    EmptyEvidence,
}

/// A teach block (§8), carried in an `input-required` question's `metadata` under
/// [`EXTENSION_URI`] as `{ "teach": TeachBlock }`.
///
/// Wire shape: `{ "collection", "entries": [text], "suggested"?: {...}, "suggestionLabel"?: text,
/// "lessonFields"?: [LessonField] }`. Build with [`TeachBlock::builder`]; deserializing checks
/// that `suggested` keys are lesson field names when `lessonFields` is present.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "TeachBlockWire")]
pub struct TeachBlock {
    collection: String,
    entries: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    suggested: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    suggestion_label: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lesson_fields: Option<Vec<LessonField>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct TeachBlockWire {
    collection: String,
    entries: Vec<String>,
    #[serde(default)]
    suggested: Option<Map<String, Value>>,
    #[serde(default)]
    suggestion_label: Option<String>,
    #[serde(default)]
    lesson_fields: Option<Vec<LessonField>>,
}

impl TryFrom<TeachBlockWire> for TeachBlock {
    type Error = TeachBlockError;
    fn try_from(w: TeachBlockWire) -> Result<Self, Self::Error> {
        if w.collection.trim().is_empty() {
            return Err(TeachBlockError::EmptyCollection);
        }
        if let (Some(suggested), Some(fields)) = (&w.suggested, &w.lesson_fields) {
            check_suggested(suggested, fields)?;
        }
        Ok(Self {
            collection: w.collection,
            entries: w.entries,
            suggested: w.suggested,
            suggestion_label: w.suggestion_label,
            lesson_fields: w.lesson_fields,
        })
    }
}

fn check_suggested(
    suggested: &Map<String, Value>,
    fields: &[LessonField],
) -> Result<(), TeachBlockError> {
    for (key, value) in suggested {
        let Some(field) = fields.iter().find(|f| f.name() == key) else {
            return Err(TeachBlockError::UnknownSuggestedKey {
                key: key.clone(),
                allowed: fields.iter().map(|f| f.name().to_owned()).collect(),
            });
        };
        if let (Some(choices), Some(v)) = (field.choices(), value.as_str()) {
            if !choices.iter().any(|c| c == v) {
                return Err(TeachBlockError::NotAChoice {
                    field: key.clone(),
                    value: v.to_owned(),
                    choices: choices.to_vec(),
                });
            }
        }
    }
    Ok(())
}

impl TeachBlock {
    /// Starts a teach block for `collection`, whose learnable declares `lesson_fields` (from
    /// [`crate::Learnable::lesson_fields`] or the card). The fields are repeated in the block
    /// unless [`TeachBlockBuilder::repeat_lesson_fields`] says otherwise.
    pub fn builder(
        collection: impl Into<String>,
        lesson_fields: Vec<LessonField>,
    ) -> TeachBlockBuilder {
        TeachBlockBuilder {
            collection: collection.into(),
            lesson_fields,
            entries: Vec::new(),
            suggested: None,
            suggestion_label: None,
            repeat_lesson_fields: true,
        }
    }

    /// The collection.
    pub fn collection(&self) -> &str {
        &self.collection
    }

    /// The entries a lesson could be written into.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// The prefill, if any.
    pub fn suggested(&self) -> Option<&Map<String, Value>> {
        self.suggested.as_ref()
    }

    /// Where the suggestion came from, in a person's words.
    pub fn suggestion_label(&self) -> Option<&str> {
        self.suggestion_label.as_deref()
    }

    /// The repeated lesson fields, if included.
    pub fn lesson_fields(&self) -> Option<&[LessonField]> {
        self.lesson_fields.as_deref()
    }

    /// The Message `metadata` object carrying this block: `{ EXTENSION_URI: { "teach": block } }`.
    pub fn to_metadata(&self) -> Value {
        let block = serde_json::to_value(self).unwrap_or(Value::Null);
        let mut teach = Map::new();
        teach.insert("teach".into(), block);
        let mut metadata = Map::new();
        metadata.insert(EXTENSION_URI.into(), Value::Object(teach));
        Value::Object(metadata)
    }
}

/// Builds a [`TeachBlock`]; see [`TeachBlock::builder`].
#[derive(Debug, Clone)]
pub struct TeachBlockBuilder {
    collection: String,
    lesson_fields: Vec<LessonField>,
    entries: Vec<String>,
    suggested: Option<Value>,
    suggestion_label: Option<String>,
    repeat_lesson_fields: bool,
}

impl TeachBlockBuilder {
    /// The entries a lesson could be written into (may stay empty when the client is expected
    /// to create one).
    pub fn entries<I, S>(mut self, entries: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.entries = entries.into_iter().map(Into::into).collect();
        self
    }

    /// A prefill for the lesson value: an object keyed by lesson field names. It MUST be no
    /// wider than its evidence (§8): see [`suggest_pattern_for_reference`].
    pub fn suggested(mut self, suggested: Value) -> Self {
        self.suggested = Some(suggested);
        self
    }

    /// Where the suggestion came from, e.g. `the address this message came from`.
    pub fn suggestion_label(mut self, label: impl Into<String>) -> Self {
        self.suggestion_label = Some(label.into());
        self
    }

    /// Whether to repeat the lesson fields in the block (default `true`), so a client can
    /// render without fetching the card.
    pub fn repeat_lesson_fields(mut self, repeat: bool) -> Self {
        self.repeat_lesson_fields = repeat;
        self
    }

    /// The block.
    ///
    /// # Errors
    /// - [`TeachBlockError::EmptyCollection`];
    /// - [`TeachBlockError::SuggestedNotObject`];
    /// - [`TeachBlockError::UnknownSuggestedKey`] when a `suggested` key is not a lesson field
    ///   name (§8 MUST);
    /// - [`TeachBlockError::NotAChoice`] when a suggested choice is not permitted.
    pub fn build(self) -> Result<TeachBlock, TeachBlockError> {
        if self.collection.trim().is_empty() {
            return Err(TeachBlockError::EmptyCollection);
        }
        let suggested = match self.suggested {
            None => None,
            Some(Value::Object(map)) => {
                check_suggested(&map, &self.lesson_fields)?;
                Some(map)
            }
            Some(_) => return Err(TeachBlockError::SuggestedNotObject),
        };
        Ok(TeachBlock {
            collection: self.collection,
            entries: self.entries,
            suggested,
            suggestion_label: self.suggestion_label,
            lesson_fields: self.repeat_lesson_fields.then_some(self.lesson_fields),
        })
    }
}

/// A pattern matching exactly `text` (trimmed) and nothing wider: every character literal, e.g.
/// `billing@origin.example` → `billing@origin\.example` (so the `.` cannot match any character).
///
/// # Errors
/// [`TeachBlockError::EmptyEvidence`] when `text` is blank.
pub fn suggest_pattern_for_literal(text: &str) -> Result<String, TeachBlockError> {
    let text = crate::text::visible_trimmed(text);
    let text = text.as_str();
    if text.is_empty() {
        return Err(TeachBlockError::EmptyEvidence);
    }
    Ok(regex::escape(text))
}

/// A pattern matching the whole reference `reference` (trimmed) and no other (§8, §13.1: the
/// `PA-2026-0901` → `PA-2026` defect).
///
/// The reference is escaped with `regex::escape` and must stand alone: the character before
/// and after it, if any, is neither a word character nor one of the punctuation characters the
/// reference itself uses. So `PA-2026-0901` gives
/// `(?:^|[^\w\-])(PA\-2026\-0901)(?:$|[^\w\-])`, which matches `PA-2026-0901` in
/// `re: PA-2026-0901.` but not `PA-2026-0902`, `PA-2026-09011`, `PA-2026-0901-2` or `XPA-2026-0901`.
/// The reference is the pattern's first capture group, which the `marks` learnable quotes as
/// the evidence.
///
/// # Errors
/// [`TeachBlockError::EmptyEvidence`] when `reference` is blank.
///
/// # Example
/// ```
/// let p = learnables::suggest_pattern_for_reference("PA-2026-0901").unwrap();
/// let re = regex::Regex::new(&p).unwrap();
/// assert!(re.is_match("Pre-alert PA-2026-0901"));
/// assert!(!re.is_match("Pre-alert PA-2026-0902"));
/// assert!(!re.is_match("Pre-alert PA-2026"));
/// ```
pub fn suggest_pattern_for_reference(reference: &str) -> Result<String, TeachBlockError> {
    let reference = crate::text::visible_trimmed(reference);
    let reference = reference.as_str();
    if reference.is_empty() {
        return Err(TeachBlockError::EmptyEvidence);
    }
    let punctuation: BTreeSet<char> = reference
        .chars()
        .filter(|c| !c.is_alphanumeric() && *c != '_' && !c.is_whitespace())
        .collect();
    let mut class = String::from(r"\w");
    for c in punctuation {
        class.push_str(&regex::escape(c.encode_utf8(&mut [0; 4])));
    }
    Ok(format!(
        "(?:^|[^{class}])({})(?:$|[^{class}])",
        regex::escape(reference)
    ))
}

/// The schema of the wire shape this type is read from.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for TeachBlock {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "TeachBlock".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        TeachBlockWire::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn fields() -> Vec<LessonField> {
        use crate::Learnable;
        crate::Marks::new().lesson_fields()
    }

    #[test]
    fn builder_refuses_suggested_keys_that_are_not_fields() {
        let err = TeachBlock::builder("customers", fields())
            .suggested(json!({ "pattern": "x", "sender": "y" }))
            .build();
        assert!(
            matches!(err, Err(TeachBlockError::UnknownSuggestedKey { key, .. }) if key == "sender")
        );
        let not_choice = TeachBlock::builder("customers", fields())
            .suggested(json!({ "pattern": "x", "where": "cc" }))
            .build();
        assert!(matches!(
            not_choice,
            Err(TeachBlockError::NotAChoice { .. })
        ));
        let not_object = TeachBlock::builder("customers", fields())
            .suggested(json!("x"))
            .build();
        assert_eq!(not_object, Err(TeachBlockError::SuggestedNotObject));
        assert_eq!(
            TeachBlock::builder(" ", fields()).build(),
            Err(TeachBlockError::EmptyCollection)
        );
    }

    #[test]
    fn block_serializes_as_the_spec_shows() {
        let block = TeachBlock::builder("customers", fields())
            .entries(["northgate", "alhamra", "gulftrade"])
            .suggested(json!({ "pattern": "billing@origin\\.example", "where": "from" }))
            .suggestion_label("the address this message came from")
            .build();
        let meta = block.as_ref().ok().map(TeachBlock::to_metadata);
        let teach = meta
            .as_ref()
            .and_then(|m| m.get(EXTENSION_URI))
            .and_then(|m| m.get("teach"));
        assert_eq!(
            teach.and_then(|t| t.get("collection")),
            Some(&json!("customers"))
        );
        assert_eq!(
            teach.and_then(|t| t.get("suggestionLabel")),
            Some(&json!("the address this message came from"))
        );
        assert_eq!(
            teach
                .and_then(|t| t.get("lessonFields"))
                .and_then(Value::as_array)
                .map(Vec::len),
            Some(2)
        );
        // And reads back, checked.
        let back: Result<TeachBlock, _> =
            serde_json::from_value(teach.cloned().unwrap_or_default());
        assert_eq!(back.ok(), block.ok());
        let bad: Result<TeachBlock, _> = serde_json::from_value(json!({
            "collection": "customers", "entries": [], "suggested": { "nope": 1 },
            "lessonFields": [{ "name": "pattern", "label": "P", "kind": "text" }]
        }));
        assert!(bad.is_err());
    }

    #[test]
    fn no_fields_repeated_when_asked() {
        let block = TeachBlock::builder("customers", fields())
            .repeat_lesson_fields(false)
            .build();
        assert!(block.is_ok_and(|b| b.lesson_fields().is_none()));
    }

    #[test]
    fn reference_pattern_is_exact() {
        let p = suggest_pattern_for_reference("PA-2026-0901");
        assert_eq!(
            p.as_deref(),
            Ok(r"(?:^|[^\w\-])(PA\-2026\-0901)(?:$|[^\w\-])")
        );
        let re = p.ok().and_then(|p| regex::Regex::new(&p).ok());
        let hits = |s: &str| re.as_ref().is_some_and(|re| re.is_match(s));
        assert!(hits("PA-2026-0901"));
        assert!(hits("Re: PA-2026-0901."));
        assert!(hits("(PA-2026-0901)"));
        assert!(!hits("PA-2026-0902"));
        assert!(!hits("PA-2026-09011"));
        assert!(!hits("PA-2026-0901-2"));
        assert!(!hits("XPA-2026-0901"));
        assert!(!hits("PA-2026"));
        assert_eq!(
            suggest_pattern_for_reference("  "),
            Err(TeachBlockError::EmptyEvidence)
        );
    }

    #[test]
    fn literal_pattern_escapes() {
        assert_eq!(
            suggest_pattern_for_literal(" billing@origin.example ").as_deref(),
            Ok(r"billing@origin\.example")
        );
        assert_eq!(
            suggest_pattern_for_literal(""),
            Err(TeachBlockError::EmptyEvidence)
        );
    }
}
