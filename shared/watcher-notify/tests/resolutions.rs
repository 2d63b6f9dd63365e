//! The end of a lapse (issue 43) with the memory store and a manual clock: each channel tells
//! a lapse's resolution once, only after it told the lapse, through a restart; a grace swallows
//! a lapse resolved within it (nothing told, no end told) and passes one resolved after it;
//! the incident formats close the incident their trigger opened (PagerDuty `resolve` with the
//! same `dedup_key`, Opsgenie close by alias, the same Alertmanager alert with `endsAt`); a
//! digest counts the lapses opened and resolved since the last one, each once.

use std::sync::Arc;

use watcher_config::config::NotifyConfig;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::{Instant, IsoDuration};
use watcher_notify::event::{event_id, resolved_event_id};
use watcher_notify::testing::VendorReceiver;
use watcher_notify::transport::HttpTransport;
use watcher_notify::{Channel, Notifier};
use watcher_runtime::clock::{Clock, FakeClock};
use watcher_runtime::directory::{CardHealth, CardState, Directory};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::resolution::{Resolution, ResolutionReason};
use watcher_runtime::store::{Outbox, OutboxEntry};

use crate::common::{at, channel_config, lapse_task, record, Receiver};

fn tenant() -> Tenant {
    Tenant::parse("default".to_owned()).unwrap()
}

fn agent(id: &str) -> AgentId {
    AgentId::parse(id.to_owned()).unwrap()
}

/// A directory of the agent `booking`, its card read.
fn directory() -> Directory {
    let d = Directory::new();
    d.set_card_health(
        &tenant(),
        &agent("booking"),
        CardHealth {
            state: CardState::Ok,
            read_at: Some(at(0)),
            failing_since: None,
            error: None,
            next_try_at: None,
        },
    );
    d
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
    .with_directory(directory())
}

/// Resolves `entry` at `when` because its fact arrived, as the engine's commit writes it.
async fn resolve(store: &MemoryStore, entry: &OutboxEntry, when: Instant) {
    let r = Resolution {
        at: when,
        reason: ResolutionReason::Fact,
    };
    let done = store
        .outbox_resolve(&tenant(), &entry.agent, &entry.message_id, &r)
        .await
        .unwrap();
    assert!(done.is_some(), "resolved once");
}

fn with_grace(mut c: NotifyConfig, grace: &str) -> NotifyConfig {
    c.grace = Some(IsoDuration::parse(grace).unwrap());
    c
}

#[tokio::test]
async fn a_lapse_and_its_end_are_told_once_each_in_order_through_a_restart() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let config = channel_config(&receiver.url, &[]);
    let first = notifier(&store, &clock, &config);
    first.round().await;

    let a = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    record(&store, vec![a.clone()]).await;
    clock.set(at(11));
    assert_eq!(first.round().await[0].delivered, 1);
    resolve(&store, &a, at(20)).await;
    // Within the commit margin (5 s) of its instant, the end is not read yet.
    clock.set(at(24));
    assert_eq!(first.round().await[0].delivered, 0);
    clock.set(at(25));
    assert_eq!(first.round().await[0].delivered, 1);
    assert_eq!(first.round().await[0].delivered, 0, "told once");
    let again = notifier(&store, &clock, &config);
    clock.set(at(100));
    assert_eq!(
        again.round().await[0].delivered,
        0,
        "nothing again after a restart"
    );

    let got = receiver.accepted();
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].body["type"], "lapse.recorded");
    let end = &got[1];
    assert!(end.verified, "signed like every event");
    assert_eq!(end.body["type"], "lapse.resolved");
    assert_eq!(end.body["timestamp"], "2026-09-11T00:00:20Z");
    let lapse_id = event_id(&tenant(), &agent("booking"), &a.message_id);
    assert_eq!(got[0].id, lapse_id);
    assert_eq!(
        end.id,
        resolved_event_id(&tenant(), &agent("booking"), &a.message_id)
    );
    assert_ne!(end.id, lapse_id, "its own id");
    let data = &end.body["data"];
    assert_eq!(data["lapseEventId"], lapse_id.as_str());
    assert_eq!(data["messageId"], a.message_id.as_str());
    assert_eq!(data["agent"], "booking");
    assert_eq!(data["lapse"], "overdue");
    assert_eq!(data["lapsedAt"], "2026-09-11T00:00:10Z");
    assert_eq!(data["block"]["subject"]["id"], "PA-1");
    assert_eq!(
        data["resolution"],
        serde_json::json!({ "at": "2026-09-11T00:00:20Z", "reason": "fact" })
    );
}

