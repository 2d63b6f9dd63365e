//! The command line: what to run, at which factor K, on which ports; and the goal's figures at
//! 1/K.

use std::path::PathBuf;

use anyhow::{bail, Context};

/// The goal (issue 40): inputs a second, agents, lapses an hour, the burst, the backlog.
const GOAL_RATE: f64 = 10_000.0;
const GOAL_AGENTS: u64 = 10_000;
const GOAL_LAPSES_PER_HOUR: f64 = 1_000_000.0;
const GOAL_BURST: u64 = 100_000;
const GOAL_BACKLOG: u64 = 200_000;

/// The command line.
pub const USAGE: &str = "\
cargo bench --bench goal_load -- [OPTIONS]

  --scale K          the model's factor: limits and load at 1/K of AWS's and the goal's
                     (default 100)
  --duration SECS    the steady window: raises, facts and lapses at their rates (default 3600,
                     the goal's hour). Shorter keeps the rates
  --short            the CI's version: K 100, a 20 s window, burst 50 and backlog 50,
                     visibility timeouts capped at 30 s, the sweep every 10 s, patience 300 s
  --burst N --backlog N
                     the burst's lapses and the backlog's lapse tasks (default: the goal's / K)
  --visibility-timeout-cap SECS, --rate-cap SECS
                     passed to aws-local (default: the template's timeouts and sweep)
  --api-rate N       turn the HTTP API's stage throttle on, deployed at N requests a second
                     and a burst of 2N (the template's ApiThrottleRate and ApiThrottleBurst,
                     AWS's figures: the local stack enforces them / K per route; default:
                     no stage throttle, as the local stack's default)
  --tenants N        tenants the agents and sources are spread over (default 4)
  --debug | --release  the function binaries' build (default: release when built, else debug)
  --bin-dir DIR      the function binaries' folder (overrides the two above)
  --patience SECS    how long to wait for lapse tasks after the last is due (default 900;
                     --short: 300)
  --in-flight N      API requests in flight at once, per stream (default 64)
  --api-port N --agents-port N --moto-port N --dynamodb-port N
                     ports on 127.0.0.1 (defaults 3500, 3501, 5500, 5501; 0: any free one)
  --log FILE         the stack's log (default TARGET/goal-load-aws-local.log)";

/// The function binaries' build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Build {
    /// Release when `TARGET/release/api` exists, else debug.
    Auto,
    /// `TARGET/debug`.
    Debug,
    /// `TARGET/release` (`--release` to aws-local).
    Release,
}

/// What to run.
#[derive(Debug, Clone)]
pub struct Options {
    /// K: the model's limits and the load are 1/K of AWS's and the goal's.
    pub scale: u64,
    /// Seconds of the steady window.
    pub duration: u64,
    /// Tenants the agents are spread over.
    pub tenants: usize,
    /// The short (CI) version.
    pub short: bool,
    /// Which function binaries.
    pub build: Build,
    /// Their folder, when given.
    pub bin_dir: Option<PathBuf>,
    /// Seconds to wait for lapse tasks after the last due.
    pub patience: u64,
    /// API requests in flight per stream.
    pub in_flight: usize,
    /// The HTTP API's port (0: free).
    pub api_port: u16,
    /// The agents' port (0: free).
    pub agents_port: u16,
    /// The first emulator's port (0: free).
    pub moto_port: u16,
    /// The DynamoDB emulator's port (0: free).
    pub dynamodb_port: u16,
    /// The stack's log.
    pub log: Option<PathBuf>,
    /// `--visibility-timeout-cap` for aws-local (the short version: 30 s, so that work a
    /// throttled or killed instance held comes back within the run, as in the deployment tests).
    pub visibility_cap: Option<u64>,
    /// `--rate-cap` for aws-local: the sweep every so many seconds (the short version: 10 s,
    /// so that a timer whose firing the model throttled, which the next sweep fires, is fired
    /// within the run; the template's 5 minutes otherwise).
    pub rate_cap: Option<u64>,
    /// Lapses of the burst, when not the goal's / K (the short version: a tenth of it).
    pub burst: Option<usize>,
    /// Lapse tasks of the backlog, when not the goal's / K (the short version: a tenth).
    pub backlog: Option<usize>,
    /// The HTTP API stage's throttle at AWS's scale, requests a second (`ApiThrottleRate`; its
    /// burst, `ApiThrottleBurst`, twice that), turned on with it (the local stack divides both
    /// by K); None: no stage throttle.
    pub api_rate: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            scale: 100,
            duration: 3600,
            tenants: 4,
            short: false,
            build: Build::Auto,
            bin_dir: None,
            patience: 900,
            in_flight: 64,
            api_port: 3500,
            agents_port: 3501,
            moto_port: 5500,
            dynamodb_port: 5501,
            log: None,
            visibility_cap: None,
            rate_cap: None,
            burst: None,
            backlog: None,
            api_rate: None,
        }
    }
}

impl Options {
    /// The short version CI runs: K 100 with shorter phases: a 20 s window at the rates of
    /// 1/K, the burst and the backlog a twentieth and a fortieth of theirs at 1/K (50 each),
    /// visibility timeouts capped at 30 s, patience 300 s. (K 1000 is past what the model can scale: a
    /// partition would take 1 write unit a second, less than one subject's commit, and the
    /// account's Lambda concurrency would be 1 for all four functions.)
    pub fn short() -> Options {
        Options {
            scale: 100,
            duration: 20,
            short: true,
            patience: 300,
            visibility_cap: Some(30),
            rate_cap: Some(10),
            burst: Some(50),
            backlog: Some(50),
            ..Options::default()
        }
    }

    /// Reads the command line ([`USAGE`]).
    ///
    /// # Errors
    /// An unknown option, a missing or unreadable value, K, a duration or an API rate of 0.
    pub fn parse(args: &[String]) -> anyhow::Result<Options> {
        let mut o = if args.iter().any(|a| a == "--short") {
            Options::short()
        } else {
            Options::default()
        };
        let mut it = args.iter();
        while let Some(a) = it.next() {
            let mut value = |name: &str| {
                it.next()
                    .cloned()
                    .with_context(|| format!("{name} needs a value"))
            };
            fn num<T: std::str::FromStr>(name: &str, v: &str) -> anyhow::Result<T> {
                v.parse()
                    .map_err(|_| anyhow::anyhow!("{name} {v}: not a number"))
            }
            match a.as_str() {
                "--short" => {}
                "--scale" => o.scale = num("--scale", &value("--scale")?)?,
                "--duration" => o.duration = num("--duration", &value("--duration")?)?,
                "--burst" => o.burst = Some(num("--burst", &value("--burst")?)?),
                "--backlog" => o.backlog = Some(num("--backlog", &value("--backlog")?)?),
                "--tenants" => o.tenants = num("--tenants", &value("--tenants")?)?,
                "--patience" => o.patience = num("--patience", &value("--patience")?)?,
                "--in-flight" => o.in_flight = num("--in-flight", &value("--in-flight")?)?,
                "--api-port" => o.api_port = num("--api-port", &value("--api-port")?)?,
                "--agents-port" => o.agents_port = num("--agents-port", &value("--agents-port")?)?,
                "--moto-port" => o.moto_port = num("--moto-port", &value("--moto-port")?)?,
                "--dynamodb-port" => {
                    o.dynamodb_port = num("--dynamodb-port", &value("--dynamodb-port")?)?;
                }
                "--api-rate" => o.api_rate = Some(num("--api-rate", &value("--api-rate")?)?),
                "--debug" => o.build = Build::Debug,
                "--release" => o.build = Build::Release,
                "--bin-dir" => o.bin_dir = Some(PathBuf::from(value("--bin-dir")?)),
                "--log" => o.log = Some(PathBuf::from(value("--log")?)),
                "--rate-cap" => o.rate_cap = Some(num("--rate-cap", &value("--rate-cap")?)?),
                "--visibility-timeout-cap" => {
                    o.visibility_cap = Some(num(
                        "--visibility-timeout-cap",
                        &value("--visibility-timeout-cap")?,
                    )?);
                }
                other => bail!("unknown option {other}"),
            }
        }
        if o.scale == 0 || o.duration == 0 || o.tenants == 0 || o.in_flight == 0 {
            bail!("--scale, --duration, --tenants and --in-flight must be above 0");
        }
        if o.api_rate == Some(0) {
            bail!("--api-rate must be above 0 (the template's ApiThrottleRate is at least 1)");
        }
        Ok(o)
    }

    /// Agents (the goal's 10,000 / K, at least 2: one carries the backlog).
    pub fn agents(&self) -> usize {
        usize::try_from((GOAL_AGENTS / self.scale).max(2)).unwrap_or(2)
    }

    /// Raises a second, and facts a second.
    pub fn rate(&self) -> f64 {
        GOAL_RATE / self.scale as f64
    }

    /// Lapses a second in the steady window.
    pub fn lapse_rate(&self) -> f64 {
        GOAL_LAPSES_PER_HOUR / self.scale as f64 / 3600.0
    }

    /// Lapses due in the burst's minute.
    pub fn burst(&self) -> usize {
        self.burst
            .unwrap_or_else(|| usize::try_from((GOAL_BURST / self.scale).max(1)).unwrap_or(1))
    }

    /// Lapse tasks of the one agent's backlog.
    pub fn backlog(&self) -> usize {
        self.backlog
            .unwrap_or_else(|| usize::try_from((GOAL_BACKLOG / self.scale).max(1)).unwrap_or(1))
    }

    /// The template parameters `--api-rate` deploys: a rate of N and a burst of 2N (the
    /// template's own ratio, 100 and 200) for the default route settings (`ApiThrottleRate`,
    /// `ApiThrottleBurst`) and for each route group with settings of its own (`Fact…`,
    /// `Push…`, `Operator…`, `Anonymous…`), so every route has N; none without it.
    pub fn parameters(&self) -> Vec<String> {
        self.api_rate
            .map(|n| {
                ["Api", "Fact", "Push", "Operator", "Anonymous"]
                    .iter()
                    .flat_map(|group| {
                        [
                            format!("{group}ThrottleRate={n}"),
                            format!("{group}ThrottleBurst={}", n.saturating_mul(2)),
                        ]
                    })
                    .collect()
            })
            .unwrap_or_default()
    }
}
