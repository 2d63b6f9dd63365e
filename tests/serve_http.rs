//! `a2a-watcher serve` over real HTTP (contracts/serve.md): each test starts its own `serve`
//! child on port 0 with its own SQLite file, and a capture agent in place of the booking agent.

use crate::common;

use std::time::Duration;

use a2a_types::TaskState;
use jiff::Timestamp;
use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};

use common::*;

const MANIFEST: &str = "exp-01J8Q0MANIFEST";
const DEPART: &str = "exp-01J8Q0DEPART";
const ARRIVE: &str = "exp-01J8Q0ARRIVE";

/// Long enough for anything the watcher does on its own within a test.
const PATIENCE: Duration = Duration::from_secs(20);

/// The four lapse tasks of semantics.md "The worked example", on a clock compressed to seconds:
/// overdue(manifest), skipped(manifest), overdue(arrival), stalled(arrival), in that order, each a
/// well-formed `SendMessage`; then the operator's views agree.
#[tokio::test]
async fn the_worked_example_on_compressed_times() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, "").await;
    let times = BookingTimes::compressed(origin(Duration::from_millis(500)));

    let pushed = w.push(&booking_artifact(times)).await;
    assert_eq!(pushed.status, 200, "{pushed:?}");
    assert_eq!(
        pushed.body,
        json!({ "raised": [MANIFEST, DEPART, ARRIVE], "rejected": [], "withdrawn": [], "facts": 0 })
    );

    // The manifest lapses overdue at its deadline (dueAt + PT1S); then the departure is reported.
    wait_for_requests(&agent, 1, PATIENCE).await;
    let observed = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    let mut fact = departure_fact(SHIPMENT, observed);
    fact["source"] = json!("forged"); // the credential decides the source, not the body
    let reported = w.report(&fact).await;
    assert_eq!(reported.status, 200, "{reported:?}");
    assert_eq!(
        reported.body,
        json!({ "results": [{ "factKey": format!("shipment.departed:{SHIPMENT}"), "satisfied": [DEPART] }] })
    );
    // Sent again, each changes nothing, and the answer says what was already recorded.
    let again = w.report(&fact).await;
    assert_eq!(
        again.body,
        json!({ "results": [{ "factKey": format!("shipment.departed:{SHIPMENT}"), "satisfied": [] }],
                "alreadyRecorded": [format!("shipment.departed:{SHIPMENT}")] }),
        "{again:?}"
    );
    let pushed_again = w.push(&booking_artifact(times)).await;
    assert_eq!(
        pushed_again.body,
        json!({ "raised": [], "rejected": [], "withdrawn": [], "facts": 0,
                "alreadyRecorded": [MANIFEST, DEPART, ARRIVE] }),
        "{pushed_again:?}"
    );

    wait_for_requests(&agent, 4, PATIENCE).await;
    assert!(
        holds_for(
            || async { agent.request_count() == 4 },
            Duration::from_millis(500)
        )
        .await,
        "no fifth lapse task: {:#?}",
        agent.requests().iter().map(summary).collect::<Vec<_>>()
    );

    let manifest_due = fmt(times.manifest_due);
    let arrival_due = fmt(plus(observed, 1)); // re-anchored: departure observedAt + PT1S
    let expected = [
        (MANIFEST, "overdue", manifest_due.clone()),
        (MANIFEST, "skipped", manifest_due.clone()),
        (ARRIVE, "overdue", arrival_due.clone()),
        (ARRIVE, "stalled", arrival_due.clone()),
    ];
    let requests = agent.requests();
    let ids: Vec<Option<String>> = requests
        .iter()
        .map(watcher_delivery::testing::CapturedRequest::message_id)
        .collect();
    let want: Vec<Option<String>> = expected
        .iter()
        .map(|(id, kind, due)| Some(format!("lapse:{id}:{kind}:{due}")))
        .collect();
    assert_eq!(ids, want, "the four lapse tasks, in order");

    for (r, (id, kind, due)) in requests.iter().zip(&expected) {
        assert_eq!(r.method, "POST");
        assert_eq!(r.rpc_method().as_deref(), Some("SendMessage"), "{r:?}");
        assert_eq!(r.header("A2A-Version"), Some("1.0"), "{r:?}");
        assert_eq!(r.header("A2A-Extensions"), Some(URI), "{r:?}");
        let body = r.json().expect("a JSON body");
        assert_eq!(body["jsonrpc"], "2.0");
        let params = &body["params"];
        let message = &params["message"];
        assert_eq!(message["role"], "ROLE_USER");
        assert_eq!(message["contextId"], "ctx-northgate-sep");
        assert_eq!(message["referenceTaskIds"], json!(["task-booking-7f3a"]));
        assert!(message.get("taskId").is_none(), "no taskId: {message:#}");
        assert_eq!(message["extensions"], json!([URI]));
        assert!(
            message["parts"][0]["text"]
                .as_str()
                .is_some_and(|t| !t.is_empty()),
            "one text part: {message:#}"
        );
        assert_eq!(params["configuration"]["returnImmediately"], json!(true));

        let block = lapse_block(r);
        assert_eq!(block["expectationId"], *id);
        assert_eq!(block["lapse"], *kind);
        assert_eq!(block["dueAt"], json!(due));
        assert_eq!(
            block["subject"],
            json!({ "type": "shipment", "id": SHIPMENT })
        );
        assert_eq!(block["lineage"], json!(0));
        let lapsed_at = parse(&block["lapsedAt"]);
        match (*id, *kind) {
            (MANIFEST, "overdue") => {
                assert_eq!(block["projectedDueAt"], json!(manifest_due));
                assert!(lapsed_at >= plus(times.manifest_due, 1), "{block:#}");
                assert!(block.get("lastFactAt").is_none(), "{block:#}");
                assert!(block.get("satisfiedAfter").is_none(), "{block:#}");
            }
            (MANIFEST, "skipped") => {
                assert_eq!(block["projectedDueAt"], json!(manifest_due));
                assert_eq!(block["satisfiedAfter"], json!([DEPART]));
                assert_eq!(block["lastFactAt"], json!(fmt(observed)));
            }
            (ARRIVE, kind) => {
                assert_eq!(block["projectedDueAt"], json!(fmt(times.arrival_due)));
                assert_eq!(block["lastFactAt"], json!(fmt(observed)));
                assert!(block.get("satisfiedAfter").is_none(), "{block:#}");
                let at = if kind == "overdue" {
                    plus(observed, 2)
                } else {
                    times.arrival_horizon
                };
                assert!(lapsed_at >= at, "{kind} at {lapsed_at}, before {at}");
            }
            _ => unreachable!(),
        }
    }

    // The operator's view of delivery: four lapse tasks, each sent and answered with a task.
    let lapses = w.all_sent(4, PATIENCE).await;
    let mut listed: Vec<String> = lapses
        .iter()
        .map(|l| l["messageId"].as_str().unwrap().to_owned())
        .collect();
    listed.sort();
    let mut sent: Vec<String> = want.into_iter().flatten().collect();
    sent.sort();
    assert_eq!(listed, sent);
    for l in &lapses {
        assert_eq!(l["agent"], "booking", "{l:#}");
        assert!(
            l["taskId"].as_str().is_some_and(|t| t.starts_with("task-")),
            "{l:#}"
        );
        let id = l["messageId"].as_str().unwrap();
        assert!(
            id.starts_with(&format!(
                "lapse:{}:{}:",
                l["expectationId"].as_str().unwrap(),
                l["lapse"].as_str().unwrap()
            )),
            "{l:#}"
        );
    }

    // The subject's record: the arrival re-anchored on the departure's observedAt.
    let subject = w.shipment(SHIPMENT).await.expect("the subject is recorded");
    let arrival = expectation(&subject, ARRIVE);
    assert_eq!(arrival["projectedDueAt"], json!(fmt(times.arrival_due)));
    assert_eq!(arrival["dueAt"], json!(arrival_due));
    assert_eq!(arrival["status"], "open");
    let kinds = |e: &Value| -> Vec<String> {
        e["lapses"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["lapse"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(kinds(arrival), ["overdue", "stalled"]);
    let manifest = expectation(&subject, MANIFEST);
    assert_eq!(manifest["status"], "open");
    assert_eq!(manifest["dueAt"], json!(manifest_due));
    assert_eq!(kinds(manifest), ["overdue", "skipped"]);
    let departure = expectation(&subject, DEPART);
    assert_eq!(departure["status"], "satisfied");
    assert!(kinds(departure).is_empty());
    let facts = subject["facts"].as_array().unwrap();
    assert_eq!(facts.len(), 1, "{subject:#}");
    assert_eq!(facts[0]["source"], SOURCE_ID);
    assert_eq!(facts[0]["observedAt"], json!(fmt(observed)));
    assert_eq!(facts[0]["satisfied"], json!([DEPART]));
}

/// The same artifact pushed twice (a redelivered webhook) raises nothing the second time, and
/// only one lapse task per lapse reaches the agent.
#[tokio::test]
async fn a_duplicate_push_raises_nothing_and_sends_one_set_of_lapse_tasks() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, "").await;
    let due = origin(Duration::from_millis(500));
    let artifact = one_expectation("task-dup", "exp-dup", "PA-DUP", due, "PT1S");

    let first = w.push(&artifact).await;
    assert_eq!(first.status, 200, "{first:?}");
    assert_eq!(first.body["raised"], json!(["exp-dup"]));
    let second = w.push(&artifact).await;
    assert_eq!(second.status, 200, "{second:?}");
    assert_eq!(
        second.body,
        json!({ "raised": [], "rejected": [], "withdrawn": [], "facts": 0,
                "alreadyRecorded": ["exp-dup"] })
    );

    wait_for_requests(&agent, 1, PATIENCE).await;
    let sent = wait_until(
        || async {
            let l = w.lapses().await;
            l.len() == 1 && l[0]["delivery"] == "sent"
        },
        PATIENCE,
    )
    .await;
    assert!(sent, "one lapse, sent: {:#?}", w.lapses().await);
    // A third push after the lapse changes nothing either.
    let third = w.push(&artifact).await;
    assert_eq!(third.body["raised"], json!([]), "{third:?}");
    assert!(
        holds_for(
            || async { agent.request_count() == 1 },
            Duration::from_millis(1500)
        )
        .await,
        "no second lapse task: {:#?}",
        agent.requests().iter().map(summary).collect::<Vec<_>>()
    );
    assert_eq!(
        agent.requests()[0].message_id(),
        Some(format!("lapse:exp-dup:overdue:{}", fmt(due)))
    );
    let subject = w.shipment("PA-DUP").await.expect("recorded");
    assert_eq!(subject["expectations"].as_array().unwrap().len(), 1);
}

