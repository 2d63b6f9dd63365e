//! The [`Learnable`] trait and the shapes it speaks in (learnables-v1 §5, §6.2, §6.3, §10, §11).
//!
//! The authority knows no field of any learnable's value: it stores, versions and hands values
//! to the learnable that owns them (§9 "every party between the client and the learnable MUST
//! treat `value` as opaque"). Everything that depends on what a value *means* — validating it,
//! absorbing a lesson into it, phrasing what was learned, reading an input under it — is a
//! method of this trait.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::collections::Collection;
use crate::AuthorityError;

/// A learnable: something in an agent's knowledge that a human's answer may extend (§5).
///
/// Object-safe and `Send + Sync`, so a [`crate::Registry`] holds `Box<dyn Learnable>` and an
/// async server can share it across tasks.
///
/// Implementors own their vocabulary: the keys of entry values, lesson values and inputs are
/// theirs alone, and every refusal carries a reason they wrote (§10.1).
pub trait Learnable: Send + Sync {
    /// The learnable's registry name, e.g. `"marks"` or `"column-mapping"` — what a collection's
    /// `"learnable"` field names (contract "Definitions and learnables").
    fn name(&self) -> &str;

    /// How the agent decides **today**, in prose (§6.2 `how`; MUST NOT be a placeholder).
    fn how(&self) -> &str;

    /// Whether a taught value takes effect deterministically (§6.2 `decidedBy`).
    fn decided_by(&self) -> DecidedBy;

    /// The shape of a usable lesson value (§6.2 `lessonFields`, §6.3): one [`LessonField`] per
    /// key a client must collect.
    fn lesson_fields(&self) -> Vec<LessonField>;

    /// Validates an entry value (e.g. one supplied in `PUT /v1/definitions/{id}`) and returns
    /// it normalized (defaults applied, duplicates removed), ready to store.
    ///
    /// # Errors
    /// [`Refusal`] with a reason a person can act on, e.g.
    /// `"billing@origin\.example(" is not a usable pattern: unclosed group at position 24`.
    /// Anything compiled from the value (a regular expression) MUST be compiled here, never
    /// first at match time (§13.3).
    fn validate_value(&self, value: &Value) -> Result<Value, Refusal>;

    /// Absorbs one lesson value into an entry's current value (`None` when the entry does not
    /// exist yet) and returns the entry's new value (§10).
    ///
    /// Applies the learnable's defaults to `lesson_value` first. Returns
    /// [`Absorbed::unchanged`] when the entry already holds what the lesson teaches (§10.2:
    /// idempotence is judged by the learnable). `describes` is phrased by the learnable (§10.4),
    /// e.g. `matches 'billing@origin\.example' in the from`.
    ///
    /// # Errors
    /// [`Refusal`] when the lesson value (or the current value) is not usable, with the
    /// learnable's reason (§10.1).
    fn absorb(&self, current: Option<&Value>, lesson_value: &Value) -> Result<Absorbed, Refusal>;

    /// The label an entry gets when a lesson creates it. Defaults to the entry's name.
    fn label_for_new_entry(&self, entry: &str, _lesson_value: &Value) -> String {
        entry.to_owned()
    }

    /// Reads `input` under `collection` (§11): which entry, if any, it belongs to, with every
    /// entry as a candidate, best first.
    ///
    /// An input that carries none of the keys this learnable reads is not an error: it reads as
    /// unsettled (so one input can be shown back under a definition holding several learnables).
    ///
    /// # Errors
    /// [`Refusal`] when the input has a key this learnable reads but of the wrong type, or a
    /// stored value cannot be read.
    fn read(
        &self,
        collection: &Collection,
        input: &Value,
        settings: &Settings,
    ) -> Result<Reading, Refusal>;

    /// The §11 report object for `collection`:
    /// `{ "settled", "winner"?, "reads", "candidates": [{ "name", "label", "score", "matched" }] }`.
    /// Defaults to [`Learnable::read`] serialized.
    ///
    /// # Errors
    /// As [`Learnable::read`].
    fn show_back(
        &self,
        collection: &Collection,
        input: &Value,
        settings: &Settings,
    ) -> Result<Value, Refusal> {
        let reading = self.read(collection, input, settings)?;
        serde_json::to_value(&reading)
            .map_err(|e| Refusal::new(format!("the reading could not be written out: {e}")))
    }

