//! The origin checks of a lane's pass, grouped (`watcher_delivery::origin_checks`), over a
//! memory store, a fake clock and a capture agent that keeps tasks (id → context, state) and
//! answers `GetTask` and `ListTasks` from them, counting each:
//!
//! * lapse tasks sharing one origin cost one `GetTask`, reused within `FRESH` by the next pass
//!   and asked again after it;
//! * lapse tasks of one context with several origins cost one `ListTasks` (`historyLength` 0, no
//!   artifacts); an origin the listing does not show is asked with `GetTask`;
//! * an origin the listing shows canceled withdraws every lapse task about it, as
//!   `Reconciler::check_before_send` does, and the others are sent;
//! * origin polls wait while the agent's lapse tasks are being sent (`Reconciler::sending`), at
//!   most `MAX_DEFER`.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use common::*;
use serde_json::{json, Value};
use watcher_core::ids::{AgentId, Tenant};
use watcher_delivery::origin_checks::{FRESH, MAX_DEFER};
use watcher_delivery::reconcile::Reconciler;
use watcher_delivery::testing::CaptureAgent;
use watcher_delivery::{AgentEndpoint, Lane, PassEnd, RetryPolicy, Submitter};
use watcher_runtime::clock::FakeClock;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::origins::FollowedOrigin;
use watcher_runtime::store::{DeliveryState, OutboxEntry};
use watcher_runtime::store::{Origins as _, Outbox as _, Records as _};

/// One kept task: its contextId, its state, and whether `ListTasks` shows it.
type Kept = (String, &'static str, bool);

/// The agent's tasks by id.
#[derive(Clone, Default)]
struct Tasks(Arc<Mutex<HashMap<String, Kept>>>);

impl Tasks {
    fn add(&self, id: &str, context: &str, state: &'static str, listed: bool) {
        self.0
            .lock()
            .unwrap()
            .insert(id.to_owned(), (context.to_owned(), state, listed));
    }
}

/// An agent answering `GetTask` and `ListTasks` from `tasks` (an unknown task: `-32001`),
/// and `SendMessage` with a new working task.
async fn agent(tasks: &Tasks) -> CaptureAgent {
    let tasks = tasks.clone();
    CaptureAgent::spawn(Behaviour::from_fn(move |n, req| {
        let params = req
            .json()
            .and_then(|v| v.get("params").cloned())
            .unwrap_or_default();
        let kept = tasks.0.lock().unwrap().clone();
        let task = |id: &str, (context, state, _): &Kept| {
            json!({ "id": id, "contextId": context, "status": { "state": state } })
        };
        match req.rpc_method().as_deref() {
            Some("GetTask") => {
                let id = params["id"].as_str().unwrap_or_default();
                match kept.get(id) {
                    Some(t) => Reply::rpc_result(req, task(id, t)),
                    None => Reply::rpc_error(-32001, "Task not found"),
                }
            }
            Some("ListTasks") => {
                let context = params["contextId"].as_str().unwrap_or_default();
                let listed: Vec<Value> = kept
                    .iter()
                    .filter(|(_, t)| t.0 == context && t.2)
                    .map(|(id, t)| task(id, t))
                    .collect();
                Reply::rpc_result(
                    req,
                    json!({ "tasks": listed, "nextPageToken": "", "pageSize": 100,
                            "totalSize": listed.len() }),
                )
            }
            _ => Reply::task(format!("lapse-task-{n}"), a2a_types::TaskState::Working),
        }
    }))
    .await
    .unwrap()
}

struct World {
    store: Arc<MemoryStore>,
    reconciler: Reconciler,
    submitter: Submitter,
    endpoints: HashMap<(Tenant, AgentId), AgentEndpoint>,
    clock: Arc<FakeClock>,
}

fn world(agent: &CaptureAgent) -> World {
    let r = reconciling(agent, true);
    World {
        store: r.store,
        reconciler: r.reconciler,
        submitter: submitter(RetryPolicy::default(), None),
        endpoints: endpoints(agent.endpoint(None)),
        clock: r.clock,
    }
}

impl World {
    /// Queues lapse tasks, each (expectation, origin, context), due at [`t0`], in this order.
    async fn queue(&self, lapse_tasks: &[(&str, &str, &str)]) -> Vec<OutboxEntry> {
        let mut entries = Vec::new();
        for (exp, origin, context) in lapse_tasks {
            let mut e = lapse_entry(exp);
            e.request["message"]["referenceTaskIds"] = json!([origin]);
            e.request["message"]["contextId"] = json!(context);
            entries.push(e);
        }
        // One commit each, so they are due in this order.
        for e in &entries {
            self.store
                .commit(
                    &tenant(),
                    watcher_runtime::store::Commit {
                        outbox: vec![e.clone()],
                        ..Default::default()
                    },
                )
                .await
                .unwrap();
        }
        entries
    }

    /// One pass of the agent's lane, `batch` at a time.
    async fn pass(&self, batch: usize) -> watcher_delivery::PassReport {
        Lane {
            tenant: &tenant(),
            agent: &booking(),
            store: &*self.store,
            submitter: &self.submitter,
            endpoints: &self.endpoints,
            reconciler: Some(&self.reconciler),
            slots: None,
            per_agent: 4,
            batch,
        }
        .pass(&*self.clock, None)
        .await
    }

    async fn state(&self, e: &OutboxEntry) -> (DeliveryState, Option<String>) {
        let e = self
            .store
            .outbox_get(&e.tenant, &e.agent, &e.message_id)
            .await
            .unwrap()
            .unwrap();
        (e.delivery, e.last_error)
    }
}

/// [`t0`] plus `d`.
fn after(d: std::time::Duration) -> watcher_core::time::Instant {
    t0().checked_add(jiff::SignedDuration::try_from(d).unwrap())
        .unwrap()
}

fn count(agent: &CaptureAgent, method: &str) -> usize {
    agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some(method))
        .count()
}

