//! Origin-task reconciliation kept in the store (`Reconciler::poll_stored_due`) over a memory
//! store and a capture agent: an origin of an agent that is no longer reconciled is stopped
//! without a `GetTask`; one of a reconciled agent is asked for and rescheduled.

use crate::common;

use std::sync::Arc;
use watcher_runtime::store::Origins as _;

use common::*;
use serde_json::json;
use tokio::sync::Notify;
use watcher_core::card::declaration_from_card;
use watcher_core::engine::AgentProfile;
use watcher_core::lapse::Delivery;
use watcher_core::settings::Settings;
use watcher_delivery::reconcile::Reconciler;
use watcher_delivery::testing::{Behaviour, CaptureAgent, Reply};
use watcher_delivery::RetryPolicy;
use watcher_runtime::clock::FakeClock;
use watcher_runtime::directory::{AgentEntry, Directory, Lifecycle};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::origins::FollowedOrigin;
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;

fn entry() -> AgentEntry {
    let card = json!({
        "name": "booking",
        "skills": [{ "id": "handle_lapse", "name": "Handle lapse" }],
        "capabilities": { "extensions": [{
            "uri": watcher_core::EXPECTATIONS_URI,
            "params": { "keepsTime": false, "lapseSkill": "handle_lapse", "kinds": [
                { "kind": "shipment.manifest", "subjectType": "shipment",
                  "describes": "the manifest", "basis": "observed" }] }
        }]}
    });
    AgentEntry {
        tenant: tenant(),
        profile: AgentProfile {
            id: booking(),
            declaration: declaration_from_card(&card).unwrap(),
        },
        submits_lapses: true,
        delivery: Delivery::default(),
    }
}

async fn setup(agent: &CaptureAgent) -> (Arc<MemoryStore>, Reconciler, Directory) {
    let store = Arc::new(MemoryStore::new());
    let directory = Directory::new();
    directory.insert(entry());
    directory.set_origins_in_store(true);
    let dyn_store: Arc<dyn Store> = store.clone();
    let watcher: Arc<Watcher<dyn Store>> = Arc::new(Watcher::new(
        dyn_store,
        directory.clone(),
        Settings::default(),
    ));
    let reconciler = Reconciler::new(
        watcher,
        client(),
        Arc::new(endpoints(agent.endpoint(None))),
        RetryPolicy::default(),
        Arc::new(FakeClock::new(t0())),
        Arc::new(Notify::new()),
    );
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
    assert_eq!(reconciler.poll_stored_due(t0()).await, 1);
    assert_eq!(agent.request_count(), 0, "no GetTask for a trusted agent");
    assert!(store
        .origins_due(&tenant(), &booking(), plus_secs(t0(), 86_400 * 30), 10)
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn an_origin_still_working_is_asked_for_and_rescheduled() {
    let agent = CaptureAgent::spawn(Behaviour::from_fn(|_, req| {
        let body = json!({ "jsonrpc": "2.0", "id": req.rpc_id(), "result": {
            "id": "task-1", "contextId": "ctx-1",
            "status": { "state": "TASK_STATE_WORKING", "timestamp": "2026-09-10T12:00:00Z" } } });
        Reply::Http {
            status: 200,
            headers: vec![("content-type".into(), "application/json".into())],
            body: body.to_string(),
        }
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
