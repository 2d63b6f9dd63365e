//! `docs/costs.md`'s generated part: what each step of the README's scenario was measured to cost
//! on the emulator ([`Step`]), priced with `docs/prices.toml` as a range: each of its `[range]`
//! parameters at its low and its high end ([`Range`]).

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
    /// The parameters of the range, each `[low, high]`.
    pub range: Range,
    /// The log bytes each step writes, as last measured.
    pub logs: LogBytes,
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
    pub sqs_standard_per_million_requests: f64,
    pub sqs_fifo_per_million_requests: f64,
    pub logs_per_gb: f64,
}

/// Memory (GB), an agent's answer time (ms) and the log lines no test prints (bytes): what no
/// local run measures.
#[derive(Debug, Deserialize)]
pub struct Assumed {
    pub lambda_memory_gb: f64,
    /// How long an agent takes to answer a lapse task or a `GetTask`, added to each delivery's
    /// measured run and billed for each poll.
    pub agent_answer_ms: f64,
    /// Lambda's own lines of each run (`platform.start`, `platform.report`, JSON), in bytes.
    pub platform_log_bytes_per_run: f64,
    /// The HTTP API's access-log line of each request, in bytes.
    pub api_access_log_bytes: f64,
}

/// The bytes of log lines each step's runs write at `info` (application lines and EMF lines),
/// as the cost test last measured them: it fails when it measures more.
#[derive(Debug, Deserialize)]
pub struct LogBytes {
    pub as_of: String,
    pub push: u64,
    pub status: u64,
    pub fact: u64,
    pub lapse: u64,
    pub poll: u64,
}

/// The range's parameters, each `[low, high]`: the low end of every one gives the low figure.
#[derive(Debug, Deserialize)]
pub struct Range {
    /// Bytes added to the README's expectation (its `expects` text): both ends are measured.
    pub subject_extra_bytes: [usize; 2],
    /// Status pushes of the origin task besides the one that raises the expectation.
    pub extra_pushes_per_task: [f64; 2],
    /// `GetTask` polls per expectation met in time (of its origin task).
    pub follow_polls_met: [f64; 2],
    /// `GetTask` polls per lapse (of its origin task and of the lapse task).
    pub follow_polls_lapse: [f64; 2],
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

    /// What a million of `parts` (each a step and how many of it per input) cost, in dollars,
    /// by line ([`LINE_NAMES`]).
    fn bill(&self, parts: &[(f64, &Step)]) -> [f64; LINES] {
        let (p, a) = (&self.price, &self.assumed);
        let mut q = [0.0f64; LINES];
        for (n, s) in parts {
            let runs = s.runs.len() as f64;
            let ms: f64 = s.runs.iter().map(|r| self.run_ms(r)).sum::<f64>() + s.wait_ms;
            let log_bytes = s.log_bytes as f64
                + runs * a.platform_log_bytes_per_run
                + s.api_requests as f64 * a.api_access_log_bytes;
            let each = [
                s.api_requests as f64,
                runs,
                ms / 1000.0 * a.lambda_memory_gb,
                s.write_units as f64,
                s.read_halves as f64 / 2.0,
                s.scheduler_invocations as f64,
                s.sqs_standard() as f64,
                s.sqs_fifo() as f64,
                log_bytes / 1e9,
            ];
            for (q, e) in q.iter_mut().zip(each) {
                *q += n * e;
            }
        }
        // Quantities per input; prices per million (or per unit for GB-s and GB, times a million).
        let per = [
            p.api_gateway_per_million_requests,
            p.lambda_per_million_requests,
            p.lambda_per_gb_second * 1e6,
            p.dynamodb_per_million_wru,
            p.dynamodb_per_million_rru,
            p.scheduler_per_million_invocations,
            p.sqs_standard_per_million_requests,
            p.sqs_fifo_per_million_requests,
            p.logs_per_gb * 1e6,
        ];
        let mut out = [0.0; LINES];
        for i in 0..LINES {
            out[i] = q[i] * per[i];
        }
        out
    }
}

/// The priced lines of [`Prices::bill`].
const LINES: usize = 9;

