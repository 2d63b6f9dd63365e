//! The picture of the worked example (expectations-v1 Appendix B), run through the real engine
//! with `replay`, read back element by element.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{json, Value};
use svg::node::element::tag::Type;
use svg::parser::Event;
use watcher_core::ids::{Subject, Tenant};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Store;

use super::*;

const WORKED: &str = include_str!("../../../examples/worked-example.json");

/// Replays `scenario` and answers the subject view of shipment PA-2026-0901.
async fn view_after(scenario: &Value) -> Value {
    let store = Arc::new(MemoryStore::new());
    watcher_runtime::replay::run(scenario, store.clone())
        .await
        .expect("the scenario runs");
    let subject = Subject::parse("shipment", "PA-2026-0901").unwrap();
    let state = store
        .subject(&Tenant::default_tenant(), &subject)
        .await
        .unwrap()
        .expect("the subject is recorded");
    watcher_runtime::view::subject_view(&state)
}

fn at(s: &str) -> Timestamp {
    s.parse().unwrap()
}

/// Classes of the elements inside each step group (`step-N` → classes, in document order), and
/// the classes outside any step under `"-"`.
fn classes_by_step(svg: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut stack: Vec<Option<String>> = Vec::new();
    for event in svg::read(svg).expect("the SVG parses") {
        match event {
            Event::Tag(name, ty, attrs) => {
                let step = attrs
                    .get("id")
                    .map(|v| v.to_string())
                    .filter(|id| id.starts_with("step-"));
                let current = stack
                    .iter()
                    .rev()
                    .find_map(|s| s.clone())
                    .or_else(|| step.clone())
                    .unwrap_or_else(|| "-".into());
                if matches!(ty, Type::Start | Type::Empty) {
                    if let Some(class) = attrs.get("class") {
                        out.entry(current).or_default().push(class.to_string());
                    }
                }
                match ty {
                    Type::Start if name == "g" => stack.push(step),
                    Type::End if name == "g" => {
                        stack.pop();
                    }
                    _ => {}
                }
            }
            Event::Error(e) => panic!("the SVG does not parse: {e}"),
            _ => {}
        }
    }
    out
}

fn count(classes: &[String], class: &str) -> usize {
    classes
        .iter()
        .filter(|c| c.split(' ').any(|w| w == class))
        .count()
}

