//! The `marks` learnable: which entry (e.g. which customer) a message belongs to, judged by
//! marks — text that gives an entry away (learnables-v1 §6.1 example, §10, §11, §13.3; contract
//! "Definitions and learnables").
//!
//! Shapes (all owned by this learnable; nothing outside this module reads them):
//!
//! - entry value: `{ "marks": [{ "pattern": text, "where": "from"|"subject"|"body"|"attachments"|"any" }] }`
//! - lesson value: `{ "pattern": text, "where"?: ... }` (`where` defaults to `"from"`); adds one mark
//! - input: `{ "from"?: text, "subject"?: text, "body"?: text, "attachments"?: [text] }`
//!
//! Patterns are regular expressions for the `regex` crate (finite automata, linear time in the
//! input), matched case-insensitively, compiled and checked when a value is validated or a
//! lesson absorbed (§13.3), and bounded by [`PATTERN_SIZE_LIMIT`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use regex::{Regex, RegexBuilder};
use serde_json::{json, Map, Value};

use crate::collections::Collection;
use crate::learnable::{
    Absorbed, Candidate, DecidedBy, Learnable, LessonField, Reading, Refusal, Settings,
};

/// The most memory a compiled pattern (and its lazy DFA) may take: 1 MiB. A pattern over it is
/// refused at absorption with a reason, and never run (§13.3).
pub const PATTERN_SIZE_LIMIT: usize = 1 << 20;

/// The longest pattern accepted, in characters.
pub const PATTERN_MAX_CHARS: usize = 2000;

/// What an unsettled `marks` reading says (§11).
pub const UNSETTLED: &str = "Still cannot tell whose this is.";

/// How much of a matched text a reading quotes, in characters.
const EVIDENCE_MAX_CHARS: usize = 80;

/// Compiled patterns kept at most; the cache is emptied when full.
const CACHE_CAPACITY: usize = 4096;

/// Scores closer than this are equal (they are fractions of small counts).
const EPSILON: f64 = 1e-9;

const HOW: &str =
    "Each entry carries marks - text that gives it away, each looked for in one part \
of the message. An entry scores the fraction of its marks that match; the highest score wins if \
it clears the identification margin over the next. Nothing matches, nothing is claimed.";

const PLACES: &str = "from, subject, body, attachments, any";

/// The `marks` learnable. Holds a cache of compiled patterns; cheap to share.
#[derive(Debug, Default)]
pub struct Marks {
    cache: Mutex<HashMap<String, Arc<Regex>>>,
}

/// Where a mark looks (`where`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    From,
    Subject,
    Body,
    Attachments,
    Any,
}

impl Place {
    fn parse(raw: &str) -> Option<Self> {
        match raw {
            "from" => Some(Self::From),
            "subject" => Some(Self::Subject),
            "body" => Some(Self::Body),
            "attachments" => Some(Self::Attachments),
            "any" => Some(Self::Any),
            _ => None,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::From => "from",
            Self::Subject => "subject",
            Self::Body => "body",
            Self::Attachments => "attachments",
            Self::Any => "any",
        }
    }

    /// The phrase `describes` ends with, e.g. `in the from`.
    fn phrase(self) -> &'static str {
        match self {
            Self::From => "in the from",
            Self::Subject => "in the subject",
            Self::Body => "in the body",
            Self::Attachments => "in the attachments",
            Self::Any => "anywhere in the message",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Mark {
    pattern: String,
    place: Place,
}

impl Mark {
    fn to_json(&self) -> Value {
        json!({ "pattern": self.pattern, "where": self.place.as_str() })
    }
}

/// A message as marks read it; absent parts are empty.
#[derive(Debug, Default)]
struct Message {
    from: String,
    subject: String,
    body: String,
    attachments: Vec<String>,
}

impl Message {
    fn parse(input: &Value) -> Result<Self, Refusal> {
        let obj = input.as_object().ok_or_else(|| {
            Refusal::new(
                "a message to read is an object: { \"from\", \"subject\", \"body\", \"attachments\": [text] }",
            )
        })?;
        let text = |key: &str| -> Result<String, Refusal> {
            match obj.get(key) {
                None | Some(Value::Null) => Ok(String::new()),
                // A byte-order mark or zero-width character must not hide a mark.
                Some(Value::String(s)) => Ok(crate::text::visible(s).into_owned()),
                Some(_) => Err(Refusal::new(format!("the message's {key:?} must be text"))),
            }
        };
        let attachments = match obj.get("attachments") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|item| {
                    item.as_str()
                        .map(|s| crate::text::visible(s).into_owned())
                        .ok_or_else(|| {
                            Refusal::new("the message's \"attachments\" must be a list of texts")
                        })
                })
                .collect::<Result<_, _>>()?,
            Some(_) => {
                return Err(Refusal::new(
                    "the message's \"attachments\" must be a list of texts",
                ))
            }
        };
        Ok(Self {
            from: text("from")?,
            subject: text("subject")?,
            body: text("body")?,
            attachments,
        })
    }

