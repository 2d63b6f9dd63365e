//! Carrier webhooks over real HTTP against `a2a-watcher serve` (contracts/serve.md "Carrier
//! webhooks"): the shipped formats under examples/webhooks/, signatures (good, bad, missing,
//! stale), all or nothing, the unmatched answer, bearer-token sources, configuration errors at
//! start, and the `webhook test` dry run.

use crate::common;

use std::process::Stdio;

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use jiff::Timestamp;
use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};

use common::*;

const ONE_RECORD_TOML: &str = include_str!("../examples/webhooks/one-record/source.toml");
const ONE_RECORD_DEP: &str =
    include_str!("../examples/webhooks/one-record/logistics-event-dep.json");
const ONE_RECORD_RCF: &str =
    include_str!("../examples/webhooks/one-record/logistics-event-rcf.json");
const ONE_RECORD_TOKEN: &str = "replace-with-the-one-record-source-token";
const EASYPOST_TOML: &str = include_str!("../examples/webhooks/easypost/source.toml");
const EASYPOST_EVENT: &str = include_str!("../examples/webhooks/easypost/tracker-updated.json");
const EASYPOST_SECRET: &str = "replace-with-the-easypost-webhook-secret";
const EASYPOST_TOKEN: &str = "replace-with-a-token-for-easypost";
const AFTERSHIP_TOML: &str = include_str!("../examples/webhooks/aftership/source.toml");
const AFTERSHIP_EVENT: &str = include_str!("../examples/webhooks/aftership/tracking-update.json");
const AFTERSHIP_SECRET: &str = "replace-with-the-aftership-webhook-secret";

/// A source signing with a timestamp (the contract's example), and a bearer-token source, each
/// with [`DEPARTED_MAPPING`].
const SIGNED_SOURCE: &str = r#"
[[sources]]
id = "carrier-feed:signed"
token = "src-token-signed"
[sources.signature]
header = "X-Hmac-Signature"
algorithm = "hmac-sha256"
encoding = "hex"
secret = "shared-secret"
timestamp_header = "X-Timestamp"
tolerance = "PT5M"
"#;
const BEARER_SOURCE: &str = r#"
[[sources]]
id = "carrier-feed:bearer"
token = "src-token-bearer"
"#;

fn extra() -> String {
    format!(
        "{ONE_RECORD_TOML}\n{EASYPOST_TOML}\n{AFTERSHIP_TOML}\n\
         {SIGNED_SOURCE}{DEPARTED_MAPPING}{BEARER_SOURCE}{DEPARTED_MAPPING}"
    )
}

fn hmac_sha256(secret: &str, message: &[u8]) -> Vec<u8> {
    let mut m = <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(secret.as_bytes()).expect("key");
    m.update(message);
    m.finalize().into_bytes().to_vec()
}

fn webhook_url(w: &Watcher, source: &str) -> String {
    w.url(&format!("/v1/sources/{source}/webhook"))
}

/// Posts `body` (raw bytes) to `source`'s webhook with `headers`.
async fn post(w: &Watcher, source: &str, body: &str, headers: &[(&str, String)]) -> Answer {
    let mut req = w
        .http()
        .post(webhook_url(w, source))
        .header("Content-Type", "application/json")
        .body(body.to_owned());
    for (k, v) in headers {
        req = req.header(*k, v);
    }
    Answer::of(req).await
}

/// Posts the ONE Record `event` as JSON to the `one-record:carrier` webhook with its bearer token.
async fn post_one_record(w: &Watcher, event: &Value) -> Answer {
    let req = w
        .http()
        .post(webhook_url(w, "one-record:carrier"))
        .bearer_auth(ONE_RECORD_TOKEN)
        .json(event);
    Answer::of(req).await
}

/// EasyPost's header: `hmac-sha256-hex=` and the hex HMAC of the raw body.
fn easypost_signature(body: &str, secret: &str) -> (&'static str, String) {
    (
        "X-Hmac-Signature",
        format!(
            "hmac-sha256-hex={}",
            hex::encode(hmac_sha256(secret, body.as_bytes()))
        ),
    )
}

/// AfterShip's header: the base64 HMAC of the raw body.
fn aftership_signature(body: &str) -> (&'static str, String) {
    (
        "aftership-hmac-sha256",
        base64::engine::general_purpose::STANDARD
            .encode(hmac_sha256(AFTERSHIP_SECRET, body.as_bytes())),
    )
}

