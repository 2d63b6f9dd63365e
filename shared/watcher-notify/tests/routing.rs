//! Routing by lapse kind and severity (`kinds`, `min_severity`): a lapse the channel's filters
//! leave out is not told, on its own or in a digest, and the channel's cursor still moves past
//! it, so it is not read again every round.

use std::sync::Arc;

use watcher_config::config::NotifyConfig;
use watcher_core::ids::Tenant;
use watcher_core::record::LapseKind;
use watcher_core::time::IsoDuration;
use watcher_notify::transport::HttpTransport;
use watcher_notify::{Channel, Notifier};
use watcher_runtime::clock::{Clock, FakeClock};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{LapseLog as _, LapseQuery, Notifications as _};

use crate::common::{at, channel_config, lapse_task, record, Receiver};

fn tenant() -> Tenant {
    Tenant::parse("default".to_owned()).unwrap()
}

fn notifier(
    store: &Arc<MemoryStore>,
    clock: &Arc<FakeClock>,
    config: &NotifyConfig,
) -> Notifier<MemoryStore> {
    Notifier::new(
        store.clone(),
        vec![Channel::from_config(config).expect("a valid channel")],
        Arc::new(HttpTransport::new().unwrap()),
        clock.clone() as Arc<dyn Clock>,
        Some("https://watcher.example".into()),
    )
}

/// The position of the last lapse task committed to the default tenant.
async fn last_position(store: &MemoryStore) -> u64 {
    let page = store
        .lapses_page(
            &tenant(),
            &LapseQuery {
                agent: None,
                delivery: None,
                since: None,
                after: None,
                limit: 100,
            },
        )
        .await
        .unwrap();
    page.entries.last().expect("a lapse task").0
}

/// The channel `ops`'s cursor.
async fn cursor(store: &MemoryStore) -> Option<u64> {
    store
        .channel_state(&tenant(), "ops")
        .await
        .unwrap()
        .expect("the channel's state is kept")
        .after
}

#[tokio::test]
async fn min_severity_error_tells_overdue_only_and_moves_past_the_rest() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let mut c = channel_config(&receiver.url, &[]);
    c.min_severity = Some("error".into());
    let n = notifier(&store, &clock, &c);
    n.round().await;
    record(
        &store,
        vec![
            lapse_task("booking", "e1", LapseKind::Stalled, "P1", at(1)),
            lapse_task("booking", "e2", LapseKind::Overdue, "P2", at(2)),
            // Last: the cursor must move past a lapse it passes over.
            lapse_task("billing", "e3", LapseKind::Skipped, "P3", at(3)),
        ],
    )
    .await;
    clock.set(at(5));
    assert_eq!(n.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body["data"]["lapse"], "overdue");
    assert_eq!(got[0].body["data"]["block"]["expectationId"], "e2");
    assert_eq!(cursor(&store).await, Some(last_position(&store).await));
    // Nothing is read again.
    clock.set(at(60));
    assert_eq!(n.round().await[0].delivered, 0);
    assert_eq!(receiver.seen().len(), 1);
}

#[tokio::test]
async fn a_digest_counts_only_the_lapses_the_filters_let_through() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let mut c = channel_config(&receiver.url, &[]);
    c.digest = Some(IsoDuration::parse("PT15M").unwrap());
    c.min_severity = Some("error".into());
    c.kinds = vec!["overdue".into(), "stalled".into()];
    let n = notifier(&store, &clock, &c);
    n.round().await;

    // Only lapses the filters leave out: no digest, no window opened, the cursor past them.
    record(
        &store,
        vec![
            lapse_task("booking", "s1", LapseKind::Stalled, "P1", at(10)),
            lapse_task("booking", "k1", LapseKind::Skipped, "P2", at(11)),
        ],
    )
    .await;
    clock.set(at(2000));
    let round = &n.round().await[0];
    assert_eq!((round.delivered, round.waiting), (0, false), "{round:?}");
    assert!(receiver.seen().is_empty());
    assert_eq!(cursor(&store).await, Some(last_position(&store).await));

    record(
        &store,
        vec![
            lapse_task("booking", "o1", LapseKind::Overdue, "P3", at(2001)),
            lapse_task("billing", "s2", LapseKind::Stalled, "P4", at(2002)),
            lapse_task("billing", "o2", LapseKind::Overdue, "P5", at(2003)),
            lapse_task("booking", "k2", LapseKind::Skipped, "P6", at(2004)),
        ],
    )
    .await;
    clock.set(at(2001 + 900));
    assert_eq!(n.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 1);
    let data = &got[0].body["data"];
    assert_eq!(got[0].body["type"], "lapse.digest");
    assert_eq!(data["count"], 2);
    assert_eq!(data["byKind"]["overdue"], 2);
    assert!(data["byKind"].get("stalled").is_none(), "{data}");
    assert_eq!(cursor(&store).await, Some(last_position(&store).await));
    clock.set(at(5000));
    assert_eq!(n.round().await[0].delivered, 0);
    assert_eq!(receiver.seen().len(), 1);
}

#[tokio::test]
async fn expectation_kinds_tells_only_those_kinds_and_passes_the_others() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let mut config = channel_config(&receiver.url, &[]);
    config.expectation_kinds = vec!["shipment.manifest".into()];
    let n = notifier(&store, &clock, &config);
    n.round().await;
    // The helper's lapse tasks are of kind `shipment.delivered`; one is made a manifest.
    let delivered = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    let mut manifest = lapse_task("booking", "exp-2", LapseKind::Overdue, "PA-2", at(11));
    let uri = watcher_core::EXPECTATIONS_URI;
    manifest.request["message"]["metadata"][uri]["lapse"]["kind"] = "shipment.manifest".into();
    record(&store, vec![delivered, manifest]).await;
    clock.set(at(12));
    assert_eq!(n.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].body["data"]["block"]["kind"], "shipment.manifest");
    assert_eq!(cursor(&store).await, Some(last_position(&store).await));
}
