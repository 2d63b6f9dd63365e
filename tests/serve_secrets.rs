//! No token, signature secret or payload body is ever logged (issue 12 item 1): `serve` runs a
//! whole flow at `trace` with tokens taken from a file and from environment variables named in
//! the TOML (`push_token_file`, `bearer_env`, `token_env`, `secret_env`), and its log is searched
//! for every configured secret and for markers carried only in payload bodies.

mod common;

use std::time::Duration;

use hmac::{Hmac, KeyInit, Mac};
use serde_json::json;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};

use common::*;

const SECURE_PUSH: &str = "push-secret-7f3a9c1e-from-a-file";
const SECURE_BEARER: &str = "bearer-secret-51d0b2aa-from-env";
const SIGNED_TOKEN: &str = "source-secret-c44e19f0-from-env";
const SIGNING_SECRET: &str = "hmac-secret-9b7e2d41-from-env";
const TEACHER: &str = "teacher-secret-0a6f3e88";
const BODY_MARKER: &str = "PAYLOAD-MARKER-e1d5";

#[tokio::test]
#[allow(
    unsafe_code,
    reason = "the test sets the variables serve reads; set_var is unsafe"
)]
async fn a_whole_run_at_trace_logs_no_secret_and_no_body() {
    let secrets = tempfile::tempdir().unwrap();
    let push_file = secrets.path().join("secure.push-token");
    std::fs::write(&push_file, format!("{SECURE_PUSH}\n")).unwrap();
    // SAFETY: set before any thread reads the environment; this binary has one test.
    unsafe {
        std::env::set_var("A2A_TEST_SERVE_LOG", "trace");
        std::env::set_var("A2A_TEST_SECURE_BEARER", SECURE_BEARER);
        std::env::set_var("A2A_TEST_SIGNED_TOKEN", SIGNED_TOKEN);
        std::env::set_var("A2A_TEST_SIGNING_SECRET", SIGNING_SECRET);
    }
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let extra = format!(
        r#"
[[agents]]
id = "secure"
card = "booking-card.json"
endpoint = "{url}"
push_token_file = "{push}"
bearer_env = "A2A_TEST_SECURE_BEARER"

[[sources]]
id = "carrier-feed:signed"
token_env = "A2A_TEST_SIGNED_TOKEN"
[sources.signature]
header = "X-Sig"
algorithm = "hmac-sha256"
encoding = "hex"
secret_env = "A2A_TEST_SIGNING_SECRET"
{DEPARTED_MAPPING}
{teacher}"#,
        teacher = entry_toml("teachers", "dana", TEACHER),
        url = agent.url(),
        push = push_file.display(),
    );
    let w = spawn_watcher(&agent, &extra).await;

    // The agent pushes with the token from the file; an expectation lapses at once and its
    // lapse task goes out with the bearer from the environment.
    let due = plus(jiff::Timestamp::now(), -60);
    let mut pushed = one_expectation("task-secure", "exp-secure", "S-SECURE", due, "PT0S");
    pushed["artifactUpdate"]["artifact"]["parts"][0]["text"] = json!(BODY_MARKER);
    let a = w.push_as("secure", SECURE_PUSH, &pushed).await;
    assert_eq!(a.status, 200, "{a:?}");
    wait_for_requests(&agent, 1, Duration::from_secs(20)).await;
    let sent = &agent.requests()[0];
    assert_eq!(
        sent.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("authorization"))
            .map(|(_, v)| v.as_str()),
        Some(format!("Bearer {SECURE_BEARER}").as_str()),
        "the watcher's own credential for this agent (§13.1)"
    );
    // A wrong token is refused without echoing it.
    let wrong = w.push_as("secure", "not-the-token", &pushed).await;
    wrong.assert_problem(401);

    // A signed carrier webhook with the secret from the environment.
    let body = json!({ "event": "departed", "shipment": "S-SECURE", "at": "2026-01-01T00:00:00Z",
        "note": BODY_MARKER })
    .to_string();
    let mut mac =
        <Hmac<sha2::Sha256> as KeyInit>::new_from_slice(SIGNING_SECRET.as_bytes()).unwrap();
    mac.update(body.as_bytes());
    let sig = hex::encode(mac.finalize().into_bytes());
    let a = Answer::of(
        w.http()
            .post(w.url("/v1/sources/carrier-feed:signed/webhook"))
            .header("content-type", "application/json")
            .header("X-Sig", sig)
            .body(body),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    // The source's token from the environment reports a fact.
    let fact = json!({ "factKey": "shipment.manifest.received:S-SECURE",
        "observedAt": "2026-01-01T00:00:00Z", "note": BODY_MARKER });
    let a = w
        .send_as(reqwest::Method::POST, "/v1/facts", SIGNED_TOKEN, &fact)
        .await;
    assert_eq!(a.status, 200, "{a:?}");
    // A teacher and an operator call too.
    let definition = json!({ "collections": {}, "taughtBy": "dana", "reason": BODY_MARKER });
    let a = w
        .send_as(
            reqwest::Method::PUT,
            "/v1/definitions/secrets-test",
            TEACHER,
            &definition,
        )
        .await;
    assert!(a.status < 500, "{a:?}");
    assert_eq!(w.get("/v1/lapses").await.status, 200);
    assert_eq!(w.get("/v1/subjects/shipment/S-SECURE").await.status, 200);

    let log = w.log();
    assert!(
        log.contains("TRACE") || log.contains("DEBUG"),
        "the run logged at debug/trace: {log}"
    );
    for secret in [
        SECURE_PUSH,
        SECURE_BEARER,
        SIGNED_TOKEN,
        SIGNING_SECRET,
        TEACHER,
        PUSH_TOKEN,
        SOURCE_TOKEN,
        OPERATOR_TOKEN,
        BODY_MARKER,
    ] {
        assert!(
            !log.contains(secret),
            "the log holds {secret:?}:\n{}",
            log.lines()
                .filter(|l| l.contains(secret))
                .collect::<Vec<_>>()
                .join("\n")
        );
    }
}
