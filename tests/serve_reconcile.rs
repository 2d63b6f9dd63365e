//! Origin-task reconciliation (issue 11 item 5) on `a2a-watcher serve` over real HTTP: the
//! booking agent is not lifecycle-trusted (never probed), so the watcher asks for its origin
//! tasks with `GetTask` and does not wait for a cancel to be pushed. The capture agent never
//! pushes: it only answers `GetTask` (the origin task canceled) and `SendMessage`.
//! Also: a lapse task followed with `GetTask` (no push) has its successor recorded from the
//! task's artifacts (issue 9 leftover (c)).

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, CapturedRequest, Reply};

use common::*;

const PATIENCE: Duration = Duration::from_secs(30);

/// `GetTask`'s `params.id`.
fn asked_for(req: &CapturedRequest) -> Option<String> {
    req.json()?
        .pointer("/params/id")?
        .as_str()
        .map(str::to_owned)
}

fn get_tasks(agent: &watcher_delivery::testing::CaptureAgent) -> Vec<String> {
    agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("GetTask"))
        .filter_map(asked_for)
        .collect()
}

/// The `GetTask` answer: the task asked for, in its context `ctx-{id}`, in `state` stamped [`TS`].
fn asked_task_in(req: &CapturedRequest, state: &str) -> Reply {
    let id = asked_for(req).unwrap_or_default();
    Reply::rpc_result(
        req,
        json!({ "id": id, "contextId": format!("ctx-{id}"),
                "status": { "state": state, "timestamp": TS } }),
    )
}

/// Pushes origin task `task-origin-{n}` raising `exp-{n}` about shipment `PA-{n}`, due at `due`
/// with no grace.
async fn raise_origin(w: &Watcher, n: u32, due: jiff::Timestamp) -> Answer {
    let task = format!("task-origin-{n}");
    let shipment = format!("PA-{n}");
    w.push(&one_expectation(
        &task,
        &format!("exp-{n}"),
        &shipment,
        due,
        "PT0S",
    ))
    .await
}

/// Whether the first lapse task is marked `withdrawn` within [`PATIENCE`].
async fn first_lapse_task_withdrawn(w: &Watcher) -> bool {
    let withdrawn = || async {
        w.lapses()
            .await
            .first()
            .is_some_and(|l| l["delivery"] == "withdrawn")
    };
    wait_until(withdrawn, PATIENCE).await
}

/// Whether expectation `id` about shipment `shipment` is withdrawn within [`PATIENCE`].
async fn expectation_withdrawn(w: &Watcher, shipment: &str, id: &str) -> bool {
    let withdrawn = || async {
        w.shipment(shipment)
            .await
            .is_some_and(|s| expectation(&s, id)["status"] == "withdrawn")
    };
    wait_until(withdrawn, PATIENCE).await
}

/// Whether agent `booking` is lifecycle-trusted (its probe passed) within [`PATIENCE`].
async fn booking_trusted(w: &Watcher) -> bool {
    let trusted =
        || async { w.get("/v1/agents").await.body["agents"][0]["lifecycleTrusted"] == true };
    wait_until(trusted, PATIENCE).await
}

/// An agent whose every task is canceled as `GetTask` sees it (the cancel was never pushed),
/// and which accepts lapse tasks.
fn cancels_silently() -> Behaviour {
    Behaviour::from_fn(|_, req| match req.rpc_method().as_deref() {
        Some("GetTask") => asked_task_in(req, "TASK_STATE_CANCELED"),
        _ => Reply::task("lapse-task-1", a2a_types::TaskState::Submitted),
    })
}

