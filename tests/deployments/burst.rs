//! The burst measurement (issue 22's check, run by hand): 200 lapse tasks due at one instant
//! across the fixture's 20 agents whose answers take 300 ms, timed from the deadline to the
//! arrival of each lapse task at its agent.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;

use super::harness::{burst_agent, Deployment, Fixture};
use crate::common::*;

/// Lapse tasks per agent (20 agents: 200 in all).
const PER_AGENT: usize = 10;

/// What the burst measured, in seconds after the deadline (wall clock of this machine).
#[derive(Debug)]
pub struct Burst {
    /// Seconds all the pushes that raised the expectations took.
    pub raising: f64,
    /// When the first lapse task arrived.
    pub first: f64,
    /// When half of them had arrived.
    pub median: f64,
    /// When the last one arrived.
    pub last: f64,
    /// Lapse tasks that arrived (distinct `messageId`s), and duplicates seen.
    pub arrived: usize,
    /// `SendMessage` requests beyond one per `messageId`.
    pub duplicates: usize,
    /// Per agent, in fixture order: when its first and its last lapse task arrived.
    pub agents: Vec<(f64, f64)>,
}

/// Raises 10 expectations on each burst agent (each on its own subject, one push per agent),
/// all due at one instant `lead` ahead with no grace, and waits for every lapse task to arrive,
/// at most `patience` after the deadline.
pub async fn run(d: Arc<Deployment>, f: Arc<Fixture>, lead: u64, patience: Duration) -> Burst {
    let started = Instant::now();
    let due = plus(
        Timestamp::from_second(Timestamp::now().as_second()).unwrap(),
        lead as i64,
    );
    for (i, _) in f.burst.iter().enumerate() {
        let agent = burst_agent(i);
        let task = format!("task-{agent}");
        let each: Vec<(String, String)> = (0..PER_AGENT)
            .map(|j| (format!("exp-{agent}-{j}"), format!("PA-{agent}-{j}")))
            .collect();
        let body = expectations_on(&task, &each, due, "PT0S");
        let a = d.push(&agent, &body).await;
        assert_eq!(a.status, 200, "{a:?}");
        assert_eq!(
            a.body["raised"].as_array().map(Vec::len),
            Some(PER_AGENT),
            "{a:?}"
        );
    }
    let raising = started.elapsed().as_secs_f64();
    let deadline = Instant::now()
        + Duration::from_millis(
            u64::try_from((due.as_millisecond() - Timestamp::now().as_millisecond()).max(0))
                .unwrap_or(0),
        );
    assert!(
        raising < lead as f64,
        "raising took {raising:.1} s, past the deadline"
    );
    let want = f.burst.len() * PER_AGENT;
    let mut arrivals: Vec<f64> = Vec::new();
    let mut seen = BTreeSet::new();
    let mut agents = vec![(f64::NAN, f64::NAN); f.burst.len()];
    let end = deadline + patience;
    while seen.len() < want && Instant::now() < end {
        let now = Instant::now();
        let since = now.saturating_duration_since(deadline).as_secs_f64();
        for (a, (first, last)) in f.burst.iter().zip(agents.iter_mut()) {
            for id in a.sent_message_ids() {
                if seen.insert(id) {
                    arrivals.push(since);
                    if first.is_nan() {
                        *first = since;
                    }
                    *last = since;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let sends: usize = f.burst.iter().map(|a| a.sent_message_ids().len()).sum();
    arrivals.sort_by(f64::total_cmp);
    let at = |q: usize| arrivals.get(q).copied().unwrap_or(f64::NAN);
    Burst {
        raising,
        first: at(0),
        median: at(arrivals.len() / 2),
        last: at(arrivals.len().saturating_sub(1)),
        arrived: seen.len(),
        duplicates: sends - seen.len(),
        agents,
    }
}
