//! semantics.md "Time": every instant in every route and field is read with the one grammar,
//! range and leap-second rule. The contract's instant cases (`shared/instants/tests/cases.json`:
//! offsets, fractional digits, lower-case `t`/`z`, range ends, leap seconds, and what is
//! refused) are walked through each field that takes an instant: an expectation's `dueAt` and
//! `horizon` and a `status.timestamp` on the push route, a fact's `observedAt` on
//! `POST /v1/facts` and in a carrier webhook's mapping, `since` on `GET /v1/lapses`, and a
//! lesson's `expiresAt` on the Learnables authority's lesson route. Each field accepts and
//! refuses the same cases, reads each accepted one as the same instant (where a field's own rule
//! of the contract applies, the test says which), and names itself and the reason when it
//! refuses (problem+json where the request is refused whole).

use std::sync::Arc;

use axum::Router;
use learnables::Registry;
use learnables_store::MemoryDefinitionStore;
use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde_json::{json, Value};
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_http::{learnables_router, LearnablesState, Principal, Role, SourceWebhook};
use watcher_runtime::clock::FakeClock;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Commit, OutboxEntry, Store};
use watcher_webhooks::{MappingConfig, SourceHook};

use crate::common::{agents, credentials, router_at, send, URI};

const CASES: &str = include_str!("../../instants/tests/cases.json");

/// The watcher's clock for the walk: the last instant, so that every instant is at or before
/// receipt (an `observedAt` later than receipt is read as the receipt, semantics.md "Time").
const WATCHER_NOW: &str = "9999-12-31T23:59:59.999999999Z";
/// The authority's clock: the first instant, so that every expiry is later than the lesson.
const AUTHORITY_NOW: &str = "0001-01-01T00:00:00Z";

const PUSH: &str = "push-token";
const SOURCE: &str = "source-token";
const OPERATOR: &str = "ops-token";
const TEACHER: &str = "teacher-token";
const DANA: &str = "dana@warehouse.example";

/// What a field made of a case: the instant it reads, as the record writes it back (`None`
/// where no answer shows it), or the words of its refusal.
type Reading = Result<Option<String>, String>;

/// One case of `cases.json`: what is given and what it reads as (`Ok`) or why it is refused.
struct Case {
    given: String,
    reads: Result<String, String>,
}

