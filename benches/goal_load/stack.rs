//! The local AWS stack (`bash infra/aws-local.sh`) as a child process of the driver: what this
//! checkout's aws-local takes, its start on the run's ports, its stop.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

use super::options::{Build, Options};

/// The workspace root.
pub(crate) fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The target folder: `CARGO_TARGET_DIR`, else the one this executable was built into
/// (`TARGET/{profile}/deps/exe`), else `target`.
pub(crate) fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        let dir = PathBuf::from(dir);
        return if dir.is_absolute() {
            dir
        } else {
            root().join(dir)
        };
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.parent()?.to_path_buf()))
        .filter(|t| t.join("debug").is_dir() || t.join("release").is_dir())
        .unwrap_or_else(|| root().join("target"))
}

/// A free port on 127.0.0.1 when `port` is 0.
pub(crate) fn port_or_free(port: u16) -> anyhow::Result<u16> {
    if port != 0 {
        return Ok(port);
    }
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// The ports of one run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ports {
    pub(crate) api: u16,
    pub(crate) agents: u16,
    pub(crate) moto: u16,
    pub(crate) dynamodb: u16,
}

impl Ports {
    /// `o`'s ports, a free one for each 0.
    pub(crate) fn of(o: &Options) -> anyhow::Result<Ports> {
        Ok(Ports {
            api: port_or_free(o.api_port)?,
            agents: port_or_free(o.agents_port)?,
            moto: port_or_free(o.moto_port)?,
            dynamodb: port_or_free(o.dynamodb_port)?,
        })
    }
}

/// What this checkout's aws-local takes (`python -m aws_local --help`, read once): `--scale`
/// (the limits part of the model), the HTTP API's stage throttle and the option that sets a
/// template parameter.
#[derive(Debug, Clone, Copy)]
pub(crate) struct AwsLocal {
    /// It takes `--scale K`.
    pub(crate) scale: bool,
    /// It takes `--api-throttle on`: the stage's throttle (the template's
    /// `DefaultRouteSettings`, divided by K, per route), answering 429 as API Gateway does.
    pub(crate) api_throttle: bool,
    /// `--parameter NAME=VALUE` when it takes that, else `--param NAME=VALUE` (the spelling it
    /// has had), else None.
    pub(crate) parameter: Option<&'static str>,
}

impl AwsLocal {
    /// Asks this checkout's aws-local.
    pub(crate) fn probe() -> AwsLocal {
        let help = Command::new(root().join(".venv/bin/python"))
            .args(["-m", "aws_local", "--help"])
            .env("PYTHONPATH", root().join("infra"))
            .stderr(Stdio::null())
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        let parameter = if help.contains("--parameter") {
            Some("--parameter")
        } else if help.contains("--param ") {
            Some("--param")
        } else {
            None
        };
        AwsLocal {
            scale: help.contains("--scale"),
            api_throttle: help.contains("--api-throttle"),
            parameter,
        }
    }
}

/// The local AWS stack as a child process, stopped (SIGTERM, then SIGKILL) when dropped.
pub(crate) struct Stack {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
}

impl Stack {
    /// Starts `bash infra/aws-local.sh` with `config` on `ports`, its log at `log`, and waits
    /// (up to 180 s) for its `ready` line.
    ///
    /// # Errors
    /// A function binary not built, `--api-rate` with an aws-local that sets no template
    /// parameter, the stack not starting or saying `error:`/`failed:` first.
    pub(crate) fn start(
        o: &Options,
        aws_local: AwsLocal,
        config: &Path,
        ports: &Ports,
        log: &Path,
    ) -> anyhow::Result<Stack> {
        let target = target_dir();
        let (bin_dir, release) = match (&o.bin_dir, o.build) {
            (Some(d), _) => (
                d.clone(),
                d.file_name() == Some(std::ffi::OsStr::new("release")),
            ),
            (None, Build::Release) => (target.join("release"), true),
            (None, Build::Debug) => (target.join("debug"), false),
            (None, Build::Auto) => {
                if target.join("release/api").is_file() {
                    (target.join("release"), true)
                } else {
                    (target.join("debug"), false)
                }
            }
        };
        for f in ["api", "timer", "submitter", "lesson-write"] {
            if !bin_dir.join(f).is_file() {
                bail!(
                    "{} is not built (cargo build {}-p watcher-fn-api -p watcher-fn-timer \
                     -p watcher-fn-submitter -p watcher-fn-lesson-write)",
                    bin_dir.join(f).display(),
                    if release { "--release " } else { "" }
                );
            }
        }
        // `--api-rate N`: the template's throttle parameters (every route at N, `o.parameters()`),
        // and the stage throttle on (the local stack enforces the template's figures divided by K).
        let parameters = o.parameters();
        let parameter_flag = match (aws_local.parameter, parameters.is_empty()) {
            (_, true) => "",
            (Some(flag), false) => flag,
            (None, false) => bail!(
                "--api-rate needs aws-local to set template parameters (--parameter \
                 NAME=VALUE), which this checkout's infra/aws_local does not"
            ),
        };
        let api_throttle = !parameters.is_empty() && aws_local.api_throttle;
        if !parameters.is_empty() && !api_throttle {
            eprintln!(
                "goal_load: this checkout's aws-local has no stage throttle (--api-throttle): \
                 {parameters:?} are deployed but nothing enforces them"
            );
        }
        let mut cmd = Command::new("bash");
        cmd.arg(root().join("infra/aws-local.sh"))
            .args(["--no-build", "--log"])
            .arg(log)
            .args(["--port", &ports.api.to_string()])
            .args(["--moto-port", &ports.moto.to_string()])
            .args(["--dynamodb-port", &ports.dynamodb.to_string()])
            .args(release.then_some("--release"))
            .args(
                o.visibility_cap
                    .iter()
                    .flat_map(|c| ["--visibility-timeout-cap".to_owned(), c.to_string()]),
            )
            .args(
                o.rate_cap
                    .iter()
                    .flat_map(|c| ["--rate-cap".to_owned(), c.to_string()]),
            )
            .args(
                parameters
                    .iter()
                    .flat_map(|p| [parameter_flag.to_owned(), p.clone()]),
            )
            .args(
                api_throttle
                    .then_some(["--api-throttle", "on"])
                    .into_iter()
                    .flatten(),
            )
            .arg("--config")
            .arg(config)
            .env(
                "CARGO_TARGET_DIR",
                bin_dir
                    .parent()
                    .context("the binaries' folder has a parent")?,
            );
        if aws_local.scale {
            cmd.args(["--scale", &o.scale.to_string()]);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("Failed to start bash infra/aws-local.sh")?;
        let out = child.stdout.take().context("the stack's output")?;
        let lines = Arc::new(Mutex::new(Vec::new()));
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                sink.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(line);
            }
        });
        let stack = Stack { child, lines };
        let end = Instant::now() + Duration::from_secs(180);
        loop {
            let lines = stack
                .lines
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if lines.iter().any(|l| l.starts_with("[aws-local] ready at ")) {
                return Ok(stack);
            }
            if lines
                .iter()
                .any(|l| l.contains("error:") || l.contains("failed:"))
                || Instant::now() > end
            {
                bail!(
                    "the local AWS stack did not start (log: {}):\n{}",
                    log.display(),
                    lines.join("\n")
                );
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let end = Instant::now() + Duration::from_secs(30);
        while Instant::now() < end {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
