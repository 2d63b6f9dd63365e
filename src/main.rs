//! `a2a-watcher`: the operator's entry point.
//!
//! * `a2a-watcher replay SCENARIO.json` — run a scenario on a simulated clock (docs/contracts/replay.md).
//! * `a2a-watcher serve [--config watcher.toml]` — the watcher as one process (docs/contracts/serve.md).
//! * `a2a-watcher demo` — the worked example live against the example agent.
//! * `a2a-watcher example-agent` — a small agent that prints the lapse tasks it receives.
//! * `a2a-watcher example-artifact|example-fact` — the worked example's request bodies, with
//!   `--from now`/`--at now` on today's clock.
//! * `a2a-watcher webhook test --config F --source ID PAYLOAD.json` — the facts a carrier's
//!   payload would yield through the source's mappings, recording nothing.
//! * `a2a-watcher retry --agent ID` — re-queue an agent's failed lapse tasks on a running watcher.
//! * `a2a-watcher rearm` — re-create every open timer's schedule on AWS from the table (`rearm.rs`).
//! * `a2a-watcher bench [--quick]` — throughput, latency and cost at 10k–1M open expectations.
//! * `a2a-watcher subject|lapses|timeline|agents|incidents` — the operator's reads (`operator.rs`);
//!   `incidents ack` acknowledges an incident.
//! * `a2a-watcher validate card|artifact FILE` — check a card or an artifact offline.

mod bench;
mod bench_agent;
mod demo;
mod example;
mod example_agent;
mod notify;
mod operator;
mod otel;
mod probe;
mod rearm;
mod report;
mod retry;
mod table;
mod validate;
mod webhook;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use watcher_runtime::replay::{self, ReplayError};
use watcher_store_sqlite::SqliteStore;

