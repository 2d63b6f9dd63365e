//! `a2a-watcher report basis [--config F | --db F]` (expectations-v1 §13.3): per kind and
//! `basis`, how many expectations, how many were satisfied on time and late (p50 and p90 of the
//! lateness, `observedAt − dueAt`), the lapse rate by lapse kind, and the due offset the
//! history supports beside the one promised: the p50 of `dueAt − raisedAt` as raised against
//! the p90 of `observedAt − raisedAt` of the satisfied ones. A lane sold as four days that runs
//! six shows `promised p50 P4D`, `observed p90 P6D`. An offline report: it reads every record.

use std::collections::BTreeMap;

use serde::Serialize;
use watcher_core::record::{ExpectationRecord, LapseKind};

/// One line of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BasisRow {
    /// The kind.
    pub kind: String,
    /// The basis as raised (`observed`, `contract`, `declared`, …).
    pub basis: String,
    /// Expectations raised.
    pub count: usize,
    /// Satisfied with `observedAt` at or before the current `dueAt`.
    pub on_time: usize,
    /// Satisfied after it.
    pub late: usize,
    /// Median lateness of the late ones, seconds.
    pub late_p50_seconds: Option<f64>,
    /// 90th percentile lateness of the late ones, seconds.
    pub late_p90_seconds: Option<f64>,
    /// Fraction of the expectations that lapsed, by lapse kind.
    pub lapse_rate: BTreeMap<String, f64>,
    /// Median of `dueAt − raisedAt` as raised (the offset promised), seconds.
    pub promised_offset_p50_seconds: Option<f64>,
    /// 90th percentile of `observedAt − raisedAt` of the satisfied ones (the offset the history
    /// supports), seconds.
    pub observed_offset_p90_seconds: Option<f64>,
}

/// The nearest-rank percentile `p` (0–100) of `values`; `None` when empty.
pub fn percentile(values: &[f64], p: f64) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * v.len() as f64).ceil().max(1.0) as usize;
    v.get(rank - 1).copied()
}

fn secs(from: watcher_core::time::Instant, to: watcher_core::time::Instant) -> f64 {
    (to.as_nanos() - from.as_nanos()) as f64 / 1e9
}

/// The report over `records`, one row per (kind, basis), sorted.
pub fn basis(records: &[ExpectationRecord]) -> Vec<BasisRow> {
    let mut groups: BTreeMap<(String, String), Vec<&ExpectationRecord>> = BTreeMap::new();
    for r in records {
        groups
            .entry((r.expectation.kind.clone(), r.expectation.basis.clone()))
            .or_default()
            .push(r);
    }
    groups
        .into_iter()
        .map(|((kind, basis), rs)| {
            let mut lateness = Vec::new();
            let mut observed = Vec::new();
            let mut on_time = 0;
            for r in &rs {
                if let Some(s) = &r.satisfaction {
                    observed.push(secs(r.raised_at, s.observed_at));
                    if s.observed_at > r.due_at {
                        lateness.push(secs(r.due_at, s.observed_at));
                    } else {
                        on_time += 1;
                    }
                }
            }
            let promised: Vec<f64> = rs
                .iter()
                .map(|r| secs(r.raised_at, r.expectation.due_at))
                .collect();
            let lapse_rate = [LapseKind::Overdue, LapseKind::Skipped, LapseKind::Stalled]
                .into_iter()
                .map(|k| {
                    let n = rs.iter().filter(|r| r.has_lapsed(k)).count();
                    (k.as_str().to_owned(), n as f64 / rs.len() as f64)
                })
                .collect();
            BasisRow {
                kind,
                basis,
                count: rs.len(),
                on_time,
                late: lateness.len(),
                late_p50_seconds: percentile(&lateness, 50.0),
                late_p90_seconds: percentile(&lateness, 90.0),
                lapse_rate,
                promised_offset_p50_seconds: percentile(&promised, 50.0),
                observed_offset_p90_seconds: percentile(&observed, 90.0),
            }
        })
        .collect()
}

/// Seconds as hours or days for the table, `-` when absent.
fn human(s: Option<f64>) -> String {
    match s {
        None => "-".into(),
        Some(s) if s.abs() >= 86400.0 => format!("{:.1}d", s / 86400.0),
        Some(s) if s.abs() >= 3600.0 => format!("{:.1}h", s / 3600.0),
        Some(s) => format!("{s:.0}s"),
    }
}

