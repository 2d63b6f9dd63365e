//! The picture's glyphs: a row per expectation with its deadline, grace, anchor and outcome, the
//! lapse markers and the facts on their axis.

use super::*;

/// Radius of a fact's circle on the facts row.
pub(crate) const FACT_R: f64 = 4.0;

/// How far a fact's circle may stand right of its instant (three circles' widths) before it
/// joins the circle before it instead, drawn once with the count: a subject with many facts close
/// together stays on the picture, and placing them stays linear in their number.
pub(crate) const FACT_MAX_SHIFT: f64 = 3.0 * (2.0 * FACT_R + 2.0);

/// Facts listed in a joined circle's tooltip at most.
pub(crate) const FACTS_LISTED: usize = 10;

/// The facts row's circles, in time order: each one's x and the facts it stands for. A fact
/// stands right of the circle before it when they would overlap, by at most
/// [`FACT_MAX_SHIFT`], and else joins that circle.
pub(crate) fn fact_glyphs<'a>(
    facts: &'a [(&'a FactView, Timestamp)],
    axis: &Axis,
) -> Vec<(f64, Vec<&'a (&'a FactView, Timestamp)>)> {
    let mut in_order: Vec<&(&FactView, Timestamp)> = facts.iter().collect();
    in_order.sort_by_key(|f| f.1);
    let mut out: Vec<(f64, Vec<&(&FactView, Timestamp)>)> = Vec::new();
    for f in in_order {
        let x = axis.x(f.1);
        match out.last_mut() {
            Some((last, group)) if x < *last + 2.0 * FACT_R + 2.0 => {
                let at = *last + 2.0 * FACT_R + 2.0;
                if at - x > FACT_MAX_SHIFT {
                    group.push(f);
                } else {
                    out.push((at, vec![f]));
                }
            }
            _ => out.push((x, vec![f])),
        }
    }
    out
}

/// Half the width (and height) of a lapse's glyph.
pub(crate) const LAPSE_HALF: f64 = 7.0;

/// Lanes for the label under a lapse's glyph: right under it, then one line lower.
pub(crate) const LAPSE_LANES: [f64; 2] = [0.0, 11.0];

/// A lapse of kind `kind` at `at`, its glyph at `(x, y)` (moved right of any glyph already
/// there, see [`placement`]), its label below in the first free lane.
pub(crate) fn lapse_marker(
    kind: &str,
    glyph: (f64, f64),
    at: Timestamp,
    placer: &mut Placer,
) -> Group {
    let (x, y) = glyph;
    let class = match kind {
        "overdue" | "skipped" | "stalled" => format!("lapse lapse-{kind}"),
        _ => "lapse".to_owned(),
    };
    // A shape per kind, so the kinds differ without colour too.
    let shape: Box<dyn svg::Node> = match kind {
        "overdue" => Box::new(Polygon::new().set(
            "points",
            format!(
                "{},{} {},{} {},{}",
                x,
                y - 7.0,
                x + 7.0,
                y + 6.0,
                x - 7.0,
                y + 6.0
            ),
        )),
        "skipped" => Box::new(Polygon::new().set(
            "points",
            format!(
                "{},{} {},{} {},{} {},{}",
                x,
                y - 7.0,
                x + 7.0,
                y,
                x,
                y + 7.0,
                x - 7.0,
                y
            ),
        )),
        _ => Box::new(
            Rectangle::new()
                .set("x", x - 6.0)
                .set("y", y - 6.0)
                .set("width", 12)
                .set("height", 12),
        ),
    };
    Group::new()
        .set("class", class)
        .add(shape)
        .add(label(
            placer,
            (x, y + 20.0),
            Anchor::Middle,
            "small",
            &LAPSE_LANES,
            kind.to_owned(),
        ))
        .add(Title::new(format!("{kind} lapse at {at}")))
}

