//! A source's mappings (contracts/serve.md "Carrier webhooks"): from a carrier's JSON payload to
//! facts (expectations-v1 §9.2). Pure: a payload in, facts or an error out.

use serde::Deserialize;
use serde_json::Value;
use watcher_core::ids::{FactKey, Subject};
use watcher_core::time::Instant;

use crate::pointer::Pointer;
use crate::template::{json_type, Template};

/// `[[sources.mappings]]` as written in the configuration.
#[derive(Debug, Clone, Deserialize)]
pub struct MappingConfig {
    /// Names the mapping in errors and in the dry run.
    pub name: String,
    /// Optional selector: the mapping applies only when it holds.
    #[serde(default)]
    pub when: Option<WhenConfig>,
    /// Optional pointer to an array; each element yields one fact.
    #[serde(default)]
    pub each: Option<String>,
    /// The fact key template.
    pub fact_key: String,
    /// Pointer to the observation instant: RFC 3339, or Unix seconds (a number or numeric text).
    pub observed_at: String,
    /// Optional subject templates.
    #[serde(default)]
    pub subject: Option<SubjectConfig>,
}

/// `when`: one condition, or (an extension, docs/interpretation.md) a list that must all hold.
#[derive(Debug, Clone)]
pub enum WhenConfig {
    /// `when = { pointer = "/description", equals = "tracker.updated" }`.
    One(Condition),
    /// `when = [{ pointer = …, equals = … }, …]`: every one must hold.
    All(Vec<Condition>),
}

// By hand rather than `#[serde(untagged)]`, so a missing or mistyped `pointer`/`equals` is named
// (untagged says only "did not match any variant").
impl<'de> Deserialize<'de> for WhenConfig {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = WhenConfig;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("{ pointer, equals } or a list of them")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, a: A) -> Result<WhenConfig, A::Error> {
                Condition::deserialize(serde::de::value::MapAccessDeserializer::new(a))
                    .map(WhenConfig::One)
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, a: A) -> Result<WhenConfig, A::Error> {
                Vec::<Condition>::deserialize(serde::de::value::SeqAccessDeserializer::new(a))
                    .map(WhenConfig::All)
            }
        }
        d.deserialize_any(V)
    }
}

/// One selector condition: the value at `pointer` (read from the payload) equals `equals`.
#[derive(Debug, Clone, Deserialize)]
pub struct Condition {
    /// Where to look.
    pub pointer: String,
    /// The value (a string, number or boolean) it must equal.
    pub equals: Value,
}

/// `subject = { type = "shipment", id = "{^/result/tracking_code}" }`.
#[derive(Debug, Clone, Deserialize)]
pub struct SubjectConfig {
    /// The subject type template.
    #[serde(rename = "type")]
    pub subject_type: String,
    /// The subject id template.
    pub id: String,
}

/// A checked mapping.
#[derive(Debug, Clone)]
pub struct Mapping {
    name: String,
    when: Vec<(Pointer, Value)>,
    each: Option<Pointer>,
    fact_key: Template,
    observed_at: Pointer,
    subject: Option<(Template, Template)>,
}

/// A configuration error: the mapping's field at fault and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mapping {mapping:?}: field `{field}`: {reason}")]
pub struct MappingConfigError {
    /// The mapping's `name` (or its position when it has none).
    pub mapping: String,
    /// The field, e.g. `fact_key`, `when.pointer`, `subject.id`.
    pub field: String,
    /// What is wrong.
    pub reason: String,
}

/// A matched mapping that cannot be read from this payload (answered 422).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("mapping {mapping:?}: field `{field}`: pointer {pointer:?}{at}: {reason}")]
pub struct MappingError {
    /// The mapping's `name`.
    pub mapping: String,
    /// The mapping's field being read (`fact_key`, `observed_at`, `subject.id`, `each`).
    pub field: String,
    /// The pointer as written in the mapping.
    pub pointer: String,
    /// ` in element N of "/each/pointer"` when reading an `each` element, else empty.
    pub at: String,
    /// What is wrong.
    pub reason: String,
}

/// One fact a payload yields, before the source is attached (the route records it with
/// `source` = the source's id, exactly as `POST /v1/facts` does).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MappedFact {
    /// The mapping that yielded it.
    pub mapping: String,
    /// expectations-v1 §9.2 `factKey`.
    pub fact_key: FactKey,
    /// expectations-v1 §9.2 `observedAt` (UTC).
    pub observed_at: Instant,
    /// `observedAt` exactly as the payload wrote it, when it was RFC 3339 text (offset and
    /// digits untouched): the record keeps it as `claimedObservedAt` whenever the effective value
    /// differs (semantics.md "Time": a claim later than receipt, a zero value, a leap second).
    /// `None` for Unix seconds, which name an instant and no writing of it.
    pub observed_at_given: Option<String>,
    /// expectations-v1 §9.2 `subject`, when the mapping has one.
    pub subject: Option<Subject>,
}

