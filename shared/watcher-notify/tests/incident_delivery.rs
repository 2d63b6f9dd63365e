//! The incident formats through the notifier to a local stand-in for each vendor
//! (`watcher_notify::testing::VendorReceiver`): each lapse is posted once, to the vendor's
//! path, with its key and without Standard Webhooks headers; a `400` is refused for good (moved
//! past, recorded, not retried); a `429` or `5xx` is retried with the channel's backoff.

use std::sync::Arc;

use watcher_config::config::NotifyConfig;
use watcher_core::ids::Tenant;
use watcher_core::record::LapseKind;
use watcher_notify::testing::VendorReceiver;
use watcher_notify::transport::HttpTransport;
use watcher_notify::{Channel, Notifier};
use watcher_runtime::clock::{Clock, FakeClock};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Notifications;

use crate::common::{at, channel_config, lapse_task, record};

fn config(format: &str, url: &str) -> NotifyConfig {
    let mut c = channel_config(url, &[]);
    c.format = format.into();
    c.secret = None;
    match format {
        "pagerduty" => {
            c.url = format!("{url}/v2/enqueue");
            c.routing_key = Some("R0UT1NGKEY0000000000000000000000".into());
        }
        "opsgenie" => c.api_key = Some("genie-key".into()),
        _ => {}
    }
    c
}

fn notifier(
    store: &Arc<MemoryStore>,
    clock: &Arc<FakeClock>,
    c: &NotifyConfig,
) -> Notifier<MemoryStore> {
    Notifier::new(
        store.clone(),
        vec![Channel::from_config(c).expect("a valid channel")],
        Arc::new(HttpTransport::new().unwrap()),
        clock.clone() as Arc<dyn Clock>,
        Some("https://watcher.example".into()),
    )
}

#[tokio::test]
async fn each_format_posts_each_lapse_once_to_its_vendor_path() {
    for (format, path, auth) in [
        ("pagerduty", "/v2/enqueue", None),
        ("opsgenie", "/v2/alerts", Some("GenieKey genie-key")),
        ("alertmanager", "/api/v2/alerts", None),
    ] {
        let vendor = VendorReceiver::start().await;
        let store = Arc::new(MemoryStore::new());
        let clock = Arc::new(FakeClock::new(at(0)));
        let n = notifier(&store, &clock, &config(format, &vendor.url));
        assert_eq!(n.round().await[0].delivered, 0);
        let a = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
        record(&store, vec![a.clone()]).await;
        record(&store, vec![a]).await;
        clock.set(at(11));
        assert_eq!(n.round().await[0].delivered, 1, "{format}");
        // A restart tells nothing again.
        let again = notifier(&store, &clock, &config(format, &vendor.url));
        assert_eq!(again.round().await[0].delivered, 0, "{format}");
        let got = vendor.seen();
        assert_eq!(got.len(), 1, "{format}: {got:?}");
        let r = &got[0];
        assert_eq!(r.path, path, "{format}");
        assert_eq!(r.authorization.as_deref(), auth, "{format}");
        assert_eq!(r.content_type.as_deref(), Some("application/json"));
        assert!(!r.webhook_headers, "{format}: no Standard Webhooks headers");
        assert_eq!(r.status, 202);
        match format {
            "pagerduty" => {
                assert_eq!(r.body["routing_key"], "R0UT1NGKEY0000000000000000000000");
                assert_eq!(r.body["event_action"], "trigger");
                assert_eq!(r.body["payload"]["severity"], "error");
            }
            "opsgenie" => {
                assert_eq!(r.body["priority"], "P2");
                assert!(r.body["alias"].as_str().unwrap().starts_with("msg_"));
            }
            _ => {
                assert_eq!(r.body[0]["labels"]["kind"], "overdue");
                assert_eq!(r.body[0]["startsAt"], "2026-09-11T00:00:10Z");
            }
        }
    }
}

#[tokio::test]
async fn a_400_is_refused_for_good_and_a_429_is_retried() {
    let vendor = VendorReceiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let n = notifier(&store, &clock, &config("pagerduty", &vendor.url));
    n.round().await;
    vendor.answer(400);
    record(
        &store,
        vec![lapse_task(
            "booking",
            "exp-1",
            LapseKind::Overdue,
            "PA-1",
            at(10),
        )],
    )
    .await;
    record(
        &store,
        vec![lapse_task(
            "booking",
            "exp-2",
            LapseKind::Overdue,
            "PA-2",
            at(11),
        )],
    )
    .await;
    clock.set(at(12));
    let round = n.round().await[0];
    // Both refused, neither retried: the channel moves on, no backoff.
    assert_eq!((round.delivered, round.failed), (2, 0), "{round:?}");
    let tenant = Tenant::parse("default".to_owned()).unwrap();
    let state = store.channel_state(&tenant, "ops").await.unwrap().unwrap();
    assert_eq!(state.failures, 2);
    assert_eq!(state.delivered, 0);
    assert_eq!(
        state.last_error.as_deref(),
        Some("HTTP 400 from the receiver: {\"status\":\"invalid event\",\"message\":\"Event object is invalid\",\"errors\":[\"Length of 'routing_key' is incorrect (should be 32 characters)\"]} (rejected for good: not retried)")
    );
    clock.set(at(100));
    n.round().await;
    assert_eq!(vendor.seen().len(), 2, "nothing posted again");

    vendor.answer(429);
    record(
        &store,
        vec![lapse_task(
            "booking",
            "exp-3",
            LapseKind::Stalled,
            "PA-3",
            at(101),
        )],
    )
    .await;
    clock.set(at(102));
    assert_eq!(n.round().await[0].failed, 1);
    vendor.answer(202);
    clock.set(at(104));
    assert_eq!(n.round().await[0].delivered, 1, "retried after its backoff");
    let seen = vendor.seen();
    assert_eq!(seen.len(), 4);
    assert_eq!(seen[2].body["dedup_key"], seen[3].body["dedup_key"]);
    assert_eq!(seen[3].body["payload"]["severity"], "warning");
}