/// The expectation lapses before the first poll (`poll_first` a minute): the origin is checked
/// once before the lapse task is sent, found canceled, the expectation is withdrawn through the
/// push ingest path and the lapse task is marked `withdrawn`: nothing is sent.
#[tokio::test]
async fn a_cancel_never_pushed_withdraws_instead_of_a_lapse_task() {
    let agent = spawn_capture_agent(cancels_silently()).await;
    let w = spawn_watcher_with(
        &agent,
        "[delivery]\npoll_first = \"PT60S\"\n",
        "# reconcile defaults to true",
    )
    .await;
    let due = origin(Duration::from_millis(800));
    let raised = raise_origin(&w, 1, due).await;
    assert_eq!(raised.status, 200, "{:#}", raised.body);
    let withdrawn = first_lapse_task_withdrawn(&w).await;
    let lapses = w.lapses().await;
    assert!(withdrawn, "{lapses:#?}\n{}", w.log());
    assert!(
        lapses[0]["lastError"]
            .as_str()
            .unwrap()
            .contains("TASK_STATE_CANCELED"),
        "{lapses:#?}"
    );
    let subject = w.shipment("PA-1").await.expect("the subject");
    assert_eq!(expectation(&subject, "exp-1")["status"], "withdrawn");
    assert_eq!(get_tasks(&agent), ["task-origin-1"], "checked once");
    assert!(
        holds_for(
            || async { agent.sent_message_ids().is_empty() },
            Duration::from_secs(1)
        )
        .await,
        "no lapse task is sent for canceled work: {:?}",
        agent.sent_message_ids()
    );
}

/// Followed with `GetTask` from `poll_first` on, the origin task is found canceled long before
/// its expectation is due: withdrawn, no lapse ever, and no more polls once it is terminal.
/// `GET /v1/agents` shows the agent untrusted (never probed) and reconciled.
#[tokio::test]
async fn a_followed_origin_task_found_canceled_withdraws() {
    let agent = spawn_capture_agent(cancels_silently()).await;
    let w = spawn_watcher_with(
        &agent,
        "[delivery]\npoll_first = \"PT0.2S\"\nbackoff_max = \"PT0.5S\"\n",
        "",
    )
    .await;
    let due = origin(Duration::from_secs(3600));
    let raised = raise_origin(&w, 2, due).await;
    assert_eq!(raised.status, 200, "{:#}", raised.body);
    let withdrawn = expectation_withdrawn(&w, "PA-2", "exp-2").await;
    assert!(withdrawn, "{}", w.log());
    assert!(w.lapses().await.is_empty(), "{:#?}", w.lapses().await);
    let polls = get_tasks(&agent).len();
    assert!(polls >= 1);
    assert!(
        holds_for(
            || async { get_tasks(&agent).len() == polls },
            Duration::from_millis(1500)
        )
        .await,
        "no poll after the task is terminal"
    );
    assert!(agent.sent_message_ids().is_empty());

    let agents = w.get("/v1/agents").await;
    let booking = &agents.body["agents"][0];
    assert_eq!(booking["agentId"], "booking", "{:#}", agents.body);
    assert_eq!(booking["lifecycleTrusted"], false);
    assert_eq!(booking["reconciled"], true);
    assert!(booking["lifecycle"]["demotions"][0]
        .as_str()
        .unwrap()
        .starts_with("never probed"));
}