/// Watcher for the A2A Expectations extension.
#[derive(Parser)]
#[command(name = "a2a-watcher", version, about)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the watcher: HTTP API, SQLite store, timers and lapse-task delivery.
    Serve {
        /// The configuration file (docs/contracts/serve.md); built-in defaults without it.
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// Run the worked example live: example agent + watcher, lapse tasks in about 20 seconds.
    Demo,
    /// Run a small A2A agent that serves a card and prints the lapse tasks it receives.
    ExampleAgent {
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9999")]
        listen: String,
        /// The card to serve (defaults to examples/booking-card.json, built in).
        #[arg(long)]
        card: Option<PathBuf>,
    },
    /// Print the worked example's booking artifact (expectations-v1 §8), the body an agent's push
    /// posts to /v1/agents/{agentId}/push, as JSON.
    ExampleArtifact {
        /// Without it, the worked example's own due times (September 2026: posted after them,
        /// all of them lapse at once). With it (`now` or an RFC 3339 instant), the same
        /// story from that instant in 20-second steps: the manifest due 40 s later (grace 40 s),
        /// the departure at 2 min 40 s, the arrival 40 s after the departure (grace 1 min), the
        /// horizon at 4 min 40 s.
        #[arg(long, value_name = "now|INSTANT")]
        from: Option<String>,
    },
    /// Print the worked example's departure fact, the body of POST /v1/facts, as JSON.
    ExampleFact {
        /// When the carrier observed the departure: `now` or an RFC 3339 instant; the worked
        /// example's 2026-09-11T02:41:00Z without it.
        #[arg(long, value_name = "now|INSTANT")]
        at: Option<String>,
    },
    /// Send two probe tasks through an agent's lifecycle, in the protocol its card offers (1.0,
    /// or 0.3), and print its lifecycle descriptor (JSON): timestamps on every status, exactly
    /// one terminal event, pushes, GetTask and ListTasks, and whether a task canceled with
    /// CancelTask had its cancel pushed once, twice or never.
    Probe {
        /// The agent's base URL (its card at /.well-known/agent-card.json, or the legacy
        /// /.well-known/agent.json) or its card's URL.
        agent: String,
    },
    /// Re-queue failed lapse tasks of one agent on a running watcher (POST /v1/lapses/retry).
    Retry {
        /// The watcher's base URL.
        #[arg(long, default_value = "http://127.0.0.1:8080")]
        url: String,
        /// An operator's bearer token (else the environment's `A2A_WATCHER_TOKEN`).
        #[arg(long)]
        token: Option<String>,
        /// The agent whose failed lapse tasks to re-queue.
        #[arg(long)]
        agent: String,
        /// Only these lapse tasks (repeatable); all failed ones of the agent without it.
        #[arg(long = "message-id")]
        message_ids: Vec<String>,
    },
    /// Re-create every open timer's schedule on AWS from the table, after a restore, a stack
    /// replacement or lost schedules (docs/howto/recovery.md): page by page, resumable,
    /// idempotent; with the operator's AWS credentials from the environment.
    Rearm(rearm::RearmArgs),
    /// Measure throughput, due-finding cost, lapse latency, disk and memory at 10k, 100k and 1M
    /// open expectations (docs/performance.md); prints a table, then one JSON line.
    Bench {
        /// 10k and 100k only, shorter phases (under a minute in a release build).
        #[arg(long)]
        quick: bool,
        /// Open expectations to measure at, comma-separated (overrides the sizes of --quick).
        #[arg(long, value_delimiter = ',')]
        sizes: Option<Vec<u64>>,
        /// Concurrent clients in the throughput phases.
        #[arg(long, default_value_t = 32)]
        clients: usize,
        /// Folder for the temporary databases (the disk measured); the system's temporary
        /// folder by default.
        #[arg(long)]
        dir: Option<PathBuf>,
        /// Only the slow-agent figure: a fast agent's lapse-task p99 while another agent
        /// answers after 20 s (3 s with --quick).
        #[arg(long)]
        slow_agent_only: bool,
        /// Only the burst figure: 1,000 lapses due at one instant over 10 agents that are
        /// separate processes answering each request on a fresh connection.
        #[arg(long)]
        burst_only: bool,
        /// Only the backlog figure: 5,000 lapse tasks queued for one agent process when serve
        /// starts, drained (10 per origin task, then 1 per origin task).
        #[arg(long)]
        backlog_only: bool,
        /// Milliseconds the agent processes of the burst and backlog wait before each answer.
        #[arg(long, default_value_t = 2)]
        agent_answer_ms: u64,
        /// The backlog's agent: examples/sdk-agent/agent.py (the official A2A Python SDK) run by
        /// this Python, e.g. `--sdk-agent .venv-a2a/bin/python examples/sdk-agent/agent.py`.
        #[arg(long, num_args = 2, value_names = ["PYTHON", "SCRIPT"])]
        sdk_agent: Option<Vec<PathBuf>>,
    },
    /// `bench`'s agent process: answers JSON-RPC with `Connection: close` and prints each
    /// `SendMessage`'s arrival (`arrived UNIX_NANOS MESSAGE_ID`) on standard output.
    #[command(hide = true)]
    BenchAgent {
        /// Address to listen on (port 0 picks one; the first line printed gives it).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: String,
        /// Milliseconds each answer waits after its request, as an agent that takes time.
        #[arg(long, default_value_t = 0)]
        answer_ms: u64,
    },
    /// Run a scenario on a simulated clock and print what happened as JSON Lines.
    Replay {
        /// The scenario file (docs/contracts/replay.md).
        scenario: PathBuf,
        /// `jsonl` (default): one JSON object a line; `pretty`: indented, for people.
        #[arg(long, value_enum, default_value_t = Format::Jsonl)]
        format: Format,
    },
    #[command(flatten)]
    Operator(operator::OperatorCommand),
    /// Carrier webhooks (`POST /v1/sources/{sourceId}/webhook`).
    Webhook {
        #[command(subcommand)]
        command: WebhookCommand,
    },
    /// Notification channels (`[[notify]]`): tell a person of each lapse.
    Notify {
        #[command(subcommand)]
        command: NotifyCommand,
    },
    /// Offline reports over the record.
    Report {
        #[command(subcommand)]
        command: ReportCommand,
    },
    /// Check a file offline against the Expectations extension's rules, naming each field at
    /// fault (schemas: docs/schemas/). Exit 0 when valid, 1 when not.
    Validate {
        #[command(subcommand)]
        command: ValidateCommand,
    },
}

