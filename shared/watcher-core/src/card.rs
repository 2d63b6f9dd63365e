//! The extension declaration on an Agent Card (expectations-v1 §6) and its validation.

use serde::Serialize;
use serde_json::Value;

use crate::EXPECTATIONS_URI;

/// One `ExpectationKind` (expectations-v1 §6.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExpectationKind {
    /// Identifier of the class of expectation, unique within the declaration.
    pub kind: String,
    /// What kind of thing it is about.
    pub subject_type: String,
    /// What is expected, in a person's words.
    pub describes: String,
    /// `observed`, `contract`, `declared`, or an unknown value kept as given (§15).
    pub basis: String,
    /// Skill ids whose tasks may raise it; `None` means any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<String>>,
}

/// The extension's `params` (expectations-v1 §6.1), validated against the card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ExpectationsDeclaration {
    /// Whether the agent runs its own clock (§12.2).
    pub keeps_time: bool,
    /// The skill a lapse task invokes; names a skill on the card.
    pub lapse_skill: String,
    /// What the agent expects, by kind.
    pub kinds: Vec<ExpectationKind>,
}

impl ExpectationsDeclaration {
    /// The declared kind named `kind`.
    pub fn kind(&self, kind: &str) -> Option<&ExpectationKind> {
        self.kinds.iter().find(|k| k.kind == kind)
    }
}

/// One thing wrong with a card: the JSON path of the field and the rule it breaks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {reason}")]
pub struct CardError {
    /// JSON path, e.g. `capabilities.extensions[0].params.lapseSkill`.
    pub field: String,
    /// The rule, in words, with the spec section.
    pub reason: String,
}

/// Words that mark a `describes` as a placeholder rather than a description (§6.2).
const PLACEHOLDERS: &[&str] = &[
    "todo",
    "tbd",
    "tba",
    "fixme",
    "xxx",
    "placeholder",
    "description",
    "describes",
    "lorem ipsum",
    "n/a",
    "na",
    "none",
    "null",
    "test",
    "example",
    "...",
    "…",
    "-",
    "?",
];

fn is_placeholder(text: &str) -> bool {
    let t = text.trim().to_lowercase();
    t.is_empty()
        || PLACEHOLDERS.contains(&t.as_str())
        || t.starts_with("lorem ipsum")
        || t.chars().all(|c| !c.is_alphanumeric())
}

