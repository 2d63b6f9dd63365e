//! The picture of the worked example (expectations-v1 Appendix B), run through the real engine
//! with `replay`, read back element by element.

use std::collections::BTreeMap;
use std::sync::Arc;
use watcher_runtime::store::Records as _;

use serde_json::{json, Value};
use svg::node::element::tag::Type;
use svg::parser::Event;
use watcher_core::ids::{Subject, Tenant};
use watcher_runtime::memory::MemoryStore;

use super::placement::{text_box, Anchor, Rect};
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
    serde_json::to_value(watcher_runtime::view::subject_view(&state)).unwrap()
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
                    .map(ToString::to_string)
                    .filter(|id| id.starts_with("step-"));
                let current = stack
                    .iter()
                    .rev()
                    .find_map(Clone::clone)
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

/// Asserts that no step draws any of `classes`.
fn assert_none_drawn(steps: &BTreeMap<String, Vec<String>>, classes: &[&str]) {
    let all: Vec<String> = steps.values().flatten().cloned().collect();
    for class in classes {
        assert_eq!(
            count(&all, class),
            0,
            "{class} drawn though the record has none"
        );
    }
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

    // Nothing is drawn over anything else.
    assert_nothing_overlaps(&svg);

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
    assert_none_drawn(
        &steps,
        &["hole", "lapse", "happened", "fact", "silence", "reanchored"],
    );
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
    assert_none_drawn(
        &steps,
        &[
            "hole", "lapse", "happened", "fact", "silence", "grace", "horizon",
        ],
    );
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
    assert_nothing_overlaps(&svg);
}

/// Boxes on the picture, each with what it is (a text's content, a glyph's element).
type Boxes = Vec<(String, Rect)>;

/// The estimated box of every `<text>` and every glyph of `svg`, as `(what, box)`: texts by
/// their x, y, `text-anchor` and class's font size, with the placer's width estimate
/// ([`placement::CHAR_WIDTH_EM`]); glyphs (circles, polygons, the hole and the stalled square,
/// the horizon tick, a withdrawal's cross) by their geometry.
fn boxes(svg: &str) -> (Boxes, Boxes) {
    let num = |attrs: &svg::node::Attributes, name: &str| -> f64 {
        attrs
            .get(name)
            .unwrap_or_else(|| panic!("{name} is given"))
            .parse()
            .unwrap()
    };
    let (mut texts, mut glyphs) = (Vec::new(), Vec::new());
    // The text whose content comes next: x, y, font size, anchor.
    let mut pending: Option<(f64, f64, f64, Anchor)> = None;
    // Open groups: whether each is a withdrawal's cross, and its box so far.
    let mut groups: Vec<Option<Option<Rect>>> = Vec::new();
    for event in svg::read(svg).expect("the SVG parses") {
        match event {
            Event::Tag(name, ty, attrs) => {
                let class = attrs.get("class").map(ToString::to_string);
                let start = matches!(ty, Type::Start | Type::Empty);
                match (name, start) {
                    ("g", true) if ty == Type::Start => {
                        groups.push((class.as_deref() == Some("withdrawn")).then_some(None));
                    }
                    ("g", false) => {
                        if let Some(Some(Some(r))) = groups.pop() {
                            glyphs.push(("withdrawn".to_owned(), r));
                        }
                    }
                    ("text", true) => {
                        pending = Some((
                            num(&attrs, "x"),
                            num(&attrs, "y"),
                            font_size(class.as_deref().unwrap_or("")),
                            Anchor::parse(attrs.get("text-anchor").map(|a| &**a)),
                        ));
                    }
                    ("circle", true) => {
                        let r = num(&attrs, "r");
                        glyphs.push((
                            format!("circle {class:?}"),
                            Rect::centred(num(&attrs, "cx"), num(&attrs, "cy"), r, r),
                        ));
                    }
                    ("polygon", true) => {
                        let pts: Vec<(f64, f64)> = attrs["points"]
                            .split_whitespace()
                            .map(|p| {
                                let (x, y) = p.split_once(',').unwrap();
                                (x.parse().unwrap(), y.parse().unwrap())
                            })
                            .collect();
                        let r = Rect {
                            x0: pts.iter().map(|p| p.0).fold(f64::MAX, f64::min),
                            y0: pts.iter().map(|p| p.1).fold(f64::MAX, f64::min),
                            x1: pts.iter().map(|p| p.0).fold(f64::MIN, f64::max),
                            y1: pts.iter().map(|p| p.1).fold(f64::MIN, f64::max),
                        };
                        glyphs.push(("polygon".to_owned(), r));
                    }
                    // Not glyphs: the background (filled) and the grace window (a bar).
                    ("rect", true)
                        if class.as_deref() != Some("grace") && !attrs.contains_key("fill") =>
                    {
                        let (x, y) = (num(&attrs, "x"), num(&attrs, "y"));
                        glyphs.push((
                            format!("rect {class:?}"),
                            Rect {
                                x0: x,
                                y0: y,
                                x1: x + num(&attrs, "width"),
                                y1: y + num(&attrs, "height"),
                            },
                        ));
                    }
                    ("line", true) => {
                        let (x1, x2) = (num(&attrs, "x1"), num(&attrs, "x2"));
                        let (y1, y2) = (num(&attrs, "y1"), num(&attrs, "y2"));
                        let r = Rect {
                            x0: x1.min(x2),
                            y0: y1.min(y2),
                            x1: x1.max(x2),
                            y1: y1.max(y2),
                        };
                        if class.as_deref() == Some("horizon") {
                            glyphs.push((
                                "horizon".to_owned(),
                                Rect {
                                    x0: r.x0 - 1.0,
                                    x1: r.x1 + 1.0,
                                    ..r
                                },
                            ));
                        } else if let Some(Some(cross)) = groups.last_mut() {
                            *cross = Some(cross.map_or(r, |c| Rect {
                                x0: c.x0.min(r.x0),
                                y0: c.y0.min(r.y0),
                                x1: c.x1.max(r.x1),
                                y1: c.y1.max(r.y1),
                            }));
                        }
                    }
                    _ => {}
                }
            }
            Event::Text(content) => {
                if let Some((x, y, size, anchor)) = pending.take() {
                    let content = content.trim();
                    texts.push((content.to_owned(), text_box(x, y, size, anchor, content)));
                }
            }
            Event::Error(e) => panic!("the SVG does not parse: {e}"),
            _ => {}
        }
    }
    (texts, glyphs)
}

