//! Withdrawal follows the lineage before a send (expectations-v1 §8.1, §13.6;
//! docs/interpretation.md "Withdrawal follows the lineage"), over a memory store, the watcher's
//! push path, origin-task reconciliation and a capture agent: three generations, the original
//! task, the lapse task sent about it, and a task raised while handling that lapse task.
//!
//! * The original's cancel, pushed: the grandchild's expectations are withdrawn, no lapse task.
//! * The original's cancel, found by polling (`GetTask`): the same.
//! * The check before a first send asks the lineage: a grandparent found failed withdraws the
//!   lapse task instead of sending it.
//! * A task lists at most `DESCENDANTS_KEPT` descendants; one linked past them is reached by the
//!   checks upward: what it raised is withdrawn instead of lapsing, what it raises after the end
//!   is withdrawn at once, and its lapse task queued before the end is not sent.

use crate::common;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use a2a_types::{StreamResponse, TaskState};
use common::*;
use serde_json::{json, Value};
use watcher_core::engine::lineage::DESCENDANTS_KEPT;
use watcher_core::ids::{Subject, TaskId, TaskRef};
use watcher_core::slice::{Scope, TaskRecord};
use watcher_core::time::Instant;
use watcher_delivery::reconcile::Reconciler;
use watcher_delivery::testing::CaptureAgent;
use watcher_delivery::RetryPolicy;
use watcher_runtime::clock::FakeClock;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{
    DeliveryState, LapseLog, Outbox as _, OutboxEntry, Records as _, Store,
};
use watcher_runtime::watcher::Watcher;

const URI: &str = watcher_core::EXPECTATIONS_URI;

/// The agent's tasks as `GetTask` answers them (id → state); `SendMessage` creates
/// `task-lapse`, working.
#[derive(Clone, Default)]
struct States(Arc<Mutex<HashMap<String, TaskState>>>);

impl States {
    fn set(&self, task: &str, state: TaskState) {
        self.0.lock().unwrap().insert(task.to_owned(), state);
    }
}

async fn agent(states: &States) -> CaptureAgent {
    let states = states.clone();
    CaptureAgent::spawn(Behaviour::from_fn(move |_, req| {
        match req.rpc_method().as_deref() {
            Some("GetTask") => {
                let id = req
                    .json()
                    .and_then(|v| v.pointer("/params/id").cloned())
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                let state = states
                    .0
                    .lock()
                    .unwrap()
                    .get(&id)
                    .copied()
                    .unwrap_or(TaskState::Working);
                Reply::rpc_result(
                    req,
                    json!({ "id": id, "contextId": "ctx-1", "status": { "state": state.as_str() } }),
                )
            }
            _ => Reply::task("task-lapse", TaskState::Working),
        }
    }))
    .await
    .unwrap()
}

struct World {
    store: Arc<MemoryStore>,
    watcher: Arc<Watcher<dyn Store>>,
    reconciler: Reconciler,
    clock: Arc<FakeClock>,
}

fn world(agent: &CaptureAgent) -> World {
    let r = reconciling(agent, true);
    World {
        store: r.store,
        watcher: r.watcher,
        reconciler: r.reconciler,
        clock: r.clock,
    }
}

/// An expectation `id` on `shipment {id}`, due `due`.
fn expectation(id: &str, due: Instant) -> Value {
    json!({
        "expectationId": id, "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": id }, "expects": format!("step {id}"),
        "satisfiedBy": { "factKey": format!("done:{id}") }, "dueAt": due.to_string(),
        "basis": "observed",
    })
}

/// An artifact update of `task` raising `id` due `due` (no history: the event does not show
/// whose work it is).
fn artifact(task: &str, id: &str, due: Instant) -> StreamResponse {
    StreamResponse::from_push_body(json!({ "artifactUpdate": {
        "taskId": task, "contextId": "ctx-1",
        "artifact": { "artifactId": format!("a-{id}"), "parts": [{ "text": "x" }],
                      "extensions": [URI],
                      "metadata": { URI: { "expectations": [expectation(id, due)] } } } } }))
    .unwrap()
}

