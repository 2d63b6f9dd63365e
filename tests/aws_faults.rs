//! Faults together, as AWS makes them (issue 40, item 3), at a small load on the local AWS stack
//! (`bash infra/aws-local.sh --faults SEED:SPEC`): every emulator throttles, fails (500 and
//! 503), cancels transactions as conflicts and loses the answers of writes it applied, and the
//! submitter's and the timer's instances are killed mid-invocation, all at once
//! (docs/howto/aws-local.md, "Faults").
//!
//! 80 expectations over 4 agents, due within 10 seconds of each other; a fifth of them are met
//! by a fact before their deadline. The client retries a 503 or a 429 after its `Retry-After`,
//! as the API asks, and must never see a 500. Every other expectation's lapse task must reach its
//! agent exactly once (by `messageId`), none is lost (`GET /v1/lapses` shows each sent), none is
//! sent twice, and a met expectation gets none.
//!
//! The queues' visibility is capped (`--visibility-timeout-cap`), so a batch a killed instance
//! held comes back in seconds. The seed is `A2A_FAULTS_SEED` when set (a failure prints the one
//! it ran with: run it again with that seed to see the same faults in the emulators).
//!
//! Needs `.venv` with moto and the function binaries, as `tests/aws_local.rs`; without them it
//! says so and passes, unless `CI=true`, where it fails.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use serde_json::{json, Value};
use watcher_delivery::testing::{Behaviour, CaptureAgent};

use common::aws_stack::{aws_missing, skipped};
use common::{entry_toml, expectations_on, fmt, plus, OPERATOR_TOKEN, SOURCE_TOKEN};

/// Agents, and expectations raised on each (in pushes of [`PER_PUSH`]).
const AGENTS: usize = 4;
const PER_AGENT: usize = 20;
const PER_PUSH: usize = 5;
/// Seconds a record held by a killed instance takes to come back.
const VISIBILITY_CAP: u64 = 10;
/// Seconds between sweeps (the template's 5 minutes, scaled down as the visibility is).
const SWEEP_EVERY: u64 = 10;
/// Seconds the sweep leaves a queued lapse task past its next attempt before it re-queues it
/// (`watcher_lambda::timer::REQUEUE_AFTER_SECS`, which the local stack does not scale).
const REQUEUE_AFTER_SECS: u64 = 120;
/// The seed when `A2A_FAULTS_SEED` is not set.
const SEED: u64 = 40;
/// Every kind of fault at once, at rates that make a few dozen faults in this run. The kill
/// delay is short: the submitter's invocations take tens of milliseconds here.
const SPEC: &str = "dynamodb.throttle=0.05,dynamodb.error=0.02,dynamodb.unavailable=0.01,\
                    dynamodb.conflict=0.02,dynamodb.lost=0.03,\
                    sqs.throttle=0.05,sqs.error=0.02,sqs.unavailable=0.01,sqs.lost=0.03,\
                    scheduler.throttle=0.05,scheduler.error=0.02,scheduler.lost=0.03,\
                    secretsmanager.throttle=0.05,secretsmanager.error=0.02,\
                    kill=0.15,kill.within=0.3,kill.functions=submitter+timer";

fn agent_id(i: usize) -> String {
    format!("faults-{i}")
}

fn push_token(agent: &str) -> String {
    format!("push-token-{agent}")
}

/// What the client saw: every status the API answered, and the requests retried.
#[derive(Debug, Default)]
struct Seen {
    statuses: BTreeMap<u16, usize>,
    /// `(method path, status, body)` of each 5xx other than 503.
    server_errors: Vec<String>,
}

/// Sends what `make` builds until the answer is neither 503 nor 429, sleeping what
/// `Retry-After` asks (1 s when it names nothing) between tries, for at most two minutes.
async fn send(
    what: &str,
    seen: &tokio::sync::Mutex<Seen>,
    make: impl Fn() -> reqwest::RequestBuilder,
) -> (u16, Value) {
    let end = Instant::now() + Duration::from_secs(120);
    loop {
        let resp = make().send().await.expect("the local HTTP API answers");
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok());
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        {
            let mut s = seen.lock().await;
            *s.statuses.entry(status).or_default() += 1;
            if status >= 500 && status != 503 {
                s.server_errors.push(format!("{what}: {status} {body}"));
            }
        }
        if !matches!(status, 503 | 429) || Instant::now() > end {
            return (status, body);
        }
        assert!(
            retry_after.is_some(),
            "{what}: a {status} without Retry-After: {body}"
        );
        tokio::time::sleep(Duration::from_secs(retry_after.unwrap_or(1).min(10))).await;
    }
}

