//! Card lookup (serve.md "Agents are independent"): a base URL is tried at
//! `/.well-known/agent-card.json`, then at the legacy `/.well-known/agent.json`; a 0.3 card is
//! given the `supportedInterfaces` it implies.

use axum::routing::get;
use axum::{Json, Router};
use serde_json::{json, Value};
use watcher_host::agents::fetch_card;

/// Serves `card` at `path` only, on a loopback port; answers the base URL.
async fn serve_card_at(path: &'static str, card: Value) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind a loopback port");
    let addr = listener.local_addr().expect("an address");
    let app = Router::new().route(path, get(move || async move { Json(card) }));
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn v03_card(url: &str) -> Value {
    json!({ "name": "legacy", "description": "a 0.3 agent", "version": "1",
            "url": url, "preferredTransport": "JSONRPC", "protocolVersion": "0.3",
            "capabilities": {}, "skills": [] })
}

#[tokio::test]
async fn a_card_only_at_the_legacy_path_is_found() {
    let base = serve_card_at(
        "/.well-known/agent.json",
        v03_card("http://127.0.0.1:9/a2a"),
    )
    .await;
    let (card, fetched) = fetch_card(&base).await.expect("found at the legacy path");
    assert!(fetched);
    assert_eq!(card["name"], "legacy");
    assert_eq!(
        card["supportedInterfaces"],
        json!([{ "url": "http://127.0.0.1:9/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "0.3" }])
    );
}

#[tokio::test]
async fn the_current_path_is_tried_first() {
    let base = serve_card_at(
        "/.well-known/agent-card.json",
        json!({ "name": "current", "supportedInterfaces": [] }),
    )
    .await;
    let (card, _) = fetch_card(&format!("{base}/")).await.expect("found");
    assert_eq!(card["name"], "current");
}

#[tokio::test]
async fn a_card_at_neither_path_names_both() {
    let base = serve_card_at("/elsewhere", json!({})).await;
    let err = format!("{:#}", fetch_card(&base).await.expect_err("not found"));
    let current = err.find("/.well-known/agent-card.json").expect(&err);
    let legacy = err.find("/.well-known/agent.json").expect(&err);
    assert!(
        current < legacy,
        "the current path's error comes first, the legacy one's after: {err}"
    );
    assert!(err.contains("404"), "{err}");
}

/// The descriptor key of a card is the protocol version of the interface delivery and the probe
/// speak to: the first 1.x JSONRPC interface even when a 0.3 one is listed before it.
#[test]
fn the_descriptor_key_is_the_interface_delivery_speaks_to() {
    use watcher_host::deployment::card_protocol_version;
    let card = |interfaces: Value| {
        json!({ "name": "hybrid", "description": "d", "version": "1", "capabilities": {},
                "supportedInterfaces": interfaces })
    };
    let hybrid = card(json!([
        { "url": "http://127.0.0.1:9/v03", "protocolBinding": "JSONRPC", "protocolVersion": "0.3" },
        { "url": "http://127.0.0.1:9/v1", "protocolBinding": "JSONRPC", "protocolVersion": "1.0" },
    ]));
    assert_eq!(card_protocol_version(&hybrid), "1.0");
    let parsed: a2a_types::AgentCard = serde_json::from_value(hybrid).unwrap();
    let (i, p) = watcher_host::agents::jsonrpc_interface(&parsed).unwrap();
    assert_eq!(
        (i.url.as_str(), p),
        (
            "http://127.0.0.1:9/v1",
            watcher_delivery::endpoint::Protocol::V1
        )
    );
    assert_eq!(
        card_protocol_version(&v03_card("http://127.0.0.1:9/a2a")),
        "0.3"
    );
}
