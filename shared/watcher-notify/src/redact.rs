//! What leaves for a third party (expectations-v1 §14: a record carries the classification of its
//! most sensitive subject): a channel's `redact` names fields its notifications leave out, or,
//! with a `redact_key`, replace by a keyed hash, in every format.
//!
//! | name | what it covers |
//! |---|---|
//! | `subject` | the subject's id (`block.subject.id`), the links (their paths hold it), and any text or agent answer that contains it (the whole text: a reference is not cut out of a sentence, where a short id would also match dates and counts) |
//! | `agent_text` | what agents wrote: `block.expects`, the lapse task's sentence (`text`, built from it), and an agent's answer or a card read's error (`error`, and the event sentence that quotes it) |
//! | `expectation` | expectation ids (`block.expectationId`, `block.satisfiedAfter`), the lapse task's `messageId` (which holds one), and any text that contains one |
//! | `fact_key` | the key of the fact an expectation waits for: no event carries it today (the lapse block names the expectation, not its matcher), so nothing is removed; accepted so a channel's policy holds if an event comes to carry it |
//!
//! A redacted value becomes:
//! * with `redact_key`: `hmac_` and the first 32 hex digits (128 bits) of HMAC-SHA256 of the value
//!   under the key: the same value gives the same hash on every notification of the channel, so
//!   a person can tell that two pages are about the same subject without learning which;
//! * without: [`OMITTED`] in the event, which the JSON formats leave out altogether
//!   ([`Redaction::strip`]: the key is absent) and the text formats (Slack, Teams, email, the
//!   incident formats' summaries) show as `[redacted]`.
//!
//! What stays: the tenant, the agent, the lapse kind, the expectation's `kind`, the subject's
//! type, the instants, and the event's id (`msg_…`, a one-way hash). So a page can still say
//! `Overdue: shipment.manifest for shipment [redacted] (agent booking)`.

use std::collections::BTreeSet;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::Value;
use watcher_core::ids::ExpectationId;

use crate::event::{AgentEvent, LapseEvent, ResolvedEvent};

/// What an omitted value reads as in the event and in text; whole-value occurrences are left out
/// of JSON bodies ([`Redaction::strip`]).
pub const OMITTED: &str = "[redacted]";

/// A field `redact` can name ([`watcher_config::notify::REDACT_FIELDS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Field {
    /// `subject`: the subject's id.
    Subject,
    /// `fact_key`: the fact key an expectation waits for (carried by no event today).
    FactKey,
    /// `agent_text`: `expects`, the lapse task's text, agents' answers.
    AgentText,
    /// `expectation`: expectation ids and `messageId`.
    Expectation,
}

impl Field {
    /// The field `name` names (`subject`, `fact_key`, `agent_text`, `expectation`).
    pub fn parse(name: &str) -> Option<Field> {
        match name {
            "subject" => Some(Field::Subject),
            "fact_key" => Some(Field::FactKey),
            "agent_text" => Some(Field::AgentText),
            "expectation" => Some(Field::Expectation),
            _ => None,
        }
    }
}

/// A channel's redaction: the fields, and the hash key (`None`: fields are left out).
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redaction {
    fields: BTreeSet<Field>,
    key: Option<Vec<u8>>,
}

impl std::fmt::Debug for Redaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The key is a secret: only whether there is one.
        f.debug_struct("Redaction")
            .field("fields", &self.fields)
            .field("hashed", &self.key.is_some())
            .finish()
    }
}

impl Redaction {
    /// The redaction of `names` (as `redact` gives them) with `key` (`redact_key`).
    ///
    /// # Errors
    /// A name that is not a field, in words.
    pub fn new(names: &[String], key: Option<&str>) -> Result<Redaction, String> {
        let fields = names
            .iter()
            .map(|n| Field::parse(n).ok_or_else(|| format!("{n:?} is not a field to redact")))
            .collect::<Result<_, _>>()?;
        Ok(Redaction {
            fields,
            key: key.map(|k| k.as_bytes().to_vec()),
        })
    }

