//! The operator's web page (`/ui`, web.rs) driven with `oneshot`: the login form and its cookie,
//! the `Authorization` header as the alternative, HTML (not problem+json) answers for a browser,
//! and a record whose agent-written strings try to inject markup.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_http::web::SESSION_COOKIE;
use watcher_http::Role;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Store;

const OPERATOR: &str = "ops-token";
const AGENT: &str = "push-token";
const SOURCE: &str = "src-token";
const ARTIFACT: &str = include_str!("../../../examples/booking-artifact.json");
const URI: &str = "https://rsaxb.com/a2a/expectations/v1";
const HOSTILE_ID: &str = "PA-1\"><img src=x onerror=alert(1)>/leg 2";

fn app() -> Router {
    app_on(Arc::new(MemoryStore::new()))
}

/// The page over `store`.
fn app_on(store: Arc<dyn Store>) -> Router {
    let directory = crate::common::agents(&["booking"]);
    let credentials = crate::common::credentials(&[
        (OPERATOR, Role::Operator, "ops-desk"),
        (AGENT, Role::Agent, "booking"),
        (SOURCE, Role::Source, "carrier"),
    ]);
    crate::common::router_at(store, directory, credentials, "2026-09-10T02:00:00Z")
}

async fn send(app: &Router, request: Request<Body>) -> (StatusCode, HeaderMap, String) {
    let response = app.clone().oneshot(request).await.unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = response.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}

fn get(uri: &str, auth: Option<(&str, String)>) -> Request<Body> {
    let mut r = Request::get(uri);
    if let Some((name, value)) = auth {
        r = r.header(name, value);
    }
    r.body(Body::empty()).unwrap()
}

/// `GET uri` with the operator's bearer.
fn operator_get(uri: &str) -> Request<Body> {
    get(uri, Some(("authorization", format!("Bearer {OPERATOR}"))))
}

fn login(token: &str, https: bool) -> Request<Body> {
    let mut r = Request::post("/ui/login")
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
    if https {
        r = r.header("x-forwarded-proto", "https");
    }
    let body = format!(
        "token={}",
        percent_encoding::utf8_percent_encode(token, percent_encoding::NON_ALPHANUMERIC)
    );
    r.body(Body::from(body)).unwrap()
}

/// The booking artifact with every subject id, and one `expects`, holding markup.
async fn push_hostile(app: &Router) {
    push(app, |exps| {
        for e in exps.iter_mut() {
            e["subject"]["id"] = json!(HOSTILE_ID);
        }
        exps[0]["expects"] = json!("<script>alert('expects')</script>");
    })
    .await;
}

