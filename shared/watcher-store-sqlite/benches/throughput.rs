//! Throughput of the watcher's step loop over each store: raising expectations (one artifact of
//! three per subject, as in the worked example), satisfying them by fact, and firing due
//! deadlines. Run with `cargo bench -p watcher-store-sqlite`; prints operations per second.
//!
//! A bench binary (harness = false) rather than a timed test: speed is measured here, never
//! asserted in the test suite.

use std::sync::Arc;
use std::time::Instant as Clock;

use serde_json::{json, Value};
use watcher_core::card::declaration_from_card;
use watcher_core::engine::{AgentProfile, Input, PushItem, ReportedFact};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, Source, Subject, TaskId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::directory::{AgentEntry, Directory};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;
use watcher_store_sqlite::SqliteStore;

const CARD: &str = include_str!("../../../examples/booking-card.json");

fn expectations(n: usize) -> Vec<Value> {
    let id = format!("PA-{n}");
    vec![
        json!({"expectationId": format!("m-{n}"), "kind": "shipment.manifest", "subject": {"type": "shipment", "id": id},
               "expects": "manifest", "satisfiedBy": {"factKey": format!("manifest:{id}")}, "dueAt": "2026-09-10T20:15:00Z", "grace": "PT2H", "basis": "observed"}),
        json!({"expectationId": format!("d-{n}"), "kind": "shipment.departure", "subject": {"type": "shipment", "id": id},
               "expects": "departure", "satisfiedBy": {"factKey": format!("departed:{id}")}, "dueAt": "2026-09-11T03:15:00Z", "grace": "PT6H", "basis": "observed", "after": [format!("m-{n}")]}),
        json!({"expectationId": format!("a-{n}"), "kind": "shipment.arrival", "subject": {"type": "shipment", "id": id},
               "expects": "arrival", "satisfiedBy": {"factKey": format!("arrived:{id}")}, "dueAt": "2026-09-11T05:00:00Z", "grace": "PT6H",
               "anchor": {"expectationId": format!("d-{n}"), "offset": "PT1H45M"}, "after": [format!("d-{n}")], "horizon": "2026-09-13T05:00:00Z", "basis": "observed"}),
    ]
}

async fn run(name: &str, store: Arc<dyn Store>, n: usize) {
    let card: Value = serde_json::from_str(CARD).expect("card");
    let declaration = declaration_from_card(&card).expect("valid card");
    let agent = AgentProfile {
        id: AgentId::parse("booking").expect("id"),
        declaration,
    };
    let directory = Directory::new();
    directory.insert(AgentEntry {
        tenant: Tenant::default_tenant(),
        profile: agent.clone(),
        submits_lapses: true,
        delivery: Delivery::default(),
    });
    let settings = Settings {
        max_open_per_agent: u64::MAX,
        ..Settings::default()
    };
    let watcher = Watcher::new(store, directory, settings);
    let tenant = Tenant::default_tenant();
    let t0 = Instant::parse("2026-09-10T01:00:00Z").expect("instant");

    let started = Clock::now();
    for i in 0..n {
        let items = vec![PushItem::Raise {
            origin: watcher_core::engine::Origin {
                task_id: TaskId::parse(format!("task-{i}")).expect("task"),
                context_id: None,
            },
            expectations: expectations(i).iter().map(Expectation::from_json).collect(),
            question_at: None,
            question_timestamp: None,
        }];
        watcher
            .apply(
                &tenant,
                &Input::Push {
                    agent: agent.clone(),
                    items,
                },
                t0,
            )
            .await
            .expect("raise");
    }
    let raise = started.elapsed();

    let fact_at = Instant::parse("2026-09-11T02:41:07Z").expect("instant");
    let started = Clock::now();
    for i in 0..n {
        let fact = ReportedFact {
            fact_key: watcher_core::ids::FactKey::parse(format!("departed:PA-{i}")).expect("key"),
            observed_at: Instant::parse("2026-09-11T02:41:00Z").expect("instant"),
            observed_at_given: None,
            mapping: None,
            subject: Some(Subject::parse("shipment", &format!("PA-{i}")).expect("subject")),
            source: Source::parse("carrier").expect("source"),
        };
        watcher
            .apply(&tenant, &Input::Facts(vec![fact]), fact_at)
            .await
            .expect("fact");
    }
    let facts = started.elapsed();

    let started = Clock::now();
    let fired = watcher
        .fire_due(Instant::parse("2026-09-14T00:00:00Z").expect("instant"))
        .await
        .expect("fire");
    let timers = started.elapsed();
    let lapses: usize = fired
        .iter()
        .map(|(_, a)| {
            a.effects
                .iter()
                .filter(|e| matches!(e, watcher_core::engine::Effect::Lapsed(_)))
                .count()
        })
        .sum();
    let left = watcher
        .store
        .due_timers(
            Instant::parse("2026-09-14T00:00:00Z").expect("instant"),
            usize::MAX,
        )
        .await
        .expect("due");
    if let Some(first) = left.first() {
        println!(
            "{name}: {} timers still due after the sweep; first {:?}",
            left.len(),
            first
        );
    }

    let per_sec = |count: usize, d: std::time::Duration| count as f64 / d.as_secs_f64();
    println!(
        "{name:<16} {n:>6} subjects: raise {:>7.0} artifacts/s ({:>7.0} expectations/s) | facts {:>7.0}/s | sweep {:>7.0} lapses/s ({} lapses)",
        per_sec(n, raise),
        per_sec(3 * n, raise),
        per_sec(n, facts),
        per_sec(lapses, timers),
        lapses
    );
}

fn main() {
    let n: usize = std::env::var("BENCH_SUBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        run("memory", Arc::new(MemoryStore::new()), n.min(1000)).await;
        run(
            "sqlite (memory)",
            Arc::new(SqliteStore::memory().expect("sqlite")),
            n,
        )
        .await;
        let path =
            std::env::temp_dir().join(format!("a2a-watcher-bench-{}.db", std::process::id()));
        run(
            "sqlite (file)",
            Arc::new(SqliteStore::open(&path).expect("sqlite file")),
            n,
        )
        .await;
        for suffix in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{suffix}", path.display()));
        }
    });
}