fn keys(answer: &Answer) -> Vec<String> {
    answer.body["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {answer:?}"))
        .iter()
        .map(|r| r["factKey"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The facts recorded on `type/id` (the operator's subject view), or none when nothing is.
async fn facts_on(w: &Watcher, subject_type: &str, id: &str) -> Vec<Value> {
    let a = w.get(&format!("/v1/subjects/{subject_type}/{id}")).await;
    match a.status {
        200 => a.body["facts"].as_array().cloned().unwrap_or_default(),
        404 => Vec::new(),
        _ => panic!("subject view: {a:?}"),
    }
}

/// Each shipped format posted as its provider would: the facts of the mapping are recorded with
/// the source's id, and redelivery of the same payload records nothing new.
#[tokio::test]
async fn the_shipped_formats_yield_their_facts_and_redelivery_is_a_no_op() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &extra()).await;

    // EasyPost: HMAC hex with its prefix in X-Hmac-Signature; one fact per tracking detail.
    let sig = easypost_signature(EASYPOST_EVENT, EASYPOST_SECRET);
    let a = post(
        &w,
        "easypost:tracker",
        EASYPOST_EVENT,
        &[(sig.0, sig.1.clone())],
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        a.body,
        json!({ "results": [
            { "factKey": "shipment.pre_transit:EZ4000000004", "satisfied": [] },
            { "factKey": "shipment.in_transit:EZ4000000004", "satisfied": [] } ] })
    );
    let facts = facts_on(&w, "shipment", "EZ4000000004").await;
    assert_eq!(facts.len(), 2, "{facts:?}");
    for f in &facts {
        assert_eq!(f["source"], "easypost:tracker");
        assert_eq!(
            f["mapping"], "tracker.updated",
            "the mapping is named on the record"
        );
    }
    assert_eq!(facts[1]["observedAt"], "2026-09-10T18:31:00Z");
    // Redelivery: the same answer shape, nothing new recorded.
    let again = post(&w, "easypost:tracker", EASYPOST_EVENT, &[(sig.0, sig.1)]).await;
    assert_eq!(again.status, 200, "{again:?}");
    assert_eq!(facts_on(&w, "shipment", "EZ4000000004").await, facts);

    // AfterShip: HMAC-SHA256 base64 in aftership-hmac-sha256; `ts` is Unix seconds.
    let sig = aftership_signature(AFTERSHIP_EVENT);
    let a = post(&w, "aftership:tracking", AFTERSHIP_EVENT, &[sig]).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(keys(&a), ["parcel.OutForDelivery:1Z999AA10123456784"]);
    let facts = facts_on(&w, "parcel", "1Z999AA10123456784").await;
    assert_eq!(facts.len(), 1, "{facts:?}");
    assert_eq!(facts[0]["observedAt"], "2026-09-11T08:13:00Z");
    assert_eq!(facts[0]["source"], "aftership:tracking");

    // ONE Record: JSON-LD with the source's bearer token; DEP and RCF milestones.
    for (body, key, at) in [
        (
            ONE_RECORD_DEP,
            "shipment.departed:176-12345675",
            "2026-09-10T20:14:00Z",
        ),
        (
            ONE_RECORD_RCF,
            "shipment.received-from-flight:176-12345675",
            "2026-09-11T04:41:00Z",
        ),
    ] {
        let a = Answer::of(
            w.http()
                .post(webhook_url(&w, "one-record:carrier"))
                .bearer_auth(ONE_RECORD_TOKEN)
                .header("Content-Type", "application/ld+json")
                .body(body),
        )
        .await;
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(keys(&a), [key]);
        let facts = facts_on(&w, "awb", "176-12345675").await;
        assert!(
            facts.iter().any(|f| f["factKey"] == key
                && f["observedAt"] == at
                && f["source"] == "one-record:carrier"),
            "{facts:?}"
        );
    }
    // ARR, and a PLANNED departure that is not a fact.
    let mut arr: Value = serde_json::from_str(ONE_RECORD_DEP).unwrap();
    arr["cargo:eventCode"]["cargo:code"] = json!("ARR");
    let a = post_one_record(&w, &arr).await;
    assert_eq!(keys(&a), ["shipment.arrived:176-12345675"]);
    let mut planned: Value = serde_json::from_str(ONE_RECORD_DEP).unwrap();
    planned["cargo:eventTimeType"]["@id"] = json!("cargo:PLANNED");
    let a = post_one_record(&w, &planned).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body, json!({ "results": [], "unmatched": true }));
    assert_eq!(facts_on(&w, "awb", "176-12345675").await.len(), 3);
}