pub(crate) fn step_group(i: usize, s: &Step<'_>, axis: &Axis, placer: &mut Placer) -> Group {
    let top = TOP + ROW * i as f64;
    let (y_proj, y_cur, y_hap) = (top + 14.0, top + 34.0, top + 56.0);
    let rec = s.rec;
    let mut g = Group::new()
        .set("id", format!("step-{i}"))
        .set("class", "step")
        .set("data-expectation-id", attr(&rec.expectation_id))
        .add(column_text(placer, top + 18.0, "", rec.kind.clone()))
        .add(column_text(
            placer,
            top + 34.0,
            "small",
            format!("{} · {}", rec.expectation_id, rec.status),
        ))
        .add(column_text(
            placer,
            top + 50.0,
            "basis",
            format!("basis: {}", rec.basis.as_deref().unwrap_or("not given")),
        ))
        .add(fixed_text(
            placer,
            LEFT - 70.0,
            y_proj + 3.0,
            "track-label",
            "projected".into(),
        ))
        .add(fixed_text(
            placer,
            LEFT - 70.0,
            y_cur + 3.0,
            "track-label",
            "current".into(),
        ))
        .add(fixed_text(
            placer,
            LEFT - 70.0,
            y_hap + 3.0,
            "track-label",
            "happened".into(),
        ))
        .add(
            Line::new()
                .set("x1", LEFT)
                .set("x2", WIDTH - RIGHT)
                .set("y1", top + ROW - 4.0)
                .set("y2", top + ROW - 4.0)
                .set("class", "grid"),
        );

    if !s.lapses.is_empty() {
        let list: Vec<String> = s
            .lapses
            .iter()
            .map(|(kind, at)| format!("{kind} {}", axis.short(*at)))
            .collect();
        // On two lines at most: as many whole lapses as fit on the first, the rest on the
        // second, cut when it must be with the whole list in its tooltip.
        let small = font_size("small");
        let fits = |t: &str| truncate(t, small, COLUMN_WIDTH).is_none();
        let mut first = format!("lapsed: {}", list[0]);
        let mut shown = 1;
        while let Some(item) = list.get(shown) {
            let more = if shown + 1 < list.len() { "," } else { "" };
            if !fits(&format!("{first}, {item}{more}")) {
                break;
            }
            first = format!("{first}, {item}");
            shown += 1;
        }
        if shown < list.len() {
            first.push(',');
        }
        g = g.add(column_text(placer, top + 66.0, "small", first));
        if shown < list.len() {
            let second = list[shown..].join(", ");
            let full = format!("lapsed: {}", list.join(", "));
            g = g.add(match truncate(&second, small, COLUMN_WIDTH) {
                None => fixed_text(placer, COLUMN_X, top + 79.0, "small", second),
                Some(cut) => {
                    fixed_text(placer, COLUMN_X, top + 79.0, "small", cut).add(Title::new(full))
                }
            });
        }
    }

    // The glyphs first, each moved right of any glyph already there; the labels after, around
    // them. Each glyph's `<title>` keeps its exact instant.
    let xp = axis.x(s.projected);
    let xp = xp + placer.glyph(Rect::centred(xp, y_proj, 5.0, 5.0));
    let xc_time = axis.x(s.due);
    let xc = xc_time + placer.glyph(Rect::centred(xc_time, y_cur, 6.0, 6.0));
    let xh = s.horizon.map(|h| {
        let x = axis.x(h);
        x + placer.glyph(Rect::centred(x, y_cur, 1.0, 8.0))
    });
    let x_obs = s.observed.map(|obs| {
        let x = axis.x(obs);
        x + placer.glyph(Rect::centred(x, y_hap, 6.0, 6.0))
    });
    let hole = s.observed.is_none() && s.lapses.iter().any(|l| l.0 == "skipped");
    if hole {
        placer.take(Rect::centred(xc_time, y_hap, 9.0, 9.0));
    }
    let xw = s.withdrawn.map(|w| {
        let x = axis.x(w);
        x + placer.glyph(Rect::centred(x, y_hap, 5.0, 5.0))
    });
    let x_lapses: Vec<f64> = s
        .lapses
        .iter()
        .map(|(_, at)| {
            let x = axis.x(*at);
            x + placer.glyph(Rect::centred(x, y_hap, LAPSE_HALF, LAPSE_HALF))
        })
        .collect();

    // Projected: faint.
    g = g.add(
        Circle::new()
            .set("cx", xp)
            .set("cy", y_proj)
            .set("r", 5)
            .set("class", "projected")
            .add(Title::new(format!("projected due {}", s.projected))),
    );

    // Current: the grace window, the due time, the horizon.
    if let Some(end) = s.grace_end {
        g = g.add(
            Rectangle::new()
                .set("x", xc_time)
                .set("y", y_cur - 4.0)
                .set("width", (axis.x(end) - xc_time).max(0.0))
                .set("height", 8)
                .set("class", "grace"),
        );
    }
    if s.reanchored {
        g = g.add(
            Line::new()
                .set("x1", xp)
                .set("x2", xc)
                .set("y1", y_proj)
                .set("y2", y_cur)
                .set("class", "reanchored"),
        );
    }
    let (class, note) = if s.uncertain {
        (
            "current uncertain",
            " (anchored; the anchor is not satisfied yet, so this may move)",
        )
    } else if s.reanchored {
        ("current reanchored-due", " (re-anchored)")
    } else {
        ("current", "")
    };
    g = g.add(
        Circle::new()
            .set("cx", xc)
            .set("cy", y_cur)
            .set("r", 6)
            .set("class", class)
            .add(Title::new(format!("current due {}{note}", s.due))),
    );
    g = g.add(label(
        placer,
        (xc + 9.0, y_cur + 4.0),
        Anchor::Start,
        "small",
        &[0.0, -11.0, 11.0],
        format!("due {}", axis.short(s.due)),
    ));
    if let (Some(h), Some(xh)) = (s.horizon, xh) {
        g = g
            .add(
                vline(xh, y_cur - 8.0, y_cur + 8.0, "horizon")
                    .add(Title::new(format!("horizon {h}"))),
            )
            .add(label(
                placer,
                (xh + 4.0, y_cur - 6.0),
                Anchor::Start,
                "small",
                &[0.0, 22.0, -10.0],
                "horizon".into(),
            ));
    }

    // What happened: solid.
    if let (Some(obs), Some(x)) = (s.observed, x_obs) {
        let late = rec.satisfaction.as_ref().is_some_and(|x| x.late);
        g = g.add(
            Circle::new()
                .set("cx", x)
                .set("cy", y_hap)
                .set("r", 6)
                .set("class", if late { "happened late" } else { "happened" })
                .add(Title::new(format!(
                    "satisfied: observed {obs}{}",
                    if late { " (late)" } else { "" }
                ))),
        );
    } else if hole {
        // The hole: a later step was reported while this one never was (§9.1 skipped).
        g = g.add(
            Rectangle::new()
                .set("x", xc_time - 9.0)
                .set("y", y_hap - 9.0)
                .set("width", 18)
                .set("height", 18)
                .set("class", "hole")
                .add(Title::new(
                    "never reported: a later step happened without it",
                )),
        );
    }
    if let (Some(w), Some(x)) = (s.withdrawn, xw) {
        g = g.add(
            Group::new()
                .set("class", "withdrawn")
                .add(
                    Line::new()
                        .set("x1", x - 5.0)
                        .set("x2", x + 5.0)
                        .set("y1", y_hap - 5.0)
                        .set("y2", y_hap + 5.0),
                )
                .add(
                    Line::new()
                        .set("x1", x - 5.0)
                        .set("x2", x + 5.0)
                        .set("y1", y_hap + 5.0)
                        .set("y2", y_hap - 5.0),
                )
                .add(Title::new(format!("withdrawn at {w}"))),
        );
    }
    for ((kind, at), x) in s.lapses.iter().zip(x_lapses) {
        g = g.add(lapse_marker(kind, (x, y_hap), *at, placer));
    }
    g
}
