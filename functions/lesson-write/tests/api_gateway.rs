//! The lesson-write function as Lambda runs it: real `lambda_http::Request`s deserialized from
//! API Gateway HTTP API (payload 2.0) event JSON, the router as a tower `Service` (`oneshot`),
//! answers converted back the way `lambda_http::run` converts them, and definitions on DynamoDB
//! (a local moto server).
//!
//! The tests need moto: `bash infra/moto.sh` starts it on 127.0.0.1:5005; then run them with
//! `AWS_ENDPOINT_URL=http://127.0.0.1:5005 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test
//! AWS_REGION=us-east-1`. Without `AWS_ENDPOINT_URL` every test that needs it fails, saying so.

use std::ffi::OsString;
use std::sync::Arc;

use axum::http::{header, StatusCode};
use axum::Router;
use lambda_http::request::RequestContext;
use lambda_http::RequestExt;
use learnables_store_dynamodb::testing::unique_table;
use learnables_store_dynamodb::{create_table, DynamoDefinitionStore};
use lesson_write::{
    app, app_with_clock, dynamodb_client, ConfigError, FunctionConfig, DEFINITIONS_TABLE_NAME,
    WATCHER_CONFIG,
};
use serde_json::{json, Value};
use tower::ServiceExt;
use watcher_core::time::Instant;
use watcher_runtime::clock::FakeClock;

// The requests, fixtures and Appendix B steps of watcher-http's own Learnables tests, sent here
// through `call` below.
#[path = "../../../shared/watcher-http/tests/learnables_http/scenario.rs"]
mod scenario;
use scenario::*;

/// The deployment configuration the function gets in `WATCHER_CONFIG`.
const CONFIG: &str = r#"
[[teachers]]
id = "teacher-console"
token = "teacher-token"
tenant = "acme-logistics"
on_behalf_of = ["dana@warehouse.example"]

[[operators]]
id = "ops-dashboard"
token = "operator-token"
tenant = "acme-logistics"

[[sources]]
id = "edi-feed"
token = "source-token"
tenant = "acme-logistics"
"#;

// ---------------------------------------------------------------------------------------------
// Harness.

