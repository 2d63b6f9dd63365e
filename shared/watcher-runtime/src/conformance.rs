//! The store conformance suite: the checks every [`Store`] implementation must pass (style.md,
//! "one core, many adapters, one conformance suite"; apalis `generic_storage_test!`).
//!
//! Each check is a public async function taking a fresh store; [`store_conformance!`](crate::store_conformance) expands to
//! one `#[tokio::test]` per check, so a backend's test file is one line:
//!
//! ```ignore
//! watcher_runtime::store_conformance!(watcher_runtime::memory::MemoryStore::new());
//! ```
//!
//! The expression is evaluated once per test and may give a [`Store`] or a [`Guarded`] store
//! (a store plus something that must outlive it, such as a temporary directory). The caller's
//! crate needs `tokio` (features `macros`, `rt-multi-thread`) as a dev-dependency.
//!
//! The checks are test code: they panic, with a message naming the rule broken, when a store
//! breaks the [`Store`] contract.

use std::collections::BTreeSet;
use std::sync::Arc;

use serde_json::json;
use watcher_core::card::declaration_from_card;
use watcher_core::engine::{
    is_live, AgentProfile, Input, Origin, PushItem, Rejection, ReportedFact, TimerKey, TimerKind,
};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{
    AgentId, ExpectationId, ExpectationRef, FactKey, Source, Subject, TaskId, TaskRef, Tenant,
};
use watcher_core::record::{
    AnchorState, ExpectationRecord, LapseKind, RaiseOrder, RaisedBy, Status,
};
use watcher_core::settings::Settings;
use watcher_core::slice::{FactEntry, Scope, SubjectState, TaskRecord};
use watcher_core::time::{Instant, IsoDuration};

use crate::directory::Directory;
use crate::store::{
    Commit, DeliveryState, LapsePage, LapseQuery, OutboxEntry, PurgeReport, Store, StoreError,
};
use crate::watcher::Watcher;

mod cards;
mod lapse_log;
mod notify;
mod origins;
mod outbox;
mod records;
mod rejections;
mod resolutions;
mod upkeep;
pub use cards::*;
pub use lapse_log::*;
pub use notify::*;
pub use origins::*;
pub use outbox::*;
pub use records::*;
pub use rejections::*;
pub use resolutions::*;
pub use upkeep::*;

/// What a check gets from the expression given to [`store_conformance!`](crate::store_conformance): the store under test
/// and a guard kept alive until the check ends.
pub trait Fixture {
    /// The store under test.
    type Store: Store + 'static;
    /// Dropped after the check (e.g. a temporary directory holding the store's files).
    type Guard;
    /// Splits the fixture into a shared store and its guard.
    fn split(self) -> (Arc<Self::Store>, Self::Guard);
}

impl<S: Store + 'static> Fixture for S {
    type Store = S;
    type Guard = ();
    fn split(self) -> (Arc<S>, ()) {
        (Arc::new(self), ())
    }
}

/// A store with something that must outlive it, such as the `tempfile::TempDir` its database
/// file lives in.
pub struct Guarded<S, G> {
    /// The store under test.
    pub store: S,
    /// Kept alive, then dropped, after the check.
    pub guard: G,
}

impl<S: Store + 'static, G> Fixture for Guarded<S, G> {
    type Store = S;
    type Guard = G;
    fn split(self) -> (Arc<S>, G) {
        (Arc::new(self.store), self.guard)
    }
}

/// Expands to one `#[tokio::test]` (multi-threaded runtime) per conformance check, each on a
/// fresh store made by evaluating `$make` (a [`Store`] or a [`conformance::Guarded`] store).
///
/// Retention: by default the store's [`Upkeep::purge`](crate::store::Upkeep::purge) must delete
/// what the retention rule allows
/// ([`purge_follows_retention`](crate::conformance::purge_follows_retention)). A store whose
/// backend expires items by itself (a TTL written with the same rule) is declared with
/// `retention = ttl`; its `purge` must then delete nothing
/// ([`purge_leaves_retention_to_ttl`](crate::conformance::purge_leaves_retention_to_ttl)), and
/// its TTL is tested on its own:
///
/// ```ignore
/// watcher_runtime::store_conformance!(make_dynamo_store().await, retention = ttl);
/// ```
///
/// Call it at most once per module; wrap calls for several setups in their own modules.
///
/// [`conformance::Guarded`]: crate::conformance::Guarded
#[macro_export]
macro_rules! store_conformance {
    ($make:expr) => {
        $crate::store_conformance!(@all $make; purge_follows_retention);
    };
    ($make:expr, retention = purge) => {
        $crate::store_conformance!(@all $make; purge_follows_retention);
    };
    ($make:expr, retention = ttl) => {
        $crate::store_conformance!(@all $make; purge_leaves_retention_to_ttl);
    };
    (@all $make:expr; $($more:ident),+) => {
        $crate::store_conformance!(@checks $make;
            load_and_commit,
            stale_commit_changes_nothing,
            concurrent_writers_lose_nothing,
            indexes_follow_commits,
            live_counter_is_exact_once_due_timers_fired,
            outbox_rules,
            outbox_identity_includes_agent,
            outbox_by_agent_and_state,
            outbox_following_by_next_poll,
            origins_followed_by_next_poll,
            outbox_claims_are_exclusive,
            claims_and_updates_by_a_read,
            probe_write_writes,
            agent_cards_are_kept,
            an_unchanged_card_is_written_at_most_once_per_interval,
            lifecycle_descriptors_are_kept,
            channel_states_are_kept,
            last_lapse_position_is_the_newest,
            withdrawn_lapse_tasks_are_kept,
            tenants_are_isolated,
            rejections_per_tenant_and_agent,
            sequence_strictly_increases,
            outbox_by_task_id,
            lapse_task_state_never_goes_back,
            lapse_tasks_waiting_for_a_person_are_listed,
            lapses_are_paged,
            lapses_filter_by_every_delivery_state,
            steps_read_what_they_must,
            times_as_given_are_kept,
            lapses_are_resolved_once,
            resolved_lapse_tasks_are_listed,
            outbox_resolve_resolves_once,
            open_lapse_tasks_are_listed,
            $($more),+
        );
    };
    (@checks $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $check() {
                let (store, _guard) = $crate::conformance::Fixture::split($make);
                $crate::conformance::$check(store).await;
            }
        )+
    };
}

