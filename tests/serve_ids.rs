//! Every id through every route of `serve` (issue 12 item 3; serve.md "Routes": ids in paths are
//! percent-encoded in the URL and decoded once). Ids holding `/`, `?`, `#`, `%`, spaces, unicode
//! and the maximum length round-trip; they are compared as given (no case folding, no Unicode
//! normalisation), so confusable ids stay distinct; control characters and over-long ids are
//! refused with problem+json naming the field.

use crate::common;

use jiff::Timestamp;
use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};

use common::*;

/// An agent id and a source id with every character that needs encoding in a path.
const ODD_AGENT: &str = "bo/ok?in#g 100% ü";
const ODD_AGENT_TOKEN: &str = "push-token-odd";
const ODD_SOURCE: &str = "feed/eu?x#1 100%25 航";
const ODD_SOURCE_TOKEN: &str = "src-token-odd";

/// Percent-encodes every byte of `id` except RFC 3986's unreserved characters (and `.` too, so
/// no segment is a dot segment a URL parser would resolve).
fn enc(id: &str) -> String {
    id.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'~') {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn extra(agent_url: &str) -> String {
    format!(
        r#"
{agent}
{source}[[sources.mappings]]
name = "odd"
fact_key = "{{/key}}"
observed_at = "/at"
subject = {{ type = "shipment", id = "{{/sid}}" }}

{TEACHER_TOML}"#,
        agent = agent_toml(ODD_AGENT, agent_url, ODD_AGENT_TOKEN),
        source = entry_toml("sources", ODD_SOURCE, ODD_SOURCE_TOKEN),
    )
}

/// Ids a subject may hold, each of which must round-trip (as subject id and in the expectation
/// id). Not `.` or `..`: URL parsers resolve those segments, even percent-encoded (WHATWG URL).
fn odd_ids() -> Vec<String> {
    vec![
        "PA-2026-0901/leg-2".into(),
        "a?b=c&d".into(),
        "frag#1".into(),
        "100%".into(),
        "100%25".into(),
        "%2F".into(),
        "two words".into(),
        " lead".into(),
        "trail ".into(),
        "a/../b".into(),
        "+plus;semi,comma:colon@at".into(),
        "back\\slash\"quote'".into(),
        "naïve-航班-🚚".into(),
        "x".repeat(watcher_core::ids::MAX_ID_LEN),
        // The maximum in bytes, in two-byte characters.
        "é".repeat(watcher_core::ids::MAX_ID_LEN / 2),
    ]
}

/// Ids that look alike and must stay distinct: Latin / Cyrillic O, a zero-width space, case,
/// NFC / NFD, a trailing space, a Unicode hyphen, full-width letters, a no-break space.
fn confusables() -> Vec<String> {
    vec![
        "PA-0901".into(),
        "PA-\u{41E}901".into(),
        "PA-0901\u{200B}".into(),
        "pa-0901".into(),
        "PA-0901 ".into(),
        "PA\u{2010}0901".into(),
        "\u{FF30}\u{FF21}-0901".into(),
        "PA-\u{A0}0901".into(),
        "caf\u{E9}".into(),
        "cafe\u{301}".into(),
    ]
}

fn far() -> Timestamp {
    plus(Timestamp::now(), 86_400)
}

#[tokio::test]
async fn subject_ids_round_trip_and_stay_distinct() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &extra(&agent.url())).await;

    let all: Vec<String> = odd_ids().into_iter().chain(confusables()).collect();
    for (i, id) in all.iter().enumerate() {
        // The expectation id is the subject id itself (ids are scoped by kind, so they cannot
        // collide), so the maximum length is tried in both.
        let exp = id.clone();
        let mut push = one_expectation(&format!("task-{i}"), &exp, id, far(), "PT1H");
        if id.len() > 256 {
            // The helper's key (`shipment.manifest.received:{id}`) would pass the maximum.
            push["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"][0]["satisfiedBy"]
                ["factKey"] = json!(format!("long:{i}"));
        }
        let a = w.push(&push).await;
        assert_eq!(a.status, 200, "{id:?}: {a:?}");
        assert_eq!(a.body["raised"], json!([exp]), "{id:?}: {a:?}");
    }
    for id in &all {
        let a = w.get(&format!("/v1/subjects/shipment/{}", enc(id))).await;
        assert_eq!(a.status, 200, "{id:?}: {a:?}");
        assert_eq!(a.body["subject"]["id"], json!(id), "decoded once: {id:?}");
        let ids: Vec<&Value> = a.body["expectations"]
            .as_array()
            .map(|l| l.iter().map(|e| &e["expectationId"]).collect())
            .unwrap_or_default();
        assert_eq!(ids, [&json!(id)], "only its own: {id:?}");
    }
    // A fact naming one confusable satisfies that one only.
    let a = w
        .report(
            &json!({ "factKey": "shipment.manifest.received:PA-\u{41E}901",
            "observedAt": fmt(Timestamp::now()) }),
        )
        .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        a.body["results"][0]["satisfied"],
        json!(["PA-\u{41E}901"]),
        "{a:?}"
    );
    let latin = w.get("/v1/subjects/shipment/PA-0901").await;
    assert_eq!(expectation(&latin.body, "PA-0901")["status"], json!("open"));
    // Decoded once: `100%2525` is `100%25`, not `100%`.
    let a = w.get("/v1/subjects/shipment/100%2525").await;
    assert_eq!(a.body["subject"]["id"], json!("100%25"));
    // An odd subject type.
    let mut push = one_expectation("task-type", "exp-type", "T-1", far(), "PT1H");
    push["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"][0]["subject"]["type"] =
        json!("ship/ment ü?#");
    assert_eq!(w.push(&push).await.body["raised"], json!(["exp-type"]));
    let a = w
        .get(&format!("/v1/subjects/{}/T-1", enc("ship/ment ü?#")))
        .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["subject"]["type"], json!("ship/ment ü?#"));

    // Control characters and one byte over the maximum: refused, naming the field.
    for bad in [
        "a\u{0}b".to_owned(),
        "a\nb".into(),
        "a\u{7F}b".into(),
        "a\u{85}b".into(),
        "x".repeat(watcher_core::ids::MAX_ID_LEN + 1),
    ] {
        let a = w.get(&format!("/v1/subjects/shipment/{}", enc(&bad))).await;
        let d = a.assert_problem(400);
        assert!(d.contains("subject.id"), "{bad:?}: {d}");
        let a = w
            .push(&one_expectation("task-bad", "exp-bad", &bad, far(), "PT1H"))
            .await;
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(a.body["raised"], json!([]), "{bad:?}: {a:?}");
        let reason = a.body["rejected"][0]["reason"].as_str().unwrap_or_default();
        assert!(reason.contains("subject.id"), "{bad:?}: {reason}");
    }
}