/// A lapse task sent without a push config is followed with `GetTask`; the agent never pushes,
/// and raises a successor (`supersedes`) in the lapse task's artifact: the watcher records it
/// from the `GetTask` answer.
#[tokio::test]
async fn a_successor_in_a_followed_lapse_task_is_recorded() {
    let successor_due = fmt(origin(Duration::from_secs(7200)));
    let agent = spawn_capture_agent(Behaviour::from_fn(move |_, req| {
        match req.rpc_method().as_deref() {
            Some("GetTask") if asked_for(req).as_deref() == Some("lapse-task-1") => Reply::rpc_result(
                req,
                json!({ "id": "lapse-task-1", "contextId": "ctx-task-origin-3",
                    "status": { "state": "TASK_STATE_COMPLETED", "timestamp": "2026-11-30T00:00:00Z" },
                    "artifacts": [{
                        "artifactId": "extended", "parts": [{ "text": "extended" }],
                        "extensions": [URI],
                        "metadata": { URI: { "expectations": [{
                            "expectationId": "exp-3b", "kind": "shipment.manifest",
                            "subject": { "type": "shipment", "id": "PA-3" },
                            "expects": "the airline manifest for PA-3, later",
                            "satisfiedBy": { "factKey": "shipment.manifest.received:PA-3" },
                            "dueAt": successor_due, "grace": "PT0S", "basis": "observed",
                            "supersedes": "exp-3"
                        }] } }
                    }] }),
            ),
            Some("GetTask") => {
                let id = asked_for(req).unwrap_or_default();
                Reply::rpc_result(
                    req,
                    json!({ "id": id, "contextId": format!("ctx-{id}"),
                            "status": { "state": "TASK_STATE_WORKING" } }),
                )
            }
            _ => Reply::task("lapse-task-1", a2a_types::TaskState::Submitted),
        }
    }))
    .await;
    let w = spawn_watcher(&agent, "[delivery]\npoll_first = \"PT0.2S\"\n").await;
    let due = origin(Duration::from_millis(500));
    let raised = raise_origin(&w, 3, due).await;
    assert_eq!(raised.status, 200, "{:#}", raised.body);
    let recorded = wait_until(
        || async {
            w.shipment("PA-3").await.is_some_and(|s| {
                s["expectations"]
                    .as_array()
                    .is_some_and(|l| l.iter().any(|e| e["expectationId"] == "exp-3b"))
            })
        },
        PATIENCE,
    )
    .await;
    let subject = w.shipment("PA-3").await;
    assert!(recorded, "{subject:#?}\n{}", w.log());
    let subject = subject.unwrap();
    assert_eq!(expectation(&subject, "exp-3b")["status"], "open");
    assert_eq!(expectation(&subject, "exp-3b")["lineage"], 1, "{subject:#}");
    assert_eq!(agent.sent_message_ids().len(), 1);
}

/// How a stub agent goes through the probe's two tasks.
#[derive(Debug, Clone, Copy)]
struct Lifecycle {
    /// Speaks A2A 0.3 only (`message/send`, `tasks/get`, `tasks/cancel`, lowercase states,
    /// `kind`-tagged pushes); every 1.0 method is `-32601`.
    v03: bool,
    /// How many times the canceled status of the probe's canceled task is pushed.
    cancel_pushes: usize,
    /// The state `GetTask` answers for any other task (an origin task).
    others: &'static str,
}

/// Every status the stubs send carries this timestamp.
const TS: &str = "2026-11-30T00:00:00Z";

/// A 1.0 state name (`TASK_STATE_INPUT_REQUIRED`) in the stub's protocol (`input-required`).
fn state_name(v03: bool, state: &str) -> String {
    if v03 {
        state
            .trim_start_matches("TASK_STATE_")
            .to_lowercase()
            .replace('_', "-")
    } else {
        state.to_owned()
    }
}

/// A Task as the stub answers it (a 0.3 task is bare, with `kind`).
fn stub_task(v03: bool, id: &str, state: &str) -> Value {
    let mut task = json!({ "id": id, "contextId": "ctx-probe",
        "status": { "state": state_name(v03, state), "timestamp": TS } });
    if v03 {
        task["kind"] = json!("task");
    }
    task
}

/// A terminal status pushed for `id` (a 0.3 `status-update` event, or a 1.0 `statusUpdate`).
fn stub_push(v03: bool, id: &str, state: &str) -> Value {
    let status = json!({ "state": state_name(v03, state), "timestamp": TS });
    if v03 {
        json!({ "kind": "status-update", "taskId": id, "contextId": "ctx-probe",
                "status": status, "final": true })
    } else {
        json!({ "statusUpdate": { "taskId": id, "contextId": "ctx-probe", "status": status } })
    }
}

/// Posts `body` to `url` `times` times, a little later (after the answer is on its way).
fn push_later(url: Option<String>, body: Value, times: usize) {
    if let Some(url) = url {
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(100)).await;
            for _ in 0..times {
                let _ = reqwest::Client::new().post(&url).json(&body).send().await;
            }
        });
    }
}