#[tokio::test]
async fn lapse_tasks_sharing_an_origin_cost_one_get_task_reused_while_fresh() {
    let tasks = Tasks::default();
    tasks.add("task-o", "ctx-o", "TASK_STATE_WORKING", true);
    let agent = agent(&tasks).await;
    let w = world(&agent);
    let ids: Vec<String> = (0..9).map(|i| format!("exp-{i}")).collect();
    let queued: Vec<(&str, &str, &str)> = ids
        .iter()
        .map(|id| (id.as_str(), "task-o", "ctx-o"))
        .collect();
    let entries = w.queue(&queued).await;

    // Six of the nine in the first pass (one context: a pass takes a quarter of its batch of
    // it, watcher_delivery::contexts): one GetTask, no listing (one task to ask).
    let first = w.pass(24).await;
    assert_eq!(first.end, PassEnd::More);
    assert_eq!(first.delivery.sent, 6);
    assert_eq!(count(&agent, "GetTask"), 1);
    assert_eq!(count(&agent, "ListTasks"), 0);
    // The next pass within FRESH reuses the answer.
    w.clock.set(after(FRESH / 2));
    let second = w.pass(8).await;
    assert_eq!(second.delivery.sent, 2);
    assert_eq!(count(&agent, "GetTask"), 1, "the answer is reused");
    // Past FRESH, the origin is asked again.
    w.clock.set(after(FRESH + FRESH / 2));
    let third = w.pass(24).await;
    assert_eq!(third.delivery.sent, 1);
    assert_eq!(count(&agent, "GetTask"), 2, "asked again after FRESH");
    assert_eq!(count(&agent, "SendMessage"), 9);
    for e in &entries {
        assert_eq!(w.state(e).await.0, DeliveryState::Sent);
    }
}

