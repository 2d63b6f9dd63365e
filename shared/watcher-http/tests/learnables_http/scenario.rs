//! The requests and answers of the Learnables HTTP API's tests (contracts/learnables.md), shared
//! by the two harnesses that send them: watcher-http's own (`learnables_http`, the router driven
//! with `oneshot`) and the lesson-write function's (functions/lesson-write/tests/api_gateway.rs,
//! API Gateway events through `lambda_http` onto DynamoDB), which includes this file by path.
//!
//! Each harness defines `call_text(app, method, path, token, body: Option<String>) -> Answer` in
//! its parent module, sending the body as the text given; everything here is built on it: the spec's Appendix B fixtures (learnables-v1), the requests
//! made of them, and the steps of the Appendix B walk-through whose answers both check.

#![allow(dead_code, reason = "each harness uses its own part")]

use axum::http::{HeaderMap, HeaderName, StatusCode};
use axum::Router;
use serde_json::{json, Value};

use super::call_text;

// The spec's Appendix B as wire JSON, from the learnables core's tests.
#[path = "../../../learnables/tests/common/appendix_b.rs"]
mod appendix_b;
pub use appendix_b::*;

pub const TEACHER: &str = "teacher-token";
pub const OPERATOR: &str = "operator-token";
pub const SOURCE: &str = "source-token";
pub const DEF: &str = "/v1/definitions/prealert-triage";

/// An answer: status, `Content-Type`, `Location`, and the body as JSON (`null` when empty).
pub struct Answer {
    pub status: StatusCode,
    pub content_type: String,
    pub location: Option<String>,
    pub body: Value,
}

impl Answer {
    /// Asserts a problem+json answer with `status`, and gives its `detail`.
    pub fn problem(&self, status: StatusCode) -> String {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(self.content_type, "application/problem+json");
        assert_eq!(self.body["status"], json!(status.as_u16()));
        self.body["detail"].as_str().expect("a detail").to_owned()
    }

    /// Asserts a 200 answer, and gives its body.
    pub fn ok(&self) -> &Value {
        assert_eq!(self.status, StatusCode::OK, "{}", self.body);
        &self.body
    }
}

