//! [`ExpectationBuilder`]: an Expectation (expectations-v1 §8) that the watcher's own parser
//! has accepted, and the Artifact `metadata` that carries it.

use serde_json::{json, Map, Value};
use watcher_core::card::ExpectationsDeclaration;
use watcher_core::expectation::{Expectation, ParseError};
use watcher_core::ids::ExpectationId;
use watcher_core::EXPECTATIONS_URI;

/// Builds an [`Expectation`] field by field; [`ExpectationBuilder::build`] reads the result with
/// [`Expectation::from_json`], the watcher's parser, so every rule it applies to fields holds:
/// required fields present and non-blank, instants RFC 3339 with an offset, durations in the
/// contract's ISO 8601 subset, `horizon` not before `dueAt`, `dueAt + grace` in range.
///
/// Instants and durations are given as text (`"2026-09-10T20:15:00Z"`, `"PT2H"`) or, via
/// `to_string()`, as [`crate::Instant`] / [`crate::IsoDuration`] values.
#[derive(Debug, Clone)]
pub struct ExpectationBuilder {
    fields: Map<String, Value>,
}

/// Why [`ExpectationBuilder::build_for`] refused: a field of the expectation, or its kind
/// against the card.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KitError {
    /// A field the watcher would refuse.
    #[error(transparent)]
    Field(#[from] ParseError),
    /// The kind is not declared on the card (§6.2): the watcher would refuse the expectation.
    #[error("field `kind`: {kind:?} is not declared on the card; declared: {declared} (expectations-v1 §6.2)")]
    UndeclaredKind {
        /// The kind given.
        kind: String,
        /// The kinds the card declares, comma-separated.
        declared: String,
    },
    /// The subject's type differs from the kind's declared `subjectType` (§6.2).
    #[error("field `subject.type`: {given:?}, but kind {kind:?} is about {declared:?} (expectations-v1 §6.2)")]
    SubjectType {
        /// The kind.
        kind: String,
        /// The subject type given.
        given: String,
        /// The kind's `subjectType`.
        declared: String,
    },
}

impl ExpectationBuilder {
    /// Starts an expectation with its `expectationId` (unique among everything the agent ever
    /// raises) and `kind` (declared on the card).
    pub fn new(expectation_id: impl Into<String>, kind: impl Into<String>) -> Self {
        let mut fields = Map::new();
        fields.insert("expectationId".into(), Value::String(expectation_id.into()));
        fields.insert("kind".into(), Value::String(kind.into()));
        Self { fields }
    }

    fn set(mut self, key: &str, value: Value) -> Self {
        self.fields.insert(key.into(), value);
        self
    }

    /// `subject`: `{ "type", "id" }`.
    pub fn subject(self, subject_type: impl Into<String>, id: impl Into<String>) -> Self {
        self.set(
            "subject",
            json!({ "type": subject_type.into(), "id": id.into() }),
        )
    }

    /// `expects`: what is expected, in a person's words.
    pub fn expects(self, text: impl Into<String>) -> Self {
        self.set("expects", Value::String(text.into()))
    }

    /// `satisfiedBy.factKey`: the key of the fact that satisfies it, matched exactly.
    pub fn satisfied_by(self, fact_key: impl Into<String>) -> Self {
        self.set("satisfiedBy", json!({ "factKey": fact_key.into() }))
    }

    /// `dueAt`: an RFC 3339 instant with an offset.
    pub fn due_at(self, instant: impl ToString) -> Self {
        self.set("dueAt", Value::String(instant.to_string()))
    }

    /// `grace`: how long after `dueAt` before an overdue lapse (ISO 8601, e.g. `PT2H`).
    pub fn grace(self, duration: impl ToString) -> Self {
        self.set("grace", Value::String(duration.to_string()))
    }

    /// `anchor`: the due time becomes the anchor's satisfaction `observedAt` + `offset` (§9.3).
    pub fn anchor(self, expectation_id: impl Into<String>, offset: impl ToString) -> Self {
        self.set(
            "anchor",
            json!({ "expectationId": expectation_id.into(), "offset": offset.to_string() }),
        )
    }

    /// Adds one id to `after`: an expectation on the same subject expected to be satisfied
    /// before this one (§9.1, skipped).
    pub fn after(mut self, expectation_id: impl Into<String>) -> Self {
        let list = self
            .fields
            .entry("after")
            .or_insert_with(|| Value::Array(Vec::new()));
        if let Value::Array(items) = list {
            items.push(Value::String(expectation_id.into()));
        }
        self
    }

    /// `horizon`: after this instant, silence on the subject is a `stalled` lapse.
    pub fn horizon(self, instant: impl ToString) -> Self {
        self.set("horizon", Value::String(instant.to_string()))
    }

    /// `basis`: `observed`, `contract` or `declared` (§13.3).
    pub fn basis(self, basis: impl Into<String>) -> Self {
        self.set("basis", Value::String(basis.into()))
    }

    /// `supersedes`: the open expectation this one replaces (§10.3), e.g. from a lapse task.
    pub fn supersedes(self, expectation_id: impl Into<String>) -> Self {
        self.set("supersedes", Value::String(expectation_id.into()))
    }