/// Facts need a source's credential: a wrong or missing token is 401, an operator's or an
/// agent's is 403, each as problem+json, and none of them records anything.
#[tokio::test]
async fn facts_without_a_source_credential_are_refused_and_not_recorded() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, "").await;
    let pushed = w.push(&booking_artifact(BookingTimes::far())).await;
    assert_eq!(pushed.body["raised"].as_array().map(Vec::len), Some(3));
    let before = w.shipment(SHIPMENT).await.expect("recorded");

    let fact = departure_fact(SHIPMENT, Timestamp::now());
    let post = || w.http().post(w.url("/v1/facts")).json(&fact);

    Answer::of(post().bearer_auth("not-a-token"))
        .await
        .assert_problem(401);
    Answer::of(post()).await.assert_problem(401);
    Answer::of(post().header("Authorization", "Basic c3JjOnRva2Vu"))
        .await
        .assert_problem(401);
    Answer::of(post().bearer_auth(OPERATOR_TOKEN))
        .await
        .assert_problem(403);
    Answer::of(post().bearer_auth(PUSH_TOKEN))
        .await
        .assert_problem(403);
    // The push route's header is not a source credential.
    Answer::of(post().header("X-A2A-Notification-Token", SOURCE_TOKEN))
        .await
        .assert_problem(401);

    let after = w.shipment(SHIPMENT).await.expect("recorded");
    assert_eq!(after["facts"], json!([]));
    assert_eq!(expectation(&after, DEPART)["status"], "open");
    assert_eq!(after, before, "nothing recorded");

    // With the source's token it is recorded; a fact matching nothing is not an error.
    let a = w
        .report(
            &json!({ "factKey": "nothing.waits.for:this", "observedAt": fmt(Timestamp::now()) }),
        )
        .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        a.body,
        json!({ "results": [{ "factKey": "nothing.waits.for:this", "satisfied": [] }] })
    );

    // The operator routes refuse a source as well.
    Answer::of(w.http().get(w.url("/v1/lapses")).bearer_auth(SOURCE_TOKEN))
        .await
        .assert_problem(403);
    Answer::of(w.http().get(w.url("/v1/lapses")))
        .await
        .assert_problem(401);
}