/// A Task snapshot of `task`, working, started by a request naming `parent` in
/// `referenceTaskIds`, raising `id` due `due`.
fn started_by(task: &str, parent: &str, id: &str, due: Instant) -> StreamResponse {
    StreamResponse::from_push_body(json!({ "task": {
        "id": task, "contextId": "ctx-1", "status": { "state": "TASK_STATE_WORKING" },
        "history": [{ "messageId": format!("m-{task}"), "role": "ROLE_USER",
                      "parts": [{ "text": "go" }], "referenceTaskIds": [parent] }],
        "artifacts": [{ "artifactId": format!("a-{id}"), "parts": [{ "text": "x" }],
                        "extensions": [URI],
                        "metadata": { URI: { "expectations": [expectation(id, due)] } } }] } }))
    .unwrap()
}

fn cancel(task: &str) -> StreamResponse {
    StreamResponse::from_push_body(json!({ "statusUpdate": {
        "taskId": task, "contextId": "ctx-1", "status": { "state": "TASK_STATE_CANCELED" } } }))
    .unwrap()
}

impl World {
    async fn push(&self, event: StreamResponse, at: Instant) -> Vec<String> {
        self.clock.set(at);
        let done = self
            .watcher
            .push(&tenant(), &booking(), &event, at)
            .await
            .unwrap();
        done.withdrawn.iter().map(ToString::to_string).collect()
    }

    /// The status of expectation `id` (on `shipment {id}`).
    async fn status(&self, id: &str) -> String {
        let subject = Subject::parse("shipment", id).unwrap();
        let state = self
            .store
            .subject(&tenant(), &subject)
            .await
            .unwrap()
            .expect("the subject");
        serde_json::to_value(state.records[0].status)
            .unwrap()
            .as_str()
            .unwrap()
            .to_owned()
    }

    /// The withdrawal reason of expectation `id` (on `shipment {id}`), if withdrawn.
    async fn withdrawal_reason(&self, id: &str) -> Option<String> {
        let subject = Subject::parse("shipment", id).unwrap();
        let state = self.store.subject(&tenant(), &subject).await.unwrap()?;
        state.records[0]
            .withdrawal
            .as_ref()
            .map(|w| w.reason.clone())
    }

    /// The record of `booking`'s task `id`, as stored.
    async fn task(&self, id: &str) -> TaskRecord {
        let task = TaskRef {
            agent: booking(),
            task_id: TaskId::parse(id).unwrap(),
        };
        let scope = Scope {
            tasks: [task.clone()].into(),
            ..Default::default()
        };
        let slice = self.store.load(&tenant(), &scope, t0()).await.unwrap();
        slice.tasks[&task].clone().expect("the task is recorded")
    }

    /// `task-1` raises A (due in two hours); then `count` tasks `d-00`, `d-01`, … are started
    /// by requests naming `task-1`, a second apart, each raising `D-00`, `D-01`, … due in an hour.
    async fn descendants(&self, count: usize) {
        self.push(artifact("task-1", "A", plus_secs(t0(), 7200)), t0())
            .await;
        for i in 0..count {
            self.push(
                started_by(
                    &format!("d-{i:02}"),
                    "task-1",
                    &format!("D-{i:02}"),
                    plus_secs(t0(), 3600),
                ),
                plus_secs(t0(), 1 + i as u64),
            )
            .await;
        }
    }

    async fn lapse_tasks(&self) -> Vec<OutboxEntry> {
        self.store.lapses(&tenant()).await.unwrap()
    }

    /// Fires every timer due at `at`; the lapse tasks queued.
    async fn fire(&self, at: Instant) -> Vec<OutboxEntry> {
        self.clock.set(at);
        self.watcher
            .fire_due(at)
            .await
            .unwrap()
            .into_iter()
            .flat_map(|(_, applied)| applied.outbox)
            .collect()
    }

