//! Channels do not wait for each other: while one channel's receiver takes the connection and
//! never answers, another channel's receiver gets its notifications, in one round
//! ([`Notifier::round`], as the AWS timer function runs them) and in the loop `serve` runs
//! ([`Notifier::run`]), each time before the hanging channel's request has ended. Asserted by
//! order of events: the healthy receiver notes, when each notification arrives, whether the
//! hanging channel has failed yet (it has not while its request is in flight), and the hanging
//! receiver still holds the request open afterwards.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use watcher_core::ids::Tenant;
use watcher_core::record::LapseKind;
use watcher_notify::testing::Hanging;
use watcher_notify::transport::HttpTransport;
use watcher_notify::{Channel, Notifier};
use watcher_runtime::clock::{Clock, FakeClock};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Notifications;

use crate::common::{at, channel_config, lapse_task, record};

/// The hanging channel's timeout: long, so it never ends within a passing test.
const HANG_TIMEOUT_SECS: u64 = 20;
/// How long the test waits for an event that should come at once.
const PATIENCE: Duration = Duration::from_secs(60);

/// A receiver answering 204 that notes, as each notification arrives, how many failures the
/// channel `hang` has recorded so far.
#[derive(Clone)]
struct Healthy {
    url: String,
    hang_failures_at_arrival: Arc<Mutex<Vec<u64>>>,
}

#[derive(Clone)]
struct HealthyState {
    store: Arc<MemoryStore>,
    seen: Arc<Mutex<Vec<u64>>>,
}

async fn take(State(st): State<HealthyState>) -> StatusCode {
    let failures = st
        .store
        .channel_state(&tenant(), "hang")
        .await
        .unwrap()
        .map_or(0, |s| s.failures);
    st.seen.lock().unwrap().push(failures);
    StatusCode::NO_CONTENT
}

async fn healthy(store: Arc<MemoryStore>) -> Healthy {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let app = axum::Router::new()
        .route("/hook", axum::routing::post(take))
        .with_state(HealthyState {
            store,
            seen: seen.clone(),
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    Healthy {
        url,
        hang_failures_at_arrival: seen,
    }
}

fn tenant() -> Tenant {
    Tenant::parse("default").unwrap()
}

/// The hanging channel first (so a channel-by-channel round would reach it first), then the
/// healthy one.
fn notifier(
    store: &Arc<MemoryStore>,
    clock: &Arc<FakeClock>,
    hang: &Hanging,
    ok: &Healthy,
) -> Arc<Notifier<MemoryStore>> {
    let mut h = channel_config(&hang.url, &["lapse.recorded"]);
    (h.id, h.timeout_secs) = ("hang".into(), HANG_TIMEOUT_SECS);
    let mut o = channel_config(&ok.url, &["lapse.recorded"]);
    o.id = "ok".into();
    let channels = [h, o]
        .iter()
        .map(|c| Channel::from_config(c).unwrap())
        .collect();
    Arc::new(Notifier::new(
        store.clone(),
        channels,
        Arc::new(HttpTransport::new().unwrap()),
        clock.clone() as Arc<dyn Clock>,
        None,
    ))
}

/// Waits until `check` holds, at most [`PATIENCE`].
async fn until(check: impl Fn() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    while tokio::time::Instant::now() < deadline {
        if check() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    check()
}

#[tokio::test]
async fn in_one_round_a_hanging_channel_does_not_hold_up_the_others() {
    let hang = Hanging::start().await;
    let store = Arc::new(MemoryStore::new());
    let ok = healthy(store.clone()).await;
    let clock = Arc::new(FakeClock::new(at(0)));
    let n = notifier(&store, &clock, &hang, &ok);
    n.round().await;
    record(
        &store,
        vec![lapse_task(
            "booking",
            "exp-1",
            LapseKind::Overdue,
            "PA-1",
            at(1),
        )],
    )
    .await;
    clock.set(at(2));
    let round = tokio::spawn({
        let n = n.clone();
        async move { n.round().await }
    });
    let arrivals = ok.hang_failures_at_arrival.clone();
    assert!(
        until(|| !arrivals.lock().unwrap().is_empty()).await,
        "the healthy channel got nothing"
    );
    assert_eq!(
        *arrivals.lock().unwrap(),
        [0],
        "the healthy channel's notification arrived only after the hanging channel failed"
    );
    assert!(
        until(|| hang.held() == 1).await,
        "the hanging receiver holds the request"
    );
    assert!(
        !round.is_finished(),
        "the hanging channel's post is still pending"
    );
    let kept = store.channel_state(&tenant(), "ok").await.unwrap().unwrap();
    assert_eq!(kept.delivered, 1, "and the healthy channel's cursor moved");
    round.abort();
}

#[tokio::test]
async fn in_the_loop_each_channel_goes_on_while_another_hangs() {
    let hang = Hanging::start().await;
    let store = Arc::new(MemoryStore::new());
    let ok = healthy(store.clone()).await;
    let clock = Arc::new(FakeClock::new(at(0)));
    let n = notifier(&store, &clock, &hang, &ok);
    // Both channels start after the (empty) history before the loop runs.
    n.round().await;
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let run = tokio::spawn(n.clone().run(stopped));
    let arrivals = ok.hang_failures_at_arrival.clone();
    for (i, exp) in ["exp-1", "exp-2", "exp-3"].into_iter().enumerate() {
        record(
            &store,
            vec![lapse_task(
                "booking",
                exp,
                LapseKind::Overdue,
                exp,
                at(1 + i as i64),
            )],
        )
        .await;
        clock.set(at(2 + i as i64));
        assert!(
            until(|| arrivals.lock().unwrap().len() == i + 1).await,
            "the healthy channel did not get {exp}"
        );
    }
    assert!(
        until(|| hang.held() == 1).await,
        "the hanging receiver holds the request"
    );
    assert_eq!(
        *arrivals.lock().unwrap(),
        [0, 0, 0],
        "each of the healthy channel's notifications arrived before the hanging channel's request ended"
    );
    let _ = stop.send(true);
    run.abort();
}
