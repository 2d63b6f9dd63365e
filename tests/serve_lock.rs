//! One `serve` per database (docs/interpretation.md "One serve per database"): a second
//! `a2a-watcher serve` on the database of a running one exits at start, naming the database and
//! the first's pid; the commands that only read the database work beside it; and once the first
//! is killed with SIGKILL, its lock is gone with it and a new `serve` starts on the database.

use crate::common;

use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};

use common::*;

#[tokio::test]
async fn a_second_serve_on_one_database_is_refused_and_a_killed_one_leaves_no_lock() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, "").await;
    let first_pid = w
        .child
        .as_ref()
        .and_then(tokio::process::Child::id)
        .expect("serve's pid");
    let config = w.dir.path().join("watcher.toml");
    let database = std::fs::canonicalize(w.dir.path().join("watcher.db")).expect("the database");

    let second = tokio::time::timeout(
        Duration::from_secs(30),
        Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
            .arg("serve")
            .arg("--config")
            .arg(&config)
            .stdin(Stdio::null())
            // Killed if it runs (the refusal failed) and the wait gives up.
            .kill_on_drop(true)
            .output(),
    )
    .await
    .expect("the second serve ends at once")
    .expect("run a2a-watcher serve");
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(!second.status.success(), "a second serve ran: {said}");
    assert!(
        !String::from_utf8_lossy(&second.stdout).contains("listening on"),
        "{said}"
    );
    assert!(
        said.contains(&format!(
            "the database {} is in use by another a2a-watcher serve (pid {first_pid}, holding it since ",
            database.display()
        )),
        "{said}"
    );

    // A command that reads the database works beside the running serve.
    let read = Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(["report", "basis", "--json", "--config"])
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .await
        .expect("run a2a-watcher report basis");
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );

    // The first killed with SIGKILL: no graceful shutdown, the lock file stays behind, and the
    // next serve starts on the same database.
    w.kill().await;
    assert!(w.dir.path().join("watcher.db.lock").exists());
    w.start().await;
    let healthy = w.get("/healthz").await;
    assert_eq!(healthy.status, 200, "{healthy:?}");
}