#[tokio::test]
async fn a_context_shared_by_several_origins_costs_one_list_tasks() {
    let tasks = Tasks::default();
    for o in ["task-a", "task-b", "task-c"] {
        tasks.add(o, "ctx-shared", "TASK_STATE_WORKING", true);
    }
    let agent = agent(&tasks).await;
    let w = world(&agent);
    w.queue(&[
        ("exp-1", "task-a", "ctx-shared"),
        ("exp-2", "task-b", "ctx-shared"),
        ("exp-3", "task-c", "ctx-shared"),
        ("exp-4", "task-a", "ctx-shared"),
    ])
    .await;
    let pass = w.pass(32).await;
    assert_eq!(pass.delivery.sent, 4);
    assert_eq!(count(&agent, "ListTasks"), 1);
    assert_eq!(count(&agent, "GetTask"), 0);
    let list = agent
        .requests()
        .into_iter()
        .find(|r| r.rpc_method().as_deref() == Some("ListTasks"))
        .and_then(|r| r.json())
        .unwrap();
    // a2a-v1.md §1.1: the context, no history, no artifacts (`includeArtifacts` absent).
    assert_eq!(list["params"]["contextId"], json!("ctx-shared"));
    assert_eq!(list["params"]["historyLength"], json!(0));
    assert!(list["params"].get("includeArtifacts").is_none());
}

#[tokio::test]
async fn an_origin_the_listing_does_not_show_is_asked_with_get_task() {
    let tasks = Tasks::default();
    tasks.add("task-a", "ctx-shared", "TASK_STATE_WORKING", true);
    tasks.add("task-old", "ctx-shared", "TASK_STATE_CANCELED", false);
    let agent = agent(&tasks).await;
    let w = world(&agent);
    let entries = w
        .queue(&[
            ("exp-1", "task-a", "ctx-shared"),
            ("exp-2", "task-old", "ctx-shared"),
        ])
        .await;
    let pass = w.pass(32).await;
    assert_eq!(count(&agent, "ListTasks"), 1);
    assert_eq!(count(&agent, "GetTask"), 1, "task-old only");
    assert_eq!(pass.delivery.sent, 1);
    assert_eq!(pass.withdrawn, 1);
    assert_eq!(w.state(&entries[1]).await.0, DeliveryState::Withdrawn);
}

#[tokio::test]
async fn a_canceled_origin_found_by_list_tasks_withdraws_every_lapse_task_about_it() {
    let tasks = Tasks::default();
    tasks.add("task-gone", "ctx-shared", "TASK_STATE_CANCELED", true);
    tasks.add("task-on", "ctx-shared", "TASK_STATE_WORKING", true);
    let agent = agent(&tasks).await;
    let w = world(&agent);
    let entries = w
        .queue(&[
            ("exp-1", "task-gone", "ctx-shared"),
            ("exp-2", "task-on", "ctx-shared"),
            ("exp-3", "task-gone", "ctx-shared"),
            ("exp-4", "task-gone", "ctx-shared"),
        ])
        .await;
    let pass = w.pass(32).await;
    assert_eq!(count(&agent, "ListTasks"), 1);
    assert_eq!(count(&agent, "GetTask"), 0);
    assert_eq!(pass.withdrawn, 3);
    assert_eq!(pass.delivery.sent, 1);
    for i in [0, 2, 3] {
        let (state, why) = w.state(&entries[i]).await;
        assert_eq!(state, DeliveryState::Withdrawn, "{}", entries[i].message_id);
        // The reason check_before_send gives.
        assert_eq!(
            why.as_deref(),
            Some(
                "not sent: GetTask before sending found the origin task \"task-gone\" \
                 TASK_STATE_CANCELED; its expectations were withdrawn (origin-task reconciliation)"
            )
        );
    }
    assert_eq!(w.state(&entries[1]).await.0, DeliveryState::Sent);
    assert_eq!(
        agent.sent_message_ids(),
        vec![entries[1].message_id.clone()]
    );
}

async fn follow_origin(w: &World) {
    let origin = FollowedOrigin {
        tenant: tenant(),
        agent: booking(),
        task_id: "task-o".into(),
        since: t0(),
        next_at: t0(),
    };
    assert!(w.store.origin_follow(&origin).await.unwrap());
}

