//! The Python agent author's kit (kits/python, `a2a_watcher_kit`) tested the way it is used: an
//! agent on the official A2A Python SDK (`kits/python/tests/e2e_agent.py`) that speaks the
//! Expectations extension only through the kit runs against `a2a-watcher serve`. It declares the
//! extension on its card, raises an expectation through the kit, and receives and reads its lapse
//! task through the kit; the kit's `WatcherClient` (`kits/python/tests/e2e_client.py`) reports a
//! fact, lists the lapse tasks, reads the subject and asks for a retry, and what it reads back is
//! what the watcher holds. And the kit's models are what its generator writes from the schemas
//! the watcher publishes today (`kits/python/generate.py --check`).
//!
//! The kit is run from the working tree (`PYTHONPATH=kits/python`) with the a2a-sdk venv's Python
//! (`bash infra/a2a-sdk.sh`). Without the venv the test skips with a message, except under
//! `CI=true`, where a missing venv fails it (`A2A_SKIP_SDK=1`, set by infra/test-all.sh when it
//! could not make the venv, skips it there too). Its unit tests, `mypy --strict` and the offline
//! wheel install are `bash infra/kit-python.sh`.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use common::aws_stack::free_port;
use common::*;

const PATIENCE: Duration = Duration::from_secs(30);
/// The kit agent's id in the watcher's configuration, and its push token.
const AGENT: &str = "kit";
const KIT_PUSH_TOKEN: &str = "push-token-kit";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn kit() -> PathBuf {
    root().join("kits/python")
}

/// The a2a-sdk venv (`$A2A_SDK_VENV`, or `.venv-a2a`), whether it exists or not.
fn venv() -> PathBuf {
    std::env::var_os("A2A_SDK_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv-a2a"))
}

/// The a2a-sdk venv's Python, or `None` (after saying why): the interop tests' own lookup.
use crate::interop_sdk::sdk_python;

/// `python script args…` with the kit on the path, run from a neutral folder (nothing there
/// shadows the SDK's or the kit's modules).
fn kit_command(python: &Path, script: &str) -> Command {
    let mut cmd = Command::new(python);
    cmd.arg(kit().join(script))
        .env("PYTHONPATH", kit())
        .current_dir(std::env::temp_dir())
        .stdin(Stdio::null());
    cmd
}

/// kits/python/tests/e2e_agent.py, running; killed when dropped.
struct KitAgent {
    /// `http://127.0.0.1:PORT`.
    url: String,
    /// The JSON of each `lapse-task {json}` line it printed: what the kit read from a lapse task.
    lapse_tasks: tokio::sync::mpsc::UnboundedReceiver<Value>,
    _child: Child,
}

impl KitAgent {
    async fn start(python: &Path, push: &str) -> KitAgent {
        let mut child = kit_command(python, "tests/e2e_agent.py")
            .args([
                "--port",
                "0",
                "--watcher",
                push,
                "--push-token",
                KIT_PUSH_TOKEN,
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start kits/python/tests/e2e_agent.py");
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let url = tokio::time::timeout(PATIENCE, async {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(url) = line.strip_prefix("listening on ") {
                    return Some(url.trim().to_owned());
                }
            }
            None
        })
        .await
        .ok()
        .flatten()
        .expect("the kit agent prints `listening on`");
        let (tx, lapse_tasks) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(seen) = line.strip_prefix("lapse-task ") {
                    let seen = serde_json::from_str(seen)
                        .unwrap_or_else(|e| panic!("lapse-task printed {seen:?}: {e}"));
                    let _ = tx.send(seen);
                }
            }
        });
        KitAgent {
            url,
            lapse_tasks,
            _child: child,
        }
    }
}

/// Runs kits/python/tests/e2e_client.py (the kit's `WatcherClient`) against `watcher` with
/// `token` and `args`; the answer it printed, as JSON.
async fn kit_client(python: &Path, watcher: &Watcher, token: &str, args: &[&str]) -> Value {
    let out = kit_command(python, "tests/e2e_client.py")
        .arg(&watcher.base_url)
        .arg(token)
        .args(args)
        .output()
        .await
        .expect("run kits/python/tests/e2e_client.py");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "e2e_client.py {args:?} failed: {}\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    let last = stdout.lines().last().unwrap_or_default();
    serde_json::from_str(last).unwrap_or_else(|e| panic!("e2e_client.py printed {last:?}: {e}"))
}

