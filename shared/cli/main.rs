//! `a2a-watcher`: the operator's entry point.
//!
//! * `a2a-watcher replay SCENARIO.json` — run a scenario on a simulated clock (contracts/replay.md).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::replay::{self, ReplayError};

/// Watcher for the A2A Expectations extension.
#[derive(Parser)]
#[command(name = "a2a-watcher", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario on a simulated clock and print what happened as JSON Lines.
    Replay {
        /// The scenario file (contracts/replay.md).
        scenario: PathBuf,
        /// `jsonl` (default): one JSON object a line; `pretty`: indented, for people.
        #[arg(long, value_enum, default_value_t = Format::Jsonl)]
        format: Format,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Jsonl,
    Pretty,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
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
    let doc: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{} is not JSON", path.display()))?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("Failed to start the runtime")?;
    let store = Arc::new(MemoryStore::new());
    match runtime.block_on(replay::run(&doc, store)) {
        Ok(lines) => {
            for line in lines {
                let out = match format {
                    Format::Jsonl => serde_json::to_string(&line),
                    Format::Pretty => serde_json::to_string_pretty(&line),
                }
                .context("Failed to print a line")?;
                println!("{out}");
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
