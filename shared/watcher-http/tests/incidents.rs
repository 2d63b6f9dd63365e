//! Incidents as operators see them (`GET /v1/incidents`, `POST /v1/incidents/acknowledge`),
//! driven with `oneshot` over the memory store and SQLite: the agents' lanes merged oldest
//! first and walked page by page without a gap or a repeat (ties within and across agents
//! included), the filters, an acknowledgement resolving once (200, then 409), and the
//! problems naming the field at fault.

use std::sync::Arc;

use axum::http::StatusCode;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::Notify;
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Commit, OutboxEntry, Store};
use watcher_runtime::watcher::Watcher;
use watcher_store_sqlite::SqliteStore;

use crate::common::{operator_request, operator_router, send, three_agents};

/// The router's clock (`operator_router`).
const NOW: &str = "2026-09-11T12:00:00Z";

fn at(t: &str) -> Instant {
    Instant::parse(t).unwrap()
}

/// Lapse task `id` of `agent`, lapse `kind`, lapsed at `lapsed_at`; its request carries the
/// lapse block (subject `shipment S-{id}`).
fn entry(agent: &str, id: &str, kind: LapseKind, lapsed_at: &str) -> OutboxEntry {
    let block = json!({
        "expectationId": format!("exp-{id}"),
        "kind": "shipment.arrival",
        "subject": { "type": "shipment", "id": format!("S-{id}") },
        "expects": "shipment.arrived",
        "lapse": kind,
        "projectedDueAt": lapsed_at,
        "dueAt": lapsed_at,
        "lapsedAt": lapsed_at,
        "lineage": 0,
    });
    OutboxEntry::queued(
        Tenant::default_tenant(),
        AgentId::parse(agent).unwrap(),
        id.into(),
        ExpectationId::parse(format!("exp-{id}")).unwrap(),
        kind,
        at(lapsed_at),
        json!({ "message": { "metadata": { watcher_core::EXPECTATIONS_URI: { "lapse": block } } } }),
    )
}

/// Eleven lapse tasks over the three agents: ties at 08:00 across agents and within `booking`.
fn entries() -> Vec<OutboxEntry> {
    use LapseKind::{Overdue, Skipped, Stalled};
    vec![
        entry("ops-bot", "o1", Overdue, "2026-09-11T08:00:00Z"),
        entry("booking", "b1", Overdue, "2026-09-11T08:00:00Z"),
        entry("booking", "b2", Stalled, "2026-09-11T08:00:00Z"),
        entry("booking", "b3", Overdue, "2026-09-11T08:00:00Z"),
        entry("quiet", "q1", Skipped, "2026-09-11T07:00:00Z"),
        entry("booking", "b4", Overdue, "2026-09-11T09:00:00Z"),
        entry("ops-bot", "o2", Stalled, "2026-09-11T09:00:00Z"),
        entry("quiet", "q2", Overdue, "2026-09-11T10:00:00Z"),
        entry("booking", "b5", Overdue, "2026-09-11T11:00:00Z"),
        entry("ops-bot", "o3", Overdue, "2026-09-11T11:30:00Z"),
        entry("booking", "b6", Skipped, "2026-09-11T11:59:00Z"),
    ]
}

/// The merged order: by lapse, then agent id, then the store's order within the agent.
const ORDER: [&str; 11] = [
    "q1", "b1", "b2", "b3", "o1", "b4", "o2", "q2", "b5", "o3", "b6",
];

