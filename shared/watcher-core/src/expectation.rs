//! The Expectation object as an agent raises it (expectations-v1 §8), parsed at the edge from
//! the JSON in `metadata[URI].expectations` into a value that can only hold valid fields.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ids::{ExpectationId, FactKey, Subject};
use crate::time::{Instant, IsoDuration};

/// `{ "expectationId", "offset" }`: the current due time is the anchor's satisfaction
/// `observedAt` plus `offset` (expectations-v1 §9.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Anchor {
    /// The expectation whose satisfaction fixes this one's due time.
    pub expectation_id: ExpectationId,
    /// Added to the anchor's `observedAt`.
    pub offset: IsoDuration,
}

/// `satisfiedBy`: `{ "factKey": string }`, matched exactly (expectations-v1 §8, §9.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Matcher {
    /// The key a fact must carry to satisfy the expectation.
    pub fact_key: FactKey,
}

/// An expectation as raised: immutable once recorded (expectations-v1 §5, §8).
///
/// Serialises with the spec's field names; `dueAt` here is the due time *as raised*, which the
/// record shows as `projectedDueAt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Expectation {
    /// Agent-generated, unique among everything the agent ever raised.
    pub expectation_id: ExpectationId,
    /// A kind declared on the agent's card (§6.2).
    pub kind: String,
    /// What the expectation is about.
    pub subject: Subject,
    /// What is expected, in a person's words.
    pub expects: String,
    /// The fact key that satisfies it.
    pub satisfied_by: Matcher,
    /// The due time as raised (UTC); for an anchored expectation, the projection.
    pub due_at: Instant,
    /// Wait after `dueAt` before an overdue lapse; absent means zero.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grace: Option<IsoDuration>,
    /// Re-anchoring (§9.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Anchor>,
    /// Expectations on the same subject expected to be satisfied before this one (§9.1).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub after: Vec<ExpectationId>,
    /// After this instant, silence on the subject is a `stalled` lapse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub horizon: Option<Instant>,
    /// `observed`, `contract`, `declared`, or an unknown value kept as given (§15).
    pub basis: String,
    /// An open expectation this one replaces (§10.3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub supersedes: Option<ExpectationId>,
}

/// Why an expectation could not be parsed: the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {reason} (expectations-v1 §8)")]
pub struct ParseError {
    /// The `expectationId` if one could be read.
    pub expectation_id: Option<String>,
    /// The JSON field at fault, e.g. `dueAt` or `anchor.offset`.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

impl Expectation {
    /// The grace period, zero when absent.
    pub fn grace_or_zero(&self) -> IsoDuration {
        self.grace.clone().unwrap_or_else(IsoDuration::zero)
    }

