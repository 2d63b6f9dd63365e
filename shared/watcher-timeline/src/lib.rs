//! The timeline picture of one subject (expectations-v1 Appendix B step 6, §9.3, §13.3): the
//! subject's record as `GET /v1/subjects/{type}/{id}` answers it (contracts/serve.md) and the
//! watcher's clock in, one SVG document out. A pure function: no clock, store or I/O.
//!
//! Each expectation (a *step*) gets a row with three tracks:
//!
//! * **projected** (faint): `projectedDueAt`, the due time as raised, which never changes;
//! * **current**: `dueAt`, the current due time, with its `grace` window and `horizon`; a
//!   re-anchored step shows a connector from the projected time; an anchored step whose anchor is
//!   not yet satisfied is drawn dashed and pale, as less certain (§13.3);
//! * **happened** (solid): the satisfying fact at its `observedAt`, each lapse at its `lapsedAt`
//!   marked by kind (`overdue`, `skipped`, `stalled`), a withdrawal; and, for a step that was
//!   skipped and never reported, a *hole* where it should have been.
//!
//! `basis` is written beside each step. A last row holds every fact on the subject and the
//! silence since the most recent one. Nothing is drawn that the record does not say, and no text
//! or glyph over another (`src/placement.rs`): glyphs at one instant stand side by side, each with its
//! exact instant in its `<title>`; labels take the next free lane; the left column's texts are
//! cut to the column with "…", in full in a `<title>`.
//!
//! Elements carry classes tests and style sheets can find: `step` (with `id="step-N"`, N the
//! row from 0, and `data-expectation-id`), `projected`, `current`, `uncertain`, `reanchored`,
//! `happened`, `hole`, `lapse lapse-overdue|lapse-skipped|lapse-stalled`, `basis`, `fact`,
//! `facts-joined` (a fact circle standing for several, `data-facts` their count), `silence`, `now`.

mod placement;

use jiff::Timestamp;
use placement::{text_box, truncate, Anchor, Placer, Rect};
use serde::Deserialize;
use svg::node::element::{Circle, Group, Line, Polygon, Rectangle, Style, Text as TextEl, Title};
use svg::Document;

mod glyphs;

use glyphs::*;

/// Width of the picture, in SVG user units (pixels at 100%).
pub const WIDTH: f64 = 1200.0;

const LEFT: f64 = 330.0;

const RIGHT: f64 = 110.0;

const TOP: f64 = 96.0;

const ROW: f64 = 94.0;

const FACT_ROW: f64 = 56.0;

const BOTTOM: f64 = 28.0;

/// Where the left column's texts start, and the room they have before the track labels (at
/// `LEFT - 70`), less a gap of 8: longer texts are cut with "…" and given in full in a `<title>`.
const COLUMN_X: f64 = 12.0;

const COLUMN_WIDTH: f64 = LEFT - 70.0 - COLUMN_X - 8.0;

/// The font size of text of class `class`, as [`CSS`] sets it.
fn font_size(class: &str) -> f64 {
    match class.split(' ').next().unwrap_or("") {
        "title" => 16.0,
        "small" | "basis" => 11.0,
        "track-label" => 10.0,
        _ => 12.0,
    }
}

/// Why a subject view cannot be drawn.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// The JSON is not the subject view of contracts/serve.md.
    #[error("the subject view is malformed: {0}")]
    Malformed(#[from] serde_json::Error),
    /// An instant field is not an RFC 3339 instant.
    #[error("field `{field}`: {value:?} is not an RFC 3339 instant")]
    Instant {
        /// Which field, e.g. `expectations[1].dueAt`.
        field: String,
        /// The value found.
        value: String,
    },
}

/// The subject view (`GET /v1/subjects/{type}/{id}`): the subject, its ExpectationRecords
/// (contracts/replay.md) and its facts. Only the members drawn are read.
#[derive(Debug, Deserialize)]
struct View {
    subject: SubjectRef,
    #[serde(default)]
    expectations: Vec<Rec>,
    #[serde(default)]
    facts: Vec<FactView>,
}

