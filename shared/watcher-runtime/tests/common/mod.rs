//! Scenario builders for the watcher's integration tests: an agent with the booking card, steps
//! built from compact calls, and a run through `watcher_runtime::replay::run` on a fresh
//! `MemoryStore` (contracts/replay.md).
#![allow(
    dead_code,
    reason = "each test binary uses its own part of this module"
)]

use std::sync::Arc;

use serde_json::{json, Value};
use watcher_core::card::declaration_from_card;
use watcher_core::engine::{AgentProfile, Input, Origin, PushItem};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, TaskId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::replay;
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;

/// The extension URI (expectations-v1, header).
pub const URI: &str = "https://rsaxb.com/a2a/expectations/v1";

/// The booking card of the worked example (examples/booking-card.json).
pub const BOOKING_CARD: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../examples/booking-card.json"
));

/// The default subject of [`exp`]: `shipment PA-1`.
pub const SUBJECT_ID: &str = "PA-1";

/// The origin task of the artifacts [`Scenario::raise`] pushes.
pub const TASK: &str = "task-1";

/// The context of the artifacts [`Scenario::raise`] pushes.
pub const CTX: &str = "ctx-1";

/// The reporter of the facts [`Scenario::report`] and [`Scenario::seen`] send.
pub const FEED: &str = "carrier-feed:test";

/// The default subject of [`exp`], as [`Scenario::fact`] takes it.
pub const SHIP: Option<(&str, &str)> = Some(("shipment", SUBJECT_ID));

/// `t("10T02:00")` = `"2026-09-10T02:00:00Z"`; `t("10T02:00:30")` keeps the seconds.
pub fn t(short: &str) -> String {
    let (day, clock) = short.split_once('T').expect("DDTHH:MM");
    let clock = if clock.len() == 5 {
        format!("{clock}:00")
    } else {
        clock.to_owned()
    };
    format!("2026-09-{day}T{clock}Z")
}

/// The booking card, as JSON.
pub fn booking_card() -> Value {
    serde_json::from_str(BOOKING_CARD).expect("booking card is JSON")
}

/// An expectation under construction (expectations-v1 §8).
#[derive(Debug, Clone)]
pub struct Exp(pub Value);

/// An expectation `id` on `shipment PA-1`, kind `shipment.manifest`, satisfied by
/// `done:{id}`, due at `due` (see [`t`]), basis `observed`, no grace.
pub fn exp(id: &str, due: &str) -> Exp {
    Exp(json!({
        "expectationId": id,
        "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": SUBJECT_ID },
        "expects": format!("step {id}"),
        "satisfiedBy": { "factKey": key_of(id) },
        "dueAt": due,
        "basis": "observed",
    }))
}

/// The default fact key of [`exp`]`(id, ..)`.
pub fn key_of(id: &str) -> String {
    format!("done:{id}")
}

impl Exp {
    /// Sets any field to any value (also for malformed input).
    pub fn set(mut self, field: &str, value: Value) -> Self {
        self.0[field] = value;
        self
    }
    pub fn kind(self, kind: &str) -> Self {
        self.set("kind", json!(kind))
    }
    pub fn subject(self, subject_type: &str, id: &str) -> Self {
        self.set("subject", json!({ "type": subject_type, "id": id }))
    }
    pub fn key(self, key: &str) -> Self {
        self.set("satisfiedBy", json!({ "factKey": key }))
    }
    pub fn grace(self, grace: &str) -> Self {
        self.set("grace", json!(grace))
    }
    pub fn after(self, ids: &[&str]) -> Self {
        self.set("after", json!(ids))
    }
    pub fn anchor(self, id: &str, offset: &str) -> Self {
        self.set("anchor", json!({ "expectationId": id, "offset": offset }))
    }
    pub fn horizon(self, horizon: &str) -> Self {
        self.set("horizon", json!(horizon))
    }
    pub fn supersedes(self, id: &str) -> Self {
        self.set("supersedes", json!(id))
    }
    /// Supersedes `predecessor`, waiting on its default fact key ([`key_of`]`(predecessor)`).
    pub fn succeeds(self, predecessor: &str) -> Self {
        self.key(&key_of(predecessor)).supersedes(predecessor)
    }
    pub fn json(&self) -> Value {
        self.0.clone()
    }
}

