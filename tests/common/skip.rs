//! A test that cannot do its work here (no permission to mount, no emulator, no Chromium, no SDK)
//! says so through [`skip`] and returns: libtest has no skip at run time, so the test is still
//! reported `ok`, and this is what keeps that `ok` from passing for a run. Each skip is
//!
//! - printed as `SKIPPED <test>: <reason>` on the process's standard error, beside the test's
//!   result (written to the stream itself: libtest captures a passing test's `eprintln!`);
//! - appended, as `<test>: <reason>`, to the file `A2A_SKIPPED_LOG` names, when it names one.
//!   `infra/test-all.sh` sets it, and its closing summary (`infra/skipped.sh`) lists every line
//!   under "skipped", beside what the script itself could not install.
//!
//! Every skip of the root package's tests goes through here (`tests/skipped.rs` checks that no
//! test prints a `SKIPPED` line of its own).

use std::io::Write;
use std::path::Path;

/// The variable naming the file each skip is appended to.
pub const LOG_ENV: &str = "A2A_SKIPPED_LOG";

/// The running test's name (`serve_full_disk::healthz_is_503_on_a_full_disk_and_200_after`):
/// libtest names each test's thread after the test, and `#[tokio::test]` runs the test's body
/// on that thread. `a test` when the thread has no such name (`--test-threads=1` runs tests on
/// the main thread).
pub fn this_test() -> String {
    match std::thread::current().name() {
        Some(name) if name != "main" => name.to_owned(),
        _ => "a test".to_owned(),
    }
}

/// Reports the running test as skipped because `why` (one line; the caller then returns):
/// printed as `SKIPPED <test>: <why>` and, with `A2A_SKIPPED_LOG` set, recorded there.
pub fn skip(why: &str) {
    let test = this_test();
    let why = why.replace('\n', " ");
    // Straight to the stream: `eprintln!` would be captured, and a passing test's capture is
    // never shown.
    let _ = writeln!(std::io::stderr().lock(), "SKIPPED {test}: {why}");
    if let Some(log) = std::env::var_os(LOG_ENV).filter(|l| !l.is_empty()) {
        if let Err(e) = record(Path::new(&log), &test, &why) {
            let _ = writeln!(
                std::io::stderr().lock(),
                "SKIPPED {test}: could not record the skip in {}: {e}",
                Path::new(&log).display()
            );
        }
    }
}

/// Appends `<test>: <why>` to `log`, making it if needed.
///
/// # Errors
/// The file cannot be opened or written.
pub fn record(log: &Path, test: &str, why: &str) -> std::io::Result<()> {
    // One write of one line to a file opened for appending: tests skipping at the same time
    // (threads of one binary, or binaries one after the other) never interleave their lines.
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)?;
    f.write_all(format!("{test}: {why}\n").as_bytes())
}