impl MappedFact {
    /// The fact as `POST /v1/facts` takes it, with `mapping` added (the dry run prints this).
    pub fn to_json(&self) -> Value {
        let mut v = serde_json::json!({
            "mapping": self.mapping,
            "factKey": self.fact_key,
            "observedAt": self.observed_at,
        });
        if let Some(s) = &self.subject {
            v["subject"] = serde_json::json!({ "type": s.subject_type, "id": s.id });
        }
        v
    }
}

/// What a payload yields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// No mapping's selector holds: the carrier sent an event nobody tracks.
    Unmatched,
    /// At least one mapping matched; its facts, in mapping order (possibly none, when an
    /// `each` array is empty).
    Facts(Vec<MappedFact>),
}

impl Mapping {
    /// Checks `config`: every pointer and template.
    ///
    /// # Errors
    /// The first field at fault, named.
    pub fn compile(config: &MappingConfig) -> Result<Mapping, MappingConfigError> {
        let fail = |field: &str, reason: String| MappingConfigError {
            mapping: config.name.clone(),
            field: field.into(),
            reason,
        };
        if config.name.trim().is_empty() {
            return Err(fail("name", "must not be empty".into()));
        }
        let conditions: Vec<&Condition> = match &config.when {
            None => Vec::new(),
            Some(WhenConfig::One(c)) => vec![c],
            Some(WhenConfig::All(list)) => list.iter().collect(),
        };
        let mut when = Vec::new();
        for c in conditions {
            let p = Pointer::parse(&c.pointer).map_err(|e| fail("when.pointer", e))?;
            if matches!(c.equals, Value::Array(_) | Value::Object(_)) {
                return Err(fail(
                    "when.equals",
                    "must be a string, a number or a boolean".into(),
                ));
            }
            when.push((p, c.equals.clone()));
        }
        let each = match &config.each {
            None => None,
            Some(e) => Some(Pointer::parse(e).map_err(|r| fail("each", r))?),
        };
        let fact_key = Template::parse(&config.fact_key).map_err(|e| fail("fact_key", e))?;
        let observed_at =
            Pointer::parse(&config.observed_at).map_err(|e| fail("observed_at", e))?;
        let subject = match &config.subject {
            None => None,
            Some(s) => Some((
                Template::parse(&s.subject_type).map_err(|e| fail("subject.type", e))?,
                Template::parse(&s.id).map_err(|e| fail("subject.id", e))?,
            )),
        };
        Ok(Mapping {
            name: config.name.clone(),
            when,
            each,
            fact_key,
            observed_at,
            subject,
        })
    }

    /// The mapping's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the selector holds for `payload` (no selector: always). A selector pointer that
    /// names nothing does not hold; numbers compare by value (`5` equals `5.0`).
    pub fn matches(&self, payload: &Value) -> bool {
        self.when.iter().all(|(p, want)| {
            p.resolve(payload, payload)
                .is_some_and(|got| same_value(got, want))
        })
    }

