//! docs/openapi.json lists exactly the routes the routers mount (watcher-http's route tables and
//! every `.route(...)` in `serve`), with the same methods; the typed answers' schemas are the ones
//! their Rust types generate; and `GET /v1/schemas/{name}.json` serves each published schema.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use http_body_util::BodyExt;
use serde_json::Value;
use tokio::sync::Notify;
use tower::ServiceExt;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_http::{watcher_router, AppState, Credentials};
use watcher_runtime::clock::FakeClock;
use watcher_runtime::directory::Directory;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `(METHOD, path)` of every route the routers mount: watcher-http's from the routers' own
/// tables, `serve`'s own (`/metrics`) from each `.route("path", get(..).post(..))` in its source.
fn mounted() -> BTreeSet<(String, String)> {
    let mut out: BTreeSet<(String, String)> = watcher_http::api_routes()
        .into_iter()
        .chain(watcher_http::learnables::learnables_routes())
        .map(|(m, p)| (m.as_str().to_owned(), p.to_owned()))
        .collect();
    let route = regex::Regex::new(r#"\.route\(\s*"([^"]+)",\s*((?:[a-z_:]+\([^()]*\)\.?)+)"#)
        .expect("regex");
    let method = regex::Regex::new(r"(?:^|\.|::)(get|post|put|delete|patch)\(").expect("regex");
    let text = std::fs::read_to_string(root().join("shared/watcher-host/src/serve/mod.rs"))
        .expect("router source");
    // Only the code, not the tests or doc comments below it.
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    for c in route.captures_iter(code) {
        for m in method.captures_iter(&c[2]) {
            out.insert((m[1].to_uppercase(), c[1].to_string()));
        }
    }
    out
}

fn documented() -> BTreeSet<(String, String)> {
    let doc: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("docs/openapi.json")).expect("docs/openapi.json"),
    )
    .expect("docs/openapi.json is JSON");
    assert_eq!(doc["openapi"], "3.1.0");
    let mut out = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("path item").keys() {
            out.insert((method.to_uppercase(), path.clone()));
        }
    }
    out
}

#[test]
fn every_mounted_route_is_documented_and_every_documented_route_is_mounted() {
    let mounted = mounted();
    // The parser itself must find the routes it is meant to check.
    for known in [
        ("POST", "/v1/agents/{agent_id}/push"),
        ("PUT", "/v1/definitions/{id}"),
        ("GET", "/v1/definitions/{id}"),
        ("POST", "/v1/definitions/{id}/lessons:check"),
        ("POST", "/v1/sources/{source_id}/webhook"),
        ("GET", "/metrics"),
    ] {
        assert!(
            mounted.contains(&(known.0.to_owned(), known.1.to_owned())),
            "{known:?} not found in {mounted:?}"
        );
    }
    let documented = documented();
    let undocumented: Vec<_> = mounted.difference(&documented).collect();
    let unmounted: Vec<_> = documented.difference(&mounted).collect();
    assert!(
        undocumented.is_empty() && unmounted.is_empty(),
        "docs/openapi.json is out of date: not documented {undocumented:?}; documented but not mounted {unmounted:?}"
    );
}

