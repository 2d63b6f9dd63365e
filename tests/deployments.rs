//! One deployment suite: black-box scenarios written once (tests/deployments/scenarios.rs)
//! against a [`harness::Deployment`], run against `a2a-watcher serve` (SQLite) and against the
//! local AWS stack (`bash infra/aws-local.sh`: the api, timer, submitter and lesson-write
//! binaries over moto with local stand-ins for API Gateway, Scheduler and the SQS event
//! sources).
//!
//! Scenarios: raise, satisfy in time (no lapse task), lapse each kind (overdue, skipped,
//! stalled), withdraw (the origin task canceled by push), retry a failed lapse task, slow
//! neighbour, kill the sender mid-send (exactly one lapse task), carrier webhooks, operator
//! routes, agents independent, reconcile a cancel never pushed, withdraw along the lineage,
//! follow without push, a person told (webhook, PagerDuty, Opsgenie, Alertmanager), a lapse
//! paged once and resolved once through a restart of what holds the notifier.
//!
//! Each deployment starts once with every scenario's agents in its configuration; the
//! scenarios run side by side (each with its own agent and expectations), then the one that
//! kills the sender runs alone. A scenario that does not run on a deployment is reported
//! skipped, with its reason (`common::skip`). Each scenario's time and the whole run's are printed
//! (`cargo test --test it deployments:: -- --nocapture`), and on aws-local the pace the stack
//! kept ([`pace`]). `A2A_SCENARIOS=one_agent_at_serves_pace,…` runs only the scenarios named.
//!
//! On aws-local the stand-ins cap the queues' visibility (30 s, and the submitter's send lease
//! below it) and run the sweep every 5 s, so crashes and what the sweep does take seconds.
//!
//! The AWS run needs `.venv` with moto (`bash infra/moto.sh`) and the function binaries
//! (infra/test-all.sh builds them); without them it says so and passes, unless `CI=true`,
//! where it fails.

use crate::common;
#[path = "deployments/burst.rs"]
mod burst;
#[path = "deployments/durations.rs"]
mod durations;
#[path = "deployments/harness.rs"]
mod harness;
#[path = "deployments/scenarios.rs"]
mod scenarios;

use std::sync::Arc;
use std::time::Instant;

use common::aws_stack::{aws_missing, skipped};
use harness::{Backend, Deployment, Fixture};