/// An agent for the lifecycle probe: every status timestamped; the probe's first task completes
/// and its completion is pushed once; its second (`probe:cancel…`) stays working until
/// `CancelTask`, and its canceled status is pushed `l.cancel_pushes` times; `GetTask` and (1.0)
/// `ListTasks` are served; any other task is `l.others` as `GetTask` sees it, never pushed; a
/// lapse task is accepted.
fn lifecycle_agent(l: Lifecycle) -> Behaviour {
    let cancel_url: Arc<Mutex<Option<String>>> = Arc::default();
    let canceled = Arc::new(AtomicBool::new(false));
    let (send, get, cancel) = if l.v03 {
        ("message/send", "tasks/get", "tasks/cancel")
    } else {
        ("SendMessage", "GetTask", "CancelTask")
    };
    Behaviour::from_fn(move |_, req| {
        let method = req.rpc_method().unwrap_or_default();
        let body = req.json().unwrap_or_default();
        if method == send {
            let push_url = body
                .pointer(if l.v03 {
                    "/params/configuration/pushNotificationConfig/url"
                } else {
                    "/params/configuration/taskPushNotificationConfig/url"
                })
                .and_then(Value::as_str)
                .map(str::to_owned);
            let message_id = req.message_id().unwrap_or_default();
            let (id, state) = if message_id.starts_with("probe:cancel") {
                *cancel_url.lock().unwrap() = push_url;
                ("probe-cancel", "TASK_STATE_WORKING")
            } else {
                let done = stub_push(l.v03, "probe-task", "TASK_STATE_COMPLETED");
                push_later(push_url, done, 1);
                ("probe-task", "TASK_STATE_SUBMITTED")
            };
            let task = stub_task(l.v03, id, state);
            Reply::rpc_result(req, if l.v03 { task } else { json!({ "task": task }) })
        } else if method == get {
            let id = asked_for(req).unwrap_or_default();
            let state = match id.as_str() {
                "probe-task" => "TASK_STATE_COMPLETED",
                "probe-cancel" if canceled.load(Ordering::SeqCst) => "TASK_STATE_CANCELED",
                "probe-cancel" => "TASK_STATE_WORKING",
                _ => l.others,
            };
            Reply::rpc_result(req, stub_task(l.v03, &id, state))
        } else if method == cancel {
            let id = asked_for(req).unwrap_or_default();
            canceled.store(true, Ordering::SeqCst);
            let url = cancel_url.lock().unwrap().clone();
            let pushed = stub_push(l.v03, &id, "TASK_STATE_CANCELED");
            push_later(url, pushed, l.cancel_pushes);
            Reply::rpc_result(req, stub_task(l.v03, &id, "TASK_STATE_CANCELED"))
        } else if method == "ListTasks" && !l.v03 {
            Reply::rpc_result(req, json!({ "tasks": [], "nextPageToken": "" }))
        } else {
            Reply::rpc_error(-32601, "Method not found")
        }
    })
}

/// An agent that passes the lifecycle probe; every other task it is asked about is working.
fn conforming() -> Behaviour {
    lifecycle_agent(Lifecycle {
        v03: false,
        cancel_pushes: 1,
        others: "TASK_STATE_WORKING",
    })
}

