//! Each configuration warning of `serve` is printed once (issue 14): an unknown key, and the
//! built-in defaults without `--config`.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Starts `serve` with `args`, reads stderr until `until` appears (or 20 s), kills it, and
/// returns what stderr said.
fn stderr_of(args: &[&str], dir: &std::path::Path, until: &str) -> String {
    let mut child = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start serve");
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut out = String::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(20) {
        if let Ok(line) = rx.recv_timeout(Duration::from_millis(200)) {
            out.push_str(&line);
            out.push('\n');
            if line.contains(until) {
                // Give a duplicate a moment to appear.
                std::thread::sleep(Duration::from_millis(300));
                while let Ok(l) = rx.try_recv() {
                    out.push_str(&l);
                    out.push('\n');
                }
                break;
            }
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    out
}

#[test]
fn an_unknown_key_is_warned_about_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("watcher.toml");
    std::fs::write(
        &config,
        "listen = \"127.0.0.1:0\"\ndatabase = \"w.db\"\nlisten_typo = 1\n",
    )
    .unwrap();
    let out = stderr_of(
        &["serve", "--config", config.to_str().unwrap()],
        dir.path(),
        "a2a-watcher serving",
    );
    let lines = out.lines().filter(|l| l.contains("listen_typo")).count();
    assert_eq!(lines, 1, "{out}");
}

#[test]
fn the_defaults_notice_is_printed_once() {
    let dir = tempfile::tempdir().unwrap();
    let out = stderr_of(&["serve"], dir.path(), "serving");
    assert_eq!(out.matches("built-in defaults").count(), 1, "{out}");
}