/// No text is drawn over a text or a glyph, no glyph over a glyph.
fn assert_nothing_overlaps(svg: &str) {
    let (texts, glyphs) = boxes(svg);
    let all: Vec<&(String, Rect)> = texts.iter().chain(&glyphs).collect();
    for (i, a) in all.iter().enumerate() {
        for b in &all[i + 1..] {
            assert!(
                !a.1.overlaps(&b.1),
                "{:?} at {:?} overlaps {:?} at {:?}",
                a.0,
                a.1,
                b.0,
                b.1
            );
        }
    }
}

/// A record crowded on purpose: three lapses of one step at one instant, a horizon five
/// seconds after the due time, ids far longer than the left column, and ten facts a second
/// apart, on a clock spanning minutes.
fn crowded() -> Value {
    let long = format!("exp-{}", "0123456789ABCDEFGHJK".repeat(5));
    let lapses = json!([
        { "lapse": "overdue", "lapsedAt": "2026-01-01T00:22:02Z" },
        { "lapse": "skipped", "lapsedAt": "2026-01-01T00:22:02Z" },
        { "lapse": "stalled", "lapsedAt": "2026-01-01T00:22:02.500Z" },
        { "lapse": "overdue", "lapsedAt": "2026-01-01T00:22:03Z" },
    ]);
    let facts: Vec<Value> = (0..10)
        .map(|n| json!({ "factKey": format!("ticket.note:{n}"), "observedAt": format!("2026-01-01T00:10:0{n}Z") }))
        .collect();
    json!({
        "subject": { "type": "ticket", "id": "T-3" },
        "expectations": [
            {
                "expectationId": long, "kind": "ticket.reply.from-the-second-line-support-desk",
                "status": "lapsed",
                "projectedDueAt": "2026-01-01T00:20:00Z", "dueAt": "2026-01-01T00:20:00Z",
                "horizon": "2026-01-01T00:20:05Z",
                "basis": "declared by the agent card's expectations extension, observed since",
                "lapses": lapses,
            },
            {
                "expectationId": format!("{long}-2"), "kind": "ticket.close", "status": "open",
                "projectedDueAt": "2026-01-01T00:20:00Z", "dueAt": "2026-01-01T00:20:00Z",
                "grace": "PT30S", "horizon": "2026-01-01T00:20:00Z",
                "basis": "observed",
                "lapses": [],
            },
        ],
        "facts": facts,
    })
}