#[tokio::test]
async fn agent_and_source_ids_round_trip_through_their_routes() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &extra(&agent.url())).await;
    let push_url = w.url(&format!("/v1/agents/{}/push", enc(ODD_AGENT)));

    // Push as the odd agent: one raised, one refused (a past horizon), one lapsing at once.
    let mut push = one_expectation("task-odd", "exp-odd", "S-ODD", far(), "PT1H");
    let exps = &mut push["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"];
    let mut bad = exps[0].clone();
    bad["expectationId"] = json!("exp-odd-bad");
    bad["horizon"] = json!("2000-01-01T00:00:00Z");
    let mut past = exps[0].clone();
    past["expectationId"] = json!("exp-odd-past");
    past["dueAt"] = json!(fmt(plus(Timestamp::now(), -60)));
    past["grace"] = json!("PT0S");
    exps.as_array_mut().expect("a list").extend([bad, past]);
    let a = Answer::of(
        w.http()
            .post(&push_url)
            .header("X-A2A-Notification-Token", ODD_AGENT_TOKEN)
            .json(&push),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["raised"], json!(["exp-odd", "exp-odd-past"]));
    // The same credential at `booking`'s route, and booking's at the odd one: 403.
    w.push_as("booking", ODD_AGENT_TOKEN, &push)
        .await
        .assert_problem(403);
    // A confusable of `booking` (case) is another agent.
    w.push_as("Booking", PUSH_TOKEN, &push)
        .await
        .assert_problem(403);

    // Its rejections, for itself and for an operator.
    for token in [ODD_AGENT_TOKEN, OPERATOR_TOKEN] {
        let a = Answer::of(
            w.http()
                .get(w.url(&format!("/v1/agents/{}/rejections", enc(ODD_AGENT))))
                .bearer_auth(token),
        )
        .await;
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(
            a.body["rejections"][0]["expectationId"],
            json!("exp-odd-bad")
        );
    }
    // Booking sees none of them.
    let a = w.get("/v1/agents/booking/rejections").await;
    assert_eq!(a.body["rejections"], json!([]), "{a:?}");

    // The lapse is listed under the odd agent, and the retry route takes its id in the body.
    let lapsed = wait_until(
        || async {
            w.lapses()
                .await
                .iter()
                .any(|l| l["agent"] == json!(ODD_AGENT) && l["expectationId"] == "exp-odd-past")
        },
        std::time::Duration::from_secs(10),
    )
    .await;
    assert!(lapsed, "{:?}", w.lapses().await);
    let retry = json!({ "agent": ODD_AGENT, "messageIds": ["lapse:none"] });
    let a = w
        .send_as(
            reqwest::Method::POST,
            "/v1/lapses/retry",
            OPERATOR_TOKEN,
            &retry,
        )
        .await;
    assert!(a.status == 200 || a.status == 404, "{a:?}");
    assert!(
        a.status == 200
            || a.body["detail"]
                .as_str()
                .is_some_and(|d| !d.contains("not registered")),
        "the odd agent is found: {a:?}"
    );
    assert_eq!(
        w.get("/v1/agents").await.status,
        200,
        "the agents list answers"
    );

    // The odd source: its webhook and its rejections route.
    let hook = w.url(&format!("/v1/sources/{}/webhook", enc(ODD_SOURCE)));
    let a = Answer::of(
        w.http()
            .post(&hook)
            .bearer_auth(ODD_SOURCE_TOKEN)
            .json(&json!({
                "key": "shipment.manifest.received:S-ODD",
                "at": fmt(Timestamp::now()),
                "sid": "S-ODD",
                "extra": 1
            })),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        a.body["results"][0]["satisfied"],
        json!(["exp-odd", "exp-odd-past"])
    );
    let s = w.get("/v1/subjects/shipment/S-ODD").await;
    assert!(
        s.body["facts"]
            .as_array()
            .is_some_and(|f| f.iter().any(|f| f["source"] == json!(ODD_SOURCE))),
        "{s:?}"
    );
    // `100%25` in the source id is not `100%`: a source id decoded twice is another source.
    Answer::of(
        w.http()
            .post(w.url(&format!(
                "/v1/sources/{}/webhook",
                enc("feed/eu?x#1 100% 航")
            )))
            .bearer_auth(ODD_SOURCE_TOKEN)
            .json(&json!({})),
    )
    .await
    .assert_problem(403);
    let a = w
        .get(&format!("/v1/sources/{}/rejections", enc(ODD_SOURCE)))
        .await;
    assert_eq!(a.status, 200, "{a:?}");
}

