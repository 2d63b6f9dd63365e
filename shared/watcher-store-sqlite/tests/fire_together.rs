//! `serve`'s timer loop fires a burst in groups fired together
//! (`Watcher::fire_due_handing_over` with `together`), relying on this store to hand out
//! raising-order numbers and take commits in the order they are asked for. Fired together or one
//! after the other, a burst on a SQLite file lapses the same way and queues its lapse tasks in
//! the order the expectations were raised (semantics.md "Order at one instant").

use std::sync::Arc;
use watcher_runtime::store::{Outbox as _, TimerIndex as _};

use serde_json::{json, Value};
use watcher_core::card::declaration_from_card;
use watcher_core::engine::{AgentProfile, Effect, Input, Origin, PushItem};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, TaskId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::directory::{AgentEntry, Directory};
use watcher_runtime::store::DeliveryState;
use watcher_runtime::watcher::{Watcher, FIRE_GROUP};
use watcher_store_sqlite::SqliteStore;

const CARD: &str = include_str!("../../../examples/booking-card.json");
/// Several groups and a remainder.
const BURST: usize = 6 * FIRE_GROUP + 5;

/// The lapse tasks queued after firing a burst of `BURST` deadlines (one per subject, all due
/// at one instant) on a fresh file store, in queue order.
async fn fire_burst(together: bool) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("w.db")).unwrap());
    let card: Value = serde_json::from_str(CARD).unwrap();
    let profile = AgentProfile {
        id: AgentId::parse("booking").unwrap(),
        declaration: declaration_from_card(&card).unwrap(),
    };
    let directory = Directory::new();
    directory.insert(AgentEntry {
        tenant: Tenant::default_tenant(),
        profile: profile.clone(),
        submits_lapses: true,
        delivery: Delivery::default(),
    });
    let watcher = Watcher::new(store.clone(), directory, Settings::default());
    let tenant = Tenant::default_tenant();
    let expectations = (0..BURST)
        .map(|i| {
            Expectation::from_json(&json!({
                "expectationId": format!("m-{i}"), "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": format!("S-{i}") },
                "expects": "the airline manifest",
                "satisfiedBy": { "factKey": format!("manifest:S-{i}") },
                "dueAt": "2026-09-10T20:00:00Z", "basis": "observed"
            }))
        })
        .collect();
    let raise = Input::Push {
        agent: profile.clone(),
        items: vec![PushItem::Raise {
            origin: Origin {
                task_id: TaskId::parse("task-1".to_owned()).unwrap(),
                context_id: None,
            },
            expectations,
            question_at: None,
            question_timestamp: None,
        }],
    };
    watcher
        .apply(
            &tenant,
            &raise,
            Instant::parse("2026-09-10T19:00:00Z").unwrap(),
        )
        .await
        .unwrap();
    let mut groups = 0;
    let fired = watcher
        .fire_due_handing_over(
            Instant::parse("2026-09-10T20:00:01Z").unwrap(),
            together,
            &mut |_| groups += 1,
        )
        .await
        .unwrap();
    assert_eq!(groups, BURST.div_ceil(FIRE_GROUP), "together: {together}");
    let lapses = fired
        .iter()
        .flat_map(|(_, a)| &a.effects)
        .filter(|e| matches!(e, Effect::Lapsed(_)))
        .count();
    assert_eq!(lapses, BURST, "together: {together}");
    assert!(
        store
            .due_timers(Instant::parse("2026-09-10T20:00:01Z").unwrap(), 10)
            .await
            .unwrap()
            .is_empty(),
        "nothing left due"
    );
    store
        .outbox_of_agent(
            &tenant,
            &profile.id,
            DeliveryState::Queued,
            None,
            usize::MAX,
        )
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.message_id)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_fired_together_queues_its_lapse_tasks_in_raising_order() {
    let want: Vec<String> = (0..BURST)
        .map(|i| format!("lapse:m-{i}:overdue:2026-09-10T20:00:00Z"))
        .collect();
    assert_eq!(fire_burst(true).await, want);
    assert_eq!(fire_burst(false).await, want);
}
