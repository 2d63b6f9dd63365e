//! A test that cannot do its work says so and is listed, with its reason, in the summary of
//! `infra/test-all.sh` (`common::skip`, `infra/skipped.sh`): never a silent `ok`.

use std::path::Path;
use std::process::Command;

use crate::common::skip::LOG_ENV;

const FULL_DISK: &str = "serve_full_disk::healthz_is_503_on_a_full_disk_and_200_after";

/// The full-disk test, run where it cannot mount (this binary again, with no `mount` on its
/// PATH), prints `SKIPPED` with its reason beside its result and records the skip; the
/// summary lists it under "skipped", after the script's own skips.
#[test]
fn a_test_that_cannot_mount_is_listed_as_skipped_in_the_summary() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let log = dir.path().join("skipped-tests.log");
    let out = Command::new(std::env::current_exe().expect("this test binary"))
        .args([FULL_DISK, "--exact", "--test-threads", "2"])
        // A folder with no `mount` in it: the test cannot mount, whoever runs it.
        .env("PATH", dir.path())
        .env(LOG_ENV, &log)
        .output()
        .expect("run the full-disk test");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains(&format!("test {FULL_DISK} ... ok")),
        "the one test ran: {stdout}"
    );
    let said =
        format!("SKIPPED {FULL_DISK}: mount -t tmpfs is not permitted here (mount could not run");
    assert!(
        stderr.contains(&said),
        "the test's own output says it was skipped, and why:\n{stderr}"
    );

    let recorded = std::fs::read_to_string(&log).expect("the skip is recorded");
    let lines: Vec<&str> = recorded.lines().collect();
    assert_eq!(lines.len(), 1, "{recorded}");
    assert!(
        lines[0].starts_with(&format!(
            "{FULL_DISK}: mount -t tmpfs is not permitted here ("
        )),
        "{recorded}"
    );
    assert!(
        lines[0].contains("PRAGMA max_page_count cannot stand in"),
        "{recorded}"
    );

    let summary = summary(&log, &["the book (docs/): mdbook could not be installed"]);
    assert_eq!(
        summary,
        format!(
            "== skipped (2):\n   - the book (docs/): mdbook could not be installed\n   - test {}\n",
            lines[0]
        )
    );
}

/// What `infra/skipped.sh LOG LINE...` prints.
fn summary(log: &Path, own: &[&str]) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = Command::new("bash")
        .arg(root.join("infra/skipped.sh"))
        .arg(log)
        .args(own)
        .output()
        .expect("run infra/skipped.sh");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8")
}

#[test]
fn the_summary_is_empty_when_nothing_was_skipped() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    let log = dir.path().join("skipped-tests.log");
    assert_eq!(summary(&log, &[]), "");
    std::fs::write(&log, "").expect("write");
    assert_eq!(summary(&log, &[]), "");
    crate::common::skip::record(&log, "a::b", "no reason to run").expect("record");
    assert_eq!(
        summary(&log, &[]),
        "== skipped (1):\n   - test a::b: no reason to run\n"
    );
}

/// Every skip goes through `common::skip`: no test prints a `SKIPPED` line of its own, which
/// the summary would not list.
#[test]
fn no_test_prints_a_skip_of_its_own() {
    let tests = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests");
    let mut own = Vec::new();
    let mut stack = vec![tests.clone()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).expect("a readable folder").flatten() {
            let p = entry.path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let mine = [tests.join("common/skip.rs"), tests.join("skipped.rs")];
            if p.extension().is_none_or(|x| x != "rs") || mine.contains(&p) {
                continue;
            }
            let text = std::fs::read_to_string(&p).expect("a readable file");
            for (i, line) in text.lines().enumerate() {
                let code = !line.trim_start().starts_with("//");
                if code && line.contains("SKIPPED") {
                    own.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(
        own.is_empty(),
        "report a skip with `common::skip::skip(reason)`, so that the summary lists it:\n{}",
        own.join("\n")
    );
}
