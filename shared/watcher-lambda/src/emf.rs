//! CloudWatch Embedded Metric Format from the functions (issue 14, "Metrics and traces"): each
//! committed input, each lapse-task posting and each sweep prints one JSON line on stdout that
//! CloudWatch Logs turns into metrics in the namespace [`NAMESPACE`], dimension `Function`. The
//! same counts as `serve`'s `GET /metrics` (watcher_runtime::metrics), under these names:
//!
//! | metric | unit | what |
//! |---|---|---|
//! | `ExpectationsRaised`, `ExpectationsRefused` | Count | per input |
//! | `FactsMatched`, `FactsUnmatched` | Count | per input |
//! | `LapsesOverdue`, `LapsesSkipped`, `LapsesStalled` | Count | per input |
//! | `DeliveryAttempts`, `DeliveryFailures` | Count | per posting |
//! | `LapseDeliveryLateness` | Seconds | delivery instant − `lapsedAt`, per delivered task |
//! | `LapseTasksDelivered` | Count | 1 per delivered task (the lateness objective's "all") |
//! | `LapseTasksDeliveredLate` | Count | 1 per delivered task later than the objective, else 0 |
//! | `OpenExpectations` | Count | after each sweep, from the per-agent live counters |
//! | `OpenIncidentsOverdue`, `OpenIncidentsSkipped`, `OpenIncidentsStalled` | Count | after each sweep, per function and `Agent`: the agent's open incidents (lapses not resolved) of that kind, from its open lane, at most 1,000 per agent (`watcher_runtime::metrics::open_incidents`) |
//! | `TimerFailures` | Count | per due timer whose record could not be read or written |
//! | `Notifications`, `NotificationFailures`, `NotificationRedirects` | Count | per notification, also by `Channel`; a redirect (3xx, not followed) is a failure too |

use std::io::Write;

use serde_json::{json, Map, Value};
use watcher_core::record::LapseKind;
use watcher_runtime::metrics::{AttemptOutcome, Recorder, Tally};

/// The CloudWatch namespace of every metric.
pub const NAMESPACE: &str = "a2a-watcher";

/// The environment variable holding the lapse lateness objective in seconds (template.yaml's
/// `LapseLatenessObjectiveSeconds`): a delivered lapse task later than this counts in
/// `LapseTasksDeliveredLate`, which the template's burn-rate alarms divide by
/// `LapseTasksDelivered`.
pub const LATENESS_OBJECTIVE_ENV: &str = "LAPSE_LATENESS_OBJECTIVE_SECONDS";

/// The objective when [`LATENESS_OBJECTIVE_ENV`] is unset: 60 s after `lapsedAt`.
pub const DEFAULT_LATENESS_OBJECTIVE_SECS: f64 = 60.0;

/// The lateness objective, in seconds, read from `value` (the text of
/// [`LATENESS_OBJECTIVE_ENV`]); [`DEFAULT_LATENESS_OBJECTIVE_SECS`] when `None`.
///
/// # Errors
/// A message naming the variable when `value` is not a finite number of seconds above 0 (the
/// template's parameter allows 1 to 86,400); set it to such a number.
pub fn lateness_objective(value: Option<&str>) -> Result<f64, String> {
    let Some(text) = value else {
        return Ok(DEFAULT_LATENESS_OBJECTIVE_SECS);
    };
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 => Ok(s),
        _ => Err(format!(
            "{LATENESS_OBJECTIVE_ENV} is {text:?}, not a number of seconds above 0"
        )),
    }
}

/// The metrics of one posting of a lapse task ([`Recorder::attempt`]), with `lateness` in
/// seconds for a delivered one: `DeliveryAttempts`; `DeliveryFailures` when `outcome` is
/// failed; for a delivered task `LapseDeliveryLateness` (never below 0), `LapseTasksDelivered`
/// and `LapseTasksDeliveredLate` (1 when `lateness` exceeds `objective_secs`, else 0, so a
/// window's sum over `LapseTasksDelivered`'s is the share of late deliveries).
pub fn attempt_metrics(
    outcome: AttemptOutcome,
    lateness: Option<f64>,
    objective_secs: f64,
) -> Vec<(&'static str, &'static str, f64)> {
    let mut m = vec![("DeliveryAttempts", "Count", 1.0)];
    if outcome == AttemptOutcome::Failed {
        m.push(("DeliveryFailures", "Count", 1.0));
    }
    if let Some(s) = lateness {
        let s = s.max(0.0);
        m.push(("LapseDeliveryLateness", "Seconds", s));
        m.push(("LapseTasksDelivered", "Count", 1.0));
        let late = if s > objective_secs { 1.0 } else { 0.0 };
        m.push(("LapseTasksDeliveredLate", "Count", late));
    }
    m
}