/// The header `name` of an answer as text, if it has one.
pub fn header_text(headers: &HeaderMap, name: HeaderName) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Sends one request, its body as JSON.
pub async fn call(
    app: &Router,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> Answer {
    call_text(app, method, path, token, body.map(|b| b.to_string())).await
}

pub async fn get(app: &Router, path: &str, token: &str) -> Answer {
    call(app, "GET", path, token, None).await
}

pub async fn post(app: &Router, path: &str, token: &str, body: Value) -> Answer {
    call(app, "POST", path, token, Some(body)).await
}

/// `POST {DEF}/lessons` of `lesson` with `token`.
pub async fn teach(app: &Router, token: &str, lesson: Value) -> Answer {
    post(app, &format!("{DEF}/lessons"), token, lesson).await
}

/// `POST {DEF}/activate` of `body` (`definitionVersion`, `taughtBy`, `reason`) with `token`.
pub async fn activate(app: &Router, token: &str, body: Value) -> Answer {
    post(app, &format!("{DEF}/activate"), token, body).await
}

/// The entries of `GET {definition}/history`, newest first.
pub async fn history(app: &Router, definition: &str, token: &str) -> Vec<Value> {
    let answer = get(app, &format!("{definition}/history"), token).await;
    answer.ok()["history"].as_array().expect("a list").clone()
}

/// Asserts that `definition` is as `v1`, its first version, left it: `v1` is active and the
/// history holds only its creation.
pub async fn assert_unchanged(app: &Router, definition: &str, token: &str, v1: &Value) {
    assert_eq!(
        get(app, definition, token).await.ok(),
        v1,
        "the active version is unchanged"
    );
    assert_eq!(history(app, definition, token).await.len(), 1);
}

/// `POST`s `text` as it is (a JSON text no `Value` can hold, such as one giving a member twice);
/// asserts a 400 problem and gives its `detail`.
pub async fn bad_request_for(app: &Router, path: &str, token: &str, text: String) -> String {
    call_text(app, "POST", path, token, Some(text))
        .await
        .problem(StatusCode::BAD_REQUEST)
}

/// `PUT`s a definition of `collections` taught by [`DANA`] at `path`.
pub async fn put_definition(app: &Router, path: &str, token: &str, collections: Value) -> Answer {
    let body = json!({ "collections": collections, "taughtBy": DANA });
    call(app, "PUT", path, token, Some(body)).await
}

// ---------------------------------------------------------------------------------------------
// Fixtures: the spec's Appendix B.

/// A lesson adding the mark `pattern` on `from` to `entry` of `customers`, with [`REASON`].
pub fn lesson(entry: &str, pattern: &str, taught_by: &str) -> Value {
    json!({
        "collection": "customers",
        "entry": entry,
        "value": { "pattern": pattern, "where": "from" },
        "taughtBy": taught_by,
        "reason": REASON
    })
}

/// Dana's lesson of Appendix B: `billing@origin\.example` on `from` is `northgate`.
pub fn billing_lesson() -> Value {
    lesson("northgate", "billing@origin\\.example", DANA)
}

/// `PUT`s the Appendix B definition; gives the 201 answer's body.
pub async fn create_definition(app: &Router) -> Value {
    let created = call(
        app,
        "PUT",
        DEF,
        TEACHER,
        Some(json!({ "collections": customers(), "taughtBy": DANA, "reason": "first cut" })),
    )
    .await;
    assert_eq!(created.status, StatusCode::CREATED, "{}", created.body);
    assert_eq!(created.content_type, "application/json");
    assert_eq!(created.location.as_deref(), Some(DEF));
    created.body
}

/// `POST {definition}/show-back` of `input` with `token`: the active version's report.
pub async fn show_back_of(app: &Router, definition: &str, token: &str, input: Value) -> Answer {
    post(
        app,
        &format!("{definition}/show-back"),
        token,
        json!({ "input": input }),
    )
    .await
}

/// The show-back of [`billing_message`] by the active version.
pub async fn show_back(app: &Router, token: &str) -> Value {
    show_back_of(app, DEF, token, billing_message())
        .await
        .ok()
        .clone()
}

pub async fn active_version(app: &Router) -> u64 {
    get(app, DEF, TEACHER).await.ok()["definitionVersion"]
        .as_u64()
        .expect("a version number")
}

/// Asserts a 413 problem for definition `which` of `acme-logistics`, over its store's `limit`
/// of bytes, saying nothing was written; gives the size it reports.
pub fn too_large(answer: &Answer, which: &str, limit: usize) -> usize {
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
    bytes
}

// ---------------------------------------------------------------------------------------------
// The steps of Appendix B.

/// 1. The definition exists at version 1, content-addressed; gives it and its `versionId`.
pub async fn version_1(app: &Router) -> (Value, String) {
    let v1 = create_definition(app).await;
    assert_eq!(v1["definitionVersion"], json!(1));
    let v1_id = v1["versionId"].as_str().expect("a versionId").to_owned();
    assert!(v1_id.starts_with("sha256:"), "{v1_id}");
    (v1, v1_id)
}

/// The operator's list of learnables names the two built in.
pub async fn assert_builtin_learnables(app: &Router) {
    let learnables = get(app, "/v1/learnables", OPERATOR).await;
    let names: Vec<&str> = learnables.ok()["learnables"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert_eq!(names, ["marks", "column-mapping"]);
}

/// 2. A message from billing@origin.example: no mark matches. Gives the show-back.
pub async fn cannot_tell_yet(app: &Router) -> Value {
    let before = show_back(app, TEACHER).await;
    assert_eq!(before["customer"]["settled"], json!(false));
    assert_eq!(
        before["customer"]["reads"],
        json!("Still cannot tell whose this is.")
    );
    before
}

/// 4-5. Dana teaches through the teacher console; version 2 is published on top of `v1_id`.
/// Gives its `versionId`.
pub async fn dana_teaches(app: &Router, v1_id: &str) -> String {
    let taught = teach(app, TEACHER, billing_lesson()).await;
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
    v2_id
}

/// 6. Show-back displays the effect, for the teacher and for an operator.
pub async fn reads_northgate(app: &Router) {
    for token in [TEACHER, OPERATOR] {
        let after = show_back(app, token).await;
        assert_eq!(after["customer"]["settled"], json!(true));
        assert_eq!(after["customer"]["winner"], json!("northgate"));
        assert_eq!(
            after["customer"]["reads"],
            json!("Reads as Northgate Motors Ltd, on billing@origin.example")
        );
    }
}

/// §10.2: the same lesson again learns nothing, makes no version, is not an error.
pub async fn the_same_lesson_learns_nothing(app: &Router, v2_id: &str) {
    let same = teach(app, TEACHER, billing_lesson()).await;
    let same = same.ok();
    assert_eq!(same["learned"], json!(false));
    assert_eq!(same["definitionVersion"], json!(2));
    assert_eq!(same["versionId"], json!(v2_id));
    assert!(same.get("previousVersionId").is_none(), "{same}");
}

/// Undo (§10.3): Dana activates version 1 again ("wrong customer") in place of version 2.
pub async fn undo_to_version_1(app: &Router, v1_id: &str, v2_id: &str) {
    let undo = activate(
        app,
        TEACHER,
        json!({ "definitionVersion": 1, "taughtBy": DANA, "reason": "wrong customer" }),
    )
    .await;
    assert_eq!(
        undo.ok(),
        &json!({
            "activated": true,
            "definitionVersion": 1,
            "versionId": v1_id,
            "previousVersionId": v2_id
        })
    );
}

/// A lesson whose pattern does not compile is a 422 whose detail is the regex compiler's
/// reason; the active version stays `v1`, the history at one entry.
pub async fn refuses_an_unusable_pattern(app: &Router, v1: &Value) {
    let refused = post(
        app,
        &format!("{DEF}/lessons"),
        TEACHER,
        lesson("northgate", "billing@origin\\.example(", DANA),
    )
    .await;
    assert_eq!(
        refused.problem(StatusCode::UNPROCESSABLE_ENTITY),
        "\"billing@origin\\\\.example(\" is not a usable pattern: unclosed group at position 24"
    );
    assert_unchanged(app, DEF, TEACHER, v1).await;
}
