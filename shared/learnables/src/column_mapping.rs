//! The `column-mapping` learnable: which field a spreadsheet column holds, judged by its heading
//! (contract "Definitions and learnables"; learnables-v1 §9 rationale: a learnable whose value
//! is not text to match, driven through the identical authority code).
//!
//! Shapes (owned by this learnable):
//!
//! - entry (a field name) value: `{ "headers": [text] }`
//! - lesson value: `{ "header": text }`; adds one heading
//! - input: `{ "header": text }`
//!
//! Headings compare with surrounding whitespace, a byte-order mark and zero-width characters
//! ignored ([`crate::text`]), and without regard to case.

use serde_json::{json, Value};

use crate::collections::Collection;
use crate::learnable::{
    Absorbed, Candidate, DecidedBy, Learnable, LessonField, Reading, Refusal, Settings,
};

/// The longest heading accepted, in characters.
pub const HEADER_MAX_CHARS: usize = 500;

const HOW: &str = "Each field lists the column headings that hold it. A column maps to a field \
when exactly one field lists its heading, ignoring case and surrounding spaces; otherwise the \
column is left unmapped.";

/// The `column-mapping` learnable. Stateless.
#[derive(Debug, Clone, Copy, Default)]
pub struct ColumnMapping;

impl ColumnMapping {
    /// The learnable.
    pub fn new() -> Self {
        Self
    }
}

/// The form headings are compared in.
fn key(header: &str) -> String {
    crate::text::visible_trimmed(header).to_lowercase()
}

fn parse_header(raw: Option<&Value>, what: &str) -> Result<String, Refusal> {
    match raw {
        Some(Value::String(h)) => {
            let h = crate::text::visible_trimmed(h);
            let h = h.as_str();
            if h.is_empty() {
                Err(Refusal::new(format!(
                    "{what} is empty: give the column's heading"
                )))
            } else if h.chars().count() > HEADER_MAX_CHARS {
                Err(Refusal::new(format!(
                    "{what} is longer than {HEADER_MAX_CHARS} characters"
                )))
            } else {
                Ok(h.to_owned())
            }
        }
        Some(_) => Err(Refusal::new(format!("{what} must be text"))),
        None => Err(Refusal::new(format!("{what} is missing"))),
    }
}

/// Parses an entry value into its headings (trimmed, duplicates by [`key`] dropped).
fn parse_entry(raw: &Value) -> Result<Vec<String>, Refusal> {
    let shape = || Refusal::new("a column-mapping entry is an object: { \"headers\": [text] }");
    let obj = raw.as_object().ok_or_else(shape)?;
    if obj.keys().any(|k| k != "headers") {
        return Err(shape());
    }
    let items = match obj.get("headers") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(_) => return Err(shape()),
    };
    let mut headers: Vec<String> = Vec::with_capacity(items.len());
    // Each heading's key computed once: linear in the entry, not quadratic.
    let mut keys = std::collections::HashSet::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let h = parse_header(Some(item), &format!("heading {}", i + 1))?;
        if keys.insert(key(&h)) {
            headers.push(h);
        }
    }
    Ok(headers)
}

fn entry_value(headers: &[String]) -> Value {
    json!({ "headers": headers })
}

/// The input's heading; `None` when the input carries none (read as unsettled).
fn input_header(input: &Value) -> Result<Option<String>, Refusal> {
    let obj = input
        .as_object()
        .ok_or_else(|| Refusal::new("a column to read is an object: { \"header\": text }"))?;
    match obj.get("header") {
        None | Some(Value::Null) => Ok(None),
        other => parse_header(other, "the column's \"header\"").map(Some),
    }
}

impl Learnable for ColumnMapping {
    fn name(&self) -> &str {
        "column-mapping"
    }

    fn how(&self) -> &str {
        HOW
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::Rules
    }

    /// One field: `header` (text).
    fn lesson_fields(&self) -> Vec<LessonField> {
        vec![LessonField::text("header", "Column heading").with_help(
            "The heading as it appears at the top of the column. Case and surrounding spaces are ignored.",
        )]
    }

    /// `{ "headers": [...] }` → trimmed, duplicates (ignoring case) dropped.
    fn validate_value(&self, value: &Value) -> Result<Value, Refusal> {
        Ok(entry_value(&parse_entry(value)?))
    }

    /// Adds the lesson's heading unless the entry already lists it (ignoring case and
    /// surrounding spaces). `describes`: `reads the column headed '<header>'`, prefixed
    /// `already ` when nothing changed.
    fn absorb(&self, current: Option<&Value>, lesson_value: &Value) -> Result<Absorbed, Refusal> {
        let obj = lesson_value.as_object().ok_or_else(|| {
            Refusal::new("a column-mapping lesson's `value` is an object: { \"header\": text }")
        })?;
        if let Some(k) = obj.keys().find(|k| k.as_str() != "header") {
            return Err(Refusal::new(format!(
                "a column-mapping lesson has an unknown key {k:?}; it has only \"header\""
            )));
        }
        let header = parse_header(obj.get("header"), "the lesson's \"header\"")?;
        let mut headers = match current {
            Some(value) => parse_entry(value)?,
            None => Vec::new(),
        };
        let says = format!("reads the column headed '{header}'");
        let wanted = key(&header);
        if headers.iter().any(|h| key(h) == wanted) {
            return Ok(Absorbed::unchanged(
                entry_value(&headers),
                format!("already {says}"),
            ));
        }
        headers.push(header);
        Ok(Absorbed::changed(entry_value(&headers), says))
    }