/// Question `id` of `task`, due at `due` with no grace: kind `question.answer` on `task`, basis
/// `declared`; the task's next answering status satisfies it (`task.answered:{task}`).
pub fn question(id: &str, task: &str, due: &str) -> Exp {
    exp(id, due)
        .kind("question.answer")
        .subject("task", task)
        .key(&format!("task.answered:{task}"))
        .set("basis", json!("declared"))
}

/// Question `Q` of `task`, due 04:00 with an hour's grace: it lapses `overdue` at 05:00; the
/// task's next answering status satisfies it (`task.answered:{task}`).
pub fn question_of(task: &str) -> Exp {
    question("Q", task, &t("10T04:00")).grace("PT1H")
}

/// [`scenario`] with `task-q` asking [`question_of`]`("task-q")` at 2026-09-10T01:00:00Z in
/// [`CTX`], its status stamped `timestamp`.
pub fn asked(timestamp: Option<&str>) -> Scenario {
    scenario().ask(&t("10T01:00"), timestamp)
}

/// The `satisfaction` of a question of `task-q` answered on time by its task's status: the
/// watcher's lifecycle fact `task.answered:task-q`, satisfied at `satisfied_at`, observed at
/// `observed_at` (expectations-v1 §11).
pub fn lifecycle_answer(satisfied_at: &str, observed_at: &str) -> Value {
    json!({
        "factKey": "task.answered:task-q",
        "source": "watcher:task-lifecycle",
        "satisfiedAt": satisfied_at,
        "observedAt": observed_at,
        "late": false,
    })
}

/// One lapse `(expectationId, lapse, at)` as [`Outcome::lapses`] lists it.
pub fn lapse(id: &str, kind: &str, at: &str) -> (String, String, String) {
    (id.to_owned(), kind.to_owned(), at.to_owned())
}

/// `metadata` carrying `{URI: {"expectations": [...]}}`, for a status message asking a question.
pub fn question_metadata(exps: &[Exp]) -> Value {
    json!({ URI: { "expectations": exps.iter().map(Exp::json).collect::<Vec<_>>() } })
}

/// A scenario (contracts/replay.md) under construction.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub doc: Value,
    artifacts: u32,
}

/// Start 2026-09-10T00:00:00Z, until 2026-09-14T00:00:00Z, one agent `booking` in tenant
/// `default` with the booking card, no steps.
pub fn scenario() -> Scenario {
    Scenario {
        doc: json!({
            "start": t("10T00:00"),
            "until": t("14T00:00"),
            "agents": [ { "id": "booking", "tenant": "default", "card": booking_card() } ],
            "steps": [],
        }),
        artifacts: 0,
    }
}

/// [`scenario`] with one artifact of [`TASK`] in [`CTX`] raising `exps` at 2026-09-10T01:00:00Z.
pub fn raised(exps: &[Exp]) -> Scenario {
    scenario().raise(&t("10T01:00"), exps)
}

impl Scenario {
    pub fn until(mut self, until: &str) -> Self {
        self.doc["until"] = json!(until);
        self
    }

    pub fn settings(mut self, settings: Value) -> Self {
        self.doc["settings"] = settings;
        self
    }

    /// Puts the `booking` agent in `tenant`.
    pub fn tenant(mut self, tenant: &str) -> Self {
        self.doc["agents"][0]["tenant"] = json!(tenant);
        self
    }

    /// Sets `keepsTime` on the `booking` agent's card.
    pub fn keeps_time(mut self, keeps: bool) -> Self {
        let ext = &mut self.doc["agents"][0]["card"]["capabilities"]["extensions"][0];
        ext["params"]["keepsTime"] = json!(keeps);
        self
    }

    fn step(mut self, step: Value) -> Self {
        self.doc["steps"].as_array_mut().expect("steps").push(step);
        self
    }

    /// A raw push of `event` (a StreamResponse) by `booking`.
    pub fn push_event(self, at: &str, event: Value) -> Self {
        self.step(json!({ "at": at, "push": { "agent": "booking", "event": event } }))
    }

    /// An `artifactUpdate` whose artifact's `metadata[URI]` is `block`.
    pub fn push_block(mut self, at: &str, task: &str, ctx: &str, block: Value) -> Self {
        self.artifacts += 1;
        let artifact_id = format!("artifact-{}", self.artifacts);
        self.push_event(
            at,
            json!({ "artifactUpdate": {
                "taskId": task,
                "contextId": ctx,
                "artifact": {
                    "artifactId": artifact_id,
                    "parts": [ { "text": "an artifact" } ],
                    "extensions": [URI],
                    "metadata": { URI: block },
                },
            } }),
        )
    }