    /// Whether an entry holding `entry_value` would match `input` at all (§13.1): used to count
    /// how many corpus inputs a proposed lesson's value reaches.
    ///
    /// # Errors
    /// [`Refusal`] as for [`Learnable::validate_value`] and [`Learnable::read`].
    fn matches(&self, entry_value: &Value, input: &Value) -> Result<bool, Refusal>;
}

/// A learnable's refusal: the human-readable reason it would not accept a value or read an
/// input (§10.1). The authority passes `reason` through unchanged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct Refusal {
    reason: String,
}

impl Refusal {
    /// A refusal with the learnable's own reason.
    pub fn new(reason: impl Into<String>) -> Self {
        Self {
            reason: reason.into(),
        }
    }

    /// The reason, for a person.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    /// Lifts the refusal into [`AuthorityError::Refused`] at `at` (e.g. `customers/northgate`).
    pub fn at(self, at: impl Into<String>) -> AuthorityError {
        AuthorityError::Refused {
            at: at.into(),
            reason: self.reason,
        }
    }
}

/// What absorbing a lesson produced (§10.2, §10.4).
#[derive(Debug, Clone, PartialEq)]
pub struct Absorbed {
    value: Value,
    changed: bool,
    describes: String,
}

impl Absorbed {
    /// The lesson changed the entry: `value` is the new entry value.
    pub fn changed(value: Value, describes: impl Into<String>) -> Self {
        Self {
            value,
            changed: true,
            describes: describes.into(),
        }
    }

    /// The entry already held the lesson: `value` is the entry value as it stands.
    pub fn unchanged(value: Value, describes: impl Into<String>) -> Self {
        Self {
            value,
            changed: false,
            describes: describes.into(),
        }
    }

    /// The entry's value after absorption.
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// Consumes the result, keeping the value.
    pub fn into_value(self) -> Value {
        self.value
    }

    /// Whether the entry changed (`learned` in §10.4).
    pub fn is_changed(&self) -> bool {
        self.changed
    }

    /// What was learned (or is already known), phrased by the learnable (§10.4 `describes`).
    pub fn describes(&self) -> &str {
        &self.describes
    }
}

/// How a learnable decides (§6.2 `decidedBy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum DecidedBy {
    /// Deterministic rules: a taught value takes effect exactly.
    Rules,
    /// A model: a taught value is one example among many.
    Model,
    /// Both.
    Hybrid,
}

/// One input a client must collect to build a lesson value (§6.3).
///
/// Wire shape (camelCase, absent options omitted):
/// `{ "name", "label", "kind", "choices"?, "default"?, "help"? }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "LessonFieldWire", into = "LessonFieldWire")]
pub struct LessonField {
    name: String,
    label: String,
    kind: String,
    choices: Option<Vec<String>>,
    default: Option<String>,
    help: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
struct LessonFieldWire {
    name: String,
    label: String,
    kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    choices: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    default: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    help: Option<String>,
}

impl TryFrom<LessonFieldWire> for LessonField {
    type Error = AuthorityError;
    fn try_from(w: LessonFieldWire) -> Result<Self, Self::Error> {
        if w.name.trim().is_empty() {
            return Err(AuthorityError::invalid(
                "lessonFields.name",
                "must not be empty",
            ));
        }
        if w.label.trim().is_empty() {
            return Err(AuthorityError::invalid(
                "lessonFields.label",
                "must not be empty (§6.3)",
            ));
        }
        if w.kind == "choice" && w.choices.is_none() {
            return Err(AuthorityError::invalid(
                "lessonFields.choices",
                "required when kind is \"choice\" (§6.3)",
            ));
        }
        if let (Some(choices), Some(default)) = (&w.choices, &w.default) {
            if !choices.contains(default) {
                return Err(AuthorityError::invalid(
                    "lessonFields.default",
                    format!("{default:?} is not one of the choices (§6.3)"),
                ));
            }
        }
        Ok(Self {
            name: w.name,
            label: w.label,
            kind: w.kind,
            choices: w.choices,
            default: w.default,
            help: w.help,
        })
    }
}

impl From<LessonField> for LessonFieldWire {
    fn from(f: LessonField) -> Self {
        Self {
            name: f.name,
            label: f.label,
            kind: f.kind,
            choices: f.choices,
            default: f.default,
            help: f.help,
        }
    }
}

impl LessonField {
    /// A `kind: "text"` field.
    pub fn text(name: impl Into<String>, label: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            label: label.into(),
            kind: "text".into(),
            choices: None,
            default: None,
            help: None,
        }
    }

