//! PagerDuty Events API v2 (<https://developer.pagerduty.com/docs/events-api-v2/trigger-events/>):
//! `POST https://events.pagerduty.com/v2/enqueue` with an event object; `202 Accepted` when
//! taken, `400` for an event PagerDuty will never take (a permanent failure: its `message` and
//! `errors` are the reason), `429` and `5xx` retried.
//!
//! The `routing_key` is added when posting ([`super::Vendor::request`]), not here, so no body a
//! test or a log prints holds it.

use serde_json::{json, Value};

use super::{cut, details, Incident};

/// PagerDuty's limit on `payload.summary`, in characters.
pub const SUMMARY_MAX: usize = 1024;
/// PagerDuty's limit on `dedup_key`, in characters (the lapse's id is 36).
pub const DEDUP_KEY_MAX: usize = 255;

/// The `trigger` event of `i`: `event_action` `trigger`, `dedup_key` its key, `payload`
/// (`summary` cut to [`SUMMARY_MAX`], `source`, `severity` in PagerDuty's enum, `timestamp`
/// RFC 3339 UTC, `component` the agent, `group` the tenant, `class` the lapse kind or event
/// type, `custom_details` the facts), `links` (`href`, `text`; only when there are links: with
/// `public_url`), `client` and `client_url`.
pub fn trigger(i: &Incident) -> Value {
    let links: Vec<Value> = i
        .links
        .iter()
        .map(|(text, href)| json!({ "href": href, "text": text }))
        .collect();
    let mut event = json!({
        "event_action": "trigger",
        "dedup_key": cut(&i.key, DEDUP_KEY_MAX),
        "payload": {
            "summary": cut(&i.summary, SUMMARY_MAX),
            "source": cut(&i.source, SUMMARY_MAX),
            "severity": i.severity.name(),
            "timestamp": i.at.to_string(),
            "component": i.agent,
            "group": i.tenant,
            "class": i.kind,
            "custom_details": details(i),
        },
        "client": "a2a-watcher",
    });
    // `links` only when there are some (with `public_url`), as the docs say.
    if !links.is_empty() {
        event["links"] = Value::Array(links);
    }
    if let Some((_, href)) = i.links.first() {
        event["client_url"] = json!(href);
    }
    event
}

/// The `resolve` event of the incident keyed `dedup_key`: `event_action` `resolve` and the key
/// (PagerDuty resolves the alert, and the incident once its alerts are resolved).
pub fn resolve(dedup_key: &str) -> Value {
    json!({ "event_action": "resolve", "dedup_key": cut(dedup_key, DEDUP_KEY_MAX) })
}