    /// The facts this mapping yields from `payload` (call when it [`matches`](Self::matches)).
    ///
    /// # Errors
    /// The first pointer that names nothing or a value of the wrong type, an invalid instant,
    /// or a fact key or subject the watcher refuses, naming the mapping and the pointer.
    pub fn facts(&self, payload: &Value) -> Result<Vec<MappedFact>, MappingError> {
        let Some(each) = &self.each else {
            return Ok(vec![self.fact(payload, payload, "")?]);
        };
        let items = match each.resolve(payload, payload) {
            Some(Value::Array(items)) => items,
            other => {
                return Err(MappingError {
                    mapping: self.name.clone(),
                    field: "each".into(),
                    pointer: each.to_string(),
                    at: String::new(),
                    reason: match other {
                        None => "names nothing in the payload".into(),
                        Some(v) => format!("names {}; `each` must name an array", json_type(v)),
                    },
                })
            }
        };
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                self.fact(
                    item,
                    payload,
                    &format!(" in element {i} of {:?}", each.to_string()),
                )
            })
            .collect()
    }

    fn fact(&self, here: &Value, root: &Value, at: &str) -> Result<MappedFact, MappingError> {
        let fail = |field: &str, pointer: String, reason: String| MappingError {
            mapping: self.name.clone(),
            field: field.into(),
            pointer,
            at: at.to_owned(),
            reason,
        };
        let whole = |t: &Template| {
            t.pointers()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        };
        let render = |field: &str, t: &Template| {
            t.render(here, root)
                .map_err(|e| fail(field, e.pointer, e.reason))
        };
        let key = render("fact_key", &self.fact_key)?;
        let fact_key = FactKey::parse(key.clone()).map_err(|r| {
            fail(
                "fact_key",
                whole(&self.fact_key),
                format!("yields {key:?}: {r}"),
            )
        })?;
        let (observed_at, observed_at_given) = match self.observed_at.resolve(here, root) {
            None => {
                return Err(fail(
                    "observed_at",
                    self.observed_at.to_string(),
                    "names nothing in the payload".into(),
                ))
            }
            Some(v) => (
                read_instant(v)
                    .map_err(|r| fail("observed_at", self.observed_at.to_string(), r))?,
                v.as_str()
                    .filter(|text| !is_numeric(text.trim()))
                    .map(str::to_owned),
            ),
        };
        let subject = match &self.subject {
            None => None,
            Some((t, id)) => {
                let st = render("subject.type", t)?;
                let sid = render("subject.id", id)?;
                Some(Subject::parse(&st, &sid).map_err(|r| {
                    let (field, tpl) = if r.starts_with("subject.type") {
                        ("subject.type", t)
                    } else {
                        ("subject.id", id)
                    };
                    fail(field, whole(tpl), r)
                })?)
            }
        };
        Ok(MappedFact {
            mapping: self.name.clone(),
            fact_key,
            observed_at,
            observed_at_given,
            subject,
        })
    }
}

/// A source's mappings, in configuration order.
#[derive(Debug, Clone, Default)]
pub struct Mappings {
    list: Vec<Mapping>,
}

impl Mappings {
    /// Checks every mapping of a source.
    ///
    /// # Errors
    /// The first mapping field at fault; two mappings with the same name.
    pub fn compile(configs: &[MappingConfig]) -> Result<Mappings, MappingConfigError> {
        let mut list: Vec<Mapping> = Vec::with_capacity(configs.len());
        for c in configs {
            let m = Mapping::compile(c)?;
            if list.iter().any(|o| o.name == m.name) {
                return Err(MappingConfigError {
                    mapping: m.name,
                    field: "name".into(),
                    reason: "is used by another mapping of this source".into(),
                });
            }
            list.push(m);
        }
        Ok(Mappings { list })
    }

    /// The mappings.
    pub fn iter(&self) -> impl Iterator<Item = &Mapping> {
        self.list.iter()
    }

    /// Applies every mapping to `payload`: each one whose selector holds yields its facts.
    /// All or nothing: one matched mapping that cannot be read fails the whole payload.
    ///
    /// # Errors
    /// The first [`MappingError`].
    pub fn apply(&self, payload: &Value) -> Result<Outcome, MappingError> {
        let mut matched = false;
        let mut facts = Vec::new();
        for m in self.list.iter().filter(|m| m.matches(payload)) {
            matched = true;
            facts.extend(m.facts(payload)?);
        }
        Ok(if matched {
            Outcome::Facts(facts)
        } else {
            Outcome::Unmatched
        })
    }
}

fn same_value(got: &Value, want: &Value) -> bool {
    match (got, want) {
        (Value::Number(a), Value::Number(b)) => a == b || a.as_f64() == b.as_f64(),
        _ => got == want,
    }
}

/// Reads an observation instant: an RFC 3339 text with an offset (semantics.md "Time", parsed by
/// [`Instant::parse`]), or Unix seconds as a number or a numeric text (fractions allowed).
///
/// # Errors
/// A reason naming the value and the accepted forms.
pub fn read_instant(v: &Value) -> Result<Instant, String> {
    let seconds = match v {
        Value::Number(n) => n
            .as_i64()
            .map(|s| i128::from(s) * 1_000_000_000)
            .or_else(|| n.as_f64().map(|f| (f * 1e9).round() as i128)),
        Value::String(s) if is_numeric(s.trim()) => {
            s.trim()
                .parse::<f64>()
                .ok()
                .map(|f| match s.trim().parse::<i64>() {
                    Ok(whole) => i128::from(whole) * 1_000_000_000,
                    Err(_) => (f * 1e9).round() as i128,
                })
        }
        Value::String(s) => return Instant::parse(s),
        other => {
            return Err(format!(
                "names {}; an instant is RFC 3339 text or Unix seconds",
                json_type(other)
            ))
        }
    };
    let nanos = seconds.ok_or_else(|| format!("{v} is not a number of Unix seconds"))?;
    Instant::from_nanos(nanos).map_err(|e| format!("{v} as Unix seconds: {e}"))
}

