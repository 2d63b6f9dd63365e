//! The incident formats in `serve` (issue 43): a lapse reaches a local stand-in for PagerDuty,
//! Opsgenie and an Alertmanager once, on the vendor's path, with its key and the documented
//! shape; with `redact`, the subject's id and the agent's words do not leave (left out, or
//! hashed under `redact_key`). A fact that arrives late, after a kill -9 and restart of `serve`
//! between the trigger and the fact, resolves each incident once (PagerDuty `resolve` with the
//! same `dedup_key`, Opsgenie close by alias, the same Alertmanager alert with `endsAt`); a
//! `grace` swallows a fact a few seconds late: that lapse is paged to nobody.

use crate::common;

use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};
use watcher_notify::testing::{VendorReceiver, VendorRequest};

use common::*;

const PATIENCE: Duration = Duration::from_secs(30);

/// Runs `serve` with the channel `ops` (`keys` after its id), raises expectation `exp` about
/// shipment `shipment` due in 2 s without grace, and answers the one request the vendor took
/// (checking that nothing more arrives for 2 s).
async fn one_lapse(
    vendor: &VendorReceiver,
    keys: &str,
    exp: &str,
    shipment: &str,
) -> VendorRequest {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let config =
        format!("public_url = \"http://watcher.test\"\n\n[[notify]]\nid = \"ops\"\n{keys}");
    let mut w = spawn_watcher(&agent, &config).await;
    let due = plus(Timestamp::now(), 2);
    let push = one_expectation(&format!("task-{exp}"), exp, shipment, due, "PT0S");
    assert_eq!(w.push(&push).await.status, 200);
    assert!(
        wait_until(|| async { !vendor.accepted().is_empty() }, PATIENCE).await,
        "nothing reached the vendor within {PATIENCE:?}:\n{}",
        w.log()
    );
    assert!(
        holds_for(
            || async { vendor.seen().len() == 1 },
            Duration::from_secs(2)
        )
        .await,
        "told more than once: {:?}",
        vendor.seen()
    );
    // A restart tells nothing again.
    w.restart().await;
    assert!(
        holds_for(
            || async { vendor.seen().len() == 1 },
            Duration::from_secs(2)
        )
        .await,
        "told again after the restart: {:?}",
        vendor.seen()
    );
    vendor.seen().remove(0)
}

#[tokio::test]
async fn pagerduty_gets_one_trigger_with_its_routing_key() {
    let vendor = VendorReceiver::start().await;
    let keys = format!(
        "format = \"pagerduty\"\nurl = \"{}/v2/enqueue\"\nrouting_key = \"R0UT1NGKEY0000000000000000000000\"\n",
        vendor.url
    );
    let r = one_lapse(&vendor, &keys, "exp-pd1", "PA-PD1").await;
    assert_eq!(r.path, "/v2/enqueue");
    let b = &r.body;
    assert_eq!(b["routing_key"], "R0UT1NGKEY0000000000000000000000");
    assert_eq!(b["event_action"], "trigger");
    assert!(b["dedup_key"].as_str().unwrap().starts_with("msg_"));
    let p = &b["payload"];
    assert_eq!(
        p["summary"],
        "Overdue: shipment.manifest for shipment PA-PD1 (agent booking)"
    );
    assert_eq!(p["severity"], "error");
    assert_eq!(p["source"], "watcher.test");
    assert_eq!(p["component"], "booking");
    assert_eq!(p["group"], "default");
    assert_eq!(p["class"], "overdue");
    assert_eq!(p["custom_details"]["expectation_id"], "exp-pd1");
    assert!(p["timestamp"]
        .as_str()
        .unwrap()
        .parse::<Timestamp>()
        .is_ok());
    assert_eq!(
        b["links"][0]["href"],
        "http://watcher.test/ui/subjects/shipment/PA%2DPD1"
    );
}

