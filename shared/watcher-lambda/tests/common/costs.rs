//! `docs/costs.md`'s generated part: what each step of the README's scenario was measured to cost
//! on the emulator ([`Step`]), priced with `docs/prices.toml`.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Deserialize;

/// `docs/prices.toml`.
#[derive(Debug, Deserialize)]
pub struct Prices {
    /// The day the prices were last compared with AWS's pages.
    pub as_of: String,
    /// The region they are for.
    pub region: String,
    /// US dollars per unit.
    pub price: Price,
    /// What the emulator cannot measure.
    pub assumed: Assumed,
    /// The functions' durations, measured on the local AWS stack
    /// (`docs/lambda-durations.toml`).
    #[serde(skip)]
    pub durations: Durations,
}

/// Dollars per million requests or units, per GB-second, per GB.
#[derive(Debug, Deserialize)]
pub struct Price {
    pub api_gateway_per_million_requests: f64,
    pub lambda_per_million_requests: f64,
    pub lambda_per_gb_second: f64,
    pub dynamodb_per_million_wru: f64,
    pub dynamodb_per_million_rru: f64,
    pub scheduler_per_million_invocations: f64,
    pub sqs_fifo_per_million_requests: f64,
    pub logs_per_gb: f64,
}

/// Memory (GB), an agent's answer time (ms) and logs (KB): what no local run measures.
#[derive(Debug, Deserialize)]
pub struct Assumed {
    pub lambda_memory_gb: f64,
    /// How long an agent takes to answer a lapse task, added to each delivery's measured run.
    pub agent_answer_ms: f64,
    pub log_kb_per_run: f64,
}

/// `docs/lambda-durations.toml`: each kind of run's median, in milliseconds, measured on the
/// local AWS stack (tests/deployments/durations.rs).
#[derive(Debug, Default, Deserialize)]
pub struct Durations {
    /// The day they were measured.
    pub as_of: String,
    /// Rounds of the steps measured.
    pub rounds: u32,
    /// The medians.
    pub measured: Measured,
}

/// Median durations (ms) by kind of run.
#[derive(Debug, Default, Deserialize)]
pub struct Measured {
    pub push_ms: f64,
    pub fact_ms: f64,
    pub timer_ms: f64,
    pub submitter_ms: f64,
}

impl Prices {
    /// The repository's `docs/prices.toml`, with `docs/lambda-durations.toml`.
    pub fn load() -> Prices {
        let text = std::fs::read_to_string(docs().join("prices.toml")).expect("docs/prices.toml");
        let mut prices: Prices = toml::from_str(&text).expect("docs/prices.toml parses");
        let text = std::fs::read_to_string(docs().join("lambda-durations.toml"))
            .expect("docs/lambda-durations.toml");
        prices.durations = toml::from_str(&text).expect("docs/lambda-durations.toml parses");
        prices
    }

    /// A run's billed duration, in milliseconds: as measured, a delivery with the agent's
    /// assumed answer time.
    pub fn run_ms(&self, r: &Run) -> f64 {
        let m = &self.durations.measured;
        match r {
            Run::Push => m.push_ms,
            Run::Fact => m.fact_ms,
            Run::Timer => m.timer_ms,
            Run::Submitter => m.submitter_ms + self.assumed.agent_answer_ms,
        }
    }
}

/// The repository's `docs/`.
pub fn docs() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs")
}

/// Which function ran, for its duration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Run {
    /// The API function answering a push.
    Push,
    /// The API function answering a fact.
    Fact,
    /// The timer function.
    Timer,
    /// The submitter function.
    Submitter,
}

/// One step of the scenario, as measured.
#[derive(Debug, Clone, Default)]
pub struct Step {
    /// What the step is.
    pub name: &'static str,
    /// AWS requests by operation, counted by the clients' interceptor.
    pub requests: BTreeMap<String, u64>,
    /// DynamoDB read request units × 2.
    pub read_halves: u64,
    /// DynamoDB write request units.
    pub write_units: u64,
    /// HTTP API requests the step is (the test's calls of the API router).
    pub api_requests: u64,
    /// Function runs.
    pub runs: Vec<Run>,
    /// Schedules that fired.
    pub scheduler_invocations: u64,
    /// SQS requests the event sources make that the test stands in for: the receive and delete
    /// of a timer-queue message it hands the timer directly, the delete of a lapse message.
    pub event_source_sqs: u64,
    /// DynamoDB write units by the partition that took them (`table <pk>`, `<index> <pk>`).
    pub partition_units: BTreeMap<String, u64>,
}