#[derive(Subcommand)]
enum ReportCommand {
    /// Per kind and basis: how many, on time, late (p50, p90), lapse rate by kind, and the due
    /// offset the history supports against the one promised (expectations-v1 §13.3).
    Basis {
        /// The configuration file whose `database` to read (docs/contracts/serve.md).
        #[arg(long, conflicts_with = "db")]
        config: Option<PathBuf>,
        /// The SQLite database to read (default ./watcher.db).
        #[arg(long)]
        db: Option<PathBuf>,
        /// One JSON array instead of the table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
enum ValidateCommand {
    /// An A2A Agent Card: the extension's declaration (expectations-v1 §6).
    Card {
        /// The card (JSON).
        file: PathBuf,
    },
    /// An Artifact, an `artifactUpdate` push or a `task`: the expectations, withdrawals and
    /// facts in `metadata["https://rsaxb.com/a2a/expectations/v1"]` (expectations-v1 §8, §9.2).
    Artifact {
        /// The artifact (JSON).
        file: PathBuf,
        /// The agent's card: each `kind` must be declared on it.
        #[arg(long)]
        card: Option<PathBuf>,
    },
}

#[derive(Subcommand)]
enum WebhookCommand {
    /// Print the facts PAYLOAD would yield through the source's mappings, or the error;
    /// records nothing and checks no signature.
    Test {
        /// The configuration file with the source's `[[sources.mappings]]`.
        #[arg(long)]
        config: PathBuf,
        /// The source id (`[[sources]] id`).
        #[arg(long)]
        source: String,
        /// A payload as the carrier posts it (JSON).
        payload: PathBuf,
    },
}

#[derive(Subcommand)]
enum NotifyCommand {
    /// Post a sample notification through a channel, signed as real ones are, and print its
    /// `webhook-id`; records nothing. Exit 1 when the receiver does not answer 2xx.
    Test {
        /// The configuration file with the `[[notify]]` channel.
        #[arg(long)]
        config: PathBuf,
        /// The channel's id (`[[notify]] id`).
        #[arg(long)]
        channel: String,
        /// The channel's tenant, when several tenants have a channel of that id.
        #[arg(long)]
        tenant: Option<String>,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Jsonl,
    Pretty,
}

fn init_logging(format: LogFormat, default_filter: &str) {
    init_logging_exporting(format, default_filter, None);
}

/// [`init_logging`] with the spans also exported by `export` (OpenTelemetry, `serve` only).
fn init_logging_exporting(format: LogFormat, default_filter: &str, export: Option<&otel::Export>) {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    let fmt = tracing_subscriber::fmt::layer()
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    let registry = tracing_subscriber::registry().with(filter);
    match format {
        LogFormat::Text => {
            let registry = registry.with(fmt);
            let layer = export.map(otel::Export::layer);
            registry.with(layer).init();
        }
        LogFormat::Json => {
            let registry = registry.with(fmt.json());
            let layer = export.map(otel::Export::layer);
            registry.with(layer).init();
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("Failed to start the runtime")
}

fn exit_on(result: anyhow::Result<()>, what: &str) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("a2a-watcher {what}: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Lets a command that prints and ends stop quietly when its reader goes away (`| head`), as
/// other command-line tools do: Rust ignores SIGPIPE, so every `println!` after the reader closed
/// would panic. Our own two lines because std offers no way to set a signal's disposition. Not
/// for the long-running commands (`serve`, the agents), whose log lines must never end them.
#[allow(
    unsafe_code,
    reason = "std has no safe way to set a signal's disposition"
)]
fn quiet_on_closed_pipe() {
    // SAFETY: called once at start, before any thread is spawned; SIG_DFL is always valid.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(
        cli.command,
        Command::Serve { .. }
            | Command::Demo
            | Command::BenchAgent { .. }
            | Command::ExampleAgent { .. }
            | Command::Bench { .. }
    ) {
        quiet_on_closed_pipe();
    }
    match cli.command {
        Command::Serve { config } => {
            // OpenTelemetry export when its environment asks for it; flushed when `serve` ends.
            let export = match otel::configured().then(otel::Export::start).transpose() {
                Ok(export) => export,
                Err(e) => return exit_on(Err(e), "serve"),
            };
            init_logging_exporting(cli.log_format, "info,tower_http=warn", export.as_ref());
            if export.is_some() {
                // Said once, so that an operator sees export is on; the exporter's own failures
                // (a collector down or refusing) are logged as warnings by its internal logs.
                tracing::info!(
                    endpoint = %otel::endpoint(),
                    spans = ?otel::SPANS,
                    "OpenTelemetry export on (OTLP HTTP/protobuf)"
                );
            }
            let result = (|| {
                let (cfg, defaults) = match &config {
                    Some(p) => (watcher_config::Config::load(p)?, false),
                    None => (watcher_config::Config::defaults(), true),
                };
                runtime()?.block_on(watcher_host::serve::run(cfg, defaults))
            })();
            exit_on(result, "serve")
        }
        Command::Demo => {
            // The demo prints its own story; logs only for problems.
            init_logging(cli.log_format, "warn");
            exit_on(runtime().and_then(|rt| rt.block_on(demo::run())), "demo")
        }
        Command::BenchAgent { listen, answer_ms } => {
            init_logging(cli.log_format, "warn");
            // One thread, as a simple agent: the burst measures the watcher, not this process.
            exit_on(
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .context("Failed to start the runtime")
                    .and_then(|rt| {
                        rt.block_on(bench_agent::run(
                            &listen,
                            std::time::Duration::from_millis(answer_ms),
                        ))
                    }),
                "bench-agent",
            )
        }
        Command::ExampleAgent { listen, card } => {
            init_logging(cli.log_format, "info");
            exit_on(
                runtime().and_then(|rt| rt.block_on(example_agent::run(&listen, card.as_deref()))),
                "example-agent",
            )
        }
        Command::Webhook {
            command:
                WebhookCommand::Test {
                    config,
                    source,
                    payload,
                },
        } => {
            init_logging(cli.log_format, "warn");
            match webhook::dry_run(&config, &source, &payload) {
                Ok(out) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&out).unwrap_or_else(|_| out.to_string())
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("a2a-watcher webhook test: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Notify {
            command:
                NotifyCommand::Test {
                    config,
                    channel,
                    tenant,
                },
        } => {
            init_logging(cli.log_format, "warn");
            let result = runtime().and_then(|rt| {
                rt.block_on(notify::test(&config, &channel, tenant.as_deref()))
                    .map(|id| println!("sent {id} to channel {channel}"))
            });
            exit_on(result, "notify test")
        }
        Command::Retry {
            url,
            token,
            agent,
            message_ids,
        } => {
            init_logging(cli.log_format, "warn");
            let result = token
                .or_else(|| std::env::var("A2A_WATCHER_TOKEN").ok())
                .context("an operator's token is needed: --token or A2A_WATCHER_TOKEN")
                .and_then(|token| {
                    runtime()?.block_on(retry::run(&url, &token, &agent, &message_ids))
                });
            exit_on(result, "retry")
        }
        Command::Rearm(args) => {
            init_logging(cli.log_format, "warn");
            exit_on(
                runtime().and_then(|rt| rt.block_on(rearm::run(args))),
                "rearm",
            )
        }
        Command::Probe { agent } => {
            init_logging(cli.log_format, "warn");
            let result = runtime().and_then(|rt| rt.block_on(probe::run(&agent)));
            match result {
                Ok(d) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&d).unwrap_or_else(|_| d.to_string())
                    );
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("a2a-watcher probe: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Bench {
            quick,
            sizes,
            clients,
            dir,
            slow_agent_only,
            burst_only,
            backlog_only,
            agent_answer_ms,
            sdk_agent,
        } => {
            init_logging(cli.log_format, "warn");
            let mut opts = bench::Options::new(quick);
            if let Some(sizes) = sizes {
                opts.sizes = sizes;
            }
            if slow_agent_only || burst_only || backlog_only {
                opts.sizes.clear();
            }
            opts.burst_only = burst_only;
            opts.backlog_only = backlog_only;
            opts.agent_answer_ms = agent_answer_ms;
            opts.sdk_agent = sdk_agent.and_then(|v| match v.as_slice() {
                [python, script] => Some((python.clone(), script.clone())),
                _ => None,
            });
            opts.clients = clients.max(1);
            opts.dir = dir;
            exit_on(
                runtime().and_then(|rt| rt.block_on(bench::run(opts))),
                "bench",
            )
        }
        Command::Operator(command) => {
            init_logging(cli.log_format, "warn");
            let what = match &command {
                operator::OperatorCommand::Subject { .. } => "subject",
                operator::OperatorCommand::Lapses { .. } => "lapses",
                operator::OperatorCommand::Timeline { .. } => "timeline",
                operator::OperatorCommand::Agents { .. } => "agents",
                operator::OperatorCommand::Incidents(_) => "incidents",
            };
            exit_on(
                runtime().and_then(|rt| rt.block_on(operator::run(command))),
                what,
            )
        }
        Command::Report {
            command: ReportCommand::Basis { config, db, json },
        } => {
            init_logging(cli.log_format, "warn");
            let result = (|| -> anyhow::Result<()> {
                let path = match (config, db) {
                    (Some(c), _) => watcher_config::Config::load(&c)?.database,
                    (None, Some(d)) => d,
                    (None, None) => PathBuf::from("watcher.db"),
                };
                anyhow::ensure!(path.exists(), "no database at {}", path.display());
                let store = SqliteStore::open(&path)
                    .with_context(|| format!("Failed to open {}", path.display()))?;
                let records = runtime()?.block_on(async {
                    use watcher_runtime::store::Records as _;
                    store.all_records().await
                })?;
                let rows = report::basis(&records);
                if json {
                    println!("{}", serde_json::to_string_pretty(&rows)?);
                } else {
                    print!("{}", report::table(&rows));
                }
                Ok(())
            })();
            exit_on(result, "report basis")
        }
        Command::Validate { command } => {
            let (file, what, findings) = match command {
                ValidateCommand::Card { file } => {
                    let f = validate::card(&file);
                    (file, "card", f)
                }
                ValidateCommand::Artifact { file, card } => {
                    let f = validate::artifact(&file, card.as_deref());
                    (file, "artifact", f)
                }
            };
            match findings {
                Ok(f) if validate::report(&file, what, &f) => ExitCode::SUCCESS,
                Ok(_) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("a2a-watcher validate: {e:#}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::ExampleArtifact { from } => exit_on(
            example::artifact_text(from.as_deref()).map(|text| println!("{text}")),
            "example-artifact",
        ),
        Command::ExampleFact { at } => exit_on(
            example::fact_text(at.as_deref()).map(|text| println!("{text}")),
            "example-fact",
        ),
        Command::Replay { scenario, format } => match run_replay(&scenario, format) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("a2a-watcher replay: {e:#}");
                ExitCode::from(2)
            }
        },
    }
}

fn run_replay(path: &PathBuf, format: Format) -> anyhow::Result<ExitCode> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("Failed to read {}", path.display()))?;
    let doc = validate::parse_json_file(path, text.as_bytes())?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to start the runtime")?;
    // The embedded store in a temporary location (docs/contracts/replay.md), removed afterwards.
    let dir = std::env::temp_dir().join(format!(
        "a2a-watcher-replay-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond()
    ));
    std::fs::create_dir_all(&dir).context("Failed to create a temporary folder for the store")?;
    let _cleanup = RemoveOnDrop(dir.clone());
    let store = Arc::new(
        SqliteStore::open(dir.join("replay.db")).context("Failed to open the embedded store")?,
    );
    match runtime.block_on(replay::run(&doc, store)) {
        Ok(lines) => {
            use std::io::Write;
            let mut stdout = std::io::stdout().lock();
            for line in lines {
                let out = match format {
                    Format::Jsonl => serde_json::to_string(&line),
                    Format::Pretty => serde_json::to_string_pretty(&line),
                }
                .context("Failed to print a line")?;
                match writeln!(stdout, "{out}") {
                    Ok(()) => {}
                    // The reader stopped reading (`| head`): not an error of the scenario.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                        return Ok(ExitCode::SUCCESS)
                    }
                    Err(e) => return Err(e).context("Failed to write to stdout"),
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(ReplayError::Scenario(e)) => {
            eprintln!(
                "a2a-watcher replay: malformed scenario {}: {e}",
                path.display()
            );
            Ok(ExitCode::from(2))
        }
        Err(e) => Err(e.into()),
    }
}

/// Removes a temporary folder when dropped, whatever way the command ends.
struct RemoveOnDrop(PathBuf);

impl Drop for RemoveOnDrop {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