/// Malformed bodies are 4xx problem+json naming what is wrong, and never change the record; a
/// batch with one bad fact records none of it.
/// `GET /` sends a browser to the operator's page (303 to `/ui`) and answers a program asking for
/// JSON with the API's index, whose links answer.
#[tokio::test]
async fn the_root_sends_a_browser_to_the_page_and_indexes_the_api_for_json() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, "").await;
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("a client");
    let page = no_redirects
        .get(w.url("/"))
        .header("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
        .send()
        .await
        .expect("an answer");
    assert_eq!(page.status().as_u16(), 303);
    assert_eq!(page.headers()["location"], "/ui");
    let index: Value = no_redirects
        .get(w.url("/"))
        .header("Accept", "application/json")
        .send()
        .await
        .expect("an answer")
        .json()
        .await
        .expect("JSON");
    assert_eq!(index["name"], "a2a-watcher");
    assert_eq!(index["version"], env!("CARGO_PKG_VERSION"));
    for link in [
        &index["links"]["health"],
        &index["links"]["openapi"],
        &index["links"]["schemas"]["Lesson"],
    ] {
        let path = link.as_str().expect("a path");
        let answer = no_redirects
            .get(w.url(path))
            .send()
            .await
            .expect("an answer");
        assert_eq!(answer.status().as_u16(), 200, "{path}");
    }
}