    /// An artifact of `task` in `ctx` raising `exps`.
    pub fn push_artifact(self, at: &str, task: &str, ctx: &str, exps: &[Exp]) -> Self {
        let list: Vec<Value> = exps.iter().map(Exp::json).collect();
        self.push_block(at, task, ctx, json!({ "expectations": list }))
    }

    /// An artifact of [`TASK`] in [`CTX`] raising `exps`.
    pub fn raise(self, at: &str, exps: &[Exp]) -> Self {
        self.push_artifact(at, TASK, CTX, exps)
    }

    /// An artifact of `task-lapse` (a task the lapse task started, not the predecessor's origin)
    /// in [`CTX`] raising `exps`.
    pub fn raise_in_lapse_task(self, at: &str, exps: &[Exp]) -> Self {
        self.push_artifact(at, "task-lapse", CTX, exps)
    }

    /// An artifact of [`TASK`] in [`CTX`] raising `exps` and carrying `facts` (a JSON list of
    /// facts the agent reports itself, semantics.md "Facts").
    pub fn raise_carrying(self, at: &str, exps: &[Exp], facts: Value) -> Self {
        let list: Vec<Value> = exps.iter().map(Exp::json).collect();
        self.push_block(
            at,
            TASK,
            CTX,
            json!({ "expectations": list, "facts": facts }),
        )
    }

    /// An artifact of `task` withdrawing `ids` explicitly (§8.1).
    pub fn push_withdraw(
        self,
        at: &str,
        task: &str,
        ctx: &str,
        ids: &[&str],
        reason: &str,
    ) -> Self {
        self.push_block(at, task, ctx, json!({ "withdraw": ids, "reason": reason }))
    }

    /// A `statusUpdate` of `task` to `state`, with an optional `status.timestamp` and an optional
    /// status message carrying `metadata`.
    pub fn push_status(
        self,
        at: &str,
        task: &str,
        ctx: &str,
        state: &str,
        timestamp: Option<&str>,
        metadata: Option<Value>,
    ) -> Self {
        let mut status = json!({ "state": state });
        if let Some(ts) = timestamp {
            status["timestamp"] = json!(ts);
        }
        if let Some(m) = metadata {
            status["message"] = json!({
                "messageId": format!("status-{task}-{at}"),
                "role": "ROLE_AGENT",
                "parts": [ { "text": "a status" } ],
                "metadata": m,
            });
        }
        self.push_event(
            at,
            json!({ "statusUpdate": { "taskId": task, "contextId": ctx, "status": status } }),
        )
    }

    /// A `statusUpdate` of `task` to `state` stamped at its receipt `at`, without a status message.
    pub fn push_state(self, at: &str, task: &str, ctx: &str, state: &str) -> Self {
        self.push_status(at, task, ctx, state, Some(at), None)
    }

    /// A `statusUpdate` of `task` to `state` without a `status.timestamp` or a status message.
    pub fn push_unstamped_state(self, at: &str, task: &str, ctx: &str, state: &str) -> Self {
        self.push_status(at, task, ctx, state, None, None)
    }

    /// A `statusUpdate` of `task` to `state` stamped `timestamp`, without a status message.
    pub fn push_stamped_state(
        self,
        at: &str,
        task: &str,
        ctx: &str,
        state: &str,
        timestamp: &str,
    ) -> Self {
        self.push_status(at, task, ctx, state, Some(timestamp), None)
    }

    /// `task-q` asking [`question_of`]`("task-q")` at `at` in [`CTX`], its status stamped
    /// `timestamp`.
    pub fn ask(self, at: &str, timestamp: Option<&str>) -> Self {
        self.push_stamped_question(at, "task-q", CTX, timestamp, &[question_of("task-q")])
    }

    /// `task-q` (the task [`asked`] asks from) moving to `TASK_STATE_WORKING` at `at`, stamped
    /// `timestamp`.
    pub fn working(self, at: &str, timestamp: &str) -> Self {
        self.push_stamped_state(at, "task-q", CTX, "TASK_STATE_WORKING", timestamp)
    }

    /// `task` moving to `TASK_STATE_INPUT_REQUIRED` stamped at its receipt `at`, its status
    /// message asking `questions`.
    pub fn push_question(self, at: &str, task: &str, ctx: &str, questions: &[Exp]) -> Self {
        self.push_stamped_question(at, task, ctx, Some(at), questions)
    }