/// Their names, in order.
const LINE_NAMES: [&str; LINES] = [
    "API Gateway (HTTP API requests)",
    "Lambda requests",
    "Lambda compute",
    "DynamoDB writes (table and each index)",
    "DynamoDB reads",
    "EventBridge Scheduler invocations",
    "SQS standard (the timer queue)",
    "SQS FIFO (the lapse queue)",
    "CloudWatch Logs ingestion",
];

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
    /// SQS requests the event sources make that the test stands in for, on the timer queue
    /// (standard): the receive and delete of a timer-queue message it hands the timer directly.
    pub event_source_standard: u64,
    /// The same on the lapse queue (FIFO): the delete of a lapse message.
    pub event_source_fifo: u64,
    /// Of the SQS requests counted, those to a standard queue (the timer queue).
    pub sqs_standard: u64,
    /// DynamoDB write units by the partition that took them (`table <pk>`, `<index> <pk>`).
    pub partition_units: BTreeMap<String, u64>,
    /// Bytes of log lines the step's runs write at `info`: their application lines (as
    /// `init_tracing` formats them) and EMF lines (`docs/prices.toml`'s `[logs]`, which the
    /// test checks against what it captures).
    pub log_bytes: u64,
    /// Billed milliseconds outside the step's runs: a poll's wait for the agent's answer.
    pub wait_ms: f64,
}

impl Step {
    /// `self` with `bytes` more of EMF lines.
    pub fn emf(mut self, bytes: u64) -> Step {
        self.log_bytes += bytes;
        self
    }

    fn sqs(&self) -> u64 {
        self.requests
            .iter()
            .filter(|(op, _)| op.starts_with("SQS "))
            .map(|(_, n)| n)
            .sum::<u64>()
            + self.event_source_standard
            + self.event_source_fifo
    }

    /// SQS requests to the timer queue, a standard queue.
    fn sqs_standard(&self) -> u64 {
        self.sqs_standard + self.event_source_standard
    }

    /// SQS requests to the lapse queue, a FIFO queue (and any the count could not place).
    fn sqs_fifo(&self) -> u64 {
        self.sqs() - self.sqs_standard()
    }

    /// The write units the table's own partitions took (its indexes' excluded).
    fn table_write_units(&self) -> u64 {
        self.partition_units
            .iter()
            .filter(|(p, _)| p.starts_with("table "))
            .map(|(_, n)| n)
            .sum()
    }