/// The answers the handlers return as typed values: (method, path as documented, status, the
/// answer's schema: a reference into `components.schemas`, which the generator collects).
fn typed_answers(
    g: &mut schemars::SchemaGenerator,
) -> Vec<(&'static str, &'static str, &'static str, Value)> {
    use learnables::{CheckReport, ServedVersion};
    use watcher_http::learnables::{
        Activated, DescriptorsList, HistoryList, LearnablesList, Tombstoned,
    };
    use watcher_http::routes::{HealthAnswer, LapsesPage, RejectionsPage, RetryAnswer};
    use watcher_runtime::facts::FactsOutcome;
    use watcher_runtime::push::PushOutcome;
    use watcher_runtime::view::{AgentsPage, SubjectView};
    let ok = |method, path, schema: schemars::Schema| (method, path, "200", schema.to_value());
    vec![
        ok("get", "/healthz", g.subschema_for::<HealthAnswer>()),
        ok(
            "post",
            "/v1/agents/{agent_id}/push",
            g.subschema_for::<PushOutcome>(),
        ),
        ok(
            "get",
            "/v1/agents/{agent_id}/rejections",
            g.subschema_for::<RejectionsPage>(),
        ),
        ok("post", "/v1/facts", g.subschema_for::<FactsOutcome>()),
        ok(
            "get",
            "/v1/sources/{source_id}/rejections",
            g.subschema_for::<RejectionsPage>(),
        ),
        ok(
            "get",
            "/v1/subjects/{subject_type}/{subject_id}",
            g.subschema_for::<SubjectView>(),
        ),
        ok("get", "/v1/lapses", g.subschema_for::<LapsesPage>()),
        ok("post", "/v1/lapses/retry", g.subschema_for::<RetryAnswer>()),
        ok("get", "/v1/agents", g.subschema_for::<AgentsPage>()),
        ok(
            "get",
            "/v1/incidents",
            g.subschema_for::<watcher_http::incidents::IncidentsPage>(),
        ),
        ok(
            "post",
            "/v1/incidents/acknowledge",
            g.subschema_for::<watcher_http::incidents::IncidentView>(),
        ),
        ok("get", "/v1/learnables", g.subschema_for::<LearnablesList>()),
        ok(
            "get",
            "/v1/definitions/{id}",
            g.subschema_for::<ServedVersion>(),
        ),
        (
            "put",
            "/v1/definitions/{id}",
            "201",
            g.subschema_for::<ServedVersion>().to_value(),
        ),
        ok(
            "get",
            "/v1/definitions/{id}/descriptors",
            g.subschema_for::<DescriptorsList>(),
        ),
        ok(
            "get",
            "/v1/definitions/{id}/versions/{n}",
            g.subschema_for::<ServedVersion>(),
        ),
        ok(
            "post",
            "/v1/definitions/{id}/show-back",
            g.subschema_for::<std::collections::BTreeMap<String, learnables::Reading>>(),
        ),
        ok(
            "post",
            "/v1/definitions/{id}/lessons:check",
            g.subschema_for::<CheckReport>(),
        ),
        ok(
            "get",
            "/v1/definitions/{id}/history",
            g.subschema_for::<HistoryList>(),
        ),
        ok(
            "post",
            "/v1/definitions/{id}/activate",
            g.subschema_for::<Activated>(),
        ),
        ok(
            "post",
            "/v1/definitions/{id}/versions/{n}/tombstone",
            g.subschema_for::<Tombstoned>(),
        ),
    ]
}

/// The request bodies the handlers parse into types: (method, path as documented, the body's
/// schema: a reference into `components.schemas`).
fn typed_requests(g: &mut schemars::SchemaGenerator) -> Vec<(&'static str, &'static str, Value)> {
    use watcher_http::learnables_requests::{
        ActivateRequest, CreateDefinitionRequest, ShowBackRequest, TombstoneRequest,
    };
    vec![
        (
            "post",
            "/v1/lapses/retry",
            g.subschema_for::<watcher_http::routes::RetryRequest>()
                .to_value(),
        ),
        (
            "post",
            "/v1/incidents/acknowledge",
            g.subschema_for::<watcher_http::routes::AcknowledgeRequest>()
                .to_value(),
        ),
        (
            "put",
            "/v1/definitions/{id}",
            g.subschema_for::<CreateDefinitionRequest>().to_value(),
        ),
        (
            "post",
            "/v1/definitions/{id}/show-back",
            g.subschema_for::<ShowBackRequest>().to_value(),
        ),
        (
            "post",
            "/v1/definitions/{id}/activate",
            g.subschema_for::<ActivateRequest>().to_value(),
        ),
        (
            "post",
            "/v1/definitions/{id}/versions/{n}/tombstone",
            g.subschema_for::<TombstoneRequest>().to_value(),
        ),
    ]
}

