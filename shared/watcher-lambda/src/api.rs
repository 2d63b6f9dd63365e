//! The API function's router: the watcher's routes (contracts/serve.md), the same axum router
//! `a2a-watcher serve` runs, over the function's parts. `functions/api` hosts it with
//! `lambda_http`; tests drive it with API Gateway HTTP API (payload 2.0) events.
//!
//! Ids through API Gateway (issue 12, item 3): an HTTP API decodes the request path before the
//! function sees it, in `rawPath` as in `pathParameters`, so a subject id `PA-2026-0901/leg-2`
//! sent as `PA-2026-0901%2Fleg-2` reaches the function as two segments, an id holding `?` or `#`
//! as a query or fragment, and one holding `%41` as `A` once axum decodes it again. The router
//! therefore rebuilds the path from the matched route (`routeKey`, e.g.
//! `GET /v1/subjects/{type}/{id+}`) and the decoded `pathParameters`, percent-encoding each
//! parameter whole (every byte but ASCII letters, digits, `-`, `_` and `~`), so that axum's
//! extractors decode it exactly once and the id reaches the handlers as the client gave it.
//! `{proxy+}` alone keeps its `/` as separators (a catch-all over several routes). A request
//! without a parameterised route key (`$default`, a test's event, `serve`) is left as it is.

use std::sync::Arc;

use axum::http;
use axum::Router;
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use tower::ServiceExt;
use watcher_http::{watcher_router_with, AppState};

use crate::cards::AgentCards;

/// What stays unencoded in a rebuilt path segment: RFC 3986's unreserved characters less `.`
/// (so that an id `.` or `..` is never read as a dot segment).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'~');

/// The routes over `state` (its `wake` is not waited on: schedules and the queue carry the
/// work), bounded by `limits`, with problem+json answers for unknown routes and methods, behind
/// [`from_api_gateway`] (ids read from `pathParameters`, decoded once). The host
/// (`watcher_host::aws::api_router`) builds it from a function's parts.
///
/// Before each request, cards other functions kept for agents this instance does not hold in
/// good health are picked up ([`crate::cards::AgentCards::pick_up_all`]): an agent whose card
/// the sweep read since this instance's cold start is served (its pushes no longer answer 503).
/// Before a push for an agent whose card this instance never read, the card is read again when
/// a read is due ([`crate::cards::AgentCards::read_for_push`], backing off as `serve` does), so
/// "push again later" is served as soon as the agent's card can be read.
pub fn router(state: AppState, limits: watcher_http::Limits, cards: Arc<dyn AgentCards>) -> Router {
    let pick_up_clock = state.clock.clone();
    let routes = watcher_router_with(state, limits)
        .fallback(watcher_http::not_found)
        .method_not_allowed_fallback(watcher_http::method_not_allowed);
    // Before routing: the rewritten path is what the routes match.
    Router::new()
        .fallback_service(routes.map_request(from_api_gateway::<axum::body::Body> as fn(_) -> _))
        .layer(axum::middleware::from_fn(
            move |mut req: axum::extract::Request, next: axum::middleware::Next| {
                lambda_trace(&mut req);
                let cards = cards.clone();
                let now = pick_up_clock.now();
                async move {
                    cards.pick_up_all(now).await;
                    if let Some(agent) = pushed_agent(&req) {
                        cards.read_for_push(&agent, now).await;
                    }
                    next.run(req).await
                }
            },
        ))
}

/// The invocation's X-Ray trace (Lambda's context: `Root=1-…;Parent=…;Sampled=…`) as the
/// request's `X-Amzn-Trace-Id` when it has none, so that the trace context the routes keep
/// (`watcher_http::trace_context`) is the X-Ray trace where no valid `traceparent` came.
fn lambda_trace<B>(req: &mut http::Request<B>) {
    if req.headers().contains_key(watcher_core::trace::XRAY_HEADER) {
        return;
    }
    let id = req
        .lambda_context_ref()
        .and_then(|c| c.xray_trace_id.clone());
    if let Some(value) = id.and_then(|id| http::HeaderValue::from_str(&id).ok()) {
        req.headers_mut()
            .insert(watcher_core::trace::XRAY_HEADER, value);
    }
}