    /// Whether nothing is redacted.
    pub fn is_empty(&self) -> bool {
        self.fields.is_empty()
    }

    /// Whether `field` is redacted.
    pub fn covers(&self, field: Field) -> bool {
        self.fields.contains(&field)
    }

    /// Whether redacted values are left out (no `redact_key`) rather than hashed.
    pub fn omits(&self) -> bool {
        self.key.is_none()
    }

    /// What `value` becomes: `hmac_{32 hex}` under the key, or [`OMITTED`].
    pub fn replace(&self, value: &str) -> String {
        let Some(key) = &self.key else {
            return OMITTED.to_owned();
        };
        // HMAC takes a key of any length: new_from_slice cannot fail.
        let Ok(mut mac) = Hmac::<sha2::Sha256>::new_from_slice(key) else {
            return OMITTED.to_owned();
        };
        mac.update(value.as_bytes());
        let tag = mac.finalize().into_bytes();
        format!("hmac_{}", hex::encode(&tag[..16]))
    }

    /// The strings whose presence makes a text redacted whole: the subject id and expectation
    /// ids of `e`, as the channel covers them.
    fn references(&self, e: &LapseEvent) -> Vec<String> {
        let Some(b) = &e.block else {
            // No block: the expectation id is still in the messageId.
            return Vec::new();
        };
        let mut refs = Vec::new();
        if self.covers(Field::Subject) {
            refs.push(b.subject.id.clone());
        }
        if self.covers(Field::Expectation) {
            refs.push(b.expectation_id.to_string());
            refs.extend(b.satisfied_after.iter().map(ToString::to_string));
        }
        refs.retain(|r| !r.is_empty());
        refs
    }

    /// `text`, or its replacement when it holds one of `refs` (or is agent text the channel
    /// redacts: `agent_text`).
    fn text(&self, text: &str, refs: &[String], agent_text: bool) -> String {
        if (agent_text && self.covers(Field::AgentText)) || refs.iter().any(|r| text.contains(r)) {
            self.replace(text)
        } else {
            text.to_owned()
        }
    }

    /// `e` as the channel may send it.
    pub fn lapse(&self, e: &LapseEvent) -> LapseEvent {
        if self.is_empty() {
            return e.clone();
        }
        let refs = self.references(e);
        let mut out = e.clone();
        if self.covers(Field::Expectation) {
            out.message_id = self.replace(&e.message_id);
        }
        if self.covers(Field::Subject) {
            out.links = None;
        }
        out.text = match &e.text {
            Some(_) if self.covers(Field::AgentText) && self.omits() => None,
            Some(t) => Some(self.text(t, &refs, true)),
            None => None,
        };
        if let Some(b) = out.block.as_mut() {
            if self.covers(Field::Subject) {
                b.subject.id = self.replace(&b.subject.id);
            }
            b.expects = self.text(&b.expects, &refs, true);
            if self.covers(Field::Expectation) {
                b.expectation_id = self.expectation_id(&b.expectation_id);
                b.satisfied_after = b
                    .satisfied_after
                    .iter()
                    .map(|v| self.expectation_id(v))
                    .collect();
            }
        }
        out
    }

    /// The replacement of the expectation id `v`.
    fn expectation_id(&self, v: &ExpectationId) -> ExpectationId {
        // A replacement is never empty nor holds a control character: it parses.
        ExpectationId::parse(self.replace(v.as_str())).unwrap_or_else(|_| v.clone())
    }