/// Reads and validates the Expectations declaration of an A2A 1.0 Agent Card (JSON).
///
/// Checks (expectations-v1 §6): the extension is declared with `required` false; `keepsTime` is
/// a boolean; `lapseSkill` names a skill on the card; `kinds` is an array whose `kind`s are
/// unique, each with `subjectType`, a `describes` that is not empty or a placeholder, and a
/// `basis` (unknown values kept, §15).
///
/// # Errors
/// Every problem found, each naming its field; an empty list never comes back as `Err`.
pub fn declaration_from_card(card: &Value) -> Result<ExpectationsDeclaration, Vec<CardError>> {
    let mut errors = Vec::new();
    let err = |errors: &mut Vec<CardError>, field: String, reason: &str| {
        errors.push(CardError {
            field,
            reason: reason.to_owned(),
        });
    };
    let Some(extensions) = card
        .get("capabilities")
        .and_then(|c| c.get("extensions"))
        .and_then(Value::as_array)
    else {
        return Err(vec![CardError {
            field: "capabilities.extensions".into(),
            reason: format!("does not declare {EXPECTATIONS_URI} (expectations-v1 §6.1)"),
        }]);
    };
    let Some((ext_index, ext)) = extensions
        .iter()
        .enumerate()
        .find(|(_, e)| e.get("uri").and_then(Value::as_str) == Some(EXPECTATIONS_URI))
    else {
        return Err(vec![CardError {
            field: "capabilities.extensions".into(),
            reason: format!("does not declare {EXPECTATIONS_URI} (expectations-v1 §6.1)"),
        }]);
    };
    let base = format!("capabilities.extensions[{ext_index}]");
    if ext.get("required").and_then(Value::as_bool) == Some(true) {
        err(
            &mut errors,
            format!("{base}.required"),
            "must be false (expectations-v1 §6.1)",
        );
    }
    let params = ext.get("params").and_then(Value::as_object);
    let Some(params) = params else {
        return Err(vec![CardError {
            field: format!("{base}.params"),
            reason: "is required and must be an object (expectations-v1 §6.1)".into(),
        }]);
    };
    let keeps_time = match params.get("keepsTime") {
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            err(
                &mut errors,
                format!("{base}.params.keepsTime"),
                "must be a boolean (expectations-v1 §6.1)",
            );
            false
        }
        None => {
            err(
                &mut errors,
                format!("{base}.params.keepsTime"),
                "is required (expectations-v1 §6.1)",
            );
            false
        }
    };
    let lapse_skill = match params.get("lapseSkill").and_then(Value::as_str) {
        Some(s) if !s.trim().is_empty() => {
            let on_card = card
                .get("skills")
                .and_then(Value::as_array)
                .is_some_and(|skills| {
                    skills
                        .iter()
                        .any(|k| k.get("id").and_then(Value::as_str) == Some(s))
                });
            if !on_card {
                errors.push(CardError {
                    field: format!("{base}.params.lapseSkill"),
                    reason: format!(
                        "{s:?} does not name a skill on the card (expectations-v1 §6.1)"
                    ),
                });
            }
            s.to_owned()
        }
        _ => {
            err(
                &mut errors,
                format!("{base}.params.lapseSkill"),
                "is required and must be a skill id (expectations-v1 §6.1)",
            );
            String::new()
        }
    };
    let mut kinds = Vec::new();
    match params.get("kinds") {
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                let path = format!("{base}.params.kinds[{i}]");
                match parse_kind(item, &path) {
                    Ok(k) => {
                        if kinds.iter().any(|o: &ExpectationKind| o.kind == k.kind) {
                            errors.push(CardError {
                                field: format!("{path}.kind"),
                                reason: format!("{:?} is declared twice; kinds must be unique (expectations-v1 §6.2)", k.kind),
                            });
                        } else {
                            kinds.push(k);
                        }
                    }
                    Err(mut e) => errors.append(&mut e),
                }
            }
        }
        Some(_) => err(
            &mut errors,
            format!("{base}.params.kinds"),
            "must be an array (expectations-v1 §6.1)",
        ),
        None => err(
            &mut errors,
            format!("{base}.params.kinds"),
            "is required (it may be empty) (expectations-v1 §6.1)",
        ),
    }
    if errors.is_empty() {
        Ok(ExpectationsDeclaration {
            keeps_time,
            lapse_skill,
            kinds,
        })
    } else {
        Err(errors)
    }
}

