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

/// `entry_for` in a contextId of its own (`ctx-{agent}-{n}`): lapse tasks a lane may send at
/// once.
fn entry_in_own_context(agent: &str, n: usize) -> OutboxEntry {
    let mut e = entry_for(agent, n);
    e.request["message"]["contextId"] = serde_json::json!(format!("ctx-{agent}-{n}"));
    e
}

/// One agent whose every answer takes 200 ms, 24 lapse tasks in 24 contexts: the lane keeps
/// `per_agent` (4) of them in flight at the agent at once, never more, and sends each once
/// (issue: "the same number in flight per agent" on both deployments; the submitter function
/// drives the same `Lane`).
#[tokio::test]
async fn one_agent_has_per_agent_lapse_tasks_in_flight_never_more() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    agent.set_answer_delay(Duration::from_millis(200));
    let entries: Vec<OutboxEntry> = (0..24)
        .map(|n| entry_in_own_context("booking", n))
        .collect();
    let store = Arc::new(store_with(entries).await);
    let _lanes = start(
        store.clone(),
        &[("booking", &agent)],
        RateLimit::unlimited(),
        LaneSettings::default(),
    );
    assert!(wait_sent(&store, 24, Duration::from_secs(30)).await);
    assert_eq!(agent.sent_message_ids().len(), 24, "each once");
    assert_eq!(
        agent.peak_sends_in_flight(),
        LaneSettings::default().per_agent
    );
}

/// The same with the 24 lapse tasks in one contextId: one after another, never two in flight
/// (a later lapse task of a context never overtakes an earlier one).
#[tokio::test]
async fn one_context_is_sent_one_at_a_time() {
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    agent.set_answer_delay(Duration::from_millis(20));
    let entries: Vec<OutboxEntry> = (0..24).map(|n| entry_for("booking", n)).collect();
    let store = Arc::new(store_with(entries).await);
    let _lanes = start(
        store.clone(),
        &[("booking", &agent)],
        RateLimit::unlimited(),
        LaneSettings::default(),
    );
    assert!(wait_sent(&store, 24, Duration::from_secs(30)).await);
    assert_eq!(agent.sent_message_ids().len(), 24, "each once");
    assert_eq!(agent.peak_sends_in_flight(), 1);
}

/// One pass over six contexts of ten lapse tasks, queued context by context (a push of ten, then
/// the next): the first read (32: three contexts of ten and two of a fourth) would keep three
/// places busy for ten sends; the pass reads deeper and shares its batch of 32 so that all four
/// places stay busy for the whole pass: six of each of the first five contexts and two of the
/// sixth, each context's in the order they were queued, none sent twice; the pass ends with more
/// to do (`watcher_delivery::contexts`).
#[tokio::test]
async fn one_pass_shares_its_batch_among_contexts() {
    use watcher_delivery::{Lane, PassEnd};
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut entries = Vec::new();
    for c in ["A", "B", "C", "D", "E", "F"] {
        for _ in 0..10 {
            let mut e = entry_for("booking", entries.len());
            e.request["message"]["contextId"] = serde_json::json!(format!("ctx-{c}"));
            entries.push(e);
        }
    }
    let order: Vec<String> = entries.iter().map(|e| e.message_id.clone()).collect();
    let store = store_with(entries).await;
    let mut endpoints: HashMap<(Tenant, AgentId), AgentEndpoint> = HashMap::new();
    endpoints.insert((tenant(), booking()), agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);
    let report = Lane {
        tenant: &tenant(),
        agent: &booking(),
        store: &store,
        submitter: &sub,
        endpoints: &endpoints,
        reconciler: None,
        slots: None,
        per_agent: 4,
        batch: 32,
    }
    .pass(&SystemClock, None)
    .await;
    assert_eq!(report.end, PassEnd::More);
    assert_eq!(report.delivery.total(), 32);
    let mut per_context: HashMap<String, Vec<String>> = HashMap::new();
    for r in agent.requests() {
        let json = r.json().unwrap();
        let context = json
            .pointer("/params/message/contextId")
            .and_then(serde_json::Value::as_str)
            .unwrap()
            .to_owned();
        per_context
            .entry(context)
            .or_default()
            .push(r.message_id().unwrap());
    }
    let mut counts: Vec<(String, usize)> = per_context
        .iter()
        .map(|(c, ids)| (c.clone(), ids.len()))
        .collect();
    counts.sort();
    let expected = [6, 6, 6, 6, 6, 2];
    let contexts = ["ctx-A", "ctx-B", "ctx-C", "ctx-D", "ctx-E", "ctx-F"];
    assert_eq!(
        counts,
        contexts
            .iter()
            .zip(expected)
            .map(|(c, n)| ((*c).to_owned(), n))
            .collect::<Vec<_>>()
    );
    for (k, c) in contexts.iter().enumerate() {
        assert_eq!(
            per_context[*c],
            order[k * 10..k * 10 + expected[k]].to_vec(),
            "{c} in order"
        );
    }
}