/// The function's configuration over a fresh definitions table on the emulator, and a store on
/// it through the client `main` builds ([`dynamodb_client`], which reads `AWS_ENDPOINT_URL`).
///
/// # Panics
/// When `AWS_ENDPOINT_URL` is not set, or the emulator does not answer.
async fn deployment() -> (FunctionConfig, Arc<DynamoDefinitionStore>) {
    if std::env::var_os("AWS_ENDPOINT_URL").is_none() {
        panic!(
            "AWS_ENDPOINT_URL is not set. The lesson-write function's tests run against a local \
             moto server: run `bash infra/moto.sh`, then `AWS_ENDPOINT_URL=http://127.0.0.1:5005 \
             AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
             cargo test -p watcher-fn-lesson-write`"
        );
    }
    let table = unique_table("lesson-write-test");
    let config = FunctionConfig::from_lookup(|name| match name {
        DEFINITIONS_TABLE_NAME => Some(OsString::from(&table)),
        WATCHER_CONFIG => Some(OsString::from(CONFIG)),
        _ => None,
    })
    .expect("a valid configuration");
    let client = dynamodb_client(
        &watcher_aws::sdk_env::sdk_config_from_env().expect("AWS_REGION and credentials set"),
    );
    create_table(&client, config.table()).await.expect(
        "create the definitions table (is moto answering at AWS_ENDPOINT_URL? `bash infra/moto.sh` starts it)",
    );
    let store = Arc::new(DynamoDefinitionStore::new(client, config.table()));
    (config, store)
}

/// The API Gateway HTTP API (payload format 2.0) event of a request to the `$default` stage,
/// as API Gateway sends it to the function through template.yaml's routes
/// (`GET /v1/learnables` and `ANY /v1/definitions/{proxy+}`).
///
/// The body is the text sent, so that it can be a JSON text no `Value` can hold (a member given
/// twice).
fn event_text(method: &str, path: &str, token: Option<&str>, body: Option<String>) -> String {
    let (route_key, path_parameters) = match path.strip_prefix("/v1/definitions/") {
        Some(proxy) => (
            "ANY /v1/definitions/{proxy+}".to_owned(),
            json!({ "proxy": proxy }),
        ),
        None => (format!("{method} {path}"), json!({})),
    };
    let mut headers = json!({
        "accept": "application/json",
        "content-length": body.as_deref().map_or(0, str::len).to_string(),
        "host": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
        "user-agent": "teacher-console/1.0",
        "x-amzn-trace-id": "Root=1-66c06f10-0123456789abcdef01234567",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https"
    });
    if let Some(token) = token {
        headers["authorization"] = json!(format!("Bearer {token}"));
    }
    if body.is_some() {
        headers["content-type"] = json!("application/json");
    }
    let mut event = json!({
        "version": "2.0",
        "routeKey": route_key,
        "rawPath": path,
        "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "a1b2c3d4e5",
            "domainName": "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "a1b2c3d4e5",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "teacher-console/1.0"
            },
            "requestId": "dGVzdC1yZXF1ZXN0LWlk",
            "routeKey": route_key,
            "stage": "$default",
            "time": "17/Aug/2026:09:00:00 +0000",
            "timeEpoch": 1_786_957_200_000_u64
        },
        "pathParameters": path_parameters,
        "isBase64Encoded": false
    });
    if let Some(body) = body {
        event["body"] = json!(body);
    }
    event.to_string()
}

/// Sends one request, its body the text sent, through the router as the Lambda runtime does: the
/// event JSON is deserialized into a `lambda_http::Request`, the router answers it as a tower
/// `Service`, and the answer goes through `lambda_http::IntoResponse`, which decides whether API
/// Gateway gets the body as text or base64.
async fn call_text(
    app: &Router,
    method: &str,
    path: &str,
    token: &str,
    body: Option<String>,
) -> Answer {
    let json = event_text(method, path, Some(token), body);
    let request = lambda_http::request::from_str(&json).expect("an API Gateway HTTP API event");
    assert!(
        matches!(
            request.request_context_ref(),
            Some(RequestContext::ApiGatewayV2(_))
        ),
        "read as an HTTP API (payload 2.0) event"
    );
    assert_eq!(request.uri().path(), path);
    let response = app
        .clone()
        .oneshot(request)
        .await
        .expect("the router never fails");
    let response = lambda_http::IntoResponse::into_response(response).await;
    let status = response.status();
    let content_type = header_text(response.headers(), header::CONTENT_TYPE).unwrap_or_default();
    let location = header_text(response.headers(), header::LOCATION);
    let body = match response.body() {
        lambda_http::Body::Empty => Value::Null,
        lambda_http::Body::Text(text) if text.is_empty() => Value::Null,
        lambda_http::Body::Text(text) => {
            serde_json::from_str(text).unwrap_or_else(|e| panic!("a JSON body ({e}): {text}"))
        }
        other => panic!("JSON answers go back to API Gateway as text, not {other:?}"),
    };
    Answer {
        status,
        content_type,
        location,
        body,
    }
}

// ---------------------------------------------------------------------------------------------
// Tests.

/// learnables-v1 Appendix B through API Gateway events onto DynamoDB: create the definition,
/// show-back cannot tell, Dana teaches `billing@origin\.example` on `from` for `northgate`, a new
/// version answers with its predecessor, show-back reads Northgate, the same lesson again learns
/// nothing, and activating version 1 undoes it.
#[tokio::test]
async fn appendix_b_through_api_gateway_events_on_dynamodb() {
    let (config, store) = deployment().await;
    let at = "2026-08-17T09:00:00Z";
    let clock = Arc::new(FakeClock::new(Instant::parse(at).expect("an instant")));
    let app = app_with_clock(store.clone(), &config, clock);

    // 1. The definition exists at version 1.
    let (v1, v1_id) = version_1(&app).await;
    assert_builtin_learnables(&app).await;

    // 2. A message from billing@origin.example: no mark matches.
    let before = cannot_tell_yet(&app).await;

    // 4-5. Dana teaches through the teacher console; version 2 is published on top of 1.
    let v2_id = dana_teaches(&app, &v1_id).await;

    // 6. Show-back displays the effect, for the teacher and for an operator.
    reads_northgate(&app).await;

    // §10.2: the same lesson again learns nothing and makes no version.
    the_same_lesson_learns_nothing(&app, &v2_id).await;

    // Undo (§10.3): activating version 1 makes the message unsettled again.
    undo_to_version_1(&app, &v1_id, &v2_id).await;
    let undone = show_back(&app, OPERATOR).await;
    assert_eq!(undone, before, "reads exactly as before the lesson");
    assert_eq!(get(&app, DEF, TEACHER).await.ok(), &v1);

    // The history, newest first, as stored in DynamoDB.
    let h = history(&app, DEF, OPERATOR).await;
    let kinds: Vec<&str> = h.iter().filter_map(|e| e["kind"].as_str()).collect();
    assert_eq!(kinds, ["activation", "lesson", "created"]);
    assert_eq!(h[1]["taughtBy"], json!(DANA));
    assert_eq!(h[1]["via"], json!("teacher-console"));
    assert_eq!(h[1]["reason"], json!(REASON));
    assert_eq!(h[1]["at"], json!(at));

    // A fresh router (a new Lambda execution environment) over the same table sees it all.
    let cold = lesson_write::app(store, &config);
    assert_eq!(get(&cold, DEF, OPERATOR).await.ok(), &v1);
    let stored = get(&cold, &format!("{DEF}/versions/2"), OPERATOR).await;
    assert_eq!(stored.ok()["versionId"], json!(v2_id));
}

/// A lesson the learnable refuses is a 422 whose detail is the regex compiler's reason, and the
/// stored definition stays at version 1.
#[tokio::test]
async fn an_unusable_pattern_is_refused_with_422() {
    let (config, store) = deployment().await;
    let app = app(store, &config);
    let v1 = create_definition(&app).await;
    refuses_an_unusable_pattern(&app, &v1).await;
}

/// A lesson giving a member twice is refused with problem+json naming it, whichever value
/// would have won; nothing is written.
#[tokio::test]
async fn a_lesson_with_a_member_twice_is_refused_by_name() {
    let (config, store) = deployment().await;
    let app = app(store, &config);
    let v1 = create_definition(&app).await;
    let text = billing_lesson().to_string();
    let twice = text.replacen('{', r#"{"entry":"alhamra","#, 1);
    assert!(twice.contains(r#""entry":"northgate""#), "{twice}");
    assert_eq!(
        bad_request_for(&app, &format!("{DEF}/lessons"), TEACHER, twice).await,
        "the member \"entry\" appears twice"
    );
    assert_eq!(get(&app, DEF, TEACHER).await.ok(), &v1, "nothing written");
}

/// A column-mapping collection whose one entry holds `headers` headers of 500 characters: 420
/// of them make a definition of about 210 KB, which fits one DynamoDB item once but not twice.
fn wide_fields(headers: usize) -> Value {
    let headers: Vec<String> = (0..headers)
        .map(|i| format!("{i:05}{}", "h".repeat(495)))
        .collect();
    json!({ "fields": {
        "learnable": "column-mapping", "entry": "field",
        "teaches": "which field a spreadsheet column holds",
        "entries": { "amount": { "label": "Amount", "value": { "headers": headers } } }
    } })
}

/// A definition that would outgrow DynamoDB's 400 KB item is a 413, not a 503 to retry: the
/// lesson that would add a second 210 KB version leaves the active version and the history as
/// they were (and is refused the same way again), and a `PUT` of a 450 KB definition creates
/// nothing.
#[tokio::test]
async fn a_definition_over_dynamodbs_item_limit_is_413_and_nothing_changes() {
    let (config, store) = deployment().await;
    let app = app(store, &config);
    let path = "/v1/definitions/column-map";

    let created = put_definition(&app, path, TEACHER, wide_fields(420)).await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    let v1 = created.body;
    let header = json!({
        "collection": "fields", "entry": "amount", "value": { "header": "Total" }, "taughtBy": DANA
    });
    for _ in 0..2 {
        let refused = post(&app, &format!("{path}/lessons"), TEACHER, header.clone()).await;
        too_large(&refused, "column-map", 409_600);
    }
    assert_unchanged(&app, path, OPERATOR, &v1).await;

    let put = put_definition(&app, "/v1/definitions/wider", TEACHER, wide_fields(900)).await;
    too_large(&put, "wider", 409_600);
    get(&app, "/v1/definitions/wider", TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);
}

/// A source's token can never write or read definitions: 403 on the lesson, the `PUT` and
/// show-back, and nothing changes.
#[tokio::test]
async fn a_sources_token_gets_403() {
    let (config, store) = deployment().await;
    let app = app(store, &config);
    let v1 = create_definition(&app).await;

    let lesson = teach(&app, SOURCE, billing_lesson()).await;
    lesson.problem(StatusCode::FORBIDDEN);
    let put = put_definition(&app, "/v1/definitions/another", SOURCE, customers()).await;
    put.problem(StatusCode::FORBIDDEN);
    let read = show_back_of(&app, DEF, SOURCE, billing_message()).await;
    read.problem(StatusCode::FORBIDDEN);

    assert_eq!(get(&app, DEF, TEACHER).await.ok(), &v1, "nothing written");
    get(&app, "/v1/definitions/another", TEACHER)
        .await
        .problem(StatusCode::NOT_FOUND);
}

/// One request as [`call_text`] sends it, answered with its `Retry-After` too: (status,
/// `Retry-After`, problem `detail`).
async fn call_retry_after(
    app: &Router,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, Option<String>, String) {
    let json = event_text(method, path, Some(TEACHER), body.map(|b| b.to_string()));
    let request = lambda_http::request::from_str(&json).expect("an API Gateway HTTP API event");
    let response = app
        .clone()
        .oneshot(request)
        .await
        .expect("the router never fails");
    let response = lambda_http::IntoResponse::into_response(response).await;
    let retry_after = header_text(response.headers(), header::RETRY_AFTER);
    assert_eq!(
        header_text(response.headers(), header::CONTENT_TYPE).as_deref(),
        Some("application/problem+json")
    );
    let detail = match response.body() {
        lambda_http::Body::Text(text) => serde_json::from_str::<Value>(text).expect("JSON")
            ["detail"]
            .as_str()
            .expect("a detail")
            .to_owned(),
        other => panic!("a problem+json body, not {other:?}"),
    };
    (response.status(), retry_after, detail)
}

/// DynamoDB refusing a lesson's write, each refusal as the model of AWS makes it (every
/// `PutItem` of one client refused: infra/aws_model/faults.py), is answered 503 with the
/// `Retry-After` of its class and a detail naming the cause (throttled: 1 s; a write to an item a
/// transaction holds: 1 s; a 500 or a 503 from DynamoDB: 5 s), and nothing is written. A refusal
/// retrying cannot mend (the table does not exist) is 500, with no `Retry-After`.
#[tokio::test]
async fn a_refused_write_is_503_naming_its_cause_and_a_lasting_one_500() {
    const KEY: &str = "AKIDLESSONWRITEFAULTS";
    let (config, store) = deployment().await;
    let healthy = app(store.clone(), &config);
    let v1 = create_definition(&healthy).await;
    let faulty = Arc::new(DynamoDefinitionStore::new(
        learnables_store_dynamodb::testing::client_as(KEY).await,
        config.table(),
    ));
    let refused = app(faulty, &config);
    let path = format!("{DEF}/lessons");
    for (kind, secs, cause) in [
        (
            "throttle",
            "1",
            "the store throttled the request (its throughput is in use)",
        ),
        (
            "conflict",
            "1",
            "other writers kept changing the same records",
        ),
        ("error", "5", "the store answered a server error"),
        ("unavailable", "5", "the store answered a server error"),
    ] {
        learnables_store_dynamodb::testing::model_faults(&format!(
            r#"{{"seed": 3, "rates": {{"dynamodb": {{"{kind}": 1.0}}}},
                "operations": ["PutItem"], "callers": ["{KEY}"]}}"#
        ));
        let (status, retry_after, detail) =
            call_retry_after(&refused, "POST", &path, Some(billing_lesson())).await;
        learnables_store_dynamodb::testing::model_faults("{}");
        assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{kind}: {detail}");
        assert_eq!(retry_after.as_deref(), Some(secs), "{kind}");
        assert_eq!(
            detail,
            format!(
                "the definition store cannot serve the request now: {cause}; nothing was \
                 written: send it again after {secs} s (Retry-After)"
            ),
            "{kind}"
        );
        assert_unchanged(&healthy, DEF, OPERATOR, &v1).await;
    }

    let missing = Arc::new(DynamoDefinitionStore::new(
        store.client().clone(),
        unique_table("lesson-write-missing"),
    ));
    let (status, retry_after, detail) = call_retry_after(
        &app(missing, &config),
        "POST",
        &path,
        Some(billing_lesson()),
    )
    .await;
    assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR, "{detail}");
    assert_eq!(retry_after, None);
    assert!(detail.contains("retrying cannot mend"), "{detail}");
}

/// The function refuses to start, naming what to fix, without the table name, without or with
/// a broken `WATCHER_CONFIG`, and with a token used twice.
#[test]
fn a_broken_environment_is_refused_at_start() {
    let lookup = |table: Option<&str>, config: Option<&str>| {
        let (table, config) = (table.map(OsString::from), config.map(OsString::from));
        move |name: &str| match name {
            DEFINITIONS_TABLE_NAME => table.clone(),
            WATCHER_CONFIG => config.clone(),
            _ => None,
        }
    };
    let message = |e: ConfigError| {
        let mut text = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    };

    let no_table = FunctionConfig::from_lookup(lookup(None, Some(CONFIG))).expect_err("no table");
    assert_eq!(
        message(no_table),
        "the environment variable DEFINITIONS_TABLE_NAME is not set"
    );
    let no_config =
        FunctionConfig::from_lookup(lookup(Some("definitions"), None)).expect_err("no config");
    assert_eq!(
        message(no_config),
        "the environment variable WATCHER_CONFIG is not set"
    );
    let bad_toml = FunctionConfig::from_lookup(lookup(Some("definitions"), Some("[[teachers]")))
        .expect_err("not TOML");
    assert!(matches!(bad_toml, ConfigError::Config(_)), "{bad_toml:?}");
    assert!(message(bad_toml).starts_with("WATCHER_CONFIG is not a valid watcher configuration: "),);
    let twice = format!(
        "{CONFIG}\n[[operators]]\nid = \"another\"\ntoken = \"teacher-token\"\ntenant = \"acme-logistics\"\n"
    );
    let reused = FunctionConfig::from_lookup(lookup(Some("definitions"), Some(&twice)))
        .expect_err("a token used twice");
    assert!(matches!(reused, ConfigError::Credentials(_)), "{reused:?}");

    let fine = FunctionConfig::from_lookup(lookup(Some("definitions"), Some(CONFIG)))
        .expect("a valid environment");
    assert_eq!(fine.table(), "definitions");
    assert!(
        !format!("{fine:?}").contains(TEACHER),
        "tokens are never printed"
    );
}
