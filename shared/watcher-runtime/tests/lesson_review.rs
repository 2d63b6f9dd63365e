//! The Learnables authority as a raiser (expectations-v1 §16): a review raised for a lesson's
//! expiry lapses `overdue` at it, with a lapse task no agent receives; a review closed in time
//! is satisfied; raising or closing twice changes nothing.

use std::sync::Arc;

use watcher_core::card::{ExpectationKind, ExpectationsDeclaration};
use watcher_core::engine::AgentProfile;
use watcher_core::engine::Effect;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::directory::{AgentEntry, Directory};
use watcher_runtime::lesson_review::{LessonReview, AUTHORITY_AGENT};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::OutboxEntry;
use watcher_runtime::store::{DeliveryState, LapseLog, LapseQuery};
use watcher_runtime::watcher::Watcher;

fn at(text: &str) -> Instant {
    Instant::parse(text).expect("an instant")
}

fn review() -> LessonReview {
    LessonReview {
        definition: "prealert-triage".into(),
        subject_id: "prealert-triage/customers/northgate@2".into(),
        expires_at: at("2027-03-01T00:00:00Z"),
        taught_by: "dana@warehouse.example".into(),
    }
}

fn watcher() -> (Watcher<MemoryStore>, Arc<MemoryStore>) {
    watcher_with(Directory::new())
}

fn watcher_with(directory: Directory) -> (Watcher<MemoryStore>, Arc<MemoryStore>) {
    let store = Arc::new(MemoryStore::new());
    let w = Watcher::new(Arc::clone(&store), directory, Settings::default());
    (w, store)
}

/// A directory with the agent `id`, its card declaring `kinds` as (kind, subject type).
fn directory_with(id: &str, kinds: &[(&str, &str)]) -> Directory {
    let directory = Directory::new();
    directory.insert(AgentEntry {
        tenant: Tenant::default_tenant(),
        profile: AgentProfile {
            id: AgentId::parse(id).expect("id"),
            declaration: ExpectationsDeclaration {
                keeps_time: false,
                lapse_skill: "review_knowledge".into(),
                kinds: kinds
                    .iter()
                    .map(|(kind, subject_type)| ExpectationKind {
                        kind: (*kind).into(),
                        subject_type: (*subject_type).into(),
                        describes: "someone looks again".into(),
                        basis: "declared".into(),
                        skills: None,
                    })
                    .collect(),
            },
        },
        submits_lapses: true,
        delivery: Delivery::default(),
    });
    directory
}

/// The lapse tasks a review of `owner`'s definition gives at its expiry.
async fn lapse_tasks_of_review(directory: Directory, owner: &str) -> Vec<OutboxEntry> {
    let (w, _) = watcher_with(directory);
    let t = Tenant::default_tenant();
    let owner = AgentId::parse(owner).expect("id");
    w.open_lesson_review(&t, &review(), Some(&owner), at("2026-12-02T10:00:00Z"))
        .await
        .expect("raised");
    let fired = w.fire_due(at("2027-03-01T00:00:01Z")).await.expect("fired");
    fired.iter().flat_map(|(_, a)| a.outbox.clone()).collect()
}

#[tokio::test]
async fn an_owner_that_declares_lesson_review_raises_it_and_gets_the_lapse_task() {
    let entries = lapse_tasks_of_review(
        directory_with("triage", &[("lesson.review", "lesson")]),
        "triage",
    )
    .await;
    assert_eq!(entries.len(), 1, "{entries:?}");
    assert_eq!(entries[0].agent.as_str(), "triage");
    assert_eq!(
        entries[0].delivery,
        DeliveryState::Queued,
        "sent as any other"
    );
    assert_eq!(
        entries[0].request["message"]["referenceTaskIds"][0],
        "lesson:prealert-triage/customers/northgate@2"
    );
}