/// The agent a request pushes for: `POST /v1/agents/{agentId}/push`, its id from API Gateway's
/// decoded `pathParameters` when the event has them, else from the path (percent-decoded).
fn pushed_agent<B>(req: &http::Request<B>) -> Option<watcher_core::ids::AgentId> {
    if req.method() != http::Method::POST {
        return None;
    }
    let rest = req.uri().path().strip_prefix("/v1/agents/")?;
    let raw = rest.strip_suffix("/push")?;
    let id = match req
        .path_parameters_ref()
        .and_then(|p| p.first("agentId").map(str::to_owned))
    {
        Some(id) => id,
        None => percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .ok()?
            .into_owned(),
    };
    watcher_core::ids::AgentId::parse(id).ok()
}

/// The request with its path rebuilt from API Gateway's route key and decoded path parameters
/// (see the module docs), its query re-encoded from `rawQueryString`'s parameters. Unchanged when
/// the route key is `$default` or missing, names no parameter, or names one the event lacks.
pub fn from_api_gateway<B>(mut req: http::Request<B>) -> http::Request<B> {
    let Some(path) = rebuilt_path(&req) else {
        return req;
    };
    let query = req
        .query_string_parameters_ref()
        .map(aws_lambda_events::query_map::QueryMap::to_query_string)
        .filter(|q| !q.is_empty());
    let path_and_query = match query {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    match http::uri::PathAndQuery::try_from(path_and_query.as_str()) {
        Ok(pq) => {
            let mut parts = req.uri().clone().into_parts();
            parts.path_and_query = Some(pq);
            if let Ok(uri) = http::Uri::from_parts(parts) {
                *req.uri_mut() = uri;
            }
        }
        // Unreachable with every byte encoded; the request then goes on as it came.
        Err(e) => tracing::warn!(error = %e, "could not rebuild the request path"),
    }
    req
}

/// The path of the route key's template with each `{name}` or `{name+}` replaced by the encoded
/// parameter, or `None` when the request carries no parameterised route key.
fn rebuilt_path<B>(req: &http::Request<B>) -> Option<String> {
    let Some(RequestContext::ApiGatewayV2(ctx)) = req.request_context_ref() else {
        return None;
    };
    let route_key = ctx.route_key.as_deref()?;
    // "GET /v1/subjects/{type}/{id+}"; "$default" has no space.
    let (_, template) = route_key.split_once(' ')?;
    if !template.contains('{') {
        return None;
    }
    let params = req.path_parameters_ref()?;
    let mut path = String::with_capacity(template.len() + 32);
    for segment in template.split('/').skip(1) {
        path.push('/');
        match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            Some("proxy+") => {
                let value = params.first("proxy")?;
                let pieces: Vec<String> = value
                    .split('/')
                    .map(|p| utf8_percent_encode(p, SEGMENT).to_string())
                    .collect();
                path.push_str(&pieces.join("/"));
            }
            Some(name) => {
                let value = params.first(name.trim_end_matches('+'))?;
                path.extend(utf8_percent_encode(value, SEGMENT));
            }
            None => path.push_str(segment),
        }
    }
    Some(path)
}

#[cfg(test)]
mod trace_tests {
    use super::*;

    const ROOT: &str = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1";

    fn with_context(xray: Option<&str>) -> http::Request<()> {
        let mut context = lambda_http::Context::default();
        context.xray_trace_id = xray.map(str::to_owned);
        let mut req = http::Request::new(());
        req.extensions_mut().insert(context);
        req
    }

    /// The invocation's X-Ray trace becomes the request's header, which the routes read as
    /// the W3C trace id `5759e988bd862e3fe1be46a994272793`.
    #[test]
    fn the_invocations_xray_trace_is_the_requests() {
        let mut req = with_context(Some(ROOT));
        lambda_trace(&mut req);
        let cause = watcher_http::trace_context::cause_of(req.headers());
        assert_eq!(cause.trace_id_hex(), "5759e988bd862e3fe1be46a994272793");
        assert_eq!(cause.parent_id_hex(), "53995c3f42cd8ad8");
    }

    /// A header the request carries already is kept; no context, no header.
    #[test]
    fn a_header_already_there_is_kept() {
        let mut req = with_context(Some(ROOT));
        let theirs = "Root=1-00000001-000000000000000000000001";
        req.headers_mut().insert(
            watcher_core::trace::XRAY_HEADER,
            http::HeaderValue::from_static(theirs),
        );
        lambda_trace(&mut req);
        assert_eq!(req.headers()[watcher_core::trace::XRAY_HEADER], theirs);
        let mut bare = with_context(None);
        lambda_trace(&mut bare);
        assert!(bare.headers().is_empty());
    }
}
