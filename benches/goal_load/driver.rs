//! The goal load against the scale model (issue 40, item 4): starts the local AWS stack with every
//! limit divided by K (`bash infra/aws-local.sh --scale K`), answers as its agents, and runs at
//! 1/K of the goal
//!
//! - 10,000 raises and 10,000 facts a second over 10,000 agents of several tenants;
//! - a million lapses due within one hour (the same rate over `--duration`);
//! - a burst of 100,000 lapses due in the same minute (all at its first second);
//! - one agent with a backlog of 200,000 lapse tasks (all due at once) while the others go on.
//!
//! Everything it prints is measured in the run: the answers of the API by status, the arrival
//! of each lapse task at its agent (lateness = arrival − `dueAt`, lost = due and never arrived,
//! sent twice = one `messageId` arriving twice), each resource's calls, refusals (by reason:
//! throttle, conflict, size) and peak rate against its limit as the model counted them
//! (`GET /_model/limits` on each emulator, read once a second), the function runs and their
//! billed durations from the stack's `REPORT` lines, and the cost of what was counted (DynamoDB's
//! request units included) at `docs/prices.toml`.
//!
//! One module a job: `options` (the command line), `stack` (aws-local as a child process),
//! `agents` (the A2A agents' server and the watcher's configuration), `offers` (sending a push
//! or a fact, and the steady streams), `phases` (the burst's and the backlog's preload),
//! `measure` (lateness, lost, sent twice), `resources` (the model's counts), `cost` (pricing),
//! `report` (the JSON line and the table); [`run`] below puts them in order.
//!
//! Shared by the bench target (`benches/goal_load/main.rs`) and its smoke test
//! (`tests/goal_load.rs`, which includes this file): each module is named by its path, so it
//! is found beside this file from either.

#[path = "agents.rs"]
mod agents;
#[path = "cost.rs"]
mod cost;
#[path = "measure.rs"]
mod measure;
#[path = "offers.rs"]
mod offers;
#[path = "options.rs"]
mod options;
#[path = "phases.rs"]
mod phases;
#[path = "report.rs"]
mod report;
#[path = "resources.rs"]
mod resources;
#[path = "stack.rs"]
mod stack;

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use options::Options;
#[allow(
    unused_imports,
    reason = "the smoke test (tests/goal_load.rs) builds its options without the command line"
)]
pub use options::USAGE;
pub use report::Report;

use offers::{Due, Stream};
use phases::PER_PUSH;
use stack::{AwsLocal, Ports, Stack};

/// The extension's URI: the lapse block is `params.message.metadata[URI].lapse`.
const URI: &str = "https://rsaxb.com/a2a/expectations/v1";