/// SendMessage (A2A 1.0 JSON-RPC, the extension activated) with `text` to the agent at `agent`;
/// the Task it answers.
async fn send_text(agent: &str, text: &str) -> Value {
    let http = reqwest::Client::new();
    let answer: Value = http
        .post(format!("{agent}/a2a/jsonrpc"))
        .header("A2A-Version", "1.0")
        .header("A2A-Extensions", URI)
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "SendMessage",
            "params": { "message": {
                "messageId": format!("m-{}", jiff::Timestamp::now().as_nanosecond()),
                "role": "ROLE_USER",
                "parts": [{ "text": text }],
            } },
        }))
        .send()
        .await
        .expect("SendMessage")
        .json()
        .await
        .expect("SendMessage answers JSON");
    let task = answer["result"]["task"].clone();
    assert_eq!(
        task["status"]["state"], "TASK_STATE_COMPLETED",
        "{text}: {answer:#}"
    );
    task
}

/// The record of expectation `id` on shipment `shipment` (read by the test itself), once `check`
/// holds for it.
async fn wait_for_record(
    watcher: &Watcher,
    shipment: &str,
    id: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let a = watcher
            .get(&format!("/v1/subjects/shipment/{shipment}"))
            .await;
        let found = a.body["expectations"]
            .as_array()
            .and_then(|l| l.iter().find(|e| e["expectationId"] == id).cloned());
        if let Some(r) = found.filter(|r| check(r)) {
            return r;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{id} on {shipment} never got there: {:#}\n{}",
            a.body,
            watcher.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `v` without its object members that are `null`, at any depth.
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(l) => Value::Array(l.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

#[tokio::test]
async fn an_agent_raises_through_the_python_kit_and_reads_its_lapse_task_through_it() {
    let Some(python) = sdk_python() else { return };
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let push = format!("{base}/v1/agents/{AGENT}/push");
    let mut agent = KitAgent::start(&python, &push).await;

    // The card the kit declared (declare_expectations) is the spec's §6.1 entry.
    let card: Value = reqwest::get(format!("{}/.well-known/agent-card.json", agent.url))
        .await
        .expect("the card")
        .json()
        .await
        .expect("the card is JSON");
    assert_eq!(
        card["capabilities"]["extensions"],
        json!([{
            "uri": URI,
            "description": "States what this agent expects next, and by when.",
            "params": {
                "keepsTime": false,
                "lapseSkill": "handle_lapse",
                "kinds": [{
                    "kind": "shipment.manifest",
                    "subjectType": "shipment",
                    "describes": "the airline manifest for a booked shipment",
                    "basis": "observed",
                    "skills": ["book_shipment", "handle_lapse"],
                }],
            },
        }]),
        "{card:#}"
    );

    let config = format!(
        r#"listen = "127.0.0.1:{port}"
database = "watcher.db"
allow_private_endpoints = true
public_url = "{base}"

{source}
[[agents]]
id = "{AGENT}"
card = "{card}"
push_token = "{KIT_PUSH_TOKEN}"

{operator}"#,
        source = entry_toml("sources", SOURCE_ID, SOURCE_TOKEN),
        card = agent.url,
        operator = entry_toml("operators", "ops-desk", OPERATOR_TOKEN),
    );
    let watcher = spawn_watcher_with_config(&config).await;

    // Two bookings: one due a second from now (it lapses), one far off (a fact satisfies it).
    let due = fmt(origin(Duration::from_secs(1)));
    let lapsing = send_text(
        &agent.url,
        &format!("book shipment=PA-KIT-1 due={due} grace=PT1S"),
    )
    .await;
    let far = fmt(BookingTimes::far().manifest_due);
    let kept = send_text(&agent.url, &format!("book shipment=PA-KIT-2 due={far}")).await;
    let lapsing_id = format!("exp-{}-manifest", lapsing["id"].as_str().unwrap());
    let kept_id = format!("exp-{}-manifest", kept["id"].as_str().unwrap());
    let open = wait_for_record(&watcher, "PA-KIT-2", &kept_id, |e| e["status"] == "open").await;
    assert_eq!(open["dueAt"], json!(far), "{open:#}");
    assert_eq!(open["raisedBy"]["taskId"], kept["id"], "{open:#}");

    // A source reports the manifest through the kit's client: it satisfies the far booking.
    let outcome = kit_client(
        &python,
        &watcher,
        SOURCE_TOKEN,
        &[
            "fact",
            "shipment.manifest.received:PA-KIT-2",
            "shipment",
            "PA-KIT-2",
        ],
    )
    .await;
    assert_eq!(
        outcome,
        json!({ "results": [{
            "factKey": "shipment.manifest.received:PA-KIT-2",
            "satisfied": [kept_id],
        }] }),
        "{outcome:#}"
    );

    // The other lapses; the watcher sends the lapse task; the agent reads it through the kit.
    let seen = tokio::time::timeout(PATIENCE, agent.lapse_tasks.recv())
        .await
        .ok()
        .flatten()
        .unwrap_or_else(|| panic!("no lapse task read by the kit agent\n{}", watcher.log()));
    let block = &seen["lapse"];
    assert_eq!(block["expectationId"], json!(lapsing_id), "{seen:#}");
    assert_eq!(block["kind"], json!("shipment.manifest"), "{seen:#}");
    assert_eq!(
        block["subject"],
        json!({ "type": "shipment", "id": "PA-KIT-1" }),
        "{seen:#}"
    );
    assert_eq!(block["lapse"], json!("overdue"), "{seen:#}");
    assert_eq!(block["dueAt"], json!(due), "{seen:#}");
    assert_eq!(block["projectedDueAt"], json!(due), "{seen:#}");
    assert_eq!(block["lineage"], json!(0), "{seen:#}");
    assert_eq!(seen["dueAt"], json!(due), "the kit's due_at: {seen:#}");
    assert_eq!(seen["originTaskId"], lapsing["id"], "{seen:#}");
    assert_eq!(seen["contextId"], lapsing["contextId"], "{seen:#}");
    let message_id = format!("lapse:{lapsing_id}:overdue:{due}");
    assert_eq!(seen["messageId"], json!(message_id), "{seen:#}");
    assert!(
        seen["text"].as_str().is_some_and(|t| !t.trim().is_empty()),
        "the lapse is stated in words: {seen:#}"
    );

    // handle_lapse raised a successor through the kit (supersedes, lineage 1).
    let successor_id = format!("{lapsing_id}.r1");
    wait_for_record(&watcher, "PA-KIT-1", &successor_id, |e| {
        e["status"] == "open"
    })
    .await;
    let records = kit_client(
        &python,
        &watcher,
        OPERATOR_TOKEN,
        &["subject", "shipment", "PA-KIT-1"],
    )
    .await;
    let held = watcher.get("/v1/subjects/shipment/PA-KIT-1").await.body;
    // Every member read back (the kit writes an optional member that is null by leaving it out).
    assert_eq!(
        records,
        without_nulls(&held["expectations"]),
        "the kit reads every member back"
    );
    let successor = expectation(&held, &successor_id);
    assert_eq!(successor["supersedes"], json!(lapsing_id), "{successor:#}");
    assert_eq!(successor["lineage"], json!(1), "{successor:#}");

    // The kit's client lists the lapse task as sent, and a retry of it is refused as sent.
    let deadline = tokio::time::Instant::now() + PATIENCE;
    let listed = loop {
        let lapses = kit_client(&python, &watcher, OPERATOR_TOKEN, &["lapses", AGENT]).await;
        let entry = lapses.as_array().and_then(|l| {
            l.iter()
                .find(|l| l["messageId"] == json!(message_id) && l["delivery"] == "sent")
                .cloned()
        });
        if let Some(entry) = entry {
            break entry;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the lapse task is not listed as sent: {lapses:#}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(listed["expectationId"], json!(lapsing_id), "{listed:#}");
    assert_eq!(listed["agent"], json!(AGENT), "{listed:#}");
    let retried = kit_client(
        &python,
        &watcher,
        OPERATOR_TOKEN,
        &["retry", AGENT, &message_id],
    )
    .await;
    assert_eq!(retried["requeued"], json!(0), "{retried:#}");
    assert_eq!(
        retried["skipped"],
        json!([{ "messageId": message_id, "reason": "not failed but sent" }]),
        "{retried:#}"
    );
}

/// A schema change the kit does not follow fails here too, not only in `infra/kit-python.sh`:
/// docs/schemas/ and docs/openapi.json are written from the Rust types (`UPDATE_DOCS=1`), so
/// this is where a change to them is first seen. The generator needs only the standard library
/// of the a2a-sdk venv's Python (or `python3` without the venv).
#[tokio::test]
async fn the_python_kits_models_are_what_the_published_schemas_generate() {
    let python = Some(venv().join("bin").join("python"))
        .filter(|p| p.exists())
        .unwrap_or_else(|| PathBuf::from("python3"));
    let out = kit_command(&python, "generate.py")
        .arg("--check")
        .output()
        .await
        .expect("run kits/python/generate.py --check");
    assert!(
        out.status.success(),
        "kits/python/a2a_watcher_kit/models.py does not follow docs/schemas and docs/openapi.json: \
         run `python3 kits/python/generate.py`\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