fn parse_kind(item: &Value, path: &str) -> Result<ExpectationKind, Vec<CardError>> {
    let mut errors = Vec::new();
    let mut text = |name: &str| -> String {
        match item.get(name).and_then(Value::as_str) {
            Some(s) if !s.trim().is_empty() => s.to_owned(),
            _ => {
                errors.push(CardError {
                    field: format!("{path}.{name}"),
                    reason: "is required and must be a non-empty string (expectations-v1 §6.2)"
                        .into(),
                });
                String::new()
            }
        }
    };
    let kind = text("kind");
    let subject_type = text("subjectType");
    let describes = text("describes");
    let basis = text("basis");
    if !describes.is_empty() && is_placeholder(&describes) {
        errors.push(CardError {
            field: format!("{path}.describes"),
            reason: format!("{describes:?} is a placeholder; say what is expected in a person's words (expectations-v1 §6.2)"),
        });
    }
    let skills = match item.get("skills") {
        None | Some(Value::Null) => None,
        Some(Value::Array(a)) => {
            let mut out = Vec::new();
            for (j, s) in a.iter().enumerate() {
                match s.as_str() {
                    Some(s) => out.push(s.to_owned()),
                    None => errors.push(CardError {
                        field: format!("{path}.skills[{j}]"),
                        reason: "must be a skill id string (expectations-v1 §6.2)".into(),
                    }),
                }
            }
            Some(out)
        }
        Some(_) => {
            errors.push(CardError {
                field: format!("{path}.skills"),
                reason: "must be an array of skill ids (expectations-v1 §6.2)".into(),
            });
            None
        }
    };
    if errors.is_empty() {
        Ok(ExpectationKind {
            kind,
            subject_type,
            describes,
            basis,
            skills,
        })
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn card() -> Value {
        json!({
            "name": "Booking", "description": "books", "version": "1",
            "supportedInterfaces": [{"url": "http://127.0.0.1:9/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
            "capabilities": {"extensions": [{
                "uri": EXPECTATIONS_URI,
                "params": {
                    "keepsTime": false,
                    "lapseSkill": "handle_lapse",
                    "kinds": [
                        {"kind": "shipment.manifest", "subjectType": "shipment", "describes": "the airline manifest for a booked shipment", "basis": "observed"},
                        {"kind": "question.answer", "subjectType": "task", "describes": "a person's answer to a question this agent asked", "basis": "declared"}
                    ]
                }
            }]},
            "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
            "skills": [{"id": "handle_lapse", "name": "Handle lapse", "description": "d", "tags": []}]
        })
    }

    fn fields(card: &Value) -> Vec<String> {
        declaration_from_card(card)
            .unwrap_err()
            .into_iter()
            .map(|e| e.field)
            .collect()
    }

    #[test]
    fn a_valid_card_parses() {
        let d = declaration_from_card(&card()).unwrap();
        assert!(!d.keeps_time);
        assert_eq!(d.lapse_skill, "handle_lapse");
        assert_eq!(d.kinds.len(), 2);
        assert!(d.kind("question.answer").is_some());
    }

    #[test]
    fn keeps_time_is_required() {
        let mut c = card();
        c["capabilities"]["extensions"][0]["params"]
            .as_object_mut()
            .unwrap()
            .remove("keepsTime");
        assert_eq!(fields(&c), ["capabilities.extensions[0].params.keepsTime"]);
    }

    #[test]
    fn lapse_skill_must_name_a_skill_on_the_card() {
        let mut c = card();
        c["capabilities"]["extensions"][0]["params"]["lapseSkill"] = json!("nope");
        assert_eq!(fields(&c), ["capabilities.extensions[0].params.lapseSkill"]);
    }

    #[test]
    fn kinds_are_unique_and_complete() {
        let mut c = card();
        let k = c["capabilities"]["extensions"][0]["params"]["kinds"][0].clone();
        c["capabilities"]["extensions"][0]["params"]["kinds"]
            .as_array_mut()
            .unwrap()
            .push(k);
        assert_eq!(
            fields(&c),
            ["capabilities.extensions[0].params.kinds[2].kind"]
        );
        let mut c = card();
        c["capabilities"]["extensions"][0]["params"]["kinds"][1]
            .as_object_mut()
            .unwrap()
            .remove("basis");
        assert_eq!(
            fields(&c),
            ["capabilities.extensions[0].params.kinds[1].basis"]
        );
    }

    #[test]
    fn placeholder_describes_is_refused_and_unknown_basis_kept() {
        for p in ["TODO", "", "...", "tbd", "Lorem ipsum dolor"] {
            let mut c = card();
            c["capabilities"]["extensions"][0]["params"]["kinds"][0]["describes"] = json!(p);
            assert_eq!(
                fields(&c),
                ["capabilities.extensions[0].params.kinds[0].describes"],
                "{p}"
            );
        }
        let mut c = card();
        c["capabilities"]["extensions"][0]["params"]["kinds"][0]["basis"] = json!("rumour");
        assert_eq!(declaration_from_card(&c).unwrap().kinds[0].basis, "rumour");
    }

    #[test]
    fn missing_extension_and_required_true_are_named() {
        let mut c = card();
        c["capabilities"]["extensions"] = json!([]);
        assert_eq!(fields(&c), ["capabilities.extensions"]);
        let mut c = card();
        c["capabilities"]["extensions"][0]["required"] = json!(true);
        assert_eq!(fields(&c), ["capabilities.extensions[0].required"]);
    }
}