/// One EMF document: `metrics` as `(name, unit, value)`, under dimension `Function` =
/// `function`, at `timestamp_ms` (Unix milliseconds).
pub fn emf_line(function: &str, timestamp_ms: i64, metrics: &[(&str, &str, f64)]) -> Value {
    emf_line_by(function, timestamp_ms, None, metrics)
}

/// [`emf_line`], also counted by one more dimension when `by` = `(name, value)` is given: the
/// document then has the dimension sets `[Function]` and `[Function, name]`, so CloudWatch
/// keeps both the function's total and one series per value.
pub fn emf_line_by(
    function: &str,
    timestamp_ms: i64,
    by: Option<(&str, &str)>,
    metrics: &[(&str, &str, f64)],
) -> Value {
    let definitions: Vec<Value> = metrics
        .iter()
        .map(|(name, unit, _)| json!({ "Name": name, "Unit": unit }))
        .collect();
    let dimensions = match by {
        Some((name, _)) => json!([["Function"], ["Function", name]]),
        None => json!([["Function"]]),
    };
    let mut doc = Map::new();
    doc.insert(
        "_aws".into(),
        json!({
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [{
                "Namespace": NAMESPACE,
                "Dimensions": dimensions,
                "Metrics": definitions,
            }]
        }),
    );
    doc.insert("Function".into(), json!(function));
    if let Some((name, value)) = by {
        doc.insert(name.into(), json!(value));
    }
    for (name, _, value) in metrics {
        doc.insert((*name).into(), json!(value));
    }
    Value::Object(doc)
}

/// The metrics of one input's [`Tally`], zero counts left out.
pub fn tally_metrics(t: &Tally) -> Vec<(&'static str, &'static str, f64)> {
    let lapses = |k| t.lapses.get(&k).copied().unwrap_or(0);
    [
        ("ExpectationsRaised", t.raised),
        ("ExpectationsRefused", t.refused),
        ("FactsMatched", t.facts_matched),
        ("FactsUnmatched", t.facts_unmatched),
        ("LapsesOverdue", lapses(LapseKind::Overdue)),
        ("LapsesSkipped", lapses(LapseKind::Skipped)),
        ("LapsesStalled", lapses(LapseKind::Stalled)),
    ]
    .into_iter()
    .filter(|(_, n)| *n > 0)
    .map(|(name, n)| (name, "Count", n as f64))
    .collect()
}

/// A [`Recorder`] printing EMF lines on stdout.
#[derive(Debug, Clone)]
pub struct EmfRecorder {
    function: String,
    /// Seconds after `lapsedAt` beyond which a delivery counts as late.
    objective_secs: f64,
}

impl EmfRecorder {
    /// For the function named `function` (the `Function` dimension).
    pub fn new(function: impl Into<String>) -> Self {
        EmfRecorder {
            function: function.into(),
            objective_secs: DEFAULT_LATENESS_OBJECTIVE_SECS,
        }
    }

    /// This recorder with the lapse lateness objective `secs` (see [`attempt_metrics`]).
    pub fn with_lateness_objective(mut self, secs: f64) -> Self {
        self.objective_secs = secs;
        self
    }

    /// For this Lambda function: `AWS_LAMBDA_FUNCTION_NAME`, `local` outside Lambda, with the
    /// objective of [`LATENESS_OBJECTIVE_ENV`]. An objective that cannot be read is logged as
    /// an error and the default (60 s) used: the metrics stay on, and the template's parameter
    /// constraints keep a deployed value valid.
    pub fn from_env() -> Self {
        let recorder =
            Self::new(std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "local".into()));
        let value = std::env::var(LATENESS_OBJECTIVE_ENV).ok();
        match lateness_objective(value.as_deref()) {
            Ok(secs) => recorder.with_lateness_objective(secs),
            Err(e) => {
                tracing::error!(error = %e, "lapse lateness objective: using 60 s");
                recorder
            }
        }
    }

    /// One notification posted by the `[[notify]]` channel `channel` (`watcher-notify`):
    /// [`notification_metrics`] of its `outcome`, per function and per function and `Channel`
    /// (as `serve`'s `a2a_watcher_notifications_total{channel, outcome}`).
    pub fn notified(&self, channel: &str, outcome: &str) {
        self.print_by(Some(("Channel", channel)), &notification_metrics(outcome));
    }

    fn print(&self, metrics: &[(&str, &str, f64)]) {
        self.print_by(None, metrics);
    }

    fn print_by(&self, by: Option<(&str, &str)>, metrics: &[(&str, &str, f64)]) {
        if metrics.is_empty() {
            return;
        }
        let now_ms = jiff::Timestamp::now().as_millisecond();
        let line = emf_line_by(&self.function, now_ms, by, metrics);
        // One write per line so concurrent lines do not interleave; a closed stdout is ignored.
        let _ = writeln!(std::io::stdout().lock(), "{line}");
    }
}