/// A memory store whose records of an answer (`outbox_update_read`) wait until released: what a
/// send does between the agent's answer and its record can be seen.
struct SlowRecords {
    inner: MemoryStore,
    released: watch::Receiver<bool>,
}

#[async_trait::async_trait]
impl watcher_runtime::store::Outbox for SlowRecords {
    async fn outbox_get(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
    ) -> Result<Option<OutboxEntry>, watcher_runtime::store::StoreError> {
        self.inner.outbox_get(tenant, agent, message_id).await
    }
    async fn outbox_update(
        &self,
        entry: &OutboxEntry,
    ) -> Result<(), watcher_runtime::store::StoreError> {
        self.inner.outbox_update(entry).await
    }
    async fn outbox_claim(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        lease: &watcher_runtime::store::Lease,
        now: watcher_core::time::Instant,
    ) -> Result<watcher_runtime::store::Claim, watcher_runtime::store::StoreError> {
        self.inner
            .outbox_claim(tenant, agent, message_id, lease, now)
            .await
    }
    async fn outbox_update_read(
        &self,
        read: &OutboxEntry,
        entry: &OutboxEntry,
    ) -> Result<(), watcher_runtime::store::StoreError> {
        let mut released = self.released.clone();
        let _ = released.wait_for(|r| *r).await;
        self.inner.outbox_update_read(read, entry).await
    }
    async fn outbox_task_state(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        task_id: &str,
        state: a2a_types::TaskState,
        now: watcher_core::time::Instant,
    ) -> Result<Option<OutboxEntry>, watcher_runtime::store::StoreError> {
        self.inner
            .outbox_task_state(tenant, agent, message_id, task_id, state, now)
            .await
    }
    async fn outbox_resolve(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        resolution: &watcher_runtime::resolution::Resolution,
    ) -> Result<Option<OutboxEntry>, watcher_runtime::store::StoreError> {
        self.inner
            .outbox_resolve(tenant, agent, message_id, resolution)
            .await
    }
    async fn outbox_lane(
        &self,
        query: &watcher_runtime::store::LaneQuery<'_>,
    ) -> Result<Vec<OutboxEntry>, watcher_runtime::store::StoreError> {
        self.inner.outbox_lane(query).await
    }
    async fn outbox_by_task(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        task_id: &str,
    ) -> Result<Vec<OutboxEntry>, watcher_runtime::store::StoreError> {
        self.inner.outbox_by_task(tenant, agent, task_id).await
    }
}

