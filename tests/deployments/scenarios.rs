//! The scenarios, each written once against [`Deployment`] and the [`Fixture`]'s agents, each
//! with its own agent, expectation ids and subjects so that they run side by side on one
//! deployment. Deadlines are a few seconds ahead; waits are bounded by
//! [`Deployment::patience`].

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use a2a_types::TaskState;
use jiff::Timestamp;
use serde_json::{json, Value};
use watcher_delivery::testing::CaptureAgent;

use super::harness::{Deployment, Fixture, HOOK_SOURCE, HOOK_TOKEN, TEACHER_ID};
use crate::common::*;

#[path = "scenarios/delivery.rs"]
mod delivery;
#[path = "scenarios/incidents.rs"]
mod incidents;
#[path = "scenarios/lanes.rs"]
mod lanes;
use delivery::{
    agents_independent, follow_without_push, kill_the_sender_mid_send, notify_a_person,
    reconcile_a_cancel_never_pushed, retry_a_failed_lapse_task, slow_neighbour,
    withdraw_along_the_lineage,
};
use incidents::{a_grace_swallows_a_short_delay, page_and_resolve_through_a_restart};
use lanes::{
    a_backlog_leaves_others_on_time, a_followed_lapse_task_ends_without_push,
    one_agent_at_serves_pace,
};

/// A scenario's body.
pub type Run = fn(Arc<Deployment>, Arc<Fixture>) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// One scenario: its name, its body, and why it skips on aws-local, if it does.
pub struct Scenario {
    /// The scenario's name, as printed.
    pub name: &'static str,
    /// The body.
    pub run: Run,
    /// `Some(reason)`: reported skipped on aws-local with the reason (`common::skip`) instead of
    /// running there.
    pub skip_on_aws: Option<&'static str>,
    /// Runs after the others, alone (it kills the deployment's sender).
    pub alone: bool,
}

macro_rules! scenario {
    ($f:ident) => {
        scenario!($f, None, false)
    };
    ($f:ident, $skip:expr, $alone:expr) => {
        Scenario {
            name: stringify!($f),
            run: |d, f| Box::pin($f(d, f)),
            skip_on_aws: $skip,
            alone: $alone,
        }
    };
}

/// Every scenario of the suite.
pub fn all() -> Vec<Scenario> {
    vec![
        scenario!(raise),
        scenario!(the_example_agent_gets_its_lapse_task),
        scenario!(satisfy_in_time),
        scenario!(lapse_each_kind),
        scenario!(withdraw),
        scenario!(retry_a_failed_lapse_task),
        scenario!(slow_neighbour),
        scenario!(carrier_webhook),
        scenario!(operator_routes),
        scenario!(agents_independent),
        scenario!(reconcile_a_cancel_never_pushed),
        scenario!(withdraw_along_the_lineage),
        scenario!(follow_without_push),
        scenario!(notify_a_person),
        scenario!(a_grace_swallows_a_short_delay),
        scenario!(a_lesson_whose_end_is_noticed),
        scenario!(a_followed_lapse_task_ends_without_push),
        scenario!(kill_the_sender_mid_send, None, true),
        // Alone: it restarts what holds the notifier.
        scenario!(page_and_resolve_through_a_restart, None, true),
        // Measurements of one agent's pace and of a backlog beside another: alone, so that the
        // other scenarios neither slow them nor wait behind them.
        scenario!(one_agent_at_serves_pace, None, true),
        scenario!(a_backlog_leaves_others_on_time, None, true),
    ]
}

/// Pushes to `agent` one expectation `id` from task `task` about shipment `shipment`, due `due`
/// with no grace ([`one_expectation`]), and asserts the watcher raised it.
async fn raise_one(
    d: &Deployment,
    agent: &str,
    (task, id, shipment): (&str, &str, &str),
    due: Timestamp,
) {
    let a = d
        .push(agent, &one_expectation(task, id, shipment, due, "PT0S"))
        .await;
    assert_eq!(a.body["raised"], json!([id]), "{a:?}");
}

/// The `SendMessage` messageIds `agent` received for expectation `id`.
fn sent_for(agent: &CaptureAgent, id: &str) -> Vec<String> {
    let prefix = format!("lapse:{id}:");
    agent
        .sent_message_ids()
        .into_iter()
        .filter(|m| m.starts_with(&prefix))
        .collect()
}

