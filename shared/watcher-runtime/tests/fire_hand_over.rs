//! A burst is delivered as it is decided: `Watcher::fire_due_handing_over` hands each
//! small group of committed firings to delivery while the rest of the burst is still being
//! fired, so the first lapse task of a burst can leave before the burst's last lapse is
//! committed. Order, not speed: the store is read at each hand-over.

use std::sync::Arc;
use watcher_runtime::store::Outbox as _;

use serde_json::{json, Value};
use watcher_core::card::declaration_from_card;
use watcher_core::engine::{AgentProfile, Effect, Input, Origin, PushItem};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, TaskId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::directory::{AgentEntry, Directory};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::DeliveryState;
use watcher_runtime::watcher::{Applied, Watcher, FIRE_GROUP};

const CARD: &str = include_str!("../../../examples/booking-card.json");
/// Lapses due at one instant: several groups.
const BURST: usize = 5 * FIRE_GROUP + 3;

/// A watcher over a memory store holding `BURST` expectations of the booking agent, each on its
/// own subject, all due at 2026-09-10T20:00:00Z.
async fn burst_due() -> (Watcher<MemoryStore>, Tenant, AgentId) {
    burst_on(&(0..BURST).map(|i| format!("S-{i}")).collect::<Vec<_>>()).await
}

/// As [`burst_due`], expectation `m-{i}` on subject `subjects[i]`, raised in that order.
async fn burst_on(subjects: &[String]) -> (Watcher<MemoryStore>, Tenant, AgentId) {
    let card: Value = serde_json::from_str(CARD).expect("card");
    let profile = AgentProfile {
        id: AgentId::parse("booking").expect("id"),
        declaration: declaration_from_card(&card).expect("valid card"),
    };
    let directory = Directory::new();
    directory.insert(AgentEntry {
        tenant: Tenant::default_tenant(),
        profile: profile.clone(),
        submits_lapses: true,
        delivery: Delivery::default(),
    });
    let watcher = Watcher::new(Arc::new(MemoryStore::new()), directory, Settings::default());
    let tenant = Tenant::default_tenant();
    let expectations = subjects
        .iter()
        .enumerate()
        .map(|(i, subject)| {
            Expectation::from_json(&json!({
                "expectationId": format!("m-{i}"), "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": subject },
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
                task_id: TaskId::parse("task-1".to_owned()).expect("task"),
                context_id: None,
            },
            expectations,
            question_at: None,
            question_timestamp: None,
        }],
    };
    let at = Instant::parse("2026-09-10T19:00:00Z").expect("instant");
    watcher.apply(&tenant, &raise, at).await.expect("raise");
    (watcher, tenant, profile.id)
}

/// The message ids of the lapse tasks queued in the store for `agent`, in order.
async fn queued_ids(
    watcher: &Watcher<MemoryStore>,
    tenant: &Tenant,
    agent: &AgentId,
) -> Vec<String> {
    watcher
        .store
        .outbox_of_agent(tenant, agent, DeliveryState::Queued, None, usize::MAX)
        .await
        .expect("outbox")
        .into_iter()
        .map(|e| e.message_id)
        .collect()
}

