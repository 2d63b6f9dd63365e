//! One strict JSON parse for every document the watcher reads (request bodies, carrier webhook
//! payloads, the `replay` and `validate` files): RFC 8259 §4 says member names SHOULD be unique
//! and leaves a repeated one to the parser; `serde_json` keeps the last value silently, so a
//! lesson `{"entry": "a", …, "entry": "b"}` would write to `b`. Here a repeated member is an
//! error naming it ([`StrictJsonError::Duplicate`]).
//!
//! Parts of a document the watcher forwards untouched and never reads (an agent's own metadata
//! beside the Expectations extension's, a message part's `data`) are not its business: a
//! [`Policy`] marks them opaque, and inside them the last value wins as it always did
//! (docs/interpretation.md "Duplicated JSON members").
//!
//! One pass over the text, building the same [`serde_json::Value`] `serde_json::from_slice`
//! builds; each member is checked against its own object (a hash lookup), so the cost does not
//! grow with anything but the document.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Why a document was refused.
#[derive(Debug, thiserror::Error)]
pub enum StrictJsonError {
    /// A member name appears twice in one object the watcher reads.
    ///
    /// What to do: send each member once.
    #[error("the member {member:?} appears twice")]
    Duplicate {
        /// The repeated member name, as sent.
        member: String,
        /// Where the object holding it is, as a JSON Pointer (RFC 6901; `""` for the top level).
        pointer: String,
    },
    /// Not JSON: serde_json's message, with the line and column.
    ///
    /// What to do: fix the syntax at that place.
    #[error("{0}")]
    Syntax(#[from] serde_json::Error),
}

/// One step of the path to a value: a member name or an array index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An object member.
    Member(String),
    /// An array element (0-based).
    Index(usize),
}

/// Which parts of a document are opaque: `opaque(path)` is called with the path of each
/// member's value (outermost first) and answers whether the watcher never reads it. Everything
/// below an opaque value is opaque too.
pub type Policy = fn(&[Step]) -> bool;

/// Every member is read: the policy for every document but an agent's push.
pub fn read_everything(_: &[Step]) -> bool {
    false
}

/// An agent's push (an A2A `StreamResponse` or a bare `Task`): the members of a `metadata`
/// object other than the Expectations extension's (`watcher_core::EXPECTATIONS_URI`), and a
/// message part's `data`, belong to the agent and are forwarded untouched.
pub fn push_body(path: &[Step]) -> bool {
    match path {
        [.., Step::Member(parent), Step::Member(key)] if parent == "metadata" => {
            key != watcher_core::EXPECTATIONS_URI
        }
        [.., Step::Member(parts), Step::Index(_), Step::Member(data)] => {
            parts == "parts" && data == "data"
        }
        _ => false,
    }
}

/// Parses `bytes` as JSON, refusing a repeated member name anywhere.
///
/// # Errors
/// [`StrictJsonError::Duplicate`] naming the first repeated member; [`StrictJsonError::Syntax`]
/// for text that is not JSON.
pub fn from_slice(bytes: &[u8]) -> Result<Value, StrictJsonError> {
    from_slice_with(bytes, read_everything)
}

/// Parses `bytes` as JSON, refusing a repeated member name except below the values `policy`
/// marks opaque.
///
/// # Errors
/// As [`from_slice`].
pub fn from_slice_with(bytes: &[u8], policy: Policy) -> Result<Value, StrictJsonError> {
    let found = RefCell::new(None);
    let mut path = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let parsed = Node {
        policy,
        path: &mut path,
        opaque: false,
        found: &found,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v));
    match (parsed, found.into_inner()) {
        (Err(_), Some(duplicate)) => Err(duplicate),
        (Err(e), None) => Err(StrictJsonError::Syntax(e)),
        (Ok(v), _) => Ok(v),
    }
}

/// Parses `text` as JSON; as [`from_slice`].
///
/// # Errors
/// As [`from_slice`].
pub fn from_str(text: &str) -> Result<Value, StrictJsonError> {
    from_slice(text.as_bytes())
}

/// The seed (and visitor) for one value at `path`.
struct Node<'a> {
    policy: Policy,
    path: &'a mut Vec<Step>,
    opaque: bool,
    /// The duplicate that stopped the parse (serde's own error would add a line and column).
    found: &'a RefCell<Option<StrictJsonError>>,
}

impl Node<'_> {
    fn child(&mut self) -> Node<'_> {
        let opaque = self.opaque || (self.policy)(self.path);
        Node {
            policy: self.policy,
            path: self.path,
            opaque,
            found: self.found,
        }
    }
}

fn pointer(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        out.push('/');
        match step {
            Step::Member(m) => out.push_str(&m.replace('~', "~0").replace('/', "~1")),
            Step::Index(i) => out.push_str(&i.to_string()),
        }
    }
    out
}