#[tokio::test]
async fn opsgenie_gets_one_alert_without_the_redacted_fields() {
    let vendor = VendorReceiver::start().await;
    let keys = format!(
        "format = \"opsgenie\"\nurl = \"{}\"\napi_key = \"genie-key\"\nredact = [\"subject\", \"agent_text\"]\n",
        vendor.url
    );
    let r = one_lapse(&vendor, &keys, "exp-og1", "PA-OG1").await;
    assert_eq!(r.path, "/v2/alerts");
    assert_eq!(r.authorization.as_deref(), Some("GenieKey genie-key"));
    let b = &r.body;
    let sent = b.to_string();
    assert!(!sent.contains("PA-OG1"), "{sent}");
    assert!(!sent.contains("airline manifest"), "{sent}");
    assert_eq!(
        b["message"],
        "Overdue: shipment.manifest for shipment [redacted] (agent booking)"
    );
    assert!(b["alias"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(b["priority"], "P2");
    assert!(b["details"].get("subject_id").is_none());
    assert!(b["details"].get("expects").is_none());
    assert_eq!(b["details"]["subject_type"], "shipment");
    assert_eq!(b["details"]["expectation_id"], "exp-og1", "not redacted");
    assert!(b["details"]
        .as_object()
        .unwrap()
        .values()
        .all(Value::is_string));
}

#[tokio::test]
async fn alertmanager_gets_one_alert_with_hashed_subjects() {
    let vendor = VendorReceiver::start().await;
    let keys = format!(
        "format = \"alertmanager\"\nurl = \"{}\"\nhorizon = \"PT1H\"\nredact = [\"subject\"]\nredact_key = \"redaction key\"\n",
        vendor.url
    );
    let r = one_lapse(&vendor, &keys, "exp-am1", "PA-AM1").await;
    assert_eq!(r.path, "/api/v2/alerts");
    assert_eq!(r.authorization, None);
    let alerts = r.body.as_array().expect("an array");
    assert_eq!(alerts.len(), 1);
    let a = &alerts[0];
    let labels = a["labels"].as_object().unwrap();
    assert!(labels.values().all(Value::is_string), "{labels:?}");
    assert_eq!(a["labels"]["alertname"], "A2AWatcherLapse");
    assert_eq!(a["labels"]["tenant"], "default");
    assert_eq!(a["labels"]["agent"], "booking");
    assert_eq!(a["labels"]["kind"], "overdue");
    assert_eq!(a["labels"]["subject_type"], "shipment");
    assert_eq!(a["labels"]["severity"], "error");
    assert!(a["labels"]["lapse"].as_str().unwrap().starts_with("msg_"));
    // HMAC-SHA256("redaction key", "PA-AM1"), first 32 hex digits.
    let hash = "hmac_fa6b58130a96020893d89269a8c934b6";
    let summary = a["annotations"]["summary"].as_str().unwrap();
    assert_eq!(
        summary,
        format!("Overdue: shipment.manifest for shipment {hash} (agent booking)")
    );
    assert!(!r.body.to_string().contains("PA-AM1"));
    let starts = a["startsAt"]
        .as_str()
        .unwrap()
        .parse::<Timestamp>()
        .unwrap();
    let ends = a["endsAt"].as_str().unwrap().parse::<Timestamp>().unwrap();
    assert_eq!(ends.duration_since(starts).as_secs(), 3600, "the horizon");
    assert!(
        a.get("generatorURL").is_none(),
        "its path holds the subject"
    );
}

/// The channel `id` of `format` posting to `vendor`, with `extra` keys.
fn incident_channel(id: &str, format: &str, vendor: &VendorReceiver, extra: &str) -> String {
    let keys = match format {
        "pagerduty" => format!(
            "url = \"{}/v2/enqueue\"\nrouting_key = \"R0UT1NGKEY0000000000000000000000\"\n",
            vendor.url
        ),
        "opsgenie" => format!("url = \"{}\"\napi_key = \"genie-key\"\n", vendor.url),
        _ => format!("url = \"{}\"\n", vendor.url),
    };
    format!("[[notify]]\nid = \"{id}\"\nformat = \"{format}\"\n{keys}{extra}\n")
}

/// The manifest of `shipment`, observed now (after its expectation lapsed: a late fact).
fn late_manifest(shipment: &str) -> Value {
    serde_json::json!({
        "factKey": format!("shipment.manifest.received:{shipment}"),
        "observedAt": fmt(Timestamp::now()),
        "subject": { "type": "shipment", "id": shipment },
    })
}

#[tokio::test]
async fn a_late_fact_resolves_each_page_once_through_a_kill() {
    let (pd, og, am) = (
        VendorReceiver::start().await,
        VendorReceiver::start().await,
        VendorReceiver::start().await,
    );
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let config = format!(
        "public_url = \"http://watcher.test\"\n\n{}{}{}",
        incident_channel("pd", "pagerduty", &pd, ""),
        incident_channel("og", "opsgenie", &og, ""),
        incident_channel("am", "alertmanager", &am, ""),
    );
    let mut w = spawn_watcher(&agent, &config).await;
    let due = plus(Timestamp::now(), 2);
    let push = one_expectation("task-late", "exp-late", "PA-LATE", due, "PT0S");
    assert_eq!(w.push(&push).await.status, 200);
    let each_got = |n: usize| {
        let vendors = [&pd, &og, &am];
        move || async move { vendors.iter().all(|v| v.accepted().len() >= n) }
    };
    assert!(
        wait_until(each_got(1), PATIENCE).await,
        "a trigger did not reach every vendor:\n{}",
        w.log()
    );
    // Killed (SIGKILL) between the trigger and the fact, then started again.
    w.kill().await;
    w.start().await;
    assert_eq!(w.report(&late_manifest("PA-LATE")).await.status, 200);
    assert!(
        wait_until(each_got(2), PATIENCE).await,
        "a resolve did not reach every vendor: {:?} {:?} {:?}\n{}",
        pd.seen(),
        og.seen(),
        am.seen(),
        w.log()
    );
    w.restart().await;
    let exactly_two = || async { [&pd, &og, &am].iter().all(|v| v.seen().len() == 2) };
    assert!(
        holds_for(exactly_two, Duration::from_secs(8)).await,
        "told again: {:?} {:?} {:?}",
        pd.seen(),
        og.seen(),
        am.seen()
    );

    let (trigger, resolve) = (&pd.seen()[0].body, &pd.seen()[1].body);
    assert_eq!(trigger["event_action"], "trigger");
    assert_eq!(resolve["event_action"], "resolve");
    assert_eq!(resolve["dedup_key"], trigger["dedup_key"]);
    assert_eq!(resolve["routing_key"], "R0UT1NGKEY0000000000000000000000");
    assert_eq!(resolve.as_object().unwrap().len(), 3, "{resolve}");

    let (create, close) = (&og.seen()[0], &og.seen()[1]);
    let alias = create.body["alias"].as_str().unwrap();
    assert_eq!(
        close.path,
        format!("/v2/alerts/{alias}/close?identifierType=alias")
    );
    assert_eq!(close.authorization.as_deref(), Some("GenieKey genie-key"));
    assert_eq!(close.body["source"], "watcher.test");
    let note = close.body["note"].as_str().unwrap();
    assert!(
        note.starts_with("Resolved at ") && note.ends_with(": its fact arrived."),
        "{note}"
    );

    let (firing, resolved) = (&am.seen()[0].body[0], &am.seen()[1].body[0]);
    assert_eq!(resolved["labels"], firing["labels"], "the same alert");
    assert_eq!(resolved["startsAt"], firing["startsAt"]);
    let ends = resolved["endsAt"]
        .as_str()
        .unwrap()
        .parse::<Timestamp>()
        .unwrap();
    let starts = firing["startsAt"]
        .as_str()
        .unwrap()
        .parse::<Timestamp>()
        .unwrap();
    assert!(ends > starts, "ends when the fact came: {resolved}");
    assert!(ends <= Timestamp::now());
}

#[tokio::test]
async fn a_grace_swallows_a_fact_a_few_seconds_late() {
    let vendor = VendorReceiver::start().await;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let config = format!(
        "public_url = \"http://watcher.test\"\n\n{}",
        incident_channel("pd", "pagerduty", &vendor, "grace = \"PT6S\"\n"),
    );
    let w = spawn_watcher(&agent, &config).await;
    let due = plus(Timestamp::now(), 2);
    let each = [
        ("exp-short".to_owned(), "PA-SHORT".to_owned()),
        ("exp-long".to_owned(), "PA-LONG".to_owned()),
    ];
    assert_eq!(
        w.push(&expectations_on("task-grace", &each, due, "PT0S"))
            .await
            .status,
        200
    );
    // Both lapsed (their lapse tasks reached the agent); one fact arrives within the grace.
    assert!(
        wait_until(|| async { agent.sent_message_ids().len() >= 2 }, PATIENCE).await,
        "no lapse tasks:\n{}",
        w.log()
    );
    assert_eq!(w.report(&late_manifest("PA-SHORT")).await.status, 200);
    assert!(
        wait_until(|| async { !vendor.accepted().is_empty() }, PATIENCE).await,
        "the unresolved lapse was not paged after its grace:\n{}",
        w.log()
    );
    assert!(
        holds_for(
            || async { vendor.seen().len() == 1 },
            Duration::from_secs(8)
        )
        .await,
        "the lapse resolved within its grace was told: {:?}",
        vendor.seen()
    );
    let p = &vendor.seen()[0].body;
    assert_eq!(p["event_action"], "trigger");
    assert_eq!(p["payload"]["custom_details"]["subject_id"], "PA-LONG");
}
