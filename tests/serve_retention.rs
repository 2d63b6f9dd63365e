//! `a2a-watcher serve`'s retention (expectations-v1 §14, contracts/serve.md `retention_days`):
//! at start, and then hourly, it forgets what was last active longer ago than `retention_days`;
//! `retention_days = 0` keeps everything. The rule itself is pinned by the store conformance
//! suite (`purge_follows_retention`); this checks that `serve` runs it.

use crate::common;

use std::time::Duration;
use watcher_runtime::store::Records as _;

use jiff::{SignedDuration, Timestamp};
use watcher_core::ids::{FactKey, Source, Subject, Tenant};
use watcher_core::slice::{FactEntry, SubjectState};
use watcher_core::time::Instant;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour};
use watcher_runtime::store::Commit;
use watcher_store_sqlite::SqliteStore;

use common::*;

const PATIENCE: Duration = Duration::from_secs(20);

/// A subject holding one fact received `days_ago` days ago, and nothing else.
fn subject_with_a_fact(id: &str, days_ago: i64) -> SubjectState {
    let subject = Subject::parse("shipment", id).expect("a valid subject");
    let received =
        Instant::from_timestamp(Timestamp::now() - SignedDuration::from_hours(24 * days_ago))
            .expect("a clock in years 1 to 9999");
    let mut state = SubjectState::new(subject.clone());
    state.facts.push(FactEntry {
        fact_key: FactKey::parse(format!("shipment.departed:{id}")).expect("a valid fact key"),
        source: Source::parse(SOURCE_ID).expect("a valid source"),
        observed_at: received,
        claimed_observed_at: received,
        observed_at_given: None,
        mapping: None,
        received_at: received,
        subject: Some(subject),
        satisfied: Vec::new(),
    });
    state
}

/// `log` without its ANSI colour sequences (ESC `[` ... letter).
fn plain(log: &str) -> String {
    let mut out = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Stops `w`, writes PA-OLD (a fact 60 days old) and PA-NEW (a fact a day old) straight into its
/// database, and starts it again.
async fn restart_with_old_and_new_subjects(w: &mut Watcher) {
    w.kill().await;
    let store =
        SqliteStore::open(w.dir.path().join("watcher.db")).expect("open the watcher's database");
    store
        .commit(
            &Tenant::parse("default").expect("a valid tenant"),
            Commit {
                subjects: vec![
                    subject_with_a_fact("PA-OLD", 60),
                    subject_with_a_fact("PA-NEW", 1),
                ],
                ..Commit::default()
            },
        )
        .await
        .expect("write the subjects");
    drop(store);
    w.start().await;
}

#[tokio::test]
async fn serve_purges_at_start_what_the_retention_period_allows() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, "retention_days = 30").await;
    restart_with_old_and_new_subjects(&mut w).await;
    let purged = wait_until(|| async { w.shipment("PA-OLD").await.is_none() }, PATIENCE).await;
    assert!(purged, "PA-OLD (60 days) is forgotten:\n{}", w.log());
    assert!(
        w.shipment("PA-NEW").await.is_some(),
        "PA-NEW (1 day) is kept"
    );
    let logged = wait_until(
        || async {
            plain(&w.log())
                .lines()
                .any(|l| l.contains("retention purge") && l.contains("subjects=1"))
        },
        PATIENCE,
    )
    .await;
    assert!(logged, "the purge is logged with its counts:\n{}", w.log());
}

#[tokio::test]
async fn retention_days_0_keeps_everything() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut w = spawn_watcher(&agent, "retention_days = 0").await;
    restart_with_old_and_new_subjects(&mut w).await;
    let kept = holds_for(
        || async { w.shipment("PA-OLD").await.is_some() },
        Duration::from_secs(2),
    )
    .await;
    assert!(kept, "PA-OLD is kept:\n{}", w.log());
    assert!(w.shipment("PA-NEW").await.is_some());
    assert!(
        w.log().contains("keeping every record forever"),
        "{}",
        w.log()
    );
}