    /// `task` moving to `TASK_STATE_INPUT_REQUIRED` with an optional `status.timestamp`, its
    /// status message asking `questions`.
    pub fn push_stamped_question(
        self,
        at: &str,
        task: &str,
        ctx: &str,
        timestamp: Option<&str>,
        questions: &[Exp],
    ) -> Self {
        let state = "TASK_STATE_INPUT_REQUIRED";
        let metadata = Some(question_metadata(questions));
        self.push_status(at, task, ctx, state, timestamp, metadata)
    }

    /// [`FEED`] reporting `done:{id}` (the fact [`exp`]`(id, ..)` waits on) on shipment PA-1,
    /// received at `at` and observed at `observed_at`.
    pub fn report(self, at: &str, id: &str, observed_at: &str) -> Self {
        self.fact(at, &key_of(id), observed_at, SHIP, FEED)
    }

    /// [`FEED`] reporting `shipment.seen:PA-1`, a fact on shipment PA-1 that satisfies nothing,
    /// received at `at` and observed at `observed_at`.
    pub fn seen(self, at: &str, observed_at: &str) -> Self {
        self.fact(at, "shipment.seen:PA-1", observed_at, SHIP, FEED)
    }

    /// As [`Scenario::report`], into `tenant` instead of `default`.
    pub fn report_in(self, tenant: &str, at: &str, id: &str, observed_at: &str) -> Self {
        let mut sc = self.report(at, id, observed_at);
        let steps = sc.doc["steps"].as_array_mut().expect("steps");
        steps.last_mut().expect("the fact")["tenant"] = json!(tenant);
        sc
    }

    /// A fact reported by `reporter` into tenant `default`.
    pub fn fact(
        self,
        at: &str,
        key: &str,
        observed_at: &str,
        subject: Option<(&str, &str)>,
        reporter: &str,
    ) -> Self {
        let mut fact = json!({ "factKey": key, "observedAt": observed_at, "source": reporter });
        if let Some((ty, id)) = subject {
            fact["subject"] = json!({ "type": ty, "id": id });
        }
        self.step(json!({ "at": at, "fact": fact, "reporter": reporter, "tenant": "default" }))
    }

    /// The steps so far.
    pub fn steps(&self) -> &Vec<Value> {
        self.doc["steps"].as_array().expect("steps")
    }

    /// Runs the scenario on a fresh `MemoryStore`.
    pub fn run(&self) -> Outcome {
        Outcome {
            lines: run_doc(&self.doc),
        }
    }
}

/// Runs a scenario document through `replay::run` on a fresh `MemoryStore`.
pub fn run_doc(doc: &Value) -> Vec<Value> {
    try_run_doc(doc).expect("the scenario runs")
}

/// Runs a scenario document, answering the scenario error (location and reason) as text.
pub fn try_run_doc(doc: &Value) -> Result<Vec<Value>, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    rt.block_on(replay::run(doc, Arc::new(MemoryStore::new())))
        .map_err(|e| e.to_string())
}

/// The output lines of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub lines: Vec<Value>,
}

impl Outcome {
    /// Lines of `type`.
    pub fn of_type(&self, ty: &str) -> Vec<&Value> {
        self.lines.iter().filter(|l| l["type"] == ty).collect()
    }

    /// `lapseTask` lines, in order.
    pub fn lapse_tasks(&self) -> Vec<&Value> {
        self.of_type("lapseTask")
    }

    /// The lapse block of every `lapseTask` line, in order.
    pub fn lapse_blocks(&self) -> Vec<&Value> {
        self.lapse_tasks()
            .into_iter()
            .map(|l| &l["request"]["message"]["metadata"][URI]["lapse"])
            .collect()
    }

    /// `(expectationId, lapse, at)` of every `lapseTask` line, in order.
    pub fn lapses(&self) -> Vec<(String, String, String)> {
        self.lapse_tasks()
            .into_iter()
            .map(|l| {
                let b = &l["request"]["message"]["metadata"][URI]["lapse"];
                (s(&b["expectationId"]), s(&b["lapse"]), s(&l["at"]))
            })
            .collect()
    }

    /// The final `record` line's expectations.
    pub fn records(&self) -> &Vec<Value> {
        let last = self.lines.last().expect("at least the record line");
        assert_eq!(last["type"], "record", "the last line is the record");
        last["expectations"].as_array().expect("expectations")
    }

