//! Origin-task reconciliation kept in the store (`Reconciler::poll_stored_due`) over a memory
//! store and a capture agent: an origin of an agent that is no longer reconciled is stopped
//! without a `GetTask`, in the agent's slot of the hour; one of a reconciled agent is asked for
//! and rescheduled.

use crate::common;

use std::sync::Arc;
use watcher_runtime::store::Origins as _;

use common::*;
use serde_json::json;
use watcher_delivery::reconcile::{cleanup_slot, slot_of, Reconciler, CLEANUP_SLOTS};
use watcher_delivery::testing::{Behaviour, CaptureAgent, Reply};
use watcher_delivery::RetryPolicy;
use watcher_runtime::directory::{Directory, Lifecycle};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::origins::FollowedOrigin;

async fn setup(agent: &CaptureAgent) -> (Arc<MemoryStore>, Reconciler, Directory) {
    let Reconciling {
        store,
        directory,
        reconciler,
        ..
    } = reconciling(agent, false);
    let origin = FollowedOrigin {
        tenant: tenant(),
        agent: booking(),
        task_id: "task-1".into(),
        since: t0(),
        next_at: t0(),
    };
    assert!(store.origin_follow(&origin).await.unwrap());
    (store, reconciler, directory)
}

#[tokio::test]
async fn an_origin_of_an_agent_no_longer_reconciled_is_stopped_without_a_poll() {
    let agent = CaptureAgent::spawn(Behaviour::accept()).await.unwrap();
    let (store, reconciler, directory) = setup(&agent).await;
    directory.set_lifecycle(
        &tenant(),
        &booking(),
        Lifecycle::from_descriptor(
            json!({ "protocolVersion": "1.0", "lifecycleTrusted": true, "getTask": true,
                    "demotions": [], "cancel": { "canceled": true, "pushed": "once" } }),
            t0(),
        ),
    );
    assert!(!directory.reconciles(&tenant(), &booking()));
    // Read only in its slot of the hour: the first five-minute slot after t0 that is not its
    // own leaves the origin followed, unread; its own stops it.
    let slot = cleanup_slot(&tenant(), &booking());
    let in_slot = |own: bool| {
        (0..CLEANUP_SLOTS)
            .map(|k| plus_secs(t0(), k * 300))
            .find(|at| (slot_of(*at) == slot) == own)
            .unwrap()
    };
    assert_eq!(reconciler.poll_stored_due(in_slot(false)).await, 0);
    assert_eq!(
        store
            .origins_due(&tenant(), &booking(), plus_secs(t0(), 3600), 10)
            .await
            .unwrap()
            .len(),
        1,
        "still followed outside its slot"
    );
    assert_eq!(reconciler.poll_stored_due(in_slot(true)).await, 1);
    assert_eq!(agent.request_count(), 0, "no GetTask for a trusted agent");
    assert!(store
        .origins_due(&tenant(), &booking(), plus_secs(t0(), 86_400 * 30), 10)
        .await
        .unwrap()
        .is_empty());
}

/// The cleanup slots: stable (the same agent, the same slot), within the hour's twelve, spread
/// over them, and each instant's slot its five minutes of the hour.
#[test]
fn cleanup_slots_are_stable_and_spread_over_the_hour() {
    let agents: Vec<watcher_core::ids::AgentId> = (0..120)
        .map(|i| watcher_core::ids::AgentId::parse(format!("agent-{i}")).unwrap())
        .collect();
    let slots: Vec<u64> = agents.iter().map(|a| cleanup_slot(&tenant(), a)).collect();
    assert_eq!(
        slots,
        agents
            .iter()
            .map(|a| cleanup_slot(&tenant(), a))
            .collect::<Vec<_>>()
    );
    let used: std::collections::BTreeSet<u64> = slots.iter().copied().collect();
    assert!(used.iter().all(|s| *s < CLEANUP_SLOTS));
    assert!(
        used.len() >= 10,
        "120 agents use most of the 12 slots: {used:?}"
    );
    let at = |s: &str| watcher_core::time::Instant::parse(s).unwrap();
    assert_eq!(slot_of(at("2026-09-10T12:00:00Z")), 0);
    assert_eq!(slot_of(at("2026-09-10T12:04:59Z")), 0);
    assert_eq!(slot_of(at("2026-09-10T12:05:00Z")), 1);
    assert_eq!(slot_of(at("2026-09-10T12:59:59Z")), 11);
}

#[tokio::test]
async fn an_origin_still_working_is_asked_for_and_rescheduled() {
    let agent = CaptureAgent::spawn(Behaviour::from_fn(|_, req| {
        Reply::rpc_result(
            req,
            json!({ "id": "task-1", "contextId": "ctx-1",
                    "status": { "state": "TASK_STATE_WORKING", "timestamp": "2026-09-10T12:00:00Z" } }),
        )
    }))
    .await
    .unwrap();
    let (store, reconciler, _directory) = setup(&agent).await;
    assert_eq!(reconciler.poll_stored_due(t0()).await, 1);
    assert_eq!(agent.request_count(), 1, "one GetTask");
    assert!(
        store
            .origins_due(&tenant(), &booking(), t0(), 10)
            .await
            .unwrap()
            .is_empty(),
        "not due again at once"
    );
    let next = store
        .origins_due(&tenant(), &booking(), plus_secs(t0(), 3600), 10)
        .await
        .unwrap();
    let first = RetryPolicy::default().poll_first.as_secs();
    assert_eq!(next.len(), 1);
    assert_eq!(next[0].next_at, plus_secs(t0(), first), "poll_first later");
    assert_eq!(next[0].since, t0(), "followed since the start");
}