/// Waits until `agent` received a lapse task for expectation `id`; its messageId.
async fn first_sent(d: &Deployment, agent: &CaptureAgent, id: &str) -> String {
    let arrived = wait_until(|| async { !sent_for(agent, id).is_empty() }, d.patience()).await;
    assert!(
        arrived,
        "no lapse task for {id} within {:?}\n{}",
        d.patience(),
        d.log_tail().await
    );
    sent_for(agent, id).remove(0)
}

/// The lapse of `id` once `GET /v1/lapses` shows it `delivery` (panics after the patience).
async fn lapse_in(d: &Deployment, agent: &str, id: &str, delivery: &str) -> Value {
    lapse_within(d, agent, id, delivery, d.patience()).await
}

/// [`lapse_in`] waiting up to `patience`.
async fn lapse_within(
    d: &Deployment,
    agent: &str,
    id: &str,
    delivery: &str,
    patience: Duration,
) -> Value {
    match d
        .lapse_within(agent, id, |l| l["delivery"] == delivery, patience)
        .await
    {
        Some(l) => l,
        None => panic!(
            "{id} not {delivery} at GET /v1/lapses: {:#?}\n{}",
            d.lapses_of(agent).await,
            d.log_tail().await
        ),
    }
}

/// A status update of `task`.
fn status_update(task: &str, state: &str) -> Value {
    json!({ "statusUpdate": { "taskId": task, "contextId": format!("ctx-{task}"),
                              "status": { "state": state } } })
}

/// A push raises what is well formed and refuses the rest with a reason (§5, serve.md "Routes"):
/// the answer lists both, the subject shows the record, the rejections route the refusal, and
/// a push without the agent's credential is 401 problem+json.
async fn raise(d: Arc<Deployment>, _f: Arc<Fixture>) {
    let due = plus(Timestamp::now(), 3600);
    let mut body = one_expectation("task-raise", "exp-raise", "PA-raise", due, "PT1H");
    let exps = &mut body["artifactUpdate"]["artifact"]["metadata"][URI]["expectations"];
    let mut bad = exps[0].clone();
    bad["expectationId"] = json!("exp-raise-bad");
    bad["dueAt"] = json!("tomorrow");
    exps.as_array_mut().unwrap().push(bad);

    let a = d.push("kinds", &body).await;
    assert_eq!(a.status, 200, "{a:?}");
    assert_eq!(a.body["raised"], json!(["exp-raise"]), "{a:?}");
    assert_eq!(a.body["withdrawn"], json!([]), "{a:?}");
    assert_eq!(a.body["rejected"][0]["expectationId"], "exp-raise-bad");
    assert!(
        a.body["rejected"][0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("dueAt")),
        "the reason names the field: {a:?}"
    );

    let subject = d.shipment("PA-raise").await.expect("the subject");
    let record = expectation(&subject, "exp-raise");
    assert_eq!(record["status"], "open");
    assert_eq!(record["dueAt"], json!(fmt(due)));
    let rejections = d.get("/v1/agents/kinds/rejections").await;
    assert_eq!(rejections.status, 200, "{rejections:?}");
    assert!(
        rejections.body["rejections"]
            .as_array()
            .is_some_and(|l| l.iter().any(|r| r["expectationId"] == "exp-raise-bad")),
        "{rejections:?}"
    );

    let anonymous = Answer::of(d.http().post(d.url("/v1/agents/kinds/push")).json(&body)).await;
    anonymous.assert_problem(401);
}

/// The example agent (`a2a-watcher example-agent`, registered by its card URL, the card
/// fetched from `/.well-known/agent-card.json`) accepts its lapse task and prints it, once; the
/// lapse is `sent` with the agent's task.
async fn the_example_agent_gets_its_lapse_task(d: Arc<Deployment>, f: Arc<Fixture>) {
    let due = origin(Duration::from_secs(2));
    raise_one(
        &d,
        "example",
        ("task-example", "exp-example", "PA-example"),
        due,
    )
    .await;
    let printed = format!(
        "agent <- lapse task lapse:exp-example:overdue:{} ",
        fmt(due)
    );
    let count = || {
        f.example
            .lines()
            .iter()
            .filter(|l| l.starts_with(&printed))
            .count()
    };
    let lapse = lapse_in(&d, "example", "exp-example", "sent").await;
    assert!(lapse["taskId"].is_string(), "{lapse:#}");
    assert!(
        holds_for(|| async { count() == 1 }, Duration::from_secs(1)).await,
        "the example agent printed the lapse task once: {:?}",
        f.example.lines()
    );
}