/// The query parameters the handlers parse into types: (method, path as documented, parameter,
/// its schema: a reference into `components.schemas`). `delivery` is the very type the answer's
/// `delivery` member is, so the list filters by every state it shows.
fn typed_parameters(
    g: &mut schemars::SchemaGenerator,
) -> Vec<(&'static str, &'static str, &'static str, Value)> {
    use watcher_runtime::store::DeliveryState;
    vec![
        (
            "get",
            "/v1/lapses",
            "delivery",
            g.subschema_for::<DeliveryState>().to_value(),
        ),
        (
            "get",
            "/v1/incidents",
            "kind",
            g.subschema_for::<watcher_core::record::LapseKind>()
                .to_value(),
        ),
    ]
}

/// A JSON Schema 2020-12 generator whose definitions go to `components.schemas`, for answers
/// (written: a member skipped when empty is not required) or requests (read: a member with a
/// default is not required).
fn generator(contract: schemars::generate::Contract) -> schemars::SchemaGenerator {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.definitions_path = "/components/schemas".into();
    settings.contract = contract;
    settings.into_generator()
}

/// issue 23 item 3: each typed answer's, request body's and typed query parameter's schema in
/// docs/openapi.json is a reference into `components.schemas`, and those components are what the
/// Rust types generate
/// (schemars, JSON Schema 2020-12 as OpenAPI 3.1 reads it). `UPDATE_DOCS=1 cargo test -p watcher-http
/// --test it openapi::` rewrites them after a type changes.
#[test]
fn the_typed_answers_and_requests_schemas_are_generated_from_their_types() {
    let mut answers_generator = generator(schemars::generate::Contract::Serialize);
    let answers = typed_answers(&mut answers_generator);
    let parameters = typed_parameters(&mut answers_generator);
    let mut requests_generator = generator(schemars::generate::Contract::Deserialize);
    let requests = typed_requests(&mut requests_generator);
    let definitions = answers_generator
        .take_definitions(true)
        .into_iter()
        .chain(requests_generator.take_definitions(true));
    let path = root().join("docs/openapi.json");
    let doc: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("docs/openapi.json"))
            .expect("docs/openapi.json is JSON");
    let mut want = doc.clone();
    let schemas = want["components"]["schemas"]
        .as_object_mut()
        .expect("components.schemas");
    for (name, schema) in definitions {
        schemas.insert(name, schema);
    }
    for (method, route, status, schema) in answers {
        let ok = &mut want["paths"][route][method]["responses"][status];
        assert!(
            ok.is_object(),
            "docs/openapi.json has no {status} for {method} {route}"
        );
        ok["content"]["application/json"]["schema"] = schema;
    }
    for (method, route, name, schema) in parameters {
        let parameter = want["paths"][route][method]["parameters"]
            .as_array_mut()
            .and_then(|ps| ps.iter_mut().find(|p| p["name"] == name));
        let Some(parameter) = parameter else {
            panic!("docs/openapi.json has no parameter `{name}` for {method} {route}");
        };
        parameter["schema"] = schema;
    }
    for (method, route, schema) in requests {
        let body = &mut want["paths"][route][method]["requestBody"];
        assert!(
            body.is_object(),
            "docs/openapi.json has no request body for {method} {route}"
        );
        body["content"]["application/json"]["schema"] = schema;
    }
    if want == doc {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let text = serde_json::to_string_pretty(&want).expect("JSON") + "\n";
        std::fs::write(&path, text).expect("write docs/openapi.json");
        return;
    }
    panic!(
        "docs/openapi.json's typed answers or request bodies differ from their types' schemas: run \
         `UPDATE_DOCS=1 cargo test -p watcher-http --test it openapi::`"
    );
}