/// With one place for the agent (`per_agent` 1), the second lapse task (another context) is
/// posted while the first one's answer is still being recorded: a send holds its place only while
/// its request is at the agent (`watcher_delivery::deliver::Places`), so on a store whose writes
/// take a round trip the agent still has its `in_flight_per_agent` requests.
#[tokio::test]
async fn the_next_send_goes_while_the_last_answer_is_recorded() {
    use watcher_delivery::{Lane, PassEnd};
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let entries = vec![
        entry_in_own_context("booking", 0),
        entry_in_own_context("booking", 1),
    ];
    let (release, released) = watch::channel(false);
    let store = SlowRecords {
        inner: store_with(entries).await,
        released,
    };
    let mut endpoints: HashMap<(Tenant, AgentId), AgentEndpoint> = HashMap::new();
    endpoints.insert((tenant(), booking()), agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);
    let (tenant, booking) = (tenant(), booking());
    let lane = Lane {
        tenant: &tenant,
        agent: &booking,
        store: &store,
        submitter: &sub,
        endpoints: &endpoints,
        reconciler: None,
        slots: None,
        per_agent: 1,
        batch: 32,
    };
    let pass = lane.pass(&SystemClock, None);
    tokio::pin!(pass);
    // Both are posted while neither answer is recorded yet.
    let both_posted = async {
        while agent.sent_message_ids().len() < 2 {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::select! {
        _ = &mut pass => panic!("the pass ended before its records were written"),
        () = both_posted => {}
        () = tokio::time::sleep(Duration::from_secs(10)) => {
            panic!("the second send waited for the first one's record")
        }
    }
    assert_eq!(
        agent.peak_sends_in_flight(),
        1,
        "one place: one at a time at the agent"
    );
    release.send_replace(true);
    let report = pass.await;
    assert_eq!(report.delivery.sent, 2);
    assert!(matches!(report.end, PassEnd::Idle { .. }), "{report:?}");
}

/// A pass past its time limit (`stop_taking_at`, the submitter's invocation running short)
/// begins no poll of a followed lapse task: it stays due, and the pass ends with more to do; the
/// next pass with time polls it.
#[tokio::test]
async fn polls_stop_at_the_pass_time_limit() {
    use watcher_delivery::{Lane, PassEnd};
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    let mut followed = entry_in_own_context("booking", 0);
    followed.delivery = DeliveryState::Sent;
    followed.task_id = Some("task-lapse-0".into());
    followed.task_state = Some("TASK_STATE_WORKING".into());
    followed.follow_at = Some(followed.next_attempt_at);
    let store = store_with(vec![followed]).await;
    let mut endpoints: HashMap<(Tenant, AgentId), AgentEndpoint> = HashMap::new();
    endpoints.insert((tenant(), booking()), agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);
    let (tenant, booking) = (tenant(), booking());
    let lane = Lane {
        tenant: &tenant,
        agent: &booking,
        store: &store,
        submitter: &sub,
        endpoints: &endpoints,
        reconciler: None,
        slots: None,
        per_agent: 4,
        batch: 32,
    };
    let late = lane
        .pass(&SystemClock, Some(std::time::Instant::now()))
        .await;
    assert_eq!((late.polled, late.end), (0, PassEnd::More));
    assert_eq!(agent.request_count(), 0, "no GetTask begun past the limit");
    let on_time = lane.pass(&SystemClock, None).await;
    assert_eq!(on_time.polled, 1);
    assert_eq!(agent.request_count(), 1, "one GetTask");
}

/// With one place for the agent, the next lapse task (another context) is claimed while the agent
/// still holds the last one's answer: the claim waits in the line of claims, not for the place, so
/// its write overlaps the agent's answer; it is not sent before the place is free.
#[tokio::test]
async fn the_next_claim_is_made_while_the_agent_answers() {
    use watcher_delivery::Lane;
    use watcher_runtime::store::Outbox as _;
    let agent = spawn_capture_agent(Behaviour::accept()).await;
    agent.hold(true);
    let entries = vec![
        entry_in_own_context("booking", 0),
        entry_in_own_context("booking", 1),
    ];
    let second = entries[1].message_id.clone();
    let store = store_with(entries).await;
    let mut endpoints: HashMap<(Tenant, AgentId), AgentEndpoint> = HashMap::new();
    endpoints.insert((tenant(), booking()), agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);
    let (tenant, booking) = (tenant(), booking());
    let lane = Lane {
        tenant: &tenant,
        agent: &booking,
        store: &store,
        submitter: &sub,
        endpoints: &endpoints,
        reconciler: None,
        slots: None,
        per_agent: 1,
        batch: 32,
    };
    let pass = lane.pass(&SystemClock, None);
    tokio::pin!(pass);
    let claimed_while_held = async {
        // The first at the agent (its answer held), then the second claimed meanwhile.
        while agent.sent_message_ids().is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        loop {
            let e = store
                .outbox_get(&tenant, &booking, &second)
                .await
                .unwrap()
                .unwrap();
            if e.lease.is_some() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    tokio::select! {
        _ = &mut pass => panic!("the pass ended while the agent held its answer"),
        () = claimed_while_held => {}
        () = tokio::time::sleep(Duration::from_secs(10)) => {
            panic!("the second lapse task was not claimed while the first was at the agent")
        }
    }
    assert_eq!(
        agent.sent_message_ids().len(),
        1,
        "one at the agent: one place"
    );
    agent.hold(false);
    let report = pass.await;
    assert_eq!(report.delivery.sent, 2);
    assert_eq!(agent.peak_sends_in_flight(), 1);
}
