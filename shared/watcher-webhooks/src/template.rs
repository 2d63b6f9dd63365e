//! Templates (contracts/serve.md "Carrier webhooks"): text with `{pointer}` slots, e.g.
//! `shipment.{/status}:{^/result/tracking_code}`. A slot must name a string or a number.
//! `{{` and `}}` write a literal brace.

use serde_json::Value;

use crate::pointer::Pointer;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Slot(Pointer),
}

/// A checked template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

/// Why a slot could not be filled: the pointer and the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotError {
    /// The slot's pointer as written.
    pub pointer: String,
    /// What is wrong with the value there.
    pub reason: String,
}

/// The JSON type of `v`, for messages (the engine's words).
pub(crate) use watcher_core::expectation::json_type;

impl Template {
    /// Parses `text`.
    ///
    /// # Errors
    /// An unclosed `{`, a lone `}`, or a slot that is not a JSON Pointer, with the reason.
    pub fn parse(text: &str) -> Result<Template, String> {
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut chars = text.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            match c {
                '{' if chars.peek().map(|&(_, n)| n) == Some('{') => {
                    chars.next();
                    literal.push('{');
                }
                '}' if chars.peek().map(|&(_, n)| n) == Some('}') => {
                    chars.next();
                    literal.push('}');
                }
                '{' => {
                    let rest = &text[i + 1..];
                    let end = rest.find('}').ok_or_else(|| {
                        format!("{text:?}: the slot opened at byte {i} is not closed with `}}`")
                    })?;
                    let slot = &rest[..end];
                    let pointer =
                        Pointer::parse(slot).map_err(|e| format!("slot {{{slot}}}: {e}"))?;
                    if !literal.is_empty() {
                        parts.push(Part::Text(std::mem::take(&mut literal)));
                    }
                    parts.push(Part::Slot(pointer));
                    // Skip the slot's characters and its `}`.
                    while let Some(&(j, _)) = chars.peek() {
                        if j > i + end + 1 {
                            break;
                        }
                        chars.next();
                    }
                }
                '}' => {
                    return Err(format!(
                    "{text:?}: `}}` at byte {i} closes no slot (write `}}}}` for a literal brace)"
                ))
                }
                c => literal.push(c),
            }
        }
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Ok(Template { parts })
    }

    /// The slots' pointers, in order.
    pub fn pointers(&self) -> impl Iterator<Item = &Pointer> {
        self.parts.iter().filter_map(|p| match p {
            Part::Slot(p) => Some(p),
            Part::Text(_) => None,
        })
    }

    /// Fills the slots from `here` (the current element) and `root` (the payload).
    ///
    /// # Errors
    /// The first slot whose pointer names nothing, or names neither a string nor a number.
    pub fn render(&self, here: &Value, root: &Value) -> Result<String, SlotError> {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(t) => out.push_str(t),
                Part::Slot(p) => match p.resolve(here, root) {
                    Some(Value::String(s)) => out.push_str(s),
                    Some(Value::Number(n)) => out.push_str(&n.to_string()),
                    Some(other) => {
                        return Err(SlotError {
                            pointer: p.to_string(),
                            reason: format!(
                                "names {}; a slot must name a string or a number",
                                json_type(other)
                            ),
                        })
                    }
                    None => {
                        return Err(SlotError {
                            pointer: p.to_string(),
                            reason: "names nothing in the payload".into(),
                        })
                    }
                },
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_contract_template_renders() {
        let root = json!({ "result": { "tracking_code": "EZ4000000004",
            "tracking_details": [{ "status": "in_transit" }] } });
        let here = &root["result"]["tracking_details"][0];
        let t = Template::parse("shipment.{/status}:{^/result/tracking_code}").unwrap();
        assert_eq!(
            t.render(here, &root).unwrap(),
            "shipment.in_transit:EZ4000000004"
        );
    }

    #[test]
    fn numbers_fill_slots_and_braces_can_be_literal() {
        let v = json!({ "n": 42, "x": 1.5 });
        let t = Template::parse("{{n}}={/n} x={/x}").unwrap();
        assert_eq!(t.render(&v, &v).unwrap(), "{n}=42 x=1.5");
        assert_eq!(
            Template::parse("shipment").unwrap().render(&v, &v).unwrap(),
            "shipment"
        );
    }

    #[test]
    fn slots_must_name_a_string_or_a_number() {
        let v = json!({ "o": {}, "b": true, "z": null });
        for (p, want) in [
            ("{/o}", "an object"),
            ("{/b}", "a boolean"),
            ("{/z}", "null"),
        ] {
            let e = Template::parse(p).unwrap().render(&v, &v).unwrap_err();
            assert!(e.reason.contains(want), "{p}: {e:?}");
        }
        let e = Template::parse("a{/missing}")
            .unwrap()
            .render(&v, &v)
            .unwrap_err();
        assert_eq!(e.pointer, "/missing");
        assert!(e.reason.contains("names nothing"));
    }

    #[test]
    fn bad_templates_are_refused() {
        assert!(Template::parse("a{/b").unwrap_err().contains("not closed"));
        assert!(Template::parse("a}b")
            .unwrap_err()
            .contains("closes no slot"));
        assert!(Template::parse("{status}")
            .unwrap_err()
            .contains("start with `/`"));
        assert!(Template::parse("{/a~2}").unwrap_err().contains("`~`"));
    }
}