/// Seconds since the epoch, as a float.
fn epoch(t: SystemTime) -> f64 {
    t.duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// An instant (whole seconds since the epoch) as the API takes it.
fn instant(secs: i64) -> String {
    jiff::Timestamp::from_second(secs)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

/// Runs the goal load once and answers what it measured.
///
/// # Errors
/// The stack not starting, a port taken, the configuration not written, `docs/prices.toml`
/// unreadable.
pub async fn run(o: &Options) -> anyhow::Result<Report> {
    let ports = Ports::of(o)?;
    let dir = tempfile::Builder::new().prefix("goal-load").tempdir()?;
    // The agents first: the functions read their cards when they start.
    let (agents, server) = agents::serve(ports.agents).await?;
    let agents_url = format!("http://127.0.0.1:{}", ports.agents);
    let config_path = dir.path().join("watcher.toml");
    std::fs::write(&config_path, agents::config(o, dir.path(), &agents_url)?)?;
    let log = o
        .log
        .clone()
        .unwrap_or_else(|| stack::target_dir().join("goal-load-aws-local.log"));
    let machine = report::machine();
    eprintln!(
        "goal_load: K {}, {} agents over {} tenants, {}/s raises and facts for {} s, {:.3} lapses/s, \
         burst {}, backlog {}{}; starting the local AWS stack (log {})",
        o.scale,
        o.agents(),
        o.tenants,
        o.rate(),
        o.duration,
        o.lapse_rate(),
        o.burst(),
        o.backlog(),
        o.api_rate
            .map(|r| format!(", the API's stage throttle {r}/s"))
            .unwrap_or_default(),
        log.display()
    );
    let aws_local = AwsLocal::probe();
    let stack = {
        let (o, config_path, log) = (o.clone(), config_path.clone(), log.clone());
        tokio::task::spawn_blocking(move || Stack::start(&o, aws_local, &config_path, &ports, &log))
            .await??
    };
    let api = format!("http://127.0.0.1:{}", ports.api);
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(256)
        .build()?;
    let bases = vec![
        (
            "sqs-scheduler".to_owned(),
            format!("http://127.0.0.1:{}", ports.moto),
        ),
        (
            "dynamodb".to_owned(),
            format!("http://127.0.0.1:{}", ports.dynamodb),
        ),
    ];
    if !aws_local.scale {
        resources::configure_limits(&http, &bases, o.scale).await;
    }
    let run_start = Instant::now();
    let model = Arc::new(Mutex::new(resources::Model::default()));
    let reading = resources::poll(&http, &bases, &model, run_start);

    // The backlog's agent is the last; the others take the steady load and the burst.
    let backlog_agent = o.agents() - 1;
    let others: Vec<usize> = (0..backlog_agent).collect();
    let due_set: Arc<Due> = Arc::default();
    let raises = Arc::new(Stream::default());
    let facts = Arc::new(Stream::default());
    let preload_stream = Arc::new(Stream::retrying_500());

    // The preload: the burst's and the backlog's expectations, due as the probe push says.
    let probe = Stream::default();
    let plan = phases::plan(&http, &api, o, &probe).await;
    let preload_start = Instant::now();
    for (group, count, agents, due) in [
        ('b', o.burst(), &others[..], plan.burst_due),
        ('k', o.backlog(), &[backlog_agent][..], plan.backlog_due),
    ] {
        phases::preload(
            &http,
            &api,
            group,
            count,
            agents,
            due,
            &due_set,
            &preload_stream,
            o.in_flight,
        )
        .await;
    }
    let preload_secs = preload_start.elapsed().as_secs_f64();
    // Raised after its `dueAt`: the backlog's lateness would then include the raise's.
    let late_raised = epoch(SystemTime::now()) > plan.backlog_due as f64;

    // The steady window.
    eprintln!(
        "goal_load: preload done in {preload_secs:.1} s; the steady window ({} s)",
        o.duration
    );
    let steady_start = Instant::now();
    offers::steady(&http, &api, o, &others, &due_set, &raises, &facts, 20).await;
    let steady_secs = steady_start.elapsed().as_secs_f64();

    // Waiting for the lapses: until every due one arrived, or `patience` after the last due.
    eprintln!("goal_load: steady window done in {steady_secs:.1} s; waiting for the lapse tasks");
    measure::wait_for_arrivals(&agents, &due_set, o.patience).await;
    resources::read_model(&http, &bases, &model, run_start.elapsed().as_secs_f64()).await;
    reading.abort();
    let run_secs = run_start.elapsed().as_secs_f64();
    drop(stack);
    server.abort();

    let due = due_set
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let outcome = measure::Outcome::of(&agents.arrivals(), &due);
    let mut model = std::mem::take(&mut *model.lock().unwrap_or_else(PoisonError::into_inner));
    resources::lambda_of(&log, &mut model);
    let runs = cost::runs_of(&log);
    let api_requests = [&*raises, &*facts, &*preload_stream, &probe]
        .iter()
        .map(|s| s.requests.load(Ordering::Relaxed))
        .sum();
    let expectations = raises.accepted.load(Ordering::Relaxed)
        + (preload_stream.accepted.load(Ordering::Relaxed)
            + probe.accepted.load(Ordering::Relaxed))
            * PER_PUSH;
    let cost = cost::cost(&model, api_requests, &runs, expectations)?;
    Ok(report::assemble(
        o,
        report::Measured {
            machine,
            scaled: aws_local.scale,
            seconds: (preload_secs, steady_secs, run_secs),
            raises: &raises,
            facts: &facts,
            preload: &preload_stream,
            raised_after_due: late_raised,
            outcome: &outcome,
            agents: &agents,
            model: &model,
            runs: &runs,
            cost,
        },
    ))
}
