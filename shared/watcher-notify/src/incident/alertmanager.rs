//! Prometheus Alertmanager's API for clients
//! (<https://prometheus.io/docs/alerting/latest/clients/>): `POST {base}/api/v2/alerts` with a
//! JSON array of alerts, each `labels` (its identity: strings), `annotations`, `startsAt`,
//! `endsAt` and `generatorURL`; `200` when taken.
//!
//! An alert without `endsAt` is resolved by the Alertmanager after its `resolve_timeout` (5
//! minutes by default) unless the client sends it again, as Prometheus does at every
//! evaluation. The watcher posts each alert once, with `endsAt` = `startsAt` + the channel's
//! `horizon` (default a day): it fires that long without being re-sent, and its resolution,
//! the same labels with `endsAt` the instant it resolved ([`resolved`]), ends it earlier.

use serde_json::{json, Map, Value};
use watcher_core::time::{Instant, IsoDuration};

use super::Incident;

/// The `alertname` of a lapse's alert.
pub const LAPSE_ALERT: &str = "A2AWatcherLapse";
/// The `alertname` of an agent's event (`delivery.failing`, `card.unavailable`, …) and of a
/// test.
pub const EVENT_ALERT: &str = "A2AWatcherEvent";

/// Where alerts are posted: `{base}/api/v2/alerts`.
pub fn alerts_url(base: &str) -> String {
    format!("{}/api/v2/alerts", base.trim_end_matches('/'))
}

/// The labels of `i`, every value a string: `alertname`, `tenant`, `agent`, `kind` (the lapse
/// kind or event type), `lapse` (the incident's key: one alert per lapse), `subject_type`,
/// `severity`. A label without a value is left out (Prometheus reads an empty label as
/// absent).
pub fn labels(i: &Incident) -> Map<String, Value> {
    let alertname = if matches!(i.kind.as_str(), "overdue" | "skipped" | "stalled") {
        LAPSE_ALERT
    } else {
        EVENT_ALERT
    };
    [
        ("alertname", alertname),
        ("tenant", i.tenant.as_str()),
        ("agent", i.agent.as_str()),
        ("kind", i.kind.as_str()),
        ("lapse", i.key.as_str()),
        ("subject_type", i.subject_type.as_deref().unwrap_or("")),
        ("severity", i.severity.name()),
    ]
    .into_iter()
    .filter(|(_, v)| !v.is_empty())
    .map(|(k, v)| (k.to_owned(), Value::String(v.to_owned())))
    .collect()
}

fn alert(i: &Incident, ends_at: Option<Instant>) -> Value {
    let mut a = json!({
        "labels": labels(i),
        "annotations": { "summary": i.summary, "description": i.description },
        "startsAt": i.at.to_string(),
    });
    if let Some(end) = ends_at {
        a["endsAt"] = json!(end.to_string());
    }
    if let Some((_, href)) = i.links.first() {
        a["generatorURL"] = json!(href);
    }
    a
}

/// The body that fires `i`: one alert, `endsAt` = `startsAt` + `horizon` (left out when that
/// instant is past the instant range).
pub fn firing(i: &Incident, horizon: &IsoDuration) -> Value {
    json!([alert(i, i.at.checked_plus(horizon))])
}

/// The body that resolves `i` at `at`: the same labels, `endsAt` = `at`.
pub fn resolved(i: &Incident, at: Instant) -> Value {
    json!([alert(i, Some(at))])
}