    /// The recorded expectation `id` (panics when it was not recorded).
    pub fn record(&self, id: &str) -> &Value {
        self.records()
            .iter()
            .find(|r| r["expectationId"] == id)
            .unwrap_or_else(|| panic!("{id} is not in the record: {:#?}", self.lines))
    }

    /// Whether `id` was recorded.
    pub fn recorded(&self, id: &str) -> bool {
        self.records().iter().any(|r| r["expectationId"] == id)
    }

    /// `(lapse, lapsedAt)` of the record's lapses of `id`.
    pub fn record_lapses(&self, id: &str) -> Vec<(String, String)> {
        self.record(id)["lapses"]
            .as_array()
            .expect("lapses")
            .iter()
            .map(|l| (s(&l["lapse"]), s(&l["lapsedAt"])))
            .collect()
    }

    /// `(expectationId, reason)` of every `rejected` line.
    pub fn rejections(&self) -> Vec<(String, String)> {
        self.of_type("rejected")
            .into_iter()
            .map(|r| (s(&r["expectationId"]), s(&r["reason"])))
            .collect()
    }

    /// The reasons `id` was refused with.
    pub fn rejection_reasons(&self, id: &str) -> Vec<String> {
        self.rejections()
            .into_iter()
            .filter(|(e, _)| e == id)
            .map(|(_, r)| r)
            .collect()
    }

    /// Asserts that question `Q` ([`question_of`]) went unanswered: still open, lapsed only
    /// `overdue` at its deadline 2026-09-10T05:00:00Z. `case` names the variant in a message.
    pub fn assert_unanswered(&self, case: &str) {
        assert_eq!(self.record("Q")["status"], "open", "{case}");
        let overdue = lapse("Q", "overdue", &t("10T05:00"));
        assert_eq!(self.lapses(), [overdue], "{case}");
    }

    /// The single reason `id` was refused with.
    pub fn rejection(&self, id: &str) -> String {
        let reasons = self.rejection_reasons(id);
        assert_eq!(reasons.len(), 1, "one refusal of {id}: {reasons:?}");
        reasons.into_iter().next().expect("one")
    }
}

/// A JSON string's text, or its JSON form for anything else.
pub fn s(v: &Value) -> String {
    match v {
        Value::String(x) => x.clone(),
        other => other.to_string(),
    }
}

/// `booking` raising expectation `id` on `shipment {subject}`, due at `due`, from `task-1`: a
/// push input for `Watcher::apply` (the card declares `shipment.manifest`).
pub fn raise(id: &str, subject: &str, due: &str) -> Input {
    let card = json!({
        "name": "Booking agent",
        "skills": [{ "id": "handle_lapse", "name": "Handle lapse" }],
        "capabilities": { "extensions": [{
            "uri": watcher_core::EXPECTATIONS_URI,
            "params": {
                "keepsTime": false,
                "lapseSkill": "handle_lapse",
                "kinds": [{ "kind": "shipment.manifest", "subjectType": "shipment",
                            "describes": "the airline manifest", "basis": "observed" }]
            }
        }]}
    });
    let expectation = Expectation::from_json(&json!({
        "expectationId": id,
        "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": subject },
        "expects": "the manifest",
        "satisfiedBy": { "factKey": format!("manifest:{subject}") },
        "dueAt": due,
        "basis": "observed",
    }))
    .expect("expectation");
    Input::Push {
        agent: AgentProfile {
            id: AgentId::parse("booking").expect("agent"),
            declaration: declaration_from_card(&card).expect("card"),
        },
        items: vec![PushItem::Raise {
            origin: Origin {
                task_id: TaskId::parse("task-1").expect("task"),
                context_id: None,
            },
            expectations: vec![Ok(expectation)],
            question_at: None,
            question_timestamp: None,
        }],
    }
}

/// `watcher` applying [`raise`]`(id, subject, due)` into `tenant` at `now`; panics when it fails.
pub async fn apply_raise<S: Store + ?Sized>(
    watcher: &Watcher<S>,
    tenant: &Tenant,
    (id, subject, due): (&str, &str, &str),
    now: Instant,
) {
    watcher
        .apply(tenant, &raise(id, subject, due), now)
        .await
        .unwrap_or_else(|e| panic!("raise {id}: {e:?}"));
}