/// A signed source: a good signature records; a wrong secret, a changed body, a missing header,
/// the bearer token instead of a signature, and a timestamp outside the tolerance are 401
/// problem+json and record nothing.
#[tokio::test]
async fn signatures_good_bad_missing_and_stale() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &extra()).await;

    let wrong = easypost_signature(EASYPOST_EVENT, "another-secret");
    let d = post(
        &w,
        "easypost:tracker",
        EASYPOST_EVENT,
        &[(wrong.0, wrong.1)],
    )
    .await
    .assert_problem(401);
    assert!(d.contains("X-Hmac-Signature"), "{d}");
    let signed_other = easypost_signature("{}", EASYPOST_SECRET);
    post(
        &w,
        "easypost:tracker",
        EASYPOST_EVENT,
        &[(signed_other.0, signed_other.1)],
    )
    .await
    .assert_problem(401);
    let d = post(&w, "easypost:tracker", EASYPOST_EVENT, &[])
        .await
        .assert_problem(401);
    assert!(d.contains("missing"), "{d}");
    // The bearer token does not replace a configured signature.
    post(
        &w,
        "easypost:tracker",
        EASYPOST_EVENT,
        &[("Authorization", format!("Bearer {EASYPOST_TOKEN}"))],
    )
    .await
    .assert_problem(401);
    let bad_base64 = post(
        &w,
        "aftership:tracking",
        AFTERSHIP_EVENT,
        &[("aftership-hmac-sha256", "not base64!".to_owned())],
    )
    .await;
    bad_base64.assert_problem(401);
    assert!(facts_on(&w, "shipment", "EZ4000000004").await.is_empty());
    assert!(facts_on(&w, "parcel", "1Z999AA10123456784")
        .await
        .is_empty());

    // Signed with a timestamp: `{timestamp}.{body}`.
    let body = json!({ "event": "departed", "shipment": "SIG-1", "at": fmt(Timestamp::now()) })
        .to_string();
    let signed_at = |ts: &str| {
        let mac = hmac_sha256("shared-secret", format!("{ts}.{body}").as_bytes());
        vec![
            ("X-Hmac-Signature", format!("sha256={}", hex::encode(mac))),
            ("X-Timestamp", ts.to_owned()),
        ]
    };
    let now = Timestamp::now().as_second();
    let stale = (now - 400).to_string();
    let d = post(&w, "carrier-feed:signed", &body, &signed_at(&stale))
        .await
        .assert_problem(401);
    assert!(d.contains("X-Timestamp") && d.contains("PT5M"), "{d}");
    let future = (now + 400).to_string();
    post(&w, "carrier-feed:signed", &body, &signed_at(&future))
        .await
        .assert_problem(401);
    // The body signed without the timestamp is refused.
    let plain = hex::encode(hmac_sha256("shared-secret", body.as_bytes()));
    post(
        &w,
        "carrier-feed:signed",
        &body,
        &[
            ("X-Hmac-Signature", plain),
            ("X-Timestamp", now.to_string()),
        ],
    )
    .await
    .assert_problem(401);
    assert!(facts_on(&w, "shipment", "SIG-1").await.is_empty());
    let fresh = now.to_string();
    let a = post(&w, "carrier-feed:signed", &body, &signed_at(&fresh)).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(keys(&a), ["shipment.departed:SIG-1"]);
    let facts = facts_on(&w, "shipment", "SIG-1").await;
    assert_eq!(facts.len(), 1);
    assert_eq!(facts[0]["source"], "carrier-feed:signed");
    // An RFC 3339 timestamp is accepted too.
    let rfc = fmt(Timestamp::now());
    let a = post(&w, "carrier-feed:signed", &body, &signed_at(&rfc)).await;
    assert_eq!(a.status, 200, "{a:?}");
}

