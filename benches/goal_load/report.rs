//! The report: every figure of a run as one JSON value (the JSON line's `goal_load`), and the
//! human table printed before it.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use super::agents::Agents;
use super::cost::Runs;
use super::measure::{round, Outcome};
use super::offers::Stream;
use super::options::Options;
use super::resources::{first_throttled, resources_json, Model};

/// Everything one run measured.
#[derive(Debug)]
pub struct Report {
    /// The whole report as JSON (the JSON line's `goal_load`).
    pub json: Value,
    lost: usize,
    twice: usize,
    text: String,
}

impl Report {
    /// Due lapses that never arrived.
    pub fn lost(&self) -> usize {
        self.lost
    }

    /// `messageId`s that arrived more than once (each extra arrival counted).
    pub fn sent_twice(&self) -> usize {
        self.twice
    }

    /// The human table.
    pub fn table(&self) -> String {
        self.text.clone()
    }

    /// `{"goal_load": {...}}`, one line.
    pub fn json_line(&self) -> String {
        json!({ "goal_load": self.json }).to_string()
    }
}

/// What a run measured, for [`assemble`].
pub(crate) struct Measured<'a> {
    /// `nproc` and the CPU's model ([`machine`]).
    pub(crate) machine: Value,
    /// Whether aws-local took `--scale` (else the driver configured the limits part).
    pub(crate) scaled: bool,
    /// Seconds of the preload, the steady window and the whole run.
    pub(crate) seconds: (f64, f64, f64),
    pub(crate) raises: &'a Stream,
    pub(crate) facts: &'a Stream,
    pub(crate) preload: &'a Stream,
    /// Whether the preload ended after the backlog was due.
    pub(crate) raised_after_due: bool,
    pub(crate) outcome: &'a Outcome,
    pub(crate) agents: &'a Agents,
    pub(crate) model: &'a Model,
    pub(crate) runs: &'a Runs,
    pub(crate) cost: Value,
}

/// The refusals of every emulator's model and of Lambda's concurrency, by reason (`throttle`,
/// `conflict`, `size`, `window`).
fn refusals_by_reason(model: &Model) -> BTreeMap<String, f64> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for state in model.states.values() {
        if let Some(m) = state["refusals"]["by_reason"].as_object() {
            for (k, v) in m {
                *out.entry(k.clone()).or_default() += v.as_f64().unwrap_or(0.0);
            }
        }
    }
    if let Some(lambda) = model.resources.get("aws-local:lambda:concurrency") {
        *out.entry("throttle".to_owned()).or_default() += lambda.refusals;
    }
    out
}

/// The report of a run of `o`.
pub(crate) fn assemble(o: &Options, m: Measured<'_>) -> Report {
    let (preload_secs, steady_secs, run_secs) = m.seconds;
    let n = o.agents();
    let json = json!({
        "date": jiff::Timestamp::now().strftime("%Y-%m-%d").to_string(),
        "machine": m.machine,
        "scale": o.scale,
        "model_limits_on": !m.model.states.is_empty()
            && m.model.states.values().all(|s| s["configured"] == true),
        "scale_flag": m.scaled,
        "short": o.short,
        "agents": n,
        "tenants": o.tenants.min(n),
        "goal_at_scale": { "raises_per_s": o.rate(), "facts_per_s": o.rate(),
                            "lapses_per_s": round(o.lapse_rate(), 4), "burst": o.burst(),
                            "backlog": o.backlog(), "duration_s": o.duration },
        "visibility_timeout_cap_s": o.visibility_cap,
        "sweep_every_s": o.rate_cap.unwrap_or(300),
        "api_throttle": o.api_rate.map(|r| json!({ "rate_per_s": r, "burst": r.saturating_mul(2) })),
        "seconds": { "preload": round(preload_secs, 1), "steady": round(steady_secs, 1), "run": round(run_secs, 1) },
        "raises": m.raises.summary(steady_secs),
        "facts": m.facts.summary(steady_secs),
        "preload": m.preload.summary(preload_secs),
        "raised_after_due": m.raised_after_due,
        "lateness": m.outcome.lateness_json(),
        "lost": m.outcome.lost,
        "sent_twice": m.outcome.twice,
        "unexpected_lapses": m.outcome.unexpected,
        "other_agent_requests": m.agents.other.load(Ordering::Relaxed),
        "agent_lookups": m.agents.lookups.load(Ordering::Relaxed),
        "resources": resources_json(m.model),
        "refusals_by_reason": refusals_by_reason(m.model),
        "throttled_first": first_throttled(m.model),
        "function_runs": m.runs.by_function.iter().map(|(k, v)| (k.clone(), json!({ "runs": v.0, "billed_s": round(v.1 / 1000.0, 2) }))).collect::<serde_json::Map<_, _>>(),
        "cost": m.cost,
        "model_states": m.model.states,
    });
    let text = table(&json);
    Report {
        json,
        lost: m.outcome.lost,
        twice: m.outcome.twice,
        text,
    }
}