    /// The original `task-1` raises A (due in 10 s); A lapses and its lapse task is delivered
    /// (the agent answers with `task-lapse`); with `lapse_task_raises`, `task-lapse`, known by
    /// the outbox only (its pushes carry no history), raises B (else it never pushes anything);
    /// `task-3`, started by a request naming `task-lapse`, raises C. B and C are due in an hour.
    async fn three_generations(&self, agent: &CaptureAgent, lapse_task_raises: bool) {
        self.push(artifact("task-1", "A", plus_secs(t0(), 10)), t0())
            .await;
        let queued = self.fire(plus_secs(t0(), 11)).await;
        assert_eq!(queued.len(), 1, "A's lapse task");
        assert_eq!(
            queued[0].request["message"]["referenceTaskIds"],
            json!(["task-1"])
        );
        let submitter = submitter(RetryPolicy::default(), None);
        let endpoints = endpoints(agent.endpoint(None));
        let ids = (
            &queued[0].tenant,
            &queued[0].agent,
            queued[0].message_id.as_str(),
        );
        let found = self.store.outbox_get(ids.0, ids.1, ids.2).await.unwrap();
        submitter
            .deliver_read_with(
                &*self.store,
                &endpoints,
                submitter.buckets(),
                ids,
                found,
                watcher_delivery::deliver::Places::none(),
                plus_secs(t0(), 11),
            )
            .await
            .unwrap();
        assert_eq!(
            self.lapse_tasks().await[0].task_id.as_deref(),
            Some("task-lapse")
        );
        let hour = plus_secs(t0(), 3600);
        if lapse_task_raises {
            self.push(artifact("task-lapse", "B", hour), plus_secs(t0(), 20))
                .await;
        }
        self.push(
            started_by("task-3", "task-lapse", "C", hour),
            plus_secs(t0(), 30),
        )
        .await;
    }
}

/// The original canceled by push: what its lapse task and the task raised while handling it
/// raised is withdrawn in that push, and neither lapses.
#[tokio::test]
async fn the_originals_cancel_pushed_withdraws_the_grandchilds_expectations() {
    let states = States::default();
    let agent = agent(&states).await;
    let w = world(&agent);
    w.three_generations(&agent, true).await;
    let mut withdrawn = w.push(cancel("task-1"), plus_secs(t0(), 60)).await;
    withdrawn.sort();
    assert_eq!(withdrawn, ["A", "B", "C"], "in the push's answer");
    for id in ["B", "C"] {
        assert_eq!(w.status(id).await, "withdrawn", "{id}");
    }
    assert!(
        w.fire(plus_secs(t0(), 7200)).await.is_empty(),
        "no lapse task"
    );
    assert_eq!(w.lapse_tasks().await.len(), 1, "only A's");
}

/// The original canceled without a push, found by following it with `GetTask`: the same.
#[tokio::test]
async fn the_originals_cancel_found_by_polling_withdraws_the_grandchilds_expectations() {
    let states = States::default();
    let agent = agent(&states).await;
    let w = world(&agent);
    w.three_generations(&agent, true).await;
    states.set("task-1", TaskState::Canceled);
    let polled = w.reconciler.poll_stored_due(plus_secs(t0(), 86_400)).await;
    assert!(polled >= 1, "task-1 is followed: {polled}");
    for id in ["A", "B", "C"] {
        assert_eq!(w.status(id).await, "withdrawn", "{id}");
    }
    assert!(
        w.fire(plus_secs(t0(), 7200)).await.is_empty(),
        "no lapse task"
    );
}

/// The check before a first send asks the origin's lineage: C's lapse task (origin `task-3`,
/// whose lineage is `task-lapse`, then `task-1`) is withdrawn, not sent, when `task-1` is found
/// failed, though `task-3` and `task-lapse` are working. `task-lapse` never pushed: the outbox
/// knows whose lapse task it is.
#[tokio::test]
async fn the_check_before_a_first_send_refuses_a_send_whose_grandparent_failed() {
    let states = States::default();
    let agent = agent(&states).await;
    let w = world(&agent);
    w.three_generations(&agent, false).await;
    states.set("task-1", TaskState::Failed);
    let queued = w.fire(plus_secs(t0(), 3601)).await;
    assert_eq!(queued.len(), 1, "C's lapse task");
    let c = queued
        .iter()
        .find(|e| e.expectation_id.as_str() == "C")
        .expect("C's lapse task")
        .clone();
    assert_eq!(c.request["message"]["referenceTaskIds"], json!(["task-3"]));
    let sends_before = agent.sent_message_ids().len();
    assert!(
        !w.reconciler.check_before_send(&c).await.unwrap(),
        "not to be sent"
    );
    let asked: Vec<String> = agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("GetTask"))
        .filter_map(|r| {
            r.json().and_then(|v| {
                v.pointer("/params/id")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            })
        })
        .collect();
    assert_eq!(asked, ["task-3", "task-lapse", "task-1"], "nearest first");
    let stored = get(&w.store, &c).await;
    assert_eq!(stored.delivery, DeliveryState::Withdrawn);
    let why = stored.last_error.unwrap();
    assert!(
        why.contains("\"task-1\"") && why.contains("TASK_STATE_FAILED"),
        "{why}"
    );
    for id in ["A", "C"] {
        assert_eq!(w.status(id).await, "withdrawn", "{id}");
    }
    assert_eq!(agent.sent_message_ids().len(), sends_before, "nothing sent");
}