#[tokio::test]
async fn an_end_is_never_told_before_its_lapse() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let n = notifier(&store, &clock, &channel_config(&receiver.url, &[]));
    n.round().await;
    receiver.answer(503);
    let a = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    record(&store, vec![a.clone()]).await;
    clock.set(at(11));
    assert_eq!(n.round().await[0].failed, 1);
    // Resolved while its lapse could not be told; the receiver still down long after.
    resolve(&store, &a, at(12)).await;
    for s in [30, 100, 200] {
        clock.set(at(s));
        n.round().await;
    }
    assert!(receiver.accepted().is_empty());
    assert!(
        receiver
            .seen()
            .iter()
            .all(|r| r.body["type"] == "lapse.recorded"),
        "no end attempted before its lapse: {:?}",
        receiver.seen()
    );
    receiver.answer(204);
    clock.set(at(400));
    assert_eq!(n.round().await[0].delivered, 2, "the lapse, then its end");
    let types: Vec<_> = receiver
        .accepted()
        .iter()
        .map(|r| r.body["type"].clone())
        .collect();
    assert_eq!(types, ["lapse.recorded", "lapse.resolved"]);
}

#[tokio::test]
async fn a_grace_swallows_a_short_delay_and_passes_a_long_one() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let config = with_grace(channel_config(&receiver.url, &[]), "PT2M");
    let n = notifier(&store, &clock, &config);
    n.round().await;
    let short = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    let long = lapse_task("booking", "exp-2", LapseKind::Overdue, "PA-2", at(11));
    record(&store, vec![short.clone(), long.clone()]).await;
    clock.set(at(60));
    assert_eq!(n.round().await[0].delivered, 0, "in its grace");
    // A minute late: within the grace.
    resolve(&store, &short, at(70)).await;
    // The grace ends at 130 (131 for the second), and the margin 5 s after.
    clock.set(at(135));
    assert_eq!(
        n.round().await[0].delivered,
        0,
        "the second still in its margin"
    );
    clock.set(at(136));
    assert_eq!(n.round().await[0].delivered, 1, "only the unresolved one");
    // Resolved after its grace: its end is told, after its lapse.
    resolve(&store, &long, at(140)).await;
    clock.set(at(140 + 120 + 5));
    assert_eq!(n.round().await[0].delivered, 1);
    clock.set(at(1000));
    assert_eq!(n.round().await[0].delivered, 0);
    let restarted = notifier(&store, &clock, &config);
    assert_eq!(restarted.round().await[0].delivered, 0);

    let got = receiver.accepted();
    assert_eq!(got.len(), 2, "{got:?}");
    for r in &got {
        assert_eq!(r.body["data"]["messageId"], long.message_id.as_str());
    }
    assert_eq!(got[0].body["type"], "lapse.recorded");
    assert_eq!(got[1].body["type"], "lapse.resolved");
}

#[tokio::test]
async fn without_lapse_resolved_in_events_no_end_is_told() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let n = notifier(
        &store,
        &clock,
        &channel_config(&receiver.url, &["lapse.recorded"]),
    );
    n.round().await;
    let a = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    record(&store, vec![a.clone()]).await;
    clock.set(at(11));
    n.round().await;
    resolve(&store, &a, at(12)).await;
    clock.set(at(100));
    assert_eq!(n.round().await[0].delivered, 0);
    assert_eq!(receiver.accepted().len(), 1);
}

#[tokio::test]
async fn each_incident_format_closes_the_incident_its_trigger_opened() {
    for format in ["pagerduty", "opsgenie", "alertmanager"] {
        let vendor = VendorReceiver::start().await;
        let store = Arc::new(MemoryStore::new());
        let clock = Arc::new(FakeClock::new(at(0)));
        let mut c = channel_config(&vendor.url, &[]);
        c.format = format.into();
        c.secret = None;
        match format {
            "pagerduty" => {
                c.url = format!("{}/v2/enqueue", vendor.url);
                c.routing_key = Some("R0UT1NGKEY0000000000000000000000".into());
            }
            "opsgenie" => c.api_key = Some("genie-key".into()),
            _ => {}
        }
        let n = notifier(&store, &clock, &c);
        n.round().await;
        let a = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
        record(&store, vec![a.clone()]).await;
        clock.set(at(11));
        n.round().await;
        resolve(&store, &a, at(30)).await;
        clock.set(at(100));
        assert_eq!(n.round().await[0].delivered, 1, "{format}");
        let again = notifier(&store, &clock, &c);
        clock.set(at(200));
        assert_eq!(again.round().await[0].delivered, 0, "{format}");
        let got = vendor.seen();
        assert_eq!(got.len(), 2, "{format}: {got:?}");
        let (open, close) = (&got[0], &got[1]);
        let key = event_id(&tenant(), &agent("booking"), &a.message_id);
        match format {
            "pagerduty" => {
                assert_eq!(close.path, "/v2/enqueue");
                assert_eq!(open.body["dedup_key"], key.as_str());
                assert_eq!(
                    close.body,
                    serde_json::json!({
                        "event_action": "resolve",
                        "dedup_key": key,
                        "routing_key": "R0UT1NGKEY0000000000000000000000",
                    })
                );
            }
            "opsgenie" => {
                assert_eq!(open.body["alias"], key.as_str());
                assert_eq!(
                    close.path,
                    format!("/v2/alerts/{key}/close?identifierType=alias")
                );
                assert_eq!(close.authorization.as_deref(), Some("GenieKey genie-key"));
                assert_eq!(close.body["source"], "watcher.example");
                assert_eq!(
                    close.body["note"],
                    "Resolved at 2026-09-11T00:00:30Z: its fact arrived."
                );
                assert_eq!(
                    close.body.as_object().unwrap().len(),
                    2,
                    "source and note only: the alias is in the URL"
                );
            }
            _ => {
                assert_eq!(close.path, "/api/v2/alerts");
                let (o, r) = (&open.body[0], &close.body[0]);
                assert_eq!(o["labels"], r["labels"], "the same alert");
                assert_eq!(o["annotations"], r["annotations"]);
                assert_eq!(r["startsAt"], "2026-09-11T00:00:10Z");
                assert_eq!(r["endsAt"], "2026-09-11T00:00:30Z");
                assert_eq!(r["labels"]["lapse"], key.as_str());
            }
        }
    }
}

