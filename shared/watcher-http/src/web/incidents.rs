//! `/ui/incidents` (docs/howto/incidents.md): the open incidents of the operator's tenant with
//! their age and owner agent, each with an acknowledge button, and each notification channel's
//! last result. `POST /ui/incidents/acknowledge` (form `agent`, `message_id`) acknowledges one in
//! the logged-in operator's name, as `POST /v1/incidents/acknowledge` does.
//!
//! The only form that writes the record. Cross-site requests cannot use it: the session cookie is
//! `SameSite=Strict` (a request from another site carries none), the page's
//! `Content-Security-Policy` lets forms post only to this origin, and a request whose
//! `Sec-Fetch-Site` says it came from another site or origin is refused (403).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::Form;
use maud::html;
use serde::Deserialize;
use watcher_runtime::store::OutboxEntry;

use super::{error_page, html_response, instant_markup, login_page, operator, page, subject_href};
use crate::incidents::{tenant_agents, IncidentView};
use crate::problem::ApiError;
use crate::routes::unavailable;
use crate::AppState;

/// Open incidents read per agent for `/ui/incidents` (its oldest, from [`Lane::Open`]); the
/// page says when an agent has more.
///
/// [`Lane::Open`]: watcher_runtime::store::Lane::Open
pub const INCIDENTS_PER_AGENT: usize = 50;

/// `3d 4h`, `2h 5m`, `7m 30s`, `12s`: an age in its two largest units.
fn age_text(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    match (d, h, m) {
        (0, 0, 0) => format!("{s}s"),
        (0, 0, _) => format!("{m}m {s}s"),
        (0, _, _) => format!("{h}h {m}m"),
        _ => format!("{d}d {h}h"),
    }
}

pub(super) async fn incidents(State(state): State<AppState>, headers: HeaderMap) -> Response {
    let who = logged_in!(state, headers);
    let now = state.clock.now();
    let mut open: Vec<OutboxEntry> = Vec::new();
    let mut more: Vec<String> = Vec::new();
    for agent in tenant_agents(&state.watcher.directory, &who.tenant) {
        match state
            .watcher
            .store
            .outbox_open(&who.tenant, &agent, None, INCIDENTS_PER_AGENT + 1)
            .await
        {
            Ok(mut list) => {
                if list.len() > INCIDENTS_PER_AGENT {
                    list.truncate(INCIDENTS_PER_AGENT);
                    more.push(agent.to_string());
                }
                open.extend(list);
            }
            Err(e) => return error_page(&who, unavailable(e)),
        }
    }
    open.sort_by(|a, b| (a.lapsed_at, &a.agent).cmp(&(b.lapsed_at, &b.agent)));
    let channels = match state.watcher.store.channel_states(&who.tenant).await {
        Ok(c) => c,
        Err(e) => return error_page(&who, unavailable(e)),
    };
    let views: Vec<IncidentView> = open.iter().map(|o| IncidentView::of(o, now)).collect();
    html_response(
        StatusCode::OK,
        page(
            "Open incidents",
            Some(&who),
            html! {
                p.note { "Each lapse not yet resolved (by its late fact, its lapse task's completion, a withdrawal or an acknowledgement), oldest first; " (INCIDENTS_PER_AGENT) " per agent at most. " code { "a2a-watcher incidents" } " lists them all." }
                @if !more.is_empty() {
                    p.note { "More open incidents than shown for: " (more.join(", ")) "." }
                }
                @if views.is_empty() {
                    p { "No open incident." }
                } @else {
                    table id="incidents" {
                        tr {
                            th { "age" } th { "agent" } th { "lapse" } th { "subject" }
                            th { "expectation" } th { "lapsed at" } th { "task state" } th { "" }
                        }
                        @for i in &views {
                            tr {
                                td { (age_text(i.age_seconds)) }
                                td { (i.agent.to_string()) }
                                td { span class=(i.kind.as_str()) { (i.kind.as_str()) } }
                                td {
                                    @if let Some(s) = &i.subject {
                                        a href=(subject_href(&s.subject_type, &s.id)) { (s.subject_type) " " (s.id) }
                                    } @else { "–" }
                                }
                                td { (i.expectation_id.to_string()) }
                                td { (instant_markup(&i.lapsed_at.to_string(), i.lapsed_at)) }
                                td { (i.task_state.as_deref().unwrap_or("–")) }
                                td {
                                    form method="post" action="/ui/incidents/acknowledge" {
                                        input type="hidden" name="agent" value=(i.agent.to_string());
                                        input type="hidden" name="message_id" value=(i.message_id);
                                        button type="submit" { "Acknowledge" }
                                    }
                                }
                            }
                        }
                    }
                    p.note { "Acknowledge resolves the incident in your name (" (who.id) "): each notification channel that told it tells its resolution." }
                }
                h2 { "Notification channels" }
                @if channels.is_empty() {
                    p.note { "No notification channel has run for this tenant." }
                } @else {
                    table id="channels" {
                        tr { th { "channel" } th { "last delivered" } th { "failing since" } th { "last error" } }
                        @for (id, c) in &channels {
                            tr {
                                td { (id) }
                                td {
                                    @match c.last_delivered_at {
                                        Some(t) => (instant_markup(&t.to_string(), t)),
                                        None => "–",
                                    }
                                }
                                td {
                                    @match c.failing_since {
                                        Some(t) => span.failing { (instant_markup(&t.to_string(), t)) },
                                        None => span.ok { "ok" },
                                    }
                                }
                                td { (c.last_error.as_deref().unwrap_or("–")) }
                            }
                        }
                    }
                }
            },
        ),
    )
}

#[derive(Deserialize)]
pub(super) struct AcknowledgeForm {
    agent: String,
    message_id: String,
}

pub(super) async fn acknowledge(
    State(state): State<AppState>,
    headers: HeaderMap,
    Form(form): Form<AcknowledgeForm>,
) -> Response {
    let who = logged_in!(state, headers);
    let site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("same-origin");
    if !matches!(site, "same-origin" | "none") {
        return error_page(
            &who,
            ApiError::forbidden("an acknowledgement is taken from this page only"),
        );
    }
    match crate::routes::acknowledged(&state, &who.tenant, &form.agent, &form.message_id, &who.id)
        .await
    {
        Ok(_) => Redirect::to("/ui/incidents").into_response(),
        Err(e) => error_page(&who, e),
    }
}

#[cfg(test)]
mod tests {
    use super::age_text;

    #[test]
    fn ages_read_in_their_two_largest_units() {
        assert_eq!(age_text(12), "12s");
        assert_eq!(age_text(450), "7m 30s");
        assert_eq!(age_text(2 * 3600 + 5 * 60 + 9), "2h 5m");
        assert_eq!(age_text(3 * 86_400 + 4 * 3600 + 59), "3d 4h");
    }
}