/// A link learnt after a task raised reaches what it raised: `task-3` (started by a request
/// naming `task-2`) raises C before `task-2` is known to descend from `task-1`; C's lapse task
/// carries the whole lineage, and the check before its first send asks `task-1` too.
#[tokio::test]
async fn a_lineage_learnt_after_the_raise_travels_with_the_lapse_task() {
    let states = States::default();
    let agent = agent(&states).await;
    let w = world(&agent);
    let due = plus_secs(t0(), 60);
    w.push(started_by("task-3", "task-2", "C", due), t0()).await;
    w.push(
        started_by("task-2", "task-1", "B", plus_secs(t0(), 3600)),
        plus_secs(t0(), 10),
    )
    .await;
    let queued = w.fire(plus_secs(t0(), 61)).await;
    assert_eq!(queued.len(), 1, "C's lapse task");
    assert_eq!(queued[0].origin_lineage, ["task-2", "task-1"]);
    states.set("task-1", TaskState::Rejected);
    assert!(!w.reconciler.check_before_send(&queued[0]).await.unwrap());
    assert_eq!(w.status("C").await, "withdrawn");
    assert_eq!(w.status("B").await, "withdrawn");
}

/// The reason of an expectation raised by `task` withdrawn because `task-1`, of its lineage, was
/// canceled.
fn canceled_above(task: &str) -> String {
    format!(
        "task task-1 of the lineage of origin task {task} reached TASK_STATE_CANCELED (expectations-v1 §8.1)"
    )
}

/// A task lists the first `DESCENDANTS_KEPT` tasks linked below it, and no more: a link past them
/// marks the descendant unlisted and leaves the ancestor's record as it was (not written again).
#[tokio::test]
async fn a_task_lists_at_most_descendants_kept_below_it() {
    let states = States::default();
    let agent = agent(&states).await;
    let w = world(&agent);
    w.descendants(DESCENDANTS_KEPT).await;
    let full = w.task("task-1").await;
    let first: Vec<String> = (0..DESCENDANTS_KEPT).map(|i| format!("d-{i:02}")).collect();
    let listed: Vec<String> = full.descendants.iter().map(ToString::to_string).collect();
    assert_eq!(listed, first);
    for i in DESCENDANTS_KEPT..DESCENDANTS_KEPT + 3 {
        let id = format!("d-{i:02}");
        w.push(
            started_by(&id, "task-1", &format!("D-{i:02}"), plus_secs(t0(), 3600)),
            plus_secs(t0(), 100 + i as u64),
        )
        .await;
        let d = w.task(&id).await;
        assert_eq!(d.lineage, [TaskId::parse("task-1").unwrap()], "{id}");
        assert!(d.unlisted, "{id} is past the list");
    }
    let after = w.task("task-1").await;
    assert_eq!(after.descendants.len(), DESCENDANTS_KEPT);
    assert_eq!(
        after, full,
        "the ancestor's record is not written by a link past its list"
    );
    assert!(!w.task("d-00").await.unlisted);
}

