//! The per-agent delivery lanes (`watcher_delivery::lanes`) over a memory store and capture
//! agents on the system clock: excess over an agent's rate waits and is never dropped, a lane
//! woken for work queued after it went idle sends it, and (ignored, run by hand) a burst of
//! 1,000 lapse tasks across 10 agents, timed and printed, never asserted.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;
use watcher_runtime::store::{LapseLog, Records as _};

use common::*;
use tokio::sync::{watch, Notify};
use watcher_core::ids::{AgentId, Tenant};
use watcher_delivery::testing::CaptureAgent;
use watcher_delivery::{
    spawn_lanes, AgentEndpoint, LaneContext, LaneSettings, RateLimit, RetryPolicy,
};
use watcher_runtime::clock::SystemClock;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry, Store};

fn entry_for(agent: &str, n: usize) -> OutboxEntry {
    let mut e = lapse_entry(&format!("exp-{agent}-{n}"));
    e.agent = AgentId::parse(agent).unwrap();
    e
}

struct Lanes {
    store: Arc<MemoryStore>,
    wake: Arc<Notify>,
    _stop: watch::Sender<bool>,
}

fn start(
    store: Arc<MemoryStore>,
    agents: &[(&str, &CaptureAgent)],
    rate: RateLimit,
    settings: LaneSettings,
) -> Lanes {
    let mut endpoints: HashMap<(Tenant, AgentId), AgentEndpoint> = HashMap::new();
    for (name, agent) in agents {
        endpoints.insert(
            (tenant(), AgentId::parse(*name).unwrap()),
            agent.endpoint(None),
        );
    }
    let wake = Arc::new(Notify::new());
    let (stop_tx, stop) = watch::channel(false);
    let dyn_store: Arc<dyn Store> = store.clone();
    spawn_lanes(
        LaneContext {
            store: dyn_store,
            submitter: Arc::new(submitter(RetryPolicy::default(), Some(rate))),
            endpoints: Arc::new(endpoints),
            clock: Arc::new(SystemClock),
            wake: wake.clone(),
            stop,
            settings,
            reconciler: None,
        },
        agents
            .iter()
            .map(|(n, _)| (tenant(), AgentId::parse(*n).unwrap()))
            .collect(),
    );
    Lanes {
        store,
        wake,
        _stop: stop_tx,
    }
}

async fn wait_sent(store: &MemoryStore, n: usize, patience: Duration) -> bool {
    let deadline = tokio::time::Instant::now() + patience;
    loop {
        let sent = store
            .lapses(&tenant())
            .await
            .unwrap()
            .iter()
            .filter(|e| e.delivery == DeliveryState::Sent)
            .count();
        if sent >= n {
            return true;
        }
        if tokio::time::Instant::now() >= deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn excess_over_the_rate_waits_and_is_never_dropped() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let entries: Vec<OutboxEntry> = (0..30).map(|n| entry_for("booking", n)).collect();
    let ids: BTreeSet<String> = entries.iter().map(|e| e.message_id.clone()).collect();
    let store = Arc::new(store_with(entries).await);
    let _lanes = start(
        store.clone(),
        &[("booking", &agent)],
        RateLimit {
            per_minute: 1200,
            burst: 10,
        },
        LaneSettings::default(),
    );
    assert!(wait_sent(&store, 30, Duration::from_secs(30)).await);
    let sent = agent.sent_message_ids();
    assert_eq!(sent.len(), 30, "each once");
    assert_eq!(sent.into_iter().collect::<BTreeSet<_>>(), ids);
    assert!(store
        .lapses(&tenant())
        .await
        .unwrap()
        .iter()
        .all(|e| e.attempts == 1 && e.last_error.is_none()));
}

#[tokio::test]
async fn work_queued_after_the_lane_went_idle_is_sent_when_woken() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let store = Arc::new(MemoryStore::new());
    let lanes = start(
        store.clone(),
        &[("booking", &agent)],
        RateLimit::unlimited(),
        // An idle wait far longer than the test's patience: only the wake-up can end it.
        LaneSettings {
            idle: Duration::from_secs(3600),
            ..LaneSettings::default()
        },
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    lanes
        .store
        .commit(
            &tenant(),
            Commit {
                outbox: vec![entry_for("booking", 1)],
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    lanes.wake.notify_waiters();
    assert!(wait_sent(&store, 1, Duration::from_secs(20)).await);
    assert_eq!(agent.sent_message_ids().len(), 1);
}

/// Run by hand: `cargo test -p watcher-delivery --test it lanes:: -- --ignored --nocapture`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn measure_a_burst_of_1000_across_10_agents() {
    let mut agents = Vec::new();
    for _ in 0..10 {
        agents.push(spawn_capture_agent(Behaviour::accept()).await);
    }
    let names: Vec<String> = (0..10).map(|i| format!("agent-{i}")).collect();
    let mut entries = Vec::new();
    for name in &names {
        for n in 0..100 {
            entries.push(entry_for(name, n));
        }
    }
    let store = Arc::new(MemoryStore::new());
    store
        .commit(
            &tenant(),
            Commit {
                outbox: entries,
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let pairs: Vec<(&str, &CaptureAgent)> = names
        .iter()
        .map(String::as_str)
        .zip(agents.iter())
        .collect();
    let started = std::time::Instant::now();
    let _lanes = start(
        store.clone(),
        &pairs,
        RateLimit {
            per_minute: 600,
            burst: 100,
        },
        LaneSettings::default(),
    );
    assert!(wait_sent(&store, 1000, Duration::from_secs(120)).await);
    println!(
        "1000 lapse tasks across 10 agents (default rate and lanes): all sent after {:?}",
        started.elapsed()
    );
}