#[tokio::test]
async fn definition_ids_round_trip_through_every_learnables_route() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &extra(&agent.url())).await;
    let call = |method: &str, path: String, body: Option<Value>| {
        let req = w
            .http()
            .request(method.parse().expect("a method"), w.url(&path))
            .bearer_auth(TEACHER_TOKEN);
        let req = match body {
            Some(b) => req.json(&b),
            None => req,
        };
        Answer::of(req)
    };
    let collections = |header: &str| {
        json!({ "fields": { "learnable": "column-mapping", "entry": "field",
            "teaches": "which field a spreadsheet column holds",
            "entries": { "invoice_number": { "label": "Invoice number",
                "value": { "headers": [header] } } } } })
    };
    // The longest definition id (128 characters), and two that differ only by case.
    let longest = format!("a{}", "b.c_d-".repeat(22))
        .chars()
        .take(128)
        .collect::<String>();
    for (id, header) in [
        (longest.as_str(), "Invoice No"),
        ("Invoices", "Upper"),
        ("invoices", "lower"),
    ] {
        let base = format!("/v1/definitions/{}", enc(id));
        let a = call(
            "PUT",
            base.clone(),
            Some(json!({ "collections": collections(header), "taughtBy": "dana" })),
        )
        .await;
        assert_eq!(a.status, 201, "{id}: {a:?}");
        let a = call("GET", base.clone(), None).await;
        assert_eq!(
            a.body["collections"]["fields"]["entries"]["invoice_number"]["value"]["headers"],
            json!([header]),
            "{id}: its own definition: {a:?}"
        );
        for path in ["/descriptors", "/versions/1", "/history"] {
            let a = call("GET", format!("{base}{path}"), None).await;
            assert_eq!(a.status, 200, "{id}{path}: {a:?}");
        }
        let lesson = json!({ "collection": "fields", "entry": "invoice_number",
            "value": { "header": "Inv #" }, "taughtBy": "dana" });
        let a = call(
            "POST",
            format!("{base}/lessons:check"),
            Some(json!({ "lesson": lesson, "corpus": [{ "header": "Inv #" }] })),
        )
        .await;
        assert_eq!(a.body["matches"], json!(1), "{id}: {a:?}");
        let a = call("POST", format!("{base}/lessons"), Some(lesson)).await;
        assert_eq!(a.body["learned"], json!(true), "{id}: {a:?}");
        let a = call(
            "POST",
            format!("{base}/show-back"),
            Some(json!({ "input": { "header": "Inv #" } })),
        )
        .await;
        assert_eq!(a.body["field"]["winner"], json!("invoice_number"), "{a:?}");
        let a = call(
            "POST",
            format!("{base}/activate"),
            Some(json!({ "definitionVersion": 1, "taughtBy": "dana" })),
        )
        .await;
        assert_eq!(a.body["activated"], json!(true), "{id}: {a:?}");
        let a = call(
            "POST",
            format!("{base}/versions/2/tombstone"),
            Some(json!({ "taughtBy": "dana" })),
        )
        .await;
        assert_eq!(a.body["tombstoned"], json!(true), "{id}: {a:?}");
    }
    // Definition ids have a grammar (contracts/learnables.md): `/`, spaces, unicode, control
    // characters and one character over the maximum are refused naming `id`, never a 404.
    for bad in [
        "sheet/import".to_owned(),
        "two words".into(),
        "naïve".into(),
        "a\u{0}b".into(),
        "a?b".into(),
        format!("{longest}x"),
    ] {
        let a = call("GET", format!("/v1/definitions/{}", enc(&bad)), None).await;
        let d = a.assert_problem(400);
        assert!(d.contains("id"), "{bad:?}: {d}");
    }
}
