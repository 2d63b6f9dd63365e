//! The functions' durations on the local AWS stack (issue 22's cost model, run by hand): the
//! README's steps driven through the real function binaries, each invocation's duration read
//! from the stack's `REPORT` lines (infra/aws_local/runtime.py, as Lambda writes them), and
//! their medians by what the run does. `docs/lambda-durations.toml` keeps the figures the cost
//! table multiplies (`docs/costs.md`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::json;

use super::harness::{burst_agent, Deployment, Fixture};
use crate::common::*;

/// Rounds of the steps: each raises two expectations on their own subjects (one push), reports
/// the fact that satisfies the first, and lets the second lapse overdue.
pub const ROUNDS: usize = 20;

/// The durations of one kind of run, in milliseconds.
#[derive(Debug, Default, Clone)]
pub struct Runs {
    /// Each run's duration, in the order they ended.
    pub ms: Vec<f64>,
}

impl Runs {
    /// The median (the mean of the two middle runs for an even count).
    pub fn median(&self) -> f64 {
        percentile(&self.ms, 0.5)
    }

    /// The 90th percentile.
    pub fn p90(&self) -> f64 {
        percentile(&self.ms, 0.9)
    }
}

fn percentile(values: &[f64], p: f64) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    if v.is_empty() {
        return f64::NAN;
    }
    let at = p * (v.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    v[lo] + (v[hi] - v[lo]) * (at - lo as f64)
}

/// Runs by `{function} {event}` (`api POST /v1/facts`, `timer schedule`, `submitter
/// sqs:…`), read from the `REPORT` lines of `log`.
pub fn reports(log: &str) -> BTreeMap<String, Runs> {
    let mut out: BTreeMap<String, Runs> = BTreeMap::new();
    for line in log.lines() {
        let Some((head, rest)) = line.split_once(" REPORT RequestId: ") else {
            continue;
        };
        let function = head.trim_start_matches('[').trim_end_matches(']');
        let ms = rest
            .split_once("Duration: ")
            .and_then(|(_, r)| r.split_once(" ms"))
            .and_then(|(n, _)| n.parse::<f64>().ok());
        let event = rest.split_once(" Event: ").map(|(_, e)| e);
        if let (Some(ms), Some(event)) = (ms, event) {
            out.entry(format!("{function} {event}"))
                .or_default()
                .ms
                .push(ms);
        }
    }
    out
}

/// Drives [`ROUNDS`] rounds on `d` over the fixture's burst agents (answering at once), and
/// waits until every lapse task arrived.
pub async fn drive(d: Arc<Deployment>, f: Arc<Fixture>) {
    let mut lapsing = Vec::new();
    for round in 0..ROUNDS {
        let agent = burst_agent(round % f.burst.len());
        let due = plus(
            Timestamp::from_second(Timestamp::now().as_second()).unwrap(),
            6,
        );
        let task = format!("task-dur-{round}");
        let each: Vec<(String, String)> = ["met", "late"]
            .iter()
            .map(|which| {
                (
                    format!("exp-dur-{round}-{which}"),
                    format!("PA-dur-{round}-{which}"),
                )
            })
            .collect();
        let body = expectations_on(&task, &each, due, "PT0S");
        let a = d.push(&agent, &body).await;
        assert_eq!(a.status, 200, "{a:?}");
        let subject = format!("PA-dur-{round}-met");
        let fact = json!({
            "factKey": format!("shipment.manifest.received:{subject}"),
            "observedAt": fmt(Timestamp::from_second(Timestamp::now().as_second()).unwrap()),
            "subject": { "type": "shipment", "id": subject },
        });
        let a = d.report(&fact).await;
        assert_eq!(a.status, 200, "{a:?}");
        lapsing.push((round % f.burst.len(), format!("exp-dur-{round}-late")));
    }
    let arrived = || {
        lapsing.iter().all(|(i, id)| {
            f.burst[*i]
                .sent_message_ids()
                .iter()
                .any(|m| m.starts_with(&format!("lapse:{id}:")))
        })
    };
    let patience = d.patience() + Duration::from_secs(60);
    assert!(
        wait_until(|| async { arrived() }, patience).await,
        "not every lapse task arrived within {patience:?}\n{}",
        d.log_tail().await
    );
}
