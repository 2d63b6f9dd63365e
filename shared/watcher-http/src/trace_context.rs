//! The W3C trace context of each request (docs/howto/tracing.md): read from its `traceparent`
//! (kept when valid, ignored when not: trace-context §3.2), else its AWS X-Ray header, else a
//! new trace; set as the request's cause for the steps it runs
//! ([`watcher_runtime::trace_cause`]), so the expectations a push, a webhook or a
//! `POST /v1/facts` raises keep it and their lapse tasks send it on. A `POST` runs in an
//! `ingest` span carrying the trace and parent ids (OpenTelemetry on `serve` exports it in the
//! cause's trace).

use axum::extract::Request;
use axum::http::{HeaderMap, Method};
use axum::middleware::Next;
use axum::response::Response;
use tracing::Instrument;
use watcher_core::trace::{TRACEPARENT_HEADER, XRAY_HEADER};
use watcher_runtime::trace_cause;

/// The middleware: the request's trace context as its cause, a `POST` within an `ingest` span.
pub async fn layer(req: Request, next: Next) -> Response {
    let cause = cause_of(req.headers());
    if req.method() != Method::POST {
        return trace_cause::scope(cause, next.run(req)).await;
    }
    let span = tracing::info_span!(
        "ingest",
        path = %req.uri().path(),
        trace_id = %cause.trace_id_hex(),
        parent_id = %cause.parent_id_hex(),
    );
    trace_cause::enter(&span, &cause);
    trace_cause::scope(cause, next.run(req))
        .instrument(span)
        .await
}

/// The trace context of a request with these headers ([`trace_cause::of_request`]): one
/// `traceparent` (two or more are ignored, as the spec asks of a header it cannot read as one
/// value), else `X-Amzn-Trace-Id`.
pub fn cause_of(headers: &HeaderMap) -> watcher_core::trace::TraceParent {
    let mut parents = headers.get_all(TRACEPARENT_HEADER).iter();
    let traceparent = match (parents.next(), parents.next()) {
        (Some(one), None) => one.to_str().ok(),
        _ => None,
    };
    let xray = headers.get(XRAY_HEADER).and_then(|v| v.to_str().ok());
    trace_cause::of_request(traceparent, xray)
}