/// Starts `backend`, runs every scenario on it, and fails naming each scenario that failed.
async fn run_suite(backend: Backend) {
    let started = Instant::now();
    let fixture = Arc::new(Fixture::spawn().await);
    let deployment = Arc::new(Deployment::start(backend, &fixture).await);
    let name = backend.name();
    eprintln!(
        "[{name}] deployment up in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // `A2A_SCENARIOS=name,name` runs only those (by hand, to measure one scenario alone).
    let only: Option<Vec<String>> = std::env::var("A2A_SCENARIOS")
        .ok()
        .map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let (alone, together): (Vec<_>, Vec<_>) = scenarios::all()
        .into_iter()
        .filter(|s| only.as_ref().is_none_or(|o| o.iter().any(|n| n == s.name)))
        .partition(|s| s.alone);
    let mut failed = Vec::new();
    let mut batches = vec![together];
    batches.extend(alone.into_iter().map(|s| vec![s]));
    for batch in batches {
        let mut running = Vec::new();
        for s in batch {
            if let (Backend::AwsLocal, Some(why)) = (backend, s.skip_on_aws) {
                common::skip::skip(&format!("scenario {} on aws-local: {why}", s.name));
                continue;
            }
            let (d, f) = (deployment.clone(), fixture.clone());
            let run = s.run;
            running.push((
                s.name,
                tokio::spawn(async move {
                    let t = Instant::now();
                    run(d, f).await;
                    t.elapsed()
                }),
            ));
        }
        for (scenario, handle) in running {
            match handle.await {
                Ok(took) => eprintln!("[{name}] {scenario}: ok in {:.1} s", took.as_secs_f64()),
                Err(e) => {
                    eprintln!("[{name}] {scenario}: FAILED: {e}");
                    failed.push(scenario);
                }
            }
        }
    }
    eprintln!(
        "[{name}] suite ran in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let log =
        std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("deployments-{name}.log"));
    let full_log = deployment.full_log().await;
    std::fs::write(&log, &full_log).expect("write the deployment's log");
    eprintln!("[{name}] the deployment's log: {}", log.display());
    // The pace the stack kept: on a failure in CI, where the log file is out of reach, this says
    // whether the deployment itself was slow (e.g. sweeps running for a minute) or a rule broke.
    for line in pace(&full_log) {
        eprintln!("[{name}] {line}");
    }
    assert!(
        failed.is_empty(),
        "scenarios failed on {name}: {failed:?}\n{}",
        deployment.log_tail().await
    );
}

/// One line per kind of invocation in `log`'s `REPORT` lines (the local AWS stack's; none for
/// `serve`): `{function} {event}: N runs, median M ms, longest L ms`, then how many invocations
/// timed out or failed.
fn pace(log: &str) -> Vec<String> {
    let mut lines: Vec<String> = durations::reports(log)
        .into_iter()
        .map(|(kind, runs)| {
            let longest = runs.ms.iter().copied().fold(0.0, f64::max);
            format!(
                "{kind}: {} runs, median {:.0} ms, longest {longest:.0} ms",
                runs.ms.len(),
                runs.median()
            )
        })
        .collect();
    if !lines.is_empty() {
        let count = |what: &str| log.lines().filter(|l| l.contains(what)).count();
        lines.push(format!(
            "invocations timed out: {}; failed: {}",
            count("timed out after"),
            count("invocation failed") + count("failed, left on the queue")
        ));
    }
    lines
}

#[test]
fn pace_sums_up_the_report_lines() {
    let log = "[timer] REPORT RequestId: a Duration: 100.0 ms Billed Duration: 100 ms Event: schedule\n\
               [timer] REPORT RequestId: b Duration: 75000.4 ms Billed Duration: 75001 ms Event: schedule\n\
               [timer] REPORT RequestId: c Duration: 300.0 ms Billed Duration: 300 ms Event: schedule\n\
               [submitter] invocation x timed out after 28 s\n\
               [aws-local] SubmitterLapseQueueSource: batch of 2 failed, left on the queue: x";
    assert_eq!(
        pace(log),
        [
            "timer schedule: 3 runs, median 300 ms, longest 75000 ms",
            "invocations timed out: 1; failed: 1",
        ]
    );
    assert!(pace("serve's log has no REPORT line").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_scenario_on_serve() {
    run_suite(Backend::Serve).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_scenario_on_aws_local() {
    if skipped("every_scenario_on_aws_local", aws_missing(), true) {
        return;
    }
    run_suite(Backend::AwsLocal).await;
}

/// The burst (`deployments/burst.rs`) on `backend`: printed, and the lapse tasks all arrived
/// once each.
async fn measure_burst(backend: Backend) {
    let fixture = Arc::new(Fixture::spawn().await);
    // The sweep as deployed (every 5 minutes): the suite's 5-second sweep would compete.
    let deployment = Arc::new(Deployment::start_sweeping(backend, &fixture, None).await);
    let b = burst::run(
        deployment.clone(),
        fixture,
        60,
        std::time::Duration::from_secs(120),
    )
    .await;
    eprintln!(
        "[{}] burst of 200 lapse tasks over 20 agents answering in 300 ms: raised in {:.1} s; \
         after the deadline the first arrived at {:.2} s, half by {:.2} s, the last at {:.2} s; \
         {} arrived, {} sent twice",
        backend.name(),
        b.raising,
        b.first,
        b.median,
        b.last,
        b.arrived,
        b.duplicates
    );
    for (i, (first, last)) in b.agents.iter().enumerate() {
        eprintln!(
            "[{}] agent {i:2}: first {first:.2} s, last {last:.2} s ({:.2} s apart)",
            backend.name(),
            last - first
        );
    }
    let log = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("burst-{}.log", backend.name()));
    std::fs::write(&log, deployment.full_log().await).expect("write the deployment's log");
    eprintln!(
        "[{}] the deployment's log: {}",
        backend.name(),
        log.display()
    );
    assert_eq!((b.arrived, b.duplicates), (200, 0), "{b:?}");
}

/// 200 lapse tasks due at one instant over 20 agents whose answers take 300 ms, on serve: a
/// measurement, by hand (docs/performance.md "A burst over slow agents").
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement, run by hand: docs/performance.md"]
async fn a_burst_over_slow_agents_on_serve() {
    measure_burst(Backend::Serve).await;
}

/// The same burst on the local AWS stack.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement, run by hand: docs/performance.md"]
async fn a_burst_over_slow_agents_on_aws_local() {
    if skipped(
        "a_burst_over_slow_agents_on_aws_local",
        aws_missing(),
        false,
    ) {
        return;
    }
    measure_burst(Backend::AwsLocal).await;
}

/// The functions' durations on the local AWS stack, by what each run does (docs/costs.md,
/// "Durations"): a measurement, by hand, with release binaries: `cargo build --release -p
/// watcher-fn-api -p watcher-fn-timer -p watcher-fn-submitter -p watcher-fn-lesson-write`, then
/// `A2A_FUNCTIONS_DIR=target/release cargo test --test it
/// deployments::lambda_durations_on_aws_local -- --ignored --nocapture`; with `UPDATE_DOCS=1` it
/// writes `docs/lambda-durations.toml`.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a measurement, run by hand: docs/costs.md"]
async fn lambda_durations_on_aws_local() {
    if skipped("lambda_durations_on_aws_local", aws_missing(), false) {
        return;
    }
    let fixture = Arc::new(Fixture::spawn().await);
    // The sweep as deployed: its runs would otherwise be most of the timer's.
    let deployment = Arc::new(Deployment::start_sweeping(Backend::AwsLocal, &fixture, None).await);
    durations::drive(deployment.clone(), fixture).await;
    let runs = durations::reports(&deployment.full_log().await);
    for (kind, r) in &runs {
        eprintln!(
            "[aws-local] {kind}: {} runs, median {:.1} ms, p90 {:.1} ms",
            r.ms.len(),
            r.median(),
            r.p90()
        );
    }
    let median = |prefix: &str| -> f64 {
        let all: Vec<f64> = runs
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .flat_map(|(_, r)| r.ms.clone())
            .collect();
        assert!(!all.is_empty(), "no run of {prefix}: {runs:?}");
        durations::Runs { ms: all }.median()
    };
    let measured = [
        ("push_ms", median("api POST /v1/agents/{agentId}/push")),
        ("fact_ms", median("api POST /v1/facts")),
        ("timer_ms", median("timer ")),
        ("submitter_ms", median("submitter ")),
    ];
    let mut toml = String::from(
        "# Billed durations of the functions' runs, in milliseconds: medians measured on the local AWS\n\
         # stack (release binaries over moto, this repository's machine), by\n\
         # `A2A_FUNCTIONS_DIR=target/release cargo test --test it deployments::lambda_durations_on_aws_local -- --ignored --nocapture`\n\
         # with UPDATE_DOCS=1 (tests/deployments/durations.rs). Agents answer at once there: a real\n\
         # agent's answer time is docs/prices.toml's `agent_answer_ms`, added to each delivery.\n",
    );
    toml.push_str(&format!(
        "as_of = \"{}\"\nrounds = {}\n\n[measured]\n",
        jiff::Timestamp::now().strftime("%Y-%m-%d"),
        durations::ROUNDS
    ));
    for (k, v) in measured {
        toml.push_str(&format!("{k} = {v:.1}\n"));
    }
    eprintln!("{toml}");
    if std::env::var_os("UPDATE_DOCS").is_some() {
        std::fs::write(
            common::aws_stack::root().join("docs/lambda-durations.toml"),
            toml,
        )
        .expect("write docs/lambda-durations.toml");
    }
}