impl Step {
    fn sqs(&self) -> u64 {
        self.requests
            .iter()
            .filter(|(op, _)| op.starts_with("SQS "))
            .map(|(_, n)| n)
            .sum::<u64>()
            + self.event_source_sqs
    }

    /// `self` and `other` together.
    pub fn and(&self, other: &Step) -> Step {
        let mut requests = self.requests.clone();
        for (op, n) in &other.requests {
            *requests.entry(op.clone()).or_default() += n;
        }
        Step {
            name: "",
            requests,
            read_halves: self.read_halves + other.read_halves,
            write_units: self.write_units + other.write_units,
            api_requests: self.api_requests + other.api_requests,
            runs: self.runs.iter().chain(&other.runs).copied().collect(),
            scheduler_invocations: self.scheduler_invocations + other.scheduler_invocations,
            event_source_sqs: self.event_source_sqs + other.event_source_sqs,
            partition_units: BTreeMap::new(),
        }
    }
}

/// `n / 2` as text: "20" or "20.5".
fn halves(n: u64) -> String {
    if n.is_multiple_of(2) {
        format!("{}", n / 2)
    } else {
        format!("{}.5", n / 2)
    }
}

fn runs_of(step: &Step) -> String {
    let mut counts: BTreeMap<Run, u64> = BTreeMap::new();
    for r in &step.runs {
        *counts.entry(*r).or_default() += 1;
    }
    counts
        .iter()
        .map(|(r, n)| format!("{} {n}", format!("{r:?}").to_lowercase()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The generated part of `docs/costs.md`: the prices used, the measured requests and units of
/// each step, and a million of each step in dollars.
pub fn render(steps: &[Step; 3], prices: &Prices) -> String {
    let p = &prices.price;
    let a = &prices.assumed;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Prices: `docs/prices.toml`, {} list prices as of {}, before free tiers.\n",
        prices.region, prices.as_of
    );
    out.push_str("| step | AWS requests, as measured |\n|---|---|\n");
    for s in steps {
        let cells: Vec<String> = s
            .requests
            .iter()
            .map(|(op, n)| format!("{op} {n}"))
            .collect();
        let _ = writeln!(out, "| {} | {} |", s.name, cells.join(", "));
    }
    out.push_str(
        "\n| step | DynamoDB RRU | DynamoDB WRU | API requests | function runs | schedules fired | SQS requests |\n|---|---|---|---|---|---|---|\n",
    );
    for s in steps {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            s.name,
            halves(s.read_halves),
            s.write_units,
            s.api_requests,
            runs_of(s),
            s.scheduler_invocations,
            s.sqs()
        );
    }
    let met = steps[0].and(&steps[1]);
    let lapse = &steps[2];
    let ms = |r: &Run| prices.run_ms(r);
    // Per million of a step: each measured count is millions of the priced unit.
    type Line = (&'static str, fn(&Step) -> f64, &'static str, f64);
    let gb_s =
        |s: &Step| -> f64 { s.runs.iter().map(ms).sum::<f64>() / 1000.0 * a.lambda_memory_gb };
    let logs_gb = |s: &Step| -> f64 { s.runs.len() as f64 * a.log_kb_per_run };
    let lines: [Line; 6] = [
        (
            "API Gateway",
            |s| s.api_requests as f64,
            "M requests",
            p.api_gateway_per_million_requests,
        ),
        (
            "Lambda requests",
            |s| s.runs.len() as f64,
            "M runs",
            p.lambda_per_million_requests,
        ),
        (
            "DynamoDB writes",
            |s| s.write_units as f64,
            "M WRU",
            p.dynamodb_per_million_wru,
        ),
        (
            "DynamoDB reads",
            |s| s.read_halves as f64 / 2.0,
            "M RRU",
            p.dynamodb_per_million_rru,
        ),
        (
            "Scheduler",
            |s| s.scheduler_invocations as f64,
            "M invocations",
            p.scheduler_per_million_invocations,
        ),
        (
            "SQS FIFO",
            |s| s.sqs() as f64,
            "M requests",
            p.sqs_fifo_per_million_requests,
        ),
    ];
    out.push_str(
        "\n| per million | satisfied in time (push + fact) | each lapse adds |\n|---|---|---|\n",
    );
    let mut totals = [0.0f64; 2];
    let cell = |q: f64, unit: &str, price: f64, total: &mut f64| -> String {
        let dollars = q * price;
        *total += dollars;
        if q == 0.0 {
            "—".to_owned()
        } else {
            format!("{} {unit} × ${price} = ${dollars:.2}", trim(q))
        }
    };
    for (name, quantity, unit, price) in lines {
        let left = cell(quantity(&met), unit, price, &mut totals[0]);
        let right = cell(quantity(lapse), unit, price, &mut totals[1]);
        let _ = writeln!(out, "| {name} | {left} | {right} |");
    }
    let compute = [gb_s(&met) * 1e6, gb_s(lapse) * 1e6];
    let logs = [logs_gb(&met), logs_gb(lapse)];
    let mut row = |name: &str, q: [f64; 2], unit: &str, price: f64| {
        let left = cell(q[0], unit, price, &mut totals[0]);
        let right = cell(q[1], unit, price, &mut totals[1]);
        let _ = writeln!(out, "| {name} | {left} | {right} |");
    };
    let compute_name = format!(
        "Lambda compute (durations measured {}, plus {} ms an agent's answer)",
        prices.durations.as_of,
        trim(a.agent_answer_ms)
    );
    row(&compute_name, compute, "GB-s", p.lambda_per_gb_second);
    row(
        "CloudWatch Logs (assumed 1 KB a run)",
        logs,
        "GB",
        p.logs_per_gb,
    );
    let _ = writeln!(
        out,
        "| **total** | **${:.2}** | **${:.2}** |\n\nSo a million expectations cost about **${:.2}** when every one is met in time, and about **${:.2}** when every one lapses once and is then met late.",
        totals[0],
        totals[1],
        totals[0],
        totals[0] + totals[1]
    );
    out
}

/// `q` with no needless decimals: 2, 0.5, 40,000.
fn trim(q: f64) -> String {
    // A quantity of a thousand or more is shown whole (a product of measured durations carries
    // float noise: 17025.000000000004).
    let q = if q.abs() >= 1000.0 { q.round() } else { q };
    if q.fract() == 0.0 {
        let n = q as u64;
        let s = n.to_string();
        let mut out = String::new();
        for (i, c) in s.chars().enumerate() {
            if i > 0 && (s.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        out
    } else {
        format!("{q}")
    }
}

/// Replaces what stands between `<!-- begin generated: {name} -->` and
/// `<!-- end generated: {name} -->` in `docs/{file}` with `body`; when they differ and
/// `UPDATE_DOCS` is unset, fails showing `body`.
pub fn check_generated(file: &str, name: &str, body: &str, how: &str) {
    let path = docs().join(file);
    let text = std::fs::read_to_string(&path).expect("doc");
    let begin = format!("<!-- begin generated: {name} -->\n");
    let end = format!("<!-- end generated: {name} -->");
    let start = text
        .find(&begin)
        .map(|i| i + begin.len())
        .unwrap_or_else(|| panic!("docs/{file} has no `{}` marker", begin.trim_end()));
    let stop = text[start..]
        .find(&end)
        .map(|i| start + i)
        .unwrap_or_else(|| panic!("docs/{file} has no `{end}` marker"));
    if text[start..stop] == *body {
        return;
    }
    if std::env::var_os("UPDATE_DOCS").is_some() {
        let updated = format!("{}{body}{}", &text[..start], &text[stop..]);
        std::fs::write(&path, updated).expect("write the doc");
        return;
    }
    panic!("docs/{file}'s generated part `{name}` differs; put this there, or run `UPDATE_DOCS=1 {how}`:\n\n{body}");
}

/// `docs/quotas.toml`.
#[derive(Debug, Deserialize)]
pub struct Quotas {
    /// The day they were last read from AWS's pages.
    pub as_of: String,
    /// The region they are for.
    pub region: String,
    /// The quotas.
    pub quota: Quota,
}

/// Default quotas, per second unless named otherwise.
#[derive(Debug, Deserialize)]
pub struct Quota {
    pub dynamodb_table_wru_per_second: f64,
    pub dynamodb_table_rru_per_second: f64,
    pub dynamodb_partition_wru_per_second: f64,
    pub scheduler_create_per_second: f64,
    pub scheduler_delete_per_second: f64,
    pub scheduler_invocations_per_second: f64,
    pub sqs_fifo_requests_per_second: f64,
    pub lambda_concurrency: f64,
    pub api_gateway_requests_per_second: f64,
}

impl Quotas {
    /// The repository's `docs/quotas.toml`.
    pub fn load() -> Quotas {
        let text = std::fs::read_to_string(docs().join("quotas.toml")).expect("docs/quotas.toml");
        toml::from_str(&text).expect("docs/quotas.toml parses")
    }
}

/// The partition families spread over shards by the hash of a key each input has of its own
/// (docs/dynamodb.md, "Partitions and their ceilings"): at a steady rate each shard takes its
/// share, a sixteenth (`timers` and `outbox-due`: a sixty-fourth).
const SHARDED: [&str; 8] = [
    "timers timers#",
    "outbox-due queued#",
    "live LIVE#",
    "table LIVECOUNT#",
    "outbox-follow ORIGINS#",
    "table OUTBOX#",
    "lapses-tenant LAPSES#",
    "lapses-agent LAPSES#",
];

/// Whether `partition` is one shard of a sharded family: it starts with one of [`SHARDED`] and
/// ends in `#<shard number>`. The unsharded partition an earlier version wrote in the same
/// family (`OUTBOX#{tenant}`, `LIVE#{tenant}#{agent}`) is not, so units charged to it are not
/// spread over shards it does not have.
fn is_shard(partition: &str) -> bool {
    SHARDED.iter().any(|f| partition.starts_with(f))
        && partition
            .rsplit_once('#')
            .is_some_and(|(_, k)| !k.is_empty() && k.bytes().all(|b| b.is_ascii_digit()))
}

/// The busiest partition `step` writes that other inputs write too, and the units a second it
/// takes at `rate` steps a second: a partition named after nothing of the step's own (`own`:
/// its subject, task, expectation and artifact ids) is shared; a sharded family's partition
/// ([`is_shard`]) takes its share (a sixteenth, a sixty-fourth for `timers` and `outbox-due`).
fn busiest_shared(step: &Step, own: &[&str], rate: f64) -> (String, f64) {
    step.partition_units
        .iter()
        .filter(|(p, _)| !own.iter().any(|o| p.contains(o)))
        .map(|(p, n)| {
            // `timers` and `outbox-due` are spread over 64 shards (`DUE_SHARDS`), the others 16.
            let due = p.starts_with("timers timers#") || p.starts_with("outbox-due queued#");
            let shards = match (is_shard(p), due) {
                (false, _) => 1.0,
                (true, true) => 64.0,
                (true, false) => 16.0,
            };
            (p.clone(), *n as f64 * rate / shards)
        })
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .unwrap_or_default()
}

/// The "At scale" part of `docs/costs.md`: the measured steps at a rate each, as a share of each
/// quota of `docs/quotas.toml`. `own` names the ids the scenario's inputs have of their own.
pub fn render_scale(steps: &[Step; 3], prices: &Prices, quotas: &Quotas, own: &[&str]) -> String {
    let q = &quotas.quota;
    let scenarios: [(&str, &Step, f64); 3] = [
        ("10,000 raises a second", &steps[0], 10_000.0),
        (
            "10,000 facts a second, each satisfying one",
            &steps[1],
            10_000.0,
        ),
        (
            "1,000,000 lapses due in one hour",
            &steps[2],
            1_000_000.0 / 3600.0,
        ),
    ];
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Quotas: `docs/quotas.toml`, {} defaults as of {}.\n",
        quotas.region, quotas.as_of
    );
    out.push_str("| resource (quota) |");
    for (name, _, _) in &scenarios {
        let _ = write!(out, " {name} |");
    }
    out.push_str("\n|---|---|---|---|\n");
    let count = |s: &Step, op: &str| *s.requests.get(op).unwrap_or(&0) as f64;
    let ms = |r: &Run| prices.run_ms(r);
    type Load<'a> = Box<dyn Fn(&Step) -> f64 + 'a>;
    let rows: Vec<(String, Load<'_>, f64)> = vec![
        (
            format!(
                "DynamoDB table writes ({} WRU/s)",
                trim(q.dynamodb_table_wru_per_second)
            ),
            Box::new(|s: &Step| s.write_units as f64),
            q.dynamodb_table_wru_per_second,
        ),
        (
            format!(
                "DynamoDB table reads ({} RRU/s)",
                trim(q.dynamodb_table_rru_per_second)
            ),
            Box::new(|s: &Step| s.read_halves as f64 / 2.0),
            q.dynamodb_table_rru_per_second,
        ),
        (
            format!(
                "Scheduler CreateSchedule ({}/s)",
                trim(q.scheduler_create_per_second)
            ),
            Box::new(move |s: &Step| count(s, "Scheduler CreateSchedule")),
            q.scheduler_create_per_second,
        ),
        (
            format!(
                "Scheduler DeleteSchedule ({}/s)",
                trim(q.scheduler_delete_per_second)
            ),
            Box::new(move |s: &Step| count(s, "Scheduler DeleteSchedule")),
            q.scheduler_delete_per_second,
        ),
        (
            format!(
                "Scheduler invocations ({}/s)",
                trim(q.scheduler_invocations_per_second)
            ),
            Box::new(|s: &Step| s.scheduler_invocations as f64),
            q.scheduler_invocations_per_second,
        ),
        (
            format!(
                "SQS FIFO requests, all actions as one ({}/s)",
                trim(q.sqs_fifo_requests_per_second)
            ),
            Box::new(|s: &Step| s.sqs() as f64),
            q.sqs_fifo_requests_per_second,
        ),
        (
            format!(
                "Lambda concurrency, measured durations ({})",
                trim(q.lambda_concurrency)
            ),
            Box::new(move |s: &Step| s.runs.iter().map(ms).sum::<f64>() / 1000.0),
            q.lambda_concurrency,
        ),
        (
            format!(
                "API Gateway ({}/s)",
                trim(q.api_gateway_requests_per_second)
            ),
            Box::new(|s: &Step| s.api_requests as f64),
            q.api_gateway_requests_per_second,
        ),
    ];
    for (name, load, quota) in &rows {
        let _ = write!(out, "| {name} |");
        for (_, step, rate) in &scenarios {
            let used = load(step) * rate;
            if used == 0.0 {
                out.push_str(" — |");
            } else {
                let _ = write!(
                    out,
                    " {} = {:.0}% |",
                    trim(used.round()),
                    used / quota * 100.0
                );
            }
        }
        out.push('\n');
    }
    let _ = write!(
        out,
        "| busiest shared DynamoDB partition ({} WRU/s) |",
        trim(q.dynamodb_partition_wru_per_second)
    );
    for (_, step, rate) in &scenarios {
        let (partition, used) = busiest_shared(step, own, *rate);
        let _ = write!(
            out,
            " `{partition}`: {} = {:.0}% |",
            trim(used.round()),
            used / q.dynamodb_partition_wru_per_second * 100.0
        );
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::is_shard;

    /// A shard of a sharded family is divided over its sixteen; the family's unsharded
    /// partition of an earlier version, and a partition of no family, are not.
    #[test]
    fn only_numbered_shards_count_as_shards() {
        assert!(is_shard("table OUTBOX#tenant-a#7"));
        assert!(is_shard("timers timers#15"));
        assert!(is_shard("table LIVECOUNT#tenant-a#booking#0"));
        assert!(!is_shard("table OUTBOX#tenant-a"));
        assert!(!is_shard("live LIVE#tenant-a#agent-7"));
        assert!(!is_shard("table RATE#tenant-a#booking"));
        assert!(!is_shard("table SUBJECT#tenant-a#shipment#12"));
    }
}