    /// The index that took the most write units, and how many.
    fn busiest_index(&self) -> (String, u64) {
        let mut by_index: BTreeMap<&str, u64> = BTreeMap::new();
        for (p, n) in &self.partition_units {
            if let Some((index, _)) = p.split_once(' ') {
                if index != "table" {
                    *by_index.entry(index).or_default() += n;
                }
            }
        }
        by_index
            .into_iter()
            .max_by_key(|(_, n)| *n)
            .map(|(i, n)| (i.to_owned(), n))
            .unwrap_or_default()
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

/// The steps of the README's scenario, measured at one subject size.
#[derive(Debug, Clone)]
pub struct Steps {
    /// A push raising one expectation.
    pub push: Step,
    /// A status push of the same task, raising nothing.
    pub status: Step,
    /// The fact that satisfies the expectation in time (and the timer run deleting its
    /// schedule).
    pub satisfy: Step,
    /// The expectation lapsing overdue and its lapse task delivered once.
    pub lapse: Step,
    /// One `GetTask` poll of the delivered lapse task by the sweep's following duty.
    pub poll: Step,
}

impl Steps {
    fn all(&self) -> [&Step; 5] {
        [
            &self.push,
            &self.status,
            &self.satisfy,
            &self.lapse,
            &self.poll,
        ]
    }

    /// An expectation met in time and one that lapses, at the parameters' `end` (0 low, 1
    /// high): the steps each is, with how many of each.
    fn inputs(&self, r: &Range, end: usize) -> [Vec<(f64, &Step)>; 2] {
        let pushes = r.extra_pushes_per_task[end];
        [
            vec![
                (1.0, &self.push),
                (pushes, &self.status),
                (1.0, &self.satisfy),
                (r.follow_polls_met[end], &self.poll),
            ],
            vec![
                (1.0, &self.push),
                (pushes, &self.status),
                (1.0, &self.lapse),
                (r.follow_polls_lapse[end], &self.poll),
            ],
        ]
    }
}

/// The generated part of `docs/costs.md`: the prices used, the requests and units of each step
/// measured with the README's expectation (`low`) and with `[range] subject_extra_bytes` more
/// (`high`), the range's parameters, and a million expectations met in time and a million
/// lapses in dollars, at the low and the high end of every parameter.
pub fn render(low: &Steps, high: &Steps, prices: &Prices) -> String {
    let r = &prices.range;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Prices: `docs/prices.toml`, {} list prices as of {}, before free tiers.\n",
        prices.region, prices.as_of
    );
    out.push_str("| step | AWS requests, as measured |\n|---|---|\n");
    for s in low.all() {
        let cells: Vec<String> = s
            .requests
            .iter()
            .map(|(op, n)| format!("{op} {n}"))
            .collect();
        let _ = writeln!(out, "| {} | {} |", s.name, cells.join(", "));
    }
    let _ = writeln!(
        out,
        "\nUnits: with the README's expectation / with {} bytes more of it. WRU: the table's and every index's, each write request's own.\n",
        trim(r.subject_extra_bytes[1] as f64)
    );
    out.push_str(
        "| step | DynamoDB RRU | DynamoDB WRU | of which indexes' | API requests | function runs | schedules fired | SQS standard | SQS FIFO | log bytes |\n|---|---|---|---|---|---|---|---|---|---|\n",
    );
    for (s, h) in low.all().into_iter().zip(high.all()) {
        let _ = writeln!(
            out,
            "| {} | {} / {} | {} / {} | {} / {} | {} | {} | {} | {} | {} | {} / {} |",
            s.name,
            halves(s.read_halves),
            halves(h.read_halves),
            s.write_units,
            h.write_units,
            s.write_units - s.table_write_units(),
            h.write_units - h.table_write_units(),
            s.api_requests,
            runs_of(s),
            s.scheduler_invocations,
            s.sqs_standard(),
            s.sqs_fifo(),
            trim(s.log_bytes as f64),
            trim(h.log_bytes as f64),
        );
    }
    let a = &prices.assumed;
    out.push_str("\n| parameter | low | high |\n|---|---|---|\n");
    let _ = writeln!(
        out,
        "| subject: bytes added to the README's expectation (measured at both) | {} | {} |",
        trim(r.subject_extra_bytes[0] as f64),
        trim(r.subject_extra_bytes[1] as f64)
    );
    let pair = |v: [f64; 2]| (trim(v[0]), trim(v[1]));
    let rows = [
        (
            "status pushes per task, besides the raising one",
            pair(r.extra_pushes_per_task),
        ),
        (
            "`GetTask` polls per expectation met in time",
            pair(r.follow_polls_met),
        ),
        ("`GetTask` polls per lapse", pair(r.follow_polls_lapse)),
    ];
    for (name, (lo, hi)) in rows {
        let _ = writeln!(out, "| {name} | {lo} | {hi} |");
    }
    let _ = writeln!(
        out,
        "\nThe same at both ends: the template's `LogLevel` (`info`); durations measured {} ({} rounds), plus {} ms an agent's answer to each delivery and each poll; {} GB of memory; {} bytes of Lambda's own log lines a run and {} of access log an API request.\n",
        prices.durations.as_of,
        prices.durations.rounds,
        trim(a.agent_answer_ms),
        a.lambda_memory_gb,
        trim(a.platform_log_bytes_per_run),
        trim(a.api_access_log_bytes),
    );
    let bills: Vec<[f64; LINES]> = [(low, 0usize), (high, 1usize)]
        .iter()
        .flat_map(|(steps, end)| {
            let [met, lapse] = steps.inputs(r, *end);
            [prices.bill(&met), prices.bill(&lapse)]
        })
        .collect();
    // Columns: met low, met high, lapse low, lapse high.
    let order = [0, 2, 1, 3];
    out.push_str(
        "| per million, US dollars | met in time, low | met in time, high | lapses, low | lapses, high |\n|---|---|---|---|---|\n",
    );
    for (i, name) in LINE_NAMES.iter().enumerate() {
        let _ = write!(out, "| {name} |");
        for c in order {
            let _ = write!(out, " {:.2} |", bills[c][i]);
        }
        out.push('\n');
    }
    let totals: Vec<f64> = order
        .iter()
        .map(|c| bills[*c].iter().sum::<f64>())
        .collect();
    // What the lapse itself adds to the raise (its firings, delivery and polls).
    let adds: Vec<f64> = [(low, 0usize), (high, 1usize)]
        .iter()
        .map(|(steps, end)| {
            prices
                .bill(&[
                    (1.0, &steps.lapse),
                    (r.follow_polls_lapse[*end], &steps.poll),
                ])
                .iter()
                .sum::<f64>()
        })
        .collect();
    let _ = writeln!(
        out,
        "| **total** | **{:.2}** | **{:.2}** | **{:.2}** | **{:.2}** |\n\nSo a million expectations met in time cost **${:.0}–{:.0}**, and a million that lapse (each lapse task delivered once) **${:.0}–{:.0}**, of which the lapses themselves (their firings, deliveries and polls) are ${:.0}–{:.0}.",
        totals[0],
        totals[1],
        totals[2],
        totals[3],
        totals[0],
        totals[1],
        totals[2],
        totals[3],
        adds[0],
        adds[1]
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
/// share, a sixteenth (`timers`: a sixty-fourth).
const SHARDED: [&str; 7] = [
    "timers timers#",
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
/// ([`is_shard`]) takes its share (a sixteenth, a sixty-fourth for `timers`).
fn busiest_shared(step: &Step, own: &[&str], rate: f64) -> (String, f64) {
    step.partition_units
        .iter()
        .filter(|(p, _)| !own.iter().any(|o| p.contains(o)))
        .map(|(p, n)| {
            // `timers` is spread over 64 shards (`DUE_SHARDS`), the others 16.
            let due = p.starts_with("timers timers#");
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
            Box::new(|s: &Step| s.table_write_units() as f64),
            q.dynamodb_table_wru_per_second,
        ),
        (
            // On demand, each global secondary index has the table's default maximum of its
            // own: its writes do not count against the table's.
            format!(
                "DynamoDB writes of the busiest index ({} WRU/s, each index its own)",
                trim(q.dynamodb_table_wru_per_second)
            ),
            Box::new(|s: &Step| s.busiest_index().1 as f64),
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
                "SQS FIFO requests of the lapse queue, all actions as one ({}/s)",
                trim(q.sqs_fifo_requests_per_second)
            ),
            // The lapse queue's: the timer queue is standard, of nearly unlimited throughput.
            Box::new(|s: &Step| s.sqs_fifo() as f64),
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
    use super::{is_shard, Prices, Step};

    /// The list prices of `docs/prices.toml` (us-east-1): SQS standard $0.40 and FIFO $0.50 a
    /// million requests, DynamoDB on demand $0.625 a million write units.
    const PRICES: &str = r#"
as_of = "2026-12-01"
region = "us-east-1"
[price]
api_gateway_per_million_requests = 1.00
lambda_per_million_requests = 0.20
lambda_per_gb_second = 0.0000133334
dynamodb_per_million_wru = 0.625
dynamodb_per_million_rru = 0.125
scheduler_per_million_invocations = 1.00
sqs_standard_per_million_requests = 0.40
sqs_fifo_per_million_requests = 0.50
logs_per_gb = 0.50
[assumed]
lambda_memory_gb = 0.25
agent_answer_ms = 200
platform_log_bytes_per_run = 460
api_access_log_bytes = 250
[range]
subject_extra_bytes = [0, 500]
extra_pushes_per_task = [0, 2]
follow_polls_met = [0, 1]
follow_polls_lapse = [0, 2]
[logs]
as_of = "2026-12-06"
push = 232
status = 0
fact = 220
lapse = 2369
poll = 258
"#;

    /// The timer queue's requests (the counted ones to a standard queue and the event source's
    /// there) are priced at the standard price, the rest of SQS at FIFO's; index writes are
    /// billed with the table's but charged to no table quota.
    #[test]
    fn each_queue_at_its_price_and_index_writes_apart() {
        let prices: Prices = toml::from_str(PRICES).expect("prices");
        let step = Step {
            requests: [("SQS SendMessage".to_owned(), 3)].into(),
            sqs_standard: 1,
            event_source_standard: 1,
            event_source_fifo: 1,
            write_units: 5,
            partition_units: [
                ("table OUTBOX#t#3".to_owned(), 2),
                ("outbox-agent AGENT#t#a#queued".to_owned(), 2),
                ("timers timers#7".to_owned(), 1),
            ]
            .into(),
            ..Step::default()
        };
        assert_eq!((step.sqs_standard(), step.sqs_fifo()), (2, 3));
        // A million of the step.
        let bill = prices.bill(&[(1.0, &step)]);
        assert!((bill[6] - 0.80).abs() < 1e-9, "standard: {}", bill[6]);
        assert!((bill[7] - 1.50).abs() < 1e-9, "FIFO: {}", bill[7]);
        assert!((bill[3] - 5.0 * 0.625).abs() < 1e-9, "writes: {}", bill[3]);
        assert_eq!(step.table_write_units(), 2);
        assert_eq!(step.busiest_index(), ("outbox-agent".to_owned(), 2));
    }

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
