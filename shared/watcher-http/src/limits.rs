//! Named bounds on what one request may carry (issue 12 item 6; expectations-v1 §13.2,
//! learnables-v1 §13.3), and the layer that enforces the ones that need no knowledge of a route:
//! the body's size, the time to read it, JSON nesting depth and string lengths. Every refusal is
//! problem+json naming the bound (its `[limits]` key) and its value.
//!
//! The same layer turns every other error answer that is not already problem+json (a rejection
//! of an axum extractor, a tower-http layer's plain-text answer) into problem+json with the same
//! status, so no route of the router answers an error in any other shape.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;

use crate::problem::ApiError;

/// The bounds (config `[limits]`, every key optional). Defaults in [`Limits::default`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest request body, in bytes (`body_bytes`, default 1 MiB). Over it: 413.
    pub body_bytes: usize,
    /// Longest a request body may take to arrive, in seconds (`body_read_secs`, default 30).
    /// Over it: 408.
    pub body_read_secs: u64,
    /// Deepest nesting of arrays and objects in a JSON body (`json_depth`, default 64; the
    /// top-level value is depth 1). Over it: 400.
    pub json_depth: usize,
    /// Longest JSON string (member names included), in bytes as sent, escapes counted as
    /// written (`string_bytes`, default 65536). Over it: 400.
    pub string_bytes: usize,
    /// Most expectations one artifact or status message may carry (`expectations_per_artifact`,
    /// default 100). Over it: 400 and nothing of the push is recorded.
    pub expectations_per_artifact: usize,
    /// Most facts one `POST /v1/facts` (or one carrier webhook payload) may carry
    /// (`facts_per_request`, default 1000). Over it: 400.
    pub facts_per_request: usize,
    /// Most entries in the `corpus` of one `lessons:check` (`check_corpus_entries`, default
    /// 10000). Over it: 400.
    pub check_corpus_entries: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            body_bytes: 1024 * 1024,
            body_read_secs: 30,
            json_depth: 64,
            string_bytes: 64 * 1024,
            expectations_per_artifact: 100,
            facts_per_request: 1000,
            check_corpus_entries: 10_000,
        }
    }
}

/// serde_json refuses nesting deeper than 128 on its own (with a message that names no
/// setting); a configured depth above that would never be reached.
pub const MAX_JSON_DEPTH: usize = 128;

/// After a body passed `body_bytes`, the rest is read and dropped up to this many bytes more,
/// so that a client still writing its body reads the 413 rather than a connection reset.
const DRAIN_BYTES: usize = 32 * 1024 * 1024;

impl Limits {
    /// A refusal naming the bound `key`, its value and what was found.
    pub fn refusal(key: &str, value: usize, what: impl std::fmt::Display) -> ApiError {
        ApiError::bad_request(format!(
            "{what} exceeds the limit `{key}` = {value} (config [limits])"
        ))
    }