#[tokio::test]
async fn origin_polls_wait_while_the_agents_lapse_tasks_are_sent() {
    let tasks = Tasks::default();
    tasks.add("task-o", "ctx-o", "TASK_STATE_WORKING", true);
    let agent = agent(&tasks).await;
    let w = world(&agent);
    follow_origin(&w).await;
    let sending = w.reconciler.sending(&tenant(), &booking());
    assert_eq!(w.reconciler.poll_stored_due(t0()).await, 0);
    assert_eq!(agent.request_count(), 0, "no GetTask while sending");
    assert_eq!(
        w.store
            .origins_due(&tenant(), &booking(), t0(), 10)
            .await
            .unwrap()
            .len(),
        1,
        "put off, still due"
    );
    drop(sending);
    assert_eq!(w.reconciler.poll_stored_due(t0()).await, 1);
    assert_eq!(count(&agent, "GetTask"), 1);
}

#[tokio::test]
async fn origin_polls_wait_at_most_max_defer() {
    let tasks = Tasks::default();
    tasks.add("task-o", "ctx-o", "TASK_STATE_WORKING", true);
    let agent = agent(&tasks).await;
    let w = world(&agent);
    follow_origin(&w).await;
    let _sending = w.reconciler.sending(&tenant(), &booking());
    assert_eq!(w.reconciler.poll_stored_due(t0()).await, 0);
    let almost = after(MAX_DEFER - std::time::Duration::from_millis(1));
    assert_eq!(w.reconciler.poll_stored_due(almost).await, 0);
    assert_eq!(w.reconciler.poll_stored_due(after(MAX_DEFER)).await, 1);
    assert_eq!(count(&agent, "GetTask"), 1);
}

/// Run by hand: `cargo test -p watcher-delivery --all-features --test it
/// origin_checks::measure -- --ignored --nocapture`. 300 lapse tasks of one agent answering in
/// 50 ms, 30 origins each in its own context, due interleaved (each pass holds many contexts),
/// drained by passes of 32 with the origin checks on: printed, never asserted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_one_agent_answering_in_50_ms() {
    let tasks = Tasks::default();
    for c in 0..30 {
        tasks.add(
            &format!("task-{c}"),
            &format!("ctx-{c}"),
            "TASK_STATE_WORKING",
            true,
        );
    }
    let agent = agent(&tasks).await;
    agent.set_answer_delay(std::time::Duration::from_millis(50));
    let w = world(&agent);
    let ids: Vec<(String, String, String)> = (0..10)
        .flat_map(|i| {
            (0..30).map(move |c| {
                (
                    format!("exp-{c}-{i}"),
                    format!("task-{c}"),
                    format!("ctx-{c}"),
                )
            })
        })
        .collect();
    let queued: Vec<(&str, &str, &str)> = ids
        .iter()
        .map(|(e, o, c)| (e.as_str(), o.as_str(), c.as_str()))
        .collect();
    w.queue(&queued).await;
    let clock = watcher_runtime::clock::SystemClock;
    let started = std::time::Instant::now();
    let mut passes = 0;
    while count(&agent, "SendMessage") < 300
        && started.elapsed() < std::time::Duration::from_secs(60)
    {
        Lane {
            tenant: &tenant(),
            agent: &booking(),
            store: &*w.store,
            submitter: &w.submitter,
            endpoints: &w.endpoints,
            reconciler: Some(&w.reconciler),
            slots: None,
            per_agent: 4,
            batch: 32,
        }
        .pass(&clock, None)
        .await;
        passes += 1;
    }
    let secs = started.elapsed().as_secs_f64();
    println!(
        "300 lapse tasks, 30 origins, agent answering in 50 ms: {secs:.2} s ({:.1}/s) in {passes} passes; {} GetTask, {} ListTasks",
        300.0 / secs,
        count(&agent, "GetTask"),
        count(&agent, "ListTasks")
    );
}
