//! JSON Pointers (RFC 6901) as a mapping writes them (contracts/serve.md "Carrier webhooks"):
//! `/result/tracking_code`, or `^/result/tracking_code` inside `each` to read from the whole
//! payload instead of the current element.

use std::fmt;

use serde_json::Value;

/// Where a pointer starts reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Anchor {
    /// The current element of `each` (or the payload when the mapping has no `each`).
    Here,
    /// The whole payload (written with a leading `^`).
    Root,
}

/// A checked JSON Pointer with its anchor; resolution is serde_json's `Value::pointer`, which
/// implements RFC 6901.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pointer {
    anchor: Anchor,
    /// The RFC 6901 pointer without the `^`.
    path: String,
    /// As written, `^` included (for messages).
    written: String,
}

impl Pointer {
    /// Parses `text`: an optional `^`, then an RFC 6901 pointer — empty (the whole value) or
    /// starting with `/`, with `~` only in the escapes `~0` (`~`) and `~1` (`/`).
    ///
    /// # Errors
    /// A reason naming the rule broken.
    pub fn parse(text: &str) -> Result<Pointer, String> {
        let (anchor, path) = match text.strip_prefix('^') {
            Some(rest) => (Anchor::Root, rest),
            None => (Anchor::Here, text),
        };
        if !path.is_empty() && !path.starts_with('/') {
            return Err(format!(
                "{text:?} is not a JSON Pointer (RFC 6901): it must be empty or start with `/`, e.g. \"/result/status\""
            ));
        }
        let mut chars = path.chars();
        while let Some(c) = chars.next() {
            if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
                return Err(format!(
                    "{text:?} is not a JSON Pointer (RFC 6901): `~` must be followed by 0 (for `~`) or 1 (for `/`)"
                ));
            }
        }
        Ok(Pointer {
            anchor,
            path: path.to_owned(),
            written: text.to_owned(),
        })
    }

    /// Where it reads from.
    pub fn anchor(&self) -> Anchor {
        self.anchor
    }

    /// The value it names, reading from `here` or, for `^` pointers, from `root`.
    pub fn resolve<'a>(&self, here: &'a Value, root: &'a Value) -> Option<&'a Value> {
        let base = match self.anchor {
            Anchor::Here => here,
            Anchor::Root => root,
        };
        base.pointer(&self.path)
    }
}

impl fmt::Display for Pointer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc_6901_examples_resolve() {
        // RFC 6901 §5.
        let doc = json!({ "foo": ["bar", "baz"], "": 0, "a/b": 1, "m~n": 8 });
        let get = |p: &str| Pointer::parse(p).unwrap().resolve(&doc, &doc).cloned();
        assert_eq!(get(""), Some(doc.clone()));
        assert_eq!(get("/foo/0"), Some(json!("bar")));
        assert_eq!(get("/"), Some(json!(0)));
        assert_eq!(get("/a~1b"), Some(json!(1)));
        assert_eq!(get("/m~0n"), Some(json!(8)));
        assert_eq!(get("/nothing"), None);
    }

    #[test]
    fn a_caret_reads_from_the_payload() {
        let root = json!({ "code": "EZ1", "items": [{ "code": "inner" }] });
        let here = &root["items"][0];
        assert_eq!(
            Pointer::parse("/code").unwrap().resolve(here, &root),
            Some(&json!("inner"))
        );
        assert_eq!(
            Pointer::parse("^/code").unwrap().resolve(here, &root),
            Some(&json!("EZ1"))
        );
    }

    #[test]
    fn bad_pointers_are_refused_with_the_rule() {
        assert!(Pointer::parse("status")
            .unwrap_err()
            .contains("start with `/`"));
        assert!(Pointer::parse("^status")
            .unwrap_err()
            .contains("start with `/`"));
        assert!(Pointer::parse("/a~2").unwrap_err().contains("`~`"));
        assert!(Pointer::parse("/a~").unwrap_err().contains("`~`"));
        assert!(Pointer::parse("/a~0~1").is_ok());
    }
}
