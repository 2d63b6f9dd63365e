//! The Learnables authority over HTTP (contracts/learnables.md), driven with `oneshot`:
//! learnables-v1 Appendix B end to end (in memory and on SQLite), refusals (§10.1, §13.3), undo
//! (§10.3), tombstones (§14), a column-mapping learnable through the same routes (§9),
//! authorization and tenancy (§13.2), `lessons:check` (§13.1), and a definition too large for
//! its store (413).

use std::sync::Arc;

use async_trait::async_trait;
use axum::body::Body;
use axum::http::{header, Request, StatusCode};
use axum::Router;
use http_body_util::BodyExt;
use learnables::{DefinitionId, DefinitionState, Registry, TenantId};
use learnables_store::{
    DefinitionStore, DefinitionStoreError, MemoryDefinitionStore, SqliteDefinitionStore,
};
use serde_json::{json, Value};
use tower::ServiceExt;
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_http::{learnables_router, Credentials, LearnablesState, Principal, Role};
use watcher_runtime::clock::FakeClock;

const DANA: &str = "dana@warehouse.example";
const REASON: &str = "Northgate's billing desk sends the pre-alerts";
const TEACHER: &str = "teacher-token";
const OPERATOR: &str = "operator-token";
const SOURCE: &str = "source-token";
const AGENT: &str = "agent-token";
const OTHER_TENANT_TEACHER: &str = "globex-teacher-token";
const DEF: &str = "/v1/definitions/prealert-triage";

// ---------------------------------------------------------------------------------------------
// Harness.

fn principal(role: Role, id: &str, tenant: &str, on_behalf_of: &[&str]) -> Principal {
    Principal {
        role,
        id: id.into(),
        tenant: Tenant::parse(tenant).expect("a tenant"),
        on_behalf_of: on_behalf_of.iter().map(|p| p.to_string()).collect(),
    }
}

fn credentials() -> Credentials {
    let mut c = Credentials::new();
    let all = [
        (
            TEACHER,
            principal(Role::Teacher, "teacher-console", "acme-logistics", &[DANA]),
        ),
        (
            OPERATOR,
            principal(Role::Operator, "ops-dashboard", "acme-logistics", &[]),
        ),
        (
            SOURCE,
            principal(Role::Source, "edi-feed", "acme-logistics", &[DANA]),
        ),
        (
            AGENT,
            principal(Role::Agent, "triage-agent", "acme-logistics", &[DANA]),
        ),
        (
            OTHER_TENANT_TEACHER,
            principal(Role::Teacher, "globex-console", "globex", &[DANA]),
        ),
    ];
    for (token, p) in all {
        c.insert(token, p).expect("a fresh token");
    }
    c
}

fn app(store: Arc<dyn DefinitionStore>) -> Router {
    learnables_router(LearnablesState {
        store,
        credentials: Arc::new(credentials()),
        clock: Arc::new(FakeClock::new(
            Instant::parse("2026-08-17T09:00:00Z").expect("an instant"),
        )),
        registry: Arc::new(Registry::builtin()),
    })
}

fn memory_app() -> Router {
    app(Arc::new(MemoryDefinitionStore::new()))
}

/// An answer: status, `Content-Type`, and the body as JSON (`null` when empty).
struct Answer {
    status: StatusCode,
    content_type: String,
    location: Option<String>,
    body: Value,
}

impl Answer {
    /// Asserts a problem+json answer with `status`, and gives its `detail`.
    fn problem(&self, status: StatusCode) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(self.content_type, "application/problem+json");
        assert_eq!(self.body["status"], json!(status.as_u16()));
        self.body["detail"].as_str().expect("a detail").to_owned()
    }

    fn ok(&self) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "{}", self.body);
        &self.body
    }
}

async fn call(app: &Router, method: &str, uri: &str, token: &str, body: Option<Value>) -> Answer {
    let mut request = Request::builder().method(method).uri(uri);
    if !token.is_empty() {
        request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let request = match body {
        Some(b) => request
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(b.to_string())),
        None => request.body(Body::empty()),
    }
    .expect("a request");
    let response = app.clone().oneshot(request).await.expect("an answer");
    let status = response.status();
    let text_header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = text_header(header::CONTENT_TYPE).unwrap_or_default();
    let location = text_header(header::LOCATION);
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    let body = if bytes.is_empty() {
        Value::Null
    } else {
        serde_json::from_slice(&bytes).unwrap_or_else(|_| json!(String::from_utf8_lossy(&bytes)))
    };
    Answer {
        status,
        content_type,
        location,
        body,
    }
}

async fn get(app: &Router, uri: &str, token: &str) -> Answer {
    call(app, "GET", uri, token, None).await
}

async fn post(app: &Router, uri: &str, token: &str, body: Value) -> Answer {
    call(app, "POST", uri, token, Some(body)).await
}

// ---------------------------------------------------------------------------------------------
// Fixtures: the spec's Appendix B.

