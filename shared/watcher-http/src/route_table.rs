//! One table per router: each route's method, path and handler. The same table builds the router
//! and lists its routes ([`crate::api_routes`], [`crate::learnables::learnables_routes`],
//! [`crate::web::web_routes`]), so a deployment that declares routes of its own (the HttpApi
//! events in `template.yaml`) is checked against the router itself rather than against a second
//! list that can drift (`tests/template_routes.rs`).

use axum::handler::Handler;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;

/// An HTTP method a route answers. Only the ones the watcher's routes use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// `GET` (axum answers `HEAD` on it too).
    Get,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
}

impl Method {
    /// The method's name on the wire: `GET`, `POST`, `PUT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Post => "POST",
            Method::Put => "PUT",
        }
    }

    fn filter(self) -> MethodFilter {
        match self {
            Method::Get => MethodFilter::GET,
            Method::Post => MethodFilter::POST,
            Method::Put => MethodFilter::PUT,
        }
    }
}

/// One route: its method, its path as axum writes it (`{name}` is one segment), its handler.
pub struct Route<S> {
    /// The method it answers.
    pub method: Method,
    /// The path pattern, e.g. `/v1/agents/{agent_id}/push`.
    pub path: &'static str,
    handler: MethodRouter<S>,
}

/// A route answering `method` on `path` with `handler`.
pub fn route<H, T, S>(method: Method, path: &'static str, handler: H) -> Route<S>
where
    H: Handler<T, S>,
    T: 'static,
    S: Clone + Send + Sync + 'static,
{
    Route {
        method,
        path,
        handler: on(method.filter(), handler),
    }
}

/// The router of `table` (two methods on one path share its entry).
pub fn build<S>(table: Vec<Route<S>>) -> Router<S>
where
    S: Clone + Send + Sync + 'static,
{
    table
        .into_iter()
        .fold(Router::new(), |router, r| router.route(r.path, r.handler))
}

/// `(method, path)` of every route of `table`, in its order.
pub fn list<S>(table: &[Route<S>]) -> Vec<(Method, &'static str)> {
    table.iter().map(|r| (r.method, r.path)).collect()
}
