//! Interoperability with the official A2A Python SDK (`a2a-sdk`, pinned in infra/a2a-sdk.sh):
//! `a2a-watcher serve` and examples/sdk-agent/agent.py (the SDK's server, task store and push
//! sender) on 127.0.0.1, driven by examples/sdk-agent/client.py (the SDK's client). Nothing of
//! the agent's wire format is hand-written here: every push the watcher reads, and every answer
//! to a lapse task, is what the SDK produces.
//!
//! Also the tutorial's example agents (examples/python-agent/, examples/typescript-agent/): each
//! one against `serve` receives its lapse tasks, and `probe` trusts it or says why not.
//!
//! The venv is made by `bash infra/a2a-sdk.sh` (infra/test-all.sh runs it first). Without it the
//! tests skip with a message, except under `CI=true`, where a missing venv fails them.
//! `A2A_SKIP_SDK=1` (set by infra/test-all.sh when it could not make the venv, with the reason in
//! its summary) skips them under `CI=true` too.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout, Command};

use common::aws_stack::free_port;
use common::*;

const PATIENCE: Duration = Duration::from_secs(30);
/// The agent's id in the watcher's configuration and its push token.
const AGENT: &str = "sdk";
const SDK_PUSH_TOKEN: &str = "push-token-sdk";

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The venv's Python, or `None` (after saying why) when the venv is absent outside CI.
///
/// # Panics
/// When the venv is absent and `CI=true`, unless `A2A_SKIP_SDK` is set.
pub(crate) fn sdk_python() -> Option<PathBuf> {
    let venv = std::env::var_os("A2A_SDK_VENV")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join(".venv-a2a"));
    let python = venv.join("bin").join("python");
    if python.exists() {
        return Some(python);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let told_to_skip = std::env::var_os("A2A_SKIP_SDK").is_some();
    assert!(
        !ci || told_to_skip,
        "CI=true and the a2a-sdk venv is missing at {}: run `bash infra/a2a-sdk.sh`",
        venv.display()
    );
    skip::skip(&format!(
        "the a2a-sdk venv is missing at {}; run `bash infra/a2a-sdk.sh` (CI=true makes this a \
         failure)",
        venv.display()
    ));
    None
}