// ---------------------------------------------------------------------------------------------
// Test data.

fn instant(text: &str) -> Instant {
    Instant::parse(text).expect("a valid test instant")
}

/// The suite's epoch: 2026-09-10T12:00:00Z.
fn t0() -> Instant {
    instant("2026-09-10T12:00:00Z")
}

/// `minutes` after [`t0`].
fn at(minutes: u32) -> Instant {
    t0().plus(IsoDuration::parse(&format!("PT{minutes}M")).expect("a valid duration"))
}

fn tenant(name: &str) -> Tenant {
    Tenant::parse(name).expect("a valid tenant")
}

fn agent(name: &str) -> AgentId {
    AgentId::parse(name).expect("a valid agent id")
}

fn shipment(id: &str) -> Subject {
    Subject::parse("shipment", id).expect("a valid subject")
}

fn fact_key(k: &str) -> FactKey {
    FactKey::parse(k).expect("a valid fact key")
}

fn eref(agent_name: &str, id: &str) -> ExpectationRef {
    ExpectationRef {
        agent: agent(agent_name),
        id: ExpectationId::parse(id).expect("a valid expectation id"),
    }
}

fn task_ref(agent_name: &str, id: &str) -> TaskRef {
    TaskRef {
        agent: agent(agent_name),
        task_id: TaskId::parse(id).expect("a valid task id"),
    }
}

fn source() -> Source {
    Source::parse("carrier-feed:test").expect("a valid source")
}

fn fact(key: &str, subject: &Subject, received: Instant) -> FactEntry {
    FactEntry {
        fact_key: fact_key(key),
        source: source(),
        observed_at: received,
        claimed_observed_at: received,
        observed_at_given: None,
        mapping: None,
        received_at: received,
        subject: Some(subject.clone()),
        satisfied: Vec::new(),
    }
}

/// An expectation about shipment `subject_id`, parsed from its JSON form.
fn expectation(
    id: &str,
    kind: &str,
    subject_id: &str,
    key: &str,
    due: Instant,
    horizon: Option<Instant>,
) -> Expectation {
    let mut v = json!({
        "expectationId": id,
        "kind": kind,
        "subject": { "type": "shipment", "id": subject_id },
        "expects": format!("{kind} for {subject_id}"),
        "satisfiedBy": { "factKey": key },
        "dueAt": due.to_string(),
        "basis": "observed",
    });
    if let Some(h) = horizon {
        v["horizon"] = json!(h.to_string());
    }
    Expectation::from_json(&v).expect("a valid test expectation")
}

/// A departure expected of shipment `subject_id` one hour after expectation `anchor_id`
/// (`dueAt` `due` until then), satisfied by fact key `key`, parsed from its JSON form.
fn anchored_departure(
    id: &str,
    subject_id: &str,
    expects: &str,
    key: &str,
    due: Instant,
    anchor_id: &str,
) -> Expectation {
    Expectation::from_json(&json!({
        "expectationId": id,
        "kind": "shipment.departure",
        "subject": { "type": "shipment", "id": subject_id },
        "expects": expects,
        "satisfiedBy": { "factKey": key },
        "dueAt": due.to_string(),
        "anchor": { "expectationId": anchor_id, "offset": "PT1H" },
        "basis": "observed",
    }))
    .expect("a valid anchored expectation")
}