#[tokio::test]
async fn malformed_bodies_are_refused_and_change_nothing() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, "").await;
    let pushed = w.push(&booking_artifact(BookingTimes::far())).await;
    assert_eq!(pushed.body["raised"].as_array().map(Vec::len), Some(3));
    let before = w.shipment(SHIPMENT).await.expect("recorded");
    let facts = || w.http().post(w.url("/v1/facts")).bearer_auth(SOURCE_TOKEN);
    let push = || {
        w.http()
            .post(w.url("/v1/agents/booking/push"))
            .header("X-A2A-Notification-Token", PUSH_TOKEN)
    };
    let json_ct = ("Content-Type", "application/json");

    // Not JSON.
    let detail = Answer::of(facts().header(json_ct.0, json_ct.1).body("{\"factKey\": "))
        .await
        .assert_problem(400);
    assert!(detail.contains("JSON"), "{detail}");
    Answer::of(push().header(json_ct.0, json_ct.1).body("not json"))
        .await
        .assert_problem(400);

    // A member given twice: refused by name, whichever value would have won.
    let twice = format!(
        r#"{{"factKey": "shipment.departed:{SHIPMENT}", "observedAt": "2026-09-11T02:41:00Z", "factKey": "shipment.arrived:{SHIPMENT}"}}"#
    );
    let detail = Answer::of(facts().header(json_ct.0, json_ct.1).body(twice))
        .await
        .assert_problem(400);
    assert_eq!(detail, "the member \"factKey\" appears twice");
    let artifact = booking_artifact(BookingTimes::far()).to_string();
    let twice = artifact.replacen(
        &format!(r#""expectationId":"{MANIFEST}""#),
        &format!(r#""expectationId":"{MANIFEST}","expectationId":"exp-other""#),
        1,
    );
    assert_ne!(twice, artifact);
    let detail = Answer::of(push().header(json_ct.0, json_ct.1).body(twice))
        .await
        .assert_problem(400);
    assert_eq!(detail, "the member \"expectationId\" appears twice");

    // A fact without observedAt.
    let a = w
        .report(&json!({ "factKey": format!("shipment.departed:{SHIPMENT}"),
                         "subject": { "type": "shipment", "id": SHIPMENT } }))
        .await;
    assert!((400..500).contains(&a.status), "{a:?}");
    let detail = a.assert_problem(a.status);
    assert!(detail.contains("observedAt"), "{detail}");

    // An observedAt without an offset.
    let a = w
        .report(&json!({ "factKey": format!("shipment.departed:{SHIPMENT}"),
                         "observedAt": "2026-09-11T02:41:00" }))
        .await;
    let detail = a.assert_problem(a.status);
    assert!(
        (400..500).contains(&a.status) && detail.contains("observedAt"),
        "{a:?}"
    );

    // A batch whose second fact is bad: nothing of it is recorded, the first included.
    let good = departure_fact(SHIPMENT, Timestamp::now());
    let a = w
        .report(&json!({ "facts": [good, { "observedAt": fmt(Timestamp::now()) }] }))
        .await;
    assert!((400..500).contains(&a.status), "{a:?}");
    let detail = a.assert_problem(a.status);
    assert!(
        detail.contains("facts[1]") && detail.contains("factKey"),
        "{detail}"
    );

    // Push bodies that are not a StreamResponse.
    for body in [
        json!({ "foo": 1 }),
        json!([1, 2]),
        json!({ "artifactUpdate": { "taskId": 7 } }),
        json!({ "task": {}, "message": {} }),
    ] {
        let a = w.push(&body).await;
        a.assert_problem(400);
    }
    // A body that is not JSON by its media type.
    Answer::of(
        push()
            .header("Content-Type", "text/plain")
            .body(booking_artifact(BookingTimes::far()).to_string()),
    )
    .await
    .assert_problem(415);

    let after = w.shipment(SHIPMENT).await.expect("recorded");
    assert_eq!(after, before, "the record is unchanged");
    assert_eq!(after["facts"], json!([]));
    assert!(w.lapses().await.is_empty());
}

/// The push route takes the push token in `X-A2A-Notification-Token` or as a bearer; another
/// agent's token is 403, and `application/a2a+json` bodies are accepted.
#[tokio::test]
async fn push_accepts_the_token_in_either_header_and_refuses_another_agents() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let other = r#"
[[agents]]
id = "other"
card = "booking-card.json"
endpoint = "http://127.0.0.1:9/"
push_token = "push-token-other"
"#;
    let w = spawn_watcher(&agent, other).await;
    let due = plus(origin(Duration::ZERO), 86400);
    let url = w.url("/v1/agents/booking/push");

    let a = Answer::of(
        w.http()
            .post(&url)
            .header("X-A2A-Notification-Token", PUSH_TOKEN)
            .json(&one_expectation("task-a", "exp-a", "PA-A", due, "PT0S")),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["raised"], json!(["exp-a"]));

    let a = Answer::of(
        w.http()
            .post(&url)
            .bearer_auth(PUSH_TOKEN)
            .header("Content-Type", "application/a2a+json")
            .body(one_expectation("task-b", "exp-b", "PA-B", due, "PT0S").to_string()),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["raised"], json!(["exp-b"]));

    // Either header may carry it: a wrong bearer beside the right notification token passes.
    let a = Answer::of(
        w.http()
            .post(&url)
            .bearer_auth("stale")
            .header("X-A2A-Notification-Token", PUSH_TOKEN)
            .json(&one_expectation("task-c", "exp-c", "PA-C", due, "PT0S")),
    )
    .await;
    assert_eq!(a.status, 200, "{a:?}");

    let refused = one_expectation("task-d", "exp-d", "PA-D", due, "PT0S");
    let source_bearer = format!("Bearer {SOURCE_TOKEN}");
    for (name, value) in [
        ("X-A2A-Notification-Token", "push-token-other"),
        ("Authorization", "Bearer push-token-other"),
        ("Authorization", source_bearer.as_str()),
    ] {
        let a = Answer::of(w.http().post(&url).header(name, value).json(&refused)).await;
        a.assert_problem(403);
    }
    // A 401 says which header a push reads and where its token comes from.
    let detail = Answer::of(w.http().post(&url).json(&refused))
        .await
        .assert_problem(401);
    assert!(
        detail
            .starts_with("no credential: send X-A2A-Notification-Token: <the agent's push_token>"),
        "{detail}"
    );
    let detail = Answer::of(
        w.http()
            .post(&url)
            .header("X-A2A-Notification-Token", "nobody")
            .json(&refused),
    )
    .await
    .assert_problem(401);
    assert_eq!(
        detail,
        "the X-A2A-Notification-Token is not known to this watcher: it must be the push_token of the agent's [[agents]] entry"
    );

    // Unknown members beside the event are ignored; a bare Task is accepted.
    let mut with_extra = one_expectation("task-e", "exp-e", "PA-E", due, "PT0S");
    with_extra["kind"] = json!("artifact-update");
    let a = w.push(&with_extra).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["raised"], json!(["exp-e"]));
    let bare = json!({ "id": "task-f", "contextId": "ctx-f",
                       "status": { "state": "TASK_STATE_WORKING" } });
    let a = w.push(&bare).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        a.body,
        json!({ "raised": [], "rejected": [], "withdrawn": [], "facts": 0 })
    );

    for s in ["PA-A", "PA-B", "PA-C", "PA-E"] {
        assert!(w.shipment(s).await.is_some(), "{s} recorded");
    }
    let a = w.get("/v1/subjects/shipment/PA-D").await;
    assert_eq!(a.status, 404, "nothing recorded for a refused push: {a:?}");
}

