//! The incident formats' payloads (issue 43) against the vendors' documented field names and
//! limits: PagerDuty Events API v2 (`event_action`, `dedup_key`, `payload.summary` at most 1024
//! characters, `payload.severity` in critical/error/warning/info), Opsgenie's Alert API
//! (`message` at most 130 characters, `alias`, `priority` P1 … P5, `details` of strings,
//! `Authorization: GenieKey`, close by alias) and Alertmanager's `POST /api/v2/alerts` (an array;
//! `labels` of strings; `startsAt`, `endsAt`, `generatorURL`); the resolve payloads.

use std::collections::BTreeMap;

use serde_json::{json, Value};
use watcher_config::config::NotifyConfig;
use watcher_core::record::LapseKind;
use watcher_core::time::{Instant, IsoDuration};
use watcher_notify::body::Notification;
use watcher_notify::event::LapseEvent;
use watcher_notify::incident::{alertmanager, opsgenie, pagerduty, Incident, Vendor};
use watcher_notify::{Channel, Format};

use crate::common::{at, channel_config, lapse_task};

/// The lapse `kind` of expectation `exp-1` about shipment `subject`, lapsed at `at(10)`, read
/// with the public URL `https://watcher.example`.
fn event(kind: LapseKind, subject: &str) -> LapseEvent {
    let entry = lapse_task("booking", "exp-1", kind, subject, at(10));
    LapseEvent::of(7, &entry, Some("https://watcher.example"))
}

/// A channel of `format` posting to `url` (empty: the vendor's default), with `keys` set.
fn config(format: &str, url: &str, keys: impl FnOnce(&mut NotifyConfig)) -> NotifyConfig {
    let mut c = channel_config(url, &[]);
    c.format = format.into();
    c.secret = None;
    match format {
        "pagerduty" => c.routing_key = Some("R0UT1NGKEY0000000000000000000000".into()),
        "opsgenie" => c.api_key = Some("eb243592-faa2-4ba2-a551q-1afdf565c889".into()),
        _ => {}
    }
    keys(&mut c);
    c
}

fn channel(c: &NotifyConfig) -> Channel {
    Channel::from_config(c).expect("a valid channel")
}

