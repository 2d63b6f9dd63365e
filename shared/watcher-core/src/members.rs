//! Members the extension defines, and warnings for the ones it does not (security issue: "tell
//! the sender what was ignored"). A misspelled optional member (`horizn`) would otherwise be
//! dropped in silence and the agent told nothing was wrong; the watcher names it, and the nearest
//! member it knows, in the push and facts answers. Unknown members never refuse anything: A2A
//! readers ignore what they do not know, and the rest of the object is used as sent.

use serde_json::{Map, Value};

/// An Expectation's members (expectations-v1 §8).
pub const EXPECTATION: &[&str] = &[
    "expectationId",
    "kind",
    "subject",
    "expects",
    "satisfiedBy",
    "dueAt",
    "grace",
    "anchor",
    "after",
    "horizon",
    "basis",
    "supersedes",
];

/// The extension's metadata object on an artifact or message (expectations-v1 §8, §8.1, §9.2).
pub const BLOCK: &[&str] = &["expectations", "withdraw", "reason", "facts"];

/// A Fact's members (expectations-v1 §9.2).
pub const FACT: &[&str] = &["factKey", "observedAt", "source", "subject"];

/// A Subject's members.
pub const SUBJECT: &[&str] = &["type", "id"];

/// A Matcher's members.
pub const MATCHER: &[&str] = &["factKey"];

/// An Anchor's members.
pub const ANCHOR: &[&str] = &["expectationId", "offset"];

/// Warnings for every member of `obj` (at `path`, e.g. `expectations[0]`) not in `known`, each
/// naming the member and the nearest known one, e.g. ``field `expectations[0].horizn` is not a
/// member of an expectation (did you mean `horizon`?); it was ignored``.
pub fn unknown(obj: &Map<String, Value>, known: &[&str], path: &str, what: &str) -> Vec<String> {
    obj.keys()
        .filter(|k| !known.contains(&k.as_str()))
        .map(|k| {
            let field = if path.is_empty() {
                k.clone()
            } else {
                format!("{path}.{k}")
            };
            match nearest(k, known) {
                Some(n) => format!(
                    "field `{field}` is not a member of {what} (did you mean `{n}`?); it was ignored"
                ),
                None => format!("field `{field}` is not a member of {what}; it was ignored"),
            }
        })
        .collect()
}

/// Warnings for an Expectation object and the objects inside it.
pub fn expectation_warnings(v: &Value, path: &str) -> Vec<String> {
    let Some(obj) = v.as_object() else {
        return Vec::new();
    };
    let mut out = unknown(
        obj,
        EXPECTATION,
        path,
        "an expectation (expectations-v1 §8)",
    );
    for (member, known, what) in [
        ("subject", SUBJECT, "a subject"),
        ("satisfiedBy", MATCHER, "a matcher"),
        ("anchor", ANCHOR, "an anchor"),
    ] {
        if let Some(inner) = obj.get(member).and_then(Value::as_object) {
            out.extend(unknown(inner, known, &format!("{path}.{member}"), what));
        }
    }
    out
}

/// Warnings for a Fact object and its subject.
pub fn fact_warnings(v: &Value, path: &str) -> Vec<String> {
    let Some(obj) = v.as_object() else {
        return Vec::new();
    };
    let mut out = unknown(obj, FACT, path, "a fact (expectations-v1 §9.2)");
    if let Some(inner) = obj.get("subject").and_then(Value::as_object) {
        out.extend(unknown(
            inner,
            SUBJECT,
            &format!("{path}.subject"),
            "a subject",
        ));
    }
    out
}

/// Warnings for the extension's metadata object and everything in it.
pub fn block_warnings(block: &Map<String, Value>, path: &str) -> Vec<String> {
    let mut out = unknown(
        block,
        BLOCK,
        path,
        "the extension's metadata (expectations-v1 §8)",
    );
    if let Some(list) = block.get("expectations").and_then(Value::as_array) {
        for (i, e) in list.iter().enumerate() {
            out.extend(expectation_warnings(
                e,
                &format!("{path}.expectations[{i}]"),
            ));
        }
    }
    if let Some(list) = block.get("facts").and_then(Value::as_array) {
        for (i, f) in list.iter().enumerate() {
            out.extend(fact_warnings(f, &format!("{path}.facts[{i}]")));
        }
    }
    out
}

/// The known member closest to `name` by edit distance (case-insensitive), when close enough to
/// be a likely misspelling: at most a third of its length away.
fn nearest<'a>(name: &str, known: &[&'a str]) -> Option<&'a str> {
    let lower = name.to_lowercase();
    known
        .iter()
        .map(|k| (strsim::levenshtein(&lower, &k.to_lowercase()), *k))
        .filter(|(d, k)| *d <= (k.len().max(3) / 3).max(1))
        .min()
        .map(|(_, k)| k)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_misspelled_member_is_named_with_the_nearest_known_one() {
        // In the order sent.
        let w = expectation_warnings(
            &json!({ "expectationId": "e", "horizn": "x", "Grace": "PT1H", "colour": "red",
                     "subject": { "type": "t", "id": "i", "idd": "j" } }),
            "expectations[0]",
        );
        assert_eq!(
            w,
            [
                "field `expectations[0].horizn` is not a member of an expectation (expectations-v1 §8) (did you mean `horizon`?); it was ignored",
                "field `expectations[0].Grace` is not a member of an expectation (expectations-v1 §8) (did you mean `grace`?); it was ignored",
                "field `expectations[0].colour` is not a member of an expectation (expectations-v1 §8); it was ignored",
                "field `expectations[0].subject.idd` is not a member of a subject (did you mean `id`?); it was ignored",
            ]
        );
    }

    #[test]
    fn known_members_give_no_warning() {
        let e = json!({ "expectationId": "e", "kind": "k", "subject": { "type": "t", "id": "i" },
            "expects": "x", "satisfiedBy": { "factKey": "f" }, "dueAt": "2026-09-10T00:00:00Z",
            "grace": "PT1H", "anchor": { "expectationId": "d", "offset": "PT1H" }, "after": [],
            "horizon": "2026-09-11T00:00:00Z", "basis": "observed", "supersedes": "p" });
        assert!(expectation_warnings(&e, "e").is_empty());
        assert!(fact_warnings(
            &json!({ "factKey": "k", "observedAt": "t", "source": "s" }),
            "f"
        )
        .is_empty());
    }
}
