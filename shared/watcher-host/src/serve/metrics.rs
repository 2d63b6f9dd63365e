//! `GET /metrics` of `serve`: Prometheus / OpenMetrics text (issue 14, "Metrics and traces"),
//! with `prometheus-client`. The counters are fed by the watcher and the submitter through
//! [`Recorder`]; the open-expectations gauge is read at scrape time from the store's per-agent
//! live counters (one counter read per configured agent, never a listing of records).
//!
//! Metrics (every counter ends in `_total` on the wire):
//!
//! | name | labels | what |
//! |---|---|---|
//! | `a2a_watcher_expectations_raised_total` | | expectations recorded |
//! | `a2a_watcher_expectations_refused_total` | | expectations (or metadata) refused |
//! | `a2a_watcher_facts_total` | `result` = `matched` / `unmatched` | new facts, by whether they satisfied anything |
//! | `a2a_watcher_lapses_total` | `kind` = `overdue` / `skipped` / `stalled` | lapses determined |
//! | `a2a_watcher_delivery_attempts_total` | `outcome` = `delivered` / `retried` / `failed` | postings of lapse tasks |
//! | `a2a_watcher_delivery_failures_total` | | lapse tasks given up (`failed`) |
//! | `a2a_watcher_lapse_delivery_lateness_seconds` | | histogram: delivery instant − `lapsedAt` |
//! | `a2a_watcher_open_expectations` | | gauge: live expectations (that can still lapse) over all agents |
//! | `a2a_watcher_timer_failures_total` | | due timers whose firing failed (skipped, fired again next time) |
//! | `a2a_watcher_incidents_open` | `agent`, `kind` = `overdue` / `skipped` / `stalled` | gauge: open incidents (lapses not resolved) per configured agent and lapse kind, from the agent's open lane at scrape time, at most [`OPEN_INCIDENTS_CAP`](watcher_runtime::metrics::OPEN_INCIDENTS_CAP) per agent (its oldest; a sum of 1,000 means 1,000 or more) |
//! | `a2a_watcher_notifications_total` | `channel` (a `[[notify]]` id), `outcome` = `delivered` / `redirected` / `failed` | notifications posted to a person's channel (issue 25); `redirected`: the receiver answered 3xx, not followed (a failure, retried) |
//!
//! Unauthenticated like `/healthz`, and therefore without tenant labels (docs/interpretation.md).
//! The labels naming something configured are a notification channel's id and, on the open
//! incidents, an agent's id: both from the operator's own configuration (`[[notify]]`,
//! `[[agents]]`); agents of one id in several tenants are summed.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use watcher_core::record::LapseKind;
use watcher_runtime::clock::Clock;
use watcher_runtime::metrics::{
    open_expectations, open_incidents, AttemptOutcome, Recorder, Tally,
};
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct KindLabel {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabel {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AgentKindLabel {
    agent: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ChannelLabel {
    channel: String,
    outcome: &'static str,
}

/// Lateness buckets in seconds: 1 s to a day.
const LATENESS_BUCKETS: [f64; 10] = [
    1.0,
    5.0,
    15.0,
    60.0,
    300.0,
    900.0,
    3600.0,
    6.0 * 3600.0,
    86400.0,
    7.0 * 86400.0,
];

/// The Prometheus registry and the metrics in it.
pub struct Prometheus {
    registry: Registry,
    raised: Counter,
    refused: Counter,
    facts: Family<ResultLabel, Counter>,
    lapses: Family<KindLabel, Counter>,
    attempts: Family<OutcomeLabel, Counter>,
    failures: Counter,
    lateness: Histogram,
    open: Gauge,
    timer_failures: Counter,
    notifications: Family<ChannelLabel, Counter>,
    incidents_open: Family<AgentKindLabel, Gauge>,
}

impl Prometheus {
    /// A registry with every metric registered at zero.
    pub fn new() -> Self {
        let mut registry = Registry::default();
        let raised = Counter::default();
        let refused = Counter::default();
        let facts = Family::<ResultLabel, Counter>::default();
        let lapses = Family::<KindLabel, Counter>::default();
        let attempts = Family::<OutcomeLabel, Counter>::default();
        let failures = Counter::default();
        let lateness = Histogram::new(LATENESS_BUCKETS);
        let open = Gauge::default();
        let timer_failures = Counter::default();
        let notifications = Family::<ChannelLabel, Counter>::default();
        let incidents_open = Family::<AgentKindLabel, Gauge>::default();
        registry.register(
            "a2a_watcher_incidents_open",
            "Open incidents (lapses not resolved) by agent and lapse kind, at most 1000 per agent",
            incidents_open.clone(),
        );
        registry.register(
            "a2a_watcher_notifications",
            "Notifications posted to a person's channel, by channel and outcome",
            notifications.clone(),
        );
        registry.register(
            "a2a_watcher_timer_failures",
            "Due timers whose firing failed: skipped by the timer loop, fired again next time",
            timer_failures.clone(),
        );
        registry.register(
            "a2a_watcher_expectations_raised",
            "Expectations recorded",
            raised.clone(),
        );
        registry.register(
            "a2a_watcher_expectations_refused",
            "Expectations or extension metadata refused",
            refused.clone(),
        );
        registry.register(
            "a2a_watcher_facts",
            "New facts, by whether they satisfied an expectation",
            facts.clone(),
        );
        registry.register(
            "a2a_watcher_lapses",
            "Lapses determined, by kind",
            lapses.clone(),
        );
        registry.register(
            "a2a_watcher_delivery_attempts",
            "Postings of lapse tasks, by outcome",
            attempts.clone(),
        );
        registry.register(
            "a2a_watcher_delivery_failures",
            "Lapse tasks given up (failed)",
            failures.clone(),
        );
        registry.register(
            "a2a_watcher_lapse_delivery_lateness_seconds",
            "Seconds from a lapse's determination (lapsedAt) to its task's delivery",
            lateness.clone(),
        );
        registry.register(
            "a2a_watcher_open_expectations",
            "Expectations that can still lapse (live: open, a due time not yet passed or waiting on an anchor), over all agents",
            open.clone(),
        );
        // Every label value present from the start, so a scrape shows zeros rather than nothing.
        for result in ["matched", "unmatched"] {
            let _ = facts.get_or_create(&ResultLabel { result });
        }
        for kind in ["overdue", "skipped", "stalled"] {
            let _ = lapses.get_or_create(&KindLabel { kind });
        }
        for outcome in ["delivered", "retried", "failed"] {
            let _ = attempts.get_or_create(&OutcomeLabel { outcome });
        }
        Prometheus {
            registry,
            raised,
            refused,
            facts,
            lapses,
            attempts,
            failures,
            lateness,
            open,
            timer_failures,
            notifications,
            incidents_open,
        }
    }

    /// Sets the open-incidents gauge of `agent` to `counts` (by lapse kind; a kind left out is
    /// 0), before [`Prometheus::encode`].
    pub fn set_open_incidents(&self, agent: &str, counts: &BTreeMap<LapseKind, u64>) {
        for kind in [LapseKind::Overdue, LapseKind::Skipped, LapseKind::Stalled] {
            let n = counts.get(&kind).copied().unwrap_or(0);
            self.incidents_open
                .get_or_create(&AgentKindLabel {
                    agent: agent.to_owned(),
                    kind: kind.as_str(),
                })
                .set(i64::try_from(n).unwrap_or(i64::MAX));
        }
    }

    /// Shows every outcome of each of `channels` at zero from the start.
    pub fn with_channels<'a>(self, channels: impl IntoIterator<Item = &'a str>) -> Self {
        for channel in channels {
            for outcome in ["delivered", "redirected", "failed"] {
                let _ = self.notifications.get_or_create(&ChannelLabel {
                    channel: channel.to_owned(),
                    outcome,
                });
            }
        }
        self
    }

    /// The text exposition, after setting the open-expectations gauge to `open`.
    pub fn encode(&self, open: u64) -> String {
        self.open.set(i64::try_from(open).unwrap_or(i64::MAX));
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}

impl Default for Prometheus {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder for Prometheus {
    fn applied(&self, t: &Tally) {
        self.raised.inc_by(t.raised);
        self.refused.inc_by(t.refused);
        self.facts
            .get_or_create(&ResultLabel { result: "matched" })
            .inc_by(t.facts_matched);
        self.facts
            .get_or_create(&ResultLabel {
                result: "unmatched",
            })
            .inc_by(t.facts_unmatched);
        for (kind, n) in &t.lapses {
            self.lapses
                .get_or_create(&KindLabel {
                    kind: kind.as_str(),
                })
                .inc_by(*n);
        }
    }

    fn attempt(&self, outcome: AttemptOutcome, lateness: Option<f64>) {
        self.attempts
            .get_or_create(&OutcomeLabel {
                outcome: outcome.as_str(),
            })
            .inc();
        if outcome == AttemptOutcome::Failed {
            self.failures.inc();
        }
        if let Some(s) = lateness {
            self.lateness.observe(s.max(0.0));
        }
    }

    fn timer_failed(&self) {
        self.timer_failures.inc();
    }
}

impl watcher_notify::NotifyRecorder for Prometheus {
    fn notified(&self, channel: &str, outcome: &'static str) {
        self.notifications
            .get_or_create(&ChannelLabel {
                channel: channel.to_owned(),
                outcome,
            })
            .inc();
    }
}

/// What the `/metrics` handler reads.
#[derive(Clone)]
pub struct MetricsState {
    /// The metrics.
    pub prometheus: Arc<Prometheus>,
    /// For the agents and their live counters.
    pub watcher: Arc<Watcher<dyn Store>>,
    /// The watcher's clock.
    pub clock: Arc<dyn Clock>,
}

/// `GET /metrics`: the exposition, `text/plain; version=0.0.4`.
pub async fn metrics(State(state): State<MetricsState>) -> Response {
    let now = state.clock.now();
    let mut open = 0u64;
    // Per agent id (summed over tenants): open incidents by kind.
    let mut incidents: BTreeMap<String, BTreeMap<LapseKind, u64>> = BTreeMap::new();
    for entry in state.watcher.directory.entries() {
        match open_expectations(&*state.watcher.store, &entry.tenant, &entry.profile.id, now).await
        {
            Ok(n) => open += n,
            Err(e) => {
                tracing::warn!(error = %e, agent = %entry.profile.id, "metrics: cannot read the agent's live count");
            }
        }
        let counts = incidents.entry(entry.profile.id.to_string()).or_default();
        match open_incidents(&*state.watcher.store, &entry.tenant, &entry.profile.id).await {
            Ok(by_kind) => {
                for (kind, n) in by_kind {
                    *counts.entry(kind).or_default() += n;
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, agent = %entry.profile.id, "metrics: cannot read the agent's open incidents");
            }
        }
    }
    for (agent, counts) in &incidents {
        state.prometheus.set_open_incidents(agent, counts);
    }
    (
        [(
            header::CONTENT_TYPE,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
        )],
        state.prometheus.encode(open),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_incidents_are_shown_by_agent_and_kind_with_zeros() {
        let p = Prometheus::new();
        p.set_open_incidents(
            "booking",
            &BTreeMap::from([(LapseKind::Overdue, 2), (LapseKind::Stalled, 1)]),
        );
        let text = p.encode(0);
        for line in [
            "a2a_watcher_incidents_open{agent=\"booking\",kind=\"overdue\"} 2\n",
            "a2a_watcher_incidents_open{agent=\"booking\",kind=\"skipped\"} 0\n",
            "a2a_watcher_incidents_open{agent=\"booking\",kind=\"stalled\"} 1\n",
        ] {
            assert!(text.contains(line), "{line} in {text}");
        }
        // Resolved since: back to zero.
        p.set_open_incidents("booking", &BTreeMap::new());
        assert!(p
            .encode(0)
            .contains("a2a_watcher_incidents_open{agent=\"booking\",kind=\"overdue\"} 0\n"));
    }

    #[test]
    fn a_timer_that_failed_is_counted() {
        let p = Prometheus::new();
        assert!(p.encode(0).contains("a2a_watcher_timer_failures_total 0\n"));
        p.timer_failed();
        p.timer_failed();
        assert!(p.encode(0).contains("a2a_watcher_timer_failures_total 2\n"));
    }

    #[test]
    fn notifications_are_counted_by_channel_and_outcome() {
        use watcher_notify::NotifyRecorder;
        let p = Prometheus::new().with_channels(["ops"]);
        let text = p.encode(0);
        assert!(
            text.contains(
                "a2a_watcher_notifications_total{channel=\"ops\",outcome=\"failed\"} 0\n"
            ),
            "{text}"
        );
        p.notified("ops", "delivered");
        p.notified("ops", "delivered");
        p.notified("ops", "failed");
        p.notified("ops", "redirected");
        let text = p.encode(0);
        assert!(
            text.contains(
                "a2a_watcher_notifications_total{channel=\"ops\",outcome=\"delivered\"} 2\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "a2a_watcher_notifications_total{channel=\"ops\",outcome=\"failed\"} 1\n"
            ),
            "{text}"
        );
        assert!(
            text.contains(
                "a2a_watcher_notifications_total{channel=\"ops\",outcome=\"redirected\"} 1\n"
            ),
            "{text}"
        );
    }
}