/// The metrics of one notification with `outcome` (`delivered`, `redirected` or `failed`,
/// `watcher_notify::transport::PostError::outcome`): `Notifications`; `NotificationFailures`
/// unless delivered; `NotificationRedirects` for a redirect (3xx, not followed).
pub fn notification_metrics(outcome: &str) -> Vec<(&'static str, &'static str, f64)> {
    let mut m = vec![("Notifications", "Count", 1.0)];
    if outcome != "delivered" {
        m.push(("NotificationFailures", "Count", 1.0));
    }
    if outcome == "redirected" {
        m.push(("NotificationRedirects", "Count", 1.0));
    }
    m
}

/// The metrics of one agent's open incidents `counts` by lapse kind:
/// `OpenIncidentsOverdue`, `OpenIncidentsSkipped`, `OpenIncidentsStalled` (each present, 0 when
/// none), as `serve`'s `a2a_watcher_incidents_open{agent, kind}`.
pub fn open_incidents_metrics(
    counts: &std::collections::BTreeMap<LapseKind, u64>,
) -> Vec<(&'static str, &'static str, f64)> {
    [
        (LapseKind::Overdue, "OpenIncidentsOverdue"),
        (LapseKind::Skipped, "OpenIncidentsSkipped"),
        (LapseKind::Stalled, "OpenIncidentsStalled"),
    ]
    .into_iter()
    .map(|(kind, name)| {
        (
            name,
            "Count",
            counts.get(&kind).copied().unwrap_or(0) as f64,
        )
    })
    .collect()
}

/// The metrics of one due timer whose firing failed: `TimerFailures` (template.yaml's
/// TimerFailuresAlarm).
pub fn timer_failure_metrics() -> Vec<(&'static str, &'static str, f64)> {
    vec![("TimerFailures", "Count", 1.0)]
}

impl Recorder for EmfRecorder {
    fn applied(&self, tally: &Tally) {
        self.print(&tally_metrics(tally));
    }

    fn attempt(&self, outcome: AttemptOutcome, lateness: Option<f64>) {
        self.print(&attempt_metrics(outcome, lateness, self.objective_secs));
    }

    fn open_expectations(&self, open: u64) {
        self.print(&[("OpenExpectations", "Count", open as f64)]);
    }

    fn timer_failed(&self) {
        self.print(&timer_failure_metrics());
    }