/// `probe = true`: the agent is probed when it registers; the descriptor is kept in the store
/// and shown at `GET /v1/agents`; a trusted agent's origin tasks are not followed; after a
/// restart without `probe`, the kept descriptor still decides.
#[tokio::test]
async fn a_probe_on_registration_promotes_and_is_kept() {
    let agent = spawn_capture_agent(conforming()).await;
    let mut w = spawn_watcher_with(
        &agent,
        "[delivery]\npoll_first = \"PT0.2S\"\n",
        "probe = true",
    )
    .await;
    let trusted = booking_trusted(&w).await;
    let agents = w.get("/v1/agents").await.body;
    assert!(trusted, "{agents:#}\n{}", w.log());
    let booking = &agents["agents"][0];
    assert_eq!(booking["reconciled"], false);
    assert_eq!(booking["lifecycle"]["protocolVersion"], "1.0");
    assert_eq!(booking["lifecycle"]["demotions"], json!([]));
    assert_eq!(
        booking["lifecycle"]["descriptor"]["exactlyOneTerminal"],
        true
    );
    assert!(booking["lifecycle"]["probedAt"].is_string());

    let before = get_tasks(&agent).len();
    let raised = raise_origin(&w, 4, origin(Duration::from_secs(3600))).await;
    assert_eq!(raised.status, 200);
    assert!(
        holds_for(
            || async { get_tasks(&agent).len() == before },
            Duration::from_millis(1200)
        )
        .await,
        "a trusted agent's origin task is not polled: {:?}",
        get_tasks(&agent)
    );

    w.kill().await;
    let config = w.dir.path().join("watcher.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("probe = true", "probe = false")).unwrap();
    let sends = agent.sent_message_ids().len();
    w.start().await;
    let agents = w.get("/v1/agents").await.body;
    assert_eq!(agents["agents"][0]["lifecycleTrusted"], true, "{agents:#}");
    assert_eq!(agent.sent_message_ids().len(), sends, "not probed again");
}

/// An agent whose card says `pushNotifications: true` but whose probe task's statuses are never
/// pushed is not trusted; the demotion says why, and its origin tasks are reconciled.
#[tokio::test]
async fn a_probe_without_pushes_demotes() {
    let agent = spawn_capture_agent(cancels_silently()).await;
    let w = spawn_watcher_with(&agent, "", "probe = true").await;
    let probed = wait_until(
        || async {
            w.get("/v1/agents").await.body["agents"][0]["lifecycle"]["probedAt"].is_string()
        },
        PATIENCE,
    )
    .await;
    let agents = w.get("/v1/agents").await.body;
    assert!(probed, "{agents:#}\n{}", w.log());
    let booking = &agents["agents"][0];
    assert_eq!(booking["lifecycleTrusted"], false);
    assert_eq!(booking["reconciled"], true);
    let demotions: Vec<&str> = booking["lifecycle"]["demotions"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        demotions.contains(&"the card says pushNotifications: true, but no push arrived"),
        "{demotions:?}"
    );
}

/// A lifecycle-trusted agent (its probe passed: its probe task's cancel was pushed) that pushes
/// nothing when an origin task is canceled (as an SDK may for a task canceled after its executor
/// returned; `GetTask` alone shows it canceled): the origin is still asked for before the lapse
/// task is sent, found canceled, and no lapse task is sent.
#[tokio::test]
async fn a_trusted_agents_cancel_never_pushed_gets_no_lapse_task() {
    let agent = spawn_capture_agent(lifecycle_agent(Lifecycle {
        v03: false,
        cancel_pushes: 1,
        others: "TASK_STATE_CANCELED",
    }))
    .await;
    let w = spawn_watcher_with(
        &agent,
        "[delivery]\npoll_first = \"PT60S\"\n",
        "probe = true",
    )
    .await;
    let trusted = booking_trusted(&w).await;
    assert!(trusted, "{:#}\n{}", w.get("/v1/agents").await.body, w.log());
    let before = get_tasks(&agent).len();
    let raised = raise_origin(&w, 6, origin(Duration::from_millis(800))).await;
    assert_eq!(raised.status, 200, "{:#}", raised.body);
    let withdrawn = first_lapse_task_withdrawn(&w).await;
    let lapses = w.lapses().await;
    assert!(withdrawn, "{lapses:#?}\n{}", w.log());
    let subject = w.shipment("PA-6").await.expect("the subject");
    assert_eq!(expectation(&subject, "exp-6")["status"], "withdrawn");
    assert_eq!(
        get_tasks(&agent)[before..],
        ["task-origin-6"],
        "asked once, before sending; never followed"
    );
    let lapse_tasks = || {
        agent
            .sent_message_ids()
            .into_iter()
            .filter(|m| m.starts_with("lapse:"))
            .collect::<Vec<_>>()
    };
    assert!(
        holds_for(
            || async { lapse_tasks().is_empty() },
            Duration::from_secs(1)
        )
        .await,
        "no lapse task is sent for canceled work: {:?}",
        lapse_tasks()
    );
}

/// Runs `a2a-watcher probe` against `agent` (its card served at the well-known path) and
/// answers the descriptor it prints.
async fn probe_cli(agent: &watcher_delivery::testing::CaptureAgent) -> Value {
    probe(&agent.url(), "the stub agent").await
}

/// A 1.0 card offering pushes, its JSONRPC interface at `url`.
fn card_v1(url: &str) -> Value {
    json!({ "name": "stub", "description": "a stub agent", "version": "1",
            "supportedInterfaces": [{ "url": url, "protocolBinding": "JSONRPC",
                                      "protocolVersion": "1.0" }],
            "capabilities": { "pushNotifications": true }, "skills": [] })
}

/// The probe's cancel leg: a second task canceled with `CancelTask`; its canceled status pushed
/// once keeps the agent trusted, twice or never demotes, and the descriptor says which.
#[tokio::test]
async fn the_probes_cancel_leg_is_recorded_once_twice_or_never() {
    for (pushes, word, trusted) in [(1, "once", true), (2, "twice", false), (0, "never", false)] {
        let agent = watcher_delivery::testing::CaptureAgent::spawn_with_card(
            lifecycle_agent(Lifecycle {
                v03: false,
                cancel_pushes: pushes,
                others: "TASK_STATE_WORKING",
            }),
            card_v1,
        )
        .await
        .expect("start the stub agent");
        let d = probe_cli(&agent).await;
        assert_eq!(d["protocolSpoken"], "1.0", "{d:#}");
        assert_eq!(d["exactlyOneTerminal"], true, "{d:#}");
        assert_eq!(d["cancel"]["taskId"], "probe-cancel", "{d:#}");
        assert_eq!(d["cancel"]["canceled"], true, "{d:#}");
        assert_eq!(d["cancel"]["terminalEvents"], pushes, "{d:#}");
        assert_eq!(d["cancel"]["pushed"], word, "{d:#}");
        assert_eq!(d["lifecycleTrusted"], trusted, "{d:#}");
        let demotions = d["demotions"].as_array().unwrap();
        match word {
            "once" => assert!(demotions.is_empty(), "{d:#}"),
            "twice" => assert_eq!(
                demotions[..],
                [json!(
                    "2 terminal events pushed for the probe's canceled task, not exactly one"
                )],
                "{d:#}"
            ),
            _ => assert!(
                demotions.len() == 1
                    && demotions[0]
                        .as_str()
                        .unwrap()
                        .contains("cancel pushed never"),
                "{d:#}"
            ),
        }
        let cancels = agent
            .requests()
            .iter()
            .filter(|r| r.rpc_method().as_deref() == Some("CancelTask"))
            .filter_map(asked_for)
            .collect::<Vec<_>>();
        assert_eq!(cancels, ["probe-cancel"], "{d:#}");
    }
}

/// `a2a-watcher probe` against an agent whose card offers only A2A 0.3 speaks 0.3 to it
/// (`message/send`, `tasks/get`, `tasks/cancel`, no `A2A-Version`), as lapse-task delivery
/// does, and prints its descriptor saying so.
#[tokio::test]
async fn probe_speaks_0_3_to_a_0_3_only_agent() {
    let agent = watcher_delivery::testing::CaptureAgent::spawn_with_card(
        lifecycle_agent(Lifecycle {
            v03: true,
            cancel_pushes: 1,
            others: "TASK_STATE_WORKING",
        }),
        |url| {
            json!({ "name": "legacy", "description": "a 0.3 agent", "version": "1",
                    "url": url, "preferredTransport": "JSONRPC", "protocolVersion": "0.3.0",
                    "capabilities": { "pushNotifications": true }, "skills": [],
                    "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"] })
        },
    )
    .await
    .expect("start the stub agent");
    let d = probe_cli(&agent).await;
    assert_eq!(d["protocolVersion"], "0.3.0", "{d:#}");
    assert_eq!(d["protocolSpoken"], "0.3", "{d:#}");
    assert_eq!(d["taskId"], "probe-task", "{d:#}");
    let states: Vec<&str> = d["statuses"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["state"].as_str())
        .collect();
    assert_eq!(states.first(), Some(&"TASK_STATE_SUBMITTED"), "{d:#}");
    assert!(states.contains(&"TASK_STATE_COMPLETED"), "{d:#}");
    assert_eq!(d["terminalEvents"], 1, "{d:#}");
    assert_eq!(d["getTask"], true, "{d:#}");
    assert_eq!(d["listTasks"], false, "0.3 has no ListTasks: {d:#}");
    assert_eq!(d["cancel"]["pushed"], "once", "{d:#}");
    assert_eq!(d["lifecycleTrusted"], true, "{d:#}");
    let methods: Vec<String> = agent
        .requests()
        .iter()
        .filter_map(CapturedRequest::rpc_method)
        .collect();
    assert_eq!(
        methods
            .iter()
            .map(String::as_str)
            .collect::<std::collections::BTreeSet<_>>(),
        ["message/send", "tasks/cancel", "tasks/get"].into(),
        "{methods:?}"
    );
    assert!(
        agent
            .requests()
            .iter()
            .all(|r| r.header("A2A-Version").is_none()),
        "no 1.0 version header to a 0.3 agent"
    );
}