fn customers() -> Value {
    json!({
        "customers": {
            "learnable": "marks",
            "entry": "customer",
            "teaches": "which customer a message belongs to",
            "skills": ["triage_inbound", "recheck_message"],
            "entries": {
                "northgate": { "label": "Northgate Motors Ltd", "value": { "marks": [
                    { "pattern": "@northgate-motors\\.example", "where": "from" },
                    { "pattern": "NGM-\\d{6}", "where": "subject" }
                ] } },
                "alhamra": { "label": "Al Hamra Trading", "value": { "marks": [
                    { "pattern": "alhamra\\.example" }
                ] } }
            }
        }
    })
}

fn billing_message() -> Value {
    json!({
        "from": "billing@origin.example",
        "subject": "Pre-alert PA-2026-0901",
        "body": "Please find the pre-alert attached.",
        "attachments": ["PA-2026-0901.pdf"]
    })
}

fn lesson(entry: &str, pattern: &str, taught_by: &str) -> Value {
    json!({
        "collection": "customers",
        "entry": entry,
        "value": { "pattern": pattern, "where": "from" },
        "taughtBy": taught_by,
        "reason": REASON
    })
}

fn billing_lesson() -> Value {
    lesson("northgate", "billing@origin\\.example", DANA)
}

/// `PUT`s the Appendix B definition; gives the 201 answer's body.
async fn create_definition(app: &Router) -> Value {
    let created = call(
        app,
        "PUT",
        DEF,
        TEACHER,
        Some(json!({ "collections": customers(), "taughtBy": DANA, "reason": "first cut" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.location.as_deref(), Some(DEF));
    created.body
}

async fn show_back(app: &Router, token: &str) -> Value {
    post(
        app,
        &format!("{DEF}/show-back"),
        token,
        json!({ "input": billing_message() }),
    )
    .await
    .ok()
    .clone()
}

async fn active_version(app: &Router) -> u64 {
    get(app, DEF, TEACHER).await.ok()["definitionVersion"]
        .as_u64()
        .expect("a version number")
}

// ---------------------------------------------------------------------------------------------
// Appendix B.

async fn appendix_b(app: Router) {
    // 1. The definition exists at version 1; its descriptors are ready for the card.
    let v1 = create_definition(&app).await;
    assert_eq!(v1["definitionVersion"], json!(1));
    let v1_id = v1["versionId"].as_str().expect("a versionId").to_owned();
    assert!(v1_id.starts_with("sha256:"), "{v1_id}");
    let again = call(
        &app,
        "PUT",
        DEF,
        TEACHER,
        Some(json!({ "collections": customers(), "taughtBy": DANA })),
    )
    .await;
    again.problem(StatusCode::CONFLICT);

    let learnables = get(&app, "/v1/learnables", OPERATOR).await;
    let names: Vec<&str> = learnables.ok()["learnables"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert_eq!(names, ["marks", "column-mapping"]);
    let descriptors = get(&app, &format!("{DEF}/descriptors"), TEACHER).await;
    let d = &descriptors.ok()["learnables"][0];
    assert_eq!(d["collection"], json!("customers"));
    assert_eq!(d["entry"], json!("customer"));
    assert_eq!(d["decidedBy"], json!("rules"));
    assert_eq!(d["lessonFields"][0]["name"], json!("pattern"));
    assert_eq!(d["lessonFields"][1]["name"], json!("where"));

    // 2. A message from billing@origin.example: no mark matches.
    let before = show_back(&app, TEACHER).await;
    assert_eq!(before["customer"]["settled"], json!(false));
    assert_eq!(
        before["customer"]["reads"],
        json!("Still cannot tell whose this is.")
    );

    // 4-5. Dana teaches through the teacher console; a new version is published.
    let taught = post(&app, &format!("{DEF}/lessons"), TEACHER, billing_lesson()).await;
    let result = taught.ok();
    assert_eq!(result["learned"], json!(true));
    assert_eq!(
        result["describes"],
        json!("matches 'billing@origin\\.example' in the from")
    );
    assert_eq!(result["definitionVersion"], json!(2));
    assert_eq!(result["previousVersionId"], json!(v1_id));
    let v2_id = result["versionId"]
        .as_str()
        .expect("a versionId")
        .to_owned();
    assert_ne!(v2_id, v1_id);

    // 6. Show-back displays the effect, for the teacher and for an operator.
    for token in [TEACHER, OPERATOR] {
        let after = show_back(&app, token).await;
        assert_eq!(after["customer"]["settled"], json!(true));
        assert_eq!(after["customer"]["winner"], json!("northgate"));
        assert_eq!(
            after["customer"]["reads"],
            json!("Reads as Northgate Motors Ltd, on billing@origin.example")
        );
    }

    // The history carries the lesson with its author, credential and reason, newest first.
    let history = get(&app, &format!("{DEF}/history"), OPERATOR).await;
    let h = history.ok()["history"].as_array().expect("a list").clone();
    assert_eq!(h.len(), 2);
    assert_eq!(h[0]["kind"], json!("lesson"));
    assert_eq!(h[0]["definitionVersion"], json!(2));
    assert_eq!(h[0]["versionId"], json!(v2_id));
    assert_eq!(h[0]["previousVersionId"], json!(v1_id));
    assert_eq!(h[0]["taughtBy"], json!(DANA));
    assert_eq!(h[0]["via"], json!("teacher-console"));
    assert_eq!(h[0]["reason"], json!(REASON));
    assert_eq!(
        h[0]["describes"],
        json!("matches 'billing@origin\\.example' in the from")
    );
    assert_eq!(h[0]["at"], json!("2026-08-17T09:00:00Z"));
    assert_eq!(h[1]["kind"], json!("created"));
    assert_eq!(h[1]["reason"], json!("first cut"));

    // 7. Pinning: version 1 still reads exactly as it did; the active one is 2.
    let pinned = get(&app, &format!("{DEF}/versions/1"), OPERATOR).await;
    assert_eq!(pinned.ok(), &v1);
    assert_eq!(active_version(&app).await, 2);
    let pinned_read = post(
        &app,
        &format!("{DEF}/show-back"),
        TEACHER,
        json!({ "input": billing_message(), "definitionVersion": 1 }),
    )
    .await;
    assert_eq!(pinned_read.ok(), &before);

    // §10.2: the same lesson again learns nothing, makes no version, is not an error.
    let same = post(&app, &format!("{DEF}/lessons"), TEACHER, billing_lesson()).await;
    let same = same.ok();
    assert_eq!(same["learned"], json!(false));
    assert_eq!(same["definitionVersion"], json!(2));
    assert_eq!(same["versionId"], json!(v2_id));
    assert!(same.get("previousVersionId").is_none(), "{same}");
    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    assert_eq!(history.ok()["history"].as_array().map(Vec::len), Some(2));
    let missing = get(&app, &format!("{DEF}/versions/3"), TEACHER).await;
    missing.problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn appendix_b_over_http() {
    appendix_b(memory_app()).await;
}

#[tokio::test]
async fn appendix_b_over_http_on_sqlite() {
    let store = SqliteDefinitionStore::memory().expect("an in-memory database");
    appendix_b(app(Arc::new(store))).await;
}

// ---------------------------------------------------------------------------------------------
// Refusals (§10.1, §13.3).

#[tokio::test]
async fn an_unbalanced_parenthesis_is_refused_with_the_compilers_reason() {
    let app = memory_app();
    let v1 = create_definition(&app).await;
    let refused = post(
        &app,
        &format!("{DEF}/lessons"),
        TEACHER,
        lesson("northgate", "billing@origin\\.example(", DANA),
    )
    .await;
    let detail = refused.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(
        detail,
        "\"billing@origin\\\\.example(\" is not a usable pattern: unclosed group at position 24"
    );
    assert_eq!(
        get(&app, DEF, TEACHER).await.ok(),
        &v1,
        "active version unchanged"
    );
    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    assert_eq!(history.ok()["history"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn a_pattern_over_the_size_limit_is_refused() {
    let app = memory_app();
    create_definition(&app).await;
    let refused = post(
        &app,
        &format!("{DEF}/lessons"),
        TEACHER,
        lesson("northgate", "\\w{5000}", DANA),
    )
    .await;
    let detail = refused.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        detail.starts_with(
            "\"\\\\w{5000}\" is not a usable pattern: it compiles to more than 1024 KiB"
        ),
        "{detail}"
    );
    assert_eq!(active_version(&app).await, 1);

    // The same judgement applies to values in PUT.
    let mut bad = customers();
    bad["customers"]["entries"]["alhamra"]["value"]["marks"][0]["pattern"] = json!("(unclosed");
    let put = call(
        &app,
        "PUT",
        "/v1/definitions/another",
        TEACHER,
        Some(json!({ "collections": bad, "taughtBy": DANA })),
    )
    .await;
    let detail = put.problem(StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        detail.contains("is not a usable pattern: unclosed group"),
        "{detail}"
    );
    get(&app, "/v1/definitions/another", TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn malformed_requests_are_400_problems() {
    let app = memory_app();
    create_definition(&app).await;
    let not_json = Request::builder()
        .method("POST")
        .uri(format!("{DEF}/lessons"))
        .header(header::AUTHORIZATION, format!("Bearer {TEACHER}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from("{ not json"))
        .expect("a request");
    let answer = app.clone().oneshot(not_json).await.expect("an answer");
    assert_eq!(answer.status(), StatusCode::BAD_REQUEST);
    let no_value = post(
        &app,
        &format!("{DEF}/lessons"),
        TEACHER,
        json!({ "collection": "customers", "entry": "northgate", "taughtBy": DANA }),
    )
    .await;
    assert!(no_value.problem(StatusCode::BAD_REQUEST).contains("value"));
    get(&app, &format!("{DEF}/versions/abc"), TEACHER)
        .await
        .problem(StatusCode::BAD_REQUEST);
    get(&app, "/v1/definitions/no-such-thing", TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);
    let unknown_collection = post(
        &app,
        &format!("{DEF}/lessons"),
        TEACHER,
        json!({ "collection": "suppliers", "entry": "x", "value": {}, "taughtBy": DANA }),
    )
    .await;
    unknown_collection.problem(StatusCode::UNPROCESSABLE_ENTITY);
}

/// `body` sent as it is (a JSON text no `Value` can hold, such as a repeated member).
async fn post_text(app: &Router, uri: &str, token: &str, body: &str) -> Answer {
    let request = Request::builder()
        .method("POST")
        .uri(uri)
        .header(header::AUTHORIZATION, format!("Bearer {token}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(body.to_owned()))
        .expect("a request");
    let response = app.clone().oneshot(request).await.expect("an answer");
    let status = response.status();
    let content_type = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let bytes = response
        .into_body()
        .collect()
        .await
        .expect("a body")
        .to_bytes();
    Answer {
        status,
        content_type,
        location: None,
        body: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

#[tokio::test]
async fn a_duplicated_member_is_refused_by_name_and_nothing_is_taught() {
    let app = memory_app();
    create_definition(&app).await;
    // serde_json alone keeps the last "entry": this lesson would teach alhamra.
    let twice = format!(
        r#"{{"collection": "customers", "entry": "northgate", "value": {{"pattern": "billing@origin\\.example", "where": "from"}}, "taughtBy": "{DANA}", "entry": "alhamra"}}"#
    );
    let answer = post_text(&app, &format!("{DEF}/lessons"), TEACHER, &twice).await;
    assert_eq!(
        answer.problem(StatusCode::BAD_REQUEST),
        "the member \"entry\" appears twice"
    );
    // Deeper, inside the lesson's value.
    let inner = format!(
        r#"{{"collection": "customers", "entry": "northgate", "value": {{"pattern": "a\\.example", "where": "from", "pattern": "b\\.example"}}, "taughtBy": "{DANA}"}}"#
    );
    let answer = post_text(&app, &format!("{DEF}/lessons"), TEACHER, &inner).await;
    assert_eq!(
        answer.problem(StatusCode::BAD_REQUEST),
        "the member \"pattern\" appears twice"
    );
    let show = r#"{"input": {"from": "billing@origin.example", "from": "x@alhamra.example"}}"#;
    let answer = post_text(&app, &format!("{DEF}/show-back"), OPERATOR, show).await;
    assert_eq!(
        answer.problem(StatusCode::BAD_REQUEST),
        "the member \"from\" appears twice"
    );
    assert_eq!(active_version(&app).await, 1, "nothing was taught");
}

#[tokio::test]
async fn text_in_two_unicode_forms_is_one_text() {
    const COMPOSED: &str = "Caf\u{E9} total";
    const DECOMPOSED: &str = "Cafe\u{301} total";
    let app = memory_app();
    let uri = "/v1/definitions/sheet-import";
    let fields = json!({
        "fields": {
            "learnable": "column-mapping",
            "entry": "field",
            "teaches": "which field a spreadsheet column holds",
            "entries": {
                "Montant_d\u{FB01}nal": { "label": "Amount", "value": { "headers": [COMPOSED] } }
            }
        }
    });
    let created = call(
        &app,
        "PUT",
        uri,
        TEACHER,
        Some(json!({ "collections": fields, "taughtBy": DANA })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    // A heading taught composed matches the same heading arriving decomposed.
    let read = post(
        &app,
        &format!("{uri}/show-back"),
        OPERATOR,
        json!({ "input": { "header": DECOMPOSED } }),
    )
    .await;
    assert_eq!(read.ok()["field"]["winner"], json!("Montant_d\u{FB01}nal"));
    // Teaching the decomposed form, to the entry named decomposed, is the same lesson: no twin.
    let again = post(
        &app,
        &format!("{uri}/lessons"),
        TEACHER,
        json!({ "collection": "fields", "entry": "Montant_d\u{FB01}nal",
                "value": { "header": DECOMPOSED }, "taughtBy": DANA }),
    )
    .await;
    assert_eq!(again.ok()["learned"], json!(false), "{}", again.body);
    assert_eq!(again.ok()["definitionVersion"], json!(1));
    // An entry name sent decomposed names the entry stored composed.
    let named = post(
        &app,
        &format!("{uri}/lessons"),
        TEACHER,
        json!({ "collection": "fields", "entry": "Caf\u{E9}",
                "value": { "header": "Prix" }, "taughtBy": DANA }),
    )
    .await;
    assert_eq!(named.ok()["learned"], json!(true));
    let same = post(
        &app,
        &format!("{uri}/lessons"),
        TEACHER,
        json!({ "collection": "fields", "entry": "Cafe\u{301}",
                "value": { "header": "prix" }, "taughtBy": DANA }),
    )
    .await;
    assert_eq!(same.ok()["learned"], json!(false), "{}", same.body);
    let active = get(&app, uri, OPERATOR).await;
    let entries: Vec<String> = active.ok()["collections"]["fields"]["entries"]
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    assert_eq!(
        entries,
        ["Caf\u{E9}", "Montant_d\u{FB01}nal"],
        "one entry per name, and no compatibility folding of the ligature"
    );
}

// ---------------------------------------------------------------------------------------------
// Undo and tombstones (§10.3, §14).

#[tokio::test]
async fn activating_version_1_undoes_the_lesson() {
    let app = memory_app();
    let v1 = create_definition(&app).await;
    let taught = post(&app, &format!("{DEF}/lessons"), TEACHER, billing_lesson()).await;
    let v2_id = taught.ok()["versionId"].clone();
    assert_eq!(
        show_back(&app, TEACHER).await["customer"]["settled"],
        json!(true)
    );

    let undo = post(
        &app,
        &format!("{DEF}/activate"),
        TEACHER,
        json!({ "definitionVersion": 1, "taughtBy": DANA, "reason": "wrong customer" }),
    )
    .await;
    assert_eq!(
        undo.ok(),
        &json!({
            "activated": true,
            "definitionVersion": 1,
            "versionId": v1["versionId"],
            "previousVersionId": v2_id
        })
    );
    let read = show_back(&app, TEACHER).await;
    assert_eq!(read["customer"]["settled"], json!(false));
    assert_eq!(
        read["customer"]["reads"],
        json!("Still cannot tell whose this is.")
    );
    assert_eq!(get(&app, DEF, OPERATOR).await.ok(), &v1);

    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    let h = &history.ok()["history"];
    assert_eq!(h.as_array().map(Vec::len), Some(3));
    assert_eq!(h[0]["kind"], json!("activation"));
    assert_eq!(h[0]["definitionVersion"], json!(1));
    assert_eq!(h[0]["taughtBy"], json!(DANA));
    assert_eq!(h[0]["via"], json!("teacher-console"));
    assert_eq!(h[0]["reason"], json!("wrong customer"));

    let noop = post(
        &app,
        &format!("{DEF}/activate"),
        TEACHER,
        json!({ "definitionVersion": 1, "taughtBy": DANA }),
    )
    .await;
    assert_eq!(noop.ok()["activated"], json!(false));
    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    assert_eq!(history.ok()["history"].as_array().map(Vec::len), Some(3));
    post(
        &app,
        &format!("{DEF}/activate"),
        TEACHER,
        json!({ "definitionVersion": 9, "taughtBy": DANA }),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn a_tombstoned_version_answers_410_and_stays_in_history() {
    let app = memory_app();
    create_definition(&app).await;
    post(&app, &format!("{DEF}/lessons"), TEACHER, billing_lesson())
        .await
        .ok();

    // The active version cannot be tombstoned.
    let active = post(
        &app,
        &format!("{DEF}/versions/2/tombstone"),
        TEACHER,
        json!({ "taughtBy": DANA }),
    )
    .await;
    active.problem(StatusCode::CONFLICT);

    post(
        &app,
        &format!("{DEF}/activate"),
        TEACHER,
        json!({ "definitionVersion": 1, "taughtBy": DANA }),
    )
    .await
    .ok();
    let gone = post(
        &app,
        &format!("{DEF}/versions/2/tombstone"),
        TEACHER,
        json!({ "taughtBy": DANA, "reason": "holds a personal address" }),
    )
    .await;
    assert_eq!(gone.ok()["tombstoned"], json!(true));
    assert_eq!(gone.ok()["definitionVersion"], json!(2));

    get(&app, &format!("{DEF}/versions/2"), OPERATOR)
        .await
        .problem(StatusCode::GONE);
    post(
        &app,
        &format!("{DEF}/activate"),
        TEACHER,
        json!({ "definitionVersion": 2, "taughtBy": DANA }),
    )
    .await
    .problem(StatusCode::GONE);
    let again = post(
        &app,
        &format!("{DEF}/versions/2/tombstone"),
        TEACHER,
        json!({ "taughtBy": DANA }),
    )
    .await;
    assert_eq!(again.ok()["tombstoned"], json!(false));

    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    let h = history.ok()["history"].as_array().expect("a list").clone();
    assert_eq!(h[0]["kind"], json!("tombstone"));
    assert_eq!(h[0]["definitionVersion"], json!(2));
    assert_eq!(h[0]["reason"], json!("holds a personal address"));
    let lesson = h
        .iter()
        .find(|e| e["kind"] == json!("lesson"))
        .expect("the lesson stays in history");
    assert_eq!(lesson["definitionVersion"], json!(2));
    assert_eq!(lesson["taughtBy"], json!(DANA));
    assert_eq!(lesson["via"], json!("teacher-console"));
    assert_eq!(lesson["redacted"], json!(true));
    assert_eq!(lesson["describes"], Value::Null);
    assert_eq!(lesson["reason"], Value::Null);

    // Version 1 still serves; teaching again makes version 3 from the active version.
    get(&app, &format!("{DEF}/versions/1"), TEACHER).await.ok();
    let retaught = post(&app, &format!("{DEF}/lessons"), TEACHER, billing_lesson()).await;
    assert_eq!(retaught.ok()["definitionVersion"], json!(3));
}

// ---------------------------------------------------------------------------------------------
// One code path for a value with no `pattern` (§9).

#[tokio::test]
async fn a_column_mapping_goes_through_the_same_routes() {
    let app = memory_app();
    let uri = "/v1/definitions/sheet-import";
    let fields = json!({
        "fields": {
            "learnable": "column-mapping",
            "entry": "field",
            "teaches": "which field a spreadsheet column holds",
            "entries": {
                "invoice_number": { "label": "Invoice number", "value": { "headers": ["Invoice No"] } },
                "amount": { "label": "Amount", "value": { "headers": ["Total"] } }
            }
        }
    });
    let created = call(
        &app,
        "PUT",
        uri,
        TEACHER,
        Some(json!({ "collections": fields, "taughtBy": DANA })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let read = |app: Router| async move {
        post(
            &app,
            &format!("{uri}/show-back"),
            OPERATOR,
            json!({ "input": { "header": "Inv #" } }),
        )
        .await
        .ok()
        .clone()
    };
    assert_eq!(read(app.clone()).await["field"]["settled"], json!(false));

    let mapping = json!({
        "collection": "fields", "entry": "invoice_number",
        "value": { "header": "Inv #" }, "taughtBy": DANA, "reason": "the new supplier sheet"
    });
    let check = post(
        &app,
        &format!("{uri}/lessons:check"),
        TEACHER,
        json!({ "lesson": mapping, "corpus": [{ "header": "Inv #" }, { "header": "Total" }] }),
    )
    .await;
    assert_eq!(
        check.ok(),
        &json!({ "matches": 1, "changes": [{ "input": 0, "from": null, "to": "invoice_number" }] })
    );
    let taught = post(&app, &format!("{uri}/lessons"), TEACHER, mapping.clone()).await;
    assert_eq!(taught.ok()["learned"], json!(true));
    assert_eq!(taught.ok()["definitionVersion"], json!(2));
    let after = read(app.clone()).await;
    assert_eq!(after["field"]["settled"], json!(true));
    assert_eq!(after["field"]["winner"], json!("invoice_number"));
    let again = post(&app, &format!("{uri}/lessons"), TEACHER, mapping).await;
    assert_eq!(again.ok()["learned"], json!(false));

    let empty_header = post(
        &app,
        &format!("{uri}/lessons"),
        TEACHER,
        json!({ "collection": "fields", "entry": "amount", "value": { "header": "  " }, "taughtBy": DANA }),
    )
    .await;
    empty_header.problem(StatusCode::UNPROCESSABLE_ENTITY);
    let d = get(&app, &format!("{uri}/descriptors"), OPERATOR).await;
    assert_eq!(d.ok()["learnables"][0]["collection"], json!("fields"));
}

// ---------------------------------------------------------------------------------------------
// Authorization and tenancy (§13.2; contract "Credentials").

#[tokio::test]
async fn sources_agents_and_operators_cannot_write() {
    let app = memory_app();
    for token in [SOURCE, AGENT, OPERATOR] {
        call(
            &app,
            "PUT",
            DEF,
            token,
            Some(json!({ "collections": customers(), "taughtBy": DANA })),
        )
        .await
        .problem(StatusCode::FORBIDDEN);
    }
    create_definition(&app).await;
    let writes = [
        (format!("{DEF}/lessons"), billing_lesson()),
        (
            format!("{DEF}/lessons:check"),
            json!({ "lesson": billing_lesson(), "corpus": [billing_message()] }),
        ),
        (
            format!("{DEF}/activate"),
            json!({ "definitionVersion": 1, "taughtBy": DANA }),
        ),
        (
            format!("{DEF}/versions/1/tombstone"),
            json!({ "taughtBy": DANA }),
        ),
    ];
    for token in [SOURCE, AGENT, OPERATOR] {
        for (uri, body) in &writes {
            post(&app, uri, token, body.clone())
                .await
                .problem(StatusCode::FORBIDDEN);
        }
    }
    // Sources and agents read nothing either; operators read.
    for token in [SOURCE, AGENT] {
        get(&app, DEF, token).await.problem(StatusCode::FORBIDDEN);
        get(&app, &format!("{DEF}/history"), token)
            .await
            .problem(StatusCode::FORBIDDEN);
        post(
            &app,
            &format!("{DEF}/show-back"),
            token,
            json!({ "input": billing_message() }),
        )
        .await
        .problem(StatusCode::FORBIDDEN);
    }
    get(&app, DEF, OPERATOR).await.ok();
    get(&app, &format!("{DEF}/versions/1"), OPERATOR).await.ok();
    get(&app, DEF, "").await.problem(StatusCode::UNAUTHORIZED);
    get(&app, DEF, "nobody-knows-this")
        .await
        .problem(StatusCode::UNAUTHORIZED);
    assert_eq!(active_version(&app).await, 1, "nothing was written");
    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    assert_eq!(history.ok()["history"].as_array().map(Vec::len), Some(1));
}

#[tokio::test]
async fn taught_by_must_be_the_teacher_or_someone_it_teaches_for() {
    let app = memory_app();
    call(
        &app,
        "PUT",
        DEF,
        TEACHER,
        Some(json!({ "collections": customers(), "taughtBy": "mallory@elsewhere.example" })),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    create_definition(&app).await;
    let detail = post(
        &app,
        &format!("{DEF}/lessons"),
        TEACHER,
        lesson(
            "northgate",
            "billing@origin\\.example",
            "mallory@elsewhere.example",
        ),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    assert!(detail.contains("mallory@elsewhere.example"), "{detail}");
    post(
        &app,
        &format!("{DEF}/activate"),
        TEACHER,
        json!({ "definitionVersion": 1, "taughtBy": "mallory@elsewhere.example" }),
    )
    .await
    .problem(StatusCode::FORBIDDEN);
    assert_eq!(active_version(&app).await, 1);

    // The teacher's own id is allowed, and is recorded as both author and credential.
    let own = post(
        &app,
        &format!("{DEF}/lessons"),
        TEACHER,
        lesson("northgate", "billing@origin\\.example", "teacher-console"),
    )
    .await;
    assert_eq!(own.ok()["learned"], json!(true));
    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    assert_eq!(
        history.ok()["history"][0]["taughtBy"],
        json!("teacher-console")
    );
    assert_eq!(history.ok()["history"][0]["via"], json!("teacher-console"));
}

#[tokio::test]
async fn another_tenants_definition_is_404() {
    let app = memory_app();
    create_definition(&app).await;
    let t = OTHER_TENANT_TEACHER;
    get(&app, DEF, t).await.problem(StatusCode::NOT_FOUND);
    get(&app, &format!("{DEF}/versions/1"), t)
        .await
        .problem(StatusCode::NOT_FOUND);
    get(&app, &format!("{DEF}/history"), t)
        .await
        .problem(StatusCode::NOT_FOUND);
    get(&app, &format!("{DEF}/descriptors"), t)
        .await
        .problem(StatusCode::NOT_FOUND);
    post(&app, &format!("{DEF}/lessons"), t, billing_lesson())
        .await
        .problem(StatusCode::NOT_FOUND);
    post(
        &app,
        &format!("{DEF}/show-back"),
        t,
        json!({ "input": billing_message() }),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    post(
        &app,
        &format!("{DEF}/activate"),
        t,
        json!({ "definitionVersion": 1, "taughtBy": DANA }),
    )
    .await
    .problem(StatusCode::NOT_FOUND);
    assert_eq!(active_version(&app).await, 1);

    // The same id in the other tenant is another definition.
    let theirs = call(
        &app,
        "PUT",
        DEF,
        t,
        Some(json!({ "collections": customers(), "taughtBy": DANA })),
    )
    .await;
    assert_eq!(theirs.status, StatusCode::CREATED, "{}", theirs.body);
    post(&app, &format!("{DEF}/lessons"), t, billing_lesson())
        .await
        .ok();
    assert_eq!(get(&app, DEF, t).await.ok()["definitionVersion"], json!(2));
    assert_eq!(
        active_version(&app).await,
        1,
        "acme's definition is untouched"
    );
}

// ---------------------------------------------------------------------------------------------
// lessons:check (§13.1) and racing writers.

#[tokio::test]
async fn lessons_check_reports_the_over_broad_pa_2026_lesson() {
    let app = memory_app();
    create_definition(&app).await;
    let corpus: Vec<Value> = ["PA-2026-0901", "PA-2026-0902", "PA-2025-0001"]
        .iter()
        .map(|r| json!({ "from": "ops@forwarder.example", "subject": format!("Pre-alert {r}") }))
        .collect();
    let broad = json!({
        "collection": "customers", "entry": "alhamra",
        "value": { "pattern": "PA-2026", "where": "subject" }, "taughtBy": DANA
    });
    let report = post(
        &app,
        &format!("{DEF}/lessons:check"),
        TEACHER,
        json!({ "lesson": broad, "corpus": corpus }),
    )
    .await;
    assert_eq!(report.content_type, "application/json");
    assert_eq!(
        report.ok(),
        &json!({ "matches": 2, "changes": [
            { "input": 0, "from": null, "to": "alhamra" },
            { "input": 1, "from": null, "to": "alhamra" }
        ] })
    );
    assert_eq!(active_version(&app).await, 1, "check writes nothing");
    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    assert_eq!(history.ok()["history"].as_array().map(Vec::len), Some(1));

    // The colon is a literal: `lessons:check` is its own route, not `lessons` nor a capture.
    let plain = post(&app, &format!("{DEF}/lessons:other"), TEACHER, json!({})).await;
    assert_eq!(plain.status, StatusCode::NOT_FOUND);
    let refused = post(
        &app,
        &format!("{DEF}/lessons:check"),
        TEACHER,
        json!({ "lesson": lesson("alhamra", "(", DANA), "corpus": [] }),
    )
    .await;
    refused.problem(StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn two_lessons_posted_at_once_both_land() {
    let store = Arc::new(SqliteDefinitionStore::memory().expect("an in-memory database"));
    let app = app(store);
    create_definition(&app).await;
    let uri = format!("{DEF}/lessons");
    let (a, b) = tokio::join!(
        post(
            &app,
            &uri,
            TEACHER,
            lesson("northgate", "a@origin\\.example", DANA)
        ),
        post(
            &app,
            &uri,
            TEACHER,
            lesson("alhamra", "b@origin\\.example", DANA)
        ),
    );
    assert_eq!(a.ok()["learned"], json!(true));
    assert_eq!(b.ok()["learned"], json!(true));
    assert_eq!(active_version(&app).await, 3);
    for (from, winner) in [
        ("a@origin.example", "northgate"),
        ("b@origin.example", "alhamra"),
    ] {
        let read = post(
            &app,
            &format!("{DEF}/show-back"),
            TEACHER,
            json!({ "input": { "from": from } }),
        )
        .await;
        assert_eq!(read.ok()["customer"]["winner"], json!(winner));
    }
}

/// A memory store with a size limit: it refuses, as DynamoDB's store does past 400 KB, any state
/// whose JSON is longer than `limit` bytes.
struct Limited {
    inner: MemoryDefinitionStore,
    limit: usize,
}

impl Limited {
    fn check(&self, state: &DefinitionState) -> Result<(), DefinitionStoreError> {
        let bytes = serde_json::to_string(state)
            .expect("a state serializes")
            .len();
        if bytes > self.limit {
            return Err(DefinitionStoreError::TooLarge {
                what: format!("definition {}/{}", state.tenant(), state.id()),
                bytes,
                limit: self.limit,
            });
        }
        Ok(())
    }
}

#[async_trait]
impl DefinitionStore for Limited {
    async fn get(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        self.inner.get(tenant, id).await
    }

    async fn create(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
        state: &DefinitionState,
    ) -> Result<(), DefinitionStoreError> {
        self.check(state)?;
        self.inner.create(tenant, id, state).await
    }

    async fn replace(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
        state: &DefinitionState,
        expected_revision: u64,
    ) -> Result<(), DefinitionStoreError> {
        self.check(state)?;
        self.inner
            .replace(tenant, id, state, expected_revision)
            .await
    }
}

/// A write that would take a definition over its store's limit is a 413 problem naming the
/// definition, its size and the limit, and saying nothing was written: a lesson leaves the
/// active version and the history as they were (and is refused the same way again), and a `PUT`
/// creates nothing.
#[tokio::test]
async fn a_definition_too_large_for_its_store_is_413_and_nothing_changes() {
    // Version 1 is stored; a second version (a lesson keeps every version whole) will not fit.
    let inner = MemoryDefinitionStore::new();
    let v1 = create_definition(&app(Arc::new(inner.clone()))).await;
    let tenant = TenantId::parse("acme-logistics").expect("a tenant");
    let id = DefinitionId::parse("prealert-triage").expect("an id");
    let stored = inner.get(&tenant, &id).await.expect("get").expect("stored");
    let limit = serde_json::to_string(&stored).expect("serializes").len() + 100;
    let app = app(Arc::new(Limited { inner, limit }));

    let too_large = |answer: &Answer, which: &str| {
        let detail = answer.problem(StatusCode::PAYLOAD_TOO_LARGE);
        assert_eq!(answer.body["title"], json!("Payload Too Large"));
        let prefix = format!("definition acme-logistics/{which} would be ");
        let bytes: usize = detail
            .strip_prefix(&prefix)
            .and_then(|rest| rest.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("the detail names the definition and its size: {detail}"));
        assert!(bytes > limit, "{bytes} > {limit}");
        assert_eq!(
            detail,
            format!(
                "{prefix}{bytes} bytes stored, over the definition store's limit of {limit} \
                 bytes; it was refused and nothing was written. Every version keeps its whole \
                 content, so retrying cannot help: tombstone versions no longer needed, or split \
                 the definition into smaller ones."
            )
        );
    };

    for _ in 0..2 {
        let refused = post(&app, &format!("{DEF}/lessons"), TEACHER, billing_lesson()).await;
        too_large(&refused, "prealert-triage");
    }
    assert_eq!(
        get(&app, DEF, TEACHER).await.ok(),
        &v1,
        "the active version is unchanged"
    );
    let history = get(&app, &format!("{DEF}/history"), TEACHER).await;
    assert_eq!(history.ok()["history"].as_array().map(Vec::len), Some(1));
    get(&app, &format!("{DEF}/versions/2"), TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);

    let mut bigger = customers();
    bigger["customers"]["entries"]["northgate"]["label"] = json!("N".repeat(200));
    let put = call(
        &app,
        "PUT",
        "/v1/definitions/another",
        TEACHER,
        Some(json!({ "collections": bigger, "taughtBy": DANA })),
    )
    .await;
    too_large(&put, "another");
    get(&app, "/v1/definitions/another", TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);
}