/// The deadlines [`before_the_deadline`] tries, seconds ahead: the first is what the scenarios
/// need on an idle machine; the later ones are for a loaded one.
const MARGINS: [u64; 3] = [15, 45, 120];

/// Runs `setup(suffix, due)` with a deadline [`MARGINS`] ahead until `setup` returns before its
/// deadline; the `suffix` (empty, then `-a1`, `-a2`) makes each attempt's ids its own, so an
/// attempt that ran past its deadline (its expectations lapse, as they should) does not touch
/// the next. Returns the suffix and the deadline of the attempt that was in time.
///
/// Why: a scenario that shows what happens *before* a deadline (a fact in time, a cancel in
/// time) has nothing to assert when its own setup took past the deadline. On aws-local every
/// scenario's first pushes queue at one function instance over an emulator that serves one
/// request at a time; that took 7 s in one CI run and more than 15 s in another.
async fn before_the_deadline<F, Fut>(scenario: &str, setup: F) -> (String, Timestamp)
where
    F: FnMut(String, Timestamp) -> Fut,
    Fut: Future<Output = ()>,
{
    before_one_of(scenario, &MARGINS, setup).await
}

/// [`before_the_deadline`] with the deadlines `margins` seconds ahead.
async fn before_one_of<F, Fut>(scenario: &str, margins: &[u64], mut setup: F) -> (String, Timestamp)
where
    F: FnMut(String, Timestamp) -> Fut,
    Fut: Future<Output = ()>,
{
    for (attempt, &margin) in margins.iter().enumerate() {
        let suffix = match attempt {
            0 => String::new(),
            n => format!("-a{n}"),
        };
        let due = origin(Duration::from_secs(margin));
        setup(suffix.clone(), due).await;
        let done = Timestamp::now();
        if done < due {
            return (suffix, due);
        }
        eprintln!(
            "[{scenario}] the setup ended at {}, past its deadline {} ({margin} s ahead): again \
             with a longer one",
            fmt(done),
            fmt(due)
        );
    }
    panic!("[{scenario}] the setup never ended before its deadline: {margins:?} s ahead")
}

/// A setup that ends past its first deadline is run again, with the next deadline and ids of
/// its own; the answer is the attempt that was in time.
#[tokio::test]
async fn a_setup_past_its_deadline_runs_again_with_the_next() {
    let calls = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = calls.clone();
    let (suffix, due) = before_one_of("test", &[1, 4], move |suffix, due| {
        let seen = seen.clone();
        async move {
            assert!(
                due > Timestamp::now(),
                "each attempt's deadline is ahead at its start"
            );
            let first = suffix.is_empty();
            seen.lock().unwrap().push(suffix);
            if first {
                tokio::time::sleep(Duration::from_millis(2100)).await;
            }
        }
    })
    .await;
    assert_eq!(suffix, "-a1");
    assert_eq!(*calls.lock().unwrap(), ["", "-a1"]);
    assert!(due > Timestamp::now());
}

/// A fact before the deadline satisfies the expectation and no lapse task is ever sent for it,
/// while its sibling, due at the same instant and never satisfied, lapses (§9.1 overdue).
async fn satisfy_in_time(d: Arc<Deployment>, f: Arc<Fixture>) {
    let (suffix, due) = before_the_deadline("satisfy_in_time", |suffix, due| {
        let d = d.clone();
        async move {
            for (task, id, shipment) in [
                ("task-timely-1", "exp-timely-met", "PA-timely-1"),
                ("task-timely-2", "exp-timely-late", "PA-timely-2"),
            ] {
                let (task, id) = (format!("{task}{suffix}"), format!("{id}{suffix}"));
                let shipment = format!("{shipment}{suffix}");
                let a = d
                    .push(
                        "timely",
                        &one_expectation(&task, &id, &shipment, due, "PT1S"),
                    )
                    .await;
                assert_eq!(a.body["raised"], json!([id]), "{a:?}");
            }
            let key = format!("shipment.manifest.received:PA-timely-1{suffix}");
            let fact = json!({
                "factKey": key,
                "observedAt": fmt(Timestamp::from_second(Timestamp::now().as_second()).unwrap()),
                "subject": { "type": "shipment", "id": format!("PA-timely-1{suffix}") },
            });
            let a = d.report(&fact).await;
            assert_eq!(
                a.body,
                json!({ "results": [{ "factKey": key,
                                      "satisfied": [format!("exp-timely-met{suffix}")] }] }),
                "{a:?}"
            );
        }
    })
    .await;
    let (met, late) = (
        format!("exp-timely-met{suffix}"),
        format!("exp-timely-late{suffix}"),
    );

    let sent = first_sent(&d, &f.timely, &late).await;
    assert_eq!(sent, format!("lapse:{late}:overdue:{}", fmt(due)));
    assert!(
        holds_for(
            || async { sent_for(&f.timely, &met).is_empty() },
            Duration::from_secs(2)
        )
        .await,
        "a satisfied expectation got a lapse task: {:?}",
        f.timely.sent_message_ids()
    );
    let lapses = d.lapses_of("timely").await;
    assert!(
        lapses.iter().all(|l| l["expectationId"] != met.as_str()),
        "{lapses:#?}"
    );
    let subject = d
        .shipment(&format!("PA-timely-1{suffix}"))
        .await
        .expect("the subject");
    assert_eq!(expectation(&subject, &met)["status"], "satisfied");
}

