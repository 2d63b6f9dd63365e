//! Where each glyph and label goes so that nothing is drawn over anything else: one job, given
//! the boxes already on the picture, find a free place for the next one.
//!
//! * A **glyph** (a marker at an instant) keeps its track and moves sideways, to the right, by
//!   its own width until it is free; its `<title>` keeps the exact instant.
//! * A **label** tries its lanes (offsets above or below where it would go) in order, and when
//!   every lane is taken moves right a little and tries them again.
//!
//! Text has no measured width here (the picture is built without fonts): it is estimated from
//! the character count and the font size with [`CHAR_WIDTH_EM`].

/// The estimated advance of one character, in ems (font sizes). The picture asks for
/// `sans-serif`: Helvetica and Arial advance about 0.5 em per lower-case letter and 0.556 em per
/// digit, DejaVu Sans (Linux's usual sans-serif) about 0.6 and 0.636. 0.62 holds ids and
/// instants, which are mostly digits, in any of them, so that an estimated box holds the real
/// text; a run of capitals may still exceed it by a little.
pub(crate) const CHAR_WIDTH_EM: f64 = 0.62;

/// Above and below the baseline, in ems: the box of a text line runs from `y - ASCENT_EM·size`
/// to `y + DESCENT_EM·size` (sans-serif ascenders reach about 0.72 em, descenders 0.21 em), so
/// that lines of 11-unit text 11 units apart do not overlap.
const ASCENT_EM: f64 = 0.75;
const DESCENT_EM: f64 = 0.2;

/// The clearance kept between two boxes side by side, in user units. Boxes one above the other
/// may touch: the box heights above already hold the fonts' inner spacing.
const GAP: f64 = 2.0;

/// How far a label moves right when all its lanes are taken, at least.
const MIN_NUDGE: f64 = 4.0;

/// An axis-aligned box in SVG user units (`x0 ≤ x1`, `y0 ≤ y1`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Rect {
    pub x0: f64,
    pub y0: f64,
    pub x1: f64,
    pub y1: f64,
}

impl Rect {
    /// The box of half-width `hw` and half-height `hh` centred on `(x, y)`.
    pub fn centred(x: f64, y: f64, hw: f64, hh: f64) -> Self {
        Rect {
            x0: x - hw,
            y0: y - hh,
            x1: x + hw,
            y1: y + hh,
        }
    }

    /// Whether the two boxes share any area (touching edges do not).
    pub fn overlaps(&self, other: &Rect) -> bool {
        self.x0 < other.x1 && other.x0 < self.x1 && self.y0 < other.y1 && other.y0 < self.y1
    }

    fn widened(&self, by: f64) -> Rect {
        Rect {
            x0: self.x0 - by,
            x1: self.x1 + by,
            ..*self
        }
    }

    fn moved(&self, dx: f64, dy: f64) -> Rect {
        Rect {
            x0: self.x0 + dx,
            y0: self.y0 + dy,
            x1: self.x1 + dx,
            y1: self.y1 + dy,
        }
    }
}

/// The SVG `text-anchor` of a label: where `x` is on the line of text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    Start,
    Middle,
    End,
}

impl Anchor {
    /// Reads an SVG `text-anchor` value; anything else is `start`, as in SVG.
    #[cfg(test)]
    pub fn parse(value: Option<&str>) -> Self {
        match value {
            Some("middle") => Anchor::Middle,
            Some("end") => Anchor::End,
            _ => Anchor::Start,
        }
    }
}

/// The estimated width of `text` at font size `size`.
pub(crate) fn text_width(text: &str, size: f64) -> f64 {
    text.chars().count() as f64 * size * CHAR_WIDTH_EM
}

