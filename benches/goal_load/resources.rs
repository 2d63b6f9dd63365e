//! The model's counts: each emulator's `GET /_model/limits` (infra/aws_model/limits.py
//! `state()`), read once a second while the load runs, Lambda's concurrency from the stack's
//! own report when it stops, and what throttled first.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::measure::round;

/// One resource as `GET /_model/limits` counts it.
#[derive(Debug, Clone, Default)]
pub struct Resource {
    /// Calls (or units) it counted.
    pub calls: f64,
    /// Calls it refused.
    pub refusals: f64,
    /// Its refusals by reason (`throttle`, `conflict`, `size`, `window`), when the model says.
    pub reasons: BTreeMap<String, f64>,
    /// The highest rate it saw, per second.
    pub peak: f64,
    /// Its limit at 1/K, per second (or the quota's own unit).
    pub limit: f64,
    /// What it counted in all, in `unit` × seconds (a table's read or write units, its
    /// indexes' included), when the model says.
    pub total: Option<f64>,
    /// The unit of `peak` and `limit`.
    pub unit: String,
    /// Seconds into the run when the driver first saw a refusal of it.
    pub first_refusal: Option<f64>,
}

/// Every resource of every `/_model/limits` state, by name, and the raw states by emulator.
#[derive(Debug, Default)]
pub(crate) struct Model {
    pub(crate) resources: BTreeMap<String, Resource>,
    pub(crate) states: BTreeMap<String, Value>,
}

/// A number from `v[key]` for the first of `keys` present.
fn number(v: &Value, keys: &[&str]) -> Option<f64> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_f64))
}

/// A count that is a number, or an object of counts by kind (summed).
fn count(v: Option<&Value>) -> f64 {
    match v {
        // `+ 0.0`: an empty sum is -0.0.
        Some(Value::Object(m)) => m.values().filter_map(Value::as_f64).sum::<f64>() + 0.0,
        Some(v) => v.as_f64().unwrap_or(0.0),
        None => 0.0,
    }
}

/// The resources of one `/_model/limits` state: `resources`, an object of name → `{calls,
/// refusals: {kind: n}, refusals_by_reason: {reason: n}, limit, unit, peak, peak_share,
/// total}`.
fn resources_of(state: &Value) -> Vec<(String, Resource)> {
    let Some(Value::Object(m)) = state.get("resources") else {
        return Vec::new();
    };
    m.iter()
        .map(|(name, e)| {
            let reasons = e
                .get("refusals_by_reason")
                .and_then(Value::as_object)
                .map(|r| {
                    r.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                        .collect()
                })
                .unwrap_or_default();
            (
                name.clone(),
                Resource {
                    calls: count(e.get("calls")),
                    refusals: count(e.get("refusals")),
                    reasons,
                    peak: number(e, &["peak", "peak_rate"]).unwrap_or(0.0),
                    limit: number(e, &["limit"]).unwrap_or(0.0),
                    total: number(e, &["total", "used"]),
                    unit: e
                        .get("unit")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                    first_refusal: None,
                },
            )
        })
        .collect()
}

/// Reads `/_model/limits` at each of `bases` (emulator name, base URL) into `model`, noting
/// resources refused for the first time at `since` seconds.
pub(crate) async fn read_model(
    http: &reqwest::Client,
    bases: &[(String, String)],
    model: &Mutex<Model>,
    since: f64,
) {
    for (name, base) in bases {
        let Ok(resp) = http
            .get(format!("{base}/_model/limits"))
            .timeout(Duration::from_secs(5))
            .send()
            .await
        else {
            continue;
        };
        if !resp.status().is_success() {
            continue;
        }
        let Ok(state) = resp.json::<Value>().await else {
            continue;
        };
        let mut m = model.lock().unwrap_or_else(PoisonError::into_inner);
        // The model's names start with their service (`dynamodb:…`, `sqs:…`, `scheduler:…`),
        // and each service is in one emulator.
        for (key, mut now) in resources_of(&state) {
            let first = m.resources.get(&key).and_then(|old| old.first_refusal);
            now.first_refusal = first.or((now.refusals > 0.0).then_some(since));
            m.resources.insert(key, now);
        }
        m.states.insert(name.clone(), state);
    }
}