/// Each kind of lapse of §9.1, once: the worked example of §8 on compressed times: the manifest
/// lapses overdue; the departure reported then reveals it skipped; the arrival (re-anchored on
/// the departure) lapses overdue, then stalled at its horizon.
async fn lapse_each_kind(d: Arc<Deployment>, f: Arc<Fixture>) {
    const MANIFEST: &str = "exp-01J8Q0MANIFEST";
    const DEPART: &str = "exp-01J8Q0DEPART";
    const ARRIVE: &str = "exp-01J8Q0ARRIVE";
    // The departure must be reported before the arrival's projected deadline, after the
    // manifest's lapse task arrived: a push, a lapse and a fact, which on a loaded aws-local
    // took more than 15 s. The arrival's horizon is what the scenario waits for at its end.
    let t0 = origin(Duration::from_millis(500));
    let times = BookingTimes {
        manifest_due: plus(t0, 1),
        departure_due: plus(t0, 90),
        arrival_due: plus(t0, 30),
        arrival_horizon: plus(t0, 32),
    };
    // With a W3C traceparent: every lapse task it causes carries its trace id
    // (docs/howto/tracing.md).
    const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    let a = Answer::of(
        d.http()
            .post(d.url("/v1/agents/kinds/push"))
            .header(
                "X-A2A-Notification-Token",
                super::harness::push_token("kinds"),
            )
            .header("traceparent", format!("00-{TRACE}-00f067aa0ba902b7-01"))
            .json(&booking_artifact(times)),
    )
    .await;
    assert_eq!(a.body["raised"], json!([MANIFEST, DEPART, ARRIVE]), "{a:?}");

    first_sent(&d, &f.kinds, MANIFEST).await;
    let observed = Timestamp::from_second(Timestamp::now().as_second()).unwrap();
    let a = d.report(&departure_fact(SHIPMENT, observed)).await;
    assert_eq!(a.body["results"][0]["satisfied"], json!([DEPART]), "{a:?}");
    let reported = Timestamp::now();
    assert!(
        reported < times.arrival_due,
        "inconclusive: the departure was reported at {}, past the arrival's projected deadline \
         {}, so the arrival was never re-anchored in time",
        fmt(reported),
        fmt(times.arrival_due)
    );

    let kinds = || {
        let mut k: Vec<(String, String)> = f
            .kinds
            .requests()
            .iter()
            .filter(|r| r.rpc_method().as_deref() == Some("SendMessage"))
            .map(|r| {
                let b = lapse_block(r);
                (
                    b["expectationId"].as_str().unwrap_or("").to_owned(),
                    b["lapse"].as_str().unwrap_or("").to_owned(),
                )
            })
            .collect();
        k.sort();
        k
    };
    let want: Vec<(String, String)> = [
        (ARRIVE, "overdue"),
        (ARRIVE, "stalled"),
        (MANIFEST, "overdue"),
        (MANIFEST, "skipped"),
    ]
    .iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    // The stalled lapse comes at the horizon, which may be well ahead still.
    let until_horizon = Duration::try_from(times.arrival_horizon.duration_since(Timestamp::now()))
        .unwrap_or(Duration::ZERO);
    let all = wait_until(
        || async { kinds().len() >= 4 },
        d.patience() + until_horizon,
    )
    .await;
    assert!(all, "{:?}\n{}", kinds(), d.log_tail().await);
    assert!(
        holds_for(|| async { kinds().len() == 4 }, Duration::from_secs(1)).await,
        "no fifth lapse task: {:?}",
        kinds()
    );
    assert_eq!(kinds(), want);
    for r in f.kinds.requests() {
        if r.rpc_method().as_deref() == Some("SendMessage") {
            let tp = r
                .header("traceparent")
                .and_then(watcher_core::trace::TraceParent::parse);
            assert_eq!(
                tp.map(|t| t.trace_id_hex()).as_deref(),
                Some(TRACE),
                "{r:?}"
            );
        }
    }
    let skipped = f
        .kinds
        .requests()
        .iter()
        .map(lapse_block)
        .find(|b| b["lapse"] == "skipped")
        .expect("the skipped lapse");
    assert_eq!(skipped["satisfiedAfter"], json!([DEPART]), "{skipped:#}");
    assert_eq!(
        skipped["dueAt"],
        json!(fmt(times.manifest_due)),
        "{skipped:#}"
    );
    let subject = d.shipment(SHIPMENT).await.expect("the subject");
    assert_eq!(expectation(&subject, DEPART)["status"], "satisfied");
    assert_eq!(
        expectation(&subject, ARRIVE)["dueAt"],
        json!(fmt(plus(observed, 1))),
        "re-anchored on the departure's observedAt"
    );
}