/// An agent that is down (503, 503) and then answers with a Task gets exactly one lapse task:
/// three posts of the same messageId, each retry after a look-up with `ListTasks` (a 503 may
/// follow a request the agent took; this agent lists no such task), the lapse ending `sent`
/// with that task.
#[tokio::test]
async fn an_agent_that_is_down_is_retried_until_it_answers() {
    let sends = std::sync::atomic::AtomicUsize::new(0);
    let agent = spawn_capture_agent(Behaviour::from_fn(move |_, request| {
        if request.rpc_method().as_deref() == Some("ListTasks") {
            let none = json!({"jsonrpc": "2.0", "id": request.rpc_id(), "result": {
                "tasks": [], "nextPageToken": "", "pageSize": 0, "totalSize": 0}});
            return Reply::http(200, none.to_string());
        }
        match sends.fetch_add(1, std::sync::atomic::Ordering::SeqCst) {
            0 | 1 => Reply::status(503),
            _ => Reply::task("task-after-outage", TaskState::Submitted),
        }
    }))
    .await;
    let w = spawn_watcher(&agent, "").await;
    let due = origin(Duration::from_millis(500));
    let pushed = w
        .push(&one_expectation(
            "task-down",
            "exp-down",
            "PA-DOWN",
            due,
            "PT0S",
        ))
        .await;
    assert_eq!(pushed.body["raised"], json!(["exp-down"]));

    wait_for_requests(&agent, 5, PATIENCE).await;
    let lapses = w.first_lapse_sent(PATIENCE).await;
    assert_eq!(lapses.len(), 1);
    assert_eq!(lapses[0]["taskId"], "task-after-outage");
    assert_eq!(lapses[0]["taskState"], "TASK_STATE_SUBMITTED");
    assert!(
        holds_for(
            || async { agent.request_count() == 5 },
            Duration::from_millis(1500)
        )
        .await,
        "nothing after the task: {:#?}",
        agent.requests().iter().map(summary).collect::<Vec<_>>()
    );
    let id = format!("lapse:exp-down:overdue:{}", fmt(due));
    let methods: Vec<_> = agent
        .requests()
        .iter()
        .map(watcher_delivery::testing::CapturedRequest::rpc_method)
        .collect();
    let (send, list) = (Some("SendMessage".to_owned()), Some("ListTasks".to_owned()));
    assert_eq!(
        methods,
        [send.clone(), list.clone(), send.clone(), list, send]
    );
    assert_eq!(agent.sent_message_ids(), [id.clone(), id.clone(), id]);
}

