//! semantics.md "Time" on the command line: the flags that take an instant
//! (`a2a-watcher lapses --since`, `example-fact --at`) read the contract's instant cases
//! (`shared/instants/tests/cases.json`) as every route reads them (watcher-http
//! `tests/instants.rs`): the same accepted, each as the same instant, and the same refused, the
//! error naming the flag and the reason.

use std::process::Output;

use serde_json::{json, Value};
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_runtime::store::{Commit, OutboxEntry, Records as _};
use watcher_store_sqlite::SqliteStore;

const CASES: &str = include_str!("../shared/instants/tests/cases.json");

/// `(given, Ok(reads) | Err(why))` for every case.
fn cases() -> Vec<(String, Result<String, String>)> {
    let all: Value = serde_json::from_str(CASES).expect("cases.json is JSON");
    let of = |member: &str, key: &str| -> Vec<(String, String)> {
        all[member]
            .as_array()
            .expect("a list")
            .iter()
            .map(|c| {
                (
                    c["given"].as_str().unwrap().to_owned(),
                    c[key].as_str().unwrap().to_owned(),
                )
            })
            .collect()
    };
    of("accepted", "reads")
        .into_iter()
        .map(|(g, r)| (g, Ok(r)))
        .chain(of("refused", "why").into_iter().map(|(g, w)| (g, Err(w))))
        .collect()
}

fn cli(args: &[&str]) -> Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_a2a-watcher"))
        .args(args)
        .env_remove("A2A_WATCHER_URL")
        .env_remove("A2A_WATCHER_TOKEN")
        .output()
        .expect("run a2a-watcher")
}

/// What the command made of the flag: its standard output, or its standard error.
fn outcome(out: &Output) -> Result<String, String> {
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).into_owned())
    }
}

/// Whether `got` is what the case says: the instant `reads` (by `shown`), or a refusal naming
/// `flag` and holding the case's reason.
fn agrees(
    flag: &str,
    want: &Result<String, String>,
    got: &Result<String, String>,
    shown: impl Fn(&str) -> Option<String>,
) -> bool {
    match (want, got) {
        (Ok(reads), Ok(out)) => shown(out).as_deref() == Some(reads.as_str()),
        (Err(why), Err(err)) => err.contains(why.as_str()) && err.contains(flag),
        _ => false,
    }
}

#[test]
fn example_fact_at_reads_the_contracts_cases() {
    let mut wrong = Vec::new();
    for (given, want) in cases() {
        let got = outcome(&cli(&["example-fact", "--at", &given]));
        let observed = |out: &str| {
            serde_json::from_str::<Value>(out).ok()?["observedAt"]
                .as_str()
                .map(str::to_owned)
        };
        // example-fact names the value it could not read, not a flag of its own.
        if !agrees(&given, &want, &got, observed) {
            wrong.push(format!("--at {given:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// `lapses --since` over a database holding lapse tasks lapsed at the instant the case reads
/// and a nanosecond before it: the one listed pins the instant `--since` was read as.
#[tokio::test]
async fn lapses_since_reads_the_contracts_cases() {
    let mut wrong = Vec::new();
    for (given, want) in cases() {
        let dir = tempfile::tempdir().expect("a folder");
        let db = dir.path().join("watcher.db");
        let store = SqliteStore::open(&db).expect("a database");
        if let Ok(reads) = &want {
            let at = Instant::parse(reads).unwrap();
            let entry = |id: &str, at: Instant| {
                OutboxEntry::queued(
                    Tenant::default_tenant(),
                    AgentId::parse("booking").unwrap(),
                    id.to_owned(),
                    ExpectationId::parse("exp").unwrap(),
                    LapseKind::Overdue,
                    at,
                    json!({}),
                )
            };
            let mut entries = vec![entry("at", at)];
            if let Ok(before) = Instant::from_nanos(at.as_nanos() - 1) {
                entries.insert(0, entry("before", before));
            }
            store
                .commit(&Tenant::default_tenant(), Commit::of_outbox(entries))
                .await
                .unwrap();
        }
        drop(store);
        let since = format!("--since={given}");
        let got = outcome(&cli(&[
            "lapses",
            &since,
            "--json",
            "--db",
            db.to_str().unwrap(),
        ]));
        let listed = |out: &str| -> Option<String> {
            let body: Value = serde_json::from_str(out).ok()?;
            let ids: Vec<&str> = body["lapses"]
                .as_array()?
                .iter()
                .filter_map(|l| l["messageId"].as_str())
                .collect();
            // Lists the one at the instant and not the one a nanosecond before: read as it.
            (ids == ["at"]).then(|| want.clone().unwrap_or_default())
        };
        if !agrees("--since", &want, &got, listed) {
            wrong.push(format!("--since {given:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