/// The origin task canceled by push withdraws what it raised (§7): the push's answer says so,
/// the record is `withdrawn`, and no lapse task is sent for it, while a sibling raised by another
/// task and due at the same instant lapses.
async fn withdraw(d: Arc<Deployment>, f: Arc<Fixture>) {
    let (suffix, _) = before_the_deadline("withdraw", |suffix, due| {
        let d = d.clone();
        async move {
            for (task, id, shipment) in [
                ("task-wd-1", "exp-wd", "PA-wd-1"),
                ("task-wd-2", "exp-wd-control", "PA-wd-2"),
            ] {
                let (task, id) = (format!("{task}{suffix}"), format!("{id}{suffix}"));
                let shipment = format!("{shipment}{suffix}");
                let a = d
                    .push(
                        "withdraw",
                        &one_expectation(&task, &id, &shipment, due, "PT1S"),
                    )
                    .await;
                assert_eq!(a.body["raised"], json!([id]), "{a:?}");
            }
            let a = d
                .push(
                    "withdraw",
                    &status_update(&format!("task-wd-1{suffix}"), "TASK_STATE_CANCELED"),
                )
                .await;
            assert_eq!(a.status, 200, "{a:?}");
            assert_eq!(
                a.body["withdrawn"],
                json!([format!("exp-wd{suffix}")]),
                "{a:?}"
            );
        }
    })
    .await;
    let (withdrawn, control) = (format!("exp-wd{suffix}"), format!("exp-wd-control{suffix}"));
    let subject = d
        .shipment(&format!("PA-wd-1{suffix}"))
        .await
        .expect("the subject");
    assert_eq!(expectation(&subject, &withdrawn)["status"], "withdrawn");

    first_sent(&d, &f.withdraw, &control).await;
    assert!(
        holds_for(
            || async { sent_for(&f.withdraw, &withdrawn).is_empty() },
            Duration::from_secs(2)
        )
        .await,
        "withdrawn work got a lapse task: {:?}",
        f.withdraw.sent_message_ids()
    );
}