#[tokio::test]
async fn a_digest_counts_lapses_opened_and_resolved_once_each() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let mut config = channel_config(&receiver.url, &[]);
    config.digest = Some(IsoDuration::parse("PT1M").unwrap());
    let n = notifier(&store, &clock, &config);
    n.round().await;
    let a = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    let b = lapse_task("booking", "exp-2", LapseKind::Stalled, "PA-2", at(11));
    record(&store, vec![a.clone(), b.clone()]).await;
    resolve(&store, &a, at(20)).await;
    clock.set(at(100));
    assert_eq!(n.round().await[0].delivered, 1);
    resolve(&store, &b, at(200)).await;
    clock.set(at(210));
    let r = n.round().await[0];
    assert!(r.waiting && r.delivered == 0, "{r:?}: its window is open");
    clock.set(at(260));
    assert_eq!(n.round().await[0].delivered, 1);
    clock.set(at(1000));
    assert_eq!(n.round().await[0].delivered, 0);
    let restarted = notifier(&store, &clock, &config);
    assert_eq!(restarted.round().await[0].delivered, 0);

    let got = receiver.accepted();
    assert_eq!(got.len(), 2, "{got:?}");
    let first = &got[0].body["data"];
    assert_eq!(got[0].body["type"], "lapse.digest");
    assert_eq!(
        (first["opened"].as_u64(), first["resolved"].as_u64()),
        (Some(2), Some(1))
    );
    let second = &got[1].body["data"];
    assert_eq!(
        (second["opened"].as_u64(), second["resolved"].as_u64()),
        (Some(0), Some(1))
    );
    assert_eq!(second["from"], "2026-09-11T00:03:20Z");
    assert_ne!(got[0].id, got[1].id);

    // The text formats say it in words.
    let slack = watcher_notify::body::Digest::of_both(
        "ops",
        &[],
        &[watcher_notify::event::ResolvedEvent::of(
            &a,
            &Resolution {
                at: at(20),
                reason: ResolutionReason::Fact,
            },
            None,
        )],
        None,
    )
    .unwrap();
    assert_eq!(slack.summary(), "0 opened, 1 resolved");
}

#[tokio::test]
async fn an_end_waits_for_a_round_that_read_every_lapse() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let mut config = channel_config(&receiver.url, &[]);
    config.kinds = vec!["overdue".into()];
    let n = notifier(&store, &clock, &config);
    n.round().await;
    // More lapses passed over than one round reads (10 pages of 100), then the one told.
    let mut entries: Vec<OutboxEntry> = (0..1_050)
        .map(|i| {
            let exp = format!("exp-s{i}");
            lapse_task("booking", &exp, LapseKind::Skipped, &exp, at(10))
        })
        .collect();
    let last = lapse_task("booking", "exp-last", LapseKind::Overdue, "PA-LAST", at(10));
    entries.push(last.clone());
    record(&store, entries).await;
    resolve(&store, &last, at(11)).await;
    clock.set(at(100));
    assert_eq!(
        n.round().await[0].delivered,
        0,
        "the round stopped at its page budget: neither the lapse nor its end"
    );
    assert_eq!(n.round().await[0].delivered, 2);
    let types: Vec<_> = receiver
        .accepted()
        .iter()
        .map(|r| r.body["type"].clone())
        .collect();
    assert_eq!(types, ["lapse.recorded", "lapse.resolved"]);
}