    /// `e` as the channel may send it: its lapse task redacted ([`Redaction::lapse`]), its
    /// `error` (an agent's answer or a card read's error) redacted under `agent_text` or when
    /// it holds a reference, and its sentence with the lapse's headline and the error replaced
    /// as they are.
    pub fn agent(&self, e: &AgentEvent) -> AgentEvent {
        if self.is_empty() {
            return e.clone();
        }
        let mut out = e.clone();
        let refs = e
            .lapse_task
            .as_ref()
            .map(|l| self.references(l))
            .unwrap_or_default();
        if let Some(l) = &e.lapse_task {
            let redacted = self.lapse(l);
            out.text = out.text.replace(&l.headline(), &redacted.headline());
            out.lapse_task = Some(redacted);
        }
        if let Some(err) = &e.error {
            let shown = self.text(err, &refs, true);
            if &shown != err {
                out.text = out.text.replace(err.as_str(), &shown);
                out.error = (!self.omits()).then_some(shown);
            }
        }
        // Whatever reference is still in the sentence (a message id quoted in it).
        out.text = self.text(&out.text, &refs, false);
        out
    }

    /// `e` as the channel may send it: its lapse redacted ([`Redaction::lapse`]), a
    /// withdrawal's `detail` (agent text) redacted under `agent_text` or when it holds a
    /// reference, a successor's id under `expectation`. An acknowledger's name (an operator's,
    /// not an agent's) stays.
    pub fn resolved(&self, e: &ResolvedEvent) -> ResolvedEvent {
        use watcher_runtime::resolution::ResolutionReason as R;
        if self.is_empty() {
            return e.clone();
        }
        let refs = self.references(&e.lapse);
        let mut out = e.clone();
        out.lapse = self.lapse(&e.lapse);
        match &mut out.resolution.reason {
            R::Withdrawn { detail } => *detail = self.text(detail, &refs, true),
            R::Superseded { by } if self.covers(Field::Expectation) => {
                *by = self.expectation_id(by);
            }
            _ => {}
        }
        out
    }

    /// Leaves out of `body` (a JSON format's) every string that is exactly [`OMITTED`]: an
    /// object's member is removed, an array's element dropped. Nothing when values are hashed.
    pub fn strip(&self, body: &mut Value) {
        if self.is_empty() || !self.omits() {
            return;
        }
        strip(body);
    }
}

fn strip(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, m| m.as_str() != Some(OMITTED));
            map.values_mut().for_each(strip);
        }
        Value::Array(items) => {
            items.retain(|m| m.as_str() != Some(OMITTED));
            items.iter_mut().for_each(strip);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(n: &[&str]) -> Vec<String> {
        n.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_hash_is_hmac_sha256_hex_prefixed_and_keyed() {
        let r = Redaction::new(&names(&["subject"]), Some("key")).unwrap();
        // HMAC-SHA256("key", "The quick brown fox jumps over the lazy dog") is the RFC 2104
        // example everyone quotes: f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8.
        assert_eq!(
            r.replace("The quick brown fox jumps over the lazy dog"),
            "hmac_f7bc83f430538424b13298e6aa6fb143"
        );
        let other = Redaction::new(&names(&["subject"]), Some("other")).unwrap();
        assert_ne!(r.replace("PA-1"), other.replace("PA-1"));
        assert_eq!(r.replace("PA-1"), r.replace("PA-1"));
        let omit = Redaction::new(&names(&["subject"]), None).unwrap();
        assert_eq!(omit.replace("PA-1"), OMITTED);
    }

    #[test]
    fn unknown_names_are_refused() {
        assert_eq!(
            Redaction::new(&names(&["subjects"]), None).unwrap_err(),
            "\"subjects\" is not a field to redact"
        );
    }

    #[test]
    fn strip_leaves_out_omitted_members_and_elements() {
        let r = Redaction::new(&names(&["subject"]), None).unwrap();
        let mut v =
            json!({ "a": OMITTED, "b": { "c": OMITTED, "d": "kept" }, "e": [OMITTED, "x"] });
        r.strip(&mut v);
        assert_eq!(v, json!({ "b": { "d": "kept" }, "e": ["x"] }));
        let hashed = Redaction::new(&names(&["subject"]), Some("k")).unwrap();
        let mut w = json!({ "a": OMITTED });
        hashed.strip(&mut w);
        assert_eq!(w, json!({ "a": OMITTED }));
    }
}
