//! §9: the authority treats values as opaque. Three learnables — marks, column-mapping, and one
//! defined only here, which the crate has never heard of — go through the identical `teach`,
//! `check`, `show_back` and `descriptors` functions.

use crate::common;

use common::*;
use learnables::{
    check, descriptors, get_version, show_back, teach, Absorbed, Candidate, Collection, DecidedBy,
    Learnable, LessonField, Reading, Refusal, Registry, Settings,
};
use serde_json::{json, Value};

/// A learnable whose value is a number: the weight above which a parcel goes by freight.
struct FreightThreshold;

impl Learnable for FreightThreshold {
    fn name(&self) -> &str {
        "freight-threshold"
    }
    fn how(&self) -> &str {
        "A parcel heavier than a carrier's threshold goes to that carrier's freight desk."
    }
    fn decided_by(&self) -> DecidedBy {
        DecidedBy::Rules
    }
    fn lesson_fields(&self) -> Vec<LessonField> {
        vec![LessonField::text(
            "kg",
            "Heaviest parcel they take as post, in kg",
        )]
    }
    fn validate_value(&self, value: &Value) -> Result<Value, Refusal> {
        match value.get("kg").and_then(Value::as_f64) {
            Some(kg) if kg > 0.0 => Ok(json!({ "kg": kg })),
            _ => Err(Refusal::new(
                "a threshold is a positive number of kilograms",
            )),
        }
    }
    fn absorb(&self, current: Option<&Value>, lesson_value: &Value) -> Result<Absorbed, Refusal> {
        let next = self.validate_value(lesson_value)?;
        let says = format!("sends parcels over {} kg to freight", next["kg"]);
        if current == Some(&next) {
            Ok(Absorbed::unchanged(next, format!("already {says}")))
        } else {
            Ok(Absorbed::changed(next, says))
        }
    }
    fn read(&self, c: &Collection, input: &Value, _: &Settings) -> Result<Reading, Refusal> {
        let weight = input.get("kg").and_then(Value::as_f64).unwrap_or(0.0);
        let candidates: Vec<Candidate> = c
            .entries()
            .map(|(name, e)| {
                let over = e.value()["kg"].as_f64().is_some_and(|kg| weight > kg);
                Candidate::new(
                    name.as_str(),
                    e.label(),
                    if over { 1.0 } else { 0.0 },
                    vec![],
                )
            })
            .collect();
        let over: Vec<&Candidate> = candidates.iter().filter(|c| c.score() > 0.0).collect();
        Ok(match over.as_slice() {
            [one] => Reading::settled(
                one.name().to_owned(),
                format!("Freight with {}", one.label()),
                candidates.clone(),
            ),
            _ => Reading::unsettled("Goes as post.", candidates),
        })
    }
    fn matches(&self, entry_value: &Value, input: &Value) -> Result<bool, Refusal> {
        let weight = input.get("kg").and_then(Value::as_f64).unwrap_or(0.0);
        Ok(entry_value["kg"].as_f64().is_some_and(|kg| weight > kg))
    }
}

fn registry() -> Registry {
    let mut r = Registry::builtin();
    r.register(Box::new(FreightThreshold)).expect("a new name");
    r
}

fn everything() -> Value {
    let mut all = customers_json();
    let fields = fields_json();
    let obj = all.as_object_mut().expect("object");
    obj.insert("fields".into(), fields["fields"].clone());
    obj.insert(
        "carriers".into(),
        json!({ "learnable": "freight-threshold", "entry": "carrier",
                "teaches": "when a parcel goes by freight",
                "entries": { "dhl": { "label": "DHL", "value": { "kg": 30 } } } }),
    );
    all
}