/// The readable table, boxed as every command's, with a note under it when a promised offset is
/// negative: expectations raised after their own due time (pushed late, or recorded while the
/// watcher caught up), so `dueAt − raisedAt` is below zero and says nothing about what to promise.
pub fn table(rows: &[BasisRow]) -> String {
    table_to(rows, crate::table::output_width())
}

/// [`table`] drawn to `width` columns (`crate::table::render`: no word broken).
fn table_to(rows: &[BasisRow], width: usize) -> String {
    let mut t = crate::table::table(&[
        "kind / basis",
        "count",
        "on time",
        "late",
        "late p50 / p90",
        "lapsed: overdue / skipped / stalled",
        "promised p50",
        "observed p90",
    ]);
    for r in rows {
        let rate = |k: &str| {
            format!(
                "{:.0}%",
                100.0 * r.lapse_rate.get(k).copied().unwrap_or(0.0)
            )
        };
        t.add_row(vec![
            format!("{}\n{}", r.kind, r.basis),
            r.count.to_string(),
            r.on_time.to_string(),
            r.late.to_string(),
            format!(
                "{} / {}",
                human(r.late_p50_seconds),
                human(r.late_p90_seconds)
            ),
            format!(
                "{} / {} / {}",
                rate("overdue"),
                rate("skipped"),
                rate("stalled")
            ),
            human(r.promised_offset_p50_seconds),
            human(r.observed_offset_p90_seconds),
        ]);
    }
    let mut out = format!("{}\n", crate::table::render(t, width));
    if rows
        .iter()
        .any(|r| r.promised_offset_p50_seconds.is_some_and(|s| s < 0.0))
    {
        out.push_str(
            "A negative promised p50: most expectations of that row were raised after their own due \
             time (dueAt before raisedAt: pushed late, or recorded while the watcher caught up), so \
             the promise says nothing about the lane.\n",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const DAY: f64 = 86400.0;

    /// A stored record raised at day 0, due at `due` days, observed at `observed` days (when
    /// satisfied), with `lapses`.
    fn record(
        id: &str,
        basis: &str,
        due: i64,
        observed: Option<i64>,
        lapses: &[&str],
    ) -> ExpectationRecord {
        let at = |d: i64| format!("2026-09-{:02}T00:00:00Z", 1 + d);
        let satisfaction = observed.map(|o| json!({
            "factKey": "k", "source": "s", "satisfiedAt": at(o), "observedAt": at(o), "late": o > due
        }));
        let lapses: Vec<_> = lapses
            .iter()
            .map(|k| json!({ "lapse": k, "lapsedAt": at(due), "messageId": format!("lapse:{id}:{k}"), "dueAt": at(due) }))
            .collect();
        serde_json::from_value(json!({
            "expectation": {
                "expectationId": id, "kind": "lane.delivery", "subject": { "type": "shipment", "id": id },
                "expects": "delivery", "satisfiedBy": { "factKey": "k" }, "dueAt": at(due), "basis": basis
            },
            "agent": "a", "tenant": "default",
            "status": if observed.is_some() { "satisfied" } else { "open" },
            "dueAt": at(due), "lineage": 0, "raisedAt": at(0),
            "raisedBy": { "taskId": "t", "contextId": null },
            "satisfaction": satisfaction, "lapses": lapses, "withdrawal": null, "supersededBy": null,
            "order": { "input": 1, "index": 0 }, "anchorState": "unanchored",
            "horizonChecked": false, "questionAt": null
        }))
        .expect("a stored record")
    }

    #[test]
    fn a_lane_sold_as_four_days_that_runs_six_shows_as_such() {
        // Contract: promised 4 days; ten shipments: two on time (day 3, 4), eight late (day 5
        // ×2, day 6 ×6); two of the late ones lapsed overdue first.
        let mut rs = vec![
            record("c1", "contract", 4, Some(3), &[]),
            record("c2", "contract", 4, Some(4), &[]),
            record("c3", "contract", 4, Some(5), &["overdue"]),
            record("c4", "contract", 4, Some(5), &[]),
        ];
        for i in 5..=10 {
            let lapses: &[&str] = if i == 5 { &["overdue"] } else { &[] };
            rs.push(record(&format!("c{i}"), "contract", 4, Some(6), lapses));
        }
        // Observed basis: one, skipped and never satisfied.
        rs.push(record("o1", "observed", 2, None, &["skipped"]));
        let rows = basis(&rs);
        assert_eq!(rows.len(), 2);
        let c = &rows[0];
        assert_eq!(
            (c.basis.as_str(), c.count, c.on_time, c.late),
            ("contract", 10, 2, 8)
        );
        assert_eq!(c.late_p50_seconds, Some(2.0 * DAY));
        assert_eq!(c.late_p90_seconds, Some(2.0 * DAY));
        assert_eq!(c.lapse_rate["overdue"], 0.2);
        assert_eq!(c.lapse_rate["skipped"], 0.0);
        assert_eq!(c.promised_offset_p50_seconds, Some(4.0 * DAY));
        assert_eq!(c.observed_offset_p90_seconds, Some(6.0 * DAY));
        let o = &rows[1];
        assert_eq!(
            (o.basis.as_str(), o.count, o.on_time, o.late),
            ("observed", 1, 0, 0)
        );
        assert_eq!(o.lapse_rate["skipped"], 1.0);
        assert_eq!(o.observed_offset_p90_seconds, None);
        let t = table_to(&rows, 100);
        let row: Vec<&str> = t
            .lines()
            .find(|l| l.contains("lane.delivery"))
            .unwrap_or_else(|| panic!("the contract row in\n{t}"))
            .trim_matches('│')
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(
            row,
            [
                "lane.delivery",
                "10",
                "2",
                "8",
                "2.0d / 2.0d",
                "20% / 0% / 0%",
                "4.0d",
                "6.0d"
            ],
            "{t}"
        );
        assert!(t.lines().any(|l| l.contains("│ contract ")), "{t}");
        assert!(t.lines().all(|l| l.chars().count() <= 100), "{t}");
        assert!(!t.contains("negative"), "{t}");
        // The docs show this table as it is printed (docs/reference/cli.md, "report basis").
        let doc_path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/reference/cli.md");
        let doc = std::fs::read_to_string(doc_path).expect("docs/reference/cli.md");
        let (head, rest) = doc.split_once(EXAMPLE_MARK).expect("the example's mark");
        // The block after the mark: its opening fence, then everything up to its closing one.
        let body = rest
            .strip_prefix("\n```console\n")
            .expect("the example's block right after its mark");
        let tail = body
            .split_once("```\n")
            .map(|(_, t)| t)
            .expect("the example's end");
        let want = format!(
            "{head}{EXAMPLE_MARK}\n```console\n$ a2a-watcher report basis --config watcher.toml\n{t}```\n{tail}"
        );
        if std::env::var_os("UPDATE_DOCS").is_some() {
            std::fs::write(doc_path, &want).expect("write docs/reference/cli.md");
        } else {
            assert!(doc == want, "docs/reference/cli.md's report example is stale: UPDATE_DOCS=1 cargo test --bin a2a-watcher report");
        }
    }

    /// The line before the example in docs/reference/cli.md.
    const EXAMPLE_MARK: &str =
        "<!-- report basis example: a_lane_sold_as_four_days_that_runs_six_shows_as_such -->";

    #[test]
    fn a_negative_promised_offset_is_explained() {
        // Raised on day 4, due on day 2: pushed after its own due time.
        let mut r = record("n1", "declared", 2, None, &["overdue"]);
        r.raised_at = watcher_core::time::Instant::from_nanos(
            r.due_at.as_nanos() + 2 * 86_400 * 1_000_000_000,
        )
        .expect("in range");
        let rows = basis(&[r]);
        assert_eq!(rows[0].promised_offset_p50_seconds, Some(-2.0 * DAY));
        let t = table_to(&rows, 100);
        assert!(t.contains("-2.0d"), "{t}");
        assert!(t.contains("A negative promised p50"), "{t}");
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let v = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0];
        assert_eq!(percentile(&v, 50.0), Some(5.0));
        assert_eq!(percentile(&v, 90.0), Some(9.0));
        assert_eq!(percentile(&[], 90.0), None);
    }
}
