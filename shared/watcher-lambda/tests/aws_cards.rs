//! Agent cards on AWS (serve.md "Agents are independent"; docs/interpretation.md "Cards on
//! AWS"): a card that cannot be read at a function's cold start is re-read by the timer's sweep
//! and kept in the table, every other function picks the kept card up at use, and a card in good
//! health is re-read once it is older than the maximum age. Needs the emulator (`bash
//! infra/moto.sh`, `AWS_ENDPOINT_URL`).

use crate::common::{cold_start, emulator_store, sweep, Nothing};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use aws_lambda_events::event::sqs::SqsEvent;
use serde_json::{json, Value};
use watcher_config::Config;
use watcher_core::ids::{AgentId, Tenant};
use watcher_delivery::endpoint::Endpoints;
use watcher_host::aws::{assemble_for, Function, Parts};
use watcher_runtime::clock::{Clock, SystemClock};
use watcher_runtime::directory::CardState;
use watcher_runtime::store::Store;

const CARD: &str = include_str!("../../../examples/booking-card.json");

/// An agent card server on 127.0.0.1 that answers 503 until `up` is set, counting requests.
struct CardServer {
    url: String,
    up: Arc<AtomicBool>,
    hits: Arc<AtomicUsize>,
}

async fn card_server(card: Value) -> CardServer {
    card_server_after(card, std::time::Duration::ZERO).await
}