    fn too_large(&self) -> ApiError {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "Payload too large",
            format!(
                "the body exceeds the limit `body_bytes` = {} bytes (config [limits]); nothing was recorded",
                self.body_bytes
            ),
        )
    }

    /// Checks a JSON text's nesting depth and string lengths without parsing it (one pass over
    /// the bytes; a syntax error is left for the parser to name).
    ///
    /// # Errors
    /// 400 naming `json_depth` or `string_bytes` and its value.
    pub fn check_json_shape(&self, body: &[u8]) -> Result<(), ApiError> {
        let max_depth = self.json_depth.min(MAX_JSON_DEPTH);
        let mut depth = 0usize;
        let mut in_string = false;
        let mut escaped = false;
        let mut string_len = 0usize;
        for &b in body {
            if in_string {
                if escaped {
                    escaped = false;
                } else if b == b'\\' {
                    escaped = true;
                } else if b == b'"' {
                    in_string = false;
                    continue;
                }
                string_len += 1;
                if string_len > self.string_bytes {
                    return Err(Self::refusal(
                        "string_bytes",
                        self.string_bytes,
                        "a JSON string in the body",
                    )
                    .with_unit("bytes"));
                }
                continue;
            }
            match b {
                b'"' => {
                    in_string = true;
                    string_len = 0;
                }
                b'[' | b'{' => {
                    depth += 1;
                    if depth > max_depth {
                        return Err(Self::refusal(
                            "json_depth",
                            max_depth,
                            "the nesting of arrays and objects in the body",
                        ));
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        Ok(())
    }
}

impl ApiError {
    /// Appends a unit to a limit refusal's value ("= 65536" → "= 65536 bytes").
    fn with_unit(mut self, unit: &str) -> Self {
        self.detail = self.detail.replacen(
            " (config [limits])",
            &format!(" {unit} (config [limits])"),
            1,
        );
        self
    }
}

fn is_json(req: &Request) -> bool {
    crate::body::non_json_media_type(req.headers()).is_none()
}

enum Read {
    Whole(Bytes),
    TooLarge,
    Failed,
}

/// Reads at most `limit` bytes; past it, drains up to [`DRAIN_BYTES`] more and reports
/// `TooLarge`.
async fn read_limited(body: Body, limit: usize) -> Read {
    let mut body = body;
    let mut buf = Vec::new();
    let mut seen = 0usize;
    let mut over = false;
    while let Some(frame) = body.frame().await {
        let Ok(frame) = frame else {
            return if over { Read::TooLarge } else { Read::Failed };
        };
        let Ok(data) = frame.into_data() else {
            continue;
        };
        seen = seen.saturating_add(data.len());
        if over {
            if seen > limit.saturating_add(DRAIN_BYTES) {
                break;
            }
            continue;
        }
        if seen > limit {
            over = true;
            buf = Vec::new();
            continue;
        }
        buf.extend_from_slice(&data);
    }
    if over {
        Read::TooLarge
    } else {
        Read::Whole(Bytes::from(buf))
    }
}

/// The middleware: bounds the body (size, read time, JSON shape), makes [`Limits`] available to
/// handlers as a request extension, and answers every error in problem+json.
pub async fn enforce(limits: Limits, req: Request, next: Next) -> Response {
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let json = is_json(&req);
    let (mut parts, body) = req.into_parts();
    let bytes = match tokio::time::timeout(
        Duration::from_secs(limits.body_read_secs),
        read_limited(body, limits.body_bytes),
    )
    .await
    {
        Err(_) => {
            return ApiError::new(
                StatusCode::REQUEST_TIMEOUT,
                "Request timeout",
                format!(
                    "the body did not arrive within the limit `body_read_secs` = {} seconds (config [limits])",
                    limits.body_read_secs
                ),
            )
            .into_response()
        }
        Ok(Read::TooLarge) => return limits.too_large().into_response(),
        Ok(Read::Failed) => {
            return ApiError::bad_request("the body could not be read to its end").into_response()
        }
        Ok(Read::Whole(b)) => b,
    };
    if declared.is_some_and(|n| n > limits.body_bytes as u64) {
        return limits.too_large().into_response();
    }
    if json && !bytes.is_empty() {
        if let Err(e) = limits.check_json_shape(&bytes) {
            return e.into_response();
        }
    }
    parts.extensions.insert(limits);
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    as_problem(response, &limits).await
}

/// Turns an error answer that is not problem+json into one with the same status; a 413 names
/// `body_bytes`.
async fn as_problem(response: Response, limits: &Limits) -> Response {
    let status = response.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let is_problem = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/problem+json"));
    if is_problem {
        return response;
    }
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        return limits.too_large().into_response();
    }
    let (parts, body) = response.into_parts();
    let text = match axum::body::to_bytes(body, 4096).await {
        Ok(b) => String::from_utf8_lossy(&b).trim().to_owned(),
        Err(_) => String::new(),
    };
    let reason = status.canonical_reason().unwrap_or("Error");
    let detail = if text.is_empty() {
        reason.to_owned()
    } else {
        text
    };
    let mut problem = ApiError::new(status, title_for(status), detail).into_response();
    // Keep headers such as Allow or Retry-After.
    for (name, value) in &parts.headers {
        if name != header::CONTENT_TYPE && name != header::CONTENT_LENGTH {
            problem.headers_mut().insert(name.clone(), value.clone());
        }
    }
    problem.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/problem+json"),
    );
    problem
}

fn title_for(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "Malformed request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not found",
        405 => "Method not allowed",
        408 => "Request timeout",
        415 => "Unsupported media type",
        422 => "Unprocessable content",
        s if s >= 500 => "Server error",
        _ => "Request refused",
    }
}

