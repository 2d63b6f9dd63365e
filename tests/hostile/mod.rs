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

mod bodies;
mod credentials;
mod facts;
mod learnables;
mod push_events;
mod push_refusals;
mod subjects;
mod webhooks;

const TEACHER: &str = TEACHER_TOKEN;
const AGENT_B: &str = "push-token-booking-b";
const SOURCE_B: &str = "src-token-b";
const OPERATOR_B: &str = "ops-token-b";
const TEACHER_B: &str = "teacher-token-b";
const SIGNED_SOURCE: &str = "carrier-feed:signed";
const SIGNED_TOKEN: &str = "src-token-signed";

fn extra(agent_url: &str) -> String {
    format!(
        r#"
{signed}[sources.signature]
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

{mapped}[[sources.mappings]]
name = "mapped"
each = "/events"
fact_key = "shipment.{{/status}}:{{^/code}}"
observed_at = "/at"

{TEACHER_TOML}
# Tenant b: an agent, a source, an operator and a teacher.
{agent_b}tenant = "b"

{source_b}tenant = "b"

{operator_b}tenant = "b"

{teacher_b}tenant = "b"
"#,
        signed = entry_toml("sources", SIGNED_SOURCE, SIGNED_TOKEN),
        mapped = entry_toml("sources", "carrier-feed:mapped", "src-token-mapped"),
        agent_b = agent_toml("booking-b", agent_url, AGENT_B),
        source_b = entry_toml("sources", "carrier-feed:b", SOURCE_B),
        operator_b = entry_toml("operators", "ops-b", OPERATOR_B),
        teacher_b = entry_toml("teachers", "dana-b", TEACHER_B),
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
    list.iter().map(ToString::to_string).collect()
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
    [
        ("POST", "/v1/agents/booking/push", Auth::Push(PUSH_TOKEN)),
        ("POST", "/v1/facts", Auth::Bearer(SOURCE_TOKEN)),
        (
            "POST",
            "/v1/sources/carrier-feed:mapped/webhook",
            Auth::Bearer("src-token-mapped"),
        ),
        ("POST", "/v1/lapses/retry", Auth::Bearer(OPERATOR_TOKEN)),
        ("PUT", "/v1/definitions/fresh-def", Auth::Bearer(TEACHER)),
    ]
    .into_iter()
    .chain(
        [
            "/v1/definitions/invoices/lessons",
            "/v1/definitions/invoices/lessons:check",
            "/v1/definitions/invoices/show-back",
            "/v1/definitions/invoices/activate",
            "/v1/definitions/invoices/versions/1/tombstone",
        ]
        .map(|path| ("POST", path, Auth::Bearer(TEACHER))),
    )
    .collect()
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    bodies::cases(&mut out);
    credentials::cases(&mut out);
    webhooks::cases(&mut out);
    push_events::cases(&mut out);
    push_refusals::cases(&mut out);
    facts::cases(&mut out);
    subjects::cases(&mut out);
    learnables::cases(&mut out);
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
