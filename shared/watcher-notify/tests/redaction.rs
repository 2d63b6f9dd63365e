//! `redact` (issue 43; expectations-v1 §14): in every format, the subject's id, agent text and
//! expectation ids are left out, or replaced by `hmac_` and 32 hex digits of HMAC-SHA256 under
//! the channel's `redact_key`; what stays (tenant, agent, lapse kind, expectation kind, subject
//! type) still tells a person what lapsed.

use watcher_config::config::NotifyConfig;
use watcher_core::record::LapseKind;
use watcher_notify::body::Digest;
use watcher_notify::event::{AgentEvent, EventType, LapseEvent};
use watcher_notify::Channel;

use crate::common::{at, channel_config, lapse_task};

/// HMAC-SHA256 under `redaction key` of `PA-1`, first 32 hex digits (Python's
/// `hmac.new(b"redaction key", b"PA-1", hashlib.sha256).hexdigest()[:32]`).
const PA1_HASH: &str = "hmac_98890c0801f1a8cb26049ecf53c79927";

fn event() -> LapseEvent {
    let entry = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    LapseEvent::of(3, &entry, Some("https://watcher.example"))
}

/// The channel `ops` of `format` redacting `fields`, hashed under `key` when given.
fn channel(format: &str, fields: &[&str], key: Option<&str>) -> Channel {
    let mut c: NotifyConfig = channel_config("https://hooks.example/h", &[]);
    c.format = format.into();
    match format {
        "standard-webhooks" | "slack" | "teams" => {}
        _ => c.secret = None,
    }
    match format {
        "pagerduty" => c.routing_key = Some("k".into()),
        "opsgenie" => c.api_key = Some("k".into()),
        "email" => {
            c.url = "smtp://127.0.0.1:2525".into();
            c.from = Some("w@example.test".into());
            c.to = vec!["o@example.test".into()];
        }
        "sns" => c.url = "arn:aws:sns:us-east-1:123456789012:ops".into(),
        _ => {}
    }
    c.redact = fields.iter().map(ToString::to_string).collect();
    c.redact_key = key.map(str::to_owned);
    Channel::from_config(&c).expect("a valid channel")
}

const FORMATS: [&str; 8] = [
    "standard-webhooks",
    "slack",
    "teams",
    "email",
    "sns",
    "pagerduty",
    "opsgenie",
    "alertmanager",
];

#[test]
fn no_format_sends_a_redacted_reference() {
    let e = event();
    for format in FORMATS {
        let plain = channel(format, &[], None).lapse(&e).body.to_string();
        assert!(
            plain.contains("PA-1"),
            "{format} sends the subject: {plain}"
        );
        let ch = channel(format, &["subject", "agent_text", "expectation"], None);
        let sent = ch.lapse(&e).body.to_string();
        for reference in ["PA-1", "exp-1", "delivery of", "Delivery of"] {
            assert!(
                !sent.contains(reference),
                "{format} sends {reference:?}: {sent}"
            );
        }
        // What lapsed, for whom, stays.
        for kept in ["booking", "shipment"] {
            assert!(sent.contains(kept), "{format} lost {kept:?}: {sent}");
        }
        let hashed = channel(format, &["subject"], Some("redaction key"))
            .lapse(&e)
            .body
            .to_string();
        // The hex digits (Teams escapes the `_` of the prefix as Markdown).
        assert!(
            !hashed.contains("PA-1") && hashed.contains(&PA1_HASH[5..]),
            "{format}: {hashed}"
        );
    }
}

#[test]
fn json_formats_leave_redacted_fields_out() {
    let e = event();
    let body = channel("standard-webhooks", &["subject", "agent_text"], None)
        .lapse(&e)
        .body;
    let data = &body["data"];
    assert_eq!(
        data["block"]["subject"],
        serde_json::json!({ "type": "shipment" })
    );
    assert!(data["block"].get("expects").is_none());
    assert!(data.get("text").is_none());
    assert!(
        data.get("links").is_none(),
        "the links' paths hold the subject"
    );
    assert_eq!(data["block"]["expectationId"], "exp-1", "not redacted");
    assert_eq!(data["messageId"], e.message_id.as_str());

    let pd = channel("pagerduty", &["subject"], None).lapse(&e).body;
    let details = &pd["payload"]["custom_details"];
    assert!(details.get("subject_id").is_none());
    // The lapse task's sentence holds the subject id: it goes as a whole.
    assert!(details.get("text").is_none());
    assert_eq!(details["subject_type"], "shipment");
    assert_eq!(
        pd["payload"]["summary"],
        "Overdue: shipment.delivered for shipment [redacted] (agent booking)"
    );
    // PagerDuty's `links` only when there are some: the redacted links leave none.
    assert!(pd.get("links").is_none(), "{pd}");

    let am = channel("alertmanager", &["subject"], Some("redaction key"))
        .lapse(&e)
        .body;
    assert_eq!(
        am[0]["annotations"]["summary"],
        format!("Overdue: shipment.delivered for shipment {PA1_HASH} (agent booking)")
    );
    assert!(am[0].get("generatorURL").is_none());
}

#[test]
fn expectation_ids_and_the_message_id_are_hashed_alike_on_every_event() {
    let e = event();
    let ch = channel("standard-webhooks", &["expectation"], Some("redaction key"));
    let a = ch.lapse(&e).body;
    let b = ch.lapse(&e).body;
    let id = a["data"]["block"]["expectationId"].as_str().unwrap();
    assert!(id.starts_with("hmac_") && id.len() == 37, "{id}");
    assert_eq!(a, b, "the same value hashes the same");
    let m = a["data"]["messageId"].as_str().unwrap();
    assert!(m.starts_with("hmac_") && m != id);
}

#[test]
fn agent_events_and_digests_are_redacted_too() {
    let mut entry = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    entry.attempts = 3;
    entry.last_error = Some("HTTP 404: shipment PA-1 is unknown".into());
    let failed = AgentEvent::failed(EventType::LapseTaskFailed, &entry, None);
    assert!(failed.text.contains("PA-1"));
    for format in FORMATS {
        let ch = channel(format, &["subject"], None);
        let sent = ch.agent_event(&failed).body.to_string();
        assert!(!sent.contains("PA-1"), "{format}: {sent}");
        assert!(sent.contains("booking"), "{format}: {sent}");
    }
    let ch = channel("slack", &["subject"], Some("redaction key"));
    let events = vec![ch.redaction.lapse(&event())];
    let d = Digest::of("ops", &events, None).unwrap();
    let sent = ch.digest(&d).body.to_string();
    assert!(!sent.contains("PA-1") && sent.contains(PA1_HASH), "{sent}");
}

#[test]
fn bad_redaction_settings_are_refused() {
    let mut c = channel_config("https://hooks.example/h", &[]);
    c.redact = vec!["subjects".into()];
    assert_eq!(
        Channel::from_config(&c).unwrap_err(),
        "notify: channel \"ops\": redact: \"subjects\" is not one of subject, fact_key, agent_text, expectation (did you mean \"subject\"?)"
    );
    c.redact = Vec::new();
    c.redact_key = Some("k".into());
    assert_eq!(
        Channel::from_config(&c).unwrap_err(),
        "notify: channel \"ops\": redact_key: hashes the fields named in redact, but redact is empty; name them or remove redact_key"
    );
}