impl<'de> DeserializeSeed<'de> for Node<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Node<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // JSON text has no NaN or infinity; serde_json's own `Value` maps them to null alike.
        Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(1024));
        loop {
            self.path.push(Step::Index(items.len()));
            let next = seq.next_element_seed(self.child());
            self.path.pop();
            match next? {
                Some(v) => items.push(v),
                None => return Ok(Value::Array(items)),
            }
        }
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Value, A::Error> {
        let mut members = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if !self.opaque && members.contains_key(&key) {
                let err = de::Error::custom(format_args!("the member {key:?} appears twice"));
                *self.found.borrow_mut() = Some(StrictJsonError::Duplicate {
                    member: key,
                    pointer: pointer(self.path),
                });
                return Err(err);
            }
            self.path.push(Step::Member(key.clone()));
            let value = map.next_value_seed(self.child());
            self.path.pop();
            members.insert(key, value?);
        }
        Ok(Value::Object(members))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn duplicate(text: &str) -> Option<(String, String, String)> {
        match from_slice(text.as_bytes()) {
            Err(e @ StrictJsonError::Duplicate { .. }) => {
                let shown = e.to_string();
                match e {
                    StrictJsonError::Duplicate { member, pointer } => {
                        Some((member, pointer, shown))
                    }
                    StrictJsonError::Syntax(_) => None,
                }
            }
            _ => None,
        }
    }

    #[test]
    fn a_repeated_member_is_named_at_any_depth() {
        assert_eq!(
            duplicate(r#"{"entry": "a", "collection": "c", "entry": "b"}"#),
            Some((
                "entry".into(),
                String::new(),
                "the member \"entry\" appears twice".into()
            ))
        );
        assert_eq!(
            duplicate(r#"{"value": {"pattern": "x", "where": "from", "pattern": "y"}}"#)
                .map(|d| (d.0, d.1)),
            Some(("pattern".into(), "/value".into()))
        );
        assert_eq!(
            duplicate(r#"{"facts": [{"k": 1}, {"k": 1, "k": 2}]}"#).map(|d| d.1),
            Some("/facts/1".into())
        );
        assert_eq!(
            duplicate(r#"{"a/b~": {"x": 1, "x": 1}}"#).map(|d| d.1),
            Some("/a~1b~0".into()),
            "the pointer escapes / and ~"
        );
    }

    #[test]
    fn the_value_is_serde_jsons_value() {
        let text = r#"{"b": [1, -2, 3.5, 18446744073709551615, true, null, "é\n"], "a": {}}"#;
        let strict = from_str(text).ok();
        let plain: Option<Value> = serde_json::from_str(text).ok();
        assert_eq!(strict, plain);
        // Member order is kept (preserve_order), as serde_json keeps it.
        let keys: Option<Vec<&String>> = strict
            .as_ref()
            .and_then(Value::as_object)
            .map(|o| o.keys().collect());
        assert_eq!(keys, Some(vec![&"b".to_owned(), &"a".to_owned()]));
        // The same member in two different objects is not a repeat.
        assert_eq!(
            from_str(r#"{"x": {"k": 1}, "y": {"k": 2}}"#).ok(),
            Some(json!({"x": {"k": 1}, "y": {"k": 2}}))
        );
    }

    #[test]
    fn syntax_errors_keep_serde_jsons_words() {
        for text in ["{\"a\": }", "[1, 2", "{} {}", ""] {
            match from_str(text) {
                Err(StrictJsonError::Syntax(e)) => {
                    let plain = serde_json::from_str::<Value>(text)
                        .err()
                        .map(|p| p.to_string());
                    assert_eq!(Some(e.to_string()), plain, "{text:?}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_push_leaves_the_agents_own_metadata_alone() {
        let uri = watcher_core::EXPECTATIONS_URI;
        let own = format!(
            r#"{{"task": {{"id": "t", "metadata": {{"x-agent": {{"n": 1, "n": 2}}, "{uri}": {{}}}},
               "history": [{{"parts": [{{"data": {{"d": 1, "d": 2}}}}]}}]}}}}"#
        );
        let v = from_slice_with(own.as_bytes(), push_body).ok();
        assert_eq!(
            v.as_ref()
                .map(|v| v["task"]["metadata"]["x-agent"]["n"].clone()),
            Some(json!(2)),
            "the last value wins where the watcher does not read"
        );
        assert!(from_slice(own.as_bytes()).is_err(), "strict elsewhere");
        let ours = format!(r#"{{"task": {{"metadata": {{"{uri}": {{"a": 1, "a": 2}}}}}}}}"#);
        assert!(matches!(
            from_slice_with(ours.as_bytes(), push_body),
            Err(StrictJsonError::Duplicate { ref member, .. }) if member == "a"
        ));
        let top = r#"{"task": {"id": "t", "id": "u"}}"#;
        assert!(from_slice_with(top.as_bytes(), push_body).is_err());
    }
}
