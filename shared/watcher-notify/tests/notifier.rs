//! The notifier against a real local receiver (issue 25): once per event per channel through a
//! restart and a duplicate lapse; a receiver that was down gets everything after; a burst is one
//! digest per window; the Slack and Teams bodies; filters.

use std::sync::Arc;

use watcher_config::config::NotifyConfig;
use watcher_core::ids::Tenant;
use watcher_core::record::LapseKind;
use watcher_core::time::IsoDuration;
use watcher_notify::transport::HttpTransport;
use watcher_notify::{Channel, Notifier};
use watcher_runtime::clock::{Clock, FakeClock};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Notifications, OutboxEntry};

use crate::common::{at, channel_config, lapse_task, record, Receiver};

/// The kept state of the channel `ops` of the default tenant.
async fn ops_state(store: &MemoryStore) -> watcher_runtime::store::ChannelState {
    store
        .channel_state(&tenant(), "ops")
        .await
        .unwrap()
        .expect("the channel's state is kept")
}

/// Commits one lapse task of agent `booking` (see [`lapse_task`]).
async fn record_booking(
    store: &MemoryStore,
    exp: &str,
    kind: LapseKind,
    subject: &str,
    lapsed_at: watcher_core::time::Instant,
) {
    record(
        store,
        vec![lapse_task("booking", exp, kind, subject, lapsed_at)],
    )
    .await;
}

fn config(url: &str) -> NotifyConfig {
    channel_config(url, &[])
}

fn notifier(
    store: &Arc<MemoryStore>,
    clock: &Arc<FakeClock>,
    configs: &[NotifyConfig],
) -> Notifier<MemoryStore> {
    let channels = configs
        .iter()
        .map(|c| Channel::from_config(c).expect("a valid channel"))
        .collect();
    Notifier::new(
        store.clone(),
        channels,
        Arc::new(HttpTransport::new().unwrap()),
        clock.clone() as Arc<dyn Clock>,
        Some("https://watcher.example".into()),
    )
}

fn tenant() -> Tenant {
    Tenant::parse("default".to_owned()).unwrap()
}

#[tokio::test]
async fn each_lapse_is_told_once_signed_through_a_restart_and_a_duplicate() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let first = notifier(&store, &clock, &[config(&receiver.url)]);
    assert_eq!(first.round().await[0].delivered, 0, "nothing lapsed yet");

    let a = lapse_task("booking", "exp-1", LapseKind::Overdue, "PA-1", at(10));
    let b = lapse_task("billing", "exp-2", LapseKind::Stalled, "PA-2", at(11));
    record(&store, vec![a.clone(), b.clone()]).await;
    // The same lapse again (a duplicate timer fire commits the same messageId): one entry.
    record(&store, vec![a.clone()]).await;
    clock.set(at(12));
    assert_eq!(first.round().await[0].delivered, 2);
    let got = receiver.accepted();
    assert_eq!(got.len(), 2, "{got:?}");
    assert!(got.iter().all(|r| r.verified), "every request is signed");
    assert_eq!(got[0].body["type"], "lapse.recorded");
    assert_eq!(got[0].body["timestamp"], "2026-09-11T00:00:10Z");
    let data = &got[0].body["data"];
    assert_eq!(data["agent"], "booking");
    assert_eq!(data["messageId"], a.message_id.as_str());
    assert_eq!(data["lapse"], "overdue");
    assert_eq!(data["block"]["subject"]["id"], "PA-1");
    assert_eq!(data["block"]["expectationId"], "exp-1");
    assert_eq!(data["text"], "Delivery of PA-1 is overdue.");
    assert_eq!(
        data["links"]["operator"],
        "https://watcher.example/ui/subjects/shipment/PA%2D1"
    );
    assert_eq!(got[1].body["data"]["agent"], "billing");
    assert_ne!(got[0].id, got[1].id);
    assert!(got[0].id.starts_with("msg_"));

    // A restart: a new notifier on the same store tells nothing again.
    let second = notifier(&store, &clock, &[config(&receiver.url)]);
    assert_eq!(second.round().await[0].delivered, 0);
    assert_eq!(receiver.seen().len(), 2);
    // A new lapse is told once, by whichever runs.
    record_booking(&store, "exp-3", LapseKind::Skipped, "PA-3", at(20)).await;
    assert_eq!(second.round().await[0].delivered, 1);
    assert_eq!(first.round().await[0].delivered, 0);
    assert_eq!(receiver.seen().len(), 3);
    let state = ops_state(&store).await;
    assert_eq!(state.delivered, 3);
    assert_eq!(state.format.as_deref(), Some("standard-webhooks"));
    assert_eq!(
        state.target.as_deref(),
        receiver.url.strip_suffix("/hook"),
        "scheme and host only"
    );
    assert_eq!(
        state.last_event_id.as_deref(),
        Some(receiver.seen()[2].id.as_str())
    );
}

