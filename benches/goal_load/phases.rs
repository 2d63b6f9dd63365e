//! The phases raised before the steady window: the burst (lapses due at one instant) and the
//! backlog (one agent's lapse tasks, all due at once), their due instants set from how long one
//! push takes, measured first.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use super::agents::agent_id;
use super::offers::{lapsing_id, push, push_body, Due, Stream};
use super::options::Options;
use super::{epoch, instant};

/// Expectations per push of the preload (the burst and the backlog): as the burst test.
pub(crate) const PER_PUSH: usize = 10;

/// The preload's due instants (epoch seconds), and what set them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// The backlog's: 20 s into the steady window.
    pub(crate) backlog_due: i64,
    /// The burst's: halfway through the window, at least 30 s in.
    pub(crate) burst_due: i64,
    /// Seconds the probe push took.
    pub(crate) per_push: f64,
    /// Pushes the preload sends.
    pub(crate) pushes: f64,
}

/// Sends one push of `PER_PUSH` expectations (due a day on) from the first agent on `probe` and
/// sets the preload's due instants from how long it took, so that every one is raised before it
/// is due.
pub(crate) async fn plan(http: &reqwest::Client, api: &str, o: &Options, probe: &Stream) -> Plan {
    let started = Instant::now();
    let each: Vec<(String, String)> = (0..PER_PUSH)
        .map(|j| (format!("p{j}"), format!("p-{j}")))
        .collect();
    let body = push_body(
        "task-probe",
        &each,
        epoch(SystemTime::now()) as i64 + 86_400,
    );
    let until = Instant::now() + Duration::from_secs(30);
    push(http, api, &agent_id(0), &body, probe, until, false).await;
    let per_push = started.elapsed().as_secs_f64();
    let pushes = (o.burst() + o.backlog()).div_ceil(PER_PUSH) as f64;
    // Pushes run 16 at a time, but the stack serves them about two at a time on this machine.
    let estimate = pushes * per_push / 2.0 + 20.0;
    let t0 = epoch(SystemTime::now()) + estimate;
    let plan = Plan {
        backlog_due: (t0 + 20.0).ceil() as i64,
        burst_due: (t0 + (o.duration as f64 / 2.0).max(30.0)).ceil() as i64,
        per_push,
        pushes,
    };
    eprintln!(
        "goal_load: preload of {} pushes (one took {:.2} s): backlog due at {}, burst at {}",
        plan.pushes,
        plan.per_push,
        instant(plan.backlog_due),
        instant(plan.burst_due)
    );
    plan
}

/// Pushes `count` expectations for `agents` (round robin), `PER_PUSH` a push, all due at `due`,
/// group `group`, at most `in_flight` (and 16) pushes at once; every accepted one is added to
/// `due_set`. A refused push is sent again (a 500 too, as `stream` says) until two seconds
/// before `due`: raised later, it would lapse late.
#[allow(
    clippy::too_many_arguments,
    reason = "one call site per group, each spelled out"
)]
pub(crate) async fn preload(
    http: &reqwest::Client,
    api: &str,
    group: char,
    count: usize,
    agents: &[usize],
    due: i64,
    due_set: &Arc<Due>,
    stream: &Arc<Stream>,
    in_flight: usize,
) {
    let sem = Arc::new(tokio::sync::Semaphore::new(in_flight.min(16)));
    let until = Instant::now()
        + Duration::from_secs_f64((due as f64 - epoch(SystemTime::now()) - 2.0).max(0.0));
    let mut tasks = Vec::new();
    let mut n = 0;
    let mut push_no = 0;
    while n < count {
        let agent = agent_id(agents[push_no % agents.len()]);
        let each: Vec<(String, String)> = (n..(n + PER_PUSH).min(count))
            .map(|j| (lapsing_id(group, j, due), format!("{group}-{j}")))
            .collect();
        n += each.len();
        let body = push_body(&format!("task-{group}-{push_no}"), &each, due);
        push_no += 1;
        let permit = sem.clone().acquire_owned().await;
        let (http, api, due_set, stream) = (
            http.clone(),
            api.to_owned(),
            due_set.clone(),
            stream.clone(),
        );
        stream.offered.fetch_add(1, Ordering::Relaxed);
        tasks.push(tokio::spawn(async move {
            let _permit = permit;
            if push(&http, &api, &agent, &body, &stream, until, false).await {
                let mut d = due_set.lock().unwrap_or_else(PoisonError::into_inner);
                for (id, _) in each {
                    d.insert(id, (group, due));
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
}