    /// Parses one element of `metadata[URI].expectations`.
    ///
    /// Required: `expectationId`, `kind`, `subject` (`type`, `id`), `expects`,
    /// `satisfiedBy.factKey`, `dueAt`, `basis`. `null` and `""` count as absent for optional
    /// fields. A `horizon` earlier than `dueAt` is refused.
    ///
    /// # Errors
    /// [`ParseError`] naming the first field at fault.
    pub fn from_json(value: &Value) -> Result<Self, ParseError> {
        let obj = value.as_object().ok_or_else(|| ParseError {
            expectation_id: None,
            field: "expectations[]".into(),
            reason: "must be a JSON object".into(),
        })?;
        let raw_id = obj
            .get("expectationId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let fail = |field: &str, reason: String| ParseError {
            expectation_id: raw_id.clone(),
            field: field.to_owned(),
            reason,
        };
        let id = ExpectationId::parse(
            required_str(obj, "expectationId").map_err(|r| fail("expectationId", r))?,
        )
        .map_err(|r| fail("expectationId", r))?;
        let kind = required_str(obj, "kind").map_err(|r| fail("kind", r))?;
        let subject = parse_subject(obj.get("subject")).map_err(|(f, r)| fail(&f, r))?;
        let expects = required_str(obj, "expects").map_err(|r| fail("expects", r))?;
        let fact_key = match present(obj.get("satisfiedBy")) {
            None => return Err(fail("satisfiedBy", "is required".into())),
            Some(Value::Object(m)) => FactKey::parse(
                required_str(m, "factKey").map_err(|r| fail("satisfiedBy.factKey", r))?,
            )
            .map_err(|r| fail("satisfiedBy.factKey", r))?,
            Some(_) => {
                return Err(fail(
                    "satisfiedBy",
                    "must be an object { \"factKey\": string }".into(),
                ))
            }
        };
        let due_at = Instant::parse(&required_str(obj, "dueAt").map_err(|r| fail("dueAt", r))?)
            .map_err(|r| fail("dueAt", r))?;
        let grace = optional_str(obj, "grace")
            .map_err(|r| fail("grace", r))?
            .map(|t| IsoDuration::parse(&t))
            .transpose()
            .map_err(|r| fail("grace", r))?;
        if let Some(g) = &grace {
            if due_at.checked_plus(g).is_none() {
                return Err(fail(
                    "grace",
                    format!(
                        "dueAt {due_at} plus grace {g} is a deadline after 9999-12-31T23:59:59.999999999Z; deadlines must lie in the instant range {}",
                        crate::time::RANGE_TEXT
                    ),
                ));
            }
        }
        let anchor = match present(obj.get("anchor")) {
            None => None,
            Some(Value::Object(m)) => {
                let aid = ExpectationId::parse(
                    required_str(m, "expectationId")
                        .map_err(|r| fail("anchor.expectationId", r))?,
                )
                .map_err(|r| fail("anchor.expectationId", r))?;
                let offset = IsoDuration::parse(
                    &required_str(m, "offset").map_err(|r| fail("anchor.offset", r))?,
                )
                .map_err(|r| fail("anchor.offset", r))?;
                Some(Anchor {
                    expectation_id: aid,
                    offset,
                })
            }
            Some(_) => {
                return Err(fail(
                    "anchor",
                    "must be an object { \"expectationId\": string, \"offset\": duration }".into(),
                ))
            }
        };
        let after = match present(obj.get("after")) {
            None => Vec::new(),
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    let field = format!("after[{i}]");
                    let text = item
                        .as_str()
                        .ok_or_else(|| fail(&field, "must be a string".into()))?;
                    let eid = ExpectationId::parse(text).map_err(|r| fail(&field, r))?;
                    if !out.contains(&eid) {
                        out.push(eid);
                    }
                }
                out
            }
            Some(_) => return Err(fail("after", "must be an array of expectationIds".into())),
        };
        let horizon = optional_str(obj, "horizon")
            .map_err(|r| fail("horizon", r))?
            .map(|t| Instant::parse(&t))
            .transpose()
            .map_err(|r| fail("horizon", r))?;
        if let Some(h) = horizon {
            if h < due_at {
                return Err(fail(
                    "horizon",
                    format!("{h} is earlier than dueAt {due_at}"),
                ));
            }
        }
        let basis = required_str(obj, "basis").map_err(|r| fail("basis", r))?;
        let supersedes = optional_str(obj, "supersedes")
            .map_err(|r| fail("supersedes", r))?
            .map(ExpectationId::parse)
            .transpose()
            .map_err(|r| fail("supersedes", r))?;
        Ok(Expectation {
            expectation_id: id,
            kind,
            subject,
            expects,
            satisfied_by: Matcher { fact_key },
            due_at,
            grace,
            anchor,
            after,
            horizon,
            basis,
            supersedes,
        })
    }
}

/// `None` for absent, `null` and `""`.
fn present(v: Option<&Value>) -> Option<&Value> {
    match v {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(v) => Some(v),
    }
}

fn required_str(obj: &Map<String, Value>, key: &str) -> Result<String, String> {
    match present(obj.get(key)) {
        None => Err("is required".into()),
        Some(Value::String(s)) if s.trim().is_empty() => Err("must not be blank".into()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(format!("must be a string, not {}", json_type(other))),
    }
}

fn optional_str(obj: &Map<String, Value>, key: &str) -> Result<Option<String>, String> {
    match present(obj.get(key)) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(format!("must be a string, not {}", json_type(other))),
    }
}

/// Parses `{ "type", "id" }`, returning the failing field path on error.
pub(crate) fn parse_subject(v: Option<&Value>) -> Result<Subject, (String, String)> {
    match present(v) {
        None => Err(("subject".into(), "is required".into())),
        Some(Value::Object(m)) => {
            let t = required_str(m, "type").map_err(|r| ("subject.type".to_owned(), r))?;
            let id = required_str(m, "id").map_err(|r| ("subject.id".to_owned(), r))?;
            Subject::parse(&t, &id).map_err(|r| ("subject".to_owned(), r))
        }
        Some(_) => Err((
            "subject".into(),
            "must be an object { \"type\": string, \"id\": string }".into(),
        )),
    }
}