#[test]
fn a_crowded_record_draws_nothing_over_anything() {
    let svg = render_string(&crowded(), at("2026-01-01T00:23:00Z")).unwrap();
    assert_nothing_overlaps(&svg);

    // Every lapse, fact and horizon is still drawn, its exact instant in its title.
    let steps = classes_by_step(&svg);
    assert_eq!(count(&steps["step-0"], "lapse"), 4);
    assert_eq!(count(&steps["step-0"], "lapse-overdue"), 2);
    assert_eq!(count(&steps["step-0"], "lapse-skipped"), 1);
    assert_eq!(count(&steps["step-0"], "lapse-stalled"), 1);
    assert!(svg.contains("skipped lapse at 2026-01-01T00:22:02Z"));
    assert!(svg.contains("stalled lapse at 2026-01-01T00:22:02.5Z"));
    // Ten facts a second (about a unit) apart: three stand beside the first, the other six join
    // the fourth, drawn once with their count; every one is in a tooltip.
    assert_eq!(count(&steps["-"], "fact"), 4);
    assert_eq!(count(&steps["-"], "facts-joined"), 1);
    assert!(
        svg.contains(r#"data-facts="7""#) && svg.contains("×7"),
        "{svg}"
    );
    for n in 0..10 {
        assert!(svg.contains(&format!("ticket.note:{n} observed 2026-01-01T00:10:0{n}Z")));
    }
    assert!(svg.contains("horizon 2026-01-01T00:20:05Z"));

    // The left column's long texts are cut to the column, in full in their tooltips.
    let (texts, _) = boxes(&svg);
    for (content, r) in &texts {
        if r.x0 < LEFT - 70.0 && r.y0 > TOP - 16.0 {
            assert!(r.x1 <= LEFT - 70.0, "{content:?} runs past the column");
        }
    }
    let long = format!("exp-{}", "0123456789ABCDEFGHJK".repeat(5));
    assert!(
        svg.contains(&format!("<title>{long} · lapsed</title>")),
        "{svg}"
    );
    assert!(texts
        .iter()
        .any(|(t, _)| t.starts_with("exp-0123") && t.ends_with('…')));
    assert!(
        svg.contains("basis: declared by the agent card's expectations extension, observed since")
    );
    assert!(svg.contains(
        "<title>lapsed: overdue 00:22:02, skipped 00:22:02, stalled 00:22:02, overdue 00:22:03</title>"
    ));
}

#[test]
fn glyphs_at_one_instant_stand_side_by_side() {
    let svg = render_string(&crowded(), at("2026-01-01T00:23:00Z")).unwrap();
    let (_, glyphs) = boxes(&svg);
    // The four lapses' glyphs sit on one track, each right of the one before.
    let mut lapses: Vec<&Rect> = glyphs
        .iter()
        .filter(|(what, _)| what == "polygon" || what == "rect None")
        .map(|(_, r)| r)
        .collect();
    assert_eq!(lapses.len(), 4, "{glyphs:?}");
    lapses.sort_by(|a, b| a.x0.total_cmp(&b.x0));
    for pair in lapses.windows(2) {
        assert!(pair[0].x1 <= pair[1].x0, "{pair:?}");
    }
}

#[test]
fn thousands_of_facts_at_one_instant_are_one_circle_with_their_count() {
    let mut view = crowded();
    view["facts"] = (0..5000)
        .map(|n| json!({ "factKey": format!("ticket.note:{n}"), "observedAt": "2026-01-01T00:10:00Z" }))
        .collect();
    let svg = render_string(&view, at("2026-01-01T00:23:00Z")).unwrap();
    assert_nothing_overlaps(&svg);
    let steps = classes_by_step(&svg);
    assert_eq!(
        count(&steps["-"], "fact"),
        4,
        "three beside the first, then joined"
    );
    assert!(svg.contains(r#"data-facts="4997""#) && svg.contains("×4997"));
    assert!(svg.contains("and 4987 more"));
}