/// A descendant past the list, canceled above: what it raised before the cancel stays open (the
/// cancel writes only the listed descendants) and is withdrawn when it would lapse, so no lapse
/// task is queued or sent for it; what it raises after the cancel is withdrawn at once; and so is
/// what a task linked below it after the cancel raised.
#[tokio::test]
async fn a_descendant_past_the_list_gets_no_lapse_task_after_its_ancestor_is_canceled() {
    let states = States::default();
    let agent = agent(&states).await;
    let w = world(&agent);
    w.descendants(DESCENDANTS_KEPT + 1).await;
    let past = format!("d-{DESCENDANTS_KEPT:02}");
    let past_exp = format!("D-{DESCENDANTS_KEPT:02}");
    let mut withdrawn = w.push(cancel("task-1"), plus_secs(t0(), 600)).await;
    withdrawn.sort();
    let mut listed: Vec<String> = (0..DESCENDANTS_KEPT).map(|i| format!("D-{i:02}")).collect();
    listed.insert(0, "A".into());
    assert_eq!(
        withdrawn, listed,
        "the cancel withdraws what the listed ones raised"
    );
    assert_eq!(
        w.status(&past_exp).await,
        "open",
        "past the list: not written by the cancel"
    );

    // A task that raised before it was known to start below the unlisted one: withdrawn when
    // the link arrives, the cancel read from the records of its new lineage.
    let unlinked = w
        .push(
            artifact("below", "BELOW", plus_secs(t0(), 3600)),
            plus_secs(t0(), 650),
        )
        .await;
    assert!(unlinked.is_empty());
    let linked = w
        .push(
            started_by("below", &past, "BELOW", plus_secs(t0(), 3600)),
            plus_secs(t0(), 660),
        )
        .await;
    assert_eq!(linked, ["BELOW"]);
    // Raised after the cancel by the unlisted task: withdrawn at once.
    let late = w
        .push(
            artifact(&past, "LATE", plus_secs(t0(), 3600)),
            plus_secs(t0(), 700),
        )
        .await;
    assert_eq!(late, ["LATE"]);
    assert_eq!(
        w.withdrawal_reason("LATE").await.unwrap(),
        canceled_above(&past)
    );
    assert_eq!(
        w.withdrawal_reason("BELOW").await.unwrap(),
        canceled_above("below")
    );

    // At its deadline: withdrawn, not lapsed.
    let queued = w.fire(plus_secs(t0(), 3601)).await;
    assert!(queued.is_empty(), "no lapse task: {queued:?}");
    assert_eq!(w.status(&past_exp).await, "withdrawn");
    assert_eq!(
        w.withdrawal_reason(&past_exp).await.unwrap(),
        canceled_above(&past)
    );
    assert!(w.lapse_tasks().await.is_empty());
    assert!(agent.sent_message_ids().is_empty(), "nothing sent");
}

/// A descendant past the list whose expectation lapsed before its ancestor was canceled: its
/// lapse task, still queued, is not sent: the check before the first send reads the ancestor's
/// record, which shows the cancel, and asks nothing.
#[tokio::test]
async fn a_lapse_task_of_a_descendant_past_the_list_is_not_sent_after_the_cancel() {
    let states = States::default();
    let agent = agent(&states).await;
    let w = world(&agent);
    w.descendants(DESCENDANTS_KEPT + 1).await;
    let past_exp = format!("D-{DESCENDANTS_KEPT:02}");
    let queued = w.fire(plus_secs(t0(), 3601)).await;
    assert_eq!(queued.len(), DESCENDANTS_KEPT + 1, "every D lapsed");
    let entry = queued
        .iter()
        .find(|e| e.expectation_id.as_str() == past_exp)
        .expect("the lapse task of the one past the list")
        .clone();
    assert_eq!(entry.origin_lineage, ["task-1"]);
    w.push(cancel("task-1"), plus_secs(t0(), 3700)).await;
    assert!(
        !w.reconciler.check_before_send(&entry).await.unwrap(),
        "not to be sent"
    );
    let stored = get(&w.store, &entry).await;
    assert_eq!(stored.delivery, DeliveryState::Withdrawn);
    let why = stored.last_error.unwrap();
    assert!(
        why.contains("\"task-1\"") && why.contains("TASK_STATE_CANCELED"),
        "{why}"
    );
    assert!(agent.sent_message_ids().is_empty(), "nothing sent");
}