    fn open_incidents(
        &self,
        agent: &watcher_core::ids::AgentId,
        counts: &std::collections::BTreeMap<LapseKind, u64>,
    ) {
        self.print_by(
            Some(("Agent", agent.as_str())),
            &open_incidents_metrics(counts),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_an_emf_document() {
        let mut t = Tally {
            raised: 3,
            facts_unmatched: 1,
            ..Tally::default()
        };
        t.lapses.insert(LapseKind::Skipped, 1);
        let line = emf_line("a2a-watcher-api", 1_786_957_200_000, &tally_metrics(&t));
        assert_eq!(
            line,
            json!({
                "_aws": {
                    "Timestamp": 1_786_957_200_000i64,
                    "CloudWatchMetrics": [{
                        "Namespace": "a2a-watcher",
                        "Dimensions": [["Function"]],
                        "Metrics": [
                            { "Name": "ExpectationsRaised", "Unit": "Count" },
                            { "Name": "FactsUnmatched", "Unit": "Count" },
                            { "Name": "LapsesSkipped", "Unit": "Count" }
                        ]
                    }]
                },
                "Function": "a2a-watcher-api",
                "ExpectationsRaised": 3.0,
                "FactsUnmatched": 1.0,
                "LapsesSkipped": 1.0
            })
        );
    }

    /// A notification is counted per function and per function and channel: two dimension
    /// sets, the channel's id as the `Channel` property.
    #[test]
    fn open_incidents_are_three_counts_with_an_agent_dimension() {
        let counts =
            std::collections::BTreeMap::from([(LapseKind::Overdue, 3), (LapseKind::Stalled, 1)]);
        let m = open_incidents_metrics(&counts);
        assert_eq!(
            m,
            [
                ("OpenIncidentsOverdue", "Count", 3.0),
                ("OpenIncidentsSkipped", "Count", 0.0),
                ("OpenIncidentsStalled", "Count", 1.0),
            ]
        );
        let line = emf_line_by("sweep", 1, Some(("Agent", "booking")), &m);
        assert_eq!(line["Agent"], "booking");
        assert_eq!(line["OpenIncidentsOverdue"], 3.0);
        assert_eq!(
            line["_aws"]["CloudWatchMetrics"][0]["Dimensions"][1],
            json!(["Function", "Agent"]),
            "{line}"
        );
    }

    #[test]
    fn a_notification_line_has_a_channel_dimension() {
        let line = emf_line_by(
            "a2a-watcher-timer",
            1_786_957_200_000,
            Some(("Channel", "ops-slack")),
            &notification_metrics("failed"),
        );
        assert_eq!(
            line,
            json!({
                "_aws": {
                    "Timestamp": 1_786_957_200_000i64,
                    "CloudWatchMetrics": [{
                        "Namespace": "a2a-watcher",
                        "Dimensions": [["Function"], ["Function", "Channel"]],
                        "Metrics": [
                            { "Name": "Notifications", "Unit": "Count" },
                            { "Name": "NotificationFailures", "Unit": "Count" }
                        ]
                    }]
                },
                "Function": "a2a-watcher-timer",
                "Channel": "ops-slack",
                "Notifications": 1.0,
                "NotificationFailures": 1.0
            })
        );
    }

    #[test]
    fn a_failed_notification_counts_twice_a_delivered_once() {
        let names = |o| {
            notification_metrics(o)
                .into_iter()
                .map(|(n, _, v)| (n, v))
                .collect::<Vec<_>>()
        };
        assert_eq!(names("delivered"), [("Notifications", 1.0)]);
        assert_eq!(
            names("failed"),
            [("Notifications", 1.0), ("NotificationFailures", 1.0)]
        );
        assert_eq!(
            names("redirected"),
            [
                ("Notifications", 1.0),
                ("NotificationFailures", 1.0),
                ("NotificationRedirects", 1.0)
            ]
        );
    }

    /// The burn-rate alarms divide `LapseTasksDeliveredLate` by `LapseTasksDelivered`: a
    /// delivery at the objective is within it, one a millisecond past is late, a retry or a
    /// failure counts in neither.
    #[test]
    fn a_delivery_counts_late_only_past_the_objective() {
        let counts = |outcome, lateness| {
            attempt_metrics(outcome, lateness, 60.0)
                .into_iter()
                .filter(|(n, _, _)| n.starts_with("LapseTasks"))
                .map(|(n, _, v)| (n, v))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            counts(AttemptOutcome::Delivered, Some(60.0)),
            [
                ("LapseTasksDelivered", 1.0),
                ("LapseTasksDeliveredLate", 0.0)
            ]
        );
        assert_eq!(
            counts(AttemptOutcome::Delivered, Some(60.001)),
            [
                ("LapseTasksDelivered", 1.0),
                ("LapseTasksDeliveredLate", 1.0)
            ]
        );
        // A clock a little behind the lapse's own gives a negative lateness: on time.
        assert_eq!(
            counts(AttemptOutcome::Delivered, Some(-0.5)),
            [
                ("LapseTasksDelivered", 1.0),
                ("LapseTasksDeliveredLate", 0.0)
            ]
        );
        assert!(counts(AttemptOutcome::Retried, None).is_empty());
        assert!(counts(AttemptOutcome::Failed, None).is_empty());
    }

    #[test]
    fn a_delivered_attempt_line_carries_lateness_and_both_counts() {
        let line = emf_line(
            "stack-submitter",
            1_786_957_200_000,
            &attempt_metrics(AttemptOutcome::Delivered, Some(75.25), 60.0),
        );
        assert_eq!(line["DeliveryAttempts"], json!(1.0));
        assert_eq!(line["LapseDeliveryLateness"], json!(75.25));
        assert_eq!(line["LapseTasksDelivered"], json!(1.0));
        assert_eq!(line["LapseTasksDeliveredLate"], json!(1.0));
        assert_eq!(
            line["_aws"]["CloudWatchMetrics"][0]["Metrics"][3],
            json!({ "Name": "LapseTasksDeliveredLate", "Unit": "Count" })
        );
        let failed = attempt_metrics(AttemptOutcome::Failed, None, 60.0);
        assert_eq!(
            failed,
            [
                ("DeliveryAttempts", "Count", 1.0),
                ("DeliveryFailures", "Count", 1.0)
            ]
        );
    }

    #[test]
    fn the_objective_is_read_from_the_environment_text() {
        assert_eq!(lateness_objective(None), Ok(60.0));
        assert_eq!(lateness_objective(Some("90")), Ok(90.0));
        assert_eq!(lateness_objective(Some(" 2.5 ")), Ok(2.5));
        for bad in ["", "0", "-5", "NaN", "inf", "a minute"] {
            let e = lateness_objective(Some(bad)).expect_err(bad);
            assert!(e.contains(LATENESS_OBJECTIVE_ENV), "{e}");
        }
    }

    #[test]
    fn nothing_counted_prints_no_metric() {
        assert!(tally_metrics(&Tally::default()).is_empty());
    }
}