/// What `ch` posts for `n`: (URL, headers, body) as [`Vendor::request`] makes them.
fn request(ch: &Channel, n: &Notification) -> (String, Vec<(&'static str, String)>, Value) {
    ch.vendor
        .as_ref()
        .expect("an incident channel")
        .request(ch.format, &ch.url, n)
}

/// Without `public_url` there is nothing to link to: the trigger has no `links` member and no
/// `client_url` (the docs: "`links` appear when `public_url` is set").
#[test]
fn a_pagerduty_trigger_without_a_public_url_has_no_links() {
    let ch = channel(&config("pagerduty", "", |_| {}));
    let entry = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    let e = LapseEvent::of(7, &entry, None);
    let (_, _, body) = request(&ch, &ch.lapse(&e));
    assert_eq!(body["event_action"], "trigger");
    assert!(body.get("links").is_none(), "{body}");
    assert!(body.get("client_url").is_none(), "{body}");
}

#[test]
fn a_pagerduty_trigger_has_the_documented_fields() {
    let ch = channel(&config("pagerduty", "", |_| {}));
    assert_eq!(ch.url, "https://events.pagerduty.com/v2/enqueue");
    let e = event(LapseKind::Overdue, "PA-1");
    let n = ch.lapse(&e);
    assert_eq!(n.id, e.id);
    assert!(
        n.body.get("routing_key").is_none(),
        "the key is added at post time only"
    );
    let (url, headers, body) = request(&ch, &n);
    assert_eq!(url, "https://events.pagerduty.com/v2/enqueue");
    assert!(headers.is_empty());
    assert_eq!(body["routing_key"], "R0UT1NGKEY0000000000000000000000");
    assert_eq!(body["event_action"], "trigger");
    assert_eq!(body["dedup_key"], e.id.as_str());
    let p = &body["payload"];
    assert_eq!(
        p["summary"],
        "Overdue: shipment.delivered for shipment PA-1 (agent booking)"
    );
    assert_eq!(p["source"], "watcher.example");
    assert_eq!(p["severity"], "error");
    assert_eq!(p["timestamp"], "2026-09-11T00:00:10Z");
    assert_eq!(p["component"], "booking");
    assert_eq!(p["group"], "default");
    assert_eq!(p["class"], "overdue");
    let d = &p["custom_details"];
    assert_eq!(d["subject_type"], "shipment");
    assert_eq!(d["subject_id"], "PA-1");
    assert_eq!(d["expectation_id"], "exp-1");
    assert_eq!(d["text"], "Delivery of PA-1 is overdue.");
    assert_eq!(d["message_id"], e.message_id.as_str());
    assert_eq!(
        body["links"],
        json!([
            { "href": "https://watcher.example/ui/subjects/shipment/PA%2D1", "text": "Operator page" },
            { "href": "https://watcher.example/v1/subjects/shipment/PA%2D1/timeline.svg", "text": "Timeline" },
        ])
    );
    assert_eq!(
        body["client_url"],
        "https://watcher.example/ui/subjects/shipment/PA%2D1"
    );
}

#[test]
fn pagerduty_severities_are_the_configured_values_of_its_enum() {
    let enum_ = ["critical", "error", "warning", "info"];
    let defaults = channel(&config("pagerduty", "", |_| {}));
    let severity =
        |ch: &Channel, k| ch.lapse(&event(k, "PA-1")).body["payload"]["severity"].clone();
    assert_eq!(severity(&defaults, LapseKind::Overdue), "error");
    assert_eq!(severity(&defaults, LapseKind::Stalled), "warning");
    assert_eq!(severity(&defaults, LapseKind::Skipped), "warning");
    let set = channel(&config("pagerduty", "", |c| {
        c.severity = BTreeMap::from([
            ("overdue".into(), "critical".into()),
            ("skipped".into(), "info".into()),
        ]);
    }));
    assert_eq!(severity(&set, LapseKind::Overdue), "critical");
    assert_eq!(severity(&set, LapseKind::Skipped), "info");
    assert_eq!(
        severity(&set, LapseKind::Stalled),
        "warning",
        "unnamed: default"
    );
    for k in [LapseKind::Overdue, LapseKind::Stalled, LapseKind::Skipped] {
        for ch in [&defaults, &set] {
            let s = severity(ch, k);
            assert!(enum_.contains(&s.as_str().unwrap()), "{s}");
        }
    }
}

#[test]
fn a_pagerduty_summary_is_cut_to_1024_characters() {
    let ch = channel(&config("pagerduty", "", |_| {}));
    let long = "é".repeat(3000);
    let body = ch.lapse(&event(LapseKind::Overdue, &long)).body;
    let summary = body["payload"]["summary"].as_str().unwrap();
    assert_eq!(summary.chars().count(), pagerduty::SUMMARY_MAX);
    assert_eq!(pagerduty::SUMMARY_MAX, 1024);
    assert!(summary.starts_with("Overdue: shipment.delivered for shipment éé"));
    assert!(summary.ends_with('…'));
}

#[test]
fn a_pagerduty_resolve_names_the_same_dedup_key() {
    let e = event(LapseKind::Overdue, "PA-1");
    assert_eq!(
        pagerduty::resolve(&e.id),
        json!({ "event_action": "resolve", "dedup_key": e.id })
    );
    // The key is added as on a trigger.
    let ch = channel(&config("pagerduty", "", |_| {}));
    let n = Notification {
        id: e.id.clone(),
        body: pagerduty::resolve(&e.id),
    };
    let (_, _, body) = request(&ch, &n);
    assert_eq!(body["routing_key"], "R0UT1NGKEY0000000000000000000000");
    assert_eq!(body["event_action"], "resolve");
}

#[test]
fn an_opsgenie_alert_has_the_documented_fields_and_limits() {
    let ch = channel(&config("opsgenie", "", |_| {}));
    assert_eq!(ch.url, "https://api.opsgenie.com");
    let e = event(LapseKind::Overdue, "PA-1");
    let n = ch.lapse(&e);
    let (url, headers, body) = request(&ch, &n);
    assert_eq!(url, "https://api.opsgenie.com/v2/alerts");
    assert_eq!(
        headers,
        vec![(
            "authorization",
            "GenieKey eb243592-faa2-4ba2-a551q-1afdf565c889".to_owned()
        )]
    );
    assert_eq!(
        body["message"],
        "Overdue: shipment.delivered for shipment PA-1 (agent booking)"
    );
    assert_eq!(body["alias"], e.id.as_str());
    assert_eq!(body["description"], "Delivery of PA-1 is overdue.");
    assert_eq!(body["priority"], "P2");
    assert_eq!(
        body["tags"],
        json!(["a2a-watcher", "overdue", "agent:booking", "tenant:default"])
    );
    assert_eq!(body["entity"], "shipment PA-1");
    assert_eq!(body["source"], "watcher.example");
    let details = body["details"].as_object().unwrap();
    assert!(details.values().all(Value::is_string), "{details:?}");
    assert_eq!(details["subject_id"], "PA-1");

    // Limits: message 130 characters; priorities P1 … P5 per kind.
    let long = ch.lapse(&event(LapseKind::Stalled, &"x".repeat(500))).body;
    assert_eq!(long["message"].as_str().unwrap().chars().count(), 130);
    assert_eq!(long["priority"], "P3");
    assert!(long["entity"].as_str().unwrap().chars().count() <= 512);
    let set = channel(&config("opsgenie", "https://api.eu.opsgenie.com/", |c| {
        c.priority = BTreeMap::from([("skipped".into(), "P5".into())]);
    }));
    assert_eq!(
        set.lapse(&event(LapseKind::Skipped, "PA-1")).body["priority"],
        "P5"
    );
    let (url, _, _) = request(&set, &n);
    assert_eq!(url, "https://api.eu.opsgenie.com/v2/alerts");
}

#[test]
fn an_opsgenie_alert_is_closed_by_its_alias() {
    let e = event(LapseKind::Overdue, "PA-1");
    assert_eq!(
        opsgenie::close_url("https://api.eu.opsgenie.com/", &e.id),
        format!(
            "https://api.eu.opsgenie.com/v2/alerts/{}/close?identifierType=alias",
            e.id
        ),
        "an event id (`msg_` and hex digits) is all unreserved characters (RFC 3986 §2.3)"
    );
    // Anything else in an alias is encoded, so it stays one path segment.
    assert_eq!(
        opsgenie::close_url("https://api.opsgenie.com", "a/b c?d_e~f.g-h"),
        "https://api.opsgenie.com/v2/alerts/a%2Fb%20c%3Fd_e~f.g-h/close?identifierType=alias"
    );
    assert_eq!(
        opsgenie::close("watcher.example", "The fact arrived late."),
        json!({ "source": "watcher.example", "note": "The fact arrived late." })
    );
}

#[test]
fn an_alertmanager_alert_has_string_labels_and_ends_after_the_horizon() {
    let ch = channel(&config("alertmanager", "http://127.0.0.1:9093", |_| {}));
    let e = event(LapseKind::Stalled, "PA-1");
    let n = ch.lapse(&e);
    let (url, headers, body) = request(&ch, &n);
    assert_eq!(url, "http://127.0.0.1:9093/api/v2/alerts");
    assert!(headers.is_empty());
    let alerts = body.as_array().expect("an array of alerts");
    assert_eq!(alerts.len(), 1);
    let a = &alerts[0];
    assert_eq!(
        a["labels"],
        json!({
            "alertname": "A2AWatcherLapse",
            "tenant": "default",
            "agent": "booking",
            "kind": "stalled",
            "lapse": e.id,
            "subject_type": "shipment",
            "severity": "warning",
        })
    );
    assert!(a["labels"]
        .as_object()
        .unwrap()
        .values()
        .all(Value::is_string));
    assert_eq!(
        a["annotations"]["summary"],
        "Stalled: shipment.delivered for shipment PA-1 (agent booking)"
    );
    assert_eq!(
        a["annotations"]["description"],
        "Delivery of PA-1 is stalled."
    );
    assert_eq!(a["startsAt"], "2026-09-11T00:00:10Z");
    assert_eq!(
        a["endsAt"], "2026-09-12T00:00:10Z",
        "the default horizon: a day"
    );
    assert_eq!(
        a["generatorURL"],
        "https://watcher.example/ui/subjects/shipment/PA%2D1"
    );
    let short = channel(&config("alertmanager", "http://127.0.0.1:9093", |c| {
        c.horizon = Some(IsoDuration::parse("PT2H").unwrap());
    }));
    assert_eq!(short.lapse(&e).body[0]["endsAt"], "2026-09-11T02:00:10Z");
}

#[test]
fn an_alertmanager_resolution_repeats_the_labels_and_ends_at_the_instant() {
    let e = event(LapseKind::Overdue, "PA-1");
    let i = Incident::of_lapse(&e, &Vendor::default());
    let resolved_at = Instant::parse("2026-09-11T00:05:00Z").unwrap();
    let firing = alertmanager::firing(&i, &IsoDuration::parse("PT24H").unwrap());
    let resolved = alertmanager::resolved(&i, resolved_at);
    assert_eq!(resolved[0]["labels"], firing[0]["labels"]);
    assert_eq!(resolved[0]["startsAt"], "2026-09-11T00:00:10Z");
    assert_eq!(resolved[0]["endsAt"], "2026-09-11T00:05:00Z");
}

#[test]
fn bad_vendor_settings_are_refused_when_built() {
    let bad = |c: NotifyConfig| Channel::from_config(&c).unwrap_err();
    assert_eq!(
        bad(config("pagerduty", "", |c| {
            c.severity = BTreeMap::from([("overdue".into(), "high".into())]);
        })),
        "notify: channel \"ops\": severity.overdue: \"high\" is not one of critical, error, warning, info"
    );
    assert_eq!(
        bad(config("opsgenie", "", |c| {
            c.priority = BTreeMap::from([("late".into(), "P1".into())]);
        })),
        "notify: channel \"ops\": priority: \"late\" is not a lapse (overdue, skipped, stalled)"
    );
    assert_eq!(
        bad(config("pagerduty", "", |c| c.routing_key = None)),
        "notify: channel \"ops\": routing_key: a channel of format \"pagerduty\" needs it (give routing_key, routing_key_file or routing_key_env)"
    );
}

#[test]
fn every_format_tells_a_sample_and_agent_events() {
    // `notify test` and the agents' events go through the same formats.
    let now = at(99);
    let pd = watcher_notify::body::test(Format::PagerDuty, "ops", now).body;
    assert_eq!(pd["event_action"], "trigger");
    assert_eq!(pd["payload"]["severity"], "info");
    let og = watcher_notify::body::test(Format::Opsgenie, "ops", now).body;
    assert_eq!(og["priority"], "P5");
    let am = watcher_notify::body::test(Format::Alertmanager, "ops", now).body;
    assert_eq!(am[0]["labels"]["alertname"], "A2AWatcherEvent");
    assert_eq!(am[0]["labels"]["kind"], "notify.test");

    let mut entry = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    entry.attempts = 2;
    entry.last_error = Some("HTTP 500".into());
    let failing = watcher_notify::event::AgentEvent::failed(
        watcher_notify::event::EventType::DeliveryFailing,
        &entry,
        Some("https://watcher.example"),
    );
    let pd = channel(&config("pagerduty", "", |_| {}))
        .agent_event(&failing)
        .body;
    assert_eq!(pd["dedup_key"], failing.id.as_str());
    assert!(failing.id.starts_with("evt_"));
    assert_eq!(pd["payload"]["severity"], "error");
    assert_eq!(pd["payload"]["class"], "delivery.failing");
    assert_eq!(pd["payload"]["summary"], "Delivery failing: agent booking");
    assert_eq!(pd["links"][0]["href"], "https://watcher.example/ui/agents");
    let og = channel(&config("opsgenie", "", |_| {}))
        .agent_event(&failing)
        .body;
    assert_eq!(og["priority"], "P2");
    assert_eq!(og["details"]["error"], "HTTP 500");
    let am = channel(&config("alertmanager", "http://127.0.0.1:9093", |_| {}))
        .agent_event(&failing)
        .body;
    assert_eq!(am[0]["labels"]["alertname"], "A2AWatcherEvent");
    assert_eq!(am[0]["labels"]["kind"], "delivery.failing");
    assert_eq!(am[0]["labels"]["subject_type"], "shipment");
}