/// Installs [`enforce`] with `limits` on `router` (outermost, so it also covers the fallback).
pub fn apply<S: Clone + Send + Sync + 'static>(
    router: axum::Router<S>,
    limits: Limits,
) -> axum::Router<S> {
    router
        .layer(axum::extract::DefaultBodyLimit::max(limits.body_bytes))
        .layer(axum::middleware::from_fn(move |req, next| {
            enforce(limits, req, next)
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_counts_brackets_outside_strings() {
        let l = Limits {
            json_depth: 3,
            ..Limits::default()
        };
        assert!(l.check_json_shape(br#"{"a":[{"b":"[[[[["}]}"#).is_ok());
        let e = l.check_json_shape(br#"{"a":[{"b":[1]}]}"#).unwrap_err();
        assert_eq!(e.status, StatusCode::BAD_REQUEST);
        assert!(e.detail.contains("`json_depth` = 3"), "{}", e.detail);
    }

    #[test]
    fn string_length_counts_escapes_as_written() {
        let l = Limits {
            string_bytes: 4,
            ..Limits::default()
        };
        assert!(l.check_json_shape(br#"{"abcd":"ab\""}"#).is_ok());
        let e = l.check_json_shape(br#"{"k":"abcde"}"#).unwrap_err();
        assert!(
            e.detail.contains("`string_bytes` = 4 bytes"),
            "{}",
            e.detail
        );
    }

    #[test]
    fn configured_depth_above_serde_json_is_capped() {
        let l = Limits {
            json_depth: 10_000,
            ..Limits::default()
        };
        let deep = "[".repeat(200);
        let e = l.check_json_shape(deep.as_bytes()).unwrap_err();
        assert!(e.detail.contains("`json_depth` = 128"), "{}", e.detail);
    }

    fn app(limits: Limits) -> axum::Router {
        let routes = axum::Router::new()
            .route(
                "/echo",
                axum::routing::post(|b: Bytes| async move { b.len().to_string() }),
            )
            .route(
                "/plain",
                axum::routing::get(|| async { (StatusCode::BAD_GATEWAY, "upstream said no") }),
            );
        apply(routes, limits)
    }

    async fn call(app: axum::Router, req: Request) -> (StatusCode, String, serde_json::Value) {
        use tower::ServiceExt;
        let resp = app.oneshot(req).await.expect("infallible");
        let status = resp.status();
        let ct = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .map(|v| v.to_str().unwrap_or_default().to_owned())
            .unwrap_or_default();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        (
            status,
            ct,
            serde_json::from_slice(&body).unwrap_or_default(),
        )
    }

    #[tokio::test]
    async fn a_chunked_body_over_the_limit_is_a_named_413() {
        let limits = Limits {
            body_bytes: 10,
            ..Limits::default()
        };
        let chunks = futures_util::stream::iter(
            (0..4).map(|_| Ok::<_, std::io::Error>(Bytes::from_static(b"12345"))),
        );
        let req = Request::post("/echo")
            .body(Body::from_stream(chunks))
            .unwrap();
        let (status, ct, body) = call(app(limits), req).await;
        assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(ct, "application/problem+json");
        assert_eq!(body["status"], 413);
        assert!(body["detail"]
            .as_str()
            .unwrap()
            .contains("`body_bytes` = 10 bytes"));
        // At the limit exactly, the handler sees the whole body.
        let req = Request::post("/echo")
            .body(Body::from("1234567890"))
            .unwrap();
        let (status, _, body) = call(app(limits), req).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(body, serde_json::json!(10));
    }

    #[tokio::test]
    async fn a_plain_text_error_becomes_problem_json_with_its_status() {
        let req = Request::get("/plain").body(Body::empty()).unwrap();
        let (status, ct, body) = call(app(Limits::default()), req).await;
        assert_eq!(status, StatusCode::BAD_GATEWAY);
        assert_eq!(ct, "application/problem+json");
        assert_eq!(body["detail"], "upstream said no");
        assert_eq!(body["status"], 502);
    }
}