/// Followed origin tasks are kept in the database: the origin task is polled (still working),
/// `serve` restarts, the task is canceled without a push meanwhile, and the restarted watcher
/// goes on following it and withdraws.
#[tokio::test]
async fn a_followed_origin_task_survives_a_restart() {
    let canceled = Arc::new(AtomicBool::new(false));
    let flag = canceled.clone();
    let agent = spawn_capture_agent(Behaviour::from_fn(move |_, req| {
        match req.rpc_method().as_deref() {
            Some("GetTask") => {
                let state = if flag.load(Ordering::SeqCst) {
                    "TASK_STATE_CANCELED"
                } else {
                    "TASK_STATE_WORKING"
                };
                asked_task_in(req, state)
            }
            _ => Reply::task("lapse-task-1", a2a_types::TaskState::Submitted),
        }
    }))
    .await;
    let mut w = spawn_watcher_with(
        &agent,
        "[delivery]\npoll_first = \"PT0.2S\"\nbackoff_max = \"PT0.5S\"\n",
        "",
    )
    .await;
    let due = origin(Duration::from_secs(3600));
    let raised = raise_origin(&w, 9, due).await;
    assert_eq!(raised.status, 200, "{:#}", raised.body);
    assert!(
        wait_until(|| async { !get_tasks(&agent).is_empty() }, PATIENCE).await,
        "polled before the restart: {}",
        w.log()
    );
    w.kill().await;
    canceled.store(true, Ordering::SeqCst);
    let before = get_tasks(&agent).len();
    w.start().await;
    let withdrawn = expectation_withdrawn(&w, "PA-9", "exp-9").await;
    assert!(withdrawn, "{}", w.log());
    assert!(
        get_tasks(&agent).len() > before,
        "asked again after the restart"
    );
    assert!(agent.sent_message_ids().is_empty());
}

