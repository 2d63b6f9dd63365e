//! The server's root, `GET /`: a person opening the watcher's address in a browser is sent to
//! the operator's page (`303 See Other` to `/ui`); a program asking for JSON (`Accept:
//! application/json`) gets a small index of the API. And `GET /openapi.json`, the OpenAPI 3.1
//! document the index links to (the checked-in `docs/openapi.json`). Both public: no credential.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use crate::schemas::SCHEMAS;

/// The OpenAPI document of every route, served at [`OPENAPI_PATH`].
pub const OPENAPI: &str = include_str!("../../../docs/openapi.json");

/// Where [`OPENAPI`] is served.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// Where a browser is sent from `/`.
pub const UI_PATH: &str = "/ui";

/// The quality (RFC 9110 §12.4.2, 0 to 1) `accept` gives `media` (`type/subtype`, lower case):
/// that of the most specific range that covers it (`type/subtype` 3, then `type/*` 2, then `*/*`
/// 1), with that specificity; `(0, 0.0)` when none does.
fn quality(accept: &str, media: &str) -> (u8, f32) {
    let (kind, _) = media.split_once('/').unwrap_or((media, ""));
    let mut best: Option<(u8, f32)> = None;
    for range in accept.split(',') {
        let mut params = range.split(';');
        let name = params.next().unwrap_or("").trim().to_ascii_lowercase();
        let specificity = if name == media {
            3
        } else if name.strip_suffix("/*") == Some(kind) {
            2
        } else if name == "*/*" {
            1
        } else {
            continue;
        };
        let q = params
            .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0)
            .clamp(0.0, 1.0);
        if best.is_none_or(|(s, _)| specificity > s) {
            best = Some((specificity, q));
        }
    }
    best.unwrap_or((0, 0.0))
}

/// Whether the request asks for JSON rather than a page: its `Accept` names `application/json`
/// (or `application/*`) with a quality above zero and at least that of `text/html`. A browser's
/// `Accept` (`text/html,…,*/*;q=0.8`), `*/*` and a missing one get the page.
pub fn wants_json(headers: &HeaderMap) -> bool {
    let accept = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    let (named, json) = quality(&accept, "application/json");
    named >= 2 && json > 0.0 && json >= quality(&accept, "text/html").1
}

/// The JSON index: `{ "name", "version", "links": { "ui", "health", "openapi", "schemas": {
/// NAME: "/v1/schemas/NAME.json" } } }`, every link a path on this server.
pub fn index() -> Value {
    let schemas: Map<String, Value> = SCHEMAS
        .iter()
        .map(|(name, _)| (name.to_string(), json!(format!("/v1/schemas/{name}.json"))))
        .collect();
    json!({
        "name": "a2a-watcher",
        "version": env!("CARGO_PKG_VERSION"),
        "links": {
            "ui": UI_PATH,
            "health": "/healthz",
            "openapi": OPENAPI_PATH,
            "schemas": schemas,
        },
    })
}

/// `GET /`: 303 to `/ui`, or the [`index`] for `Accept: application/json` ([`wants_json`]).
/// Either answer varies with `Accept`.
pub async fn root(headers: HeaderMap) -> Response {
    let mut response = if wants_json(&headers) {
        Json(index()).into_response()
    } else {
        (StatusCode::SEE_OTHER, [(header::LOCATION, UI_PATH)]).into_response()
    };
    response
        .headers_mut()
        .insert(header::VARY, header::HeaderValue::from_static("accept"));
    response
}

/// `GET /openapi.json`: the OpenAPI document ([`OPENAPI`]).
pub async fn openapi() -> Response {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(value: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, value.parse().expect("header"));
        h
    }

    #[test]
    fn json_only_when_asked_for_over_html() {
        assert!(wants_json(&accept("application/json")));
        assert!(wants_json(&accept("application/json, text/plain;q=0.5")));
        assert!(wants_json(&accept("text/html;q=0.5, application/json")));
        assert!(wants_json(&accept("application/*")));
        assert!(!wants_json(&HeaderMap::new()));
        assert!(!wants_json(&accept(
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
        )));
        assert!(!wants_json(&accept("*/*")));
        assert!(!wants_json(&accept("application/json;q=0")));
        assert!(!wants_json(&accept("text/html, application/json;q=0.9")));
    }

    #[test]
    fn the_index_links_to_the_published_schemas() {
        let i = index();
        assert_eq!(i["links"]["schemas"]["Lesson"], "/v1/schemas/Lesson.json");
        assert_eq!(
            i["links"]["schemas"].as_object().map(Map::len),
            Some(SCHEMAS.len())
        );
    }
}
