//! Pages of the list routes (issue 10; docs/interpretation.md "Pages of the list routes"),
//! driven with `oneshot` over the memory and the SQLite store: 2,500 lapse tasks paged through
//! `GET /v1/lapses` come back each exactly once, every page under 1 MB; `limit` and `cursor`
//! are checked (400 problem+json naming the parameter); the filters `agent`, `delivery` and
//! `since` hold; rejections and agents are paged too.

use std::collections::BTreeSet;
use std::sync::Arc;

use axum::http::StatusCode;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::Notify;
use watcher_core::engine::Rejection;
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::settings::Settings;
use watcher_core::time::{Instant, IsoDuration};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry, Store};
use watcher_runtime::watcher::Watcher;
use watcher_store_sqlite::SqliteStore;

use crate::common::{operator_request, operator_router, three_agents};

struct Harness {
    app: Router,
    store: Arc<dyn Store>,
}

fn harness(store: Arc<dyn Store>) -> Harness {
    let dyn_store: Arc<dyn Store> = Arc::clone(&store);
    let watcher = Watcher::new(dyn_store, three_agents(), Settings::default());
    let app = operator_router(watcher, Arc::new(Notify::new()));
    Harness { app, store }
}

async fn get(app: &Router, uri: &str) -> (StatusCode, String, Value, usize) {
    operator_request(app, "GET", uri, None).await
}

fn t0() -> Instant {
    Instant::parse("2026-09-10T12:00:00Z").unwrap()
}

/// Lapse task `i`: agent `booking` for even `i`, `ops-bot` for odd; lapsed `i` seconds after
/// t0; every 5th sent.
fn entry(i: usize) -> OutboxEntry {
    let at = t0().plus(IsoDuration::parse(&format!("PT{i}S")).unwrap());
    OutboxEntry {
        delivery: if i.is_multiple_of(5) {
            DeliveryState::Sent
        } else {
            DeliveryState::Queued
        },
        ..OutboxEntry::queued(
            Tenant::default_tenant(),
            AgentId::parse(if i.is_multiple_of(2) {
                "booking"
            } else {
                "ops-bot"
            })
            .unwrap(),
            format!("lapse:exp-{i}:overdue:x"),
            ExpectationId::parse(format!("exp-{i}")).unwrap(),
            LapseKind::Overdue,
            at,
            json!({}),
        )
    }
}

async fn fill(store: &Arc<dyn Store>, entries: Vec<OutboxEntry>) {
    for chunk in entries.chunks(500) {
        store
            .commit(
                &Tenant::default_tenant(),
                Commit {
                    outbox: chunk.to_vec(),
                    ..Commit::default()
                },
            )
            .await
            .unwrap();
    }
}

/// Follows `nextCursor` from `first` until it is null; answers the messageIds in order and the
/// number of pages. Every page is 200, at most `limit` entries, under 1 MB.
async fn walk(app: &Router, first: &str, limit: usize) -> (Vec<String>, usize) {
    walk_list(app, first, ("lapses", "messageId"), limit).await
}

/// [`walk`] over the array `list.0` of each page, answering each entry's `list.1`.
async fn walk_list(
    app: &Router,
    first: &str,
    (member, id): (&str, &str),
    limit: usize,
) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut uri = first.to_owned();
    let mut pages = 0;
    loop {
        let (status, _, body, bytes) = get(app, &uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        assert!(bytes <= 1_000_000, "{uri}: a page of {bytes} bytes");
        let entries = body[member].as_array().unwrap();
        assert!(entries.len() <= limit, "{uri}: {} entries", entries.len());
        ids.extend(entries.iter().map(|l| l[id].as_str().unwrap().to_owned()));
        pages += 1;
        assert!(pages < 1000, "nextCursor never ends");
        match &body["nextCursor"] {
            Value::Null => return (ids, pages),
            Value::String(c) => {
                let sep = if first.contains('?') { '&' } else { '?' };
                uri = format!("{first}{sep}cursor={c}");
            }
            other => panic!("nextCursor: {other}"),
        }
    }
}