/// Reads the model into `model` once a second from `start` on, until the task is aborted.
pub(crate) fn poll(
    http: &reqwest::Client,
    bases: &[(String, String)],
    model: &Arc<Mutex<Model>>,
    start: Instant,
) -> tokio::task::JoinHandle<()> {
    let (http, model, bases) = (http.clone(), model.clone(), bases.to_vec());
    tokio::spawn(async move {
        loop {
            read_model(&http, &bases, &model, start.elapsed().as_secs_f64()).await;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    })
}

/// For an aws-local without `--scale`: configures the limits part on each emulator (`POST
/// /_model/limits {"k": K}`) as `--scale` would, saying on standard error where it could not.
pub(crate) async fn configure_limits(http: &reqwest::Client, bases: &[(String, String)], k: u64) {
    for (name, base) in bases {
        let answer = http
            .post(format!("{base}/_model/limits"))
            .json(&json!({ "k": k }))
            .send()
            .await;
        match answer {
            Ok(a) if a.status().is_success() => {}
            Ok(a) => eprintln!(
                "goal_load: the {name} emulator's limits part answered {}",
                a.status()
            ),
            Err(e) => eprintln!("goal_load: the {name} emulator's limits part: {e}"),
        }
    }
}

/// Lambda's concurrency as the stack said when it stopped (infra/aws_local/scale.py `report`:
/// `Lambda: peak concurrency P of A; throttles {...}`), as the resource
/// `aws-local:lambda:concurrency` (its limit the account's concurrency at 1/K).
pub(crate) fn lambda_of(log: &Path, model: &mut Model) {
    let Ok(text) = std::fs::read_to_string(log) else {
        return;
    };
    let Some(line) = text
        .lines()
        .rev()
        .find_map(|l| l.split_once("Lambda: peak concurrency ").map(|(_, r)| r))
    else {
        return;
    };
    let mut words = line.split_whitespace();
    let peak = words.next().and_then(|w| w.parse::<f64>().ok());
    let limit = words
        .nth(1)
        .and_then(|w| w.trim_end_matches(';').parse::<f64>().ok());
    // `{'api': 3877, 'timer': 11}`, or `none`; then `first ('api', 26.984)` when any.
    let throttles: f64 = line
        .split_once("throttles {")
        .and_then(|(_, t)| t.split_once('}'))
        .map(|(t, _)| {
            t.split(',')
                .filter_map(|kv| kv.rsplit(':').next()?.trim().parse::<f64>().ok())
                .sum()
        })
        .unwrap_or(0.0);
    let first = line
        .split_once("first (")
        .and_then(|(_, f)| f.split_once(')'))
        .and_then(|(f, _)| f.rsplit(',').next()?.trim().parse::<f64>().ok());
    if let (Some(peak), Some(limit)) = (peak, limit) {
        model.resources.insert(
            "aws-local:lambda:concurrency".to_owned(),
            Resource {
                calls: 0.0,
                refusals: throttles,
                // A throttled invocation: the caller (the HTTP API, an event source) retries.
                reasons: BTreeMap::from([("throttle".to_owned(), throttles)]),
                peak,
                limit,
                total: None,
                unit: "concurrent executions".to_owned(),
                // Seconds after the stack set its limits up, as the emulators' `first_refusal`.
                first_refusal: first,
            },
        );
    }
}

/// The share of its limit a resource's busiest second used (0 without a limit).
fn share(r: &Resource) -> f64 {
    if r.limit > 0.0 {
        r.peak / r.limit
    } else {
        0.0
    }
}

/// Every resource, the highest share of its limit first, as the JSON line gives them.
pub(crate) fn resources_json(model: &Model) -> Vec<Value> {
    let mut resources: Vec<(&String, &Resource)> = model.resources.iter().collect();
    resources.sort_by(|a, b| share(b.1).total_cmp(&share(a.1)));
    resources
        .iter()
        .map(|(k, r)| {
            json!({ "resource": k, "calls": r.calls, "refusals": r.refusals,
                    "refusals_by_reason": r.reasons,
                    "peak_per_s": round(r.peak, 3), "limit_per_s": r.limit, "unit": r.unit,
                    "total": r.total.map(|t| round(t, 3)),
                    "share": if r.limit > 0.0 { json!(round(share(r), 4)) } else { Value::Null },
                    "first_refusal_s": r.first_refusal.map(|t| round(t, 1)) })
        })
        .collect()
}

/// What was refused first: the earliest `first_refusal` of the emulators' states (seconds
/// since the stack configured the model, at its start) and of Lambda's concurrency; else the
/// first the driver saw in its reads once a second (seconds since the load began).
pub(crate) fn first_throttled(model: &Model) -> Option<Value> {
    let lambda_name = "aws-local".to_owned();
    model
        .states
        .iter()
        .filter_map(|(emulator, st)| {
            let f = st.get("first_refusal").filter(|f| f.is_object())?;
            Some((emulator, f.clone(), f["seconds"].as_f64()?))
        })
        .chain(
            model
                .resources
                .get("aws-local:lambda:concurrency")
                .and_then(|r| r.first_refusal)
                .map(|t| {
                    (
                        &lambda_name,
                        json!({ "resource": "lambda:concurrency", "kind": "throttle",
                                "reason": "throttle", "seconds": t }),
                        t,
                    )
                }),
        )
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .map(|(emulator, f, _)| {
            json!({ "emulator": emulator, "resource": f["resource"], "kind": f["kind"],
                    "reason": f["reason"], "seconds_after_start": f["seconds"] })
        })
        .or_else(|| {
            model
                .resources
                .iter()
                .filter_map(|(k, r)| Some((k, r.first_refusal?)))
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(k, t)| json!({ "resource": k, "seconds_into_load": round(t, 1) }))
        })
}