/// A carrier's own JSON at `POST /v1/sources/{id}/webhook` becomes a fact through the source's
/// mapping and satisfies the expectation, recorded with the source's id; redelivery records
/// nothing more; an event no mapping selects is `unmatched`; a wrong token is refused.
async fn carrier_webhook(d: Arc<Deployment>, _f: Arc<Fixture>) {
    let due = plus(Timestamp::now(), 3600);
    let a = d
        .push(
            "hooks",
            &one_expectation("task-hook", "exp-hook", "PA-hook", due, "PT1H"),
        )
        .await;
    assert_eq!(a.body["raised"], json!(["exp-hook"]), "{a:?}");
    let post = |body: Value, token: &'static str| {
        let d = d.clone();
        async move {
            Answer::of(
                d.http()
                    .post(d.url(&format!("/v1/sources/{HOOK_SOURCE}/webhook")))
                    .bearer_auth(token)
                    .json(&body),
            )
            .await
        }
    };
    let event = json!({ "event": "manifest.received", "shipment": "PA-hook",
                        "at": fmt(Timestamp::from_second(Timestamp::now().as_second()).unwrap()) });
    post(event.clone(), "not-a-token").await.assert_problem(401);
    let a = post(event.clone(), HOOK_TOKEN).await;
    assert_eq!(
        a.body,
        json!({ "results": [{ "factKey": "shipment.manifest.received:PA-hook",
                              "satisfied": ["exp-hook"] }] }),
        "{a:?}"
    );
    let again = post(event, HOOK_TOKEN).await;
    assert_eq!(again.status, 200, "{again:?}");
    let subject = d.shipment("PA-hook").await.expect("the subject");
    assert_eq!(expectation(&subject, "exp-hook")["status"], "satisfied");
    let facts = subject["facts"].as_array().expect("facts");
    assert_eq!(facts.len(), 1, "redelivery is a no-op: {subject:#}");
    assert_eq!(facts[0]["source"], HOOK_SOURCE);
    let other = post(json!({ "event": "label.printed" }), HOOK_TOKEN).await;
    assert_eq!(
        other.body,
        json!({ "results": [], "unmatched": true }),
        "{other:?}"
    );
}

/// The operator's routes agree about a lapse: `GET /v1/subjects/{type}/{id}` (an id holding
/// `/`, percent-encoded), `GET /v1/lapses` and `GET /v1/agents`; unknown subjects are 404 and a
/// missing credential 401, both problem+json.
async fn operator_routes(d: Arc<Deployment>, _f: Arc<Fixture>) {
    let due = origin(Duration::from_secs(2));
    raise_one(&d, "ops", ("task-ops", "exp-ops", "PA-ops/leg-2"), due).await;
    let lapse = lapse_in(&d, "ops", "exp-ops", "sent").await;
    assert_eq!(
        lapse["messageId"],
        json!(format!("lapse:exp-ops:overdue:{}", fmt(due)))
    );
    assert_eq!(lapse["lapse"], "overdue");
    assert_eq!(lapse["agent"], "ops");
    assert!(lapse["taskId"].is_string(), "{lapse:#}");

    let subject = d.get("/v1/subjects/shipment/PA-ops%2Fleg-2").await;
    assert_eq!(subject.status, 200, "{subject:?}");
    assert_eq!(
        subject.body["subject"],
        json!({ "type": "shipment", "id": "PA-ops/leg-2" })
    );
    let record = expectation(&subject.body, "exp-ops");
    assert_eq!(record["status"], "open");
    assert_eq!(record["lapses"][0]["lapse"], "overdue", "{record:#}");

    let agents = d.get("/v1/agents?limit=100").await;
    assert_eq!(agents.status, 200, "{agents:?}");
    let ops = agents.body["agents"]
        .as_array()
        .and_then(|l| l.iter().find(|a| a["agentId"] == "ops").cloned())
        .unwrap_or_else(|| panic!("ops is not listed: {agents:?}"));
    assert_eq!(ops["delivery"], "ok", "{ops:#}");

    d.get("/v1/subjects/shipment/PA-nothing-here")
        .await
        .assert_problem(404);
    Answer::of(d.http().get(d.url("/v1/lapses")))
        .await
        .assert_problem(401);
}

