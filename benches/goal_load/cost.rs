//! The cost of what the run counted, at `docs/prices.toml`: API requests, function runs and
//! their billed GB-seconds, DynamoDB's read and write request units, Scheduler's invocations,
//! SQS requests, the functions' log bytes.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::{json, Value};

use super::measure::round;
use super::resources::Model;
use super::stack::root;

/// What the stack's log says the functions did.
#[derive(Debug, Default)]
pub(crate) struct Runs {
    /// Each function's runs and billed milliseconds (its `REPORT` lines).
    pub(crate) by_function: BTreeMap<String, (usize, f64)>,
    /// Runs Scheduler invoked (`Event: schedule`: the deadlines' schedules and the sweep).
    pub(crate) scheduled: usize,
    /// Bytes the functions logged.
    pub(crate) log_bytes: u64,
}

/// Reads the stack's log at `log` (a missing log: nothing counted).
pub(crate) fn runs_of(log: &Path) -> Runs {
    let mut runs = Runs::default();
    let Ok(f) = std::fs::File::open(log) else {
        return runs;
    };
    for line in BufReader::new(f).lines().map_while(Result::ok) {
        let Some(rest) = line.strip_prefix('[') else {
            continue;
        };
        let Some((name, text)) = rest.split_once("] ") else {
            continue;
        };
        if name == "aws-local" {
            continue;
        }
        runs.log_bytes += line.len() as u64 + 1;
        if let Some(r) = text.strip_prefix("REPORT ") {
            let billed = r
                .split("Billed Duration: ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|s| s.parse::<f64>().ok())
                .unwrap_or(0.0);
            let e = runs.by_function.entry(name.to_owned()).or_default();
            e.0 += 1;
            e.1 += billed;
            if r.ends_with("Event: schedule") {
                runs.scheduled += 1;
            }
        }
    }
    runs
}

/// The functions' memory in GB: `template.yaml`'s `MemorySize` (Globals), else 0.128.
fn memory_gb() -> f64 {
    std::fs::read_to_string(root().join("template.yaml"))
        .ok()
        .and_then(|t| {
            t.lines().find_map(|l| {
                l.trim()
                    .strip_prefix("MemorySize:")?
                    .trim()
                    .parse::<f64>()
                    .ok()
            })
        })
        .map_or(0.128, |mb| mb / 1024.0)
}

/// The DynamoDB request units the model counted (`dynamodb_units` of each emulator's state:
/// every table's and global index's, what on demand bills): (read, write, by table), or None
/// when no state counts them (a model from before it did).
fn dynamodb_units(model: &Model) -> Option<(f64, f64, serde_json::Map<String, Value>)> {
    let states: Vec<&Value> = model
        .states
        .values()
        .filter_map(|s| s.get("dynamodb_units"))
        .collect();
    if states.is_empty() {
        return None;
    }
    let sum = |k: &str| states.iter().filter_map(|u| u[k].as_f64()).sum::<f64>();
    let by_table = states
        .iter()
        .filter_map(|u| u["by_table"].as_object())
        .flat_map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())))
        .collect();
    Some((sum("read"), sum("write"), by_table))
}

/// The cost of what was counted, at `docs/prices.toml`: each line (`counted`, `usd`), what
/// could not be counted, the total, the total per million of `expectations` raised, and the
/// DynamoDB units by table and index.
///
/// # Errors
/// `docs/prices.toml` unreadable or not TOML.
pub(crate) fn cost(
    model: &Model,
    api_requests: usize,
    runs: &Runs,
    expectations: usize,
) -> anyhow::Result<Value> {
    let prices: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join("docs/prices.toml"))?)?;
    let p = |k: &str| {
        prices["price"]
            .get(k)
            .and_then(toml::Value::as_float)
            .unwrap_or(f64::NAN)
    };
    // What the model counted, by what it prices: DynamoDB units (their totals), SQS requests
    // (every queue's actions).
    let units = dynamodb_units(model);
    // Each queue at its own price: the lapse queue is FIFO (`….fifo`), the timer queue standard.
    let sqs_meters = |fifo: bool| -> Option<f64> {
        let calls: Vec<f64> = model
            .resources
            .iter()
            .filter(|(k, _)| k.starts_with("sqs:") && !k.ends_with(":backlog-window"))
            .filter(|(k, _)| k.contains(".fifo:") == fifo)
            .map(|(_, r)| r.calls)
            .collect();
        (!calls.is_empty()).then(|| calls.iter().sum())
    };
    let (sqs_fifo, sqs_standard) = (sqs_meters(true), sqs_meters(false));
    // Scheduler's invocations: the deadlines' schedules deliver to the timer queue (their
    // target in template.yaml), so each is one `SendMessage` there (the functions send batches,
    // `SendMessageBatch`); the sweep's invokes the timer function (`Event: schedule` runs).
    let to_timer_queue: f64 = model
        .resources
        .iter()
        .filter(|(k, _)| k.starts_with("sqs:") && k.ends_with("TimerQueue:SendMessage"))
        .map(|(_, r)| r.calls)
        .sum();
    let sched = Some(to_timer_queue + runs.scheduled as f64);
    let lambda_runs: usize = runs.by_function.values().map(|r| r.0).sum();
    let gb_s: f64 = runs.by_function.values().map(|r| r.1 / 1000.0).sum::<f64>() * memory_gb();
    let lines = [
        (
            "api_gateway",
            Some(api_requests as f64),
            p("api_gateway_per_million_requests") / 1e6,
        ),
        (
            "lambda_requests",
            Some(lambda_runs as f64),
            p("lambda_per_million_requests") / 1e6,
        ),
        ("lambda_gb_seconds", Some(gb_s), p("lambda_per_gb_second")),
        (
            "dynamodb_wru",
            units.as_ref().map(|u| u.1),
            p("dynamodb_per_million_wru") / 1e6,
        ),
        (
            "dynamodb_rru",
            units.as_ref().map(|u| u.0),
            p("dynamodb_per_million_rru") / 1e6,
        ),
        (
            "scheduler_invocations",
            sched,
            p("scheduler_per_million_invocations") / 1e6,
        ),
        (
            "sqs_fifo_requests",
            sqs_fifo,
            p("sqs_fifo_per_million_requests") / 1e6,
        ),
        (
            "sqs_standard_requests",
            sqs_standard,
            p("sqs_standard_per_million_requests") / 1e6,
        ),
        (
            "logs_gb",
            Some(runs.log_bytes as f64 / 1e9),
            p("logs_per_gb"),
        ),
    ];
    let mut out = serde_json::Map::new();
    let mut total = 0.0;
    let mut missing = Vec::new();
    for (name, count, price) in lines {
        match count {
            Some(c) => {
                total += c * price;
                out.insert(
                    name.into(),
                    json!({ "counted": round(c, 3), "usd": round(c * price, 6) }),
                );
            }
            None => missing.push(name),
        }
    }
    Ok(json!({
        "lines": out,
        "not_counted": missing,
        "total_usd": round(total, 6),
        "expectations_raised": expectations,
        "usd_per_million_expectations": if expectations > 0 { json!(round(total / expectations as f64 * 1e6, 2)) } else { Value::Null },
        "dynamodb_units_by_table": units.map(|u| Value::Object(u.2)),
    }))
}