/// Pushes the booking artifact, its expectations changed by `edit` first.
async fn push(app: &Router, edit: impl FnOnce(&mut Vec<Value>)) {
    let mut a: Value = serde_json::from_str(ARTIFACT).unwrap();
    edit(
        a["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"]
            .as_array_mut()
            .unwrap(),
    );
    let request = Request::post("/v1/agents/booking/push")
        .header(header::AUTHORIZATION, format!("Bearer {AGENT}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(a.to_string()))
        .unwrap();
    let (status, _, body) = send(app, request).await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("exp-01J8Q0ARRIVE"), "{body}");
}

#[tokio::test]
async fn login_sets_an_http_only_strict_cookie_and_pages_answer_html() {
    let app = app();
    // Not logged in: the form at /ui, and a 401 form (HTML, not problem+json) elsewhere.
    let (status, headers, body) = send(&app, get("/ui", None)).await;
    assert_eq!(status, 200);
    assert!(headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(headers[header::CONTENT_SECURITY_POLICY]
        .to_str()
        .unwrap()
        .starts_with("default-src 'none'"));
    assert!(body.contains(r#"name="token""#) && body.contains(r#"method="post""#));
    let (status, headers, body) = send(&app, get("/ui/lapses", None)).await;
    assert_eq!(status, 401);
    assert!(headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    assert!(body.contains(r#"name="token""#));

    // Wrong tokens: refused, no cookie.
    let (status, headers, body) = send(&app, login("nope", false)).await;
    assert_eq!(status, 401);
    assert!(headers.get(header::SET_COOKIE).is_none());
    assert!(body.contains("not known to this watcher"));
    let (status, headers, _) = send(&app, login(SOURCE, false)).await;
    assert_eq!(status, 403, "a source's token is not an operator's");
    assert!(headers.get(header::SET_COOKIE).is_none());

    // The operator's token: 303 to /ui with the cookie; Secure behind HTTPS.
    let (status, headers, _) = send(&app, login(OPERATOR, false)).await;
    assert_eq!(status, 303);
    assert_eq!(headers[header::LOCATION], "/ui");
    let cookie = headers[header::SET_COOKIE].to_str().unwrap().to_owned();
    for part in ["HttpOnly", "SameSite=Strict", "Path=/ui", "Max-Age=43200"] {
        assert!(cookie.contains(part), "{cookie}");
    }
    assert!(!cookie.contains("Secure"));
    // The cookie carries a session value: neither the token, nor its hex, nor its SHA-256.
    let value = cookie
        .split(';')
        .next()
        .and_then(|pair| pair.split_once('='))
        .map(|(_, v)| v.to_owned())
        .unwrap();
    assert_eq!(value.len(), 64, "{cookie}");
    for leak in [
        OPERATOR.to_owned(),
        hex::encode(OPERATOR),
        hex::encode(<sha2::Sha256 as sha2::Digest>::digest(OPERATOR)),
    ] {
        assert!(!cookie.contains(&leak), "the cookie shows {leak}: {cookie}");
    }
    // A session value made up, or the token's hex (what a cookie once carried), logs nobody in.
    for forged in [hex::encode(OPERATOR), "ab".repeat(32), OPERATOR.to_owned()] {
        let (status, _, _) = send(
            &app,
            get(
                "/ui/agents",
                Some(("cookie", format!("{SESSION_COOKIE}={forged}"))),
            ),
        )
        .await;
        assert_eq!(status, 401, "{forged}");
    }
    let (_, headers, _) = send(&app, login(OPERATOR, true)).await;
    assert!(headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .contains("; Secure"));

    // The cookie logs in; so does the Authorization header.
    let session = cookie.split(';').next().unwrap().to_owned();
    let (status, _, body) = send(&app, get("/ui/agents", Some(("cookie", session.clone())))).await;
    assert_eq!(status, 200);
    assert!(
        body.contains("booking") && body.contains("Log out"),
        "{body}"
    );
    let (status, _, body) = send(
        &app,
        get(
            "/ui/agents",
            Some(("authorization", format!("Bearer {OPERATOR}"))),
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert!(body.contains("booking"));

    // Log out clears the cookie.
    let (status, headers, _) = send(
        &app,
        Request::post("/ui/logout").body(Body::empty()).unwrap(),
    )
    .await;
    assert_eq!(status, 303);
    assert!(headers[header::SET_COOKIE]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
}

#[tokio::test]
async fn agent_written_strings_are_escaped_on_every_page() {
    let app = app();
    push_hostile(&app).await;

    // Open subjects: the hostile subject, its link percent-encoded, its id escaped.
    let (status, _, body) = send(&app, operator_get("/ui/subjects")).await;
    assert_eq!(status, 200);
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(body.contains("&lt;img src=x"), "{body}");
    let href = format!(
        "/ui/subjects/shipment/{}",
        percent_encoding::utf8_percent_encode(HOSTILE_ID, percent_encoding::NON_ALPHANUMERIC)
    );
    assert!(body.contains(&href), "{body}");

    // The subject's page: record and timeline, nothing injected.
    let (status, _, body) = send(&app, operator_get(&href)).await;
    assert_eq!(status, 200, "{body}");
    assert!(!body.contains("<script>alert"), "{body}");
    assert!(!body.contains("<img src=x"), "{body}");
    assert!(body.contains("&lt;script&gt;alert('expects')&lt;/script&gt;"));
    assert!(body.contains("<svg") && body.contains(r#"class="step""#));
    // The arrival waits on its anchor: drawn as less certain.
    assert!(body.contains("current uncertain"));

    // A subject nothing is recorded about: an HTML 404.
    let (status, headers, _) = send(&app, operator_get("/ui/subjects/shipment/none")).await;
    assert_eq!(status, 404);
    assert!(headers[header::CONTENT_TYPE]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
}

#[tokio::test]
async fn tables_show_instants_to_the_second_with_the_full_value_on_hover() {
    let app = app();
    const GIVEN: &str = "2026-09-10T20:15:00.123456789Z";
    push(&app, |exps| exps[0]["dueAt"] = json!(GIVEN)).await;

    // The record's table: cut to the second, the value as given in `datetime` and `title`.
    let (status, _, body) = send(&app, operator_get("/ui/subjects/shipment/PA-2026-0901")).await;
    assert_eq!(status, 200, "{body}");
    let cell = format!(r#"<time datetime="{GIVEN}" title="{GIVEN}">2026-09-10T20:15:00Z</time>"#);
    assert!(body.contains(&cell), "{body}");
    // A whole second shows as it is.
    assert!(
        body.contains(r#"title="2026-09-11T03:15:00Z">2026-09-11T03:15:00Z</time>"#),
        "{body}"
    );
    // Nowhere in a table is an instant shown with its fraction.
    let tables = &body[body.find(r#"id="expectations""#).unwrap()..];
    assert!(
        !tables.contains(">2026-09-10T20:15:00.123456789Z<"),
        "{tables}"
    );

    // The open subjects, by next deadline: the same.
    let (_, _, body) = send(&app, operator_get("/ui/subjects")).await;
    assert!(body.contains("<time datetime="), "{body}");
}

/// `/ui/notifications` lists the tenant's notification channels from their kept state: where
/// each posts (never the URL's path), its last delivery and its failures, the agents it has told
/// failing, escaped like every page; another tenant's channels are not shown.
#[tokio::test]
async fn notifications_show_each_channels_last_delivery_and_failures() {
    use watcher_runtime::store::{AgentWatch, ChannelState, Notifications};
    let store = Arc::new(MemoryStore::new());
    let app = app_on(store.clone());
    let (status, _, body) = send(&app, operator_get("/ui/notifications")).await;
    assert_eq!(status, 200);
    assert!(body.contains("No notification channel has run"), "{body}");

    let at = |s: &str| Instant::parse(s).unwrap();
    let ok = ChannelState {
        delivered: 12,
        last_delivered_at: Some(at("2026-09-10T01:59:00.250Z")),
        last_event_id: Some("msg_0123456789abcdef0123456789abcdef".into()),
        format: Some("slack".into()),
        target: Some("https://hooks.slack.com".into()),
        ..ChannelState::new(at("2026-09-01T00:00:00Z"))
    };
    let failing = ChannelState {
        failures: 3,
        failing_since: Some(at("2026-09-10T01:00:00Z")),
        last_error: Some("HTTP 503 <b>from</b> the receiver".into()),
        format: Some("standard-webhooks".into()),
        target: Some("https://hooks.example.com".into()),
        agents: [
            (
                "booking".to_owned(),
                AgentWatch {
                    failing: true,
                    ..AgentWatch::default()
                },
            ),
            (
                "<billing>".to_owned(),
                AgentWatch {
                    card_down: true,
                    ..AgentWatch::default()
                },
            ),
            (
                "quiet".to_owned(),
                AgentWatch {
                    failed: watcher_runtime::store::Watermark {
                        through: Some(at("2026-09-09T00:00:00Z")),
                        at_edge: vec!["lapse:q".into()],
                    },
                    ..AgentWatch::default()
                },
            ),
        ]
        .into_iter()
        .collect(),
        ..ChannelState::new(at("2026-09-01T00:00:00Z"))
    };
    let t = Tenant::default_tenant();
    store.put_channel_state(&t, "ops-slack", &ok).await.unwrap();
    store
        .put_channel_state(&t, "ops-hook", &failing)
        .await
        .unwrap();
    let other = Tenant::parse("other").unwrap();
    store
        .put_channel_state(&other, "their-channel", &ok)
        .await
        .unwrap();

    let (status, _, body) = send(&app, operator_get("/ui/notifications")).await;
    assert_eq!(status, 200);
    let hook = body.find("ops-hook").expect("the failing channel");
    let slack = body.find("ops-slack").expect("the delivering channel");
    assert!(hook < slack, "by channel id");
    assert!(!body.contains("their-channel"), "another tenant's channel");
    assert!(body.contains("https://hooks.slack.com") && body.contains(">12<"));
    assert!(body.contains("msg_0123456789abcdef0123456789abcdef"));
    assert!(
        body.contains(r#"<time datetime="2026-09-10T01:59:00.25Z""#),
        "{body}"
    );
    assert!(body.contains(r#"class="failing""#));
    assert!(body.contains("HTTP 503 &lt;b&gt;from&lt;/b&gt; the receiver"));
    assert!(body.contains("booking: lapse tasks failing"), "{body}");
    assert!(
        body.contains("&lt;billing&gt;: card unavailable"),
        "escaped: {body}"
    );
    assert!(!body.contains("quiet:"), "an agent that is not failing");
    assert!(!body.contains("<b>from</b>"));
}