#[test]
fn every_schema_reference_in_the_document_exists() {
    let text = std::fs::read_to_string(root().join("docs/openapi.json")).unwrap();
    let re = regex::Regex::new(r#""\$ref": "schemas/([A-Za-z]+)\.json""#).unwrap();
    let mut seen = 0;
    for c in re.captures_iter(&text) {
        assert!(
            watcher_http::schemas::schema(&c[1]).is_some(),
            "{} is not published",
            &c[1]
        );
        seen += 1;
    }
    assert!(seen >= 5);
}

#[tokio::test]
async fn the_schema_route_serves_each_schema_and_names_them_on_404() {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let app = watcher_router(AppState {
        watcher: Arc::new(Watcher::new(store, Directory::new(), Settings::default())),
        credentials: Arc::new(Credentials::new()),
        clock: Arc::new(FakeClock::new(
            Instant::parse("2026-09-11T12:00:00Z").unwrap(),
        )),
        wake: Arc::new(Notify::new()),
    });
    for (name, text) in watcher_http::schemas::SCHEMAS {
        let res = app
            .clone()
            .oneshot(
                Request::get(format!("/v1/schemas/{name}.json"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{name}");
        assert_eq!(
            res.headers()[header::CONTENT_TYPE],
            "application/schema+json"
        );
        let body = res.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(std::str::from_utf8(&body).unwrap(), *text);
        let v: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(v["title"], *name);
    }
    let res = app
        .oneshot(
            Request::get("/v1/schemas/Nope.json")
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let body = res.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&body).unwrap();
    assert!(
        v["detail"].as_str().unwrap().contains("Expectation.json"),
        "{v}"
    );
}

fn app() -> axum::Router {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    watcher_router(AppState {
        watcher: Arc::new(Watcher::new(store, Directory::new(), Settings::default())),
        credentials: Arc::new(Credentials::new()),
        clock: Arc::new(FakeClock::new(
            Instant::parse("2026-09-11T12:00:00Z").unwrap(),
        )),
        wake: Arc::new(Notify::new()),
    })
}

/// `GET uri` with `Accept: accept` (none when empty): status, a header's value, body bytes.
async fn get_with(
    app: &axum::Router,
    uri: &str,
    accept: &str,
) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
    let mut req = Request::get(uri);
    if !accept.is_empty() {
        req = req.header(header::ACCEPT, accept);
    }
    let res = app
        .clone()
        .oneshot(req.body(Body::empty()).unwrap())
        .await
        .unwrap();
    let (status, headers) = (res.status(), res.headers().clone());
    let body = res.into_body().collect().await.unwrap().to_bytes();
    (status, headers, body.to_vec())
}

#[tokio::test]
async fn the_root_sends_a_browser_to_the_page() {
    let app = app();
    for accept in [
        "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        "",
        "*/*",
    ] {
        let (status, headers, _) = get_with(&app, "/", accept).await;
        assert_eq!(status, StatusCode::SEE_OTHER, "Accept {accept:?}");
        assert_eq!(headers[header::LOCATION], "/ui", "Accept {accept:?}");
        assert_eq!(headers[header::VARY], "accept");
    }
}

#[tokio::test]
async fn the_root_answers_an_index_of_the_api_for_json_and_every_link_answers() {
    let app = app();
    let (status, headers, body) = get_with(&app, "/", "application/json").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    let index: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(index["name"], "a2a-watcher");
    assert_eq!(index["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(index["links"]["health"], "/healthz");
    assert_eq!(index["links"]["openapi"], "/openapi.json");
    assert_eq!(index["links"]["ui"], "/ui");
    let schemas = index["links"]["schemas"].as_object().unwrap();
    assert_eq!(schemas.len(), watcher_http::schemas::SCHEMAS.len());
    assert_eq!(schemas["Expectation"], "/v1/schemas/Expectation.json");
    for link in schemas.values() {
        let (status, _, _) = get_with(&app, link.as_str().unwrap(), "").await;
        assert_eq!(status, StatusCode::OK, "{link}");
    }
    let (status, _, _) = get_with(&app, "/healthz", "").await;
    assert_eq!(status, StatusCode::OK);
    let (status, headers, body) = get_with(&app, "/openapi.json", "").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(headers[header::CONTENT_TYPE], "application/json");
    let served: Value = serde_json::from_slice(&body).unwrap();
    let checked_in: Value =
        serde_json::from_str(&std::fs::read_to_string(root().join("docs/openapi.json")).unwrap())
            .unwrap();
    assert_eq!(served, checked_in);
    // The page the root redirects to is there.
    let (status, _, _) = get_with(&app, "/ui", "text/html").await;
    assert!(
        status.is_success() || status.is_redirection(),
        "/ui answers {status}"
    );
}