/// An agent that answers a lapse task with a Message (no task): delivered (`sent`), and not
/// posted again, even after the first backoff would have ended.
#[tokio::test]
async fn a_message_answer_is_delivered_and_not_retried() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::message("noted-1"))).await;
    let w = spawn_watcher(&agent, "").await;
    let due = origin(Duration::from_millis(500));
    let pushed = w
        .push(&one_expectation(
            "task-msg", "exp-msg", "PA-MSG", due, "PT0S",
        ))
        .await;
    assert_eq!(pushed.body["raised"], json!(["exp-msg"]));

    wait_for_requests(&agent, 1, PATIENCE).await;
    let lapses = w.first_lapse_sent(PATIENCE).await;
    assert!(lapses[0].get("taskId").is_none(), "{lapses:#?}");
    // The first retry would come 0.5–1 s after a failure; wait well past it.
    assert!(
        holds_for(
            || async { agent.request_count() == 1 },
            Duration::from_millis(2500)
        )
        .await,
        "answered with a Message, so never posted again: {:#?}",
        agent.requests().iter().map(summary).collect::<Vec<_>>()
    );
    assert_eq!(w.lapses().await[0]["delivery"], "sent");
}

/// Anonymous, `/healthz` answers the fixed `{ status, version }` (no store touched, no agent
/// named); the operator's token gets the store's write probe; an agent's token is refused.
#[tokio::test]
async fn healthz_answers_a_fixed_body_anonymously_and_the_probe_to_the_operator() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, "").await;
    // The version is the one the API's index gives.
    let index = Answer::of(
        w.http()
            .get(w.url("/"))
            .header("accept", "application/json"),
    )
    .await;
    let version = index.body["version"].clone();
    assert!(version.as_str().is_some_and(|v| !v.is_empty()), "{index:?}");
    let a = Answer::of(w.http().get(w.url("/healthz"))).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(
        a.body,
        json!({ "status": "ok", "version": version }),
        "{a:?}"
    );
    let operator = w.get("/healthz").await;
    assert_eq!(operator.status, 200, "{operator:?}");
    assert_eq!(operator.body["store"], "writes", "{operator:?}");
    assert_eq!(operator.body["version"], version);
    let refused = Answer::of(w.http().get(w.url("/healthz")).bearer_auth(PUSH_TOKEN)).await;
    assert_eq!(refused.status, 403, "{refused:?}");
}

