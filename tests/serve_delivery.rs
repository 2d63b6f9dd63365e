//! Delivery that never loses, never stalls and never duplicates a lapse task (issue 9), tried on
//! `a2a-watcher serve` over real HTTP with capture agents that are slow, down then up, or keep
//! their tasks and answer `ListTasks`. Backoffs are configured short (`[delivery]`) so the tests
//! take seconds; nothing here asserts a timing, only what arrives, in what order, how often.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use a2a_types::TaskState;
use serde_json::{json, Value};
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, CaptureAgent, Reply};

use common::*;

const PATIENCE: Duration = Duration::from_secs(30);

/// Short backoffs, so an outage is retried many times within seconds; give_up_after stays at
/// its default (a day).
const FAST_RETRIES: &str = r#"[delivery]
backoff_base = "PT0.05S"
backoff_max = "PT0.2S"
"#;

/// A second agent, `other`, at `agent`.
fn other_agent(agent: &CaptureAgent) -> String {
    format!(
        "\n{}",
        agent_toml("other", &agent.url(), "push-token-other")
    )
}

/// Raises `n` expectations of `agent` (pushing with `token`), each due at `due` with no grace,
/// and answers their lapse tasks' messageIds.
async fn raise(
    w: &Watcher,
    agent: &str,
    token: &str,
    n: usize,
    due: jiff::Timestamp,
) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let exp = format!("exp-{agent}-{i}");
        let body = one_expectation(
            &format!("task-{agent}-{i}"),
            &exp,
            &format!("PA-{agent}-{i}"),
            due,
            "PT0S",
        );
        let a = if agent == "booking" {
            w.push(&body).await
        } else {
            w.push_as(agent, token, &body).await
        };
        assert_eq!(a.body["raised"], json!([exp]), "{a:?}");
        ids.push(format!("lapse:{exp}:overdue:{}", fmt(due)));
    }
    ids
}

fn of_agent<'a>(lapses: &'a [Value], agent: &str) -> Vec<&'a Value> {
    lapses.iter().filter(|l| l["agent"] == agent).collect()
}

/// Waits until `agent` has `n` lapse tasks, all sent; whether it did within [`PATIENCE`].
async fn all_sent_of(w: &Watcher, agent: &str, n: usize) -> bool {
    wait_until(
        || async {
            let lapses = w.lapses().await;
            let of = of_agent(&lapses, agent);
            of.len() == n && of.iter().all(|l| l["delivery"] == "sent")
        },
        PATIENCE,
    )
    .await
}

fn sorted(ids: &[String]) -> Vec<String> {
    let mut v = ids.to_vec();
    v.sort();
    v
}

/// A slow agent (its answers held) does not hold up another agent: every lapse task of the
/// other agent is delivered while the slow one has not answered a single one; the slow agent's
/// arrive once it answers.
#[tokio::test]
async fn a_slow_agent_does_not_hold_up_another() {
    let slow = spawn_capture_agent(Behaviour::accept()).await;
    let fast = spawn_capture_agent(Behaviour::accept()).await;
    slow.hold(true);
    let w = spawn_watcher(&slow, &other_agent(&fast)).await;
    let due = origin(Duration::from_millis(500));
    let slow_ids = raise(&w, "booking", PUSH_TOKEN, 12, due).await;
    let fast_ids = raise(&w, "other", "push-token-other", 12, due).await;

    let fast_done = all_sent_of(&w, "other", 12).await;
    let lapses = w.lapses().await;
    assert!(fast_done, "{lapses:#?}");
    assert_eq!(sorted(&fast.sent_message_ids()), sorted(&fast_ids));
    // Meanwhile the slow agent has lapse tasks in flight and none answered.
    assert!(slow.request_count() >= 1, "the slow agent was sent to");
    assert!(
        of_agent(&lapses, "booking")
            .iter()
            .all(|l| l["delivery"] == "queued"),
        "the slow agent answered nothing yet: {lapses:#?}"
    );

    slow.hold(false);
    let slow_done = all_sent_of(&w, "booking", 12).await;
    assert!(slow_done, "{:#?}", w.lapses().await);
    assert_eq!(sorted(&slow.sent_message_ids()), sorted(&slow_ids));
}