#[derive(Debug, Deserialize)]
struct SubjectRef {
    #[serde(rename = "type")]
    subject_type: String,
    id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Rec {
    expectation_id: String,
    kind: String,
    #[serde(default)]
    status: String,
    projected_due_at: String,
    due_at: String,
    #[serde(default)]
    grace: Option<String>,
    #[serde(default)]
    anchor: Option<AnchorRef>,
    #[serde(default)]
    horizon: Option<String>,
    #[serde(default)]
    basis: Option<String>,
    #[serde(default)]
    satisfaction: Option<SatisfactionView>,
    #[serde(default)]
    lapses: Vec<LapseView>,
    #[serde(default)]
    withdrawal: Option<WithdrawalView>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct AnchorRef {
    expectation_id: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SatisfactionView {
    observed_at: String,
    #[serde(default)]
    late: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LapseView {
    lapse: String,
    lapsed_at: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WithdrawalView {
    withdrawn_at: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct FactView {
    fact_key: String,
    observed_at: String,
}

/// An instant of the view, read as every instant is (`watcher_core::time::Instant::parse`:
/// the one grammar, range and leap-second rule of semantics.md "Time"). The picture is drawn on
/// jiff timestamps, which end at `9999-12-30T22:00:00.999999999Z`: a later instant (the
/// "never" value `9999-12-31T23:59:59Z`) is drawn at that end.
fn instant(field: impl FnOnce() -> String, value: &str) -> Result<Timestamp, TimelineError> {
    let at = watcher_core::time::Instant::parse(value).map_err(|_| TimelineError::Instant {
        field: field(),
        value: value.to_owned(),
    })?;
    Ok(at.timestamp().unwrap_or(Timestamp::MAX))
}

/// One step, its instants parsed.
struct Step<'a> {
    rec: &'a Rec,
    projected: Timestamp,
    due: Timestamp,
    grace_end: Option<Timestamp>,
    horizon: Option<Timestamp>,
    observed: Option<Timestamp>,
    lapses: Vec<(&'a str, Timestamp)>,
    withdrawn: Option<Timestamp>,
    /// Anchored, still open, and its anchor not (yet) satisfied: the due time may move (§13.3).
    uncertain: bool,
    /// The anchor was satisfied and moved the due time (§9.3).
    reanchored: bool,
}

/// `dueAt + grace`, the grace read as the watcher reads it (an ISO 8601 duration, §8).
fn plus_duration(at: Timestamp, duration: &str) -> Option<Timestamp> {
    let d = watcher_core::time::IsoDuration::parse(duration).ok()?;
    at.checked_add(d.as_signed()).ok()
}

fn steps(view: &View) -> Result<Vec<Step<'_>>, TimelineError> {
    let mut out = Vec::with_capacity(view.expectations.len());
    for (i, rec) in view.expectations.iter().enumerate() {
        let at = |name: &'static str| move || format!("expectations[{i}].{name}");
        let projected = instant(at("projectedDueAt"), &rec.projected_due_at)?;
        let due = instant(at("dueAt"), &rec.due_at)?;
        let horizon = match &rec.horizon {
            Some(h) => Some(instant(at("horizon"), h)?),
            None => None,
        };
        let observed = match &rec.satisfaction {
            Some(s) => Some(instant(at("satisfaction.observedAt"), &s.observed_at)?),
            None => None,
        };
        let mut lapses = Vec::with_capacity(rec.lapses.len());
        for l in &rec.lapses {
            lapses.push((
                l.lapse.as_str(),
                instant(at("lapses[].lapsedAt"), &l.lapsed_at)?,
            ));
        }
        let withdrawn = match &rec.withdrawal {
            Some(w) => Some(instant(at("withdrawal.withdrawnAt"), &w.withdrawn_at)?),
            None => None,
        };
        let anchor = rec.anchor.as_ref().map(|a| {
            view.expectations
                .iter()
                .find(|r| r.expectation_id == a.expectation_id)
        });
        let anchor_satisfied = anchor.map(|a| a.is_some_and(|r| r.satisfaction.is_some()));
        // Open (or not on the subject): the due time may still move. A withdrawn anchor leaves
        // the projected time in force (§9.3), which is fixed.
        let anchor_open = anchor.is_some_and(|a| a.is_none_or(|r| r.status == "open"));
        let open = rec.status == "open";
        out.push(Step {
            rec,
            projected,
            due,
            grace_end: rec.grace.as_deref().and_then(|g| plus_duration(due, g)),
            horizon,
            observed,
            lapses,
            withdrawn,
            uncertain: open && anchor_open,
            reanchored: anchor_satisfied == Some(true) && due != projected,
        });
    }
    Ok(out)
}

/// Maps instants to x between `LEFT` and `WIDTH - RIGHT`.
struct Axis {
    start: i64,
    end: i64,
    /// The picture spans less than an hour: labels show seconds.
    fine: bool,
}

impl Axis {
    /// An instant as a label: `MM-DD HH:MM`, or `HH:MM:SS` on a picture spanning less than an
    /// hour.
    fn short(&self, t: Timestamp) -> String {
        let fmt = if self.fine { "%H:%M:%S" } else { "%m-%d %H:%M" };
        t.strftime(fmt).to_string()
    }

    fn x(&self, t: Timestamp) -> f64 {
        let span = (self.end - self.start).max(1) as f64;
        let s = t.as_second().clamp(self.start, self.end);
        LEFT + (s - self.start) as f64 / span * (WIDTH - LEFT - RIGHT)
    }
}

/// A tick step (seconds) giving at most about ten ticks over `span` seconds.
fn tick_step(span: i64) -> i64 {
    const STEPS: [i64; 18] = [
        1,
        5,
        10,
        30,
        60,
        5 * 60,
        10 * 60,
        30 * 60,
        3600,
        3 * 3600,
        6 * 3600,
        12 * 3600,
        86_400,
        2 * 86_400,
        7 * 86_400,
        14 * 86_400,
        28 * 86_400,
        91 * 86_400,
    ];
    STEPS
        .into_iter()
        .find(|s| span / s <= 10)
        .unwrap_or(91 * 86_400)
}

/// A vertical line at `x` from `y1` down to `y2`, of CSS class `class`.
fn vline(x: f64, y1: f64, y2: f64, class: &str) -> Line {
    Line::new()
        .set("x1", x)
        .set("x2", x)
        .set("y1", y1)
        .set("y2", y2)
        .set("class", class)
}

fn text(x: f64, y: f64, class: &str, content: impl Into<String>) -> TextEl {
    TextEl::new(content)
        .set("x", x)
        .set("y", y)
        .set("class", class)
}

/// Text at a fixed place, its box taken on `placer`.
fn fixed_text(placer: &mut Placer, x: f64, y: f64, class: &str, content: String) -> TextEl {
    placer.take(text_box(x, y, font_size(class), Anchor::Start, &content));
    text(x, y, class, content)
}

/// A text of the left column: cut to [`COLUMN_WIDTH`] with "…", the full text then in a
/// `<title>` (the tooltip).
fn column_text(placer: &mut Placer, y: f64, class: &str, content: String) -> TextEl {
    match truncate(&content, font_size(class), COLUMN_WIDTH) {
        None => fixed_text(placer, COLUMN_X, y, class, content),
        Some(cut) => fixed_text(placer, COLUMN_X, y, class, cut).add(Title::new(content)),
    }
}

/// A label that goes where it is free: at `(x, y)` (`anchor` saying where `x` is on the line),
/// else at the first free offset of `lanes`, else further right (see [`placement`]).
fn label(
    placer: &mut Placer,
    (x, y): (f64, f64),
    anchor: Anchor,
    class: &str,
    lanes: &[f64],
    content: String,
) -> TextEl {
    let (dx, dy) = placer.label(text_box(x, y, font_size(class), anchor, &content), lanes);
    let t = text(x + dx, y + dy, class, content);
    match anchor {
        Anchor::Start => t,
        Anchor::Middle => t.set("text-anchor", "middle"),
        Anchor::End => t.set("text-anchor", "end"),
    }
}

/// An attribute value from the record: `"` and `%` percent-encoded, because the `svg` crate
/// escapes `&`, `<` and `>` in attribute values but not quotes.
fn attr(value: &str) -> String {
    value.replace('%', "%25").replace('"', "%22")
}

/// The picture's style, every rule under `.timeline` (the root element), so that the picture
/// can be inlined in an HTML page without styling the page.
const CSS: &str = "
.timeline text { font-family: sans-serif; font-size: 12px; fill: #222; }
.timeline .title { font-size: 16px; font-weight: bold; }
.timeline .small, .timeline .basis { font-size: 11px; fill: #555; }
.timeline .track-label { font-size: 10px; fill: #888; }
.timeline .grid { stroke: #e6e6e6; }
.timeline .projected { fill: #9aa5b1; opacity: 0.45; }
.timeline .projected-line { stroke: #9aa5b1; opacity: 0.45; stroke-width: 2; }
.timeline .current { fill: #1f5fbf; }
.timeline .grace { fill: #1f5fbf; opacity: 0.18; }
.timeline .uncertain { fill: #ffffff; stroke: #1f5fbf; stroke-dasharray: 3 2; opacity: 0.55; }
.timeline .reanchored { stroke: #1f5fbf; stroke-dasharray: 2 2; }
.timeline .horizon { stroke: #7a4e00; stroke-width: 2; }
.timeline .happened { fill: #1b7f3b; }
.timeline .late { fill: #b35c00; }
.timeline .hole { fill: none; stroke: #8e44ad; stroke-width: 2; stroke-dasharray: 4 3; }
.timeline .lapse-overdue { fill: #d9822b; }
.timeline .lapse-skipped { fill: #8e44ad; }
.timeline .lapse-stalled { fill: #c0392b; }
.timeline .withdrawn { stroke: #555; stroke-width: 2; }
.timeline .fact { fill: #1b1b1b; }
.timeline .fact-line { stroke: #1b1b1b; stroke-width: 2; }
.timeline .silence { stroke: #1b1b1b; stroke-width: 2; stroke-dasharray: 1 0; opacity: 0.35; }
.timeline .now { stroke: #c0392b; stroke-dasharray: 5 4; }
";

/// Draws the subject view `view` (the `GET /v1/subjects/{type}/{id}` body) as the watcher's
/// clock reads `now`.
///
/// # Errors
/// [`TimelineError`] when `view` is not a subject view or an instant in it cannot be read.
pub fn render(view: &serde_json::Value, now: Timestamp) -> Result<Document, TimelineError> {
    let view: View = serde_json::from_value(view.clone())?;
    let steps = steps(&view)?;
    let mut facts = Vec::with_capacity(view.facts.len());
    for (i, f) in view.facts.iter().enumerate() {
        facts.push((
            f,
            instant(|| format!("facts[{i}].observedAt"), &f.observed_at)?,
        ));
    }

    // The span: every instant the record names; `now` when it is not far past the record.
    let mut all: Vec<Timestamp> = Vec::new();
    for s in &steps {
        all.extend([s.projected, s.due]);
        all.extend(s.grace_end);
        all.extend(s.horizon);
        all.extend(s.observed);
        all.extend(s.withdrawn);
        all.extend(s.lapses.iter().map(|l| l.1));
    }
    all.extend(facts.iter().map(|f| f.1));
    let first = all.iter().min().copied().unwrap_or(now);
    let last = all.iter().max().copied().unwrap_or(now);
    let span = (last.as_second() - first.as_second()).max(60);
    let pad = span / 20;
    let start = first.as_second() - pad;
    let mut end = last.as_second() + pad;
    let now_s = now.as_second();
    let now_shown = now_s >= start && now_s <= last.as_second() + span / 2;
    if now_shown {
        end = end.max(now_s + pad / 2);
    }
    let axis = Axis {
        start,
        end,
        fine: span < 3600,
    };

    let height = TOP + ROW * steps.len() as f64 + FACT_ROW + BOTTOM;
    let subject = format!("{} {}", view.subject.subject_type, view.subject.id);
    // Every glyph and label goes through one placer, so that none is drawn over another.
    let mut placer = Placer::default();
    let mut doc = Document::new()
        .set("xmlns", "http://www.w3.org/2000/svg")
        .set("width", WIDTH)
        .set("height", height)
        .set("viewBox", (0, 0, WIDTH, height))
        .set("class", "timeline")
        .add(Title::new(format!("Timeline of {subject}")))
        .add(Style::new(CSS))
        .add(
            Rectangle::new()
                .set("x", 0)
                .set("y", 0)
                .set("width", WIDTH)
                .set("height", height)
                .set("fill", "#ffffff"),
        )
        .add(fixed_text(
            &mut placer,
            12.0,
            22.0,
            "title",
            format!("{subject}: projected, current and what happened"),
        ))
        .add(fixed_text(
            &mut placer,
            12.0,
            40.0,
            "small",
            format!(
                "as of {} (UTC); faint = projected due time, blue = current due time (dashed: anchor not yet satisfied), solid = what happened",
                now.strftime("%Y-%m-%dT%H:%M:%SZ")
            ),
        ));

    // Time axis and grid.
    let step = tick_step(end - start);
    let mut tick = (start / step + 1) * step;
    let plot_bottom = height - BOTTOM;
    while tick < end {
        if let Ok(t) = Timestamp::from_second(tick) {
            let x = axis.x(t);
            doc = doc
                .add(vline(x, TOP - 16.0, plot_bottom, "grid"))
                .add(label(
                    &mut placer,
                    (x, TOP - 22.0),
                    Anchor::Middle,
                    "small",
                    &[0.0],
                    axis.short(t),
                ));
        }
        tick += step;
    }

    for (i, s) in steps.iter().enumerate() {
        doc = doc.add(step_group(i, s, &axis, &mut placer));
    }

    // The facts on the subject, joined by a solid line, and the silence since the last one.
    let y = TOP + ROW * steps.len() as f64 + FACT_ROW / 2.0;
    let mut row = Group::new().set("class", "facts").add(column_text(
        &mut placer,
        y + 4.0,
        "",
        "facts on the subject".into(),
    ));
    let mut sorted: Vec<Timestamp> = facts.iter().map(|f| f.1).collect();
    sorted.sort();
    if let (Some(a), Some(b)) = (sorted.first(), sorted.last()) {
        if a != b {
            row = row.add(
                Line::new()
                    .set("x1", axis.x(*a))
                    .set("x2", axis.x(*b))
                    .set("y1", y)
                    .set("y2", y)
                    .set("class", "fact-line"),
            );
        }
    }
    for (x, group) in fact_glyphs(&facts, &axis) {
        let title = match group.as_slice() {
            [(f, at)] => format!("{} observed {at}", f.fact_key),
            many => {
                let mut lines: Vec<String> = many
                    .iter()
                    .take(FACTS_LISTED)
                    .map(|(f, at)| format!("{} observed {at}", f.fact_key))
                    .collect();
                if many.len() > FACTS_LISTED {
                    lines.push(format!("and {} more", many.len() - FACTS_LISTED));
                }
                format!("{} facts:\n{}", many.len(), lines.join("\n"))
            }
        };
        placer.take(Rect::centred(x, y, FACT_R, FACT_R));
        let circle = Circle::new()
            .set("cx", x)
            .set("cy", y)
            .set("r", FACT_R)
            .add(Title::new(title));
        if group.len() == 1 {
            row = row.add(circle.set("class", "fact"));
        } else {
            row = row
                .add(
                    circle
                        .set("class", "fact facts-joined")
                        .set("data-facts", group.len()),
                )
                .add(label(
                    &mut placer,
                    (x, y - 8.0),
                    Anchor::Middle,
                    "small",
                    &[0.0, -11.0],
                    format!("×{}", group.len()),
                ));
        }
    }
    if let Some(last_fact) = sorted.last() {
        if now > *last_fact {
            let x2 = if now_shown {
                axis.x(now)
            } else {
                WIDTH - RIGHT
            };
            row = row
                .add(
                    Line::new()
                        .set("x1", axis.x(*last_fact))
                        .set("x2", x2)
                        .set("y1", y)
                        .set("y2", y)
                        .set("class", "silence"),
                )
                .add(label(
                    &mut placer,
                    (axis.x(*last_fact) + 6.0, y - 8.0),
                    Anchor::Start,
                    "small",
                    &[0.0, 24.0],
                    format!("no fact since {}", axis.short(*last_fact)),
                ));
        }
    }
    doc = doc.add(row);

    if now_shown {
        let x = axis.x(now);
        doc = doc.add(
            Group::new()
                .set("class", "now-marker")
                .add(vline(x, TOP - 16.0, plot_bottom, "now"))
                .add(label(
                    &mut placer,
                    (x + 3.0, plot_bottom + 16.0),
                    Anchor::Start,
                    "small",
                    &[0.0],
                    "now".into(),
                )),
        );
    } else if now_s > end {
        doc = doc.add(label(
            &mut placer,
            (WIDTH - RIGHT, plot_bottom + 16.0),
            Anchor::End,
            "small",
            &[0.0],
            format!("now ({}) is later →", axis.short(now)),
        ));
    }
    Ok(doc)
}

/// Like [`render`], as the document's text (`image/svg+xml`).
///
/// # Errors
/// As [`render`].
pub fn render_string(view: &serde_json::Value, now: Timestamp) -> Result<String, TimelineError> {
    Ok(render(view, now)?.to_string())
}

#[cfg(test)]
mod tests;