fn config(dir: &std::path::Path, agents: &[Arc<CaptureAgent>]) -> String {
    let mut out = format!(
        "allow_private_endpoints = true\n\n[delivery]\ntimeout_secs = 5\n\
         backoff_base = \"PT0.1S\"\nbackoff_max = \"PT0.5S\"\npoll_first = \"PT0.3S\"\n\n{}\n{}\n",
        entry_toml("sources", common::SOURCE_ID, SOURCE_TOKEN),
        entry_toml("operators", "ops-desk", OPERATOR_TOKEN),
    );
    for (i, agent) in agents.iter().enumerate() {
        let id = agent_id(i);
        out.push_str(&common::agent_with_card(
            dir,
            &id,
            &agent.url(),
            &push_token(&id),
            "reconcile = false",
        ));
    }
    out
}

/// The emulator's fault counts (`GET /_model/faults`): service -> kind -> count.
async fn injected(http: &reqwest::Client, port: u16) -> Value {
    http.get(format!("http://127.0.0.1:{port}/_model/faults"))
        .send()
        .await
        .expect("the emulator answers")
        .json::<Value>()
        .await
        .expect("JSON")["totals"]
        .clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn nothing_is_lost_or_sent_twice_under_every_fault_at_once() {
    if skipped(
        "nothing_is_lost_or_sent_twice_under_every_fault_at_once",
        aws_missing(),
        true,
    ) {
        return;
    }
    let seed: u64 = std::env::var("A2A_FAULTS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let mut agents = Vec::new();
    for _ in 0..AGENTS {
        // Keeping their tasks: a submitter killed after the agent took a lapse task finds it
        // with ListTasks instead of sending it again.
        agents.push(Arc::new(
            CaptureAgent::spawn_keeping_tasks(Behaviour::accept())
                .await
                .expect("capture agent"),
        ));
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let path = dir.path().join("watcher.toml");
    std::fs::write(&path, config(dir.path(), &agents)).expect("write the configuration");
    let (cap, every, faults) = (
        VISIBILITY_CAP.to_string(),
        SWEEP_EVERY.to_string(),
        format!("{seed}:{SPEC}"),
    );
    let common::aws_stack::Stack {
        proc: stack,
        api,
        moto_port,
        dynamodb_port,
        ..
    } = common::aws_stack::start(
        &[
            "--visibility-timeout-cap",
            &cap,
            "--rate-cap",
            &every,
            "--faults",
            &faults,
        ],
        &path,
    );
    tokio::task::block_in_place(|| common::aws_stack::wait_ready(&stack, Duration::from_secs(180)));
    let http = reqwest::Client::new();
    let seen = Arc::new(tokio::sync::Mutex::new(Seen::default()));
    let started = Instant::now();

    // Due 40 s ahead (the pushes take seconds under faults), in five instants 2 s apart.
    let base = plus(
        Timestamp::from_second(Timestamp::now().as_second()).unwrap(),
        40,
    );
    // (agent, expectation, shipment, due, met by a fact)
    let mut all = Vec::new();
    for a in 0..AGENTS {
        for p in 0..PER_AGENT / PER_PUSH {
            let due = plus(base, 2 * ((a + p) % 5) as i64);
            for k in 0..PER_PUSH {
                let id = format!("exp-f{a}-{p}-{k}");
                let shipment = format!("PA-f{a}-{p}-{k}");
                all.push((a, id, shipment, due, k == 0));
            }
        }
    }
    let mut pushes = tokio::task::JoinSet::new();
    for (n, chunk) in all.chunks(PER_PUSH).enumerate() {
        let (a, due) = (chunk[0].0, chunk[0].3);
        let each: Vec<(String, String)> = chunk
            .iter()
            .map(|(_, id, s, _, _)| (id.clone(), s.clone()))
            .collect();
        let body = expectations_on(&format!("task-f{n}"), &each, due, "PT0S");
        let agent = agent_id(a);
        let (http, api, seen) = (http.clone(), api.clone(), seen.clone());
        pushes.spawn(async move {
            let (status, answer) = send(&format!("push {n}"), &seen, || {
                http.post(format!("{api}/v1/agents/{agent}/push"))
                    .header("X-A2A-Notification-Token", push_token(&agent))
                    .json(&body)
            })
            .await;
            assert_eq!(status, 200, "push {n}: {answer}");
        });
    }
    while let Some(done) = pushes.join_next().await {
        done.expect("a push");
    }
    let raised_in = started.elapsed().as_secs_f64();
    // The facts that meet a fifth of them, before their deadlines.
    for (_, id, shipment, due, met) in &all {
        if !met {
            continue;
        }
        let fact = json!({
            "factKey": format!("shipment.manifest.received:{shipment}"),
            "observedAt": fmt(Timestamp::from_second(Timestamp::now().as_second()).unwrap()),
            "subject": { "type": "shipment", "id": shipment },
        });
        let (status, answer) = send(&format!("fact for {id}"), &seen, || {
            http.post(format!("{api}/v1/facts"))
                .bearer_auth(SOURCE_TOKEN)
                .json(&fact)
        })
        .await;
        assert_eq!(status, 200, "fact for {id}: {answer}");
        assert!(
            Timestamp::now() < *due,
            "the fact for {id} came after its deadline: raise the lead"
        );
    }
    eprintln!(
        "[faults] seed {seed}: raised {} expectations in {raised_in:.1} s, facts in {:.1} s",
        all.len(),
        started.elapsed().as_secs_f64()
    );

    // Each lapse task, by messageId, as the deployment names it.
    let want: BTreeMap<String, (usize, Timestamp)> = all
        .iter()
        .filter(|e| !e.4)
        .map(|(a, id, _, due, _)| (format!("lapse:{id}:overdue:{}", fmt(*due)), (*a, *due)))
        .collect();
    let arrived = |agents: &[Arc<CaptureAgent>]| -> Vec<(usize, String)> {
        agents
            .iter()
            .enumerate()
            .flat_map(|(a, agent)| agent.sent_message_ids().into_iter().map(move |m| (a, m)))
            .collect()
    };
    // Patience: the last deadline; the sweep's re-queue of a lapse task whose hand-over to the
    // lapse queue was lost (a timer killed between its commit and its send), which waits
    // REQUEUE_AFTER_SECS past the task's next attempt, then a sweep; the visibility a killed
    // batch waits out (twice); and the stack's own pace under faults.
    let end = Instant::now()
        + Duration::from_secs(
            u64::try_from((plus(base, 8).as_second() - Timestamp::now().as_second()).max(0))
                .unwrap_or(0)
                + REQUEUE_AFTER_SECS
                + 2 * SWEEP_EVERY
                + 2 * VISIBILITY_CAP
                + 30,
        );
    // Seconds after its deadline each lapse task first arrived.
    let mut late: BTreeMap<String, i64> = BTreeMap::new();
    while Instant::now() < end {
        for (_, m) in arrived(&agents) {
            if let Some((_, due)) = want.get(&m) {
                let due = due.as_second();
                late.entry(m)
                    .or_insert_with(|| Timestamp::now().as_second() - due);
            }
        }
        if want.keys().all(|m| late.contains_key(m)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let mut lateness: Vec<i64> = late.values().copied().collect();
    lateness.sort_unstable();
    let slow: Vec<(&String, &i64)> = late.iter().filter(|(_, s)| **s > 60).collect();
    eprintln!(
        "[faults] seed {seed}: {} of {} lapse tasks arrived; seconds after the deadline: median \
         {}, max {}; over a minute late: {slow:?}",
        late.len(),
        want.len(),
        lateness.get(lateness.len() / 2).copied().unwrap_or(-1),
        lateness.last().copied().unwrap_or(-1),
    );
    let all_in = started.elapsed().as_secs_f64();
    // Whatever was held when the last one arrived has time to be sent again, if it would be.
    tokio::time::sleep(Duration::from_secs(VISIBILITY_CAP + 5)).await;

    // Every lapse task is recorded as sent (GET /v1/lapses, the operator's view).
    let mut recorded = BTreeMap::new();
    for a in 0..AGENTS {
        let (status, body) = send(&format!("lapses of {}", agent_id(a)), &seen, || {
            http.get(format!("{api}/v1/lapses?agent={}&limit=100", agent_id(a)))
                .bearer_auth(OPERATOR_TOKEN)
        })
        .await;
        assert_eq!(status, 200, "GET /v1/lapses: {body}");
        for l in body["lapses"].as_array().cloned().unwrap_or_default() {
            recorded.insert(
                l["messageId"].as_str().unwrap_or_default().to_owned(),
                l["delivery"].as_str().unwrap_or_default().to_owned(),
            );
        }
    }

    let totals_main = injected(&http, moto_port).await;
    let totals_dynamodb = injected(&http, dynamodb_port).await;
    let log = stack.lines();
    let kills = log
        .iter()
        .filter(|l| l.contains("fault: killing instance"))
        .count();
    let seen = std::mem::take(&mut *seen.lock().await);
    eprintln!(
        "[faults] seed {seed}: every lapse task in after {all_in:.1} s; the client saw {:?}; \
         injected: {totals_main} (SQS, Scheduler, Secrets Manager), {totals_dynamodb} \
         (DynamoDB); {kills} instances killed mid-invocation",
        seen.statuses
    );
    let log_path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("aws-faults.log");
    std::fs::write(&log_path, log.join("\n")).expect("write the stack's log");
    eprintln!("[faults] the stack's log: {}", log_path.display());

    // The faults were there: each kind in its emulator, and killed instances.
    for kind in ["throttle", "error", "conflict", "lost"] {
        assert!(
            totals_dynamodb["dynamodb"][kind].as_u64().unwrap_or(0) > 0,
            "seed {seed}: no DynamoDB {kind} injected: {totals_dynamodb}"
        );
    }
    for kind in ["throttle", "lost"] {
        assert!(
            totals_main["sqs"][kind].as_u64().unwrap_or(0) > 0,
            "seed {seed}: no SQS {kind} injected: {totals_main}"
        );
    }
    assert!(
        kills > 0,
        "seed {seed}: no instance was killed mid-invocation"
    );

    // No client ever saw a 500 (or any 5xx but 503).
    assert!(
        seen.server_errors.is_empty(),
        "seed {seed}: the API answered 5xx other than 503:\n{}",
        seen.server_errors.join("\n")
    );
    // Each lapse task arrived once, at its own agent, and nothing else arrived.
    let mut count: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (a, m) in arrived(&agents) {
        count.entry(m).or_default().push(a);
    }
    let lost: Vec<&String> = want.keys().filter(|m| !count.contains_key(*m)).collect();
    let twice: Vec<(&String, usize)> = count
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(m, at)| (m, at.len()))
        .collect();
    let stray: Vec<&String> = count.keys().filter(|m| !want.contains_key(*m)).collect();
    let elsewhere: Vec<&String> = count
        .iter()
        .filter(|(m, at)| want.get(*m).is_some_and(|(a, _)| at.iter().any(|x| x != a)))
        .map(|(m, _)| m)
        .collect();
    let unsent: Vec<(&String, Option<&String>)> = want
        .keys()
        .map(|m| (m, recorded.get(m)))
        .filter(|(_, d)| d.map(String::as_str) != Some("sent"))
        .collect();
    assert!(
        lost.is_empty()
            && twice.is_empty()
            && stray.is_empty()
            && elsewhere.is_empty()
            && unsent.is_empty(),
        "seed {seed}: of {} lapse tasks: never arrived {lost:?}; arrived more than once \
         {twice:?}; not expected (a met expectation's, or unknown) {stray:?}; at another agent \
         {elsewhere:?}; not recorded as sent {unsent:?}\n{}",
        want.len(),
        stack.tail()
    );
    drop(stack);
}