async fn lapse_pages(store: Arc<dyn Store>) {
    let h = harness(store);
    let all: Vec<OutboxEntry> = (0..2500).map(entry).collect();
    fill(&h.store, all.clone()).await;
    let names = |pick: &dyn Fn(&OutboxEntry) -> bool| -> Vec<String> {
        all.iter()
            .filter(|o| pick(o))
            .map(|o| o.message_id.clone())
            .collect()
    };

    // Default limit: 100 a page, 25 pages, each lapse task exactly once, in order of lapse.
    let (ids, pages) = walk(&h.app, "/v1/lapses", 100).await;
    assert_eq!(ids, names(&|_| true));
    assert_eq!(ids.iter().collect::<BTreeSet<_>>().len(), 2500);
    assert_eq!(pages, 25);
    let (ids, pages) = walk(&h.app, "/v1/lapses?limit=1000", 1000).await;
    assert_eq!(ids, names(&|_| true));
    assert_eq!(pages, 3);

    // Filters.
    let (ids, _) = walk(&h.app, "/v1/lapses?agent=ops-bot&limit=300", 300).await;
    assert_eq!(ids, names(&|o| o.agent.as_str() == "ops-bot"));
    let (ids, _) = walk(&h.app, "/v1/lapses?delivery=sent&limit=50", 50).await;
    assert_eq!(ids, names(&|o| o.delivery == DeliveryState::Sent));
    assert_eq!(ids.len(), 500);
    let since = t0().plus(IsoDuration::parse("PT2400S").unwrap());
    let (ids, _) = walk(
        &h.app,
        &format!("/v1/lapses?since={since}&delivery=queued&agent=booking"),
        100,
    )
    .await;
    assert_eq!(
        ids,
        names(&|o| o.lapsed_at >= since
            && o.delivery == DeliveryState::Queued
            && o.agent.as_str() == "booking")
    );
    assert_eq!(ids.len(), 40);

    // Bad parameters: 400 problem+json naming the parameter; nothing else changes.
    for (uri, name) in [
        ("/v1/lapses?limit=0", "`limit`"),
        ("/v1/lapses?limit=1001", "`limit`"),
        ("/v1/lapses?limit=ten", "`limit`"),
        ("/v1/lapses?cursor=nonsense", "`cursor`"),
        ("/v1/lapses?cursor=l1.zz", "`cursor`"),
        ("/v1/lapses?delivery=lost", "`delivery`"),
        ("/v1/lapses?since=yesterday", "`since`"),
        ("/v1/lapses?agent=", "`agent`"),
        ("/v1/lapses?page=2", "`page`"),
    ] {
        let (status, content_type, body, _) = get(&h.app, uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert_eq!(content_type, "application/problem+json", "{uri}");
        let detail = body["detail"].as_str().unwrap();
        assert!(detail.contains(name), "{uri}: {detail}");
    }
}

#[tokio::test]
async fn lapse_pages_over_the_memory_store() {
    lapse_pages(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn lapse_pages_over_sqlite() {
    lapse_pages(Arc::new(SqliteStore::memory().unwrap())).await;
}

/// Large lapse tasks (a 4 KB lastError each): a page of 1,000 would be about 4.5 MB, so pages
/// end before 1 MB with a nextCursor, and still give each lapse task exactly once.
#[tokio::test]
async fn a_page_stays_under_a_megabyte() {
    let h = harness(Arc::new(SqliteStore::memory().unwrap()));
    let all: Vec<OutboxEntry> = (0..1000)
        .map(|i| {
            let mut o = entry(i);
            o.last_error = Some("e".repeat(4096));
            o
        })
        .collect();
    fill(&h.store, all.clone()).await;
    let (ids, pages) = walk(&h.app, "/v1/lapses?limit=1000", 1000).await;
    assert_eq!(
        ids,
        all.iter().map(|o| o.message_id.clone()).collect::<Vec<_>>()
    );
    assert!(pages >= 5, "{pages} pages");
}

/// Rejections and agents are paged with `limit` and `cursor` too.
#[tokio::test]
async fn rejections_and_agents_are_paged() {
    let h = harness(Arc::new(SqliteStore::memory().unwrap()));
    let rejections: Vec<Rejection> = (0..250)
        .map(|i| Rejection {
            agent: AgentId::parse("booking").unwrap(),
            expectation_id: Some(format!("exp-{i}")),
            reason: format!("reason {i}"),
            task_id: None,
            warning: false,
            at: t0(),
        })
        .collect();
    h.store
        .commit(
            &Tenant::default_tenant(),
            Commit {
                rejections,
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let (seen, _) = walk_list(
        &h.app,
        "/v1/agents/booking/rejections",
        ("rejections", "expectationId"),
        100,
    )
    .await;
    let expected: Vec<String> = (0..250).map(|i| format!("exp-{i}")).collect();
    assert_eq!(seen, expected, "each rejection once, oldest first");
    let (status, _, body, _) = get(&h.app, "/v1/agents/booking/rejections?limit=5000").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["detail"].as_str().unwrap().contains("`limit`"));

    // Three agents, one a page: three pages of at most one.
    let (agents, pages) = walk_list(&h.app, "/v1/agents?limit=1", ("agents", "agentId"), 1).await;
    assert_eq!(agents, ["booking", "ops-bot", "quiet"]);
    assert_eq!(pages, 3);
    let (status, _, body, _) = get(&h.app, "/v1/agents?cursor=l1.10").await;
    assert_eq!(
        status,
        StatusCode::BAD_REQUEST,
        "a lapse cursor is not an agents cursor"
    );
    assert!(body["detail"].as_str().unwrap().contains("`cursor`"));
}

/// The states `GET /v1/lapses?delivery=` filters by, as docs/openapi.json declares them: the
/// values of the component the parameter's schema refers to, and of the one the answer's
/// `delivery` member refers to.
fn documented_delivery_states() -> (Vec<String>, Vec<String>) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/openapi.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let values = |schema: &Value| -> Vec<String> {
        let name = schema["$ref"]
            .as_str()
            .and_then(|r| r.strip_prefix("#/components/schemas/"))
            .unwrap_or_else(|| panic!("not a reference into components.schemas: {schema}"));
        let component = &doc["components"]["schemas"][name];
        let listed = match component["oneOf"].as_array() {
            Some(one_of) => one_of.iter().map(|v| v["const"].clone()).collect(),
            None => component["enum"].as_array().cloned().unwrap_or_default(),
        };
        listed
            .iter()
            .map(|v| v.as_str().expect("a state is a string").to_owned())
            .collect()
    };
    let parameter = doc["paths"]["/v1/lapses"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "delivery")
        .expect("the delivery parameter")["schema"]
        .clone();
    let member = doc["components"]["schemas"]["LapseView"]["properties"]["delivery"].clone();
    (values(&parameter), values(&member))
}

/// Every delivery state the list shows is a filter, and the filter accepts exactly the values
/// docs/openapi.json declares for it (the same as the answer's `delivery` member may take):
/// each gives exactly its lapse tasks, on the memory and the SQLite store; anything else is a 400
/// naming `delivery`.
async fn every_shown_state_filters(store: Arc<dyn Store>) {
    let (filterable, shown) = documented_delivery_states();
    assert_eq!(
        filterable, shown,
        "the filter's values are the states the list shows"
    );
    let names: Vec<&str> = DeliveryState::ALL.iter().map(|d| d.as_str()).collect();
    assert_eq!(
        filterable, names,
        "docs/openapi.json is generated from DeliveryState"
    );
    assert!(
        filterable.contains(&"withdrawn".to_owned())
            && filterable.contains(&"unaddressed".to_owned())
    );

    let h = harness(store);
    // Lapse task i is in state ALL[i % 5], for both agents.
    let all: Vec<OutboxEntry> = (0..40)
        .map(|i| OutboxEntry {
            delivery: DeliveryState::ALL[i % DeliveryState::ALL.len()],
            ..entry(i)
        })
        .collect();
    fill(&h.store, all.clone()).await;
    for state in &filterable {
        let (ids, _) = walk(&h.app, &format!("/v1/lapses?delivery={state}&limit=3"), 3).await;
        let want: Vec<String> = all
            .iter()
            .filter(|o| o.delivery.as_str() == state)
            .map(|o| o.message_id.clone())
            .collect();
        assert_eq!(ids, want, "delivery={state}");
        assert_eq!(ids.len(), 8, "delivery={state}");
        let (status, _, body, _) = get(
            &h.app,
            &format!("/v1/lapses?delivery={state}&agent=ops-bot"),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let shown: Vec<&str> = body["lapses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["delivery"].as_str().unwrap())
            .collect();
        assert_eq!(shown, [state.as_str(); 4], "delivery={state}&agent=ops-bot");
    }
    for bad in ["lost", "Withdrawn", "UNADDRESSED", ""] {
        let (status, content_type, body, _) =
            get(&h.app, &format!("/v1/lapses?delivery={bad}")).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad:?}: {body}");
        assert_eq!(content_type, "application/problem+json");
        let detail = body["detail"].as_str().unwrap();
        assert!(
            detail.contains("`delivery`") && detail.contains("unaddressed"),
            "{bad:?}: {detail}"
        );
    }
}

#[tokio::test]
async fn every_shown_state_filters_over_the_memory_store() {
    every_shown_state_filters(Arc::new(MemoryStore::new())).await;
}

#[tokio::test]
async fn every_shown_state_filters_over_sqlite() {
    every_shown_state_filters(Arc::new(SqliteStore::memory().unwrap())).await;
}