    /// Settled when exactly one entry lists the heading; that entry scores 1, others 0.
    fn read(
        &self,
        collection: &Collection,
        input: &Value,
        _settings: &Settings,
    ) -> Result<Reading, Refusal> {
        let header = input_header(input)?;
        let mut candidates = Vec::with_capacity(collection.len());
        let mut listing: Vec<(String, String)> = Vec::new();
        for (name, entry) in collection.entries() {
            let headers = parse_entry(entry.value())
                .map_err(|r| Refusal::new(format!("entry {name}: {}", r.reason())))?;
            let matched: Vec<String> = match &header {
                Some(h) => headers.into_iter().filter(|k| key(k) == key(h)).collect(),
                None => Vec::new(),
            };
            let score = if matched.is_empty() { 0.0 } else { 1.0 };
            if !matched.is_empty() {
                listing.push((name.as_str().to_owned(), entry.label().to_owned()));
            }
            candidates.push(Candidate::new(name.as_str(), entry.label(), score, matched));
        }
        let Some(header) = header else {
            return Ok(Reading::unsettled(
                "There is no column heading to read.",
                candidates,
            ));
        };
        Ok(match listing.as_slice() {
            [(name, label)] => Reading::settled(
                name.clone(),
                format!("Reads as {label}, on the column headed '{header}'"),
                candidates,
            ),
            [] => Reading::unsettled(
                format!("Still cannot tell which field the column '{header}' holds."),
                candidates,
            ),
            many => {
                let labels: Vec<&str> = many.iter().map(|(_, l)| l.as_str()).collect();
                Reading::unsettled(
                    format!(
                        "The column '{header}' is listed for more than one field: {}.",
                        labels.join(", ")
                    ),
                    candidates,
                )
            }
        })
    }

    fn matches(&self, entry_value: &Value, input: &Value) -> Result<bool, Refusal> {
        let Some(header) = input_header(input)? else {
            return Ok(false);
        };
        Ok(parse_entry(entry_value)?
            .iter()
            .any(|h| key(h) == key(&header)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collections::Collections;

    #[test]
    fn absorbing_is_idempotent_ignoring_case_and_spaces() {
        let c = ColumnMapping::new();
        let first = c.absorb(None, &json!({ "header": " Invoice No " })).ok();
        assert_eq!(
            first.as_ref().map(Absorbed::describes),
            Some("reads the column headed 'Invoice No'")
        );
        let value = first.map(Absorbed::into_value);
        assert_eq!(value, Some(json!({ "headers": ["Invoice No"] })));
        let again = c
            .absorb(value.as_ref(), &json!({ "header": "invoice no" }))
            .ok();
        assert_eq!(again.as_ref().map(Absorbed::is_changed), Some(false));
        assert_eq!(
            again.as_ref().map(Absorbed::describes),
            Some("already reads the column headed 'invoice no'")
        );
    }

    #[test]
    fn bad_lessons_are_refused_in_words() {
        let c = ColumnMapping::new();
        let why = |v: Value| c.absorb(None, &v).err().map(|r| r.reason().to_owned());
        assert_eq!(
            why(json!({ "header": "  " })).as_deref(),
            Some("the lesson's \"header\" is empty: give the column's heading")
        );
        assert!(why(json!({ "pattern": "x" })).is_some_and(|r| r.contains("unknown key")));
        assert!(why(json!({})).is_some_and(|r| r.contains("missing")));
        assert!(c.validate_value(&json!({ "headers": [1] })).is_err());
    }

    #[test]
    fn reading_settles_only_on_one_listing() {
        let coll = Collections::from_json(&json!({ "fields": {
            "learnable": "column-mapping", "entry": "field", "teaches": "which field a column holds",
            "entries": {
                "invoice_number": { "label": "Invoice number", "value": { "headers": ["Invoice No", "Ref"] } },
                "reference": { "label": "Reference", "value": { "headers": ["ref"] } }
            }
        } }))
        .ok();
        let coll = coll.as_ref().and_then(|c| c.get("fields"));
        let read = |input: Value| {
            coll.and_then(|c| ColumnMapping.read(c, &input, &Settings::default()).ok())
        };
        let one = read(json!({ "header": "INVOICE NO" }));
        assert_eq!(
            one.as_ref().and_then(Reading::winner),
            Some("invoice_number")
        );
        assert_eq!(
            one.as_ref().map(Reading::reads),
            Some("Reads as Invoice number, on the column headed 'INVOICE NO'")
        );
        let two = read(json!({ "header": "Ref" }));
        assert_eq!(two.as_ref().map(Reading::is_settled), Some(false));
        let none = read(json!({ "header": "Amount" }));
        assert_eq!(
            none.as_ref().map(Reading::reads),
            Some("Still cannot tell which field the column 'Amount' holds.")
        );
        let absent = read(json!({ "from": "x" }));
        assert_eq!(absent.as_ref().map(Reading::is_settled), Some(false));
    }
}