/// `a2a-watcher example-agent` claims only what it does (m6): its card says
/// `pushNotifications: false` (it never pushes) and `CancelTask` answers -32002 (it completes
/// every task at once), so `probe` does not trust it and says why in those two words.
#[tokio::test]
async fn probe_against_the_example_agent_says_why_it_is_not_trusted() {
    use tokio::io::AsyncBufReadExt;
    let mut agent = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(["example-agent", "--listen", "127.0.0.1:0"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("start a2a-watcher example-agent");
    let mut lines = tokio::io::BufReader::new(agent.stdout.take().expect("piped")).lines();
    let url = tokio::time::timeout(PATIENCE, async {
        while let Ok(Some(line)) = lines.next_line().await {
            if let Some(rest) = line.strip_prefix("example agent listening on ") {
                return rest.split_whitespace().next().map(str::to_owned);
            }
        }
        None
    })
    .await
    .ok()
    .flatten()
    .expect("the example agent says where it listens");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });

    let d = probe(&url, "the example agent").await;
    assert_eq!(d["card"]["pushNotifications"], json!(false), "{d:#}");
    assert_eq!(d["pushesArrived"], json!(0), "{d:#}");
    assert_eq!(d["timestampsOnEveryStatus"], json!(true), "{d:#}");
    assert_eq!(d["getTask"], json!(true), "{d:#}");
    assert_eq!(d["lifecycleTrusted"], json!(false), "{d:#}");
    let demotions = d["demotions"].to_string();
    assert!(demotions.contains("the card offers none"), "{d:#}");
    assert!(demotions.contains("-32002"), "{d:#}");
    assert_eq!(d["demotions"].as_array().map(Vec::len), Some(2), "{d:#}");
}
