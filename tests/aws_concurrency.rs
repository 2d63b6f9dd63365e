//! Lambda's concurrency under a flood of pushes (issue 40): the local AWS stack at scale
//! K = 100 (`--scale 100`: the account's 1,000 concurrent executions are 10, the timer's and the
//! submitter's reserves `TimerConcurrency` 10 and `SubmitterConcurrency` 20 are 1 each, so the
//! api function has 8), with the HTTP API's stage throttle on (`--api-throttle on`) and set, by
//! template parameter (`--param`), to what those 8 can carry: 300 requests a second and a burst
//! of 300 per route, 3 and 3 at 1/100, for the default route settings and the push route's own
//! (`PushThrottleRate`, `PushThrottleBurst`: the push route has a RouteSettings entry of its
//! own) (docs/howto/deploy-aws.md, "Concurrency": the burst plus the rate times the api's p99
//! duration stays below its unreserved concurrency).
//!
//! [`CLIENTS`] clients push as fast as they are answered, to four agents, for as long as one
//! lapse due during the flood takes to arrive. No answer is a 500 (a Lambda throttle, which
//! API Gateway answers 500); every refusal is API Gateway's own 429 `{"message":"Too Many
//! Requests"}`, without `Retry-After`; the stack's report counts the same 429s and no Lambda
//! throttle of the API or the submitter (the timer's scheduled sweep ticks may be, at 1/100,
//! and are retried). The lapse reaches its agent within [`LATE_MAX`] of its deadline:
//! the timer and the submitter run in their reserves, which the API cannot take.
//!
//! Needs `.venv` with moto and the function binaries, as `tests/aws_local.rs`; without them it
//! says so and passes, unless `CI=true`, where it fails.

use crate::common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use watcher_delivery::testing::{Behaviour, CaptureAgent};

use common::aws_stack::{aws_missing, skipped};
use common::{entry_toml, fmt, one_expectation, plus, OPERATOR_TOKEN, SOURCE_TOKEN};

/// The scale factor: Lambda's account concurrency 1,000 / 100 = 10.
const SCALE: &str = "100";
/// The stage throttle, per route, as template parameters (AWS's figures, divided by [`SCALE`]
/// by the stack): 3 a second and a burst of 3 at 1/100.
const THROTTLE_RATE: &str = "300";
const THROTTLE_BURST: &str = "300";
/// Concurrent clients pushing without pause: many more requests than the throttle admits.
const CLIENTS: usize = 16;
/// Agents the flood's pushes go to, round robin.
const FLOOD_AGENTS: usize = 4;
/// Seconds from the lapse's push to its deadline: the flood runs before and past it.
const LEAD_SECS: i64 = 20;
/// The latest the lapse may arrive after its deadline.
const LATE_MAX: Duration = Duration::from_secs(5);
/// What API Gateway answers a request its stage throttle refuses.
const THROTTLED: &str = r#"{"message":"Too Many Requests"}"#;

fn push_token(agent: &str) -> String {
    format!("push-token-{agent}")
}

/// What the flood's clients saw: the count of each status, and every answer that was not a
/// 200 or API Gateway's own 429 (status, `Retry-After`, body).
#[derive(Debug, Default)]
struct Seen {
    statuses: BTreeMap<u16, usize>,
    odd: Vec<String>,
}