async fn app_over(store: Arc<dyn Store>) -> Router {
    store
        .commit(
            &Tenant::default_tenant(),
            Commit {
                outbox: entries(),
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let watcher = Watcher::new(store, three_agents(), Settings::default());
    operator_router(watcher, Arc::new(Notify::new()))
}

fn stores() -> Vec<(&'static str, Arc<dyn Store>)> {
    vec![
        ("memory", Arc::new(MemoryStore::new())),
        ("sqlite", Arc::new(SqliteStore::memory().unwrap())),
    ]
}

async fn get(app: &Router, uri: &str) -> (StatusCode, Value) {
    let (status, _, body, _) = operator_request(app, "GET", uri, None).await;
    (status, body)
}

async fn ack(app: &Router, body: Value) -> (StatusCode, String, Value) {
    let (status, content_type, body, _) =
        operator_request(app, "POST", "/v1/incidents/acknowledge", Some(body)).await;
    (status, content_type, body)
}

/// Every page of `query` (`limit` given), following `nextCursor`: the messageIds in order and
/// the number of pages.
async fn walk(app: &Router, query: &str) -> (Vec<String>, usize) {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    for pages in 1..=50 {
        let uri = match &cursor {
            Some(c) => format!("/v1/incidents?{query}&cursor={c}"),
            None => format!("/v1/incidents?{query}"),
        };
        let (status, body) = get(app, &uri).await;
        assert_eq!(status, StatusCode::OK, "{uri}: {body}");
        for i in body["incidents"].as_array().unwrap() {
            ids.push(i["messageId"].as_str().unwrap().to_owned());
        }
        match body["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return (ids, pages),
        }
    }
    panic!("{query}: more than 50 pages");
}

#[tokio::test]
async fn pages_merge_the_agents_oldest_first_without_gap_or_repeat() {
    for (name, store) in stores() {
        let app = app_over(store).await;
        for limit in [1, 2, 3, 4, 100] {
            let (ids, _) = walk(&app, &format!("limit={limit}")).await;
            assert_eq!(ids, ORDER, "{name}, limit {limit}");
        }
        // One agent's lane; one kind over all of them.
        let (ids, _) = walk(&app, "agent=booking&limit=2").await;
        assert_eq!(ids, ["b1", "b2", "b3", "b4", "b5", "b6"], "{name}");
        let (ids, _) = walk(&app, "kind=stalled&limit=1").await;
        assert_eq!(ids, ["b2", "o2"], "{name}");
        let (ids, _) = walk(&app, "kind=overdue&state=open&limit=2").await;
        assert_eq!(ids, ["b1", "b3", "o1", "b4", "q2", "b5", "o3"], "{name}");
    }
}

#[tokio::test]
async fn an_incident_shows_its_owner_age_subject_and_no_resolution_while_open() {
    for (name, store) in stores() {
        let app = app_over(store).await;
        let (status, body) = get(&app, "/v1/incidents?limit=1").await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(
            body["incidents"][0],
            json!({
                "messageId": "q1",
                "expectationId": "exp-q1",
                "agent": "quiet",
                "kind": "skipped",
                "lapsedAt": "2026-09-11T07:00:00Z",
                // 07:00 to the clock's 12:00.
                "ageSeconds": 5 * 3600,
                "subject": { "type": "shipment", "id": "S-q1" },
                "expectationKind": "shipment.arrival",
                "delivery": "queued",
            }),
            "{name}"
        );
        assert!(body["nextCursor"].is_string(), "{name}");
    }
}

#[tokio::test]
async fn an_acknowledgement_resolves_once_and_moves_the_incident_to_resolved() {
    for (name, store) in stores() {
        let app = app_over(store).await;
        let (status, _, body) = ack(
            &app,
            json!({ "agent": "booking", "messageId": "b2", "by": "ops@example.com" }),
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{name}: {body}");
        assert_eq!(body["messageId"], "b2");
        assert_eq!(
            body["resolved"],
            json!({ "at": NOW, "reason": "acknowledged", "by": "ops@example.com" }),
            "{name}"
        );
        // Open from 08:00 to the acknowledgement at 12:00.
        assert_eq!(body["ageSeconds"], 4 * 3600, "{name}");

        let (status, content_type, body) = ack(
            &app,
            json!({ "agent": "booking", "messageId": "b2", "by": "someone-else" }),
        )
        .await;
        assert_eq!(status, StatusCode::CONFLICT, "{name}: {body}");
        assert_eq!(content_type, "application/problem+json");
        let detail = body["detail"].as_str().unwrap();
        assert!(
            detail.contains("acknowledged by ops@example.com") && detail.contains(NOW),
            "{name}: {detail}"
        );
        // The incident as it stands, the first acknowledgement in it (RFC 9457 extension member).
        assert_eq!(body["incident"]["messageId"], "b2", "{name}: {body}");
        assert_eq!(
            body["incident"]["resolved"],
            json!({ "at": NOW, "reason": "acknowledged", "by": "ops@example.com" }),
            "{name}: {body}"
        );

        let (ids, _) = walk(&app, "limit=3").await;
        let open: Vec<&str> = ORDER.iter().copied().filter(|i| *i != "b2").collect();
        assert_eq!(ids, open, "{name}");
        let (status, body) = get(&app, "/v1/incidents?state=resolved").await;
        assert_eq!(status, StatusCode::OK, "{name}");
        assert_eq!(body["incidents"].as_array().unwrap().len(), 1, "{name}");
        assert_eq!(body["incidents"][0]["messageId"], "b2");
        assert_eq!(body["incidents"][0]["resolved"]["reason"], "acknowledged");
        assert_eq!(body["nextCursor"], Value::Null);
    }
}

#[tokio::test]
async fn acknowledging_the_last_row_read_loses_nothing_of_the_walk() {
    for (name, store) in stores() {
        let app = app_over(store).await;
        // The first page ends at b1 (08:00, the first of booking's three at that instant).
        let (_, page) = get(&app, "/v1/incidents?limit=2").await;
        assert_eq!(ids(&page["incidents"]), ["q1", "b1"], "{name}");
        let (status, _, _) = ack(
            &app,
            json!({ "agent": "booking", "messageId": "b1", "by": "ops@example.com" }),
        )
        .await;
        assert_eq!(status, StatusCode::OK);
        let cursor = page["nextCursor"].as_str().unwrap();
        let (_, rest) = get(&app, &format!("/v1/incidents?limit=100&cursor={cursor}")).await;
        assert_eq!(
            ids(&rest["incidents"]),
            ORDER[2..].to_vec(),
            "{name}: b2 and b3 follow"
        );
    }
}

fn ids(list: &Value) -> Vec<String> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|i| i["messageId"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn bad_requests_are_problems_naming_the_field() {
    let app = app_over(Arc::new(MemoryStore::new())).await;
    for (uri, field) in [
        ("/v1/incidents?state=closed", "`state`"),
        ("/v1/incidents?kind=late", "`kind`"),
        ("/v1/incidents?agent=", "`agent`"),
        ("/v1/incidents?limit=0", "`limit`"),
        ("/v1/incidents?colour=red", "`colour`"),
        ("/v1/incidents?cursor=l1.10", "`cursor`"),
    ] {
        let (status, body) = get(&app, uri).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{uri}: {body}");
        assert!(
            body["detail"].as_str().unwrap().contains(field),
            "{uri}: {body}"
        );
    }
    // A cursor that asks for an unbounded read (its ordinal) is refused, not read.
    let huge = format!(
        "o\n{}\n{}\nbooking\nb1",
        at("2026-09-11T08:00:00Z").as_nanos(),
        usize::MAX
    );
    let hex: String = huge.bytes().map(|b| format!("{b:02x}")).collect();
    let (status, body) = get(&app, &format!("/v1/incidents?cursor=i1.{hex}")).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["detail"].as_str().unwrap().contains("`cursor`"),
        "{body}"
    );
    // A cursor of the open list is refused by the resolved one.
    let (_, body) = get(&app, "/v1/incidents?limit=1").await;
    let cursor = body["nextCursor"].as_str().unwrap().to_owned();
    let (status, body) = get(
        &app,
        &format!("/v1/incidents?state=resolved&cursor={cursor}"),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(body["detail"].as_str().unwrap().contains("state=resolved"));

    for (body, status, field) in [
        (
            json!({ "agent": "booking", "messageId": "b1", "by": " " }),
            400,
            "`by`",
        ),
        (
            json!({ "agent": "booking", "messageId": "b1", "by": "x".repeat(257) }),
            400,
            "`by`",
        ),
        (
            json!({ "agent": "booking", "messageId": "b1" }),
            400,
            "`by`",
        ),
        (
            json!({ "agent": "", "messageId": "b1", "by": "me" }),
            400,
            "`agent`",
        ),
        (
            json!({ "agent": "booking", "messageId": "", "by": "me" }),
            400,
            "`messageId`",
        ),
        (
            json!({ "agent": "booking", "messageId": "b1", "by": "me", "note": 1 }),
            400,
            "note",
        ),
        (
            json!({ "agent": "booking", "messageId": "nope", "by": "me" }),
            404,
            "\"nope\"",
        ),
        (
            json!({ "agent": "ops-bot", "messageId": "b1", "by": "me" }),
            404,
            "\"b1\"",
        ),
    ] {
        let (got, content_type, answer) = ack(&app, body.clone()).await;
        assert_eq!(got.as_u16(), status, "{body}: {answer}");
        assert_eq!(content_type, "application/problem+json");
        assert!(
            answer["detail"].as_str().unwrap().contains(field),
            "{body}: {answer}"
        );
    }
    // Nothing above resolved anything.
    let (ids, _) = walk(&app, "limit=100").await;
    assert_eq!(ids, ORDER);
}

#[tokio::test]
async fn only_an_operator_reads_or_acknowledges() {
    let app = app_over(Arc::new(MemoryStore::new())).await;
    let (status, _, _) = send(&app, "GET", "/v1/incidents", ("x-none", "1"), None).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let body = json!({ "agent": "booking", "messageId": "b1", "by": "me" });
    let (status, _, _) = send(
        &app,
        "POST",
        "/v1/incidents/acknowledge",
        ("authorization", "Bearer not-a-token"),
        Some(&body),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
}

/// A form post to `/ui/incidents/acknowledge` as the operator (bearer), with `Sec-Fetch-Site`.
async fn ui_acknowledge(app: &Router, form: &str, site: &str) -> (StatusCode, String) {
    use axum::http::{header, Request};
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let request = Request::post("/ui/incidents/acknowledge")
        .header(
            header::AUTHORIZATION,
            format!("Bearer {}", crate::common::OPERATOR),
        )
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header("sec-fetch-site", site)
        .body(axum::body::Body::from(form.to_owned()))
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let location = response
        .headers()
        .get(header::LOCATION)
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    let _ = response.into_body().collect().await.unwrap();
    (status, location)
}

#[tokio::test]
async fn the_page_lists_open_incidents_and_acknowledges_in_the_operators_name() {
    let app = app_over(Arc::new(MemoryStore::new())).await;
    let (status, _, bytes) = send(
        &app,
        "GET",
        "/ui/incidents",
        (
            "authorization",
            &format!("Bearer {}", crate::common::OPERATOR),
        ),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let html = String::from_utf8_lossy(&bytes);
    assert!(html.contains("<table id=\"incidents\">"), "{html}");
    // q1, the oldest, first: 5 hours old, owned by `quiet`, with its subject.
    let q1 = html.find("exp-q1").unwrap();
    assert!(q1 < html.find("exp-b1").unwrap());
    assert!(html.contains("<td>5h 0m</td><td>quiet</td>"), "{html}");
    assert!(html.contains("shipment S-q1"), "{html}");
    assert_eq!(html.matches("name=\"message_id\"").count(), ORDER.len());
    assert!(html.contains("No notification channel has run"), "{html}");

    // A form from another site is refused, and resolves nothing.
    let (status, _) = ui_acknowledge(&app, "agent=booking&message_id=b2", "cross-site").await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let (ids, _) = walk(&app, "limit=100").await;
    assert_eq!(ids, ORDER);

    let (status, location) =
        ui_acknowledge(&app, "agent=booking&message_id=b2", "same-origin").await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    assert_eq!(location, "/ui/incidents");
    let (_, body) = get(&app, "/v1/incidents?state=resolved").await;
    assert_eq!(
        body["incidents"][0]["resolved"],
        json!({ "at": NOW, "reason": "acknowledged", "by": "ops-desk" })
    );
    // Twice: the page says it was resolved already.
    let (status, _) = ui_acknowledge(&app, "agent=booking&message_id=b2", "same-origin").await;
    assert_eq!(status, StatusCode::CONFLICT);
}