/// An agent that is down for a while is retried by age, not by count: far more attempts than
/// the old limit of 8 are made, nothing is marked failed, `GET /v1/agents` says it is retrying,
/// and once it is back every lapse task arrives, each once.
#[tokio::test]
async fn an_agent_down_for_a_while_gets_every_lapse_task_after_it_recovers() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    agent.set_down(true);
    let w = spawn_watcher(&agent, FAST_RETRIES).await;
    let due = origin(Duration::from_millis(500));
    let ids = raise(&w, "booking", PUSH_TOKEN, 10, due).await;

    let many = wait_until(|| async { agent.refused_count() >= 100 }, PATIENCE).await;
    assert!(many, "refused {} requests", agent.refused_count());
    let lapses = w.lapses().await;
    assert_eq!(lapses.len(), 10);
    for l in &lapses {
        assert_eq!(l["delivery"], "queued", "{l:#}");
        assert!(l["retryingSince"].is_string(), "{l:#}");
    }
    let agents = w.get("/v1/agents").await;
    assert_eq!(agents.status, 200, "{agents:?}");
    let booking = agents.body["agents"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["agentId"] == "booking")
        .cloned()
        .unwrap();
    assert_eq!(booking["delivery"], "retrying", "{booking:#}");
    assert!(booking["retryingSince"].is_string(), "{booking:#}");

    agent.set_down(false);
    let all = wait_until(
        || async { w.lapses().await.iter().all(|l| l["delivery"] == "sent") },
        PATIENCE,
    )
    .await;
    assert!(all, "{:#?}", w.lapses().await);
    let sent = agent.sent_message_ids();
    assert_eq!(sorted(&sent), sorted(&ids), "each lapse task once");
    let agents = w.get("/v1/agents").await;
    assert!(
        agents.body["agents"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["agentId"] == "booking" && a["delivery"] == "ok"),
        "{agents:?}"
    );
}

/// `kill -9` while the agent holds its answers to lapse tasks it has accepted: after the
/// restart each of those is found with `ListTasks` in its origin context and recorded as sent
/// with the agent's task id; no `messageId` reaches the agent twice.
#[tokio::test]
async fn kill_9_under_load_sends_no_messageid_twice_to_an_agent_with_list_tasks() {
    let agent = CaptureAgent::spawn_keeping_tasks(Behaviour::accept())
        .await
        .unwrap();
    agent.hold(true);
    let mut w = spawn_watcher(&agent, "").await;
    let due = origin(Duration::from_millis(500));
    let ids = raise(&w, "booking", PUSH_TOKEN, 16, due).await;

    // Lapse tasks reach the agent (which creates their tasks) but no answer comes back.
    wait_for_requests(&agent, 4, PATIENCE).await;
    w.kill().await;
    let accepted_before_crash = agent.sent_message_ids();
    assert!(!accepted_before_crash.is_empty());
    agent.hold(false);

    w.start().await;
    w.all_sent(16, PATIENCE).await;

    let sent = agent.sent_message_ids();
    let distinct: BTreeSet<&String> = sent.iter().collect();
    assert_eq!(
        sent.len(),
        distinct.len(),
        "no messageId twice: {:#?}",
        agent.requests().iter().map(summary).collect::<Vec<_>>()
    );
    assert_eq!(sorted(&sent), sorted(&ids));
    let listed = agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("ListTasks"))
        .count();
    assert!(
        listed >= accepted_before_crash.len(),
        "each ambiguous lapse task was looked for ({listed} ListTasks for {} accepted)",
        accepted_before_crash.len()
    );
    // The ones accepted before the crash carry the task the agent created for them.
    let tasks = agent.tasks();
    let lapses = w.lapses().await;
    for id in &accepted_before_crash {
        let lapse = lapses.iter().find(|l| l["messageId"] == *id).unwrap();
        let task = tasks
            .iter()
            .find(|t| t["history"][0]["messageId"] == *id)
            .unwrap();
        assert_eq!(lapse["taskId"], task["id"], "{lapse:#}");
    }
}

