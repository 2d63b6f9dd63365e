//! The Fact object as reported (expectations-v1 §9.2), parsed at the edge. Its `source` is
//! never taken from the body: the watcher records the authenticated reporter (§13.5).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::ReportedFact;
use crate::expectation::{json_type, parse_subject};
use crate::ids::{FactKey, Source, Subject};
use crate::time::Instant;

/// A Fact (expectations-v1 §9.2) as the engine takes it: `factKey`, `observedAt`, optional
/// `subject`, and `source` set to the authenticated reporter.
pub type Fact = ReportedFact;

/// A Fact as a reporter writes it (expectations-v1 §9.2, Appendix A `Fact`):
/// `{ "factKey", "observedAt", "source"?, "subject"? }`. The watcher ignores `source` and records
/// the authenticated reporter instead (§13.5); [`parse_fact`] reads this shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FactBody {
    /// Matched exactly against an expectation's `satisfiedBy.factKey`.
    pub fact_key: FactKey,
    /// When the event happened (RFC 3339 with an offset); a time later than receipt is read as
    /// the receipt time.
    pub observed_at: Instant,
    /// Who reports it; informative only, the watcher records the authenticated reporter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// The subject it concerns, when the reporter says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<Subject>,
}

/// Why a fact could not be read: the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {reason} (expectations-v1 §9.2)")]
pub struct FactError {
    /// The field at fault, e.g. `observedAt` or `subject.id`.
    pub field: String,
    /// What is wrong with it.
    pub reason: String,
}

/// Parses `{ "factKey", "observedAt", "source"?, "subject"? }`, recording `source` as the
/// authenticated reporter whatever the body claims.
///
/// # Errors
/// [`FactError`] naming the first field at fault: `factKey` or `observedAt` missing, mistyped or
/// invalid (an instant without an offset is refused), or a malformed `subject`.
pub fn parse_fact(value: &Value, reporter: &Source) -> Result<ReportedFact, FactError> {
    let fail = |field: &str, reason: String| FactError {
        field: field.into(),
        reason,
    };
    let obj = value.as_object().ok_or_else(|| {
        fail(
            "fact",
            format!("must be a JSON object, not {}", json_type(value)),
        )
    })?;
    let text = |key: &str| -> Result<String, FactError> {
        match obj.get(key) {
            None | Some(Value::Null) => Err(fail(key, "is required".into())),
            Some(Value::String(s)) if s.trim().is_empty() => {
                Err(fail(key, "must not be blank".into()))
            }
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(fail(
                key,
                format!("must be a string, not {}", json_type(other)),
            )),
        }
    };
    let fact_key = FactKey::parse(text("factKey")?).map_err(|r| fail("factKey", r))?;
    let given = text("observedAt")?;
    let observed_at = Instant::parse(&given).map_err(|r| fail("observedAt", r))?;
    let subject = match obj.get("subject") {
        None | Some(Value::Null) => None,
        Some(v) => Some(parse_subject(Some(v)).map_err(|(f, r)| fail(&f, r))?),
    };
    Ok(ReportedFact {
        fact_key,
        observed_at,
        observed_at_given: Some(given),
        mapping: None,
        subject,
        source: reporter.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn source_is_the_reporter_not_the_body() {
        let reporter = Source::parse("carrier-feed:emirates").unwrap();
        let f = parse_fact(
            &json!({"factKey": "k", "observedAt": "2026-09-11T04:41:00+02:00", "source": "forged"}),
            &reporter,
        )
        .unwrap();
        assert_eq!(f.source, reporter);
        assert_eq!(f.observed_at.to_string(), "2026-09-11T02:41:00Z");
    }

    #[test]
    fn fields_are_named() {
        let r = Source::parse("s").unwrap();
        assert_eq!(
            parse_fact(&json!({"observedAt": "2026-09-11T02:41:00Z"}), &r)
                .unwrap_err()
                .field,
            "factKey"
        );
        assert_eq!(
            parse_fact(&json!({"factKey": "k"}), &r).unwrap_err().field,
            "observedAt"
        );
        assert_eq!(
            parse_fact(
                &json!({"factKey": "k", "observedAt": "2026-09-11T02:41:00"}),
                &r
            )
            .unwrap_err()
            .field,
            "observedAt"
        );
        assert_eq!(
            parse_fact(&json!({"factKey": "k", "observedAt": "2026-09-11T02:41:00Z", "subject": {"type": "x"}}), &r)
                .unwrap_err()
                .field,
            "subject.id"
        );
        assert_eq!(parse_fact(&json!([1]), &r).unwrap_err().field, "fact");
    }
}
