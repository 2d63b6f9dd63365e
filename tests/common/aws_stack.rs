//! What the tests that run the AWS shape as processes (`infra/aws-local.sh`) share: a child
//! process whose output lines are collected, the function instances it started, and whether the
//! stack can run here at all.
#![allow(
    dead_code,
    reason = "each test binary uses its own part of this module"
)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The function binaries the stack runs (template.yaml's `BuildProperties.Binary`).
pub const FUNCTIONS: [&str; 4] = ["api", "timer", "submitter", "lesson-write"];

/// The workspace root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The folder the function binaries are taken from: `A2A_FUNCTIONS_DIR` when set (a release
/// build's folder, for a measurement), else the one `cargo test` built into (target/debug, or
/// $CARGO_TARGET_DIR/debug).
pub fn bin_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("A2A_FUNCTIONS_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir);
    }
    Path::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .parent()
        .expect("the binary's folder")
        .to_path_buf()
}

/// A free port on 127.0.0.1.
pub fn free_port() -> u16 {
    // Never the same port twice in this process: tests that start stacks at once hand each
    // process its ports (API, emulators) before any binds them, and the kernel may offer a
    // port released a moment ago again.
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    loop {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let mut given = GIVEN
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// Why `.venv`'s python with moto, boto3 and PyYAML is not usable here, if it is not.
pub fn missing_python() -> Option<String> {
    let python = root().join(".venv/bin/python");
    let ok = Command::new(&python)
        .args(["-c", "import moto, boto3, yaml"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    (!ok).then(|| {
        format!(
            "{} with moto is missing (bash infra/moto.sh installs it)",
            python.display()
        )
    })
}

/// Why the AWS stack cannot run here, if it cannot: `.venv` without moto, boto3 and PyYAML, or
/// the function binaries not built in the target folder.
pub fn aws_missing() -> Option<String> {
    if let Some(why) = missing_python() {
        return Some(why);
    }
    let absent: Vec<&str> = FUNCTIONS
        .iter()
        .copied()
        .filter(|f| !bin_dir().join(f).is_file())
        .collect();
    (!absent.is_empty()).then(|| {
        format!(
            "the function binaries {absent:?} are not built in {} (cargo build -p watcher-fn-api \
             -p watcher-fn-timer -p watcher-fn-submitter -p watcher-fn-lesson-write)",
            bin_dir().display()
        )
    })
}

/// Whether `test` is skipped because `why` is set (saying so through [`super::skip::skip`], so
/// the run's summary lists it); with `required_in_ci`, in CI it fails instead.
pub fn skipped(test: &str, why: Option<String>, required_in_ci: bool) -> bool {
    let Some(why) = why else { return false };
    if required_in_ci {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{test} cannot run in CI: {why}"
        );
    }
    super::skip::skip(&why);
    true
}

/// The pids of every instance of function `name` the stack started (`[name] started (pid N)`),
/// in order, the replaced ones included.
pub fn instance_pids(stack: &Proc, name: &str) -> Vec<u32> {
    let prefix = format!("[{name}] started (pid ");
    stack
        .lines()
        .iter()
        .filter_map(|l| l.strip_prefix(&prefix))
        .filter_map(|r| r.trim_end_matches(')').parse().ok())
        .collect()
}

/// Kills every instance of function `name` (whichever holds the work); answers how many
/// instances had started before, so that a caller can wait for a new one.
pub fn kill_every_instance(stack: &Proc, name: &str) -> usize {
    let pids = instance_pids(stack, name);
    assert!(!pids.is_empty(), "no {name} instance started");
    for pid in &pids {
        // An instance replaced earlier is gone already; kill says so and nothing happens.
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .stderr(Stdio::null())
            .status();
    }
    pids.len()
}

/// A child whose output lines are collected, stopped (SIGTERM, then SIGKILL) when dropped.
pub struct Proc {
    child: Mutex<Child>,
    lines: Arc<Mutex<Vec<String>>>,
    new_line: Mutex<mpsc::Receiver<()>>,
}

impl Proc {
    /// Starts `cmd`, its stdout collected line by line, its stderr inherited.
    pub fn spawn(mut cmd: Command) -> Proc {
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn");
        let out = child.stdout.take().expect("stdout");
        let lines = Arc::new(Mutex::new(Vec::new()));
        let (tx, new_line) = mpsc::channel();
        let sink = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                sink.lock().unwrap().push(line);
                let _ = tx.send(());
            }
        });
        Proc {
            child: Mutex::new(child),
            lines,
            new_line: Mutex::new(new_line),
        }
    }

    /// Every line the child printed on stdout so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (blocking) until a line satisfies `pred` and returns it; panics with the output
    /// after `timeout`.
    pub fn wait_for(&self, what: &str, timeout: Duration, pred: impl Fn(&str) -> bool) -> String {
        let end = Instant::now() + timeout;
        loop {
            if let Some(l) = self.lines().into_iter().find(|l| pred(l)) {
                return l;
            }
            let left = end.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "no {what} within {timeout:?}; output:\n{}",
                self.tail()
            );
            let _ = self
                .new_line
                .lock()
                .unwrap()
                .recv_timeout(left.min(Duration::from_millis(200)));
        }
    }

    /// The last 80 lines, each cut at 400 characters.
    pub fn tail(&self) -> String {
        let lines = self.lines();
        let from = lines.len().saturating_sub(80);
        lines[from..]
            .iter()
            .map(|l| l.chars().take(400).collect::<String>())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Sends the signal `name` (`USR1`, …) to the process, if it still runs; whether it was sent.
    pub fn signal(&self, name: &str) -> bool {
        let mut child = self.child.lock().unwrap();
        if let Ok(Some(_)) = child.try_wait() {
            return false;
        }
        Command::new("kill")
            .args([format!("-{name}"), child.id().to_string()])
            .status()
            .is_ok_and(|s| s.success())
    }

    /// SIGTERM, and whether it exited within `timeout` (SIGKILL after it).
    pub fn terminate(&self, timeout: Duration) -> bool {
        let mut child = self.child.lock().unwrap();
        if let Ok(Some(_)) = child.try_wait() {
            return true;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Ok(Some(_)) = child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
        false
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.terminate(Duration::from_secs(20));
    }
}

/// A local AWS stack started by [`start`]: its process, and the URLs of its HTTP API and of its
/// emulator.
pub struct Stack {
    /// The `infra/aws-local.sh` process (its lines collected; stopped when dropped).
    pub proc: Proc,
    /// The HTTP API's base URL (`http://127.0.0.1:PORT`).
    pub api: String,
    /// The AWS emulator's base URL.
    pub emulator: String,
    /// The AWS emulator's port.
    pub moto_port: u16,
    /// The DynamoDB emulator's port.
    pub dynamodb_port: u16,
}

/// Starts `bash infra/aws-local.sh` on `config` with the prebuilt function binaries
/// ([`bin_dir`]), every function's lines on its stdout (`--log -`), fresh ports for the API and
/// the emulators, and `extra` arguments (`--scale`, `--faults`, `--iam`, `--template`, …). Does
/// not wait for the stack: callers wait for the ready line themselves ([`wait_ready`]), some
/// while they do other things.
pub fn start(extra: &[&str], config: &Path) -> Stack {
    let (api_port, moto_port, dynamodb_port) = (free_port(), free_port(), free_port());
    let mut cmd = Command::new("bash");
    cmd.arg(root().join("infra/aws-local.sh"))
        .args(["--no-build", "--log", "-", "--port", &api_port.to_string()])
        .args(["--moto-port", &moto_port.to_string()])
        .args(["--dynamodb-port", &dynamodb_port.to_string()])
        .args(extra)
        .arg("--config")
        .arg(config)
        .env(
            "CARGO_TARGET_DIR",
            bin_dir().parent().expect("the target folder"),
        );
    Stack {
        proc: Proc::spawn(cmd),
        api: format!("http://127.0.0.1:{api_port}"),
        emulator: format!("http://127.0.0.1:{moto_port}"),
        moto_port,
        dynamodb_port,
    }
}

/// Waits at most `patience` for `stack`'s ready line (`[aws-local] ready at …`) and answers it.
pub fn wait_ready(stack: &Proc, patience: Duration) -> String {
    stack.wait_for("ready line", patience, |l| {
        l.starts_with("[aws-local] ready at ")
    })
}