    /// The texts a mark looking at `place` searches, in order.
    fn texts(&self, place: Place) -> Vec<&str> {
        match place {
            Place::From => vec![&self.from],
            Place::Subject => vec![&self.subject],
            Place::Body => vec![&self.body],
            Place::Attachments => self.attachments.iter().map(String::as_str).collect(),
            Place::Any => [&self.from, &self.subject, &self.body]
                .into_iter()
                .map(String::as_str)
                .chain(self.attachments.iter().map(String::as_str))
                .collect(),
        }
    }
}

impl Marks {
    /// A `marks` learnable with an empty pattern cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Compiles `pattern` case-insensitively under [`PATTERN_SIZE_LIMIT`], or refuses it with a
    /// reason: empty, too long, not a valid expression (the `regex` crate's own message, e.g.
    /// `unclosed group at position 24`), too big when compiled, or matching empty text (which
    /// would claim every message, §13.1).
    fn compile(&self, pattern: &str) -> Result<Arc<Regex>, Refusal> {
        if let Some(hit) = self.cache_lock().get(pattern) {
            return Ok(Arc::clone(hit));
        }
        let refuse =
            |why: String| Refusal::new(format!("{pattern:?} is not a usable pattern: {why}"));
        if pattern.trim().is_empty() {
            return Err(refuse(
                "it is empty, so it would match every message".into(),
            ));
        }
        if pattern.chars().count() > PATTERN_MAX_CHARS {
            return Err(refuse(format!(
                "it is longer than {PATTERN_MAX_CHARS} characters"
            )));
        }
        let regex = RegexBuilder::new(pattern)
            .case_insensitive(true)
            .size_limit(PATTERN_SIZE_LIMIT)
            .dfa_size_limit(PATTERN_SIZE_LIMIT)
            .build()
            .map_err(|e| refuse(explain_regex_error(&e)))?;
        if regex.is_match("") {
            return Err(refuse(
                "it matches empty text, so it would match every message".into(),
            ));
        }
        let regex = Arc::new(regex);
        let mut cache = self.cache_lock();
        if cache.len() >= CACHE_CAPACITY {
            cache.clear();
        }
        cache.insert(pattern.to_owned(), Arc::clone(&regex));
        Ok(regex)
    }