/// All or nothing: a payload whose second element cannot be read is 422 naming the mapping and
/// the pointer, and not even the first element's fact is recorded. A payload no mapping selects
/// is 200 `unmatched`.
#[tokio::test]
async fn a_bad_element_records_nothing_and_an_untracked_event_is_unmatched() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &extra()).await;

    let mut event: Value = serde_json::from_str(EASYPOST_EVENT).unwrap();
    event["result"]["tracking_details"][1]["datetime"] = json!("Thursday morning");
    let body = event.to_string();
    let sig = easypost_signature(&body, EASYPOST_SECRET);
    let d = post(&w, "easypost:tracker", &body, &[sig])
        .await
        .assert_problem(422);
    assert!(
        d.contains("tracker.updated") && d.contains("/datetime") && d.contains("element 1"),
        "{d}"
    );
    assert!(facts_on(&w, "shipment", "EZ4000000004").await.is_empty());

    event["result"]["tracking_details"][1]["datetime"] = json!("2026-09-10T18:31:00Z");
    event["result"]["tracking_details"][1]["status"] = json!({ "code": "IT" });
    let body = event.to_string();
    let sig = easypost_signature(&body, EASYPOST_SECRET);
    let d = post(&w, "easypost:tracker", &body, &[sig])
        .await
        .assert_problem(422);
    assert!(d.contains("/status") && d.contains("an object"), "{d}");
    assert!(facts_on(&w, "shipment", "EZ4000000004").await.is_empty());

    // A batch event: EasyPost sends it to the same webhook; nobody tracks it here.
    let batch = json!({ "object": "Event", "description": "batch.created", "result": { "object": "Batch" } })
        .to_string();
    let sig = easypost_signature(&batch, EASYPOST_SECRET);
    let a = post(&w, "easypost:tracker", &batch, &[sig]).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body, json!({ "results": [], "unmatched": true }));

    // Selected, but its `each` array is empty: matched, nothing to record.
    let mut empty: Value = serde_json::from_str(EASYPOST_EVENT).unwrap();
    empty["result"]["tracking_details"] = json!([]);
    let body = empty.to_string();
    let sig = easypost_signature(&body, EASYPOST_SECRET);
    let a = post(&w, "easypost:tracker", &body, &[sig]).await;
    assert_eq!((a.status, a.body), (200, json!({ "results": [] })));

    // Not JSON at all (but signed): 400.
    let sig = easypost_signature("not json", EASYPOST_SECRET);
    post(&w, "easypost:tracker", "not json", &[sig])
        .await
        .assert_problem(400);
}

/// A source without a signature uses its bearer token, as on `/v1/facts`; the webhook's fact
/// satisfies the booking agent's expectation exactly as a fact on `/v1/facts` would.
#[tokio::test]
async fn bearer_sources_and_the_facts_answer() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &extra()).await;
    let pushed = w.push(&booking_artifact(BookingTimes::far())).await;
    assert_eq!(pushed.status, 200, "{pushed:?}");

    let body = json!({ "event": "departed", "shipment": SHIPMENT, "at": fmt(Timestamp::now()) })
        .to_string();
    let with = |token: &str| vec![("Authorization", format!("Bearer {token}"))];
    post(&w, "carrier-feed:bearer", &body, &[])
        .await
        .assert_problem(401);
    post(&w, "carrier-feed:bearer", &body, &with("nope"))
        .await
        .assert_problem(401);
    post(&w, "carrier-feed:bearer", &body, &with(SOURCE_TOKEN))
        .await
        .assert_problem(403);
    post(&w, "carrier-feed:bearer", &body, &with(OPERATOR_TOKEN))
        .await
        .assert_problem(403);
    post(&w, "no-such-source", &body, &with("src-token-bearer"))
        .await
        .assert_problem(403);
    let before = w.shipment(SHIPMENT).await.expect("recorded");
    assert_eq!(before["facts"], json!([]));

    let a = post(&w, "carrier-feed:bearer", &body, &with("src-token-bearer")).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        a.body,
        json!({ "results": [{ "factKey": format!("shipment.departed:{SHIPMENT}"),
            "satisfied": ["exp-01J8Q0DEPART"] }] })
    );
    let after = w.shipment(SHIPMENT).await.expect("recorded");
    assert_eq!(
        expectation(&after, "exp-01J8Q0DEPART")["status"],
        "satisfied"
    );
    assert_eq!(after["facts"][0]["source"], "carrier-feed:bearer");

    // A source with no mappings: everything is unmatched.
    let a = post(&w, SOURCE_ID, &body, &with(SOURCE_TOKEN)).await;
    assert_eq!(a.body, json!({ "results": [], "unmatched": true }), "{a:?}");
}