/// An open record of `e` of agent `agent_name` in tenant `t`, raised at the suite's epoch
/// (2026-09-10T12:00:00Z) by task `task-1` in raising order `order`, built by hand: for checks
/// (the suite's, a store's own tests) that do not run the engine.
pub fn open_record(
    t: &Tenant,
    agent_name: &str,
    e: Expectation,
    order: RaiseOrder,
) -> ExpectationRecord {
    ExpectationRecord {
        due_at: e.due_at,
        expectation: e,
        agent: agent(agent_name),
        tenant: t.clone(),
        status: Status::Open,
        lineage: 0,
        raised_at: t0(),
        raised_by: RaisedBy {
            task_id: TaskId::parse("task-1").expect("a valid task id"),
            context_id: None,
            lineage: Vec::new(),
            trace: None,
        },
        satisfaction: None,
        lapses: Vec::new(),
        withdrawal: None,
        superseded_by: None,
        order,
        anchor_state: AnchorState::Unanchored,
        horizon_checked: false,
        question_at: None,
        question_timestamp: None,
        question_answered: false,
    }
}

/// A subject holding one open record (with a deadline and a horizon) and one fact.
fn subject_with_record(t: &Tenant, subject_id: &str, exp_id: &str, input: u64) -> SubjectState {
    let s = shipment(subject_id);
    let mut state = SubjectState::new(s.clone());
    let e = expectation(
        exp_id,
        "shipment.manifest",
        subject_id,
        &format!("manifest:{subject_id}"),
        at(60),
        Some(at(180)),
    );
    state
        .records
        .push(open_record(t, "booking", e, RaiseOrder { input, index: 0 }));
    state.facts.push(fact("seen", &s, t0()));
    state
}

/// The stored outbox entry (tenant, agent, messageId), as `Outbox::outbox_get` answers it.
async fn stored_entry<S: Store + ?Sized>(
    store: &S,
    t: &Tenant,
    agent: &AgentId,
    message_id: &str,
) -> Option<OutboxEntry> {
    store
        .outbox_get(t, agent, message_id)
        .await
        .expect("outbox_get")
}

fn outbox_entry(t: &Tenant, message_id: &str, next_attempt: Instant) -> OutboxEntry {
    OutboxEntry::queued(
        t.clone(),
        agent("booking"),
        message_id.to_owned(),
        ExpectationId::parse("exp-1").expect("a valid expectation id"),
        LapseKind::Overdue,
        next_attempt,
        json!({ "message": { "messageId": message_id } }),
    )
}

fn rejection(agent_name: &str, reason: &str, when: Instant) -> Rejection {
    Rejection {
        agent: agent(agent_name),
        expectation_id: Some(format!("exp-{reason}")),
        reason: reason.to_owned(),
        task_id: Some(TaskId::parse("task-1").expect("a valid task id")),
        at: when,
        warning: false,
    }
}

fn scope_of(subjects: &[&Subject]) -> Scope {
    Scope {
        subjects: subjects.iter().map(|s| (*s).clone()).collect(),
        ..Scope::default()
    }
}

async fn load_subject<S: Store + ?Sized>(store: &S, t: &Tenant, s: &Subject) -> SubjectState {
    let slice = store
        .load(t, &scope_of(&[s]), t0())
        .await
        .expect("load succeeds");
    slice
        .subjects
        .get(s)
        .cloned()
        .expect("load returns every subject in scope")
}

fn expect_conflict(result: Result<(), StoreError>, what: &str) {
    match result {
        Err(StoreError::Conflict(_)) => {}
        other => panic!("{what}: expected StoreError::Conflict, got {other:?}"),
    }
}

/// A card declaring the kinds the suite raises.
fn booking_profile() -> AgentProfile {
    let card = json!({
        "name": "Booking agent",
        "skills": [{ "id": "handle_lapse", "name": "Handle lapse" }],
        "capabilities": { "extensions": [{
            "uri": watcher_core::EXPECTATIONS_URI,
            "params": {
                "keepsTime": false,
                "lapseSkill": "handle_lapse",
                "kinds": [
                    { "kind": "shipment.manifest", "subjectType": "shipment", "describes": "the airline manifest for a booked shipment", "basis": "observed" },
                    { "kind": "shipment.departure", "subjectType": "shipment", "describes": "a departure event for the booked flight", "basis": "observed" },
                    { "kind": "shipment.arrival", "subjectType": "shipment", "describes": "an arrival event at the destination airport", "basis": "observed" }
                ]
            }
        }]}
    });
    AgentProfile {
        id: agent("booking"),
        declaration: declaration_from_card(&card).expect("the suite's card is valid"),
    }
}

fn raise(task: &str, expectations: Vec<Expectation>) -> Input {
    Input::Push {
        agent: booking_profile(),
        items: vec![PushItem::Raise {
            origin: Origin {
                task_id: TaskId::parse(task).expect("a valid task id"),
                context_id: None,
            },
            expectations: expectations.into_iter().map(Ok).collect(),
            question_at: None,
            question_timestamp: None,
        }],
    }
}