fn cases() -> Vec<Case> {
    let all: Value = serde_json::from_str(CASES).expect("cases.json is JSON");
    let of = |member: &str, key: &str| -> Vec<(String, String)> {
        all[member]
            .as_array()
            .expect("a list")
            .iter()
            .map(|c| {
                (
                    c["given"].as_str().unwrap().to_owned(),
                    c[key].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    of("accepted", "reads")
        .into_iter()
        .map(|(given, reads)| Case {
            given,
            reads: Ok(reads),
        })
        .chain(of("refused", "why").into_iter().map(|(given, why)| Case {
            given,
            reads: Err(why),
        }))
        .collect()
}

/// The watcher's routes over a memory store on [`WATCHER_NOW`], with the agent `booking`, the
/// source `carrier` (its webhook maps `/at` to `observedAt`) and an operator.
fn watcher() -> Router {
    let mut credentials = credentials(&[
        (PUSH, Role::Agent, "booking"),
        (SOURCE, Role::Source, "carrier"),
        (OPERATOR, Role::Operator, "ops"),
    ]);
    let mapping: MappingConfig = serde_json::from_value(json!({
        "name": "departed",
        "fact_key": "shipment.departed:{/shipment}",
        "observed_at": "/at",
        "subject": { "type": "shipment", "id": "{/shipment}" }
    }))
    .unwrap();
    credentials
        .insert_webhook(SourceWebhook {
            tenant: Tenant::default_tenant(),
            id: "carrier".into(),
            hook: SourceHook::compile(None, &[mapping]).unwrap(),
        })
        .unwrap();
    router_at(
        Arc::new(MemoryStore::new()),
        agents(&["booking"]),
        credentials,
        WATCHER_NOW,
    )
}

/// `method uri` with the bearer `token` (or the push token header for the push route).
async fn call(
    app: &Router,
    method: &str,
    uri: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let bearer = format!("Bearer {token}");
    let auth = if token == PUSH {
        ("X-A2A-Notification-Token", token)
    } else {
        ("Authorization", bearer.as_str())
    };
    let (status, content_type, bytes) = send(app, method, uri, auth, body.as_ref()).await;
    let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if status.is_client_error() {
        assert_eq!(content_type, "application/problem+json", "{uri}: {body}");
    }
    (status.as_u16(), body)
}

/// A refused request's problem `detail`, which must name `field`.
fn problem(status: u16, body: &Value, field: &str) -> String {
    let detail = body["detail"].as_str().unwrap_or_default().to_owned();
    assert!(
        detail.contains(field),
        "a {status} refusal names `{field}`: {detail}"
    );
    detail
}

/// The push of one expectation `id` about shipment `id` due at `due`, with `horizon` if given.
fn expectation(id: &str, due: &str, horizon: Option<&str>) -> Value {
    let mut e = json!({
        "expectationId": id, "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": id },
        "expects": "the airline manifest",
        "satisfiedBy": { "factKey": format!("shipment.manifest.received:{id}") },
        "dueAt": due, "basis": "observed"
    });
    if let Some(h) = horizon {
        e["horizon"] = json!(h);
    }
    json!({ "artifactUpdate": {
        "taskId": format!("task-{id}"), "contextId": "ctx",
        "artifact": {
            "artifactId": format!("artifact-{id}"), "parts": [{ "text": "booked" }],
            "extensions": [URI], "metadata": { URI: { "expectations": [e] } }
        }
    } })
}

/// The shipment `id`'s record, as the operator reads it.
async fn subject(app: &Router, id: &str) -> Value {
    let (status, body) = call(
        app,
        "GET",
        &format!("/v1/subjects/shipment/{id}"),
        OPERATOR,
        None,
    )
    .await;
    assert_eq!(status, 200, "{id}: {body}");
    body
}

/// Pushes expectation `id` with `due` and `horizon`; reads back the member `member` of its
/// record, or the refusal's reason (which names `member`).
async fn pushed(app: &Router, id: &str, due: &str, horizon: Option<&str>, member: &str) -> Reading {
    let (status, body) = call(
        app,
        "POST",
        "/v1/agents/booking/push",
        PUSH,
        Some(expectation(id, due, horizon)),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    if let Some(refused) = body["rejected"].as_array().and_then(|r| r.first()) {
        let reason = refused["reason"].as_str().unwrap_or_default().to_owned();
        assert!(
            reason.contains(member),
            "the refusal names `{member}`: {reason}"
        );
        return Err(reason);
    }
    assert_eq!(body["raised"], json!([id]), "{body}");
    let record = subject(app, id).await;
    Ok(record["expectations"][0][member]
        .as_str()
        .map(str::to_owned))
}

/// Reports a departure of shipment `id` observed at `given` through `POST /v1/facts`.
async fn reported(app: &Router, id: &str, given: &str) -> Reading {
    let fact = json!({ "factKey": format!("shipment.departed:{id}"), "observedAt": given,
                       "subject": { "type": "shipment", "id": id } });
    let (status, body) = call(app, "POST", "/v1/facts", SOURCE, Some(fact)).await;
    if status != 200 {
        assert_eq!(status, 400, "{body}");
        return Err(problem(status, &body, "observedAt"));
    }
    Ok(subject(app, id).await["facts"][0]["observedAt"]
        .as_str()
        .map(str::to_owned))
}

/// Posts a carrier's payload `{ "shipment": id, "at": given }` to the source's webhook.
async fn hooked(app: &Router, id: &str, given: &str) -> Reading {
    let payload = json!({ "shipment": id, "at": given });
    let (status, body) = call(
        app,
        "POST",
        "/v1/sources/carrier/webhook",
        SOURCE,
        Some(payload),
    )
    .await;
    if status != 200 {
        assert_eq!(status, 422, "{body}");
        return Err(problem(status, &body, "observed_at"));
    }
    Ok(subject(app, id).await["facts"][0]["observedAt"]
        .as_str()
        .map(str::to_owned))
}

/// Pushes a WORKING status of task `id` stamped `given`: an invalid stamp is a warning naming
/// `status.timestamp` (semantics.md "Time"); the answer shows no instant.
async fn stamped(app: &Router, id: &str, given: &str) -> Reading {
    let update = json!({ "statusUpdate": { "taskId": id, "contextId": "ctx",
        "status": { "state": "TASK_STATE_WORKING", "timestamp": given } } });
    let (status, body) = call(app, "POST", "/v1/agents/booking/push", PUSH, Some(update)).await;
    assert_eq!(status, 200, "{body}");
    let warnings: Vec<&str> = body["warnings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("status.timestamp"))
        .collect();
    match warnings.first() {
        Some(w) => Err((*w).to_owned()),
        None => Ok(None),
    }
}

/// `GET /v1/lapses?since=given` over lapse tasks lapsed at `reads` and a nanosecond before it:
/// the instant `since` was read as is pinned by which of the two it lists.
async fn since(given: &str, reads: Option<&str>) -> Reading {
    let store: Arc<dyn Store> = Arc::new(MemoryStore::new());
    let entry = |id: &str, at: Instant| {
        OutboxEntry::queued(
            Tenant::default_tenant(),
            AgentId::parse("booking").unwrap(),
            id.to_owned(),
            ExpectationId::parse("exp").unwrap(),
            LapseKind::Overdue,
            at,
            json!({}),
        )
    };
    if let Some(at) = reads.map(|r| Instant::parse(r).unwrap()) {
        let mut entries = vec![entry("at", at)];
        if let Ok(before) = Instant::from_nanos(at.as_nanos() - 1) {
            entries.insert(0, entry("before", before));
        }
        store
            .commit(&Tenant::default_tenant(), Commit::of_outbox(entries))
            .await
            .unwrap();
    }
    let app = router_at(
        store,
        agents(&["booking"]),
        credentials(&[(OPERATOR, Role::Operator, "ops")]),
        WATCHER_NOW,
    );
    let uri = format!(
        "/v1/lapses?since={}",
        utf8_percent_encode(given, NON_ALPHANUMERIC)
    );
    let (status, body) = call(&app, "GET", &uri, OPERATOR, None).await;
    if status != 200 {
        assert_eq!(status, 400, "{body}");
        return Err(problem(status, &body, "`since`"));
    }
    let listed: Vec<&str> = body["lapses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["messageId"].as_str().unwrap())
        .collect();
    Ok(match (listed.as_slice(), reads) {
        // Lists the one at the instant and not the one a nanosecond before: read as it.
        (["at"], Some(r)) => Some(r.to_owned()),
        (other, _) => Some(format!("lists {other:?}")),
    })
}

/// The Learnables authority on [`AUTHORITY_NOW`], the Appendix B definition created.
async fn authority() -> Router {
    let mut c = watcher_http::Credentials::new();
    c.insert(
        TEACHER,
        Principal {
            role: Role::Teacher,
            id: "teacher-console".into(),
            tenant: Tenant::default_tenant(),
            on_behalf_of: vec![DANA.into()],
        },
    )
    .unwrap();
    let app = learnables_router(LearnablesState {
        store: Arc::new(MemoryDefinitionStore::new()),
        credentials: Arc::new(c),
        clock: Arc::new(FakeClock::new(Instant::parse(AUTHORITY_NOW).unwrap())),
        registry: Arc::new(Registry::builtin()),
        reviews: None,
    });
    // A definition as the spec's Appendix B (learnables-v1) begins one.
    let customers = json!({ "customers": {
        "learnable": "marks", "entry": "customer",
        "teaches": "which customer a message belongs to",
        "skills": ["triage_inbound"],
        "entries": { "northgate": { "label": "Northgate Motors Ltd", "value": { "marks": [
            { "pattern": "@northgate-motors\\.example", "where": "from" }
        ] } } }
    } });
    let (status, body) = call(
        &app,
        "PUT",
        "/v1/definitions/triage",
        TEACHER,
        Some(json!({ "collections": customers, "taughtBy": DANA })),
    )
    .await;
    assert_eq!(status, 201, "{body}");
    app
}

/// Teaches a lesson into entry `entry` expiring at `given`; reads back the history's
/// `expiresAt`, or the refusal (400 naming `expiresAt`).
async fn taught(app: &Router, entry: &str, given: &str) -> Reading {
    let lesson = json!({ "collection": "customers", "entry": entry,
        "value": { "pattern": format!("{entry}\\.example"), "where": "from" },
        "taughtBy": DANA, "expiresAt": given });
    let (status, body) = call(
        app,
        "POST",
        "/v1/definitions/triage/lessons",
        TEACHER,
        Some(lesson),
    )
    .await;
    if status != 200 {
        assert_eq!(status, 400, "{body}");
        return Err(problem(status, &body, "expiresAt"));
    }
    assert_eq!(body["learned"], json!(true), "{body}");
    let (_, history) = call(app, "GET", "/v1/definitions/triage/history", TEACHER, None).await;
    Ok(history["history"][0]["expiresAt"]
        .as_str()
        .map(str::to_owned))
}

/// Checks `got` against `case` for `field`: the same instant, or a refusal holding the reason.
/// `own` gives a field's own rule of the contract for an accepted instant: what the field reads
/// instead (`Ok`) or why it refuses it (`Err`), where it differs from the grammar's reading.
fn check(
    field: &str,
    case: &Case,
    got: &Reading,
    own: &dyn Fn(&str) -> Option<Result<String, String>>,
    wrong: &mut Vec<String>,
) {
    let want = match &case.reads {
        Ok(reads) => own(reads).unwrap_or(Ok(reads.clone())),
        Err(why) => Err(why.clone()),
    };
    let ok = match (&want, got) {
        (Ok(reads), Ok(Some(shown))) => reads == shown,
        (Ok(_), Ok(None)) => true,
        (Err(why), Err(reason)) => reason.contains(why.as_str()),
        _ => false,
    };
    if !ok {
        wrong.push(format!(
            "{field} {:?}: want {want:?}, got {got:?}",
            case.given
        ));
    }
}

/// The zero values (semantics.md "Time": an unset time): an `observedAt` at one is read as the
/// receipt, here [`WATCHER_NOW`].
fn zero_is_receipt(reads: &str) -> Option<Result<String, String>> {
    let t = Instant::parse(reads).unwrap();
    t.is_zero_value().then(|| Ok(WATCHER_NOW.to_owned()))
}

fn no_own_rule(_: &str) -> Option<Result<String, String>> {
    None
}

#[tokio::test]
async fn every_field_that_takes_an_instant_reads_the_contracts_cases_alike() {
    let app = watcher();
    let authority = authority().await;
    let cases = cases();
    assert!(cases.len() >= 50, "{} cases", cases.len());
    let mut wrong = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let given = case.given.as_str();
        let reads = case.reads.as_ref().ok().map(String::as_str);

        let got = pushed(&app, &format!("due-{i}"), given, None, "dueAt").await;
        check("dueAt", case, &got, &no_own_rule, &mut wrong);

        // Due at the first instant, so every horizon is at or after it.
        let got = pushed(
            &app,
            &format!("horizon-{i}"),
            "0001-01-01T00:00:00Z",
            Some(given),
            "horizon",
        )
        .await;
        check("horizon", case, &got, &no_own_rule, &mut wrong);

        let got = reported(&app, &format!("fact-{i}"), given).await;
        check(
            "observedAt (POST /v1/facts)",
            case,
            &got,
            &zero_is_receipt,
            &mut wrong,
        );

        let got = hooked(&app, &format!("hook-{i}"), given).await;
        check(
            "observedAt (webhook mapping)",
            case,
            &got,
            &zero_is_receipt,
            &mut wrong,
        );

        let got = stamped(&app, &format!("task-stamp-{i}"), given).await;
        check("status.timestamp", case, &got, &no_own_rule, &mut wrong);

        let got = since(given, reads).await;
        check(
            "since (GET /v1/lapses)",
            case,
            &got,
            &no_own_rule,
            &mut wrong,
        );

        // An expiry must be later than the lesson (learnables-v1, expectations-v1 §16): the
        // first instant, the authority's clock here, is not.
        let got = taught(&authority, &format!("entry{i}"), given).await;
        check(
            "expiresAt (lesson)",
            case,
            &got,
            &|reads| (reads == AUTHORITY_NOW).then(|| Err("not later than".to_owned())),
            &mut wrong,
        );
    }
    assert!(
        wrong.is_empty(),
        "{} readings differ from the contract's:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}