/// A bad pointer, template or signature setting stops the start with a message naming the
/// source, the mapping and the field.
#[tokio::test]
async fn configuration_errors_stop_the_start() {
    let cases = [
        (
            "[[sources.mappings]]\nname = \"m1\"\nfact_key = \"k:{status}\"\nobserved_at = \"/at\"\n",
            ["\"src-x\"", "\"m1\"", "fact_key"],
        ),
        (
            "[[sources.mappings]]\nname = \"m2\"\nfact_key = \"k\"\nobserved_at = \"at\"\n",
            ["\"src-x\"", "\"m2\"", "observed_at"],
        ),
        (
            "[[sources.mappings]]\nname = \"m3\"\nfact_key = \"k\"\nobserved_at = \"/at\"\nsubject = { type = \"s\", id = \"{/a~2}\" }\n",
            ["\"src-x\"", "\"m3\"", "subject.id"],
        ),
        (
            "[[sources.mappings]]\nname = \"m4\"\nwhen = { pointer = \"event\", equals = \"x\" }\nfact_key = \"k\"\nobserved_at = \"/at\"\n",
            ["\"src-x\"", "\"m4\"", "when.pointer"],
        ),
        (
            "[sources.signature]\nheader = \"X-Sig\"\nalgorithm = \"hmac-sha256\"\nencoding = \"hex\"\nsecret = \"s\"\ntimestamp_header = \"X-T\"\ntolerance = \"5 minutes\"\n",
            ["\"src-x\"", "signature", "tolerance"],
        ),
    ];
    for (section, wanted) in cases {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("watcher.toml");
        std::fs::write(
            &path,
            format!("listen = \"127.0.0.1:0\"\ndatabase = \"w.db\"\n[[sources]]\nid = \"src-x\"\ntoken = \"t\"\n{section}"),
        )
        .unwrap();
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
            .arg("serve")
            .arg("--config")
            .arg(&path)
            .stdin(Stdio::null())
            .output()
            .await
            .expect("run serve");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "serve started with {section}");
        for w in wanted {
            assert!(stderr.contains(w), "{w} not in {stderr}");
        }
        assert!(!String::from_utf8_lossy(&out.stdout).contains("listening on"));
    }
}