#[tokio::test]
async fn an_owner_without_the_kind_or_unregistered_leaves_the_review_to_the_authority() {
    for (directory, owner) in [
        (
            directory_with("triage", &[("shipment.manifest", "shipment")]),
            "triage",
        ),
        (
            directory_with("triage", &[("lesson.review", "document")]),
            "triage",
        ),
        (Directory::new(), "nobody"),
    ] {
        let entries = lapse_tasks_of_review(directory, owner).await;
        assert_eq!(entries.len(), 1, "{entries:?}");
        assert_eq!(entries[0].agent.as_str(), AUTHORITY_AGENT);
        assert_eq!(entries[0].delivery, DeliveryState::Unaddressed);
    }
}

#[tokio::test]
async fn a_review_not_closed_by_its_expiry_lapses_overdue_with_a_task_no_agent_receives() {
    let (w, store) = watcher();
    let t = Tenant::default_tenant();
    let raised = w
        .open_lesson_review(&t, &review(), None, at("2026-12-02T10:00:00Z"))
        .await
        .expect("raised");
    assert!(
        raised
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Raised { .. })),
        "{:?}",
        raised.effects
    );
    // Said twice: a duplicate, nothing new.
    let again = w
        .open_lesson_review(&t, &review(), None, at("2026-12-02T10:00:01Z"))
        .await
        .expect("raised again");
    assert!(
        !again
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Raised { .. })),
        "{:?}",
        again.effects
    );
    // Nothing before the expiry.
    assert!(w
        .fire_due(at("2027-02-28T23:59:59Z"))
        .await
        .expect("fired")
        .iter()
        .all(|(_, a)| a.outbox.is_empty()));
    let fired = w.fire_due(at("2027-03-01T00:00:01Z")).await.expect("fired");
    let entries: Vec<_> = fired.iter().flat_map(|(_, a)| a.outbox.clone()).collect();
    assert_eq!(entries.len(), 1, "{fired:?}");
    let entry = &entries[0];
    assert_eq!(entry.agent, AgentId::parse(AUTHORITY_AGENT).expect("id"));
    assert_eq!(entry.delivery, DeliveryState::Unaddressed);
    assert_eq!(
        entry.message_id,
        "lapse:lesson.review:prealert-triage/customers/northgate@2:overdue:2027-03-01T00:00:00Z"
    );
    assert_eq!(entry.lapse.as_str(), "overdue");
    // Listed with the tenant's lapse tasks, as the notification channels read them.
    let page = store
        .lapses_page(
            &t,
            &LapseQuery {
                limit: 10,
                ..LapseQuery::default()
            },
        )
        .await
        .expect("page");
    assert_eq!(page.entries.len(), 1);
    assert_eq!(page.entries[0].1.delivery, DeliveryState::Unaddressed);
    assert_eq!(
        page.entries[0].1.request["message"]["contextId"],
        "prealert-triage"
    );
}

#[tokio::test]
async fn a_review_closed_before_its_expiry_is_satisfied_and_never_lapses() {
    let (w, _) = watcher();
    let t = Tenant::default_tenant();
    w.open_lesson_review(&t, &review(), None, at("2026-12-02T10:00:00Z"))
        .await
        .expect("raised");
    let closed = w
        .close_lesson_review(&t, &review().subject_id, at("2027-01-15T09:00:00Z"))
        .await
        .expect("closed");
    let satisfied: Vec<String> = closed
        .effects
        .iter()
        .filter_map(|e| match e {
            Effect::FactRecorded { satisfied, .. } => {
                Some(satisfied.iter().map(|s| s.id.to_string()))
            }
            _ => None,
        })
        .flatten()
        .collect();
    assert_eq!(
        satisfied,
        ["lesson.review:prealert-triage/customers/northgate@2"]
    );
    let fired = w.fire_due(at("2027-03-02T00:00:00Z")).await.expect("fired");
    assert!(fired.iter().all(|(_, a)| a.outbox.is_empty()), "{fired:?}");
}