/// [`card_server`] answering each request only after `delay`.
async fn card_server_after(card: Value, delay: std::time::Duration) -> CardServer {
    let up = Arc::new(AtomicBool::new(false));
    let hits = Arc::new(AtomicUsize::new(0));
    let (u, h) = (up.clone(), hits.clone());
    let app = axum::Router::new().route(
        "/card.json",
        axum::routing::get(move || {
            let (u, h, card) = (u.clone(), h.clone(), card.clone());
            async move {
                h.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(delay).await;
                if u.load(Ordering::SeqCst) {
                    (axum::http::StatusCode::OK, axum::Json(card))
                } else {
                    (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        axum::Json(json!({})),
                    )
                }
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    CardServer {
        url: format!("http://{addr}/card.json"),
        up,
        hits,
    }
}

fn config(card_url: &str) -> Config {
    Config::from_toml(&format!(
        "allow_private_endpoints = true\n[[agents]]\nid = \"booking\"\ncard = \"{card_url}\"\npush_token = \"push-1\"\n"
    ))
    .expect("config")
}

/// `function`'s parts at its cold start ([`assemble_for`]).
async fn cold_start_of(function: Function, store: &Arc<dyn Store>, config: &Config) -> Parts {
    assemble_for(
        &[function],
        store.clone(),
        Arc::new(Nothing),
        Arc::new(Nothing),
        None,
        config,
    )
    .await
    .expect("parts")
}

/// A fresh table named after `name`, a card server answering the booking card (from the start
/// when `up`, else once its `up` is set), and the configuration of the agent whose card it serves.
async fn set_up(name: &str, up: bool) -> (Arc<dyn Store>, CardServer, Config) {
    let store = emulator_store(name).await;
    let server = card_server(card()).await;
    server.up.store(up, Ordering::SeqCst);
    let config = config(&server.url);
    (store, server, config)
}

fn booking() -> (Tenant, AgentId) {
    (Tenant::default_tenant(), AgentId::parse("booking").unwrap())
}

fn card() -> Value {
    let mut card: Value = serde_json::from_str(CARD).unwrap();
    card["supportedInterfaces"][0]["url"] = json!("http://127.0.0.1:9/a2a");
    card
}

fn lapse_event() -> SqsEvent {
    serde_json::from_value(json!({ "Records": [{
        "messageId": "sqs-1", "receiptHandle": "r-1",
        "body": json!({ "tenant": "default", "agent": "booking", "messageId": "m-1" }).to_string(),
        "attributes": {}, "messageAttributes": {}, "eventSource": "aws:sqs",
        "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lapses.fifo", "awsRegion": "us-east-1" }] }))
    .unwrap()
}

/// The card cannot be read at either function's cold start. Once it can, the timer's sweep reads
/// it and keeps it in the table; the submitter instance, which never fetches it, picks the kept
/// card up when a lapse message names the agent.
#[tokio::test]
async fn the_sweep_reads_an_unreadable_card_and_every_function_picks_it_up() {
    let (store, server, config) = set_up("cards-sweep", false).await;
    let timer = cold_start(&store, &config).await;
    let submitter = cold_start(&store, &config).await;
    let (t, a) = booking();
    for parts in [&timer, &submitter] {
        assert_eq!(
            parts.watcher.directory.card_health(&t, &a).map(|h| h.state),
            Some(CardState::Unavailable)
        );
        assert!(parts.endpoints.endpoint(&t, &a).is_none());
    }
    server.up.store(true, Ordering::SeqCst);
    let now = SystemClock.now();
    let report = sweep(&timer, now).await;
    assert_eq!((report.cards_tried, report.cards_read), (1, 1));
    assert!(timer.watcher.directory.get(&t, &a).is_some(), "registered");
    assert_eq!(
        timer.endpoints.endpoint(&t, &a).map(|e| e.url),
        Some("http://127.0.0.1:9/a2a".to_owned())
    );
    let (kept, read_at) = store.agent_card(&t, &a).await.unwrap().expect("kept");
    assert_eq!(kept["name"], "Booking agent");
    assert_eq!(read_at, now);

    // The submitter instance: no fetch (the server counts), one keyed read of the table.
    let hits = server.hits.load(Ordering::SeqCst);
    watcher_lambda::submitter::pick_up_cards(&submitter.cards, &lapse_event(), now).await;
    assert_eq!(server.hits.load(Ordering::SeqCst), hits, "no card fetch");
    assert!(submitter.watcher.directory.get(&t, &a).is_some());
    assert!(submitter.endpoints.endpoint(&t, &a).is_some());
    let health = submitter.watcher.directory.card_health(&t, &a).unwrap();
    assert_eq!(
        (health.state, health.read_at),
        (CardState::Ok, Some(read_at))
    );
}

/// The API instance, which loaded no card, picks up the card another function kept before it
/// serves a request.
#[tokio::test]
async fn the_api_picks_up_a_kept_card_before_a_request() {
    let (store, server, config) = set_up("cards-api", false).await;
    let api = cold_start(&store, &config).await;
    let (t, a) = booking();
    assert!(api.watcher.directory.get(&t, &a).is_none());
    // Another function reads the card and keeps it.
    server.up.store(true, Ordering::SeqCst);
    let timer = cold_start(&store, &config).await;
    assert!(timer.watcher.directory.get(&t, &a).is_some());
    let router = watcher_host::aws::api_router(&api, Arc::new(SystemClock));
    let request = axum::http::Request::builder()
        .uri("/v1/agents")
        .body(axum::body::Body::empty())
        .unwrap();
    let _ = tower::ServiceExt::oneshot(router, request).await.unwrap();
    assert!(
        api.watcher.directory.get(&t, &a).is_some(),
        "picked up before the request"
    );
    assert_eq!(
        api.watcher.directory.card_health(&t, &a).map(|h| h.state),
        Some(CardState::Ok)
    );
}

/// Only the timer, which refreshes cards, reads them over the network at its cold start: the API
/// and the submitter use the card kept in the table and make no request to the agent; with no
/// card kept, they read it, as the timer does.
#[tokio::test]
async fn only_the_function_that_refreshes_cards_reads_a_kept_card_at_cold_start() {
    let (store, server, config) = set_up("cards-needs", true).await;
    let (t, a) = booking();
    // No card kept yet: the submitter's cold start reads it, and keeps it.
    let first = cold_start_of(Function::Submitter, &store, &config).await;
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);
    assert!(first.endpoints.endpoint(&t, &a).is_some());
    let kept_at = store.agent_card(&t, &a).await.unwrap().map(|(_, at)| at);
    assert!(kept_at.is_some());
    for function in [Function::Api, Function::Submitter] {
        let parts = cold_start_of(function, &store, &config).await;
        assert_eq!(server.hits.load(Ordering::SeqCst), 1, "{function:?}");
        assert!(
            parts.watcher.directory.get(&t, &a).is_some(),
            "{function:?}"
        );
        let health = parts.watcher.directory.card_health(&t, &a).unwrap();
        assert_eq!((health.state, health.read_at), (CardState::Ok, kept_at));
    }
    let api = cold_start_of(Function::Api, &store, &config).await;
    assert!(
        api.sending.is_none(),
        "the API function builds no A2A client"
    );
    let timer = cold_start_of(Function::Timer, &store, &config).await;
    assert_eq!(server.hits.load(Ordering::SeqCst), 2, "the timer reads it");
    assert!(timer.sending.is_some());
}

/// A card in good health is left alone by the sweep until it is older than the maximum age (a
/// day by default), then read again.
#[tokio::test]
async fn the_sweep_rereads_a_card_older_than_the_maximum_age() {
    let (store, server, config) = set_up("cards-age", true).await;
    let timer = cold_start(&store, &config).await;
    let start = SystemClock.now();
    let hour = start
        .checked_add(jiff::SignedDuration::from_hours(1))
        .unwrap();
    assert_eq!(sweep(&timer, hour).await.cards_tried, 0);
    let day = start
        .checked_add(jiff::SignedDuration::from_hours(24) + jiff::SignedDuration::from_secs(5))
        .unwrap();
    let before = server.hits.load(Ordering::SeqCst);
    let report = sweep(&timer, day).await;
    assert_eq!((report.cards_tried, report.cards_read), (1, 1));
    assert_eq!(server.hits.load(Ordering::SeqCst), before + 1);
    let (t, a) = booking();
    assert_eq!(
        store.agent_card(&t, &a).await.unwrap().map(|(_, at)| at),
        Some(day)
    );
}

/// Slow card servers cost the sweep about one wait, not one per agent: cards are read several
/// at once.
#[tokio::test]
async fn the_sweep_reads_slow_cards_at_once() {
    let store = emulator_store("cards-slow").await;
    let mut toml = String::from("allow_private_endpoints = true\n");
    let mut servers = Vec::new();
    for n in 0..4 {
        let server = card_server_after(card(), std::time::Duration::from_millis(1500)).await;
        toml.push_str(&format!(
            "[[agents]]\nid = \"a{n}\"\ncard = \"{}\"\npush_token = \"push-{n}\"\n",
            server.url
        ));
        servers.push(server);
    }
    let config = Config::from_toml(&toml).expect("config");
    let timer = cold_start(&store, &config).await;
    for s in &servers {
        s.up.store(true, Ordering::SeqCst);
    }
    let started = std::time::Instant::now();
    let report = timer.cards.refresh(SystemClock.now()).await;
    let took = started.elapsed();
    assert_eq!((report.tried, report.read), (4, 4));
    assert!(
        took < std::time::Duration::from_millis(4000),
        "four 1.5 s card servers read one after another would take 6 s; took {took:?}"
    );
}

/// A push through the API function for an agent whose card it never read: answered 503 while
/// no read is due (5 s after the cold start's failed read, then doubling, as `serve` retries),
/// and once one is due the card is read at the push, kept in the table, and the same push is
/// served, without waiting for the timer's sweep.
#[tokio::test]
async fn a_push_reads_a_card_never_read_once_a_read_is_due() {
    let (store, server, config) = set_up("cards-push", false).await;
    let api = cold_start_of(Function::Api, &store, &config).await;
    let (t, a) = booking();
    let health = api.watcher.directory.card_health(&t, &a).expect("health");
    assert_eq!(health.state, CardState::Unavailable);
    let failed = health.failing_since.expect("failing since the cold start");
    let clock = Arc::new(watcher_runtime::clock::FakeClock::new(failed));
    let router = watcher_host::aws::api_router(&api, clock.clone());
    let push = || {
        axum::http::Request::builder()
            .method("POST")
            .uri("/v1/agents/booking/push")
            .header("X-A2A-Notification-Token", "push-1")
            .header("content-type", "application/json")
            .body(axum::body::Body::from(
                json!({ "statusUpdate": { "taskId": "task-1", "contextId": "ctx-1",
                    "status": { "state": "TASK_STATE_WORKING", "timestamp": "2026-09-10T20:00:00Z" } } })
                .to_string(),
            ))
            .unwrap()
    };
    let at = |secs: i64| {
        failed
            .checked_add(jiff::SignedDuration::from_secs(secs))
            .unwrap()
    };
    server.up.store(true, Ordering::SeqCst);
    let hits = server.hits.load(Ordering::SeqCst);

    // 4 s after the failed read: no read is due, the push is refused as before.
    clock.set(at(4));
    let refused = tower::ServiceExt::oneshot(router.clone(), push())
        .await
        .unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(
        server.hits.load(Ordering::SeqCst),
        hits,
        "no read before 5 s"
    );

    // 6 s after: the read is due, the card is read at the push, and the push is served.
    clock.set(at(6));
    let served = tower::ServiceExt::oneshot(router.clone(), push())
        .await
        .unwrap();
    assert_eq!(served.status(), 200);
    assert_eq!(server.hits.load(Ordering::SeqCst), hits + 1, "one read");
    assert!(api.watcher.directory.get(&t, &a).is_some(), "registered");
    assert_eq!(
        api.watcher.directory.card_health(&t, &a).map(|h| h.state),
        Some(CardState::Ok)
    );
    let (kept, read_at) = store.agent_card(&t, &a).await.unwrap().expect("kept");
    assert_eq!(kept["name"], "Booking agent");
    assert_eq!(read_at, at(6));

    // Registered now: later pushes read nothing.
    clock.set(at(600));
    let again = tower::ServiceExt::oneshot(router, push()).await.unwrap();
    assert_eq!(again.status(), 200);
    assert_eq!(server.hits.load(Ordering::SeqCst), hits + 1);
}

/// While the card still cannot be read, reads at pushes back off from the first failure: one
/// read is due 5 s after it, the next 5 s after that, then 10 s, 20 s (the wait is as long as
/// the card has been failing, at most 5 minutes), and each refusal says when the next read is.
#[tokio::test]
async fn reads_at_pushes_back_off_while_the_card_cannot_be_read() {
    let (store, server, config) = set_up("cards-push-backoff", false).await;
    let api = cold_start_of(Function::Api, &store, &config).await;
    let (t, a) = booking();
    let failed = api
        .watcher
        .directory
        .card_health(&t, &a)
        .and_then(|h| h.failing_since)
        .expect("failing since the cold start");
    let at = |secs: i64| {
        failed
            .checked_add(jiff::SignedDuration::from_secs(secs))
            .unwrap()
    };
    let hits = server.hits.load(Ordering::SeqCst);
    let cards = &api.cards;
    // Pushes every second for 45 s: reads at 5, 10, 20 and 40 s.
    let mut read_at = Vec::new();
    for s in 0..=45 {
        let before = server.hits.load(Ordering::SeqCst);
        assert!(!cards.read_for_push(&a, at(s)).await, "the card is down");
        if server.hits.load(Ordering::SeqCst) > before {
            read_at.push(s);
        }
    }
    assert_eq!(read_at, [5, 10, 20, 40]);
    assert_eq!(server.hits.load(Ordering::SeqCst), hits + 4);
    let health = api.watcher.directory.card_health(&t, &a).unwrap();
    assert_eq!(health.state, CardState::Unavailable);
    assert_eq!(health.next_try_at, Some(at(80)), "said in the 503's detail");
    assert_eq!(
        watcher_host::aws::cards::push_retry_wait(at(0), at(1_000)),
        jiff::SignedDuration::from_secs(300)
    );
}
