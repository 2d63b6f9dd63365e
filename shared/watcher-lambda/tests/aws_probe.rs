//! The registration probe on AWS (`probe = true`; docs/interpretation.md "The registration probe
//! on AWS"): the timer's sweep probes an agent that has no lifecycle descriptor for its card, the
//! probe's pushes going to the deployment's own push route (the API function, here served on
//! 127.0.0.1) and read back from the table; the descriptor is kept in the table, and a function
//! that started before the probe picks it up. Needs the emulator (`bash infra/moto.sh`,
//! `AWS_ENDPOINT_URL`).

use crate::common::{cold_start, emulator_store, sweep};

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use watcher_config::Config;
use watcher_core::ids::{AgentId, Tenant};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};
use watcher_runtime::clock::{Clock, SystemClock};

const CARD: &str = include_str!("../../../examples/booking-card.json");
const PUSH_TOKEN: &str = "push-booking";
/// Every status the stub sends carries this timestamp.
const TS: &str = "2026-11-30T00:00:00Z";

fn task(id: &str, state: &str) -> Value {
    json!({ "id": id, "contextId": "ctx-probe", "status": { "state": state, "timestamp": TS } })
}

/// Pushes the terminal `state` of task `id` to the push config's `url` with its `token`, a
/// little after the answer.
fn push_later(config: Option<Value>, id: &str, state: &str) {
    let Some(config) = config else { return };
    let body = json!({ "statusUpdate": { "taskId": id, "contextId": "ctx-probe",
        "status": { "state": state, "timestamp": TS } } });
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let url = config["url"].as_str().unwrap_or_default().to_owned();
        let token = config["token"].as_str().unwrap_or_default().to_owned();
        let _ = reqwest::Client::new()
            .post(&url)
            .header("X-A2A-Notification-Token", token)
            .json(&body)
            .send()
            .await;
    });
}

/// A 1.0 agent that passes the probe: every status timestamped, its first probe task completes
/// and is pushed once, its second stays working until `CancelTask` and its cancel is pushed once.
fn conforming() -> Behaviour {
    let cancel_config: Arc<Mutex<Option<Value>>> = Arc::default();
    let canceled = Arc::new(AtomicBool::new(false));
    Behaviour::from_fn(move |_, req| {
        let method = req.rpc_method().unwrap_or_default();
        let body = req.json().unwrap_or_default();
        let asked = body
            .pointer("/params/id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        match method.as_str() {
            "SendMessage" => {
                let config = body
                    .pointer("/params/configuration/taskPushNotificationConfig")
                    .cloned();
                if req
                    .message_id()
                    .unwrap_or_default()
                    .starts_with("probe:cancel")
                {
                    *cancel_config.lock().unwrap() = config;
                    Reply::rpc_result(
                        req,
                        json!({ "task": task("probe-cancel", "TASK_STATE_WORKING") }),
                    )
                } else {
                    push_later(config, "probe-task", "TASK_STATE_COMPLETED");
                    Reply::rpc_result(
                        req,
                        json!({ "task": task("probe-task", "TASK_STATE_SUBMITTED") }),
                    )
                }
            }
            "GetTask" => {
                let state = match asked.as_str() {
                    "probe-task" => "TASK_STATE_COMPLETED",
                    "probe-cancel" if canceled.load(Ordering::SeqCst) => "TASK_STATE_CANCELED",
                    _ => "TASK_STATE_WORKING",
                };
                Reply::rpc_result(req, task(&asked, state))
            }
            "CancelTask" => {
                canceled.store(true, Ordering::SeqCst);
                push_later(
                    cancel_config.lock().unwrap().clone(),
                    &asked,
                    "TASK_STATE_CANCELED",
                );
                Reply::rpc_result(req, task(&asked, "TASK_STATE_CANCELED"))
            }
            "ListTasks" => Reply::rpc_result(req, json!({ "tasks": [], "nextPageToken": "" })),
            _ => Reply::rpc_error(-32601, "Method not found"),
        }
    })
}

#[tokio::test]
async fn the_sweep_probes_through_the_deployments_push_route_and_every_function_uses_it() {
    let store = emulator_store("probe").await;
    let agent = spawn_capture_agent(conforming()).await;
    let mut card: Value = serde_json::from_str(CARD).unwrap();
    card["supportedInterfaces"][0]["url"] = json!(agent.url());
    // The API function, reachable by the agent: the deployment's push route.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let api_url = format!("http://{}", listener.local_addr().unwrap());
    let config = Config::from_toml(&format!(
        "public_url = \"{api_url}\"\n[[agents]]\nid = \"booking\"\ncard = '''{card}'''\nendpoint = \"{}\"\npush_token = \"{PUSH_TOKEN}\"\nprobe = true\n",
        agent.url()
    ))
    .expect("config");
    let api = cold_start(&store, &config).await;
    let router = watcher_host::aws::api_router(&api, Arc::new(SystemClock));
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    let timer = cold_start(&store, &config).await;
    let submitter = cold_start(&store, &config).await;
    let (t, a) = (Tenant::default_tenant(), AgentId::parse("booking").unwrap());
    assert!(
        !timer.watcher.directory.lifecycle_trusted(&t, &a),
        "never probed"
    );
    assert!(store
        .lifecycle_descriptor(&t, &a, "1.0")
        .await
        .unwrap()
        .is_none());

    let report = sweep(&timer, SystemClock.now()).await;
    assert_eq!(report.probed, 1);
    let (descriptor, _) = store
        .lifecycle_descriptor(&t, &a, "1.0")
        .await
        .unwrap()
        .expect("the descriptor is kept in the table");
    assert_eq!(descriptor["pushesArrived"], 1, "{descriptor:#}");
    assert_eq!(descriptor["exactlyOneTerminal"], true, "{descriptor:#}");
    assert_eq!(descriptor["cancel"]["pushed"], "once", "{descriptor:#}");
    assert_eq!(descriptor["lifecycleTrusted"], true, "{descriptor:#}");
    assert!(timer.watcher.directory.lifecycle_trusted(&t, &a));
    let sends = || {
        agent
            .requests()
            .iter()
            .filter(|r| r.rpc_method().as_deref() == Some("SendMessage"))
            .count()
    };
    assert_eq!(sends(), 2, "two probe tasks");

    // A function started before the probe uses the kept descriptor from its next use on.
    assert!(!submitter.watcher.directory.lifecycle_trusted(&t, &a));
    assert!(submitter.cards.pick_up(&t, &a, SystemClock.now()).await);
    assert!(submitter.watcher.directory.lifecycle_trusted(&t, &a));

    // The next sweep probes nothing again.
    let report = sweep(&timer, SystemClock.now()).await;
    assert_eq!(report.probed, 0);
    assert_eq!(sends(), 2);
}