    /// A `kind: "choice"` field with its permitted values and an optional prefill.
    ///
    /// # Errors
    /// [`AuthorityError::Invalid`] when `default` is not one of `choices` (§6.3).
    pub fn choice(
        name: impl Into<String>,
        label: impl Into<String>,
        choices: Vec<String>,
        default: Option<String>,
    ) -> Result<Self, AuthorityError> {
        Self::try_from(LessonFieldWire {
            name: name.into(),
            label: label.into(),
            kind: "choice".into(),
            choices: Some(choices),
            default,
            help: None,
        })
    }

    /// Adds the one or two sentences shown under the input.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Key this field occupies in a lesson value.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Human label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Input kind (`"text"`, `"choice"`, or anything newer: an open string).
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// Permitted values, for `kind: "choice"`.
    pub fn choices(&self) -> Option<&[String]> {
        self.choices.as_deref()
    }

    /// Value to prefill.
    pub fn default_value(&self) -> Option<&str> {
        self.default.as_deref()
    }

    /// Help text.
    pub fn help(&self) -> Option<&str> {
        self.help.as_deref()
    }
}

/// The identification margin: how far the best score must clear the second before a reading is
/// settled (contract: "a setting, default 0.2"). A finite number from 0 to 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "f64", into = "f64")]
pub struct Margin(f64);

impl Margin {
    /// Parses a margin.
    ///
    /// # Errors
    /// [`AuthorityError::Invalid`] (field `margin`) unless `0.0 <= value <= 1.0`.
    pub fn new(value: f64) -> Result<Self, AuthorityError> {
        if value.is_finite() && (0.0..=1.0).contains(&value) {
            Ok(Self(value))
        } else {
            Err(AuthorityError::invalid(
                "margin",
                "must be a number from 0 to 1",
            ))
        }
    }

    /// The margin as a number.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl Default for Margin {
    fn default() -> Self {
        Self(0.2)
    }
}

impl TryFrom<f64> for Margin {
    type Error = AuthorityError;
    fn try_from(value: f64) -> Result<Self, Self::Error> {
        Self::new(value)
    }
}

impl From<Margin> for f64 {
    fn from(m: Margin) -> f64 {
        m.0
    }
}

/// Settings a learnable reads by (contract "Definitions and learnables").
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Settings {
    /// The identification margin (default 0.2).
    pub margin: Margin,
}

/// One entry's standing in a reading (§11 `candidates[]`).
///
/// Wire shape: `{ "name", "label", "score", "matched": [text] }`; `score` is in `[0, 1]`,
/// rounded to 3 decimals (1 of 3 marks → `0.333`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Candidate {
    name: String,
    label: String,
    score: f64,
    matched: Vec<String>,
}

impl Candidate {
    /// A candidate. `score` is clamped to `[0, 1]` (non-finite becomes 0) and rounded to 3
    /// decimals; `matched` lists what of the entry's value matched the input.
    pub fn new(
        name: impl Into<String>,
        label: impl Into<String>,
        score: f64,
        matched: Vec<String>,
    ) -> Self {
        let clamped = if score.is_finite() {
            score.clamp(0.0, 1.0)
        } else {
            0.0
        };
        Self {
            name: name.into(),
            label: label.into(),
            score: (clamped * 1000.0).round() / 1000.0,
            matched,
        }
    }

    /// The entry's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The entry's label.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// The rounded score.
    pub fn score(&self) -> f64 {
        self.score
    }

