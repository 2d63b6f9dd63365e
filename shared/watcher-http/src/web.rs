//! The operator's web page (docs/howto/operator-view.md): server-rendered HTML (maud templates, which
//! escape everything they insert), no script, no build step. Served by `serve` and by the `api`
//! function under `/ui`.
//!
//! * `GET /ui`: the login form, or the overview once logged in.
//! * `POST /ui/login` (form `token=…`): an operator's token, kept in an `HttpOnly`,
//!   `SameSite=Strict` cookie on `/ui` (with `Secure` behind HTTPS); never in a URL.
//!   `POST /ui/logout` forgets it. An `Authorization: Bearer …` header works as well.
//! * `GET /ui/subjects`: subjects with open expectations, by next deadline (a bounded read of the
//!   timer index, never a scan of the record); `GET /ui/find?type=&id=` goes to one subject.
//! * `GET /ui/subjects/{type}/{id}`: the subject's record and its timeline picture.
//! * `GET /ui/lapses`: lapse tasks per agent and delivery state, with the task's state.
//! * `GET /ui/incidents`: open incidents with their age and owner agent, each with an
//!   acknowledge button (`POST /ui/incidents/acknowledge`), and each channel's last result
//!   (`web/incidents.rs`).
//! * `GET /ui/agents`: each agent's lapse-task delivery health and card (`GET /v1/agents`).
//! * `GET /ui/notifications`: each notification channel of the tenant (`[[notify]]`): where it
//!   posts, its last delivery and its failures (expectations-v1 §13.1).

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::{Form, Router};
use maud::{html, Markup, PreEscaped, DOCTYPE};
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::Deserialize;
use serde_json::Value;
use watcher_core::ids::{AgentId, Subject, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::store::DeliveryState;

use crate::auth::{Principal, Role};
use crate::problem::ApiError;
use crate::routes::{agents_view, now_timestamp, subject_view_of, unavailable};
use crate::AppState;

/// The cookie holding the operator's token (hex-encoded, so any token is a valid cookie value).
pub const SESSION_COOKIE: &str = "a2a_watcher_operator";

/// How long the browser keeps the login cookie, in seconds (`Max-Age`): 12 hours, after which
/// the operator logs in again. `POST /ui/logout` drops it sooner (docs/howto/operator-view.md).
pub const COOKIE_MAX_AGE_SECS: u64 = 12 * 60 * 60;

/// Longest login form accepted, in bytes.
pub const MAX_LOGIN_BYTES: usize = 4096;

/// Subjects listed on `/ui/subjects` at most.
pub const MAX_SUBJECTS: usize = 50;

/// Timers read from the index for `/ui/subjects` (several may name one subject).
const TIMERS_READ: usize = 500;

/// Lapse tasks shown per agent and delivery state on `/ui/lapses`.
pub const LAPSES_PER_STATE: usize = 25;

/// The page's routes, to merge into the watcher's router.
pub fn web_router(state: AppState) -> Router {
    crate::route_table::build(web_table())
        .layer(axum::extract::DefaultBodyLimit::max(MAX_LOGIN_BYTES))
        .with_state(state)
}

/// The page's routes: one table builds [`web_router`] and lists them for [`web_routes`].
fn web_table() -> Vec<crate::route_table::Route<AppState>> {
    use crate::route_table::route;
    use crate::route_table::Method::{Get, Post};
    vec![
        route(Get, "/ui", home),
        route(Post, "/ui/login", login),
        route(Post, "/ui/logout", logout),
        route(Get, "/ui/subjects", subjects),
        route(Get, "/ui/find", find),
        route(Get, "/ui/subjects/{subject_type}/{subject_id}", subject),
        route(Get, "/ui/lapses", lapses),
        route(Get, "/ui/incidents", incidents::incidents),
        route(Post, "/ui/incidents/acknowledge", incidents::acknowledge),
        route(Get, "/ui/agents", agents),
        route(Get, "/ui/notifications", notifications),
    ]
}

/// `(method, path)` of every route of [`web_router`] (axum's path patterns).
pub fn web_routes() -> Vec<(crate::route_table::Method, &'static str)> {
    crate::route_table::list(&web_table())
}

const CSS: &str = "
body { font-family: sans-serif; margin: 0; color: #222; }
header { background: #1f3b5c; color: #fff; padding: 10px 20px; display: flex; gap: 20px; align-items: center; }
header a { color: #fff; }
header form { margin-left: auto; }
main { padding: 16px 20px; }
table { border-collapse: collapse; margin: 8px 0 20px; }
th, td { border: 1px solid #ccc; padding: 4px 8px; text-align: left; font-size: 13px; vertical-align: top; }
th { background: #f0f3f6; }
.failed, .failing, .stalled { color: #b00020; font-weight: bold; }
.retrying, .queued, .overdue { color: #a05a00; }
.skipped { color: #6c2c91; }
.ok, .sent { color: #1b7f3b; }
.note { color: #666; font-size: 13px; }
.error { color: #b00020; }
.timeline { max-width: 100%; height: auto; border: 1px solid #ddd; }
";

fn percent(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

fn subject_href(subject_type: &str, id: &str) -> String {
    format!("/ui/subjects/{}/{}", percent(subject_type), percent(id))
}

/// A whole page. `who` is the logged-in operator, if any.
fn page(title: &str, who: Option<&Principal>, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                title { (title) " · a2a-watcher" }
                style { (PreEscaped(CSS)) }
            }
            body {
                header {
                    strong { "a2a-watcher" }
                    @if let Some(p) = who {
                        a href="/ui/subjects" { "Subjects" }
                        a href="/ui/lapses" { "Lapse tasks" }
                        a href="/ui/incidents" { "Incidents" }
                        a href="/ui/agents" { "Agents" }
                        a href="/ui/notifications" { "Notifications" }
                        span { "operator " (p.id) " · tenant " (p.tenant.as_str()) }
                        form method="post" action="/ui/logout" { button type="submit" { "Log out" } }
                    }
                }
                main { h1 { (title) } (body) }
            }
        }
    }
}

/// An HTML answer that runs no script, is not framed and is not cached (it holds the record).
fn html_response(status: StatusCode, markup: Markup) -> Response {
    let mut r = (status, axum::response::Html(markup.into_string())).into_response();
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; form-action 'self'; frame-ancestors 'none'",
        ),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    r
}

fn login_page(status: StatusCode, message: Option<&str>) -> Response {
    html_response(
        status,
        page(
            "Log in",
            None,
            html! {
                @if let Some(m) = message { p.error { (m) } }
                form method="post" action="/ui/login" {
                    label for="token" { "Operator token " }
                    input id="token" name="token" type="password" autocomplete="current-password" required;
                    " "
                    button type="submit" { "Log in" }
                }
                p.note { "Logging in keeps a session value derived from the token (not the token) in a cookie for this page only (HttpOnly, SameSite=Strict). Tools may send the token as Authorization: Bearer instead." }
            },
        ),
    )
}

fn error_page(who: &Principal, e: ApiError) -> Response {
    html_response(
        e.status,
        page(e.title, Some(who), html! { p.error { (e.detail) } }),
    )
}

/// The session cookie's value, if the request carries one.
fn cookie_session(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == SESSION_COOKIE)
        .map(|(_, value)| value)
}

/// The operator behind the request: its `Authorization` header, else the session cookie.
fn operator(state: &AppState, headers: &HeaderMap) -> Result<Principal, ApiError> {
    if headers.contains_key(header::AUTHORIZATION) {
        return state
            .credentials
            .require(headers, &[Role::Operator], false)
            .cloned();
    }
    let session = cookie_session(headers)
        .ok_or_else(|| ApiError::unauthorized("log in with an operator's token"))?;
    state
        .credentials
        .by_session(session, &[Role::Operator])
        .cloned()
}

fn as_operator(state: &AppState, token: &str) -> Result<Principal, ApiError> {
    let mut h = HeaderMap::new();
    let value = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
        .map_err(|_| ApiError::unauthorized("the credential is not known to this watcher"))?;
    h.insert(header::AUTHORIZATION, value);
    state
        .credentials
        .require(&h, &[Role::Operator], false)
        .cloned()
}

/// Runs `f` for a logged-in operator; the login form (401) otherwise.
macro_rules! logged_in {
    ($state:expr, $headers:expr) => {
        match operator(&$state, &$headers) {
            Ok(p) => p,
            Err(e) if e.status == StatusCode::FORBIDDEN => {
                return login_page(StatusCode::FORBIDDEN, Some(&e.detail))
            }
            Err(_) => return login_page(StatusCode::UNAUTHORIZED, None),
        }
    };
}

mod incidents;

async fn home(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let Ok(who) = operator(&state, &headers) else {
        return login_page(StatusCode::OK, None);
    };
    html_response(
        StatusCode::OK,
        page(
            "Operator's view",
            Some(&who),
            html! {
                ul {
                    li { a href="/ui/subjects" { "Subjects with open expectations" } ", by next deadline" }
                    li { a href="/ui/lapses" { "Lapse tasks" } " with their delivery and task state" }
                    li { a href="/ui/incidents" { "Open incidents" } ": lapses not yet resolved, to acknowledge" }
                    li { a href="/ui/agents" { "Agents" } ": lapse-task delivery health and cards" }
                    li { a href="/ui/notifications" { "Notifications" } ": who is told of each lapse, and how the last deliveries went" }
                }
                (find_form())
            },
        ),
    )
}

fn find_form() -> Markup {
    html! {
        form method="get" action="/ui/find" {
            "Subject: "
            input name="type" placeholder="type, e.g. shipment" required;
            " "
            input name="id" placeholder="id" required;
            " "
            button type="submit" { "Show" }
        }
    }
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

/// Whether the request came over HTTPS (directly or behind a proxy such as API Gateway).
fn over_https(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

async fn login(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<LoginForm>,
) -> Response {
    match as_operator(&state, &form.token) {
        Ok(_) => {
            let secure = if over_https(&headers) { "; Secure" } else { "" };
            let session = state
                .credentials
                .session_of(&form.token)
                .unwrap_or_default();
            let cookie = format!(
                "{SESSION_COOKIE}={session}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={COOKIE_MAX_AGE_SECS}{secure}"
            );
            let mut r = Redirect::to("/ui").into_response();
            if let Ok(v) = HeaderValue::from_str(&cookie) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        Err(e) if e.status == StatusCode::FORBIDDEN => login_page(
            StatusCode::FORBIDDEN,
            Some("this token is not an operator's"),
        ),
        Err(_) => login_page(
            StatusCode::UNAUTHORIZED,
            Some("this token is not known to this watcher"),
        ),
    }
}

async fn logout() -> Response {
    let mut r = Redirect::to("/ui").into_response();
    r.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "a2a_watcher_operator=; Path=/ui; HttpOnly; SameSite=Strict; Max-Age=0",
        ),
    );
    r
}

#[derive(Deserialize)]
struct FindQuery {
    #[serde(rename = "type")]
    subject_type: String,
    id: String,
}

async fn find(Query(q): Query<FindQuery>) -> Response {
    Redirect::to(&subject_href(q.subject_type.trim(), q.id.trim())).into_response()
}

/// Subjects with open expectations, by their next deadline or horizon: the first
/// [`TIMERS_READ`] pending timers of the index, this tenant's, at most [`MAX_SUBJECTS`].
async fn subjects(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let who = logged_in!(state, headers);
    let timers = match state
        .watcher
        .store
        .due_timers(Instant::MAX, TIMERS_READ)
        .await
    {
        Ok(t) => t,
        Err(e) => return error_page(&who, unavailable(e)),
    };
    let mut rows: Vec<(Subject, Instant, &'static str, String)> = Vec::new();
    for t in timers.iter().filter(|t| t.tenant == who.tenant) {
        if rows.len() >= MAX_SUBJECTS {
            break;
        }
        if !rows.iter().any(|r| r.0 == t.key.subject) {
            rows.push((
                t.key.subject.clone(),
                t.at,
                t.key.kind.as_str(),
                t.key.expectation.id.to_string(),
            ));
        }
    }
    html_response(
        StatusCode::OK,
        page(
            "Subjects with open expectations",
            Some(&who),
            html! {
                p.note { "By next deadline (dueAt + grace) or horizon; the first " (MAX_SUBJECTS) " at most. Anchored expectations waiting on an unsatisfied anchor and without a horizon have no timer and are not listed; find them by subject." }
                (find_form())
                @if rows.is_empty() {
                    p { "No open expectation has a pending deadline." }
                } @else {
                    table id="subjects" {
                        tr { th { "subject" } th { "next" } th { "at (UTC)" } th { "expectation" } }
                        @for (s, at, kind, exp) in &rows {
                            tr {
                                td { a href=(subject_href(&s.subject_type, &s.id)) { (s.subject_type) " " (s.id) } }
                                td { (kind) }
                                td { (instant_markup(&at.to_string(), *at)) }
                                td { (exp) }
                            }
                        }
                    }
                }
            },
        ),
    )
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => "–".into(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// An instant in a table: to the second (`2026-09-10T22:15:00Z`), in a `<time>` whose
/// `datetime` and `title` (shown on hover) hold `given`, the value in full as the record gives it.
fn instant_markup(given: &str, at: Instant) -> Markup {
    let second = Instant::from_nanos(i128::from(at.as_second()) * 1_000_000_000)
        .map_or_else(|_| at.to_string(), |s| s.to_string());
    html! { time datetime=(given) title=(given) { (second) } }
}

/// A record's instant member `v` as [`instant_markup`] shows it; anything that is not an
/// instant (`null`, a malformed value) as [`text`] shows it.
fn instant_cell(v: &Value) -> Markup {
    match v.as_str().and_then(|s| Some((s, Instant::parse(s).ok()?))) {
        Some((given, at)) => instant_markup(given, at),
        None => html! { (text(v)) },
    }
}

async fn subject(
    State(state): State<AppState>,
    Path((subject_type, subject_id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    let who = logged_in!(state, headers);
    let view = match subject_view_of(&state, &who.tenant, &subject_type, &subject_id).await {
        Ok(v) => v,
        Err(e) => return error_page(&who, e),
    };
    let svg = watcher_timeline::render_string(&view, now_timestamp(&state));
    let empty = Vec::new();
    let exps = view["expectations"].as_array().unwrap_or(&empty);
    let facts = view["facts"].as_array().unwrap_or(&empty);
    html_response(
        StatusCode::OK,
        page(
            &format!("{subject_type} {subject_id}"),
            Some(&who),
            html! {
                h2 { "Timeline" }
                @match &svg {
                    // The svg crate's document: text and attributes escaped (watcher_timeline).
                    Ok(svg) => div id="timeline" { (PreEscaped(svg)) },
                    Err(e) => p.error { "The record cannot be drawn: " (e.to_string()) },
                }
                h2 { "Expectations" }
                table id="expectations" {
                    tr {
                        th { "expectation" } th { "kind" } th { "expects" } th { "status" }
                        th { "projected due" } th { "current due" } th { "basis" }
                        th { "satisfied (observed)" } th { "lapses" }
                    }
                    @for e in exps {
                        tr {
                            td { (text(&e["expectationId"])) }
                            td { (text(&e["kind"])) }
                            td { (text(&e["expects"])) }
                            td { (text(&e["status"])) }
                            td { (instant_cell(&e["projectedDueAt"])) }
                            td { (instant_cell(&e["dueAt"])) }
                            td { (text(&e["basis"])) }
                            td {
                                @if e["satisfaction"].is_null() { "–" } @else {
                                    (instant_cell(&e["satisfaction"]["observedAt"]))
                                    @if e["satisfaction"]["late"] == Value::Bool(true) { " (late)" }
                                }
                            }
                            td {
                                @for l in e["lapses"].as_array().unwrap_or(&empty) {
                                    span class=(text(&l["lapse"])) { (text(&l["lapse"])) } " " (instant_cell(&l["lapsedAt"])) br;
                                }
                            }
                        }
                    }
                }
                h2 { "Facts" }
                table id="facts" {
                    tr { th { "observed" } th { "received" } th { "fact" } th { "source" } th { "satisfied" } }
                    @for f in facts {
                        tr {
                            td { (instant_cell(&f["observedAt"])) }
                            td { (instant_cell(&f["receivedAt"])) }
                            td { (text(&f["factKey"])) }
                            td { (text(&f["source"])) }
                            td {
                                @for s in f["satisfied"].as_array().unwrap_or(&empty) { (text(s)) " " }
                            }
                        }
                    }
                }
            },
        ),
    )
}

/// The tenant's agents: registered (card read) and configured.
fn agent_ids(state: &AppState, tenant: &Tenant) -> Vec<AgentId> {
    let directory = &state.watcher.directory;
    let ids: std::collections::BTreeSet<AgentId> = directory
        .entries()
        .into_iter()
        .filter(|a| a.tenant == *tenant)
        .map(|a| a.profile.id)
        .chain(directory.configured(tenant).into_iter().map(|(id, _)| id))
        .collect();
    ids.into_iter().collect()
}

/// Lapse tasks per agent and delivery state, [`LAPSES_PER_STATE`] each, from the outbox's
/// index by (agent, delivery state): the cost follows what is shown.
async fn lapses(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let who = logged_in!(state, headers);
    let mut sections = Vec::new();
    for agent in agent_ids(&state, &who.tenant) {
        for delivery in [
            DeliveryState::Failed,
            DeliveryState::Queued,
            DeliveryState::Sent,
        ] {
            match state
                .watcher
                .store
                .outbox_of_agent(&who.tenant, &agent, delivery, None, LAPSES_PER_STATE)
                .await
            {
                Ok(list) if !list.is_empty() => sections.push((agent.clone(), delivery, list)),
                Ok(_) => {}
                Err(e) => return error_page(&who, unavailable(e)),
            }
        }
    }
    html_response(
        StatusCode::OK,
        page(
            "Lapse tasks",
            Some(&who),
            html! {
                p.note { "Per agent: failed, then queued, then sent; " (LAPSES_PER_STATE) " of each at most. " code { "a2a-watcher lapses" } " lists them all." }
                @if sections.is_empty() { p { "No lapse task yet." } }
                @for (agent, delivery, list) in &sections {
                    h2 { (agent.to_string()) ": " span class=(delivery.as_str()) { (delivery.as_str()) } }
                    table.lapses {
                        tr {
                            th { "lapsed at" } th { "lapse" } th { "expectation" } th { "delivery" }
                            th { "attempts" } th { "task" } th { "task state" } th { "last error" }
                        }
                        @for o in list {
                            tr {
                                td { (instant_markup(&o.lapsed_at.to_string(), o.lapsed_at)) }
                                td { span class=(o.lapse.as_str()) { (o.lapse.as_str()) } }
                                td { (o.expectation_id.to_string()) }
                                td { span class=(o.delivery.as_str()) { (o.delivery.as_str()) } }
                                td { (o.attempts) }
                                td { (o.task_id.as_deref().unwrap_or("–")) }
                                td { (o.task_state.as_deref().unwrap_or("–")) }
                                td { (o.last_error.as_deref().unwrap_or("–")) }
                            }
                        }
                    }
                }
            },
        ),
    )
}

async fn agents(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let who = logged_in!(state, headers);
    // The first page (by agent id): the directory holds the configured agents, a few at most.
    let body = match agents_view(&state, &who.tenant, None, crate::page::MAX_LIMIT).await {
        // The page reads the answer as the API gives it.
        Ok(b) => serde_json::to_value(b).unwrap_or(Value::Null),
        Err(e) => return error_page(&who, e),
    };
    let empty = Vec::new();
    html_response(
        StatusCode::OK,
        page(
            "Agents",
            Some(&who),
            html! {
                table id="agents" {
                    tr { th { "agent" } th { "delivery" } th { "retrying since" } th { "card" } th { "last error" } }
                    @for a in body["agents"].as_array().unwrap_or(&empty) {
                        tr {
                            td { (text(&a["agentId"])) }
                            td { span class=(text(&a["delivery"])) { (text(&a["delivery"])) } }
                            td { (instant_cell(&a["retryingSince"])) }
                            td {
                                (text(&a["card"]["state"]))
                                @if let Some(e) = a["card"]["error"].as_str() { ": " (e) }
                            }
                            td { (text(&a["lastError"])) }
                        }
                    }
                }
            },
        ),
    )
}

async fn notifications(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let who = logged_in!(state, headers);
    // One read of the tenant's channel items: a few, one per channel that ever ran.
    let channels = match state.watcher.store.channel_states(&who.tenant).await {
        Ok(c) => c,
        Err(e) => return error_page(&who, unavailable(e)),
    };
    html_response(
        StatusCode::OK,
        page(
            "Notifications",
            Some(&who),
            html! {
                @if channels.is_empty() {
                    p.note { "No notification channel has run for this tenant. A [[notify]] channel in the configuration tells a person of each lapse (docs/howto/notifications.md)." }
                } @else {
                    table id="notifications" {
                        tr {
                            th { "channel" } th { "format" } th { "posts to" } th { "delivered" }
                            th { "last delivered" } th { "last event" } th { "failing since" }
                            th { "failures" } th { "last error" } th { "agents told failing" }
                        }
                        @for (id, c) in &channels {
                            @let v = serde_json::to_value(c).unwrap_or(Value::Null);
                            tr {
                                td { (id) }
                                td { (text(&v["format"])) }
                                td { (text(&v["target"])) }
                                td { (c.delivered) }
                                td { (instant_cell(&v["lastDeliveredAt"])) }
                                td { (text(&v["lastEventId"])) }
                                td {
                                    @if c.failing_since.is_some() {
                                        span.failing { (instant_cell(&v["failingSince"])) }
                                    } @else {
                                        span.ok { "ok" }
                                    }
                                }
                                td { (c.failures) }
                                td { (text(&v["lastError"])) }
                                td {
                                    @for (agent, w) in c.agents.iter().filter(|(_, w)| w.failing || w.card_down) {
                                        span.failing {
                                            (agent) ": "
                                            @if w.failing { "lapse tasks failing" }
                                            @if w.failing && w.card_down { ", " }
                                            @if w.card_down { "card unavailable" }
                                        }
                                        " "
                                    }
                                }
                            }
                        }
                    }
                    p.note { "Each channel tells the lapses recorded since it first ran, and the agents whose lapse tasks fail or whose card cannot be read, once, and retries a receiver that fails until it takes them. The URL's path is not shown: it may hold a credential." }
                }
            },
        ),
    )
}
