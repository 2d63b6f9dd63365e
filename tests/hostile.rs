//! The hostile-input suite (issue 12 item 8): well over 150 malformed or hostile requests across
//! every route of one `serve` process — truncated and invalid JSON, invalid UTF-8, wrong types,
//! nulls, huge numbers, a 10 MB body, 10,000-deep nesting, 10,000 expectations in one artifact,
//! every edge of the time grammar (semantics.md "Time"), self-anchors and anchor cycles, unknown
//! `supersedes`, control characters and confusables in ids, regex bombs in lessons, and wrong,
//! missing and other-tenant credentials.
//!
//! Each request gets a 4xx `application/problem+json` whose `detail` names the offending field
//! (or header, or setting) — except a refusal of a single expectation, which the push route
//! answers 200 with the refusal in `rejected` naming the field (serve.md "Routes": "refusals of
//! individual expectations are in its body ... not in its status"; docs/interpretation.md). After
//! all of them the process is still up and a dump of the record (every row of every table of the
//! SQLite file, ordered by key) is byte-for-byte what it was before, apart from the refusals
//! appended to the rejections log (the rows that were there are unchanged).

use crate::common;

use std::fmt::Write as _;

use jiff::Timestamp;
use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};

use common::*;

const TEACHER: &str = "teacher-token-dana";
const AGENT_B: &str = "push-token-booking-b";
const SOURCE_B: &str = "src-token-b";
const OPERATOR_B: &str = "ops-token-b";
const TEACHER_B: &str = "teacher-token-b";
const SIGNED_SOURCE: &str = "carrier-feed:signed";
const SIGNED_TOKEN: &str = "src-token-signed";

fn extra(agent_url: &str) -> String {
    format!(
        r#"
[[sources]]
id = "{SIGNED_SOURCE}"
token = "{SIGNED_TOKEN}"
[sources.signature]
header = "X-Hmac-Signature"
algorithm = "hmac-sha256"
encoding = "hex"
secret = "shared-secret"
[[sources.mappings]]
name = "tracker.updated"
when = {{ pointer = "/description", equals = "tracker.updated" }}
fact_key = "shipment.{{/status}}:{{/code}}"
observed_at = "/datetime"
subject = {{ type = "shipment", id = "{{/code}}" }}

[[sources]]
id = "carrier-feed:mapped"
token = "src-token-mapped"
[[sources.mappings]]
name = "mapped"
each = "/events"
fact_key = "shipment.{{/status}}:{{^/code}}"
observed_at = "/at"

[[teachers]]
id = "dana"
token = "{TEACHER}"

[[agents]]
id = "booking-b"
tenant = "b"
card = "booking-card.json"
endpoint = "{agent_url}"
push_token = "{AGENT_B}"

[[sources]]
id = "carrier-feed:b"
tenant = "b"
token = "{SOURCE_B}"

[[operators]]
id = "ops-b"
tenant = "b"
token = "{OPERATOR_B}"

[[teachers]]
id = "dana-b"
tenant = "b"
token = "{TEACHER_B}"
"#
    )
}