/// The JSON type of a value with its article, for messages (`"a string"`, `"an object"`, `"null"`):
/// the wire types' words, so every refusal names a type alike.
pub use a2a_types::json_type_name as json_type;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn manifest() -> Value {
        json!({
          "expectationId": "exp-01J8Q0MANIFEST",
          "kind": "shipment.manifest",
          "subject": { "type": "shipment", "id": "PA-2026-0901" },
          "expects": "the airline manifest for PA-2026-0901",
          "satisfiedBy": { "factKey": "shipment.manifest.received:PA-2026-0901" },
          "dueAt": "2026-09-10T20:15:00Z",
          "grace": "PT2H",
          "basis": "observed"
        })
    }

    #[test]
    fn parses_the_spec_example() {
        let e = Expectation::from_json(&manifest()).unwrap();
        assert_eq!(e.expectation_id.as_str(), "exp-01J8Q0MANIFEST");
        assert_eq!(e.due_at.to_string(), "2026-09-10T20:15:00Z");
        assert_eq!(e.grace.unwrap().as_str(), "PT2H");
    }

    #[test]
    fn each_required_field_is_named_when_missing() {
        for field in [
            "expectationId",
            "kind",
            "subject",
            "expects",
            "satisfiedBy",
            "dueAt",
            "basis",
        ] {
            let mut v = manifest();
            v.as_object_mut().unwrap().remove(field);
            let err = Expectation::from_json(&v).unwrap_err();
            assert_eq!(err.field, field);
            assert_eq!(err.reason, "is required");
        }
    }

    #[test]
    fn a_deadline_beyond_the_instant_range_is_refused_naming_grace_and_the_range() {
        let mut v = manifest();
        v["dueAt"] = json!("9999-12-31T23:00:00Z");
        v["grace"] = json!("PT2H");
        let err = Expectation::from_json(&v).unwrap_err();
        assert_eq!(err.field, "grace");
        assert!(
            err.reason.contains("9999-12-31T23:59:59.999999999Z"),
            "{}",
            err.reason
        );
        assert!(!err.reason.contains("RFC 3339"), "{}", err.reason);
        // The common "never" with no grace, or a grace that still fits, is kept.
        v["dueAt"] = json!("9999-12-31T23:59:59Z");
        v["grace"] = Value::Null;
        v["horizon"] = Value::Null;
        assert!(Expectation::from_json(&v).is_ok());
        v["dueAt"] = json!("9999-12-31T22:00:00Z");
        v["grace"] = json!("PT1H59M59.999999999S");
        assert!(Expectation::from_json(&v).is_ok());
    }

    #[test]
    fn mistyped_and_invalid_fields_are_named() {
        let mut v = manifest();
        v["dueAt"] = json!(12);
        assert_eq!(Expectation::from_json(&v).unwrap_err().field, "dueAt");
        let mut v = manifest();
        v["grace"] = json!("P1M");
        let err = Expectation::from_json(&v).unwrap_err();
        assert_eq!(err.field, "grace");
        assert!(err.reason.contains("months"));
        let mut v = manifest();
        v["grace"] = json!("-PT1H");
        assert!(Expectation::from_json(&v)
            .unwrap_err()
            .reason
            .contains("negative"));
        let mut v = manifest();
        v["horizon"] = json!("2026-09-10T00:00:00Z");
        assert_eq!(Expectation::from_json(&v).unwrap_err().field, "horizon");
        let mut v = manifest();
        v["anchor"] = json!({"expectationId": "x"});
        assert_eq!(
            Expectation::from_json(&v).unwrap_err().field,
            "anchor.offset"
        );
        let mut v = manifest();
        v["subject"] = json!({"type": "shipment"});
        assert_eq!(Expectation::from_json(&v).unwrap_err().field, "subject.id");
    }

    #[test]
    fn offsets_are_normalised_and_unknown_basis_kept() {
        let mut v = manifest();
        v["dueAt"] = json!("2026-09-10T22:15:00+02:00");
        v["basis"] = json!("hearsay");
        let e = Expectation::from_json(&v).unwrap();
        assert_eq!(e.due_at.to_string(), "2026-09-10T20:15:00Z");
        assert_eq!(e.basis, "hearsay");
    }

    #[test]
    fn empty_optional_fields_are_absent() {
        let mut v = manifest();
        v["supersedes"] = json!("");
        v["horizon"] = Value::Null;
        let e = Expectation::from_json(&v).unwrap();
        assert!(e.supersedes.is_none() && e.horizon.is_none());
    }
}