    /// What matched.
    pub fn matched(&self) -> &[String] {
        &self.matched
    }
}

/// What a learnable makes of one input under one collection (§11).
///
/// Wire shape: `{ "settled": bool, "winner"?: entry, "reads": text, "candidates": [Candidate] }`;
/// `winner` is present exactly when settled; candidates are best first. `POST .../show-back`
/// answers one per collection, keyed by the collection's `entry` noun.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Reading {
    settled: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    winner: Option<String>,
    reads: String,
    candidates: Vec<Candidate>,
}

impl Reading {
    /// A settled reading: the input belongs to `winner`. Candidates are put best first (stable
    /// for equal scores).
    pub fn settled(
        winner: impl Into<String>,
        reads: impl Into<String>,
        candidates: Vec<Candidate>,
    ) -> Self {
        Self {
            settled: true,
            winner: Some(winner.into()),
            reads: reads.into(),
            candidates: best_first(candidates),
        }
    }

    /// An unsettled reading: no entry can be claimed. `reads` says so, in words.
    pub fn unsettled(reads: impl Into<String>, candidates: Vec<Candidate>) -> Self {
        Self {
            settled: false,
            winner: None,
            reads: reads.into(),
            candidates: best_first(candidates),
        }
    }

    /// Whether the reading is settled.
    pub fn is_settled(&self) -> bool {
        self.settled
    }

    /// The winning entry, when settled.
    pub fn winner(&self) -> Option<&str> {
        self.winner.as_deref()
    }

    /// The reading in words, e.g. `Reads as Northgate Motors Ltd, on billing@origin.example`.
    pub fn reads(&self) -> &str {
        &self.reads
    }

    /// Every entry, best first.
    pub fn candidates(&self) -> &[Candidate] {
        &self.candidates
    }
}

fn best_first(mut candidates: Vec<Candidate>) -> Vec<Candidate> {
    candidates.sort_by(|a, b| b.score.total_cmp(&a.score));
    candidates
}

/// The schema of the wire shape this type is read from.
#[cfg(feature = "schema")]
impl schemars::JsonSchema for LessonField {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "LessonField".into()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        LessonFieldWire::json_schema(generator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_scores_round_to_three_decimals() {
        let c = Candidate::new("n", "N", 1.0 / 3.0, vec![]);
        assert_eq!(c.score(), 0.333);
        assert_eq!(Candidate::new("n", "N", f64::NAN, vec![]).score(), 0.0);
        assert_eq!(Candidate::new("n", "N", 2.0, vec![]).score(), 1.0);
    }

    #[test]
    fn unsettled_reading_omits_winner() {
        let r = Reading::unsettled("Still cannot tell whose this is.", vec![]);
        let v = serde_json::to_value(&r).ok();
        assert_eq!(
            v,
            Some(serde_json::json!({
                "settled": false, "reads": "Still cannot tell whose this is.", "candidates": []
            }))
        );
    }

    #[test]
    fn choice_default_must_be_a_choice() {
        let bad = LessonField::choice("where", "Where", vec!["from".into()], Some("to".into()));
        assert!(matches!(bad, Err(AuthorityError::Invalid { .. })));
        let wire = serde_json::json!({ "name": "x", "label": "X", "kind": "choice" });
        assert!(serde_json::from_value::<LessonField>(wire).is_err());
    }

    #[test]
    fn unknown_kind_round_trips() {
        let wire =
            serde_json::json!({ "name": "unit", "label": "Unit", "kind": "unit-of-measure" });
        let field: Result<LessonField, _> = serde_json::from_value(wire.clone());
        assert!(field.as_ref().is_ok_and(|f| f.kind() == "unit-of-measure"));
        assert_eq!(
            field.ok().and_then(|f| serde_json::to_value(f).ok()),
            Some(wire)
        );
    }

    #[test]
    fn margin_is_bounded() {
        assert!(Margin::new(0.2).is_ok());
        assert!(Margin::new(-0.1).is_err());
        assert!(Margin::new(1.5).is_err());
        assert!(Margin::new(f64::NAN).is_err());
        assert_eq!(Margin::default().get(), 0.2);
    }
}
