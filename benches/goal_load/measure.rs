//! What the agents received against what was due: lateness by group, lost, sent twice, and
//! lapses that were never due.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use super::agents::{Agents, Arrival};
use super::epoch;
use super::offers::Due;

/// `x` to `digits` decimals (NaN stays NaN, printed as null).
pub(crate) fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// The `q` quantile of sorted `v` (nearest rank), NaN when empty.
pub(crate) fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
    v[i]
}

/// Lateness figures of one group of lapses, seconds after `dueAt`.
#[derive(Debug, Clone)]
pub struct Lateness {
    /// Lapses due (accepted raises whose `dueAt` passed).
    pub due: usize,
    /// Of them, arrived at their agent.
    pub arrived: usize,
    /// p50, p99 and max of arrival − `dueAt` (first arrival of each), seconds.
    pub p50: f64,
    /// p99.
    pub p99: f64,
    /// max.
    pub max: f64,
}

impl Lateness {
    /// The figures of `due` lapses of which `late` (sorted, seconds) arrived.
    fn of(due: usize, late: &[f64]) -> Lateness {
        Lateness {
            due,
            arrived: late.len(),
            p50: quantile(late, 0.5),
            p99: quantile(late, 0.99),
            max: late.last().copied().unwrap_or(f64::NAN),
        }
    }
}

/// The lapses' outcome.
#[derive(Debug)]
pub(crate) struct Outcome {
    /// By group (`steady`, `burst`, `backlog`) and `all`.
    pub(crate) lateness: BTreeMap<String, Lateness>,
    /// Due and never arrived.
    pub(crate) lost: usize,
    /// Extra arrivals of one `messageId`.
    pub(crate) twice: usize,
    /// Expectations that arrived as lapses and were never due.
    pub(crate) unexpected: usize,
}

impl Outcome {
    /// `arrivals` against `due` (expectation id → (group, dueAt)).
    pub(crate) fn of(arrivals: &[Arrival], due: &HashMap<String, (char, i64)>) -> Outcome {
        let mut first: HashMap<&str, SystemTime> = HashMap::new();
        let mut ids: HashMap<&str, usize> = HashMap::new();
        for a in arrivals {
            *ids.entry(a.message_id.as_str()).or_default() += 1;
            let e = first.entry(a.expectation_id.as_str()).or_insert(a.at);
            if a.at < *e {
                *e = a.at;
            }
        }
        let twice: usize = ids.values().map(|c| c - 1).sum();
        let unexpected = first.keys().filter(|id| !due.contains_key(**id)).count();
        let mut groups: BTreeMap<char, (usize, Vec<f64>)> = BTreeMap::new();
        for (id, (g, d)) in due {
            let e = groups.entry(*g).or_default();
            e.0 += 1;
            if let Some(at) = first.get(id.as_str()) {
                e.1.push(epoch(*at) - *d as f64);
            }
        }
        let mut all = Vec::new();
        let mut lateness = BTreeMap::new();
        let mut lost = 0;
        for (g, (n_due, mut l)) in groups {
            l.sort_by(f64::total_cmp);
            lost += n_due - l.len();
            all.extend_from_slice(&l);
            let name = match g {
                's' => "steady",
                'b' => "burst",
                _ => "backlog",
            };
            lateness.insert(name.to_owned(), Lateness::of(n_due, &l));
        }
        all.sort_by(f64::total_cmp);
        lateness.insert("all".to_owned(), Lateness::of(due.len(), &all));
        Outcome {
            lateness,
            lost,
            twice,
            unexpected,
        }
    }

    /// The lateness by group as the JSON line gives it.
    pub(crate) fn lateness_json(&self) -> serde_json::Map<String, Value> {
        self.lateness
            .iter()
            .map(|(k, l)| {
                (
                    k.clone(),
                    json!({ "due": l.due, "arrived": l.arrived, "p50_s": round(l.p50, 3),
                            "p99_s": round(l.p99, 3), "max_s": round(l.max, 3) }),
                )
            })
            .collect()
    }
}

/// Waits until every lapse of `due_set` arrived at the agents and the last was due, or
/// `patience` seconds after the last was due; then 10 s more, so that a second sending of the
/// last ones would be seen.
pub(crate) async fn wait_for_arrivals(agents: &Agents, due_set: &Due, patience: u64) {
    let last_due = due_set
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .values()
        .map(|(_, d)| *d)
        .max()
        .unwrap_or(0);
    let give_up = last_due as f64 + patience as f64;
    loop {
        let arrived: HashSet<String> = agents
            .arrivals()
            .into_iter()
            .map(|a| a.expectation_id)
            .collect();
        let missing = due_set
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .keys()
            .filter(|id| !arrived.contains(*id))
            .count();
        let now = epoch(SystemTime::now());
        if (missing == 0 && now > last_due as f64) || now > give_up {
            break;
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    tokio::time::sleep(Duration::from_secs(10)).await;
}