/// A second agent `other` on the same capture agent, with the watcher's bearer configured; and
/// `public_url`, so lapse tasks carry a push config pointing at the raising agent's push route.
fn other_agent(agent: &watcher_delivery::testing::CaptureAgent) -> String {
    format!(
        r#"public_url = "https://watcher.example/"

[[agents]]
id = "other"
card = "booking-card.json"
endpoint = "{}"
push_token = "push-token-other"
bearer = "watcher-token-other"
"#,
        agent.url()
    )
}

/// Each agent gets its own lapse tasks, with its own bearer and push config; a status push
/// about a lapse task updates that agent's entry in `/v1/lapses` and no other agent's, even
/// when both agents named their tasks alike.
#[tokio::test]
async fn lapse_tasks_go_to_the_raising_agent_and_its_status_pushes_update_only_its_own() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::task(
        "task-same",
        TaskState::Submitted,
    )))
    .await;
    let w = spawn_watcher(&agent, &other_agent(&agent)).await;
    let due = origin(Duration::from_millis(500));
    let a = w
        .push(&one_expectation("task-b", "exp-b", "PA-B", due, "PT0S"))
        .await;
    assert_eq!(a.body["raised"], json!(["exp-b"]), "{a:?}");
    let a = w
        .push_as(
            "other",
            "push-token-other",
            &one_expectation("task-o", "exp-o", "PA-O", due, "PT0S"),
        )
        .await;
    assert_eq!(a.body["raised"], json!(["exp-o"]), "{a:?}");

    wait_for_requests(&agent, 2, PATIENCE).await;
    w.all_sent(2, PATIENCE).await;

    let requests = agent.requests();
    let to = |exp: &str| {
        requests
            .iter()
            .find(|r| lapse_block(r)["expectationId"] == exp)
            .unwrap_or_else(|| panic!("a lapse task for {exp}"))
    };
    let (booking, other) = (to("exp-b"), to("exp-o"));
    assert_eq!(booking.header("Authorization"), None);
    assert_eq!(
        other.header("Authorization"),
        Some("Bearer watcher-token-other")
    );
    let push_config = |r: &watcher_delivery::testing::CapturedRequest| {
        r.json().unwrap()["params"]["configuration"]["taskPushNotificationConfig"].clone()
    };
    assert_eq!(
        push_config(booking),
        json!({ "url": "https://watcher.example/v1/agents/booking/push", "token": PUSH_TOKEN })
    );
    assert_eq!(
        push_config(other),
        json!({ "url": "https://watcher.example/v1/agents/other/push", "token": "push-token-other" })
    );

    // The booking agent reports its lapse task working.
    let status = json!({ "statusUpdate": {
        "taskId": "task-same", "contextId": "ctx-task-b",
        "status": { "state": "TASK_STATE_WORKING" }
    } });
    let a = w.push(&status).await;
    assert_eq!(a.status, 200, "{a:?}");
    let state_of = |lapses: &[Value], agent: &str| {
        lapses
            .iter()
            .find(|l| l["agent"] == agent)
            .map(|l| l["taskState"].clone())
            .unwrap()
    };
    let lapses = w.lapses().await;
    assert_eq!(state_of(&lapses, "booking"), "TASK_STATE_WORKING");
    assert_eq!(
        state_of(&lapses, "other"),
        "TASK_STATE_SUBMITTED",
        "another agent's push must not touch this agent's lapse task: {lapses:#?}"
    );
}

/// expectationIds are scoped to the raising agent (semantics.md "Identity and tenancy"): two
/// agents of one tenant raising the same id with the same dueAt each get their lapse task.
#[tokio::test]
async fn two_agents_may_use_the_same_expectation_id() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let w = spawn_watcher(&agent, &other_agent(&agent)).await;
    let due = origin(Duration::from_millis(500));
    let a = w
        .push(&one_expectation(
            "task-1b",
            "exp-shared",
            "PA-1",
            due,
            "PT0S",
        ))
        .await;
    assert_eq!(a.body["raised"], json!(["exp-shared"]), "{a:?}");
    let a = w
        .push_as(
            "other",
            "push-token-other",
            &one_expectation("task-1o", "exp-shared", "PA-2", due, "PT0S"),
        )
        .await;
    assert_eq!(a.body["raised"], json!(["exp-shared"]), "{a:?}");

    wait_for_requests(&agent, 2, PATIENCE).await;
    let lapses = w.lapses().await;
    let mut agents: Vec<&str> = lapses
        .iter()
        .map(|l| l["agent"].as_str().unwrap())
        .collect();
    agents.sort();
    assert_eq!(agents, ["booking", "other"], "{lapses:#?}");
}