/// `nproc` and `lscpu`'s model name.
pub(crate) fn machine() -> Value {
    let cores = std::thread::available_parallelism().map_or(0, std::num::NonZero::get);
    let model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|c| {
            c.lines().find_map(|l| {
                l.strip_prefix("model name")?
                    .split_once(':')
                    .map(|(_, m)| m.trim().to_owned())
            })
        })
        .unwrap_or_default();
    json!({ "cores": cores, "cpu": model })
}

/// `{"200": 118, "429": 0}` as `200 118, 429 0`.
fn by_status(statuses: &Value) -> String {
    statuses
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{} {v}", if k == "0" { "no answer" } else { k }))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// The human table of a report's JSON.
fn table(j: &Value) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "goal load at K = {} ({} agents, {} tenants; model limits {}): {} on {} cores ({})",
        j["scale"],
        j["agents"],
        j["tenants"],
        if j["model_limits_on"] == true {
            "on"
        } else {
            "NOT on"
        },
        j["date"].as_str().unwrap_or(""),
        j["machine"]["cores"],
        j["machine"]["cpu"].as_str().unwrap_or("")
    );
    for k in ["raises", "facts", "preload"] {
        let r = &j[k];
        let _ = writeln!(
            s,
            "  {k:8} offered {:>7} accepted {:>7} ({}/s) refused, sent again {:>5} failed {:>5} answer p50 {} ms p99 {} ms",
            r["offered"], r["accepted"], r["accepted_per_second"], r["refused_then_retried"], r["failed"],
            r["answer_ms_p50"], r["answer_ms_p99"]
        );
        let _ = writeln!(
            s,
            "           answers by status: {}",
            by_status(&r["statuses"])
        );
    }
    let _ = writeln!(s, "  lapse lateness (arrival − dueAt), seconds:");
    if let Some(m) = j["lateness"].as_object() {
        for (k, l) in m {
            let _ = writeln!(
                s,
                "    {k:8} due {:>6} arrived {:>6}  p50 {:>8} p99 {:>8} max {:>8}",
                l["due"], l["arrived"], l["p50_s"], l["p99_s"], l["max_s"]
            );
        }
    }
    let _ = writeln!(s, "  lost {}  sent twice {}", j["lost"], j["sent_twice"]);
    let _ = writeln!(s, "  resources (peak rate / limit at 1/K; refusals):");
    if let Some(l) = j["resources"].as_array() {
        for r in l {
            let _ = writeln!(
                s,
                "    {:56} share {:>8} peak {:>9}/s limit {:>9} calls {:>8} refusals {:>6}",
                r["resource"].as_str().unwrap_or(""),
                r["share"],
                r["peak_per_s"],
                r["limit_per_s"],
                r["calls"],
                r["refusals"]
            );
        }
    }
    let _ = writeln!(
        s,
        "  refusals by reason (throttle: come back later): {}",
        j["refusals_by_reason"]
    );
    let _ = writeln!(s, "  throttled first: {}", j["throttled_first"]);
    let _ = writeln!(
        s,
        "  cost: ${} for {} expectations = ${} per million (not counted: {})",
        j["cost"]["total_usd"],
        j["cost"]["expectations_raised"],
        j["cost"]["usd_per_million_expectations"],
        j["cost"]["not_counted"]
    );
    s
}