/// A lapse task given up (`give_up_after` reached) is re-queued by an operator with
/// `a2a-watcher retry` and then delivered.
#[tokio::test]
async fn a_failed_lapse_task_is_requeued_with_the_cli_and_delivered() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    agent.set_down(true);
    let w = spawn_watcher(
        &agent,
        r#"[delivery]
give_up_after = "PT1S"
backoff_base = "PT0.1S"
backoff_max = "PT0.2S"
"#,
    )
    .await;
    let due = origin(Duration::from_millis(500));
    let ids = raise(&w, "booking", PUSH_TOKEN, 3, due).await;
    let failed = wait_until(
        || async {
            let l = w.lapses().await;
            l.len() == 3 && l.iter().all(|l| l["delivery"] == "failed")
        },
        PATIENCE,
    )
    .await;
    assert!(failed, "{:#?}", w.lapses().await);
    let l = w.lapses().await;
    assert!(
        l[0]["lastError"]
            .as_str()
            .unwrap()
            .starts_with("gave up after retrying for"),
        "{l:#?}"
    );
    agent.set_down(false);

    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(["retry", "--url", &w.base_url, "--agent", "booking"])
        .env("A2A_WATCHER_TOKEN", OPERATOR_TOKEN)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("re-queued 3 failed lapse task(s) of agent booking"),
        "{stdout}"
    );
    let sent = wait_until(
        || async { w.lapses().await.iter().all(|l| l["delivery"] == "sent") },
        PATIENCE,
    )
    .await;
    assert!(sent, "{:#?}", w.lapses().await);
    assert_eq!(sorted(&agent.sent_message_ids()), sorted(&ids));

    let bad = w
        .http()
        .post(w.url("/v1/lapses/retry"))
        .bearer_auth(OPERATOR_TOKEN)
        .json(&json!({ "agent": "booking", "messageIds": "all" }))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert_eq!(
        bad.headers()["content-type"].to_str().unwrap(),
        "application/problem+json"
    );
}

/// A reply `Task` whose id is the origin task named in `referenceTaskIds` (the agent resumed
/// the origin task instead of creating one) is a protocol error: recorded with the reason, not
/// counted as delivered.
#[tokio::test]
async fn a_reply_naming_the_origin_task_is_not_delivered() {
    let agent = spawn_capture_agent(Behaviour::always(Reply::task(
        "task-booking-0",
        TaskState::Working,
    )))
    .await;
    let w = spawn_watcher(&agent, "").await;
    let due = origin(Duration::from_millis(500));
    raise(&w, "booking", PUSH_TOKEN, 1, due).await;
    let lapses = w.first_lapse_in("failed", PATIENCE).await;
    assert!(
        lapses[0]["lastError"]
            .as_str()
            .unwrap()
            .starts_with("protocol error"),
        "{lapses:#?}"
    );
    assert!(lapses[0].get("taskId").is_none());
}

/// Without push notifications the watcher follows a lapse task with `GetTask`: the task's state
/// shows in `GET /v1/lapses`; once the agent's task needs a person (`INPUT_REQUIRED`) it is
/// marked so and no longer polled.
#[tokio::test]
async fn a_lapse_task_without_push_is_followed_until_it_needs_a_person() {
    let agent = CaptureAgent::spawn_keeping_tasks(Behaviour::accept())
        .await
        .unwrap();
    let w = spawn_watcher(
        &agent,
        r#"[delivery]
poll_first = "PT0.1S"
backoff_max = "PT0.2S"
"#,
    )
    .await;
    let due = origin(Duration::from_millis(500));
    raise(&w, "booking", PUSH_TOKEN, 1, due).await;
    w.first_lapse_sent(PATIENCE).await;
    let gets = || {
        agent
            .requests()
            .iter()
            .filter(|r| r.rpc_method().as_deref() == Some("GetTask"))
            .count()
    };
    wait_until(|| async { gets() >= 2 }, PATIENCE).await;
    assert!(gets() >= 2, "polled with GetTask");
    agent.set_task_state("task-1", TaskState::Working);
    let working = wait_until(
        || async { w.lapses().await[0]["taskState"] == "TASK_STATE_WORKING" },
        PATIENCE,
    )
    .await;
    assert!(working, "{:#?}", w.lapses().await);

    agent.set_task_state("task-1", TaskState::InputRequired);
    let needs_person = wait_until(
        || async { w.lapses().await[0]["needsPerson"] == true },
        PATIENCE,
    )
    .await;
    let lapses = w.lapses().await;
    assert!(needs_person, "{lapses:#?}");
    assert_eq!(lapses[0]["taskState"], "TASK_STATE_INPUT_REQUIRED");
    assert_eq!(lapses[0]["delivery"], "sent");
    let polls = gets();
    assert!(
        holds_for(|| async { gets() == polls }, Duration::from_secs(1)).await,
        "no GetTask after the task needs a person"
    );
    assert_eq!(
        agent.sent_message_ids().len(),
        1,
        "the watcher never answers it"
    );
}