#[tokio::test]
async fn worked_example_draws_three_tracks_the_hole_and_each_lapse_kind() {
    let scenario: Value = serde_json::from_str(WORKED).unwrap();
    let view = view_after(&scenario).await;
    let svg = render_string(&view, at("2026-09-14T00:00:00Z")).unwrap();
    let steps = classes_by_step(&svg);

    // Manifest, departure, arrival: one row each, in raising order.
    for (i, id) in ["exp-01J8Q0MANIFEST", "exp-01J8Q0DEPART", "exp-01J8Q0ARRIVE"]
        .iter()
        .enumerate()
    {
        assert!(
            svg.contains(&format!(r#"data-expectation-id="{id}""#))
                && svg.contains(&format!(r#"id="step-{i}""#)),
            "step {i} is {id}"
        );
    }
    let (manifest, departure, arrival) = (&steps["step-0"], &steps["step-1"], &steps["step-2"]);

    // Every step: a faint projected time and a current one.
    for s in [manifest, departure, arrival] {
        assert_eq!(count(s, "projected"), 1);
        assert_eq!(count(s, "current"), 1);
        assert_eq!(count(s, "basis"), 1);
    }
    // `basis` is written beside each step (§13.3).
    assert_eq!(svg.matches("basis: observed").count(), 3);

    // The manifest never came: a hole where it should have been, and a skipped lapse.
    assert_eq!(count(manifest, "hole"), 1);
    assert_eq!(count(manifest, "lapse-skipped"), 1);
    assert_eq!(count(manifest, "happened"), 0);
    assert_eq!(svg.matches(r#"class="hole""#).count(), 1, "one hole in all");

    // The departure happened at 02:41, early: solid, no lapse.
    assert_eq!(count(departure, "happened"), 1);
    assert_eq!(count(departure, "lapse"), 0);
    assert!(svg.contains("satisfied: observed 2026-09-11T02:41:00Z"));

    // The arrival re-anchored (04:26, projected 05:00 kept), went overdue, then stalled.
    assert_eq!(count(arrival, "reanchored"), 1);
    assert_eq!(count(arrival, "uncertain"), 0, "its anchor is satisfied");
    assert!(svg.contains("current due 2026-09-11T04:26:00Z (re-anchored)"));
    assert!(svg.contains("projected due 2026-09-11T05:00:00Z"));
    assert_eq!(count(arrival, "lapse-overdue"), 1);
    assert_eq!(count(arrival, "lapse-stalled"), 1);
    assert!(svg.contains("stalled lapse at 2026-09-13T05:00:00Z"));
    assert_eq!(count(arrival, "happened"), 0, "nothing arrived");

    // docs/timeline.svg is this picture (docs/timeline.png its rendering, docs/howto/operator-view.md).
    let golden = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/timeline.svg");
    if std::env::var_os("UPDATE_TIMELINE").is_some() {
        std::fs::write(golden, &svg).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(golden).unwrap_or_default(),
        svg,
        "docs/timeline.svg is stale: run UPDATE_TIMELINE=1 cargo test -p watcher-timeline, then infra/timeline-png.sh"
    );

    // The facts row: the departure, then a flat line of silence to now.
    let rest = &steps["-"];
    assert_eq!(count(rest, "fact"), 1);
    assert_eq!(count(rest, "silence"), 1);
    assert!(svg.contains("no fact since 09-11 02:41"));
}

#[tokio::test]
async fn an_anchor_not_yet_satisfied_is_drawn_as_less_certain() {
    // Only the booking: departure has not happened, so the arrival's due time may move.
    let mut scenario: Value = serde_json::from_str(WORKED).unwrap();
    scenario["steps"].as_array_mut().unwrap().truncate(1);
    scenario["until"] = json!("2026-09-10T12:00:00Z");
    let view = view_after(&scenario).await;
    let svg = render_string(&view, at("2026-09-10T12:00:00Z")).unwrap();
    let steps = classes_by_step(&svg);
    assert_eq!(count(&steps["step-2"], "uncertain"), 1);
    assert_eq!(count(&steps["step-0"], "uncertain"), 0, "fixed due time");
    assert_eq!(count(&steps["step-1"], "uncertain"), 0, "fixed due time");
    // Nothing happened yet: no hole, no lapse, no fact, no silence.
    let all: Vec<String> = steps.values().flatten().cloned().collect();
    for class in ["hole", "lapse", "happened", "fact", "silence", "reanchored"] {
        assert_eq!(
            count(&all, class),
            0,
            "{class} drawn though the record has none"
        );
    }
}

#[test]
fn draws_nothing_it_was_not_told_and_escapes_what_it_is_told() {
    let view = json!({
        "subject": { "type": "ticket", "id": "T-1</text><script>x</script>" },
        "expectations": [{
            "expectationId": "exp-\"><script>alert(1)</script>",
            "kind": "ticket.reply",
            "status": "open",
            "projectedDueAt": "2026-01-02T00:00:00Z",
            "dueAt": "2026-01-02T00:00:00Z",
            "basis": "declared",
            "lapses": [],
        }],
        "facts": [],
    });
    let svg = render_string(&view, at("2026-01-01T00:00:00Z")).unwrap();
    assert!(!svg.contains("<script"), "text is escaped: {svg}");
    assert!(svg.contains(r#"data-expectation-id="exp-%22&gt;&lt;script&gt;"#));
    assert!(svg.contains("basis: declared"));
    let steps = classes_by_step(&svg);
    assert_eq!(steps.len(), 2, "one step and the rest");
    let all: Vec<String> = steps.values().flatten().cloned().collect();
    for class in [
        "hole", "lapse", "happened", "fact", "silence", "grace", "horizon",
    ] {
        assert_eq!(
            count(&all, class),
            0,
            "{class} drawn though the record has none"
        );
    }
}

#[test]
fn a_malformed_view_names_the_field() {
    let view = json!({
        "subject": { "type": "ticket", "id": "T-1" },
        "expectations": [{
            "expectationId": "e", "kind": "k", "status": "open",
            "projectedDueAt": "2026-01-02T00:00:00Z", "dueAt": "tomorrow",
        }],
    });
    let err = render_string(&view, at("2026-01-01T00:00:00Z")).unwrap_err();
    assert!(err.to_string().contains("expectations[0].dueAt"), "{err}");
    let err =
        render_string(&json!({ "expectations": [] }), at("2026-01-01T00:00:00Z")).unwrap_err();
    assert!(err.to_string().contains("subject"), "{err}");
}

#[test]
fn a_picture_spanning_seconds_labels_seconds() {
    let view = json!({
        "subject": { "type": "ticket", "id": "T-2" },
        "expectations": [{
            "expectationId": "e1", "kind": "ticket.reply", "status": "open",
            "projectedDueAt": "2026-01-01T00:00:10Z", "dueAt": "2026-01-01T00:00:10Z",
            "grace": "PT5S", "basis": "observed",
            "lapses": [{ "lapse": "overdue", "lapsedAt": "2026-01-01T00:00:15Z" }],
        }],
        "facts": [],
    });
    let svg = render_string(&view, at("2026-01-01T00:00:20Z")).unwrap();
    assert!(svg.contains("due 00:00:10"), "{svg}");
    assert!(svg.contains("lapsed: overdue 00:00:15"), "{svg}");
    let steps = classes_by_step(&svg);
    assert_eq!(count(&steps["step-0"], "grace"), 1, "dueAt + PT5S drawn");
    assert_eq!(count(&steps["step-0"], "lapse-overdue"), 1);
}