    /// The expectation, read by the watcher's parser.
    ///
    /// # Errors
    /// [`ParseError`] naming the first field at fault (`field`) and why (`reason`).
    pub fn build(self) -> Result<Expectation, ParseError> {
        Expectation::from_json(&Value::Object(self.fields))
    }

    /// [`ExpectationBuilder::build`], then the checks against the agent's card: the kind is
    /// declared, and the subject's type is the kind's `subjectType`.
    ///
    /// # Errors
    /// [`KitError`] naming the field.
    pub fn build_for(self, card: &ExpectationsDeclaration) -> Result<Expectation, KitError> {
        let e = self.build()?;
        let Some(kind) = card.kind(&e.kind) else {
            return Err(KitError::UndeclaredKind {
                kind: e.kind,
                declared: card
                    .kinds
                    .iter()
                    .map(|k| k.kind.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        };
        if kind.subject_type != e.subject.subject_type {
            return Err(KitError::SubjectType {
                kind: e.kind,
                given: e.subject.subject_type,
                declared: kind.subject_type.clone(),
            });
        }
        Ok(e)
    }
}

/// The Artifact `metadata` raising `expectations`:
/// `{ "https://rsaxb.com/a2a/expectations/v1": { "expectations": [...] } }` (§8). Put the URI
/// in the artifact's `extensions` too.
pub fn artifact_metadata(expectations: &[Expectation]) -> Value {
    json!({ EXPECTATIONS_URI: { "expectations": expectations } })
}

/// The Artifact `metadata` withdrawing `ids` with `reason` (§8.1):
/// `{ URI: { "withdraw": [...], "reason": "..." } }`.
pub fn withdraw_metadata(ids: &[ExpectationId], reason: &str) -> Value {
    json!({ EXPECTATIONS_URI: { "withdraw": ids, "reason": reason } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use watcher_core::card::ExpectationKind;

    fn manifest() -> ExpectationBuilder {
        ExpectationBuilder::new("exp-1", "shipment.manifest")
            .subject("shipment", "PA-2026-0901")
            .expects("the airline manifest")
            .satisfied_by("shipment.manifest.received:PA-2026-0901")
            .due_at("2026-09-10T22:15:00+02:00")
            .basis("observed")
    }

    fn card() -> ExpectationsDeclaration {
        ExpectationsDeclaration {
            keeps_time: false,
            lapse_skill: "handle_lapse".into(),
            kinds: vec![ExpectationKind {
                kind: "shipment.manifest".into(),
                subject_type: "shipment".into(),
                describes: "the airline manifest for a booked shipment".into(),
                basis: "observed".into(),
                skills: None,
            }],
        }
    }

    #[test]
    fn builds_and_normalises_like_the_watcher() {
        let e = manifest().grace("PT2H").after("exp-0").build().unwrap();
        assert_eq!(e.due_at.to_string(), "2026-09-10T20:15:00Z");
        assert_eq!(e.after[0].as_str(), "exp-0");
        let v = artifact_metadata(&[e]);
        assert_eq!(v[EXPECTATIONS_URI]["expectations"][0]["grace"], "PT2H");
        // What the kit writes, the watcher's parser reads back to the same value.
        let again = Expectation::from_json(&v[EXPECTATIONS_URI]["expectations"][0]).unwrap();
        assert_eq!(again.due_at.to_string(), "2026-09-10T20:15:00Z");
    }

    #[test]
    fn a_missing_required_field_is_named() {
        let err = ExpectationBuilder::new("exp-1", "k")
            .subject("shipment", "x")
            .expects("e")
            .due_at("2026-09-10T20:15:00Z")
            .basis("observed")
            .build()
            .unwrap_err();
        assert_eq!(err.field, "satisfiedBy");
        let err = manifest()
            .horizon("2026-09-01T00:00:00Z")
            .build()
            .unwrap_err();
        assert_eq!(err.field, "horizon");
        let err = manifest().anchor("exp-0", "P1M").build().unwrap_err();
        assert_eq!(err.field, "anchor.offset");
    }

    #[test]
    fn the_card_is_checked_by_build_for() {
        assert!(manifest().build_for(&card()).is_ok());
        let err = ExpectationBuilder::new("exp-2", "shipment.customs")
            .subject("shipment", "x")
            .expects("customs clearance")
            .satisfied_by("k")
            .due_at("2026-09-10T20:15:00Z")
            .basis("observed")
            .build_for(&card())
            .unwrap_err();
        assert!(
            matches!(err, KitError::UndeclaredKind { ref declared, .. } if declared == "shipment.manifest")
        );
        let err = manifest()
            .subject("task", "t-1")
            .build_for(&card())
            .unwrap_err();
        assert!(err.to_string().starts_with("field `subject.type`"), "{err}");
    }

    #[test]
    fn withdrawal_metadata_has_the_spec_shape() {
        let v = withdraw_metadata(
            &[ExpectationId::parse("exp-1").unwrap()],
            "booking canceled",
        );
        assert_eq!(
            v,
            json!({ EXPECTATIONS_URI: { "withdraw": ["exp-1"], "reason": "booking canceled" } })
        );
    }
}