/// A lesson's end is noticed (expectations-v1 §16; docs/howto/lesson-review.md): a lesson
/// taught with `expiresAt` raises `lesson.review` on the lesson, raised by the Learnables
/// authority; nobody looks again by then, so it lapses `overdue`, the channel tells it once, and
/// its lapse task is listed `unaddressed` (no agent receives it). A second lesson into another
/// entry, with an expiry, is changed again in time: its review is satisfied and never told.
async fn a_lesson_whose_end_is_noticed(d: Arc<Deployment>, f: Arc<Fixture>) {
    // Four requests must land before the lessons' end (alhamra's is looked at again in time).
    let (suffix, expires) =
        before_the_deadline("a_lesson_whose_end_is_noticed", |suffix, expires| {
            let d = d.clone();
            async move {
                teach_two_lessons_ending_at(&d, &format!("review-desk{suffix}"), expires).await;
            }
        })
        .await;
    let definition = format!("review-desk{suffix}");

    let northgate = format!(
        "lapse:lesson.review:{definition}/customers/northgate@2:overdue:{}",
        fmt(expires)
    );
    let told = |mid: &str| f.lapses_told(mid);
    let patience = d.patience() + Duration::from_secs(30);
    assert!(
        wait_until(|| async { !told(&northgate).is_empty() }, patience).await,
        "no notification of {northgate} within {patience:?}: {:?}\n{}",
        f.notified.seen(),
        d.log_tail().await
    );
    let n = &told(&northgate)[0];
    assert_eq!(n.body["data"]["agent"], "learnables-authority");
    assert_eq!(n.body["data"]["block"]["subject"]["type"], "lesson");
    assert_eq!(
        n.body["data"]["block"]["subject"]["id"],
        format!("{definition}/customers/northgate@2")
    );
    let ours = format!(":{definition}/");
    let lapses: Vec<Value> = d
        .lapses_of("learnables-authority")
        .await
        .into_iter()
        .filter(|l| l["messageId"].as_str().is_some_and(|m| m.contains(&ours)))
        .collect();
    assert_eq!(
        lapses.len(),
        1,
        "only northgate's review lapsed: {lapses:?}"
    );
    assert_eq!(lapses[0]["delivery"], "unaddressed", "{lapses:?}");
    let alhamra = format!(
        "lapse:lesson.review:{definition}/customers/alhamra@3:overdue:{}",
        fmt(expires)
    );
    assert!(
        holds_for(
            || async { told(&northgate).len() == 1 && told(&alhamra).is_empty() },
            Duration::from_secs(3)
        )
        .await,
        "northgate told once, alhamra never: {:?}",
        f.notified.seen()
    );
}

/// Defines `definition` (two customers) and teaches a lesson into each, both ending at
/// `expires` (versions 2 and 3), then looks at alhamra's again (version 4) so that only
/// northgate's review is left open; the history shows the end.
async fn teach_two_lessons_ending_at(d: &Deployment, definition: &str, expires: Timestamp) {
    let body = json!({
        "collections": { "customers": {
            "learnable": "marks", "entry": "customer",
            "teaches": "which customer a message belongs to",
            "entries": {
                "northgate": { "label": "Northgate Motors", "value": { "marks": [
                    { "pattern": "@northgate-motors\\.example", "where": "from" } ] } },
                "alhamra": { "label": "Al Hamra Trading", "value": { "marks": [
                    { "pattern": "alhamra\\.example" } ] } }
            }
        } },
        "taughtBy": TEACHER_ID,
        "reason": "the two customers of the pre-alert desk"
    });
    let path = format!("/v1/definitions/{definition}");
    let put = d.as_teacher(reqwest::Method::PUT, &path, &body).await;
    assert_eq!(put.status, 201, "{put:?}");
    let lessons = format!("{path}/lessons");
    let lesson = |entry: &str, pattern: &str| {
        json!({
            "collection": "customers", "entry": entry,
            "value": { "pattern": pattern, "where": "from" },
            "taughtBy": TEACHER_ID,
            "reason": "until the new billing desk takes over",
            "expiresAt": fmt(expires),
        })
    };
    let taught = d
        .as_teacher(
            reqwest::Method::POST,
            &lessons,
            &lesson("northgate", "billing@origin\\.example"),
        )
        .await;
    assert_eq!(taught.status, 200, "{taught:?}");
    assert_eq!(taught.body["definitionVersion"], 2, "{taught:?}");
    let other = d
        .as_teacher(
            reqwest::Method::POST,
            &lessons,
            &lesson("alhamra", "desk@alhamra\\.example"),
        )
        .await;
    assert_eq!(other.body["definitionVersion"], 3, "{other:?}");
    // alhamra's lesson is looked at again in time: a later lesson into it closes its review.
    let again = d
        .as_teacher(
            reqwest::Method::POST,
            &lessons,
            &json!({
                "collection": "customers", "entry": "alhamra",
                "value": { "pattern": "ops@alhamra\\.example", "where": "from" },
                "taughtBy": TEACHER_ID,
            }),
        )
        .await;
    assert_eq!(again.body["definitionVersion"], 4, "{again:?}");
    let history = d.get(&format!("{path}/history")).await;
    assert_eq!(
        history.body["history"][2]["expiresAt"],
        fmt(expires),
        "{history:?}"
    );
}