fn is_numeric(s: &str) -> bool {
    let digits = s.strip_prefix('-').unwrap_or(s);
    !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit() || c == '.')
        && digits.chars().filter(|&c| c == '.').count() <= 1
        && digits.chars().any(|c| c.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn mapping(toml_text: &str) -> Result<Mappings, MappingConfigError> {
        #[derive(Deserialize)]
        struct File {
            mappings: Vec<MappingConfig>,
        }
        let f: File = toml::from_str(toml_text).expect("toml");
        Mappings::compile(&f.mappings)
    }

    const CONTRACT: &str = r#"
[[mappings]]
name = "tracker.updated"
when = { pointer = "/description", equals = "tracker.updated" }
each = "/result/tracking_details"
fact_key = "shipment.{/status}:{^/result/tracking_code}"
observed_at = "/datetime"
subject = { type = "shipment", id = "{^/result/tracking_code}" }
"#;

    #[test]
    fn the_contract_mapping_yields_one_fact_per_element() {
        let m = mapping(CONTRACT).unwrap();
        let payload = json!({ "description": "tracker.updated", "result": {
            "tracking_code": "EZ4000000004",
            "tracking_details": [
                { "status": "pre_transit", "datetime": "2026-09-09T18:00:00Z" },
                { "status": "in_transit", "datetime": 1789000000 } ] } });
        let Outcome::Facts(facts) = m.apply(&payload).unwrap() else {
            panic!("unmatched")
        };
        let got: Vec<Value> = facts.iter().map(MappedFact::to_json).collect();
        assert_eq!(
            got,
            vec![
                json!({ "mapping": "tracker.updated", "factKey": "shipment.pre_transit:EZ4000000004",
                    "observedAt": "2026-09-09T18:00:00Z", "subject": { "type": "shipment", "id": "EZ4000000004" } }),
                json!({ "mapping": "tracker.updated", "factKey": "shipment.in_transit:EZ4000000004",
                    "observedAt": "2026-09-10T00:26:40Z", "subject": { "type": "shipment", "id": "EZ4000000004" } }),
            ]
        );
    }

    #[test]
    fn a_payload_no_selector_holds_for_is_unmatched() {
        let m = mapping(CONTRACT).unwrap();
        assert_eq!(
            m.apply(&json!({ "description": "batch.created" })).unwrap(),
            Outcome::Unmatched
        );
        assert_eq!(m.apply(&json!({})).unwrap(), Outcome::Unmatched);
        assert_eq!(
            Mappings::default().apply(&json!({})).unwrap(),
            Outcome::Unmatched
        );
    }

    #[test]
    fn a_bad_second_element_fails_the_whole_payload_naming_mapping_and_pointer() {
        let m = mapping(CONTRACT).unwrap();
        let payload = json!({ "description": "tracker.updated", "result": {
            "tracking_code": "EZ1",
            "tracking_details": [
                { "status": "pre_transit", "datetime": "2026-09-09T18:00:00Z" },
                { "status": "in_transit", "datetime": "yesterday" } ] } });
        let e = m.apply(&payload).unwrap_err();
        assert_eq!(e.mapping, "tracker.updated");
        assert_eq!(e.field, "observed_at");
        assert_eq!(e.pointer, "/datetime");
        assert!(
            e.to_string()
                .contains("element 1 of \"/result/tracking_details\""),
            "{e}"
        );
        let payload = json!({ "description": "tracker.updated", "result": { "tracking_details": [
            { "status": "in_transit", "datetime": 1 } ] } });
        let e = m.apply(&payload).unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.pointer.as_str()),
            ("fact_key", "^/result/tracking_code")
        );
        let e = m
            .apply(
                &json!({ "description": "tracker.updated", "result": { "tracking_details": {} } }),
            )
            .unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.pointer.as_str()),
            ("each", "/result/tracking_details")
        );
    }

    /// RFC 3339 text is kept as written beside the instant it reads as; Unix seconds are not.
    #[test]
    fn observed_at_text_is_kept_as_given() {
        let m = mapping(CONTRACT).unwrap();
        let details = json!([
            { "status": "a", "datetime": "2017-01-01T05:29:60+05:30" },
            { "status": "b", "datetime": "2016-12-31T23:59:60Z" },
            { "status": "c", "datetime": "1970-01-01t00:00:00.000z" },
            { "status": "d", "datetime": 1789000000 },
            { "status": "e", "datetime": " 1789000000" },
        ]);
        let payload = json!({ "description": "tracker.updated",
            "result": { "tracking_code": "EZ1", "tracking_details": details } });
        let Outcome::Facts(facts) = m.apply(&payload).unwrap_or_else(|e| panic!("{e}")) else {
            panic!("unmatched")
        };
        let given: Vec<Option<&str>> = facts
            .iter()
            .map(|f| f.observed_at_given.as_deref())
            .collect();
        assert_eq!(
            given,
            [
                Some("2017-01-01T05:29:60+05:30"),
                Some("2016-12-31T23:59:60Z"),
                Some("1970-01-01t00:00:00.000z"),
                None,
                None
            ]
        );
    }

    #[test]
    fn instants_in_every_accepted_form() {
        let t = |v: Value| read_instant(&v).map(|i| i.to_string());
        assert_eq!(
            t(json!("2026-09-10T22:15:00+02:00")).unwrap(),
            "2026-09-10T20:15:00Z"
        );
        assert_eq!(t(json!(1789000000)).unwrap(), "2026-09-10T00:26:40Z");
        assert_eq!(t(json!("1789000000")).unwrap(), "2026-09-10T00:26:40Z");
        assert_eq!(t(json!(1789000000.5)).unwrap(), "2026-09-10T00:26:40.5Z");
        assert!(t(json!("2026-09-10T20:15:00")).is_err(), "no offset");
        assert!(t(json!(true)).unwrap_err().contains("a boolean"));
        assert!(t(json!(1e300)).is_err());
    }

    #[test]
    fn several_mappings_each_yield_and_all_conditions_must_hold() {
        let m = mapping(
            r#"
[[mappings]]
name = "dep"
when = [{ pointer = "/code", equals = "DEP" }, { pointer = "/type", equals = "ACTUAL" }]
fact_key = "shipment.departed:{/awb}"
observed_at = "/at"
[[mappings]]
name = "any"
fact_key = "seen:{/awb}"
observed_at = "/at"
"#,
        )
        .unwrap();
        let p = json!({ "code": "DEP", "type": "ACTUAL", "awb": "176-1", "at": "2026-09-10T20:15:00Z" });
        let Outcome::Facts(f) = m.apply(&p).unwrap() else {
            panic!()
        };
        let keys: Vec<&str> = f.iter().map(|f| f.fact_key.as_str()).collect();
        assert_eq!(keys, ["shipment.departed:176-1", "seen:176-1"]);
        let mut planned = p;
        planned["type"] = json!("PLANNED");
        let Outcome::Facts(f) = m.apply(&planned).unwrap() else {
            panic!()
        };
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].mapping, "any");
    }

    #[test]
    fn a_when_without_equals_is_named() {
        #[derive(Deserialize, Debug)]
        struct File {
            #[allow(dead_code, reason = "read only to make the mapping deserialize")]
            mappings: Vec<MappingConfig>,
        }
        let e = toml::from_str::<File>(
            "[[mappings]]\nname = \"m\"\nwhen = { pointer = \"/a\" }\nfact_key = \"k\"\nobserved_at = \"/t\"\n",
        )
        .unwrap_err();
        assert!(e.to_string().contains("equals"), "{e}");
    }

    #[test]
    fn configuration_errors_name_the_mapping_and_the_field() {
        let base = |field: &str, value: &str| {
            let mut doc = toml::Table::new();
            let mut m = toml::Table::new();
            m.insert("name".into(), "m1".into());
            m.insert("fact_key".into(), "k".into());
            m.insert("observed_at".into(), "/at".into());
            if let Some((outer, inner)) = field.split_once('.') {
                let mut t = toml::Table::new();
                t.insert("type".into(), "shipment".into());
                t.insert("id".into(), "x".into());
                t.insert("pointer".into(), "/a".into());
                t.insert("equals".into(), "x".into());
                if outer == "when" {
                    t.remove("type");
                    t.remove("id");
                } else {
                    t.remove("pointer");
                    t.remove("equals");
                }
                t.insert(inner.into(), value.into());
                m.insert(outer.into(), t.into());
            } else {
                m.insert(field.into(), value.into());
            }
            doc.insert("mappings".into(), toml::Value::Array(vec![m.into()]));
            mapping(&toml::to_string(&doc).unwrap())
        };
        for (field, value) in [
            ("fact_key", "a{status}"),
            ("fact_key", "a{/b"),
            ("observed_at", "datetime"),
            ("each", "items"),
            ("when.pointer", "description"),
            ("subject.id", "{/a~9}"),
            ("subject.type", "x}"),
        ] {
            let e = base(field, value).unwrap_err();
            assert_eq!((e.mapping.as_str(), e.field.as_str()), ("m1", field), "{e}");
        }
        assert!(base("each", "/items").is_ok());
    }
}