/// The estimated box of `text` drawn at `(x, y)` (`y` the baseline) at font size `size`.
pub(crate) fn text_box(x: f64, y: f64, size: f64, anchor: Anchor, text: &str) -> Rect {
    let w = text_width(text, size);
    let x0 = match anchor {
        Anchor::Start => x,
        Anchor::Middle => x - w / 2.0,
        Anchor::End => x - w,
    };
    Rect {
        x0,
        y0: y - ASCENT_EM * size,
        x1: x0 + w,
        y1: y + DESCENT_EM * size,
    }
}

/// `text` cut to at most `width` at font size `size`, ending in "…" when cut; `None` when it
/// fits as it is.
pub(crate) fn truncate(text: &str, size: f64, width: f64) -> Option<String> {
    if text_width(text, size) <= width {
        return None;
    }
    let keep = ((width / (size * CHAR_WIDTH_EM)).floor() as usize).saturating_sub(1);
    let mut cut: String = text.chars().take(keep).collect();
    cut.truncate(cut.trim_end().len());
    cut.push('…');
    Some(cut)
}

/// The boxes on the picture so far.
#[derive(Debug, Default)]
pub(crate) struct Placer {
    taken: Vec<Rect>,
}

impl Placer {
    fn free(&self, r: &Rect) -> bool {
        let r = r.widened(GAP / 2.0);
        !self.taken.iter().any(|t| t.overlaps(&r))
    }

    /// Marks `r` as taken where it is (text at a fixed place, such as the left column).
    pub fn take(&mut self, r: Rect) {
        self.taken.push(r);
    }

    /// Places a glyph whose box is `r`: the horizontal offset (zero or more) that frees it,
    /// moving right by its width (and the gap) at a time. The box is then taken.
    pub fn glyph(&mut self, r: Rect) -> f64 {
        let step = (r.x1 - r.x0) + GAP;
        let mut dx = 0.0;
        while !self.free(&r.moved(dx, 0.0)) {
            dx += step;
        }
        self.taken.push(r.moved(dx, 0.0));
        dx
    }

    /// Places a label whose box at its preferred place is `r`, trying the vertical offsets
    /// `lanes` in order (the first is normally 0), then the same a little further right. Answers
    /// the offset `(dx, dy)` used; the box is then taken.
    pub fn label(&mut self, r: Rect, lanes: &[f64]) -> (f64, f64) {
        let nudge = ((r.x1 - r.x0) / 4.0).max(MIN_NUDGE);
        let mut dx = 0.0;
        loop {
            for &dy in lanes.iter().chain(lanes.is_empty().then_some(&0.0)) {
                let moved = r.moved(dx, dy);
                if self.free(&moved) {
                    self.taken.push(moved);
                    return (dx, dy);
                }
            }
            dx += nudge;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glyphs_at_one_instant_move_right_by_their_width() {
        let mut p = Placer::default();
        let g = Rect::centred(100.0, 50.0, 7.0, 7.0);
        assert_eq!(p.glyph(g), 0.0);
        assert_eq!(p.glyph(g), 16.0);
        assert_eq!(p.glyph(g), 32.0);
    }

    #[test]
    fn a_label_takes_the_next_free_lane_then_moves_right() {
        let mut p = Placer::default();
        let t = text_box(100.0, 50.0, 11.0, Anchor::Middle, "overdue");
        assert_eq!(p.label(t, &[0.0, 12.0]), (0.0, 0.0));
        assert_eq!(p.label(t, &[0.0, 12.0]), (0.0, 12.0));
        let (dx, dy) = p.label(t, &[0.0, 12.0]);
        assert!(dx > 0.0 && (dy == 0.0 || dy == 12.0), "{dx} {dy}");
    }

    #[test]
    fn truncation_fits_the_width_and_says_so() {
        assert_eq!(truncate("short", 11.0, 240.0), None);
        let long = "x".repeat(100);
        let cut = truncate(&long, 11.0, 240.0).unwrap();
        assert!(cut.ends_with('…'));
        assert!(text_width(&cut, 11.0) <= 240.0, "{cut}");
    }
}