/// The first number after `word` in `line` (`… throttled 12 of …` for `throttled`).
fn number_after(line: &str, word: &str) -> Option<u64> {
    line.split_once(word)?
        .1
        .split_whitespace()
        .next()?
        .trim_end_matches(|c: char| !c.is_ascii_digit())
        .parse()
        .ok()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_flood_of_pushes_gets_429s_never_500s_and_the_deadlines_keep_their_reserve() {
    if skipped(
        "a_flood_of_pushes_gets_429s_never_500s_and_the_deadlines_keep_their_reserve",
        aws_missing(),
        true,
    ) {
        return;
    }
    let lapse_agent = CaptureAgent::spawn_keeping_tasks(Behaviour::accept())
        .await
        .expect("capture agent");
    let mut flood_agents = Vec::new();
    for _ in 0..FLOOD_AGENTS {
        flood_agents.push(
            CaptureAgent::spawn(Behaviour::accept())
                .await
                .expect("capture agent"),
        );
    }
    let dir = tempfile::tempdir().expect("a temporary folder");
    let mut config = format!(
        "allow_private_endpoints = true\n\n{}\n{}\n",
        entry_toml("sources", common::SOURCE_ID, SOURCE_TOKEN),
        entry_toml("operators", "ops-desk", OPERATOR_TOKEN),
    );
    let mut agents = vec![("lapsing".to_owned(), lapse_agent.url())];
    for (i, agent) in flood_agents.iter().enumerate() {
        agents.push((format!("flood-{i}"), agent.url()));
    }
    for (id, url) in &agents {
        config.push_str(&common::agent_with_card(
            dir.path(),
            id,
            url,
            &push_token(id),
            "reconcile = false",
        ));
    }
    let path = dir.path().join("watcher.toml");
    std::fs::write(&path, config).expect("write the configuration");

    let rate = format!("ApiThrottleRate={THROTTLE_RATE}");
    let burst = format!("ApiThrottleBurst={THROTTLE_BURST}");
    let push_rate = format!("PushThrottleRate={THROTTLE_RATE}");
    let push_burst = format!("PushThrottleBurst={THROTTLE_BURST}");
    let common::aws_stack::Stack {
        proc: stack,
        api: base,
        ..
    } = common::aws_stack::start(
        &[
            "--scale",
            SCALE,
            "--api-throttle",
            "on",
            "--param",
            &rate,
            "--param",
            &burst,
            "--param",
            &push_rate,
            "--param",
            &push_burst,
        ],
        &path,
    );
    tokio::task::block_in_place(|| common::aws_stack::wait_ready(&stack, Duration::from_secs(180)));
    // The stack applied what the test asks for: the parameters reached the throttle, and the
    // reserves leave the api function 8 of the account's 10.
    let limits = stack
        .lines()
        .into_iter()
        .find(|l| l.contains("limits at 1/100"))
        .unwrap_or_default();
    assert!(
        limits.contains("Lambda concurrency 10 for the account")
            && limits.contains("'timer': 1")
            && limits.contains("'submitter': 1")
            && limits.contains("8 unreserved")
            && limits.contains("stage throttle 3 a second, burst 3, each route")
            && limits.contains("POST /v1/agents/{agentId}/push 3/3"),
        "the stack's limits: {limits}"
    );
    let api = base;
    let http = reqwest::Client::new();

    // The lapse: one expectation due LEAD_SECS from now, pushed before the flood starts.
    let due = plus(
        Timestamp::from_second(Timestamp::now().as_second()).expect("now"),
        LEAD_SECS,
    );
    let body = one_expectation("task-lapsing", "exp-lapsing", "PA-lapsing", due, "PT0S");
    let resp = http
        .post(format!("{api}/v1/agents/lapsing/push"))
        .header("X-A2A-Notification-Token", push_token("lapsing"))
        .json(&body)
        .send()
        .await
        .expect("the local HTTP API answers");
    assert_eq!(resp.status().as_u16(), 200, "the lapse's push");
    let lapse_id = format!("lapse:exp-lapsing:overdue:{}", fmt(due));

    // The flood: every client pushes again as soon as it is answered, each push raising one
    // expectation due in ten minutes (a delayed timer message: nothing lapses in the test).
    let seen = Arc::new(tokio::sync::Mutex::new(Seen::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut clients = tokio::task::JoinSet::new();
    for c in 0..CLIENTS {
        let (http, api, seen, stop) = (http.clone(), api.clone(), seen.clone(), stop.clone());
        clients.spawn(async move {
            let mut n = 0usize;
            while !stop.load(Ordering::Relaxed) {
                let agent = format!("flood-{}", (c + n) % FLOOD_AGENTS);
                let id = format!("exp-c{c}-{n}");
                let body = one_expectation(
                    &format!("task-c{c}-{n}"),
                    &id,
                    &format!("PA-c{c}-{n}"),
                    plus(Timestamp::now(), 600),
                    "PT0S",
                );
                n += 1;
                let Ok(resp) = http
                    .post(format!("{api}/v1/agents/{agent}/push"))
                    .header("X-A2A-Notification-Token", push_token(&agent))
                    .json(&body)
                    .send()
                    .await
                else {
                    seen.lock().await.odd.push(format!("{id}: no answer"));
                    continue;
                };
                let status = resp.status().as_u16();
                let retry_after = resp
                    .headers()
                    .get(reqwest::header::RETRY_AFTER)
                    .map(|v| v.to_str().unwrap_or("?").to_owned());
                let text = resp.text().await.unwrap_or_default();
                let mut s = seen.lock().await;
                *s.statuses.entry(status).or_default() += 1;
                let gateways = status == 429 && text == THROTTLED && retry_after.is_none();
                if status != 200 && !gateways {
                    s.odd
                        .push(format!("{id}: {status} Retry-After {retry_after:?} {text}"));
                }
            }
        });
    }

    // Watch for the lapse while the flood lasts; the flood ends a little after it arrives.
    let give_up = Instant::now() + Duration::from_secs(LEAD_SECS as u64) + LATE_MAX * 3;
    let mut arrived: Option<Timestamp> = None;
    while Instant::now() < give_up {
        if arrived.is_none() && lapse_agent.sent_message_ids().contains(&lapse_id) {
            arrived = Some(Timestamp::now());
        }
        if arrived.is_some_and(|t| Timestamp::now() > plus(t, 2)) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    while let Some(done) = clients.join_next().await {
        done.expect("a client");
    }
    let flood_secs = started.elapsed().as_secs_f64();
    let seen = std::mem::take(&mut *seen.lock().await);

    // Stopped, the stack reports what throttled.
    tokio::task::block_in_place(|| stack.terminate(Duration::from_secs(30)));
    let log = stack.lines();
    let lambda = log
        .iter()
        .find(|l| l.contains("Lambda: peak concurrency"))
        .cloned()
        .unwrap_or_default();
    let gateway = log
        .iter()
        .find(|l| l.contains("HTTP API: stage throttle"))
        .cloned()
        .unwrap_or_default();
    let total: usize = seen.statuses.values().sum();
    let late = arrived.map(|t| t.as_millisecond() - due.as_millisecond());
    eprintln!(
        "[concurrency] {total} pushes in {flood_secs:.1} s from {CLIENTS} clients: {:?}; the \
         lapse {}; {lambda}; {gateway}",
        seen.statuses,
        late.map_or("never arrived".to_owned(), |ms| format!(
            "arrived {ms} ms after its deadline"
        )),
    );

    // No 500, and nothing but 200 and API Gateway's own 429.
    assert!(
        seen.odd.is_empty(),
        "answers other than 200 and API Gateway's 429 {THROTTLED} without Retry-After:\n{}",
        seen.odd.join("\n")
    );
    // The flood saturated the stage: most were refused, and the throttle let some through.
    let (accepted, refused) = (
        seen.statuses.get(&200).copied().unwrap_or(0),
        seen.statuses.get(&429).copied().unwrap_or(0),
    );
    assert!(
        accepted >= 10 && refused > accepted,
        "the flood did not saturate the stage: {:?}",
        seen.statuses
    );
    // The stack counted the same 429s (each route's bucket): the API stayed within its
    // unreserved concurrency, the deadline functions within their own.
    assert_eq!(
        number_after(&gateway, "throttled "),
        Some(refused as u64),
        "the stack's count of 429s: {gateway}"
    );
    // Neither the API (its throttle would be a 500) nor the submitter was throttled. The timer
    // function's scheduled sweep ticks may be: at 1/100 its reserve is one instance, all of it
    // its queue source's, and the sweep's duties fire on their own schedules (`follow` every
    // minute); Lambda retries a throttled scheduled invocation, as AWS does. Its deadlines are
    // checked by the lapse below, which must still arrive on time.
    let throttled = lambda
        .split("throttles ")
        .nth(1)
        .and_then(|rest| rest.split("; first").next())
        .unwrap_or_default();
    assert!(
        !throttled.contains("'api'") && !throttled.contains("'submitter'"),
        "Lambda throttled the API or the submitter: {lambda}"
    );
    // The lapse due during the flood arrived on time.
    let late = late.unwrap_or_else(|| {
        panic!(
            "the lapse {lapse_id} never arrived (the agent got {:?})\n{}",
            lapse_agent.sent_message_ids(),
            stack.tail()
        )
    });
    assert!(
        (0..=i64::try_from(LATE_MAX.as_millis()).unwrap_or(i64::MAX)).contains(&late),
        "the lapse arrived {late} ms after its deadline (at most {LATE_MAX:?})"
    );
}
