//! Health that tells the truth on a full disk (issue 9 item 6): `a2a-watcher serve` with its
//! database on a small tmpfs; the tmpfs is filled, `/healthz` answers 503 problem+json whose
//! `detail` names the store's error; space is freed, `/healthz` answers 200 again.
//!
//! Mounting needs root (CAP_SYS_ADMIN). Where `mount -t tmpfs` is not permitted the test reports
//! itself skipped, with the reason, and stops (`common::skip`: `SKIPPED` beside its result and a
//! line in infra/test-all.sh's closing summary): SQLite's `PRAGMA max_page_count` (SQLITE_FULL,
//! the same error) cannot stand in, because the health probe rewrites one row in place and so
//! never needs a new page, and `serve`'s connection is not reachable from the test
//! (docs/interpretation.md).

use crate::common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::*;

/// A tmpfs mounted for the test, unmounted (lazily) when dropped.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Result<Tmpfs, String> {
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| format!("mount could not run: {e}"))?;
        if out.status.success() {
            Ok(Tmpfs(dir.to_path_buf()))
        } else {
            Err(String::from_utf8_lossy(&out.stderr).trim().to_owned())
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// Writes `filler` until the file system refuses (ENOSPC); answers the bytes written.
fn fill(filler: &Path) -> usize {
    let mut f = std::fs::File::create(filler).expect("create the filler");
    let chunk = vec![0u8; 16 * 1024];
    let mut written = 0;
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(n) => written += n,
            Err(_) => break,
        }
    }
    let _ = f.flush();
    // Small writes take what the big ones left.
    while f.write(&[0u8; 512]).is_ok_and(|n| n > 0) {
        written += 512;
    }
    written
}

#[tokio::test]
async fn healthz_is_503_on_a_full_disk_and_200_after() {
    let outer = tempfile::tempdir().expect("a temporary folder");
    let mnt = outer.path().join("db");
    std::fs::create_dir(&mnt).unwrap();
    let _tmpfs = match Tmpfs::mount(&mnt, "8m") {
        Ok(m) => m,
        Err(why) => {
            skip::skip(&format!(
                "mount -t tmpfs is not permitted here ({why}); a full disk needs a small file \
                 system of its own (PRAGMA max_page_count cannot stand in: the health probe \
                 rewrites one row in place and never needs a new page)"
            ));
            return;
        }
    };
    let db = mnt.join("watcher.db");
    let w = spawn_watcher_with_config(&format!(
        r#"listen = "127.0.0.1:0"
database = "{}"

[[operators]]
id = "ops-desk"
token = "{OPERATOR_TOKEN}"
"#,
        db.display()
    ))
    .await;
    let ok = w.get("/healthz").await;
    assert_eq!(ok.status, 200, "{:#}", ok.body);

    let filler = mnt.join("filler");
    let written = fill(&filler);
    eprintln!("serve_full_disk: filled the tmpfs with {written} bytes");
    // Each probe appends to the write-ahead log: once the log needs a block, it fails.
    let full = wait_until(
        || async { w.get("/healthz").await.status == 503 },
        Duration::from_secs(30),
    )
    .await;
    let health = w.get("/healthz").await;
    assert!(full, "{} {:#}\n{}", health.status, health.body, w.log());
    let detail = health.assert_problem(503);
    eprintln!("serve_full_disk: /healthz answered 503: {detail}");
    assert!(
        detail.starts_with("the store cannot write:"),
        "the detail names the store's error: {detail}"
    );
    assert!(
        detail.contains("full") || detail.contains("disk"),
        "the detail says the disk is full: {detail}"
    );

    std::fs::remove_file(&filler).expect("free the space");
    let back = wait_until(
        || async { w.get("/healthz").await.status == 200 },
        Duration::from_secs(30),
    )
    .await;
    let health = w.get("/healthz").await;
    assert!(back, "{} {:#}", health.status, health.body);
    assert_eq!(health.body["status"], "ok");
}
