//! Tables for a terminal: the operator's commands and `report basis` draw their tables with
//! comfy-table, to the terminal's width ([`output_width`]), with column widths chosen here so
//! that no word is ever broken ([`render`]).

use comfy_table::{presets::UTF8_BORDERS_ONLY, ColumnConstraint, ContentArrangement, Table, Width};
use unicode_width::UnicodeWidthStr;

/// The width tables are drawn to, in columns, when neither `COLUMNS` nor a terminal says (the
/// output goes to a file or a pipe).
pub const DEFAULT_WIDTH: usize = 100;

/// The width to draw tables to: `COLUMNS` when it holds a positive number, else the terminal's
/// width when standard output is one, else [`DEFAULT_WIDTH`].
pub fn output_width() -> usize {
    std::env::var("COLUMNS")
        .ok()
        .and_then(|c| c.trim().parse::<usize>().ok())
        .filter(|&c| c > 0)
        .or_else(|| Table::new().width().map(usize::from).filter(|&w| w > 0))
        .unwrap_or(DEFAULT_WIDTH)
}

/// A box table with `header`; [`render`] draws it to a width.
pub fn table(header: &[&str]) -> Table {
    let mut t = Table::new();
    t.load_preset(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(header.to_vec());
    t
}

/// `t` drawn to `width` columns, never breaking a word: cells wrap at spaces only (an instant
/// `2026-09-11 02:41:07Z` wraps as date over time), and a column is never narrower than its
/// longest word. When even the longest words side by side are wider than `width`, the lines
/// are wider than `width` rather than a word broken.
///
/// The widths are chosen here rather than by comfy-table's dynamic arrangement, which breaks a
/// word once a column must be narrower than it (`COMPLE`/`TED`): each column starts at its
/// longest word; then, while room is left, the column whose next widening saves the most lines
/// of the table for the columns it costs is widened (`widths`).
pub fn render(mut t: Table, width: usize) -> String {
    let columns = t.column_count();
    if columns == 0 {
        return t.to_string();
    }
    let cells: Vec<Vec<String>> = t
        .header()
        .into_iter()
        .chain(t.row_iter())
        .map(|row| {
            let mut texts: Vec<String> = row.cell_iter().map(comfy_table::Cell::content).collect();
            texts.resize(columns, String::new());
            texts
        })
        .collect();
    let padding: Vec<usize> = t
        .column_iter()
        .map(|c| usize::from(c.padding_width()))
        .collect();
    let set = |t: &mut Table, widths: &[usize]| {
        for (i, w) in widths.iter().enumerate() {
            if let Some(c) = t.column_mut(i) {
                let total = u16::try_from(w + padding[i]).unwrap_or(u16::MAX);
                c.set_constraint(ColumnConstraint::Absolute(Width::Fixed(total)));
            }
        }
    };
    // What the borders and padding take: a header of one-column-wide cells in the same style,
    // drawn (the rows are not copied: drawing them is the costly part).
    let mut probe = Table::new();
    probe
        .load_preset(&t.current_style_as_preset())
        .set_content_arrangement(ContentArrangement::Disabled)
        .set_header(vec![""; columns]);
    set(&mut probe, &vec![1; columns]);
    let frame = probe
        .to_string()
        .lines()
        .next()
        .map_or(0, |l| l.width().saturating_sub(columns));
    set(&mut t, &widths(&cells, width.saturating_sub(frame)));
    t.to_string()
}

/// How many lines `text` takes wrapped at spaces into `width` columns (a word wider than
/// `width` takes a line of its own; [`render`] never makes a column that narrow).
fn wrapped_lines(text: &str, width: usize) -> usize {
    text.split('\n')
        .map(|line| {
            let (mut lines, mut used) = (1, 0);
            for word in line.split(' ').map(UnicodeWidthStr::width) {
                if used == 0 {
                    used = word;
                } else if used + 1 + word <= width {
                    used += 1 + word;
                } else {
                    lines += 1;
                    used = word;
                }
            }
            lines
        })
        .sum()
}

/// The content width of each column of `cells` (rows of texts, the header first) within `room`
/// columns: every column at least its longest word; all of them at their longest line when
/// that fits; otherwise the room shared out greedily, each step widening the column whose next
/// narrower wrapping saves the most table lines (then the most of its own lines) per column of
/// width it costs.
fn widths(cells: &[Vec<String>], room: usize) -> Vec<usize> {
    let columns = cells.first().map_or(0, Vec::len);
    let word = |text: &String| {
        text.split(['\n', ' '])
            .map(UnicodeWidthStr::width)
            .max()
            .unwrap_or(0)
    };
    let line = |text: &String| {
        text.split('\n')
            .map(UnicodeWidthStr::width)
            .max()
            .unwrap_or(0)
    };
    let least: Vec<usize> = (0..columns)
        .map(|c| cells.iter().map(|r| word(&r[c])).max().unwrap_or(0).max(1))
        .collect();
    let most: Vec<usize> = (0..columns)
        .map(|c| cells.iter().map(|r| line(&r[c])).max().unwrap_or(0).max(1))
        .collect();
    if most.iter().sum::<usize>() <= room {
        return most;
    }
    let mut widths = least.clone();
    let mut spare = room.saturating_sub(widths.iter().sum());
    // wrapped[c][w - least[c]]: the lines each cell of column c takes at width w, computed once.
    let mut wrapped: Vec<Vec<Option<Vec<usize>>>> = (0..columns)
        .map(|c| vec![None; most[c] - least[c] + 1])
        .collect();
    let mut lines_at = |c: usize, w: usize| -> Vec<usize> {
        wrapped[c][w - least[c]]
            .get_or_insert_with(|| cells.iter().map(|r| wrapped_lines(&r[c], w)).collect())
            .clone()
    };
    // lines[c][r]: the lines cell (r, c) takes at the column's present width.
    let mut lines: Vec<Vec<usize>> = (0..columns).map(|c| lines_at(c, widths[c])).collect();
    let height = |lines: &[Vec<usize>]| -> usize {
        (0..cells.len())
            .map(|r| lines.iter().map(|col| col[r]).max().unwrap_or(1))
            .sum()
    };
    /// A column widened to the least width that wraps it into fewer lines, and what it saves.
    struct Widening {
        column: usize,
        width: usize,
        lines: Vec<usize>,
        cost: usize,
        /// Lines of the table saved, then lines of the column saved.
        saved: (usize, usize),
    }
    while spare > 0 {
        let now = height(&lines);
        let mut best: Option<Widening> = None;
        for c in 0..columns {
            let own: usize = lines[c].iter().sum();
            let widest = most[c].min(widths[c] + spare);
            let Some((width, col)) = (widths[c] + 1..=widest).find_map(|w| {
                let col = lines_at(c, w);
                (col.iter().sum::<usize>() < own).then_some((w, col))
            }) else {
                continue;
            };
            let mut trial = lines.clone();
            trial[c] = col.clone();
            let option = Widening {
                column: c,
                width,
                cost: width - widths[c],
                saved: (now - height(&trial), own - col.iter().sum::<usize>()),
                lines: col,
            };
            // Savings per column of width compared without dividing: a/b > c/d as a·d > c·b.
            let better = best.as_ref().is_none_or(|b| {
                (option.saved.0 * b.cost, option.saved.1 * b.cost)
                    > (b.saved.0 * option.cost, b.saved.1 * option.cost)
            });
            if better {
                best = Some(option);
            }
        }
        let Some(chosen) = best else {
            break;
        };
        spare -= chosen.cost;
        widths[chosen.column] = chosen.width;
        lines[chosen.column] = chosen.lines;
    }
    widths
}