async fn dry_run(config: &str, source: &str, payload: &std::path::Path) -> (bool, Value, String) {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(["webhook", "test", "--config", config, "--source", source])
        .arg(payload)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run webhook test");
    (
        out.status.success(),
        serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The dry run of the shipped source `source` (examples/webhooks/{its name's prefix}/source.toml)
/// on the shipped `payload` (a path under examples/webhooks/).
async fn dry_run_example(source: &str, payload: &str) -> (bool, Value, String) {
    let (example, _) = source.split_once(':').expect("a shipped source id");
    let config = format!("examples/webhooks/{example}/source.toml");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let payload = root.join("examples/webhooks").join(payload);
    dry_run(&config, source, &payload).await
}

/// The dry run prints each shipped payload's facts, or the mapping error, and opens no store.
#[tokio::test]
async fn the_dry_run_prints_the_facts_and_records_nothing() {
    let (ok, out, err) = dry_run_example("easypost:tracker", "easypost/tracker-updated.json").await;
    assert!(ok, "{err}");
    assert_eq!(
        out,
        json!({ "source": "easypost:tracker", "facts": [
            { "mapping": "tracker.updated", "factKey": "shipment.pre_transit:EZ4000000004",
              "observedAt": "2026-09-08T16:02:11Z", "subject": { "type": "shipment", "id": "EZ4000000004" } },
            { "mapping": "tracker.updated", "factKey": "shipment.in_transit:EZ4000000004",
              "observedAt": "2026-09-10T18:31:00Z", "subject": { "type": "shipment", "id": "EZ4000000004" } } ] })
    );
    let (ok, out, err) =
        dry_run_example("aftership:tracking", "aftership/tracking-update.json").await;
    assert!(ok, "{err}");
    assert_eq!(
        out["facts"],
        json!([{ "mapping": "tracking_update", "factKey": "parcel.OutForDelivery:1Z999AA10123456784",
            "observedAt": "2026-09-11T08:13:00Z", "subject": { "type": "parcel", "id": "1Z999AA10123456784" } }])
    );
    let (ok, out, err) =
        dry_run_example("one-record:carrier", "one-record/logistics-event-dep.json").await;
    assert!(ok, "{err}");
    assert_eq!(
        out["facts"],
        json!([{ "mapping": "one-record.DEP", "factKey": "shipment.departed:176-12345675",
            "observedAt": "2026-09-10T20:14:00Z", "subject": { "type": "awb", "id": "176-12345675" } }])
    );
    // Another provider's payload matches nothing.
    let (ok, out, _) = dry_run_example("easypost:tracker", "aftership/tracking-update.json").await;
    assert!(ok);
    assert_eq!(out["unmatched"], json!(true));

    // A payload the mapping cannot read: the error, exit status 1, and no database created.
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("watcher.toml");
    std::fs::write(&config, format!("database = \"w.db\"\n{EASYPOST_TOML}")).unwrap();
    let payload = dir.path().join("bad.json");
    let mut event: Value = serde_json::from_str(EASYPOST_EVENT).unwrap();
    event["result"]["tracking_details"][0]
        .as_object_mut()
        .unwrap()
        .remove("datetime");
    std::fs::write(&payload, event.to_string()).unwrap();
    let (ok, out, err) = dry_run(config.to_str().unwrap(), "easypost:tracker", &payload).await;
    assert!(!ok);
    assert_eq!(out, Value::Null);
    assert!(
        err.contains("tracker.updated")
            && err.contains("/datetime")
            && err.contains("names nothing"),
        "{err}"
    );
    assert!(
        !dir.path().join("w.db").exists(),
        "the dry run opened a store"
    );
    let (ok, _, err) = dry_run(config.to_str().unwrap(), "nobody", &payload).await;
    assert!(!ok && err.contains("nobody"), "{err}");

    // A payload giving a member twice: refused by name, as the route refuses it.
    let twice = dir.path().join("twice.json");
    std::fs::write(
        &twice,
        EASYPOST_EVENT.replacen('{', r#"{"description": "tracker.created","#, 1),
    )
    .unwrap();
    let (ok, out, err) = dry_run(config.to_str().unwrap(), "easypost:tracker", &twice).await;
    assert!(!ok);
    assert_eq!(out, Value::Null);
    assert!(
        err.contains("twice.json: the member \"description\" appears twice"),
        "{err}"
    );
}

/// A webhook's `observedAt` text is kept exactly as given beside the effective value, as on
/// `/v1/facts` (semantics.md "Time"): a claim later than receipt written in `+05:30` takes the
/// receipt time, a leap second its minute's last nanosecond, a zero value the receipt time.
#[tokio::test]
async fn a_webhook_observed_at_is_kept_as_given() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &extra()).await;
    let ahead = {
        let local = fmt(plus(Timestamp::now(), 6 * 3600 + 5 * 3600 + 30 * 60));
        format!("{}+05:30", local.trim_end_matches('Z'))
    };
    let with = vec![("Authorization", "Bearer src-token-bearer".to_owned())];
    for (i, given) in [
        ahead.as_str(),
        "2016-12-31T23:59:60Z",
        "1970-01-01T05:30:00+05:30",
    ]
    .into_iter()
    .enumerate()
    {
        let shipment = format!("PA-GIVEN-{i}");
        let body = json!({ "event": "departed", "shipment": shipment, "at": given }).to_string();
        let a = post(&w, "carrier-feed:bearer", &body, &with).await;
        assert_eq!(a.status, 200, "{given}: {a:?}");
        let facts = facts_on(&w, "shipment", &shipment).await;
        assert_eq!(facts.len(), 1, "{given}: {facts:?}");
        assert_eq!(facts[0]["claimedObservedAt"], given, "{facts:?}");
        if given.starts_with("2016") {
            assert_eq!(facts[0]["observedAt"], "2016-12-31T23:59:59.999999999Z");
        } else {
            assert_eq!(facts[0]["observedAt"], facts[0]["receivedAt"], "{facts:?}");
        }
    }
}