#[tokio::test]
async fn a_receiver_down_for_ten_minutes_gets_everything_after_in_order() {
    let receiver = Receiver::start().await;
    receiver.answer(503);
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let n = notifier(&store, &clock, &[config(&receiver.url)]);
    n.round().await;
    let ids = ["exp-1", "exp-2", "exp-3", "exp-4"];
    for (i, id) in ids.iter().enumerate() {
        record_booking(&store, id, LapseKind::Overdue, id, at(1 + i as i64)).await;
    }
    // Down: each attempt fails, the cursor stays, the channel backs off.
    let mut failed = 0;
    for s in (10..=600).step_by(10) {
        clock.set(at(s));
        let r = n.round().await[0];
        assert_eq!(r.delivered, 0);
        failed += r.failed;
    }
    assert!(
        (5..=20).contains(&failed),
        "retried with backoff, not every round: {failed}"
    );
    let state = ops_state(&store).await;
    assert_eq!(state.after, None, "nothing acknowledged, so nothing passed");
    assert_eq!(state.failing_since, Some(at(10)));
    assert_eq!(
        state.last_error.as_deref(),
        Some("HTTP 503 from the receiver")
    );
    assert!(receiver
        .seen()
        .iter()
        .all(|r| r.body["data"]["block"]["expectationId"] == "exp-1"));

    // Up again: within the longest backoff everything is told, in order, once.
    receiver.answer(200);
    clock.set(at(600 + 61));
    assert_eq!(n.round().await[0].delivered, 4);
    let told: Vec<String> = receiver
        .accepted()
        .iter()
        .map(|r| {
            r.body["data"]["block"]["expectationId"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(told, ids);
    let state = ops_state(&store).await;
    assert_eq!(state.failing_since, None);
    assert_eq!(state.delivered, 4);
    // The retried notification kept its id (receivers deduplicate on it).
    assert_eq!(receiver.seen()[0].id, receiver.accepted()[0].id);
}

#[tokio::test]
async fn a_burst_of_500_lapses_is_one_digest_per_channel_per_window() {
    let (r1, r2) = (Receiver::start().await, Receiver::start().await);
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let mut slack = config(&r2.url);
    slack.id = "slack".into();
    slack.format = "slack".into();
    let mut ops = config(&r1.url);
    for c in [&mut ops, &mut slack] {
        c.digest = Some(IsoDuration::parse("PT15M").unwrap());
    }
    let n = notifier(&store, &clock, &[ops, slack]);
    n.round().await;
    let burst: Vec<OutboxEntry> = (0..500)
        .map(|i| {
            let kind = if i % 5 == 0 {
                LapseKind::Stalled
            } else {
                LapseKind::Overdue
            };
            let agent = if i % 2 == 0 { "booking" } else { "billing" };
            lapse_task(
                agent,
                &format!("exp-{i:03}"),
                kind,
                &format!("PA-{i}"),
                at(60),
            )
        })
        .collect();
    record(&store, burst).await;
    // The window opened at the first lapse (60 s) is open until 960 s: nothing yet.
    clock.set(at(900));
    let rounds = n.round().await;
    assert!(
        rounds.iter().all(|r| r.waiting && r.delivered == 0),
        "{rounds:?}"
    );
    assert!(r1.seen().is_empty() && r2.seen().is_empty());

    clock.set(at(960));
    let rounds = n.round().await;
    assert_eq!(rounds.iter().map(|r| r.delivered).sum::<u64>(), 2);
    let (d1, d2) = (r1.accepted(), r2.accepted());
    assert_eq!((d1.len(), d2.len()), (1, 1), "one message per channel");
    let data = &d1[0].body["data"];
    assert_eq!(d1[0].body["type"], "lapse.digest");
    assert!(d1[0].verified);
    assert_eq!(data["count"], 500);
    assert_eq!(data["byKind"]["overdue"], 400);
    assert_eq!(data["byKind"]["stalled"], 100);
    assert_eq!(data["byAgent"]["booking"], 250);
    assert_eq!(data["first"].as_array().unwrap().len(), 5);
    assert_eq!(data["link"], "https://watcher.example/ui/lapses");
    let text = d2[0].body["text"].as_str().unwrap();
    assert_eq!(text, "a2a-watcher: 500 lapses (400 overdue, 100 stalled)");
    assert!(d2[0].body["blocks"][1]["text"]["text"]
        .as_str()
        .unwrap()
        .ends_with("…and 495 more"));

    // Nothing more to tell; the next lapse opens the next window.
    assert_eq!(n.round().await.iter().map(|r| r.delivered).sum::<u64>(), 0);
    record_booking(&store, "exp-late", LapseKind::Overdue, "PB", at(1000)).await;
    clock.set(at(1000 + 899));
    let r = n.round().await;
    assert_eq!(
        r.iter().map(|r| r.delivered).sum::<u64>(),
        0,
        "{r:?} {:?}",
        r1.accepted().last().map(|r| r.body.clone())
    );
    clock.set(at(1000 + 900));
    assert_eq!(n.round().await.iter().map(|r| r.delivered).sum::<u64>(), 2);
    assert_eq!(r1.accepted()[1].body["data"]["count"], 1);
}

#[tokio::test]
async fn filters_pass_over_other_agents_and_kinds_and_history_before_the_channel() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    // A lapse before the channel first ran is history: not told.
    record_booking(&store, "old", LapseKind::Overdue, "P0", at(-3600)).await;
    let clock = Arc::new(FakeClock::new(at(0)));
    let mut c = config(&receiver.url);
    c.agents = vec!["booking".into()];
    c.kinds = vec!["overdue".into(), "skipped".into()];
    let n = notifier(&store, &clock, &[c]);
    n.round().await;
    record(
        &store,
        vec![
            lapse_task("billing", "e1", LapseKind::Overdue, "P1", at(1)),
            lapse_task("booking", "e2", LapseKind::Stalled, "P2", at(2)),
            lapse_task("booking", "e3", LapseKind::Skipped, "P3", at(3)),
        ],
    )
    .await;
    clock.set(at(5));
    assert_eq!(n.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body["data"]["block"]["expectationId"], "e3");
    let state = ops_state(&store).await;
    assert_eq!(state.since, at(0));
}

#[tokio::test]
async fn slack_and_teams_bodies_carry_the_lapse_in_words_and_links() {
    let (rs, rt) = (Receiver::start().await, Receiver::start().await);
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let mut slack = config(&rs.url);
    (slack.id, slack.format) = ("slack".into(), "slack".into());
    let mut teams = config(&rt.url);
    (teams.id, teams.format, teams.secret) = ("teams".into(), "teams".into(), None);
    let n = notifier(&store, &clock, &[slack, teams]);
    n.round().await;
    record_booking(&store, "exp-9", LapseKind::Overdue, "PA-9", at(30)).await;
    clock.set(at(31));
    n.round().await;
    let s = &rs.accepted()[0].body;
    assert_eq!(
        s["text"],
        "Overdue: shipment.delivered for shipment PA-9 (agent booking)"
    );
    assert_eq!(s["blocks"][0]["type"], "header");
    assert_eq!(
        s["blocks"][1]["text"]["text"],
        "Delivery of PA-9 is overdue."
    );
    assert!(s["blocks"][3]["elements"][0]["text"]
        .as_str()
        .unwrap()
        .contains("<https://watcher.example/ui/subjects/shipment/PA%2D9|Operator page>"));
    let t = &rt.accepted()[0];
    assert!(!t.verified, "a channel without a secret does not sign");
    let card = &t.body["attachments"][0];
    assert_eq!(
        card["contentType"],
        "application/vnd.microsoft.card.adaptive"
    );
    assert_eq!(card["content"]["type"], "AdaptiveCard");
    assert_eq!(card["content"]["body"][2]["type"], "FactSet");
    assert_eq!(card["content"]["actions"][1]["title"], "Timeline");
}

/// Why the channel `c` is refused.
fn refused(c: &NotifyConfig) -> String {
    Channel::from_config(c).unwrap_err()
}

#[test]
fn bad_channels_are_refused_naming_the_field() {
    let mut c = config("ftp://x");
    assert_eq!(
        refused(&c),
        "notify: channel \"ops\": url: \"ftp://x\" is not an http(s) URL"
    );
    c.url = "https://hooks.example.test/T0/B0/credential".into();
    assert!(
        !format!("{:?}", Channel::from_config(&c).unwrap()).contains("credential"),
        "a URL's path is not in Debug"
    );
    c.format = "discord".into();
    assert!(
        refused(&c).contains("format: \"discord\" is not one of standard-webhooks, slack, teams")
    );
    c.format = "slack".into();
    c.kinds = vec!["late".into()];
    assert!(refused(&c).contains("kinds: \"late\""));
    c.kinds.clear();
    c.secret = Some("whsec_!!".into());
    assert!(refused(&c).contains("secret: a whsec_ secret must be base64"));

    // Email channels: an smtp:// URL, a sender, recipients that parse, both credentials.
    let mut m = config("https://x");
    m.format = "email".into();
    m.secret = None;
    assert!(refused(&m).contains("url: \"https://x\" is not an smtp://host[:port] URL"));
    m.url = "smtp://127.0.0.1:2525".into();
    assert!(refused(&m).contains("from: an email channel needs a sender"));
    m.from = Some("watcher@example.test".into());
    assert!(refused(&m).contains("to: an email channel"));
    m.to = vec!["not a mailbox".into()];
    assert!(refused(&m).contains("to: \"not a mailbox\" is not a mailbox"));
    m.to = vec!["Ops <ops@example.test>".into()];
    m.username = Some("watcher".into());
    assert!(refused(&m).contains("username, password: give both or neither"));
    m.password = Some("pw".into());
    m.tls = "ssl".into();
    assert!(refused(&m).contains("tls: \"ssl\" is not one of starttls, implicit, none"));
    m.tls = "none".into();
    let ch = Channel::from_config(&m).expect("a valid email channel");
    assert_eq!(ch.target(), "smtp://127.0.0.1:2525");
    assert!(
        !format!("{ch:?}").contains("pw"),
        "credentials are not in Debug"
    );
}

/// With a settle delay (the DynamoDB deployment's), a lapse is told only once it is that old,
/// and the cursor never passes a lapse not yet told: a later lapse waits behind it.
#[tokio::test]
async fn a_settle_delay_holds_the_cursor_behind_recent_lapses() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(at(0)));
    let n = notifier(&store, &clock, &[config(&receiver.url)])
        .with_settle(std::time::Duration::from_secs(300));
    n.round().await;
    record(
        &store,
        vec![
            lapse_task("booking", "exp-a", LapseKind::Overdue, "PA", at(10)),
            lapse_task("booking", "exp-b", LapseKind::Overdue, "PB", at(200)),
        ],
    )
    .await;
    clock.set(at(309));
    assert_eq!(n.round().await[0].delivered, 0, "exp-a is 299 s old");
    clock.set(at(310));
    assert_eq!(
        n.round().await[0].delivered,
        1,
        "exp-a is settled, exp-b not"
    );
    let state = ops_state(&store).await;
    let first = state.after.expect("the cursor passed exp-a");
    clock.set(at(499));
    assert_eq!(n.round().await[0].delivered, 0);
    assert_eq!(
        ops_state(&store).await.after,
        Some(first),
        "the cursor stays before the unsettled lapse"
    );
    clock.set(at(500));
    assert_eq!(n.round().await[0].delivered, 1);
    let told: Vec<_> = receiver
        .accepted()
        .iter()
        .map(|r| r.body["data"]["block"]["expectationId"].clone())
        .collect();
    assert_eq!(told, ["exp-a", "exp-b"]);
}

