//! Offline checks of what an agent author writes, with the watcher's own parsers, for
//! `a2a-watcher validate` and the agent-author kit: an Agent Card's Expectations declaration
//! (expectations-v1 §6) and the extension's metadata on an Artifact (§8, §8.1, §9.2).
//!
//! Every finding names the JSON path of the field at fault and the rule it breaks. Nothing here
//! needs a store, a clock or a network.

use serde_json::{Map, Value};

use crate::card::{declaration_from_card, ExpectationsDeclaration};
use crate::expectation::{json_type, Expectation};
use crate::fact::parse_fact;
use crate::ids::{ExpectationId, Source};
use crate::EXPECTATIONS_URI;

/// What a check found: `errors` make the file invalid; `warnings` (unknown members, a listed
/// extension without metadata) do not.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Findings {
    /// `path: reason`, one per problem, in document order.
    pub errors: Vec<String>,
    /// Members the extension does not define, and the like.
    pub warnings: Vec<String>,
}

impl Findings {
    /// `true` when there is no error.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// Checks an A2A Agent Card's Expectations declaration (expectations-v1 §6.1, §6.2) with
/// [`declaration_from_card`].
pub fn card(card: &Value) -> Findings {
    match declaration_from_card(card) {
        Ok(_) => Findings::default(),
        Err(errors) => Findings {
            errors: errors.iter().map(ToString::to_string).collect(),
            warnings: Vec::new(),
        },
    }
}

/// Checks the Expectations metadata of an artifact: a bare Artifact (`{ "artifactId", "parts",
/// "metadata" }`), an `artifactUpdate` push, or a `task` (each of its artifacts and its status
/// message), as an agent would push it. Each expectation is read with
/// [`Expectation::from_json`], each fact with [`parse_fact`], each withdrawal id with
/// [`ExpectationId::parse`]; with `declared`, each `kind` must be declared on the card (§6.2).
pub fn artifact(doc: &Value, declared: Option<&ExpectationsDeclaration>) -> Findings {
    let mut out = Findings::default();
    let carriers = carriers(doc);
    if carriers.is_empty() {
        let mut error = "(document): is not an Artifact, an artifactUpdate or a task (a JSON object with `parts`, `artifactUpdate.artifact` or `task`)".to_owned();
        if doc.get("factKey").is_some() || doc.get("facts").is_some() {
            error.push_str(
                "; it looks like a fact report (`factKey`), which is posted to /v1/facts and not validated here",
            );
        }
        out.errors.push(error);
        return out;
    }
    let mut seen_metadata = false;
    for (path, carrier) in carriers {
        let extensions_list = carrier
            .get("extensions")
            .and_then(Value::as_array)
            .is_some_and(|l| l.iter().any(|e| e.as_str() == Some(EXPECTATIONS_URI)));
        let block_path = format!("{path}.metadata[\"{EXPECTATIONS_URI}\"]");
        match carrier
            .get("metadata")
            .and_then(|m| m.get(EXPECTATIONS_URI))
        {
            None | Some(Value::Null) => {
                if extensions_list {
                    out.warnings.push(format!(
                        "{path}.metadata: lists the Expectations extension in `extensions` but has no `metadata[\"{EXPECTATIONS_URI}\"]`; nothing would be raised"
                    ));
                }
            }
            Some(Value::Object(block)) => {
                seen_metadata = true;
                out.warnings
                    .extend(crate::members::block_warnings(block, &block_path));
                check_block(block, &block_path, declared, &mut out);
            }
            Some(other) => out.errors.push(format!(
                "{block_path}: must be an object, not {} (expectations-v1 §8)",
                json_type(other)
            )),
        }
    }
    if !seen_metadata && out.errors.is_empty() {
        out.errors.push(format!(
            "metadata: no `metadata[\"{EXPECTATIONS_URI}\"]` anywhere; the artifact raises, withdraws and reports nothing (expectations-v1 §8)"
        ));
    }
    out
}

/// `(path, object)` of each place that may carry the extension's metadata.
fn carriers(doc: &Value) -> Vec<(String, &Map<String, Value>)> {
    let mut out = Vec::new();
    if let Some(a) = doc
        .get("artifactUpdate")
        .and_then(|u| u.get("artifact"))
        .and_then(Value::as_object)
    {
        out.push(("artifactUpdate.artifact".to_owned(), a));
    } else if let Some(task) = doc.get("task").and_then(Value::as_object) {
        if let Some(list) = task.get("artifacts").and_then(Value::as_array) {
            for (i, a) in list.iter().enumerate() {
                if let Some(a) = a.as_object() {
                    out.push((format!("task.artifacts[{i}]"), a));
                }
            }
        }
        if let Some(m) = task
            .get("status")
            .and_then(|s| s.get("message"))
            .and_then(Value::as_object)
        {
            out.push(("task.status.message".to_owned(), m));
        }
    } else if let Some(a) = doc.as_object().filter(|a| a.contains_key("parts")) {
        out.push(("artifact".to_owned(), a));
    }
    out
}

fn check_block(
    block: &Map<String, Value>,
    path: &str,
    declared: Option<&ExpectationsDeclaration>,
    out: &mut Findings,
) {
    match block.get("expectations") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            let mut ids: Vec<ExpectationId> = Vec::new();
            for (i, item) in list.iter().enumerate() {
                let at = format!("{path}.expectations[{i}]");
                match Expectation::from_json(item) {
                    Ok(e) => {
                        if let Some(d) = declared {
                            if d.kind(&e.kind).is_none() {
                                out.errors.push(format!(
                                    "{at}.kind: {:?} is not declared on the agent's card (expectations-v1 §6.2, §8)",
                                    e.kind
                                ));
                            }
                        }
                        if ids.contains(&e.expectation_id) {
                            out.errors.push(format!(
                                "{at}.expectationId: {} appears twice; an expectationId must never be reused (expectations-v1 §8)",
                                e.expectation_id
                            ));
                        }
                        ids.push(e.expectation_id);
                    }
                    Err(err) => out.errors.push(format!(
                        "{at}.{}: {} (expectations-v1 §8)",
                        err.field.trim_start_matches("expectations[]"),
                        err.reason
                    )),
                }
            }
        }
        Some(other) => out.errors.push(format!(
            "{path}.expectations: must be an array, not {} (expectations-v1 §8)",
            json_type(other)
        )),
    }
    match block.get("withdraw") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            for (i, v) in list.iter().enumerate() {
                if v.as_str().is_none_or(|s| ExpectationId::parse(s).is_err()) {
                    out.errors.push(format!(
                        "{path}.withdraw[{i}]: must be an expectationId string (expectations-v1 §8.1)"
                    ));
                }
            }
        }
        Some(other) => out.errors.push(format!(
            "{path}.withdraw: must be an array, not {} (expectations-v1 §8.1)",
            json_type(other)
        )),
    }
    match block.get("facts") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            let reporter = Source::parse("validate").expect("a valid source id");
            for (i, v) in list.iter().enumerate() {
                if let Err(e) = parse_fact(v, &reporter) {
                    out.errors.push(format!(
                        "{path}.facts[{i}].{}: {} (expectations-v1 §9.2)",
                        e.field, e.reason
                    ));
                }
            }
        }
        Some(other) => out.errors.push(format!(
            "{path}.facts: must be an array, not {} (expectations-v1 §9.2)",
            json_type(other)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn artifact_with(expectations: Value) -> Value {
        json!({
            "artifactId": "a1",
            "parts": [{ "text": "booked" }],
            "metadata": { EXPECTATIONS_URI: { "expectations": expectations } }
        })
    }

    fn manifest() -> Value {
        json!({
            "expectationId": "exp-1", "kind": "shipment.manifest",
            "subject": { "type": "shipment", "id": "PA-1" }, "expects": "the manifest",
            "satisfiedBy": { "factKey": "k" }, "dueAt": "2026-09-10T20:15:00Z", "basis": "observed"
        })
    }

    #[test]
    fn a_valid_artifact_has_no_errors() {
        let f = artifact(&artifact_with(json!([manifest()])), None);
        assert_eq!(f, Findings::default());
    }

    #[test]
    fn a_fact_given_as_an_artifact_is_named_a_fact() {
        let f = artifact(
            &json!({ "factKey": "k", "observedAt": "2026-09-10T20:15:00Z",
                     "subject": { "type": "shipment", "id": "PA-1" } }),
            None,
        );
        assert_eq!(f.errors.len(), 1, "{f:?}");
        assert!(f.errors[0].starts_with("(document): is not an Artifact"));
        assert!(f.errors[0].contains("looks like a fact report"), "{f:?}");
        let f = artifact(&json!({ "name": "x" }), None);
        assert!(!f.errors[0].contains("fact report"), "{f:?}");
    }

    #[test]
    fn a_bad_field_is_named_with_its_full_path() {
        let mut e = manifest();
        e["dueAt"] = json!("2026-09-10T20:15:00");
        let f = artifact(&artifact_with(json!([manifest(), e])), None);
        assert_eq!(f.errors.len(), 1, "{f:?}");
        assert!(f.errors[0].starts_with(&format!(
            "artifact.metadata[\"{EXPECTATIONS_URI}\"].expectations[1].dueAt: "
        )));
        assert!(f.errors[0].contains("has no offset"));
        let f = artifact(&artifact_with(json!([manifest(), manifest()])), None);
        assert_eq!(f.errors.len(), 1, "{f:?}");
        assert!(f.errors[0].contains("expectations[1].expectationId: exp-1 appears twice"));
    }

    #[test]
    fn an_undeclared_kind_is_named_when_the_card_is_given() {
        let d = ExpectationsDeclaration {
            keeps_time: false,
            lapse_skill: "handle_lapse".into(),
            kinds: Vec::new(),
        };
        let f = artifact(&artifact_with(json!([manifest()])), Some(&d));
        assert_eq!(f.errors.len(), 1);
        assert!(f.errors[0].contains("expectations[0].kind: \"shipment.manifest\" is not declared"));
    }

    #[test]
    fn a_document_without_metadata_or_of_the_wrong_shape_is_refused() {
        assert!(!artifact(&json!({"artifactId": "a", "parts": []}), None).is_valid());
        assert!(!artifact(&json!([1]), None).is_valid());
    }
}