#[test]
fn three_learnables_one_teach_function() {
    let registry = registry();
    let v1 = new_definition(everything(), &registry);

    let lessons = [
        (
            billing_lesson(),
            "matches 'billing@origin\\.example' in the from",
        ),
        (
            header_lesson("Inv. Ref", Some("supplier sheet")),
            "reads the column headed 'Inv. Ref'",
        ),
        (
            lesson("carriers", "dhl", json!({ "kg": 20 }), None),
            "sends parcels over 20.0 kg to freight",
        ),
    ];
    let mut state = v1;
    for (n, (l, describes)) in lessons.iter().enumerate() {
        let (next, result) = teach(&state, l, via(), at(n as i64 + 1), &registry).expect("taught");
        assert!(result.learned, "{describes}");
        assert_eq!(result.describes, *describes);
        assert_eq!(result.definition_version, n as u64 + 2);
        let next = next.expect("new state");
        // Idempotence is judged by each learnable, through the same function.
        let (none, again) = teach(&next, l, via(), at(9), &registry).expect("not an error");
        assert!(none.is_none());
        assert!(!again.learned);
        assert_eq!(again.describes, format!("already {describes}"));
        state = next;
    }

    let report = show_back_now(
        &state,
        json!({ "from": "billing@origin.example", "header": "INV. REF", "kg": 25 }),
        &registry,
    );
    assert_eq!(report["customer"]["winner"], json!("northgate"));
    assert_eq!(report["field"]["winner"], json!("invoice_number"));
    assert_eq!(report["carrier"]["reads"], json!("Freight with DHL"));

    // Version 1 is pinned for all three.
    let v1_again = show_back(
        &state,
        &json!({ "header": "Inv. Ref", "kg": 25 }),
        Some(1),
        &registry,
    )
    .expect("v1");
    assert_eq!(v1_again["field"]["settled"], json!(false));
    assert_eq!(v1_again["carrier"]["settled"], json!(false));

    // The column-mapping value never carries a key called "pattern".
    let served = get_version(&state, state.active_version()).expect("active");
    let fields = serde_json::to_value(served.collections.get("fields")).expect("json");
    assert!(!fields.to_string().contains("pattern"), "{fields}");
}

#[test]
fn refusals_come_from_each_learnable() {
    let registry = registry();
    let state = new_definition(everything(), &registry);
    for (l, reason) in [
        (
            lesson("fields", "amount", json!({ "header": " " }), None),
            "the lesson's \"header\" is empty: give the column's heading",
        ),
        (
            lesson("carriers", "dhl", json!({ "kg": -1 }), None),
            "a threshold is a positive number of kilograms",
        ),
    ] {
        match teach(&state, &l, via(), at(1), &registry) {
            Err(learnables::AuthorityError::Refused { reason: got, .. }) => assert_eq!(got, reason),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}

#[test]
fn check_and_descriptors_work_for_every_learnable() {
    let registry = registry();
    let state = new_definition(everything(), &registry);
    let corpus = [
        json!({ "header": "Inv. Ref" }),
        json!({ "header": "Total" }),
        json!({ "header": "inv. ref " }),
    ];
    let l = header_lesson("Inv. Ref", None);
    let report = check(&state, &l, &corpus, &registry).expect("checked");
    assert_eq!(report.matches, 2);
    assert_eq!(
        serde_json::to_value(&report).expect("json"),
        json!({ "matches": 2, "changes": [
            { "input": 0, "from": null, "to": "invoice_number" },
            { "input": 2, "from": null, "to": "invoice_number" }
        ] })
    );

    let d = descriptors(&state, &registry).expect("descriptors");
    let by_collection = |c: &str| d.iter().find(|d| d.collection == c).expect("descriptor");
    assert_eq!(by_collection("carriers").how, FreightThreshold.how());
    assert_eq!(by_collection("carriers").entry, "carrier");
    let names = |c: &str| -> Vec<String> {
        by_collection(c)
            .lesson_fields
            .iter()
            .map(|f| f.name().to_owned())
            .collect()
    };
    assert_eq!(names("customers"), ["pattern", "where"]);
    assert_eq!(names("fields"), ["header"]);
    assert_eq!(names("carriers"), ["kg"]);
}

/// Input hygiene: a heading or a message that differs only by a byte-order mark or a zero-width
/// character is the same heading, the same text: the lesson is `learned: false`, and show-back
/// still finds the field and the customer.
#[test]
fn invisible_characters_change_nothing() {
    let registry = registry();
    let v1 = new_definition(everything(), &registry);
    let taught = header_lesson("Inv. Ref", Some("supplier sheet"));
    let (state, first) = teach(&v1, &taught, via(), at(1), &registry).expect("taught");
    assert!(first.learned);
    let state = state.expect("new version");
    for invisible in [
        "\u{FEFF}Inv. Ref",
        "Inv.\u{200B} Ref",
        "Inv. Ref\u{200D}",
        "\u{2060}Inv. Ref ",
    ] {
        let again = header_lesson(invisible, Some("supplier sheet"));
        let (none, result) = teach(&state, &again, via(), at(2), &registry).expect("not an error");
        assert!(none.is_none(), "{invisible:?}");
        assert!(!result.learned, "{invisible:?}");
        let report = show_back_now(&state, json!({ "header": invisible }), &registry);
        assert_eq!(
            report["field"]["winner"],
            json!("invoice_number"),
            "{invisible:?}"
        );
    }
    let (state, _) = teach(&state, &billing_lesson(), via(), at(3), &registry).expect("taught");
    let state = state.expect("new version");
    let report = show_back_now(
        &state,
        json!({ "from": "\u{FEFF}billing@origin\u{200B}.example" }),
        &registry,
    );
    assert_eq!(report["customer"]["winner"], json!("northgate"));
}