/// How a request authenticates.
#[derive(Clone, Copy)]
enum Auth {
    None,
    Bearer(&'static str),
    Push(&'static str),
    Raw(&'static str, &'static str),
}

/// What a case must be answered.
#[derive(Clone)]
enum Expect {
    /// 4xx problem+json with this status whose `detail` contains each needle (case-insensitive).
    Problem(u16, Vec<String>),
    /// The push route's 200 with nothing raised and one refusal naming each needle.
    Refused(Vec<String>),
}

struct Case {
    name: String,
    method: &'static str,
    path: String,
    auth: Auth,
    content_type: Option<&'static str>,
    body: Option<Vec<u8>>,
    expect: Expect,
}

fn needles(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn case(
    name: impl Into<String>,
    method: &'static str,
    path: impl Into<String>,
    auth: Auth,
) -> Case {
    Case {
        name: name.into(),
        method,
        path: path.into(),
        auth,
        content_type: None,
        body: None,
        expect: Expect::Problem(400, Vec::new()),
    }
}

impl Case {
    fn raw(mut self, body: impl Into<Vec<u8>>) -> Self {
        self.body = Some(body.into());
        self.content_type.get_or_insert("application/json");
        self
    }
    fn json(self, body: &Value) -> Self {
        let bytes = serde_json::to_vec(body).expect("serialise");
        self.raw(bytes)
    }
    fn typed(mut self, content_type: &'static str) -> Self {
        self.content_type = Some(content_type);
        self
    }
    fn problem(mut self, status: u16, n: &[&str]) -> Self {
        self.expect = Expect::Problem(status, needles(n));
        self
    }
    fn refused(mut self, n: &[&str]) -> Self {
        self.expect = Expect::Refused(needles(n));
        self
    }
}

fn far() -> Timestamp {
    plus(Timestamp::now(), 30 * 86_400)
}

/// A valid expectation about `PA-H` (edited per case).
fn exp(id: &str) -> Value {
    json!({
        "expectationId": id, "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": "PA-H" },
        "expects": "the manifest",
        "satisfiedBy": { "factKey": format!("shipment.manifest.received:{id}") },
        "dueAt": fmt(far()), "grace": "PT1H", "basis": "observed"
    })
}

/// An artifact update from `task-h` carrying `exps`.
fn artifact(exps: Value) -> Value {
    json!({ "artifactUpdate": { "taskId": "task-h", "contextId": "ctx-h",
        "artifact": { "artifactId": "art-h", "parts": [{ "text": "x" }], "extensions": [URI],
            "metadata": { URI: { "expectations": exps } } } } })
}

/// `exp("exp-h")` with `member` set to `value` (`null` removes it).
fn with(member: &str, value: Value) -> Value {
    let mut e = exp("exp-h");
    if value.is_null() {
        e.as_object_mut().expect("an object").remove(member);
    } else {
        e[member] = value;
    }
    artifact(json!([e]))
}

fn fact(observed_at: Value) -> Value {
    json!({ "factKey": "shipment.departed:PA-H", "observedAt": observed_at })
}

/// Every JSON-taking route with a credential it accepts (so the body is what is wrong).
fn json_routes() -> Vec<(&'static str, &'static str, Auth)> {
    vec![
        ("POST", "/v1/agents/booking/push", Auth::Push(PUSH_TOKEN)),
        ("POST", "/v1/facts", Auth::Bearer(SOURCE_TOKEN)),
        (
            "POST",
            "/v1/sources/carrier-feed:mapped/webhook",
            Auth::Bearer("src-token-mapped"),
        ),
        ("POST", "/v1/lapses/retry", Auth::Bearer(OPERATOR_TOKEN)),
        ("PUT", "/v1/definitions/fresh-def", Auth::Bearer(TEACHER)),
        (
            "POST",
            "/v1/definitions/invoices/lessons",
            Auth::Bearer(TEACHER),
        ),
        (
            "POST",
            "/v1/definitions/invoices/lessons:check",
            Auth::Bearer(TEACHER),
        ),
        (
            "POST",
            "/v1/definitions/invoices/show-back",
            Auth::Bearer(TEACHER),
        ),
        (
            "POST",
            "/v1/definitions/invoices/activate",
            Auth::Bearer(TEACHER),
        ),
        (
            "POST",
            "/v1/definitions/invoices/versions/1/tombstone",
            Auth::Bearer(TEACHER),
        ),
    ]
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();

    // --- Bodies that are not JSON, or not the JSON a route reads: every JSON route. ---
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let ten_mb = vec![b' '; 10 * 1024 * 1024];
    for (method, path, auth) in json_routes() {
        let c = |name: &str| case(format!("{method} {path}: {name}"), method, path, auth);
        out.push(c("empty body").raw("").problem(400, &["body"]));
        out.push(
            c("truncated JSON")
                .raw(r#"{"a": [1, 2"#)
                .problem(400, &["json"]),
        );
        out.push(c("invalid JSON").raw("{a: 1}").problem(400, &["json"]));
        out.push(
            c("invalid UTF-8")
                .raw(b"{\"a\": \"\xff\xfe\"}".to_vec())
                .problem(400, &["utf-8"]),
        );
        out.push(c("trailing bytes").raw("{} {}").problem(400, &["json"]));
        out.push(
            c("10,000-deep nesting")
                .raw(deep.clone())
                .problem(400, &["json_depth"]),
        );
        out.push(
            c("10 MB body")
                .raw(ten_mb.clone())
                .problem(413, &["body_bytes", "bytes"]),
        );
        out.push(
            c("not JSON content type")
                .raw("{}")
                .typed("text/plain")
                .problem(415, &["content-type"]),
        );
        if path.ends_with("/webhook") {
            // A carrier's payload may be any JSON; the mapping cannot read this one.
            out.push(
                c("a JSON null")
                    .raw("null")
                    .problem(422, &["mapped", "/events"]),
            );
            out.push(
                c("a JSON array")
                    .raw("[]")
                    .problem(422, &["mapped", "/events"]),
            );
        } else {
            out.push(c("a JSON null").raw("null").problem(400, &[]));
            out.push(c("a JSON array").raw("[]").problem(400, &[]));
        }
        out.push(c("a huge number").raw("1e400").problem(400, &[]));
    }

    // --- Credentials: missing, unknown, of the wrong kind, of another tenant. ---
    let guarded: Vec<(&'static str, &'static str, Option<Value>, Auth)> = vec![
        (
            "POST",
            "/v1/agents/booking/push",
            Some(with("grace", json!("PT1H"))),
            Auth::Bearer(SOURCE_TOKEN),
        ),
        (
            "POST",
            "/v1/facts",
            Some(fact(json!("2026-09-10T20:15:00Z"))),
            Auth::Bearer(PUSH_TOKEN),
        ),
        (
            "GET",
            "/v1/agents/booking/rejections",
            None,
            Auth::Bearer(SOURCE_TOKEN),
        ),
        (
            "GET",
            "/v1/subjects/shipment/PA-BASE",
            None,
            Auth::Bearer(SOURCE_TOKEN),
        ),
        ("GET", "/v1/lapses", None, Auth::Bearer(TEACHER)),
        (
            "POST",
            "/v1/lapses/retry",
            Some(json!({ "agent": "booking", "messageIds": [] })),
            Auth::Bearer(PUSH_TOKEN),
        ),
        ("GET", "/v1/agents", None, Auth::Bearer(SOURCE_TOKEN)),
        (
            "GET",
            "/v1/definitions/invoices",
            None,
            Auth::Bearer(SOURCE_TOKEN),
        ),
        (
            "POST",
            "/v1/definitions/invoices/lessons",
            Some(
                json!({ "collection": "fields", "entry": "invoice_number", "value": { "header": "Inv #" }, "taughtBy": "dana" }),
            ),
            Auth::Bearer(OPERATOR_TOKEN),
        ),
        (
            "GET",
            "/v1/sources/carrier-feed:emirates/rejections",
            None,
            Auth::Bearer(PUSH_TOKEN),
        ),
    ];
    for (method, path, body, wrong_kind) in guarded {
        for (name, auth, status) in [
            ("missing credential", Auth::None, 401),
            ("unknown token", Auth::Bearer("no-such-token"), 401),
            (
                "malformed Authorization",
                Auth::Raw("authorization", "Basic Zm9vOmJhcg=="),
                401,
            ),
            ("wrong kind of credential", wrong_kind, 403),
        ] {
            let mut c =
                case(format!("{method} {path}: {name}"), method, path, auth).problem(status, &[]);
            if let Some(b) = &body {
                c = c.json(b);
            }
            out.push(c);
        }
    }
    // Other tenant: each sees only its own.
    let a = artifact(json!([exp("exp-b")]));
    out.push(
        case(
            "push: another tenant's agent at booking's route",
            "POST",
            "/v1/agents/booking/push",
            Auth::Push(AGENT_B),
        )
        .json(&a)
        .problem(403, &["booking"]),
    );
    out.push(
        case(
            "rejections: another tenant's operator",
            "GET",
            "/v1/agents/booking/rejections",
            Auth::Bearer(OPERATOR_B),
        )
        .problem(404, &["booking"]),
    );
    out.push(
        case(
            "subject: another tenant's operator",
            "GET",
            "/v1/subjects/shipment/PA-BASE",
            Auth::Bearer(OPERATOR_B),
        )
        .problem(404, &["PA-BASE"]),
    );
    out.push(
        case(
            "definition: another tenant's teacher",
            "GET",
            "/v1/definitions/invoices",
            Auth::Bearer(TEACHER_B),
        )
        .problem(404, &["invoices"]),
    );
    out.push(case("lesson: another tenant's teacher", "POST", "/v1/definitions/invoices/lessons", Auth::Bearer(TEACHER_B)).json(&json!({ "collection": "fields", "entry": "invoice_number", "value": { "header": "Inv #" }, "taughtBy": "dana-b" })).problem(404, &["invoices"]));
    out.push(
        case(
            "retry: another tenant's agent",
            "POST",
            "/v1/lapses/retry",
            Auth::Bearer(OPERATOR_B),
        )
        .json(&json!({ "agent": "booking", "messageIds": ["m"] }))
        .problem(404, &["booking"]),
    );
    out.push(
        case(
            "webhook: another tenant's source",
            "POST",
            "/v1/sources/carrier-feed:mapped/webhook",
            Auth::Bearer(SOURCE_B),
        )
        .json(&json!({}))
        .problem(403, &["carrier-feed:mapped"]),
    );
    out.push(case("lesson: taughtBy someone else", "POST", "/v1/definitions/invoices/lessons", Auth::Bearer(TEACHER)).json(&json!({ "collection": "fields", "entry": "invoice_number", "value": { "header": "Inv #" }, "taughtBy": "mallory" })).problem(403, &["taughtBy"]));

    // --- Signed webhook: missing, wrong and malformed signatures. ---
    let signed = format!("/v1/sources/{SIGNED_SOURCE}/webhook");
    let payload = json!({ "description": "tracker.updated", "status": "departed", "code": "PA-H", "datetime": "2026-09-10T20:15:00Z" });
    out.push(
        case("webhook: no signature", "POST", signed.clone(), Auth::None)
            .json(&payload)
            .problem(401, &["X-Hmac-Signature"]),
    );
    out.push(
        case(
            "webhook: wrong signature",
            "POST",
            signed.clone(),
            Auth::Raw(
                "x-hmac-signature",
                "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff",
            ),
        )
        .json(&payload)
        .problem(401, &["signature"]),
    );
    out.push(
        case(
            "webhook: signature not hex",
            "POST",
            signed.clone(),
            Auth::Raw("x-hmac-signature", "zz-not-hex"),
        )
        .json(&payload)
        .problem(401, &["signature"]),
    );
    out.push(
        case(
            "webhook: a bearer token instead of the signature",
            "POST",
            signed.clone(),
            Auth::Bearer(SIGNED_TOKEN),
        )
        .json(&payload)
        .problem(401, &["signature"]),
    );
    // Mapped webhook: the mapping cannot be read.
    let mapped = "/v1/sources/carrier-feed:mapped/webhook";
    for (name, body, n) in [
        (
            "each is not an array",
            json!({ "events": "x", "code": "C" }),
            vec!["mapped", "/events"],
        ),
        (
            "a slot names nothing",
            json!({ "events": [{ "at": "2026-09-10T20:15:00Z" }], "code": "C" }),
            vec!["mapped", "/status"],
        ),
        (
            "a slot of the wrong type",
            json!({ "events": [{ "status": {"x": 1}, "at": "2026-09-10T20:15:00Z" }], "code": "C" }),
            vec!["mapped", "/status"],
        ),
        (
            "an invalid instant",
            json!({ "events": [{ "status": "departed", "at": "2026-09-10 20:15:00Z" }], "code": "C" }),
            vec!["mapped", "/at"],
        ),
        (
            "an instant of the wrong type",
            json!({ "events": [{ "status": "departed", "at": null }], "code": "C" }),
            vec!["mapped", "/at"],
        ),
        (
            "a control character in the key",
            json!({ "events": [{ "status": "dep\u{0}arted", "at": "2026-09-10T20:15:00Z" }], "code": "C" }),
            vec!["mapped", "control"],
        ),
    ] {
        out.push(
            case(
                format!("webhook: {name}"),
                "POST",
                mapped,
                Auth::Bearer("src-token-mapped"),
            )
            .json(&body)
            .problem(422, &n.iter().map(|s| &**s).collect::<Vec<_>>()),
        );
    }

    // --- Push: the event itself is malformed (4xx, nothing recorded). ---
    let push = |name: &str, body: Value, status: u16, n: &[&str]| {
        case(
            format!("push: {name}"),
            "POST",
            "/v1/agents/booking/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&body)
        .problem(status, n)
    };
    let status = |state: Value| json!({ "statusUpdate": { "taskId": "task-h", "contextId": "ctx-h", "status": { "state": state } } });
    out.push(push(
        "an unknown state",
        status(json!("TASK_STATE_SLEEPING")),
        400,
        &["status.state"],
    ));
    out.push(push(
        "TASK_STATE_UNSPECIFIED",
        status(json!("TASK_STATE_UNSPECIFIED")),
        400,
        &["status.state"],
    ));
    out.push(push("state 0", status(json!(0)), 400, &["status.state"]));
    out.push(push("state 99", status(json!(99)), 400, &["status.state"]));
    out.push(push("state null", status(Value::Null), 400, &["state"]));
    out.push(push(
        "state a huge number",
        status(json!(1e300)),
        400,
        &["state"],
    ));
    out.push(push("an empty object", json!({}), 400, &["StreamResponse"]));
    out.push(push(
        "two event kinds",
        json!({ "statusUpdate": {}, "artifactUpdate": {} }),
        400,
        &[],
    ));
    out.push(push("taskId a number", json!({ "artifactUpdate": { "taskId": 7, "contextId": "c", "artifact": { "artifactId": "a", "parts": [] } } }), 400, &["taskId"]));
    out.push(push(
        "artifact null",
        json!({ "artifactUpdate": { "taskId": "t", "contextId": "c", "artifact": null } }),
        400,
        &["artifact"],
    ));
    out.push(push("parts a string", json!({ "artifactUpdate": { "taskId": "t", "contextId": "c", "artifact": { "artifactId": "a", "parts": "x" } } }), 400, &["parts"]));
    out.push(push("metadata an array", json!({ "artifactUpdate": { "taskId": "t", "contextId": "c", "artifact": { "artifactId": "a", "parts": [], "metadata": [] } } }), 400, &["metadata"]));
    let many: Vec<Value> = (0..10_000).map(|i| exp(&format!("exp-{i}"))).collect();
    out.push(push(
        "10,000 expectations in one artifact",
        artifact(json!(many)),
        413,
        &["body_bytes"],
    ));
    let many_small: Vec<Value> = (0..10_000)
        .map(|i| json!({ "expectationId": format!("e{i}") }))
        .collect();
    out.push(push(
        "10,000 small expectations in one artifact",
        artifact(json!(many_small)),
        400,
        &["expectations_per_artifact", "10000"],
    ));
    out.push(
        case(
            "push: an agent id with a control character",
            "POST",
            "/v1/agents/book%00ing/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&with("grace", json!("PT1H")))
        .problem(403, &["booking"]),
    );
    out.push(
        case(
            "push: a confusable agent id (Cyrillic o)",
            "POST",
            "/v1/agents/b%D0%BEoking/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&with("grace", json!("PT1H")))
        .problem(403, &["booking"]),
    );
    out.push(
        case(
            "push: an unknown agent",
            "POST",
            "/v1/agents/nobody/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&with("grace", json!("PT1H")))
        .problem(403, &["nobody"]),
    );

    // --- Push: single expectations refused (200, in `rejected`, naming the field). ---
    let refuse = |name: &str, body: Value, n: &[&str]| {
        case(
            format!("push refuses: {name}"),
            "POST",
            "/v1/agents/booking/push",
            Auth::Push(PUSH_TOKEN),
        )
        .json(&body)
        .refused(n)
    };
    for (grace, why) in [
        ("P1Y", "years"),
        ("P0M", "months"),
        ("P1M", "months"),
        ("-PT1H", "sign"),
        ("+PT1H", "sign"),
        ("pt1h", "upper"),
        ("P1W1D", "W"),
        ("P", "empty"),
        ("PT", "empty"),
        ("PT0.5H30M", "smallest"),
        ("PT0.1234567890S", "9"),
        ("P1DT", ""),
        ("PT1H1H", ""),
        ("1H", ""),
        (" ", ""),
        ("P99999999999999999999D", ""),
        ("PT1.S", ""),
        ("P1.5W2D", ""),
    ] {
        out.push(refuse(
            &format!("grace {grace:?}"),
            with("grace", json!(grace)),
            &["grace", why],
        ));
    }
    for (due, why) in [
        ("2026-09-10T20:15:00", "offset"),
        ("2026-09-10T20:15Z", ""),
        ("2026-09-10 20:15:00Z", ""),
        ("2026-09-10T20:15:00,5Z", ""),
        ("2026-09-10T20:15:00+05", ""),
        ("2026-09-10T20:15:00+0500", ""),
        ("2026-09-10T20:15:00+24:00", ""),
        ("2026-09-10T24:00:00Z", ""),
        ("2026-02-30T00:00:00Z", ""),
        ("2026-13-01T00:00:00Z", ""),
        ("2026-09-10T20:15:00.1234567890Z", "precision"),
        ("2026-09-10T20:15:60Z", ""),
        ("10000-01-01T00:00:00Z", ""),
        ("", ""),
        ("2026-09-10T20:15:00.Z", ""),
    ] {
        out.push(refuse(
            &format!("dueAt {due:?}"),
            with("dueAt", json!(due)),
            &["dueAt", why],
        ));
    }
    // The instant range: a deadline past 9999-12-31.
    let mut e = exp("exp-h");
    e["dueAt"] = json!("9999-12-31T23:59:59Z");
    e["grace"] = json!("P1D");
    out.push(refuse(
        "a deadline beyond the instant range",
        artifact(json!([e])),
        &["range"],
    ));
    for (member, value, n) in [
        ("dueAt", json!(1757535300), vec!["dueAt"]),
        ("dueAt", Value::Null, vec!["dueAt"]),
        ("grace", json!(3600), vec!["grace"]),
        ("kind", json!("shipment.teleport"), vec!["kind"]),
        ("kind", json!(["shipment.manifest"]), vec!["kind"]),
        ("subject", json!("PA-H"), vec!["subject"]),
        (
            "subject",
            json!({ "type": "shipment", "id": "PA\u{0}H" }),
            vec!["subject.id", "control"],
        ),
        (
            "subject",
            json!({ "type": "shipment", "id": "x".repeat(513) }),
            vec!["subject.id", "512"],
        ),
        (
            "subject",
            json!({ "type": "shipment", "id": null }),
            vec!["subject"],
        ),
        ("satisfiedBy", json!({ "factKey": 7 }), vec!["satisfiedBy"]),
        ("satisfiedBy", json!({}), vec!["satisfiedBy"]),
        (
            "expectationId",
            json!("exp\u{7}h"),
            vec!["expectationId", "control"],
        ),
        ("expectationId", json!(""), vec!["expectationId"]),
        ("expectationId", json!(12), vec!["expectationId"]),
        ("horizon", json!("2000-01-01T00:00:00Z"), vec!["horizon"]),
        (
            "anchor",
            json!({ "expectationId": "exp-h", "offset": "PT1H" }),
            vec!["anchor"],
        ),
        (
            "anchor",
            json!({ "expectationId": "exp-base", "offset": "P1Y" }),
            vec!["offset"],
        ),
        ("anchor", json!("exp-base"), vec!["anchor"]),
        ("after", json!(["exp-h"]), vec!["after"]),
        ("after", json!("exp-base"), vec!["after"]),
        ("supersedes", json!("exp-never-raised"), vec!["supersedes"]),
        ("supersedes", json!("exp-other-subject"), vec!["supersedes"]),
        ("expects", json!(null), vec!["expects"]),
    ] {
        out.push(refuse(
            &format!("{member} = {value}"),
            with(member, value),
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }
    out.push(refuse("expectations not an array", json!({ "artifactUpdate": { "taskId": "task-h", "contextId": "ctx-h",
        "artifact": { "artifactId": "a", "parts": [], "metadata": { URI: { "expectations": { "0": exp("x") } } } } } }), &["expectations"]));

    // --- Facts: the time grammar on `observedAt`, wrong types, ids. ---
    let facts = |name: &str, body: Value, n: &[&str]| {
        case(
            format!("facts: {name}"),
            "POST",
            "/v1/facts",
            Auth::Bearer(SOURCE_TOKEN),
        )
        .json(&body)
        .problem(400, n)
    };
    for at in [
        "2026-09-10T20:15:00",
        "2026-09-10T20:15Z",
        "2026-09-10 20:15:00Z",
        "2026-09-10T20:15:00,5Z",
        "2026-09-10T20:15:00+05",
        "2026-09-10T20:15:00+0500",
        "2026-09-10T20:15:00+24:00",
        "2026-09-10T24:00:00Z",
        "2026-02-30T00:00:00Z",
        "2026-13-01T00:00:00Z",
        "2026-00-01T00:00:00Z",
        "2026-09-10T20:15:00.1234567890Z",
        "2026-09-10T20:15:60Z",
        "10000-01-01T00:00:00Z",
        "0000-12-31T23:59:59Z",
        "",
        "  ",
        "2026-09-10T20:15:00.Z",
        "2026-9-10T20:15:00Z",
        "+002026-09-10T20:15:00Z",
        "2026-09-10T20:15:00Z ",
        "2026-09-10T20:15:00\u{0}Z",
        "1757535300",
        "2026-09-10T20:61:00Z",
        "2026-09-10T20:15:00-25:00",
    ] {
        out.push(facts(
            &format!("observedAt {at:?}"),
            fact(json!(at)),
            &["observedAt"],
        ));
    }
    for (name, body, n) in [
        (
            "observedAt a number",
            fact(json!(1757535300)),
            vec!["observedAt"],
        ),
        ("observedAt null", fact(Value::Null), vec!["observedAt"]),
        (
            "factKey missing",
            json!({ "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey"],
        ),
        (
            "factKey null",
            json!({ "factKey": null, "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey"],
        ),
        (
            "factKey a number",
            json!({ "factKey": 1e308, "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey"],
        ),
        (
            "factKey empty",
            json!({ "factKey": "", "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey"],
        ),
        (
            "factKey with a control character",
            json!({ "factKey": "a\u{1b}[31m", "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["factKey", "control"],
        ),
        (
            "subject a string",
            json!({ "factKey": "k", "observedAt": "2026-09-10T20:15:00Z", "subject": "PA-H" }),
            vec!["subject"],
        ),
        (
            "subject id with a newline",
            json!({ "factKey": "k", "observedAt": "2026-09-10T20:15:00Z", "subject": { "type": "shipment", "id": "PA\nH" } }),
            vec!["subject.id"],
        ),
        (
            "facts not an array",
            json!({ "facts": { "0": fact(json!("2026-09-10T20:15:00Z")) } }),
            vec!["facts"],
        ),
        ("facts empty", json!({ "facts": [] }), vec!["facts"]),
        ("facts null", json!({ "facts": null }), vec!["facts"]),
        (
            "a batch with one bad fact",
            json!({ "facts": [fact(json!("2026-09-10T20:15:00Z")), fact(json!("yesterday"))] }),
            vec!["facts[1]", "observedAt"],
        ),
        (
            "1001 facts",
            json!({ "facts": vec![fact(json!("2026-09-10T20:15:00Z")); 1001] }),
            vec!["facts_per_request"],
        ),
        (
            "a 100 kB factKey",
            json!({ "factKey": "k".repeat(100_000), "observedAt": "2026-09-10T20:15:00Z" }),
            vec!["string_bytes"],
        ),
    ] {
        out.push(facts(
            name,
            body,
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }

    // --- Subjects and the list routes. ---
    let op = |name: &str, method: &'static str, path: &str, status: u16, n: &[&str]| {
        case(
            format!("operator: {name}"),
            method,
            path,
            Auth::Bearer(OPERATOR_TOKEN),
        )
        .problem(status, n)
    };
    out.push(op(
        "a subject id with NUL",
        "GET",
        "/v1/subjects/shipment/PA%00H",
        400,
        &["subject.id"],
    ));
    out.push(op(
        "a subject id with ESC",
        "GET",
        "/v1/subjects/shipment/PA%1BH",
        400,
        &["subject.id"],
    ));
    out.push(op(
        "a subject id of invalid UTF-8",
        "GET",
        "/v1/subjects/shipment/%FF%FE",
        400,
        &[],
    ));
    out.push(op(
        "a subject id one byte too long",
        "GET",
        &format!("/v1/subjects/shipment/{}", "x".repeat(513)),
        400,
        &["subject.id", "512"],
    ));
    out.push(op(
        "a confusable subject (Cyrillic A)",
        "GET",
        "/v1/subjects/shipment/P%D0%90-BASE",
        404,
        &[],
    ));
    out.push(op(
        "a subject differing by case",
        "GET",
        "/v1/subjects/shipment/pa-base",
        404,
        &[],
    ));
    out.push(op(
        "a subject with a zero-width space",
        "GET",
        "/v1/subjects/shipment/PA-BASE%E2%80%8B",
        404,
        &[],
    ));
    out.push(op(
        "an agent id with a control character",
        "GET",
        "/v1/agents/book%07ing/rejections",
        400,
        &["agentId", "control"],
    ));
    out.push(op(
        "an unknown agent",
        "GET",
        "/v1/agents/nobody/rejections",
        404,
        &["nobody"],
    ));
    out.push(op("an unknown route", "GET", "/v1/everything", 404, &[]));
    out.push(op("a wrong method", "DELETE", "/v1/lapses", 405, &[]));
    for (name, body, status, n) in [
        (
            "retry: agent missing",
            json!({ "messageIds": [] }),
            400,
            vec!["agent"],
        ),
        (
            "retry: agent a number",
            json!({ "agent": 7, "messageIds": [] }),
            400,
            vec!["agent"],
        ),
        (
            "retry: agent empty",
            json!({ "agent": "", "messageIds": [] }),
            400,
            vec!["agent"],
        ),
        (
            "retry: agent with NUL",
            json!({ "agent": "book\u{0}ing", "messageIds": [] }),
            400,
            vec!["agent", "control"],
        ),
        (
            "retry: messageIds a string",
            json!({ "agent": "booking", "messageIds": "m" }),
            400,
            vec!["messageIds"],
        ),
        (
            "retry: messageIds of numbers",
            json!({ "agent": "booking", "messageIds": [1, 2] }),
            400,
            vec!["messageIds"],
        ),
        (
            "retry: an unknown agent",
            json!({ "agent": "nobody", "messageIds": [] }),
            404,
            vec!["nobody"],
        ),
        (
            "retry: a confusable agent",
            json!({ "agent": "bооking", "messageIds": [] }),
            404,
            vec!["bооking"],
        ),
    ] {
        out.push(
            case(
                name,
                "POST",
                "/v1/lapses/retry",
                Auth::Bearer(OPERATOR_TOKEN),
            )
            .json(&body)
            .problem(status, &n.iter().map(|s| &**s).collect::<Vec<_>>()),
        );
    }

    // --- Learnables. ---
    let teach =
        |name: &str, method: &'static str, path: &str, body: Value, status: u16, n: &[&str]| {
            case(
                format!("learnables: {name}"),
                method,
                path,
                Auth::Bearer(TEACHER),
            )
            .json(&body)
            .problem(status, n)
        };
    let bomb = |pattern: &str| json!({ "collection": "customers", "entry": "northgate", "value": { "pattern": pattern, "where": "from" }, "taughtBy": "dana" });
    for (name, pattern) in [
        ("nested repetition", "(a{1000}){1000}"),
        ("huge counted repetition", "a{100000}"),
        ("nested groups", "((((((((((a{50}){50}){50}){50})))))))"),
        ("an unclosed group", "(northgate"),
        ("a backreference", "(a)\\1"),
        ("a look-ahead", "(?=northgate)x"),
        ("an empty pattern", ""),
    ] {
        out.push(teach(
            &format!("regex bomb: {name}"),
            "POST",
            "/v1/definitions/customers/lessons",
            bomb(pattern),
            422,
            &["pattern"],
        ));
    }
    let lesson = |m: Value| {
        let mut l = json!({ "collection": "fields", "entry": "invoice_number", "value": { "header": "Inv #" }, "taughtBy": "dana" });
        for (k, v) in m.as_object().expect("an object") {
            if v.is_null() {
                l.as_object_mut().expect("an object").remove(k);
            } else {
                l[k] = v.clone();
            }
        }
        l
    };
    for (name, edit, status, n) in [
        (
            "collection missing",
            json!({ "collection": null }),
            400,
            vec!["collection"],
        ),
        (
            "collection a number",
            json!({ "collection": 5 }),
            400,
            vec!["collection"],
        ),
        (
            "an unknown collection",
            json!({ "collection": "nope" }),
            422,
            vec!["nope"],
        ),
        ("entry null", json!({ "entry": null }), 400, vec!["entry"]),
        (
            "entry with a control character",
            json!({ "entry": "inv\u{1}oice" }),
            400,
            vec!["entry", "control"],
        ),
        (
            "taughtBy missing",
            json!({ "taughtBy": null }),
            400,
            vec!["taughtBy"],
        ),
        (
            "value a string",
            json!({ "value": "Inv #" }),
            422,
            vec!["value"],
        ),
        (
            "header a number",
            json!({ "value": { "header": 12 } }),
            422,
            vec!["header"],
        ),
        (
            "header blank",
            json!({ "value": { "header": "  " } }),
            422,
            vec!["header"],
        ),
        (
            "header only a BOM",
            json!({ "value": { "header": "\u{FEFF}" } }),
            422,
            vec!["header"],
        ),
        (
            "pattern on a column mapping",
            json!({ "value": { "pattern": "x" } }),
            422,
            vec!["pattern"],
        ),
    ] {
        out.push(teach(
            name,
            "POST",
            "/v1/definitions/invoices/lessons",
            lesson(edit),
            status,
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }
    let cols = json!({ "fields": { "learnable": "column-mapping", "entry": "field", "teaches": "t", "entries": {} } });
    for (name, path, body, status, n) in [
        (
            "PUT an existing definition",
            "/v1/definitions/invoices",
            json!({ "collections": cols, "taughtBy": "dana" }),
            409,
            vec!["invoices"],
        ),
        (
            "PUT an unknown learnable",
            "/v1/definitions/fresh-def",
            json!({ "collections": { "c": { "learnable": "telepathy", "entry": "e", "teaches": "t", "entries": {} } }, "taughtBy": "dana" }),
            422,
            vec!["telepathy"],
        ),
        (
            "PUT collections a list",
            "/v1/definitions/fresh-def",
            json!({ "collections": [], "taughtBy": "dana" }),
            400,
            vec!["collections"],
        ),
        (
            "PUT a bad value",
            "/v1/definitions/fresh-def",
            json!({ "collections": { "fields": { "learnable": "column-mapping", "entry": "field", "teaches": "t", "entries": { "x": { "label": "X", "value": { "headers": "Inv" } } } } }, "taughtBy": "dana" }),
            422,
            vec!["headers"],
        ),
        (
            "PUT an id with a slash",
            "/v1/definitions/a%2Fb",
            json!({ "collections": cols, "taughtBy": "dana" }),
            400,
            vec!["id"],
        ),
        (
            "PUT a confusable id",
            "/v1/definitions/inv%D0%BEices",
            json!({ "collections": cols, "taughtBy": "dana" }),
            400,
            vec!["id"],
        ),
    ] {
        out.push(teach(
            name,
            "PUT",
            path,
            body,
            status,
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }
    for (name, path, body, status, n) in [
        (
            "check: corpus not a list",
            "/v1/definitions/invoices/lessons:check",
            json!({ "lesson": lesson(json!({})), "corpus": "x" }),
            400,
            vec!["corpus"],
        ),
        (
            "check: lesson missing",
            "/v1/definitions/invoices/lessons:check",
            json!({ "corpus": [] }),
            400,
            vec!["lesson"],
        ),
        (
            "check: a regex bomb",
            "/v1/definitions/customers/lessons:check",
            json!({ "lesson": bomb("(a{1000}){1000}"), "corpus": [] }),
            422,
            vec!["pattern"],
        ),
        (
            "show-back: input missing",
            "/v1/definitions/invoices/show-back",
            json!({}),
            400,
            vec!["input"],
        ),
        (
            "show-back: definitionVersion a string",
            "/v1/definitions/invoices/show-back",
            json!({ "input": { "header": "x" }, "definitionVersion": "1" }),
            400,
            vec!["definitionVersion"],
        ),
        (
            "show-back: definitionVersion negative",
            "/v1/definitions/invoices/show-back",
            json!({ "input": { "header": "x" }, "definitionVersion": -1 }),
            400,
            vec!["definitionVersion"],
        ),
        (
            "show-back: definitionVersion huge",
            "/v1/definitions/invoices/show-back",
            json!({ "input": { "header": "x" }, "definitionVersion": 1e20 }),
            400,
            vec!["definitionVersion"],
        ),
        (
            "show-back: a version that does not exist",
            "/v1/definitions/invoices/show-back",
            json!({ "input": { "header": "x" }, "definitionVersion": 99 }),
            404,
            vec!["99"],
        ),
        (
            "activate: a version that does not exist",
            "/v1/definitions/invoices/activate",
            json!({ "definitionVersion": 99, "taughtBy": "dana" }),
            404,
            vec!["99"],
        ),
        (
            "activate: definitionVersion missing",
            "/v1/definitions/invoices/activate",
            json!({ "taughtBy": "dana" }),
            400,
            vec!["definitionVersion"],
        ),
        (
            "activate: definitionVersion zero",
            "/v1/definitions/invoices/activate",
            json!({ "definitionVersion": 0, "taughtBy": "dana" }),
            404,
            vec!["version 0"],
        ),
        (
            "tombstone: the active version",
            "/v1/definitions/invoices/versions/1/tombstone",
            json!({ "taughtBy": "dana" }),
            409,
            vec!["active"],
        ),
        (
            "tombstone: taughtBy missing",
            "/v1/definitions/invoices/versions/1/tombstone",
            json!({}),
            400,
            vec!["taughtBy"],
        ),
    ] {
        out.push(teach(
            name,
            "POST",
            path,
            body,
            status,
            &n.iter().map(|s| &**s).collect::<Vec<_>>(),
        ));
    }
    let read = |name: &str, path: &str, status: u16, n: &[&str]| {
        case(
            format!("learnables: {name}"),
            "GET",
            path,
            Auth::Bearer(TEACHER),
        )
        .problem(status, n)
    };
    out.push(read(
        "an unknown definition",
        "/v1/definitions/nothing-here",
        404,
        &["nothing-here"],
    ));
    out.push(read(
        "a definition id differing by case",
        "/v1/definitions/INVOICES",
        404,
        &["INVOICES"],
    ));
    out.push(read(
        "a definition id with a space",
        "/v1/definitions/in%20voices",
        400,
        &["id"],
    ));
    out.push(read(
        "a definition id with NUL",
        "/v1/definitions/in%00voices",
        400,
        &["id"],
    ));
    out.push(read(
        "a definition id 129 characters",
        &format!("/v1/definitions/{}", "a".repeat(129)),
        400,
        &["id", "128"],
    ));
    out.push(read(
        "version zero",
        "/v1/definitions/invoices/versions/0",
        400,
        &["version"],
    ));
    out.push(read(
        "version not a number",
        "/v1/definitions/invoices/versions/abc",
        400,
        &["n"],
    ));
    out.push(read(
        "version a huge number",
        "/v1/definitions/invoices/versions/99999999999999999999999",
        400,
        &["n"],
    ));
    out.push(read(
        "version negative",
        "/v1/definitions/invoices/versions/-1",
        400,
        &["n"],
    ));
    out.push(read(
        "a version that does not exist",
        "/v1/definitions/invoices/versions/42",
        404,
        &["42"],
    ));
    out
}

/// Every row of every table of the SQLite file, ordered by every column, as text; the
/// rejections log separately (it may only grow). `health` (the probe's timestamp) and
/// `sequence` (a counter each applied input takes a number from) are left out.
fn dump(db: &std::path::Path) -> (String, Vec<String>) {
    let conn =
        rusqlite::Connection::open_with_flags(db, rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY)
            .expect("open the database read-only");
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
        .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
        .expect("list tables");
    let mut record = String::new();
    let mut rejections = Vec::new();
    for t in tables {
        if matches!(t.as_str(), "health" | "sequence" | "sqlite_sequence") {
            continue;
        }
        let stmt = conn
            .prepare(&format!("SELECT * FROM \"{t}\""))
            .expect("select");
        let n = stmt.column_count();
        let order: Vec<String> = (1..=n).map(|i| i.to_string()).collect();
        drop(stmt);
        let mut stmt = conn
            .prepare(&format!(
                "SELECT * FROM \"{t}\" ORDER BY {}",
                order.join(", ")
            ))
            .expect("select ordered");
        let rows: Vec<String> = stmt
            .query_map([], |r| {
                let mut line = String::new();
                for i in 0..n {
                    let v: rusqlite::types::Value = r.get(i)?;
                    let _ = write!(line, "{v:?}\t");
                }
                Ok(line)
            })
            .and_then(|rows| rows.collect())
            .expect("read rows");
        if t == "rejections" {
            rejections = rows;
        } else {
            let _ = writeln!(record, "== {t} ({} rows)", rows.len());
            for r in rows {
                let _ = writeln!(record, "{r}");
            }
        }
    }
    (record, rejections)
}

async fn send(w: &Watcher, c: &Case) -> Answer {
    let mut req = w
        .http()
        .request(c.method.parse().expect("a method"), w.url(&c.path));
    req = match c.auth {
        Auth::None => req,
        Auth::Bearer(t) => req.bearer_auth(t),
        Auth::Push(t) => req.header("X-A2A-Notification-Token", t),
        Auth::Raw(h, v) => req.header(h, v),
    };
    if let Some(ct) = c.content_type {
        req = req.header("content-type", ct);
    }
    if let Some(b) = &c.body {
        req = req.body(b.clone());
    }
    Answer::of(req).await
}

/// Whether `c`'s answer is what it must be; `Err` says why not.
fn check(c: &Case, a: &Answer) -> Result<(), String> {
    let lower = |s: &str| s.to_lowercase();
    match &c.expect {
        Expect::Problem(status, n) => {
            if a.status != *status {
                return Err(format!("status {} (want {status})", a.status));
            }
            if a.content_type.as_deref() != Some("application/problem+json") {
                return Err(format!("content type {:?}", a.content_type));
            }
            if a.body["status"] != json!(status) || !a.body["title"].is_string() {
                return Err("not a problem body".into());
            }
            let detail = a.body["detail"].as_str().unwrap_or_default();
            if detail.is_empty() {
                return Err("no detail".into());
            }
            for needle in n {
                if !lower(detail).contains(&lower(needle)) {
                    return Err(format!("detail does not name {needle:?}: {detail}"));
                }
            }
        }
        Expect::Refused(n) => {
            if a.status != 200 {
                return Err(format!("status {} (want 200 with a refusal)", a.status));
            }
            if a.body["raised"] != json!([]) {
                return Err(format!("raised {}", a.body["raised"]));
            }
            let reasons: Vec<&str> = a.body["rejected"]
                .as_array()
                .map(|l| l.iter().filter_map(|r| r["reason"].as_str()).collect())
                .unwrap_or_default();
            if reasons.is_empty() {
                return Err("nothing refused".into());
            }
            for needle in n {
                if !reasons.iter().any(|r| lower(r).contains(&lower(needle))) {
                    return Err(format!("no refusal names {needle:?}: {reasons:?}"));
                }
            }
        }
    }
    Ok(())
}

#[tokio::test]
async fn hostile_requests_are_refused_by_name_and_change_nothing() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, &extra(&agent.url())).await;

    // The record before: expectations (one to anchor and supersede against), a fact, two
    // definitions, another tenant's expectation on a subject of the same id.
    let mut base = exp("exp-base");
    base["subject"]["id"] = json!("PA-H");
    let mut other = exp("exp-other-subject");
    other["subject"]["id"] = json!("PA-BASE");
    let a = w.push(&artifact(json!([base.clone(), other]))).await;
    assert_eq!(
        a.body["raised"],
        json!(["exp-base", "exp-other-subject"]),
        "{a:?}"
    );
    let a = w
        .report(
            &json!({ "factKey": "shipment.departed:PA-BASE", "observedAt": fmt(Timestamp::now()),
            "subject": { "type": "shipment", "id": "PA-BASE" } }),
        )
        .await;
    assert_eq!(a.status, 200, "{a:?}");
    let a = w
        .push_as("booking-b", AGENT_B, &artifact(json!([base])))
        .await;
    assert_eq!(a.body["raised"], json!(["exp-base"]), "{a:?}");
    for (id, collections) in [
        (
            "invoices",
            json!({ "fields": { "learnable": "column-mapping", "entry": "field", "teaches": "which field a column holds",
            "entries": { "invoice_number": { "label": "Invoice number", "value": { "headers": ["Invoice No"] } } } } }),
        ),
        (
            "customers",
            json!({ "customers": { "learnable": "marks", "entry": "customer", "teaches": "which customer a message belongs to",
            "entries": { "northgate": { "label": "Northgate", "value": { "marks": [{ "pattern": "northgate", "where": "from" }] } } } } }),
        ),
    ] {
        let a = Answer::of(
            w.http()
                .put(w.url(&format!("/v1/definitions/{id}")))
                .bearer_auth(TEACHER)
                .json(&json!({ "collections": collections, "taughtBy": "dana" })),
        )
        .await;
        assert_eq!(a.status, 201, "{a:?}");
    }

    // An anchor cycle through two new expectations: the first waits on the second, the second
    // would close the cycle and is refused naming it (a refusal recorded before the dump).
    let mut a1 = exp("exp-c1");
    a1["anchor"] = json!({ "expectationId": "exp-c2", "offset": "PT1H" });
    let mut a2 = exp("exp-c2");
    a2["anchor"] = json!({ "expectationId": "exp-c1", "offset": "PT1H" });
    let a = w.push(&artifact(json!([a1, a2]))).await;
    assert_eq!(a.body["raised"], json!(["exp-c1"]), "{a:?}");
    let reason = a.body["rejected"][0]["reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("cycle") && reason.contains("anchor"),
        "{reason}"
    );

    let db = w.dir.path().join("watcher.db");
    let (before, rejections_before) = dump(&db);
    for table in [
        "subjects (",
        "id_index (",
        "timers (",
        "learnables_definitions (",
    ] {
        assert!(
            before.contains(&format!("== {table}"))
                && !before.contains(&format!("== {table}0 rows)")),
            "the dump holds rows of {table}: {before}"
        );
    }
    let cases = cases();
    assert!(cases.len() >= 150, "{} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let a = send(&w, c).await;
        if let Err(why) = check(c, &a) {
            failures.push(format!("{}: {why}\n    {}", c.name, a.body));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );

    // The process is up and answers.
    let child = w.child.as_mut().expect("the child");
    assert!(
        child.try_wait().expect("poll the child").is_none(),
        "serve exited"
    );
    assert_eq!(
        Answer::of(w.http().get(w.url("/healthz"))).await.status,
        200
    );
    // The record is as it was; the rejections log only grew.
    let (after, rejections_after) = dump(&db);
    assert!(
        before == after,
        "the record changed:\n--- before\n{before}\n--- after\n{after}"
    );
    assert_eq!(
        rejections_after[..rejections_before.len()],
        rejections_before[..],
        "kept rejections are unchanged"
    );
    eprintln!(
        "{} hostile cases; {} refusals appended to the rejections log",
        cases.len(),
        rejections_after.len() - rejections_before.len()
    );
}