    fn cache_lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Arc<Regex>>> {
        // A panic elsewhere while holding the lock leaves a cache that is still consistent.
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Parses one mark (a lesson value or an item of an entry's `marks`), applying the default
    /// `where`, and compiles its pattern.
    fn parse_mark(&self, raw: &Value, what: &str) -> Result<Mark, Refusal> {
        let obj = raw.as_object().ok_or_else(|| {
            Refusal::new(format!(
                "{what} is an object: {{ \"pattern\": text, \"where\": one of {PLACES} }}"
            ))
        })?;
        if let Some(key) = obj
            .keys()
            .find(|k| !matches!(k.as_str(), "pattern" | "where"))
        {
            return Err(Refusal::new(format!(
                "{what} has an unknown key {key:?}; a mark has \"pattern\" and \"where\""
            )));
        }
        let pattern = match obj.get("pattern") {
            // Matched text is read without invisible characters, so a pattern is too: a mark
            // that differs from a known one only by a byte-order mark is the same mark.
            Some(Value::String(p)) => crate::text::visible(p).into_owned(),
            Some(_) => return Err(Refusal::new(format!("{what}'s \"pattern\" must be text"))),
            None => {
                return Err(Refusal::new(format!(
                    "{what} needs a \"pattern\": the text that gives the entry away"
                )))
            }
        };
        let place = match obj.get("where") {
            None | Some(Value::Null) => Place::From,
            Some(Value::String(w)) => Place::parse(w).ok_or_else(|| {
                Refusal::new(format!(
                    "{w:?} is not a place to look: choose one of {PLACES}"
                ))
            })?,
            Some(_) => {
                return Err(Refusal::new(format!(
                    "{what}'s \"where\" must be one of {PLACES}"
                )))
            }
        };
        self.compile(&pattern)?;
        Ok(Mark { pattern, place })
    }

    /// Parses an entry value into its marks (duplicates dropped), compiling every pattern.
    fn parse_entry(&self, raw: &Value) -> Result<Vec<Mark>, Refusal> {
        let obj = raw.as_object().ok_or_else(entry_shape)?;
        if obj.keys().any(|k| k != "marks") {
            return Err(entry_shape());
        }
        let items = match obj.get("marks") {
            None | Some(Value::Null) => return Ok(Vec::new()),
            Some(Value::Array(items)) => items,
            Some(_) => return Err(entry_shape()),
        };
        let mut marks: Vec<Mark> = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let mark = self.parse_mark(item, &format!("mark {}", i + 1))?;
            if !marks.contains(&mark) {
                marks.push(mark);
            }
        }
        Ok(marks)
    }

    /// The text `mark` matched in `message`, if any: the first capture group when the pattern
    /// has one and it took part (so a pattern can say which part is the evidence), else the
    /// whole match.
    fn evidence(&self, mark: &Mark, message: &Message) -> Result<Option<String>, Refusal> {
        let regex = self.compile(&mark.pattern)?;
        for text in message.texts(mark.place) {
            if let Some(caps) = regex.captures(text) {
                let hit = caps.get(1).or_else(|| caps.get(0));
                return Ok(Some(
                    hit.map_or_else(String::new, |m| m.as_str().to_owned()),
                ));
            }
        }
        Ok(None)
    }
}

fn entry_shape() -> Refusal {
    Refusal::new(format!(
        "a marks entry is an object: {{ \"marks\": [{{ \"pattern\": text, \"where\": one of {PLACES} }}] }}"
    ))
}

fn entries_value(marks: &[Mark]) -> Value {
    let mut obj = Map::new();
    obj.insert(
        "marks".into(),
        Value::Array(marks.iter().map(Mark::to_json).collect()),
    );
    Value::Object(obj)
}

/// Turns the `regex` crate's error into one line, keeping its words: the syntax error's own
/// description plus the 1-based character position its caret points at, e.g.
/// `unclosed group at position 24`.
fn explain_regex_error(err: &regex::Error) -> String {
    match err {
        regex::Error::Syntax(text) => explain_syntax(text),
        regex::Error::CompiledTooBig(limit) => format!(
            "it compiles to more than {} KiB, the limit for a pattern; make it simpler or shorter",
            limit / 1024
        ),
        other => other.to_string(),
    }
}

fn explain_syntax(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let what = lines
        .iter()
        .rev()
        .find_map(|l| l.strip_prefix("error: "))
        .map(str::trim);
    // Single-line patterns are printed as "    <pattern>" then "    <spaces>^^^".
    let position = lines.iter().find_map(|l| {
        let rest = l.strip_prefix("    ")?;
        let before = rest.find('^')?;
        if rest[..before].chars().all(|c| c == ' ') && rest[before..].chars().all(|c| c == '^') {
            Some(rest[..before].chars().count() + 1)
        } else {
            None
        }
    });
    let numbered = lines.iter().any(|l| l.starts_with("1: "));
    match (what, position) {
        (Some(what), Some(pos)) if !numbered => format!("{what} at position {pos}"),
        (Some(what), _) => what.to_owned(),
        (None, _) => lines
            .iter()
            .map(|l| l.trim())
            .filter(|l| !l.is_empty() && !l.chars().all(|c| c == '~'))
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Shortens quoted evidence to [`EVIDENCE_MAX_CHARS`].
fn quote(text: &str) -> String {
    if text.chars().count() <= EVIDENCE_MAX_CHARS {
        text.to_owned()
    } else {
        let mut short: String = text.chars().take(EVIDENCE_MAX_CHARS - 1).collect();
        short.push('…');
        short
    }
}

impl Learnable for Marks {
    fn name(&self) -> &str {
        "marks"
    }

    fn how(&self) -> &str {
        HOW
    }

    fn decided_by(&self) -> DecidedBy {
        DecidedBy::Rules
    }

    /// The spec's §6.1 fields: `pattern` (text) and `where` (choice, default `from`).
    fn lesson_fields(&self) -> Vec<LessonField> {
        let mut fields = vec![LessonField::text("pattern", "Text that gives it away").with_help(
            "An address, a reference, a phrase. Matched without regard to case; regular expressions work if you want one.",
        )];
        if let Ok(place) = LessonField::choice(
            "where",
            "Where to look for it",
            PLACES.split(", ").map(str::to_owned).collect(),
            Some("from".into()),
        ) {
            fields.push(place.with_help("Narrower is safer. 'any' matches the whole message."));
        }
        fields
    }

    /// `{ "marks": [...] }` → the same with `where` filled in and duplicates dropped. Every
    /// pattern is compiled here (§13.3).
    fn validate_value(&self, value: &Value) -> Result<Value, Refusal> {
        Ok(entries_value(&self.parse_entry(value)?))
    }

    /// Adds the lesson's mark unless the entry already has one with the same pattern and
    /// `where`. `describes`: `matches '<pattern>' in the <where>` (or `anywhere in the message`
    /// for `any`), prefixed `already ` when nothing changed.
    fn absorb(&self, current: Option<&Value>, lesson_value: &Value) -> Result<Absorbed, Refusal> {
        let mark = self.parse_mark(lesson_value, "a marks lesson's `value`")?;
        let mut marks = match current {
            Some(value) => self.parse_entry(value)?,
            None => Vec::new(),
        };
        let says = format!("matches '{}' {}", mark.pattern, mark.place.phrase());
        if marks.contains(&mark) {
            return Ok(Absorbed::unchanged(
                entries_value(&marks),
                format!("already {says}"),
            ));
        }
        marks.push(mark);
        Ok(Absorbed::changed(entries_value(&marks), says))
    }

    /// Scores every entry by the fraction of its marks that match; settled when the best score
    /// is above zero and clears the second best by the margin. Settled reads
    /// `Reads as <label>, on <matched text>`; unsettled reads [`UNSETTLED`].
    fn read(
        &self,
        collection: &Collection,
        input: &Value,
        settings: &Settings,
    ) -> Result<Reading, Refusal> {
        let message = Message::parse(input)?;
        // (raw score, candidate, evidence), in entry-name order.
        let mut scored: Vec<(f64, Candidate, Vec<String>)> = Vec::with_capacity(collection.len());
        for (name, entry) in collection.entries() {
            let marks = self
                .parse_entry(entry.value())
                .map_err(|r| Refusal::new(format!("entry {name}: {}", r.reason())))?;
            let mut matched = Vec::new();
            let mut evidence = Vec::new();
            for mark in &marks {
                if let Some(found) = self.evidence(mark, &message)? {
                    matched.push(mark.pattern.clone());
                    let found = quote(&found);
                    if !evidence.contains(&found) {
                        evidence.push(found);
                    }
                }
            }
            let score = if marks.is_empty() {
                0.0
            } else {
                matched.len() as f64 / marks.len() as f64
            };
            scored.push((
                score,
                Candidate::new(name.as_str(), entry.label(), score, matched),
                evidence,
            ));
        }
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        let best = scored.first().map_or(0.0, |s| s.0);
        let second = scored.get(1).map_or(0.0, |s| s.0);
        let settled = best > 0.0
            && best - second > EPSILON
            && best - second + EPSILON >= settings.margin.get();
        let winner = if settled {
            scored
                .first()
                .map(|(_, c, ev)| (c.name().to_owned(), c.label().to_owned(), ev.join(", ")))
        } else {
            None
        };
        let candidates = scored.into_iter().map(|(_, c, _)| c).collect();
        Ok(match winner {
            Some((name, label, evidence)) => {
                Reading::settled(name, format!("Reads as {label}, on {evidence}"), candidates)
            }
            None => Reading::unsettled(UNSETTLED, candidates),
        })
    }

    fn matches(&self, entry_value: &Value, input: &Value) -> Result<bool, Refusal> {
        let message = Message::parse(input)?;
        for mark in self.parse_entry(entry_value)? {
            if self.evidence(&mark, &message)?.is_some() {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::collections::Collections;

    fn reason(r: Result<Absorbed, Refusal>) -> String {
        match r {
            Err(refusal) => refusal.reason().to_owned(),
            Ok(a) => format!("accepted: {}", a.describes()),
        }
    }

    #[test]
    fn unbalanced_paren_is_refused_with_the_compilers_words() {
        let m = Marks::new();
        let why = reason(m.absorb(None, &json!({ "pattern": r"billing@origin\.example(" })));
        assert_eq!(
            why,
            r#""billing@origin\\.example(" is not a usable pattern: unclosed group at position 24"#
        );
    }

    #[test]
    fn oversized_pattern_is_refused() {
        let m = Marks::new();
        for p in [r"\w{5000}", "a{10000}{10000}"] {
            let why = reason(m.absorb(None, &json!({ "pattern": p })));
            assert!(why.contains("is not a usable pattern"), "{why}");
            assert!(why.contains("1024 KiB"), "{why}");
        }
    }

    #[test]
    fn patterns_that_match_everything_are_refused() {
        let m = Marks::new();
        for p in ["", "  ", "a*", "x|"] {
            let why = reason(m.absorb(None, &json!({ "pattern": p })));
            assert!(why.contains("would match every message"), "{p:?}: {why}");
        }
        let long = "a".repeat(PATTERN_MAX_CHARS + 1);
        assert!(reason(m.absorb(None, &json!({ "pattern": long }))).contains("longer than"));
    }

    #[test]
    fn bad_shapes_are_refused_in_words() {
        let m = Marks::new();
        assert!(
            reason(m.absorb(None, &json!({ "pattern": "x", "where": "to" })))
                .contains("\"to\" is not a place to look")
        );
        assert!(reason(m.absorb(None, &json!({ "where": "from" }))).contains("needs a \"pattern\""));
        assert!(
            reason(m.absorb(None, &json!({ "pattern": "x", "colour": 1 })))
                .contains("unknown key \"colour\"")
        );
        assert!(reason(m.absorb(None, &json!("x"))).contains("is an object"));
        assert!(m.validate_value(&json!({ "marks": "x" })).is_err());
        assert!(m
            .validate_value(&json!({ "marks": [], "extra": 1 }))
            .is_err());
    }

    #[test]
    fn where_defaults_to_from_and_duplicates_are_unchanged() {
        let m = Marks::new();
        let first = m.absorb(None, &json!({ "pattern": r"billing@origin\.example" }));
        let first = first.ok();
        assert_eq!(
            first.as_ref().map(Absorbed::describes),
            Some(r"matches 'billing@origin\.example' in the from")
        );
        let value = first.map(Absorbed::into_value);
        assert_eq!(
            value,
            Some(json!({ "marks": [{ "pattern": r"billing@origin\.example", "where": "from" }] }))
        );
        let again = m
            .absorb(
                value.as_ref(),
                &json!({ "pattern": r"billing@origin\.example", "where": "from" }),
            )
            .ok();
        assert_eq!(again.as_ref().map(Absorbed::is_changed), Some(false));
        assert_eq!(again.as_ref().map(Absorbed::value), value.as_ref());
        // Same pattern elsewhere is new knowledge.
        let elsewhere = m
            .absorb(
                value.as_ref(),
                &json!({ "pattern": r"billing@origin\.example", "where": "any" }),
            )
            .ok();
        assert_eq!(elsewhere.as_ref().map(Absorbed::is_changed), Some(true));
        assert_eq!(
            elsewhere.as_ref().map(Absorbed::describes),
            Some(r"matches 'billing@origin\.example' anywhere in the message")
        );
    }

    #[test]
    fn validate_normalizes_defaults_and_duplicates() {
        let m = Marks::new();
        let v = m.validate_value(&json!({ "marks": [
            { "pattern": "a" }, { "pattern": "a", "where": "from" }, { "pattern": "b", "where": "body" }
        ] }));
        assert_eq!(
            v.ok(),
            Some(json!({ "marks": [
                { "pattern": "a", "where": "from" }, { "pattern": "b", "where": "body" }
            ] }))
        );
        assert_eq!(
            m.validate_value(&json!({})).ok(),
            Some(json!({ "marks": [] }))
        );
    }

    fn customers(northgate: Value, alhamra: Value) -> Option<Collections> {
        Collections::from_json(&json!({ "customers": {
            "learnable": "marks", "entry": "customer", "teaches": "which customer",
            "entries": {
                "northgate": { "label": "Northgate Motors Ltd", "value": northgate },
                "alhamra": { "label": "Al Hamra Trading", "value": alhamra }
            }
        } }))
        .ok()
    }

    fn read(c: &Option<Collections>, input: Value, margin: f64) -> Option<Reading> {
        let settings = Settings {
            margin: crate::Margin::new(margin).ok()?,
        };
        let coll = c.as_ref()?.get("customers")?;
        Marks::new().read(coll, &input, &settings).ok()
    }

    #[test]
    fn score_is_fraction_of_marks_and_margin_decides() {
        let c = customers(
            json!({ "marks": [
                { "pattern": r"billing@origin\.example", "where": "from" },
                { "pattern": "northgate", "where": "any" },
                { "pattern": "NG-\\d+", "where": "subject" }
            ] }),
            json!({ "marks": [{ "pattern": "hamra", "where": "body" }] }),
        );
        let msg = json!({ "from": "Billing <BILLING@origin.example>", "subject": "hello" });
        let r = read(&c, msg.clone(), 0.2);
        assert_eq!(r.as_ref().map(Reading::is_settled), Some(true));
        assert_eq!(r.as_ref().and_then(Reading::winner), Some("northgate"));
        assert_eq!(
            r.as_ref().map(Reading::reads),
            Some("Reads as Northgate Motors Ltd, on BILLING@origin.example")
        );
        let first = r.as_ref().and_then(|r| r.candidates().first().cloned());
        assert_eq!(first.as_ref().map(Candidate::score), Some(0.333));
        // A margin of 0.5 is not cleared by 0.333.
        let strict = read(&c, msg, 0.5);
        assert_eq!(strict.as_ref().map(Reading::is_settled), Some(false));
        assert_eq!(strict.as_ref().map(Reading::reads), Some(UNSETTLED));
        // A tie is never settled, whatever the margin.
        let same = json!({ "marks": [{ "pattern": "shared" }] });
        let tied = customers(same.clone(), same);
        let tie = read(&tied, json!({ "from": "shared@example" }), 0.0);
        assert_eq!(tie.as_ref().map(Reading::is_settled), Some(false));
        assert_eq!(tie.as_ref().and_then(Reading::winner), None);
    }

    #[test]
    fn any_and_attachments_look_in_the_right_places() {
        let c = customers(
            json!({ "marks": [{ "pattern": "invoice 77", "where": "attachments" }] }),
            json!({ "marks": [{ "pattern": "hamra", "where": "any" }] }),
        );
        let att = read(&c, json!({ "attachments": ["x", "INVOICE 77 due"] }), 0.2);
        assert_eq!(att.as_ref().and_then(Reading::winner), Some("northgate"));
        let body_only = read(&c, json!({ "body": "invoice 77" }), 0.2);
        assert_eq!(body_only.as_ref().map(Reading::is_settled), Some(false));
        let any = read(&c, json!({ "attachments": ["Al Hamra"] }), 0.2);
        assert_eq!(any.as_ref().and_then(Reading::winner), Some("alhamra"));
        let bad = c
            .as_ref()
            .and_then(|c| c.get("customers"))
            .map(|coll| Marks::new().read(coll, &json!({ "from": 7 }), &Settings::default()));
        assert!(matches!(bad, Some(Err(_))));
    }

    #[test]
    fn syntax_explanations_keep_the_crate_words() {
        assert_eq!(
            explain_syntax("regex parse error:\n    a{2,1}\n     ^^^^^\nerror: invalid repetition count range, the start must be <= the end"),
            "invalid repetition count range, the start must be <= the end at position 2"
        );
        assert_eq!(
            explain_syntax(
                "regex parse error:\n~~~\n1: a\n2: b(\n    ^\n~~~\nerror: unclosed group\n~~~"
            ),
            "unclosed group"
        );
        assert_eq!(explain_syntax("something\nelse"), "something else");
    }
}