/// Lapse tasks queued in the store for `agent` now (committed ones only: the memory store
/// shows a commit once it is done).
fn queued(watcher: &Watcher<MemoryStore>, tenant: &Tenant, agent: &AgentId) -> usize {
    tokio::task::block_in_place(|| {
        tokio::runtime::Handle::current().block_on(queued_ids(watcher, tenant, agent))
    })
    .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_lapse_tasks_are_handed_over_before_the_last_lapse_is_committed() {
    for together in [true, false] {
        first_handed_over_before_last_committed(together).await;
    }
}

async fn first_handed_over_before_last_committed(together: bool) {
    let (watcher, tenant, agent) = burst_due().await;
    let now = Instant::parse("2026-09-10T20:00:01Z").expect("instant");
    // For each hand-over: the lapse tasks it hands over and those committed at that moment.
    let mut handed: Vec<(Vec<String>, usize)> = Vec::new();
    let fired = {
        let mut hand_over = |group: &[(watcher_runtime::store::DueTimer, _)]| {
            let ids = group
                .iter()
                .flat_map(|(_, a): &(_, Applied)| a.outbox.iter().map(|e| e.message_id.clone()))
                .collect();
            handed.push((ids, queued(&watcher, &tenant, &agent)));
        };
        watcher
            .fire_due_handing_over(now, together, &mut hand_over)
            .await
            .expect("fire")
    };
    let lapses = fired
        .iter()
        .flat_map(|(_, a)| &a.effects)
        .filter(|e| matches!(e, Effect::Lapsed(_)))
        .count();
    assert_eq!(lapses, BURST, "every deadline lapses overdue");

    // The first hand-over comes after its group's commits and before the rest of the burst's.
    let (first, committed_then) = &handed[0];
    assert_eq!(first.len(), FIRE_GROUP, "{handed:?}");
    assert_eq!(*committed_then, FIRE_GROUP, "{handed:?}");
    assert!(*committed_then < BURST);
    // Every group likewise, the last one holding the remainder.
    let sizes: Vec<usize> = handed.iter().map(|(ids, _)| ids.len()).collect();
    let mut want = vec![FIRE_GROUP; BURST / FIRE_GROUP];
    want.push(BURST % FIRE_GROUP);
    assert_eq!(sizes, want);
    let mut so_far = 0;
    for (ids, committed) in &handed {
        so_far += ids.len();
        assert_eq!(*committed, so_far, "{handed:?}");
    }
    // Handed over once each, in firing order: the concatenation is what fire_due returns.
    let all: Vec<String> = handed.into_iter().flat_map(|(ids, _)| ids).collect();
    let returned: Vec<String> = fired
        .iter()
        .flat_map(|(_, a)| a.outbox.iter().map(|e| e.message_id.clone()))
        .collect();
    assert_eq!(all, returned);
    // Firing order: the order the expectations were raised (semantics.md "Order at one instant").
    let want: Vec<String> = (0..BURST)
        .map(|i| format!("lapse:m-{i}:overdue:2026-09-10T20:00:00Z"))
        .collect();
    assert_eq!(all, want);
    // Queued in the store in that order too (fired together, the commits are sent in order).
    let queued = queued_ids(&watcher, &tenant, &agent).await;
    assert_eq!(queued, want, "together: {together}");
}

/// A subject's second due timer starts a new group, so a subject's timers never fire together,
/// and firing together queues the lapse tasks exactly as firing one after the other does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subjects_timers_fire_in_separate_groups() {
    // m-0 and m-1 on S-a, m-2 on S-b, m-3 and m-4 on S-c, m-5 on S-a again.
    let subjects: Vec<String> = ["S-a", "S-a", "S-b", "S-c", "S-c", "S-a"]
        .iter()
        .map(ToString::to_string)
        .collect();
    let mut queued_by_mode = Vec::new();
    for together in [true, false] {
        let (watcher, tenant, agent) = burst_on(&subjects).await;
        let now = Instant::parse("2026-09-10T20:00:01Z").expect("instant");
        let mut groups: Vec<Vec<String>> = Vec::new();
        let mut hand_over = |group: &[(watcher_runtime::store::DueTimer, Applied)]| {
            groups.push(
                group
                    .iter()
                    .map(|(t, _)| t.key.expectation.id.as_str().to_owned())
                    .collect(),
            );
        };
        watcher
            .fire_due_handing_over(now, together, &mut hand_over)
            .await
            .expect("fire");
        assert_eq!(
            groups,
            vec![vec!["m-0"], vec!["m-1", "m-2", "m-3"], vec!["m-4", "m-5"]],
            "together: {together}"
        );
        let queued = queued_ids(&watcher, &tenant, &agent).await;
        assert_eq!(queued.len(), subjects.len(), "every deadline lapses once");
        queued_by_mode.push(queued);
    }
    assert_eq!(queued_by_mode[0], queued_by_mode[1]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nothing_due_hands_nothing_over() {
    let (watcher, _, _) = burst_due().await;
    let before = Instant::parse("2026-09-10T19:59:59Z").expect("instant");
    for together in [true, false] {
        let mut calls = 0;
        let fired = watcher
            .fire_due_handing_over(before, together, &mut |_| calls += 1)
            .await
            .expect("fire");
        assert!(fired.is_empty());
        assert_eq!(calls, 0);
    }
}