/// A channel added to a watcher with a long history starts after its newest lapse task (one
/// keyed read): it neither tells nor reads the past, and tells the next lapse in its next round
/// (walking 3,000 old lapse tasks would take three rounds of `PAGES_PER_ROUND` pages).
#[tokio::test]
async fn a_new_channel_starts_after_the_history_without_reading_it() {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let history: Vec<OutboxEntry> = (0..3000)
        .map(|i| {
            lapse_task(
                "booking",
                &format!("old-{i}"),
                LapseKind::Overdue,
                "P",
                at(-7200 + i),
            )
        })
        .collect();
    record(&store, history).await;
    let clock = Arc::new(FakeClock::new(at(0)));
    let n = notifier(&store, &clock, &[config(&receiver.url)]);
    assert_eq!(n.round().await[0].delivered, 0);
    record_booking(&store, "new", LapseKind::Overdue, "PN", at(5)).await;
    clock.set(at(6));
    assert_eq!(n.round().await[0].delivered, 1, "told in the next round");
    let got = receiver.accepted();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body["data"]["block"]["expectationId"], "new");
}

/// A refusal carries the start of the receiver's answer, on one line, so a person sees why.
#[tokio::test]
async fn a_refusal_says_what_the_receiver_answered() {
    use watcher_notify::transport::Transport;
    let app = axum::Router::new().route(
        "/hook",
        axum::routing::post(|| async {
            (
                axum::http::StatusCode::UNAUTHORIZED,
                "bad signature:\n  webhook-signature does not verify",
            )
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let e = HttpTransport::new()
        .unwrap()
        .post(&url, &[], b"{}".to_vec(), std::time::Duration::from_secs(5))
        .await
        .unwrap_err();
    assert_eq!(
        e,
        watcher_notify::transport::PostError::Failed(
            "HTTP 401 from the receiver: bad signature: webhook-signature does not verify".into()
        )
    );
}