/// The URL a started agent prints in its `listening on URL` line, read from its stdout `lines`
/// within [`PATIENCE`].
async fn listening_on(lines: &mut Lines<BufReader<ChildStdout>>) -> Option<String> {
    tokio::time::timeout(PATIENCE, async {
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
}

/// examples/sdk-agent/agent.py, running. Killed when dropped.
struct SdkAgent {
    /// `http://127.0.0.1:PORT` (the card is at `/.well-known/agent-card.json`).
    url: String,
    _child: Child,
}

impl SdkAgent {
    async fn start(python: &Path) -> SdkAgent {
        // Run from a neutral folder: the SDK's `a2a/types` must not shadow anything.
        let mut child = Command::new(python)
            .arg(root().join("examples/sdk-agent/agent.py"))
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("start examples/sdk-agent/agent.py");
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let url = listening_on(&mut lines)
            .await
            .expect("the SDK agent prints `listening on`");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        SdkAgent { url, _child: child }
    }
}

/// One peer pair: the SDK agent and a watcher configured with it as agent `sdk`.
struct Pair {
    python: PathBuf,
    agent: SdkAgent,
    watcher: Watcher,
}

/// Starts the SDK agent and a watcher reading its card over HTTP (base URL: the watcher looks it
/// up at `/.well-known/agent-card.json`). With `public_url`, the watcher listens on a port chosen
/// here and names itself in lapse tasks' push configs; without, it follows them with `GetTask`.
/// `None` (after saying why) when the venv is absent outside CI (see [`sdk_python`]).
async fn pair(public_url: bool) -> Option<Pair> {
    let python = sdk_python()?;
    let agent = SdkAgent::start(&python).await;
    let (listen, public) = if public_url {
        let port = free_port();
        (
            format!("127.0.0.1:{port}"),
            format!("public_url = \"http://127.0.0.1:{port}\"\n"),
        )
    } else {
        ("127.0.0.1:0".to_owned(), String::new())
    };
    let config = format!(
        r#"listen = "{listen}"
database = "watcher.db"
allow_private_endpoints = true
{public}
[delivery]
poll_first = "PT0.5S"
backoff_max = "PT1S"

{source}
[[agents]]
id = "{AGENT}"
card = "{card}"
push_token = "{SDK_PUSH_TOKEN}"

{operator}"#,
        source = entry_toml("sources", SOURCE_ID, SOURCE_TOKEN),
        card = agent.url,
        operator = entry_toml("operators", "ops-desk", OPERATOR_TOKEN),
    );
    let watcher = spawn_watcher_with_config(&config).await;
    Some(Pair {
        python,
        agent,
        watcher,
    })
}

impl Pair {
    /// Runs examples/sdk-agent/client.py with `args`; its last stdout line as JSON.
    async fn client(&self, args: &[&str]) -> Value {
        let out = Command::new(&self.python)
            .arg(root().join("examples/sdk-agent/client.py"))
            .args(args)
            .current_dir(std::env::temp_dir())
            .stdin(Stdio::null())
            .output()
            .await
            .expect("run examples/sdk-agent/client.py");
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "client.py {args:?} failed: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let last = stdout.lines().last().unwrap_or_default();
        serde_json::from_str(last).unwrap_or_else(|e| panic!("client.py printed {last:?}: {e}"))
    }

    /// The watcher's push route for the SDK agent.
    fn push_url(&self) -> String {
        self.watcher.url(&format!("/v1/agents/{AGENT}/push"))
    }

    /// SendMessage through the SDK client with the watcher as push target; the Task.
    async fn send(&self, text: &str) -> Value {
        let push = self.push_url();
        let args = [
            "send",
            &self.agent.url,
            text,
            "--push-url",
            &push,
            "--push-token",
            SDK_PUSH_TOKEN,
        ];
        self.client(&args).await
    }

    /// Books `shipment` due at the next whole second at least a second from now, with a
    /// second's grace, through the SDK client; the Task, the id of the manifest expectation it
    /// raises, and the due time.
    async fn book_due_soon(&self, shipment: &str) -> (Value, String, jiff::Timestamp) {
        let due = origin(Duration::from_secs(1));
        let task = self
            .send(&format!(
                "book shipment={shipment} due={} grace=PT1S",
                fmt(due)
            ))
            .await;
        let id = format!("exp-{}-manifest", task_id(&task));
        (task, id, due)
    }

    /// The record of expectation `id` on subject `kind/subject`, once `check` holds for it.
    async fn wait_for(
        &self,
        kind: &str,
        subject: &str,
        id: &str,
        check: impl Fn(&Value) -> bool,
    ) -> Value {
        let path = format!("/v1/subjects/{kind}/{subject}");
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let a = self.watcher.get(&path).await;
            let record = a.body["expectations"]
                .as_array()
                .and_then(|l| l.iter().find(|e| e["expectationId"] == id).cloned());
            if let Some(r) = record.filter(|r| check(r)) {
                return r;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{id} on {kind}/{subject} never got there: {:#}\n{}",
                a.body,
                self.watcher.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The lapse-task entry for `expectation_id` once `check` holds for it.
    async fn wait_for_lapse(&self, expectation_id: &str, check: impl Fn(&Value) -> bool) -> Value {
        let deadline = tokio::time::Instant::now() + PATIENCE;
        loop {
            let lapses = self.watcher.lapses().await;
            if let Some(l) = lapses
                .iter()
                .find(|l| l["expectationId"] == expectation_id && check(l))
            {
                return l.clone();
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no lapse task for {expectation_id} got there: {lapses:#?}\n{}",
                self.watcher.log()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

fn state(task: &Value) -> &str {
    task["status"]["state"].as_str().unwrap_or_default()
}

fn task_id(task: &Value) -> String {
    task["id"].as_str().expect("a task id").to_owned()
}

#[tokio::test]
async fn the_sdk_agent_raises_expectations_in_an_artifact_and_a_fact_satisfies_them() {
    let Some(p) = pair(false).await else { return };
    let due = fmt(BookingTimes::far().manifest_due);
    let task = p
        .send(&format!("book shipment=PA-SDK-1 due={due} grace=PT2H"))
        .await;
    assert_eq!(state(&task), "TASK_STATE_COMPLETED", "{task:#}");
    let id = format!("exp-{}-manifest", task_id(&task));

    // The SDK's push sender delivered the artifact: the expectation is recorded as raised.
    let open = p
        .wait_for("shipment", "PA-SDK-1", &id, |e| e["status"] == "open")
        .await;
    assert_eq!(open["dueAt"], json!(due), "{open:#}");
    assert_eq!(open["grace"], json!("PT2H"), "{open:#}");
    assert_eq!(
        open["raisedBy"]["taskId"],
        json!(task_id(&task)),
        "{open:#}"
    );
    // The completed status (the SDK's last push) withdraws nothing (§8.1).
    let rejections = p
        .watcher
        .get(&format!("/v1/agents/{AGENT}/rejections"))
        .await;
    assert_eq!(rejections.body["rejections"], json!([]), "{rejections:?}");

    // A source reports the manifest: satisfied.
    let fact = json!({
        "factKey": "shipment.manifest.received:PA-SDK-1",
        "observedAt": fmt(jiff::Timestamp::now()),
        "subject": { "type": "shipment", "id": "PA-SDK-1" },
    });
    let a = p.watcher.report(&fact).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["results"][0]["satisfied"], json!([id]), "{a:?}");
    p.wait_for("shipment", "PA-SDK-1", &id, |e| e["status"] == "satisfied")
        .await;
}

#[tokio::test]
async fn a_lapse_task_is_accepted_by_the_sdk_agent_and_its_successor_arrives_by_push() {
    let Some(p) = pair(true).await else { return };
    let (task, id, due) = p.book_due_soon("PA-SDK-2").await;

    // The watcher submits the lapse task; the SDK agent answers with a Task (delivered).
    let lapse = p
        .wait_for_lapse(&id, |l| l["delivery"] == "sent" && l["taskId"].is_string())
        .await;
    assert_eq!(lapse["lapse"], json!("overdue"), "{lapse:#}");
    assert_eq!(
        lapse["messageId"],
        json!(format!("lapse:{id}:overdue:{}", fmt(due))),
        "{lapse:#}"
    );
    assert_ne!(
        lapse["taskId"],
        json!(task_id(&task)),
        "a new task: {lapse:#}"
    );

    // handle_lapse raised a successor in the lapse task's artifact; the SDK pushed it to the
    // watcher because the lapse task carried the watcher's push config.
    let successor = p
        .wait_for("shipment", "PA-SDK-2", &format!("{id}.r1"), |e| {
            e["status"] == "open"
        })
        .await;
    assert_eq!(successor["lineage"], json!(1), "{successor:#}");
    assert_eq!(successor["supersedes"], json!(id), "{successor:#}");
    assert_eq!(
        successor["raisedBy"]["taskId"], lapse["taskId"],
        "{successor:#}"
    );
    let lapsed = p.wait_for("shipment", "PA-SDK-2", &id, |_| true).await;
    assert_eq!(lapsed["lapses"][0]["lapse"], json!("overdue"), "{lapsed:#}");
    assert_eq!(
        lapsed["supersededBy"],
        json!(format!("{id}.r1")),
        "{lapsed:#}"
    );
    // The lapse task's own terminal state came by push.
    p.wait_for_lapse(&id, |l| l["taskState"] == "TASK_STATE_COMPLETED")
        .await;
}

#[tokio::test]
async fn without_public_url_the_lapse_task_is_followed_by_get_task() {
    let Some(p) = pair(false).await else { return };
    let (_task, id, _due) = p.book_due_soon("PA-SDK-3").await;

    let lapse = p.wait_for_lapse(&id, |l| l["delivery"] == "sent").await;
    let lapse_task = lapse["taskId"]
        .as_str()
        .expect("the lapse task's id")
        .to_owned();
    // No push config was sent, so only GetTask can have seen it complete.
    let done = p
        .wait_for_lapse(&id, |l| l["taskState"] == "TASK_STATE_COMPLETED")
        .await;
    assert_eq!(done["taskId"], json!(lapse_task), "{done:#}");
    // The agent agrees.
    let seen = p.client(&["get", &p.agent.url, &lapse_task]).await;
    assert_eq!(state(&seen), "TASK_STATE_COMPLETED", "{seen:#}");
}

#[tokio::test]
async fn an_input_required_question_expires_and_an_answered_one_is_satisfied() {
    let Some(p) = pair(true).await else { return };

    // Unanswered: it lapses, and handle_lapse completes the lapse task saying why.
    let due = origin(Duration::from_secs(1));
    let asked = p.send(&format!("ask due={} grace=PT1S", fmt(due))).await;
    assert_eq!(state(&asked), "TASK_STATE_INPUT_REQUIRED", "{asked:#}");
    let unanswered = format!("exp-{}-answer", task_id(&asked));
    let lapse = p
        .wait_for_lapse(&unanswered, |l| l["taskState"] == "TASK_STATE_COMPLETED")
        .await;
    assert_eq!(lapse["lapse"], json!("overdue"), "{lapse:#}");
    let q = p
        .wait_for("task", &task_id(&asked), &unanswered, |_| true)
        .await;
    assert_eq!(q["lapses"][0]["lapse"], json!("overdue"), "{q:#}");

    // Answered through the SDK client: the task leaves input-required, which satisfies it.
    let far = fmt(BookingTimes::far().manifest_due);
    let asked = p.send(&format!("ask due={far}")).await;
    let (tid, ctx) = (
        task_id(&asked),
        asked["contextId"].as_str().unwrap().to_owned(),
    );
    let answer = format!("exp-{tid}-answer");
    p.wait_for("task", &tid, &answer, |e| e["status"] == "open")
        .await;
    let push = p.push_url();
    let done = p
        .client(&[
            "send",
            &p.agent.url,
            "warehouse 4",
            "--task-id",
            &tid,
            "--context-id",
            &ctx,
            "--push-url",
            &push,
            "--push-token",
            SDK_PUSH_TOKEN,
        ])
        .await;
    assert_eq!(state(&done), "TASK_STATE_COMPLETED", "{done:#}");
    let satisfied = p
        .wait_for("task", &tid, &answer, |e| e["status"] == "satisfied")
        .await;
    assert_eq!(
        satisfied["satisfaction"]["source"],
        json!("watcher:task-lifecycle"),
        "{satisfied:#}"
    );
}

#[tokio::test]
async fn cancel_through_the_sdk_client_withdraws() {
    let Some(p) = pair(false).await else { return };
    let due = fmt(BookingTimes::far().manifest_due);
    // `hold` keeps the booking working after its artifact; return at once with the Task.
    let push = p.push_url();
    let task = p
        .client(&[
            "send",
            &p.agent.url,
            &format!("book shipment=PA-SDK-4 due={due} hold"),
            "--push-url",
            &push,
            "--push-token",
            SDK_PUSH_TOKEN,
            "--return-immediately",
        ])
        .await;
    let tid = task_id(&task);
    let id = format!("exp-{tid}-manifest");
    p.wait_for("shipment", "PA-SDK-4", &id, |e| e["status"] == "open")
        .await;

    let canceled = p.client(&["cancel", &p.agent.url, &tid]).await;
    assert_eq!(state(&canceled), "TASK_STATE_CANCELED", "{canceled:#}");
    let withdrawn = p
        .wait_for("shipment", "PA-SDK-4", &id, |e| e["status"] == "withdrawn")
        .await;
    assert!(
        withdrawn.to_string().contains("TASK_STATE_CANCELED"),
        "the reason names the state: {withdrawn:#}"
    );
}

#[tokio::test]
async fn probe_prints_the_sdk_agents_lifecycle_descriptor() {
    let Some(python) = sdk_python() else { return };
    let agent = SdkAgent::start(&python).await;
    let d = probe(&agent.url, "the SDK agent").await;
    assert_eq!(d["protocolVersion"], json!("1.0"), "{d:#}");
    assert_eq!(d["card"]["pushNotifications"], json!(true), "{d:#}");
    // The SDK pushes every event of the task: submitted, working, completed.
    assert!(d["pushesArrived"].as_u64().is_some_and(|n| n >= 2), "{d:#}");
    assert_eq!(d["terminalEvents"], json!(1), "{d:#}");
    assert_eq!(d["exactlyOneTerminal"], json!(true), "{d:#}");
    assert_eq!(d["getTask"], json!(true), "{d:#}");
    assert_eq!(d["listTasks"], json!(true), "{d:#}");
    // The Task the SDK returns for returnImmediately (SUBMITTED) carries no status.timestamp,
    // so the SDK agent is not lifecycle-trusted (the conformance note's first demotion rule).
    let first = &d["statuses"][0];
    assert_eq!(first["state"], json!("TASK_STATE_SUBMITTED"), "{d:#}");
    assert!(first.get("timestamp").is_none(), "{d:#}");
    assert_eq!(d["timestampsOnEveryStatus"], json!(false), "{d:#}");
    assert_eq!(d["lifecycleTrusted"], json!(false), "{d:#}");
    let last = d["statuses"].as_array().and_then(|l| l.last()).cloned();
    assert!(
        d["statuses"]
            .as_array()
            .is_some_and(|l| l.iter().any(|s| s["state"] == "TASK_STATE_COMPLETED")),
        "completed seen: {last:?} {d:#}"
    );
}

// The tutorial's example agents (examples/python-agent/, examples/typescript-agent/): each one,
// started with the watcher's push route, books a shipment (an expectation in an artifact) and asks
// a question (an expectation that expires), both due a second from now; the watcher sends the
// lapse tasks; the agent's `handle_lapse` prints each lapse block it read, and cancels the task
// whose question nobody answered.

/// An example agent's push token in the watcher's configuration.
const EXAMPLE_PUSH_TOKEN: &str = "push-token-example";

/// An example agent, running. Killed when dropped.
struct ExampleAgentProc {
    /// `http://127.0.0.1:PORT`.
    url: String,
    /// The lapse block of every `handle_lapse {json}` line it printed.
    lapses: tokio::sync::mpsc::UnboundedReceiver<Value>,
    _child: Child,
}

impl ExampleAgentProc {
    /// Runs `cmd` (with `--port 0 --watcher PUSH --push-token TOKEN` added) and waits for its
    /// `listening on URL` line.
    async fn start(mut cmd: Command, push: &str, what: &str) -> ExampleAgentProc {
        cmd.args(["--port", "0", "--watcher", push])
            .args(["--push-token", EXAMPLE_PUSH_TOKEN]);
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("start {what}: {e}"));
        let mut lines = BufReader::new(child.stdout.take().expect("piped stdout")).lines();
        let url = listening_on(&mut lines)
            .await
            .unwrap_or_else(|| panic!("{what} prints `listening on`"));
        let (tx, lapses) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if let Some(block) = line.strip_prefix("handle_lapse ") {
                    let block = serde_json::from_str(block)
                        .unwrap_or_else(|e| panic!("handle_lapse printed {block:?}: {e}"));
                    let _ = tx.send(block);
                }
            }
        });
        ExampleAgentProc {
            url,
            lapses,
            _child: child,
        }
    }
}

/// SendMessage (A2A 1.0 JSON-RPC, the extension activated) with `text` to the agent whose card is
/// at `agent`; the Task it answers.
async fn send_text(agent: &str, text: &str) -> Value {
    let http = reqwest::Client::new();
    let card: Value = http
        .get(format!("{agent}/.well-known/agent-card.json"))
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .expect("the card")
        .json()
        .await
        .expect("the card is JSON");
    let endpoint = card["supportedInterfaces"][0]["url"]
        .as_str()
        .unwrap_or_else(|| panic!("a JSONRPC interface on {card:#}"));
    let answer: Value = http
        .post(endpoint)
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
    answer["result"]["task"].clone()
}

/// The example agent `cmd` against `serve`: its two expectations lapse, `handle_lapse` reads both
/// lapse blocks, and the unanswered question's task is canceled (so the watcher withdraws it).
/// Answers the agent and the watcher, both still running.
async fn example_agent_handles_its_lapses(cmd: Command, what: &str) -> (ExampleAgentProc, Watcher) {
    let port = free_port();
    let base = format!("http://127.0.0.1:{port}");
    let push = format!("{base}/v1/agents/example/push");
    let mut agent = ExampleAgentProc::start(cmd, &push, what).await;
    let config = format!(
        r#"listen = "127.0.0.1:{port}"
database = "watcher.db"
allow_private_endpoints = true
public_url = "{base}"

[[agents]]
id = "example"
card = "{card}"
push_token = "{EXAMPLE_PUSH_TOKEN}"

{operator}"#,
        card = agent.url,
        operator = entry_toml("operators", "ops-desk", OPERATOR_TOKEN),
    );
    let watcher = spawn_watcher_with_config(&config).await;

    let due = fmt(origin(Duration::from_secs(1)));
    let booking = send_text(
        &agent.url,
        &format!("book shipment=PA-EX-1 due={due} grace=PT1S"),
    )
    .await;
    assert_eq!(
        state(&booking),
        "TASK_STATE_COMPLETED",
        "{what}: {booking:#}"
    );
    let asked = send_text(&agent.url, &format!("ask due={due} grace=PT1S")).await;
    assert_eq!(
        state(&asked),
        "TASK_STATE_INPUT_REQUIRED",
        "{what}: {asked:#}"
    );
    let manifest = format!("exp-{}-manifest", task_id(&booking));
    let answer = format!("exp-{}-answer", task_id(&asked));

    // handle_lapse read both lapse blocks (§10.1).
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let block = tokio::time::timeout(PATIENCE, agent.lapses.recv())
            .await
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("{what}: handle_lapse saw {seen:#?}\n{}", watcher.log()));
        seen.push(block);
    }
    seen.sort_by_key(|b| b["expectationId"].as_str().map(|id| id == answer));
    let [m, q] = &seen[..] else { unreachable!() };
    assert_eq!(m["expectationId"], json!(manifest), "{what}: {m:#}");
    assert_eq!(m["kind"], json!("shipment.manifest"), "{what}: {m:#}");
    assert_eq!(
        m["subject"],
        json!({ "type": "shipment", "id": "PA-EX-1" }),
        "{what}: {m:#}"
    );
    assert_eq!(q["expectationId"], json!(answer), "{what}: {q:#}");
    assert_eq!(q["kind"], json!("question.answer"), "{what}: {q:#}");
    assert_eq!(
        q["subject"],
        json!({ "type": "task", "id": task_id(&asked) }),
        "{what}: {q:#}"
    );
    for b in [m, q] {
        assert_eq!(b["lapse"], json!("overdue"), "{what}: {b:#}");
        assert_eq!(b["dueAt"], json!(due), "{what}: {b:#}");
        assert_eq!(b["lineage"], json!(0), "{what}: {b:#}");
    }

    // handle_lapse canceled the question's task: the watcher saw it and withdrew the question.
    let path = format!("/v1/subjects/task/{}", task_id(&asked));
    let deadline = tokio::time::Instant::now() + PATIENCE;
    loop {
        let a = watcher.get(&path).await;
        let withdrawn = a.body["expectations"][0]["withdrawal"]["reason"].as_str();
        if withdrawn.is_some_and(|r| r.contains("TASK_STATE_CANCELED")) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: the question was not withdrawn: {:#}\n{}",
            a.body,
            watcher.log()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (agent, watcher)
}

/// `a2a-watcher probe` output against a running example agent. (Its probe tasks are pushed to
/// the agent's watcher too, under a push config of their own; the probe counts only its own.)
async fn probe_example_agent(agent: &ExampleAgentProc, what: &str) -> Value {
    probe(&agent.url, what).await
}

/// The README's step 7: the example agent is lifecycle-trusted.
fn assert_trusted(d: &Value, what: &str) {
    assert_eq!(d["card"]["pushNotifications"], json!(true), "{what}: {d:#}");
    assert_eq!(d["timestampsOnEveryStatus"], json!(true), "{what}: {d:#}");
    assert_eq!(d["exactlyOneTerminal"], json!(true), "{what}: {d:#}");
    assert_eq!(d["cancel"]["pushed"], json!("once"), "{what}: {d:#}");
    assert_eq!(d["demotions"], json!([]), "{what}: {d:#}");
    assert_eq!(d["lifecycleTrusted"], json!(true), "{what}: {d:#}");
}

#[tokio::test]
async fn the_python_example_agent_handles_its_lapse_tasks_and_probe_trusts_it() {
    let Some(python) = sdk_python() else { return };
    let mut cmd = Command::new(python);
    cmd.arg(root().join("examples/python-agent/agent.py"))
        .current_dir(std::env::temp_dir());
    let what = "examples/python-agent/agent.py";
    let (agent, _watcher) = example_agent_handles_its_lapses(cmd, what).await;
    assert_trusted(&probe_example_agent(&agent, what).await, what);
}

/// `node --import tsx agent.ts` in examples/typescript-agent, or `None` (after saying why) when
/// its node_modules is absent outside CI.
///
/// # Panics
/// When node_modules is absent and `CI=true`, unless `A2A_SKIP_NODE` is set.
fn typescript_agent() -> Option<Command> {
    let dir = root().join("examples/typescript-agent");
    if dir.join("node_modules/@a2a-js/sdk").exists() && dir.join("node_modules/tsx").exists() {
        let mut cmd = Command::new("node");
        cmd.args(["--import", "tsx", "agent.ts"]).current_dir(dir);
        return Some(cmd);
    }
    let ci = std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true") || v == "1");
    let told_to_skip = std::env::var_os("A2A_SKIP_NODE").is_some();
    assert!(
        !ci || told_to_skip,
        "CI=true and examples/typescript-agent/node_modules is missing: run `bash infra/a2a-js.sh`"
    );
    skip::skip(
        "examples/typescript-agent/node_modules is missing; run `bash infra/a2a-js.sh` (CI=true \
         makes this a failure)",
    );
    None
}

/// Then the TypeScript README's step 7: @a2a-js/sdk 1.3.0 pushes the canceled status of a
/// running task twice (its `cancelTask` reads the task's event bus beside the `SendMessage` that
/// is still reading it, and each reader pushes every event), and the probe says so.
#[tokio::test]
async fn the_typescript_example_agent_handles_its_lapse_tasks_and_probe_says_why_not_trusted() {
    let Some(cmd) = typescript_agent() else {
        return;
    };
    let what = "examples/typescript-agent/agent.ts";
    let (agent, _watcher) = example_agent_handles_its_lapses(cmd, what).await;
    let d = probe_example_agent(&agent, what).await;
    assert_eq!(d["card"]["pushNotifications"], json!(true), "{d:#}");
    assert_eq!(d["timestampsOnEveryStatus"], json!(true), "{d:#}");
    assert_eq!(d["exactlyOneTerminal"], json!(true), "{d:#}");
    assert_eq!(d["cancel"]["canceled"], json!(true), "{d:#}");
    assert_eq!(d["cancel"]["pushed"], json!("twice"), "{d:#}");
    assert_eq!(
        d["demotions"],
        json!(["2 terminal events pushed for the probe's canceled task, not exactly one"]),
        "{d:#}"
    );
    assert_eq!(d["lifecycleTrusted"], json!(false), "{d:#}");
}
