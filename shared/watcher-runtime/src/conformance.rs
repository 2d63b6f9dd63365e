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
/// Retention: by default the store's [`Store::purge`](crate::store::Store::purge) must delete
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
    (@all $make:expr; $retention:ident) => {
        $crate::store_conformance!(@checks $make;
            load_and_commit,
            stale_commit_changes_nothing,
            concurrent_writers_lose_nothing,
            indexes_follow_commits,
            outbox_rules,
            outbox_identity_includes_agent,
            outbox_by_agent_and_state,
            outbox_following_by_next_poll,
            origins_followed_by_next_poll,
            outbox_claims_are_exclusive,
            probe_write_writes,
            agent_cards_are_kept,
            lifecycle_descriptors_are_kept,
            withdrawn_lapse_tasks_are_kept,
            tenants_are_isolated,
            rejections_per_tenant_and_agent,
            sequence_strictly_increases,
            outbox_by_task_id,
            lapse_task_state_never_goes_back,
            lapses_are_paged,
            steps_read_what_they_must,
            times_as_given_are_kept,
            $retention,
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

/// An open record of `e`, built by hand (for checks that do not run the engine).
fn record(t: &Tenant, agent_name: &str, e: Expectation, order: RaiseOrder) -> ExpectationRecord {
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
        .push(record(t, "booking", e, RaiseOrder { input, index: 0 }));
    state.facts.push(fact("seen", &s, t0()));
    state
}

fn outbox_entry(t: &Tenant, message_id: &str, next_attempt: Instant) -> OutboxEntry {
    OutboxEntry {
        tenant: t.clone(),
        agent: agent("booking"),
        message_id: message_id.to_string(),
        expectation_id: ExpectationId::parse("exp-1").expect("a valid expectation id"),
        lapse: LapseKind::Overdue,
        lapsed_at: next_attempt,
        request: json!({ "message": { "messageId": message_id } }),
        delivery: DeliveryState::Queued,
        attempts: 0,
        next_attempt_at: next_attempt,
        task_id: None,
        task_state: None,
        answered_with_message: false,
        last_error: None,
        retrying_since: None,
        attempt_started_at: None,
        follow_at: None,
        follow_since: None,
        lease: None,
    }
}

fn rejection(agent_name: &str, reason: &str, when: Instant) -> Rejection {
    Rejection {
        agent: agent(agent_name),
        expectation_id: Some(format!("exp-{reason}")),
        reason: reason.to_string(),
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

// ---------------------------------------------------------------------------------------------
// The checks.

/// Timestamps as given survive the store (semantics.md "Time", revision 4): a question answered
/// by a status stamped ahead of its receipt in `+05:30`, and a fact claiming a time ahead in
/// `-03:00`, read back with their effective values and the texts exactly as given, on the record
/// (`claimedObservedAt`), the fact and the task's status.
pub async fn times_as_given_are_kept<S: Store + 'static>(store: Arc<S>) {
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    let a = tenant("given-times");
    let origin = Origin {
        task_id: TaskId::parse("task-q").expect("a valid task id"),
        context_id: None,
    };
    let question = expectation(
        "q-1",
        "shipment.manifest",
        "PA-Q",
        "answered:task-q",
        at(60),
        None,
    );
    let status = |state: &str, given: Option<&str>| PushItem::Status {
        origin: origin.clone(),
        state: state.into(),
        timestamp: None,
        given_timestamp: given.map(str::to_string),
    };
    let ask = Input::Push {
        agent: booking_profile(),
        items: vec![
            PushItem::Raise {
                origin: origin.clone(),
                expectations: vec![Ok(question)],
                question_at: Some(t0()),
                question_timestamp: Some(t0()),
            },
            status("TASK_STATE_INPUT_REQUIRED", Some("2026-09-10T12:00:00Z")),
        ],
    };
    watcher.apply(&a, &ask, t0()).await.expect("ask");
    // 18:00Z, received at 12:10Z: counts as 12:10Z.
    let ahead = "2026-09-10T23:30:00+05:30";
    let moved_on = Input::Push {
        agent: booking_profile(),
        items: vec![status("TASK_STATE_WORKING", Some(ahead))],
    };
    watcher.apply(&a, &moved_on, at(10)).await.expect("move on");
    let claim = "2026-09-10T12:30:00-03:00";
    let fact_ahead = Input::Facts(vec![ReportedFact {
        fact_key: fact_key("k-ahead"),
        observed_at: instant(claim),
        observed_at_given: Some(claim.to_string()),
        mapping: None,
        subject: Some(shipment("PA-Q")),
        source: source(),
    }]);
    watcher
        .apply(&a, &fact_ahead, at(20))
        .await
        .expect("a fact");

    let task = task_ref("booking", "task-q");
    let scope = Scope {
        subjects: [shipment("PA-Q")].into_iter().collect(),
        tasks: [task.clone()].into_iter().collect(),
        ..Scope::default()
    };
    let slice = store.load(&a, &scope, at(30)).await.expect("load");
    let state = &slice.subjects[&shipment("PA-Q")];
    let sat = state.records[0]
        .satisfaction
        .as_ref()
        .expect("the question was answered");
    assert_eq!(sat.observed_at, at(10), "observed at the status's receipt");
    assert_eq!(
        sat.claimed_observed_at.as_deref(),
        Some(ahead),
        "kept as given"
    );
    let answer = state
        .facts
        .iter()
        .find(|f| f.fact_key == fact_key("answered:task-q"))
        .expect("the answer fact is on the subject");
    assert_eq!(answer.observed_at_given.as_deref(), Some(ahead));
    let reported = state
        .facts
        .iter()
        .find(|f| f.fact_key == fact_key("k-ahead"))
        .expect("the reported fact is on the subject");
    assert_eq!(reported.observed_at, at(20));
    assert_eq!(reported.observed_at_given.as_deref(), Some(claim));
    let statuses = &slice.tasks[&task]
        .as_ref()
        .expect("the task is recorded")
        .statuses;
    let working = statuses.last().expect("two statuses");
    assert_eq!(working.timestamp, Some(at(10)), "bounded by its receipt");
    assert_eq!(working.given_timestamp.as_deref(), Some(ahead));
    assert_eq!(statuses[0].given_timestamp, None, "stamped exactly");
}

/// A subject never stored loads empty at version 0 (and `subject` answers `None`); after a
/// commit it loads at version 1 with the same records and facts, and a task comes back at
/// version 1; committing at the loaded version again moves it to 2.
pub async fn load_and_commit<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let s = shipment("PA-1");
    let task = task_ref("booking", "task-1");

    let mut scope = scope_of(&[&s]);
    scope.tasks.insert(task.clone());
    let slice = store.load(&t, &scope, t0()).await.expect("load succeeds");
    assert_eq!(slice.tenant, t, "a slice carries its tenant");
    assert_eq!(
        slice.subjects.get(&s),
        Some(&SubjectState::new(s.clone())),
        "an unknown subject loads empty at version 0"
    );
    assert_eq!(
        slice.tasks.get(&task),
        Some(&None),
        "an unknown task loads as None"
    );
    assert!(
        store.subject(&t, &s).await.expect("subject").is_none(),
        "subject() answers None for a subject never stored"
    );

    let state = subject_with_record(&t, "PA-1", "exp-1", 1);
    let mut task_rec = TaskRecord::new(task.clone());
    task_rec.subjects.insert(s.clone());
    store
        .commit(
            &t,
            Commit {
                subjects: vec![state.clone()],
                tasks: vec![task_rec.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("a commit at version 0 of a new subject succeeds");

    let slice = store.load(&t, &scope, t0()).await.expect("load succeeds");
    let loaded = slice.subjects.get(&s).expect("subject in scope").clone();
    assert_eq!(loaded.version, 1, "a first commit stores version 1");
    assert_eq!(
        loaded.records, state.records,
        "records come back as committed"
    );
    assert_eq!(loaded.facts, state.facts, "facts come back as committed");
    assert_eq!(
        loaded,
        SubjectState {
            version: 1,
            ..state.clone()
        }
    );
    let loaded_task = slice
        .tasks
        .get(&task)
        .cloned()
        .flatten()
        .expect("a committed task loads");
    assert_eq!(
        loaded_task,
        TaskRecord {
            version: 1,
            ..task_rec
        }
    );
    assert_eq!(
        store.subject(&t, &s).await.expect("subject"),
        Some(loaded.clone()),
        "subject() answers what load answers"
    );

    let mut next = loaded;
    next.facts.push(fact("second", &s, at(1)));
    store
        .commit(
            &t,
            Commit {
                subjects: vec![next.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("a commit at the loaded version succeeds");
    let again = load_subject(&*store, &t, &s).await;
    assert_eq!(again.version, 2, "each commit bumps the version by one");
    assert_eq!(again.facts, next.facts);
}

/// A commit with a stale subject or task version fails with [`StoreError::Conflict`] and writes
/// nothing: not the other subjects and tasks of the commit, not its outbox entries, not its
/// rejections, not their index rows.
pub async fn stale_commit_changes_nothing<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let x = shipment("PA-X");
    let y = shipment("PA-Y");
    let z = shipment("PA-Z");
    let task = task_ref("booking", "task-1");
    let original = subject_with_record(&t, "PA-X", "exp-x", 1);
    store
        .commit(
            &t,
            Commit {
                subjects: vec![original.clone()],
                tasks: vec![TaskRecord::new(task.clone())],
                ..Commit::default()
            },
        )
        .await
        .expect("first commit");
    let stored_x = store
        .subject(&t, &x)
        .await
        .expect("subject")
        .expect("X stored");
    let timers_before = store.due_timers(at(100_000), 1000).await.expect("timers");

    // A fresh subject (valid) first, the stale one last: nothing of the first may stay.
    let fresh_y = subject_with_record(&t, "PA-Y", "exp-y", 2);
    let stale_x = original.clone(); // still version 0
    let result = store
        .commit(
            &t,
            Commit {
                subjects: vec![fresh_y.clone(), stale_x],
                tasks: vec![],
                outbox: vec![outbox_entry(&t, "lapse:stale-1", t0())],
                rejections: vec![rejection("booking", "stale-1", t0())],
            },
        )
        .await;
    expect_conflict(result, "a subject committed at a stale version");

    // A stale task with a fresh subject.
    let fresh_z = subject_with_record(&t, "PA-Z", "exp-z", 3);
    let result = store
        .commit(
            &t,
            Commit {
                subjects: vec![fresh_z],
                tasks: vec![TaskRecord::new(task.clone())],
                outbox: vec![outbox_entry(&t, "lapse:stale-2", t0())],
                rejections: vec![rejection("booking", "stale-2", t0())],
            },
        )
        .await;
    expect_conflict(result, "a task committed at a stale version");

    // A version ahead of the stored one, and a version for a subject never stored.
    let mut ahead = stored_x.clone();
    ahead.version = 5;
    expect_conflict(
        store
            .commit(
                &t,
                Commit {
                    subjects: vec![ahead],
                    ..Commit::default()
                },
            )
            .await,
        "a version ahead of the stored one",
    );
    let mut phantom = SubjectState::new(shipment("PA-NEVER"));
    phantom.version = 1;
    expect_conflict(
        store
            .commit(
                &t,
                Commit {
                    subjects: vec![phantom],
                    ..Commit::default()
                },
            )
            .await,
        "a non-zero version for a subject never stored",
    );

    assert_eq!(
        store.subject(&t, &x).await.expect("subject"),
        Some(stored_x.clone()),
        "a failed commit leaves the stale subject as stored"
    );
    for (s, what) in [(&y, "Y"), (&z, "Z"), (&shipment("PA-NEVER"), "PA-NEVER")] {
        assert!(
            store.subject(&t, s).await.expect("subject").is_none(),
            "a failed commit must not store subject {what}"
        );
    }
    let mut scope = scope_of(&[&y]);
    scope.tasks.insert(task.clone());
    scope.fact_keys.insert(fact_key("manifest:PA-Y"));
    scope.fact_keys.insert(fact_key("manifest:PA-Z"));
    scope.expectations.insert(eref("booking", "exp-y"));
    scope.expectations.insert(eref("booking", "exp-z"));
    let slice = store.load(&t, &scope, t0()).await.expect("load");
    assert_eq!(slice.subjects[&y].version, 0);
    assert_eq!(
        slice.tasks[&task].as_ref().map(|r| r.version),
        Some(1),
        "a failed commit leaves the task at its stored version"
    );
    for k in ["manifest:PA-Y", "manifest:PA-Z"] {
        assert!(
            slice.fact_index[&fact_key(k)].is_empty(),
            "a failed commit must not add fact-key index rows ({k})"
        );
    }
    for id in ["exp-y", "exp-z"] {
        assert_eq!(
            slice.id_index[&eref("booking", id)],
            None,
            "a failed commit must not add id index rows ({id})"
        );
    }
    assert_eq!(
        store.due_timers(at(100_000), 1000).await.expect("timers"),
        timers_before,
        "a failed commit must not add timers"
    );
    for m in ["lapse:stale-1", "lapse:stale-2"] {
        assert!(
            store
                .outbox_get(&t, &agent("booking"), m)
                .await
                .expect("outbox_get")
                .is_none(),
            "a failed commit must not write its outbox entry {m}"
        );
    }
    assert!(store.lapses(&t).await.expect("lapses").is_empty());
    assert!(
        store
            .rejections(&t, &agent("booking"))
            .await
            .expect("rejections")
            .is_empty(),
        "a failed commit must not keep its rejections"
    );

    // The stored version still commits.
    let mut next = stored_x;
    next.facts.push(fact("later", &x, at(5)));
    store
        .commit(
            &t,
            Commit {
                subjects: vec![next],
                ..Commit::default()
            },
        )
        .await
        .expect("a commit at the stored version succeeds after conflicts");
    assert_eq!(load_subject(&*store, &t, &x).await.version, 2);
}

/// Eight writers on one subject, each appending five facts with load / commit / retry on
/// conflict, lose no update.
pub async fn concurrent_writers_lose_nothing<S: Store + 'static>(store: Arc<S>) {
    concurrent_writers_across(vec![store]).await;
}

/// As [`concurrent_writers_lose_nothing`], with writers spread over several handles onto one
/// backing store (e.g. two connections to one database file).
///
/// # Panics
/// When `handles` is empty, a writer gives up after 10 000 conflicts, or an update is lost.
pub async fn concurrent_writers_across<S: Store + 'static>(handles: Vec<Arc<S>>) {
    const WRITERS: usize = 8;
    const APPENDS: usize = 5;
    assert!(!handles.is_empty(), "at least one store handle");
    let t = tenant("tenant-a");
    let s = shipment("PA-HOT");
    let mut joins = Vec::new();
    for w in 0..WRITERS {
        let store = Arc::clone(&handles[w % handles.len()]);
        let (t, s) = (t.clone(), s.clone());
        joins.push(tokio::spawn(async move {
            let mut conflicts = 0usize;
            for n in 0..APPENDS {
                loop {
                    let mut state = load_subject(&*store, &t, &s).await;
                    state.facts.push(fact(&format!("w{w}-n{n}"), &s, at(1)));
                    // Let other writers load the same version before this one commits.
                    tokio::task::yield_now().await;
                    match store
                        .commit(
                            &t,
                            Commit {
                                subjects: vec![state],
                                ..Commit::default()
                            },
                        )
                        .await
                    {
                        Ok(()) => break,
                        Err(StoreError::Conflict(_)) => {
                            conflicts += 1;
                            assert!(conflicts < 10_000, "writer {w} starved");
                            tokio::task::yield_now().await;
                        }
                        Err(e) => panic!("writer {w}: commit failed: {e}"),
                    }
                }
            }
            conflicts
        }));
    }
    for j in joins {
        j.await.expect("writer task");
    }
    let state = load_subject(&*handles[0], &t, &s).await;
    let keys: BTreeSet<String> = state.facts.iter().map(|f| f.fact_key.to_string()).collect();
    assert_eq!(
        state.facts.len(),
        WRITERS * APPENDS,
        "every committed append is kept exactly once"
    );
    for w in 0..WRITERS {
        for n in 0..APPENDS {
            assert!(keys.contains(&format!("w{w}-n{n}")), "lost w{w}-n{n}");
        }
    }
    assert_eq!(
        state.version,
        (WRITERS * APPENDS) as u64,
        "one version per successful commit"
    );
}

/// The indexes follow what is committed (raised through the real [`Watcher`]): fact key →
/// subjects, expectation → subject (`None` when unknown), due timers in firing order (instant,
/// raising order, deadline before horizon) and dropped once a record is satisfied, the earliest
/// timer, live counts per agent, and every record in raising order.
pub async fn indexes_follow_commits<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    let (pa1, pa2) = (shipment("PA-1"), shipment("PA-2"));

    // PA-1, one push: e1 (deadline 60, horizon 180), e2 (deadline 60, horizon 120), e4
    // (deadline and horizon both at 120), e5 (anchored on e1: no timer, live indefinitely,
    // until e1's satisfaction fixes its due time). At 120, e2's horizon comes before e4's
    // deadline: raising order first, kind only within one record.
    watcher
        .apply(
            &t,
            &raise(
                "task-1",
                vec![
                    expectation(
                        "e1",
                        "shipment.manifest",
                        "PA-1",
                        "k-manifest",
                        at(60),
                        Some(at(180)),
                    ),
                    expectation(
                        "e2",
                        "shipment.departure",
                        "PA-1",
                        "k-dep",
                        at(60),
                        Some(at(120)),
                    ),
                    expectation(
                        "e4",
                        "shipment.arrival",
                        "PA-1",
                        "k-arr",
                        at(120),
                        Some(at(120)),
                    ),
                    Expectation::from_json(&json!({
                        "expectationId": "e5",
                        "kind": "shipment.departure",
                        "subject": { "type": "shipment", "id": "PA-1" },
                        "expects": "departure one hour after the manifest",
                        "satisfiedBy": { "factKey": "k-dep-5" },
                        "dueAt": at(90).to_string(),
                        "anchor": { "expectationId": "e1", "offset": "PT1H" },
                        "basis": "observed",
                    }))
                    .expect("a valid anchored expectation"),
                ],
            ),
            t0(),
        )
        .await
        .expect("raise on PA-1");
    // PA-2, a later push: e3 (deadline 30, horizon 60), sharing e2's fact key.
    watcher
        .apply(
            &t,
            &raise(
                "task-2",
                vec![expectation(
                    "e3",
                    "shipment.departure",
                    "PA-2",
                    "k-dep",
                    at(30),
                    Some(at(60)),
                )],
            ),
            t0(),
        )
        .await
        .expect("raise on PA-2");

    let stored1 = store
        .subject(&t, &pa1)
        .await
        .expect("subject")
        .expect("PA-1");
    let stored2 = store
        .subject(&t, &pa2)
        .await
        .expect("subject")
        .expect("PA-2");
    assert_eq!(
        stored1.records.len(),
        4,
        "the engine recorded e1, e2, e4, e5"
    );
    assert_eq!(stored2.records.len(), 1, "the engine recorded e3");
    let order = |state: &SubjectState, id: &str| {
        state
            .records
            .iter()
            .find(|r| r.id().as_str() == id)
            .map(|r| r.order)
            .expect("record present")
    };
    assert!(
        order(&stored1, "e1") < order(&stored2, "e3"),
        "a later input raises later"
    );

    // Fact-key and id indexes.
    let mut scope = Scope::default();
    for k in ["k-manifest", "k-dep", "k-arr", "k-unknown"] {
        scope.fact_keys.insert(fact_key(k));
    }
    for id in ["e1", "e2", "e3", "e4", "e5", "e-unknown"] {
        scope.expectations.insert(eref("booking", id));
    }
    scope.expectations.insert(eref("other-agent", "e1"));
    scope.tasks.insert(task_ref("booking", "task-1"));
    let slice = store.load(&t, &scope, t0()).await.expect("load");
    let set = |subjects: &[&Subject]| -> BTreeSet<Subject> {
        subjects.iter().map(|s| (*s).clone()).collect()
    };
    assert_eq!(slice.fact_index[&fact_key("k-manifest")], set(&[&pa1]));
    assert_eq!(
        slice.fact_index[&fact_key("k-dep")],
        set(&[&pa1, &pa2]),
        "a fact key used on two subjects indexes both"
    );
    assert_eq!(slice.fact_index[&fact_key("k-arr")], set(&[&pa1]));
    assert_eq!(
        slice.fact_index[&fact_key("k-unknown")],
        BTreeSet::new(),
        "an unknown fact key is loaded as an empty set"
    );
    for (id, s) in [
        ("e1", &pa1),
        ("e2", &pa1),
        ("e3", &pa2),
        ("e4", &pa1),
        ("e5", &pa1),
    ] {
        assert_eq!(
            slice.id_index[&eref("booking", id)],
            Some(s.clone()),
            "id index for {id}"
        );
    }
    assert_eq!(slice.id_index[&eref("booking", "e-unknown")], None);
    assert_eq!(
        slice.id_index[&eref("other-agent", "e1")],
        None,
        "expectation ids are scoped to their agent"
    );
    let task1 = slice.tasks[&task_ref("booking", "task-1")]
        .as_ref()
        .expect("the raising task is stored");
    assert_eq!(task1.subjects, set(&[&pa1]));

    // Timers, in firing order.
    let key = |s: &Subject, id: &str, kind: TimerKind| TimerKey {
        subject: s.clone(),
        expectation: eref("booking", id),
        kind,
    };
    use TimerKind::{Deadline, Horizon};
    let all_timers = vec![
        (at(30), key(&pa2, "e3", Deadline)),
        (at(60), key(&pa1, "e1", Deadline)),
        (at(60), key(&pa1, "e2", Deadline)),
        (at(60), key(&pa2, "e3", Horizon)),
        (at(120), key(&pa1, "e2", Horizon)),
        (at(120), key(&pa1, "e4", Deadline)),
        (at(120), key(&pa1, "e4", Horizon)),
        (at(180), key(&pa1, "e1", Horizon)),
    ];
    let due = |list: Vec<crate::store::DueTimer>| -> Vec<(Instant, TimerKey)> {
        for d in &list {
            assert_eq!(d.tenant, t, "due timers carry their tenant");
        }
        list.into_iter().map(|d| (d.at, d.key)).collect()
    };
    assert_eq!(
        due(store.due_timers(at(1000), 100).await.expect("timers")),
        all_timers,
        "timers come earliest first, then raising order, deadline before horizon"
    );
    assert_eq!(
        due(store.due_timers(at(60), 100).await.expect("timers")),
        all_timers[..4].to_vec(),
        "timers due at `until` are included, later ones are not"
    );
    assert_eq!(
        due(store.due_timers(at(1000), 3).await.expect("timers")),
        all_timers[..3].to_vec(),
        "at most `limit` timers"
    );
    assert!(
        store
            .due_timers(at(29), 100)
            .await
            .expect("timers")
            .is_empty(),
        "nothing is due before the earliest timer"
    );
    let next = store.next_timer().await.expect("next_timer").expect("some");
    assert_eq!((next.at, next.key), all_timers[0].clone());
    let all = store.due_timers(at(1000), 100).await.expect("timers");
    assert!(
        all.windows(2)
            .all(|w| w[0].order <= w[1].order || w[0].at < w[1].at),
        "raising order breaks ties at one instant"
    );

    // Live counts.
    let live_at = |now: Instant| {
        let store = Arc::clone(&store);
        let t = t.clone();
        async move {
            let mut scope = Scope::default();
            scope.agents.insert(agent("booking"));
            scope.agents.insert(agent("nobody"));
            let slice = store.load(&t, &scope, now).await.expect("load");
            assert_eq!(slice.agent_live[&agent("nobody")], 0);
            let expected = store
                .all_records()
                .await
                .expect("all_records")
                .iter()
                .filter(|r| r.tenant == t && r.agent == agent("booking") && is_live(r, now))
                .count() as u64;
            let got = slice.agent_live[&agent("booking")];
            assert_eq!(got, expected, "agent_live at {now} counts the live records");
            got
        }
    };
    assert_eq!(live_at(t0()).await, 5);
    assert_eq!(
        live_at(at(90)).await,
        4,
        "e1 (horizon 180), e2 and e4 (120), e5"
    );
    assert_eq!(live_at(at(150)).await, 2, "e1 (horizon 180) and e5");
    assert_eq!(
        live_at(at(180)).await,
        2,
        "a horizon at exactly now has not passed (semantics.md \"States\"): e1 and e5"
    );
    assert_eq!(live_at(at(181)).await, 1, "e5 waits on its anchor");
    // With a ceiling (`Scope::live_enough`), a store may answer a count above the live one up
    // to the ceiling, never below the live count and never above the ceiling unless exact.
    for (now, live) in [(at(90), 4u64), (at(150), 2), (at(181), 1)] {
        for enough in [0u64, 2, 3, 5, 100] {
            let mut scope = Scope::default();
            scope.agents.insert(agent("booking"));
            scope.live_enough.insert(agent("booking"), enough);
            let slice = store.load(&t, &scope, now).await.expect("load");
            let got = slice.agent_live[&agent("booking")];
            assert!(
                got == live || (got > live && got <= enough),
                "agent_live at {now} with the ceiling {enough}: {got}, the live count {live}"
            );
        }
    }

    // Every record, in raising order.
    let ids: Vec<String> = store
        .all_records()
        .await
        .expect("all_records")
        .iter()
        .map(|r| r.id().to_string())
        .collect();
    assert_eq!(
        ids,
        ["e1", "e2", "e4", "e5", "e3"],
        "all_records in raising order"
    );

    // Satisfying e1 (observed at 10) drops its timers and its live row, and re-anchors e5:
    // a deadline at 70 appears.
    let applied = watcher
        .apply(
            &t,
            &Input::Facts(vec![ReportedFact {
                fact_key: fact_key("k-manifest"),
                observed_at: at(10),
                observed_at_given: None,
                mapping: None,
                subject: None,
                source: source(),
            }]),
            at(10),
        )
        .await
        .expect("report a fact");
    assert!(
        applied
            .effects
            .iter()
            .any(|e| matches!(e, watcher_core::engine::Effect::Satisfied { expectation, .. } if expectation.id.as_str() == "e1")),
        "the fact satisfied e1"
    );
    let mut remaining: Vec<(Instant, TimerKey)> = all_timers
        .iter()
        .filter(|(_, k)| k.expectation.id.as_str() != "e1")
        .cloned()
        .collect();
    remaining.insert(3, (at(70), key(&pa1, "e5", Deadline)));
    assert_eq!(
        due(store.due_timers(at(1000), 100).await.expect("timers")),
        remaining,
        "a satisfied record's timers are dropped; a re-anchored one's deadline is added"
    );
    assert_eq!(
        live_at(t0()).await,
        4,
        "a satisfied record is not live: e2, e3, e4, e5"
    );
    assert_eq!(live_at(at(65)).await, 3, "e2, e4 (120) and e5 (70)");
    assert_eq!(live_at(at(150)).await, 0);
    let slice = store.load(&t, &scope, at(10)).await.expect("load");
    assert_eq!(
        slice.id_index[&eref("booking", "e1")],
        Some(pa1.clone()),
        "the id index keeps a closed record"
    );
    assert_eq!(
        slice.fact_index[&fact_key("k-manifest")],
        set(&[&pa1]),
        "the fact-key index keeps a closed record's key"
    );
}

/// The outbox: an entry whose (tenant, agent, messageId) exists is left as first written;
/// `outbox_due` gives queued entries due at `now`, oldest first, at most `limit`; `sent` is final;
/// `lapses` lists a tenant's entries only, in order of lapse.
pub async fn outbox_rules<S: Store + 'static>(store: Arc<S>) {
    let a = tenant("tenant-a");
    let b = tenant("tenant-b");
    let first = outbox_entry(&a, "lapse:e1:overdue:1", t0());
    let later = outbox_entry(&a, "lapse:e2:overdue:1", at(60));
    let other_tenant = outbox_entry(&b, "lapse:e1:overdue:1", t0());
    store
        .commit(
            &a,
            Commit {
                outbox: vec![first.clone(), later.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("commit outbox");
    store
        .commit(
            &b,
            Commit {
                outbox: vec![other_tenant.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("the same messageId in another tenant is another entry");

    // A second insert with the same messageId for the same agent leaves the first.
    let mut again = first.clone();
    again.request = json!({ "different": true });
    again.next_attempt_at = at(500);
    store
        .commit(
            &a,
            Commit {
                outbox: vec![again],
                ..Commit::default()
            },
        )
        .await
        .expect("a repeated messageId is not an error");
    assert_eq!(
        store
            .outbox_get(&a, &first.agent, &first.message_id)
            .await
            .expect("outbox_get"),
        Some(first.clone()),
        "an existing messageId of the same agent keeps its first entry"
    );
    assert_eq!(
        store.lapses(&a).await.expect("lapses").len(),
        2,
        "a repeated messageId of the same agent adds no entry"
    );
    assert_eq!(
        store
            .outbox_get(&b, &first.agent, &first.message_id)
            .await
            .expect("outbox_get"),
        Some(other_tenant.clone())
    );
    assert_eq!(
        store
            .outbox_get(&a, &first.agent, "lapse:none")
            .await
            .expect("outbox_get"),
        None
    );

    // Due entries.
    let ids = |list: Vec<OutboxEntry>| -> Vec<(Tenant, String)> {
        list.into_iter().map(|o| (o.tenant, o.message_id)).collect()
    };
    let mine = |e: &OutboxEntry| (e.tenant.clone(), e.message_id.clone());
    let due_now = ids(store.outbox_due(t0(), 10).await.expect("outbox_due"));
    assert_eq!(
        due_now,
        vec![mine(&first), mine(&other_tenant)],
        "entries due at now, oldest first"
    );
    assert_eq!(
        ids(store.outbox_due(at(60), 10).await.expect("outbox_due")),
        vec![mine(&first), mine(&later), mine(&other_tenant)]
    );
    assert_eq!(
        ids(store.outbox_due(at(60), 1).await.expect("outbox_due")),
        vec![mine(&first)],
        "at most `limit` entries"
    );

    // Sent is final.
    let mut sent = first.clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    sent.task_id = Some("task-99".into());
    sent.task_state = Some("TASK_STATE_SUBMITTED".into());
    store.outbox_update(&sent).await.expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&a, &first.agent, &first.message_id)
            .await
            .expect("outbox_get"),
        Some(sent.clone()),
        "an update replaces the delivery fields"
    );
    assert_eq!(
        store
            .outbox_get(&b, &first.agent, &first.message_id)
            .await
            .expect("outbox_get"),
        Some(other_tenant.clone()),
        "an update touches only its own tenant's entry"
    );
    for back in [DeliveryState::Queued, DeliveryState::Failed] {
        let mut undo = first.clone();
        undo.delivery = back;
        undo.attempts = 7;
        store.outbox_update(&undo).await.expect("outbox_update");
        assert_eq!(
            store
                .outbox_get(&a, &first.agent, &first.message_id)
                .await
                .expect("outbox_get"),
            Some(sent.clone()),
            "a sent entry is never changed back to {}",
            back.as_str()
        );
    }
    assert_eq!(
        ids(store.outbox_due(at(60), 10).await.expect("outbox_due")),
        vec![mine(&later), mine(&other_tenant)],
        "a sent entry is no longer due"
    );

    // Retry and failure.
    let mut retry = later.clone();
    retry.attempts = 1;
    retry.next_attempt_at = at(90);
    retry.last_error = Some("HTTP 503".into());
    store.outbox_update(&retry).await.expect("outbox_update");
    assert_eq!(
        ids(store.outbox_due(at(60), 10).await.expect("outbox_due")),
        vec![mine(&other_tenant)],
        "a retry waits for its next attempt"
    );
    assert_eq!(
        ids(store.outbox_due(at(90), 10).await.expect("outbox_due")),
        vec![mine(&later), mine(&other_tenant)]
    );
    let mut failed = retry.clone();
    failed.delivery = DeliveryState::Failed;
    store.outbox_update(&failed).await.expect("outbox_update");
    assert_eq!(
        ids(store.outbox_due(at(1000), 10).await.expect("outbox_due")),
        vec![mine(&other_tenant)],
        "a failed entry is not due"
    );

    // Updating an entry never written does not create it.
    let ghost = outbox_entry(&a, "lapse:ghost", t0());
    store.outbox_update(&ghost).await.expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&a, &ghost.agent, "lapse:ghost")
            .await
            .expect("outbox_get"),
        None,
        "outbox_update does not insert"
    );

    // Lapses per tenant.
    assert_eq!(
        store.lapses(&a).await.expect("lapses"),
        vec![sent, failed],
        "a tenant's entries, in order of lapse"
    );
    assert_eq!(store.lapses(&b).await.expect("lapses"), vec![other_tenant]);
    assert!(store
        .lapses(&tenant("tenant-c"))
        .await
        .expect("lapses")
        .is_empty());
}

/// An outbox entry's identity is (tenant, agent, messageId): expectation ids are scoped to the
/// raising agent, so two agents of one tenant may lapse with the same `messageId`. Both entries
/// are kept, in the same commit or in two; each is read and updated on its own; a repeat for
/// one agent still leaves that agent's first entry.
pub async fn outbox_identity_includes_agent<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let message_id = "lapse:exp-shared:overdue:2026-09-10T12:00:00Z";
    let booking = outbox_entry(&t, message_id, t0());
    let mut other = outbox_entry(&t, message_id, t0());
    other.agent = agent("other");
    other.request = json!({ "message": { "messageId": message_id }, "to": "other" });
    let mut third = outbox_entry(&t, message_id, at(1));
    third.agent = agent("third");

    // Two agents in one commit, a third in a later one.
    store
        .commit(
            &t,
            Commit {
                outbox: vec![booking.clone(), other.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("the same messageId for two agents in one commit");
    store
        .commit(
            &t,
            Commit {
                outbox: vec![third.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("the same messageId for a third agent in a later commit");
    for e in [&booking, &other, &third] {
        assert_eq!(
            store
                .outbox_get(&t, &e.agent, message_id)
                .await
                .expect("outbox_get"),
            Some(e.clone()),
            "agent {}'s entry is kept and found under its own agent",
            e.agent
        );
    }
    assert_eq!(
        store
            .outbox_get(&t, &agent("nobody"), message_id)
            .await
            .expect("outbox_get"),
        None,
        "an agent with no entry finds none, even when another agent has that messageId"
    );
    assert_eq!(
        store.lapses(&t).await.expect("lapses"),
        vec![booking.clone(), other.clone(), third.clone()],
        "all three entries are listed, in order of lapse"
    );
    let due = store.outbox_due(at(1), 10).await.expect("outbox_due");
    assert_eq!(
        due,
        vec![booking.clone(), other.clone(), third.clone()],
        "each agent's entry is due on its own"
    );

    // A repeat for one agent leaves that agent's first entry and adds nothing.
    let mut again = other.clone();
    again.request = json!({ "different": true });
    store
        .commit(
            &t,
            Commit {
                outbox: vec![again],
                ..Commit::default()
            },
        )
        .await
        .expect("a repeated (agent, messageId) is not an error");
    assert_eq!(
        store
            .outbox_get(&t, &other.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(other.clone()),
        "a repeated (tenant, agent, messageId) keeps its first entry"
    );
    assert_eq!(store.lapses(&t).await.expect("lapses").len(), 3);

    // Updates touch only their own agent's entry.
    let mut sent = booking.clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    sent.task_id = Some("task-booking".into());
    store.outbox_update(&sent).await.expect("outbox_update");
    let mut retry = other.clone();
    retry.attempts = 1;
    retry.next_attempt_at = at(30);
    retry.last_error = Some("HTTP 503".into());
    store.outbox_update(&retry).await.expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&t, &booking.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(sent.clone()),
        "the update of booking's entry is recorded"
    );
    assert_eq!(
        store
            .outbox_get(&t, &other.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(retry.clone()),
        "the update of other's entry is recorded on other's entry only"
    );
    assert_eq!(
        store
            .outbox_get(&t, &third.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(third.clone()),
        "an update of another agent's entry with the same messageId leaves this one"
    );
    // Booking's entry is sent: an update of other's entry to queued does not reopen it.
    let mut queued_again = retry.clone();
    queued_again.attempts = 2;
    store
        .outbox_update(&queued_again)
        .await
        .expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&t, &booking.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(sent.clone()),
        "booking's sent entry is final whatever happens to other's"
    );
    assert_eq!(
        store.outbox_due(at(1), 10).await.expect("outbox_due"),
        vec![third.clone()],
        "sent is no longer due, the retry waits, the third is due"
    );
    assert_eq!(
        store.outbox_due(at(30), 10).await.expect("outbox_due"),
        vec![queued_again.clone(), third.clone()]
    );

    // Updating an agent with no entry does not create one.
    let mut ghost = booking.clone();
    ghost.agent = agent("nobody");
    store.outbox_update(&ghost).await.expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&t, &ghost.agent, message_id)
            .await
            .expect("outbox_get"),
        None,
        "outbox_update does not insert an entry for another agent"
    );
    assert_eq!(
        store.lapses(&t).await.expect("lapses"),
        vec![sent, queued_again, third]
    );
}

/// `outbox_of_agent`: only the (tenant, agent) asked for, only the delivery state asked for,
/// only entries due by `due_by` when it is given, earliest next attempt first, at most `limit`;
/// an `outbox_update` moves an entry from one state's answer to another's.
pub async fn outbox_by_agent_and_state<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let other_tenant = tenant("tenant-b");
    let late = outbox_entry(&t, "lapse:late", at(30));
    let early = outbox_entry(&t, "lapse:early", at(10));
    let middle = outbox_entry(&t, "lapse:middle", at(20));
    let mut elsewhere = outbox_entry(&t, "lapse:elsewhere", at(1));
    elsewhere.agent = agent("other");
    let foreign = outbox_entry(&other_tenant, "lapse:foreign", at(1));
    store
        .commit(
            &t,
            Commit {
                outbox: vec![
                    late.clone(),
                    early.clone(),
                    middle.clone(),
                    elsewhere.clone(),
                ],
                ..Commit::default()
            },
        )
        .await
        .expect("commit lapse tasks");
    store
        .commit(
            &other_tenant,
            Commit {
                outbox: vec![foreign],
                ..Commit::default()
            },
        )
        .await
        .expect("commit another tenant's lapse task");
    let ids = |v: Vec<OutboxEntry>| v.into_iter().map(|e| e.message_id).collect::<Vec<_>>();
    let booking = agent("booking");
    let queued = |due_by, limit| {
        let store = store.clone();
        let t = t.clone();
        let booking = booking.clone();
        async move {
            store
                .outbox_of_agent(&t, &booking, DeliveryState::Queued, due_by, limit)
                .await
                .expect("outbox_of_agent")
        }
    };
    assert_eq!(
        ids(queued(None, 10).await),
        ["lapse:early", "lapse:middle", "lapse:late"],
        "every queued entry of the agent, earliest next attempt first"
    );
    assert_eq!(
        ids(queued(Some(at(20)), 10).await),
        ["lapse:early", "lapse:middle"],
        "due_by bounds the next attempt, inclusive"
    );
    assert_eq!(
        ids(queued(None, 1).await),
        ["lapse:early"],
        "limit caps the answer"
    );
    assert_eq!(
        ids(queued(Some(at(5)), 10).await),
        Vec::<String>::new(),
        "nothing due by then"
    );
    assert_eq!(
        ids(store
            .outbox_of_agent(&t, &agent("other"), DeliveryState::Queued, None, 10)
            .await
            .expect("outbox_of_agent")),
        ["lapse:elsewhere"],
        "another agent's entries are its own"
    );

    let mut failed = middle.clone();
    failed.delivery = DeliveryState::Failed;
    failed.last_error = Some("gave up".into());
    store.outbox_update(&failed).await.expect("mark failed");
    assert_eq!(
        ids(queued(None, 10).await),
        ["lapse:early", "lapse:late"],
        "a failed entry leaves the queued answer"
    );
    assert_eq!(
        store
            .outbox_of_agent(&t, &booking, DeliveryState::Failed, None, 10)
            .await
            .expect("outbox_of_agent"),
        vec![failed.clone()],
        "and is found among the failed ones, as written"
    );
    let mut requeued = failed.clone();
    requeued.delivery = DeliveryState::Queued;
    requeued.next_attempt_at = at(40);
    requeued.last_error = None;
    store.outbox_update(&requeued).await.expect("re-queue");
    assert_eq!(
        ids(queued(None, 10).await),
        ["lapse:early", "lapse:late", "lapse:middle"],
        "a re-queued entry comes back at its new next attempt"
    );
    assert!(
        store
            .outbox_of_agent(&t, &booking, DeliveryState::Failed, None, 10)
            .await
            .expect("outbox_of_agent")
            .is_empty(),
        "and is no longer failed"
    );
    let mut sent = early.clone();
    sent.delivery = DeliveryState::Sent;
    store.outbox_update(&sent).await.expect("mark sent");
    assert_eq!(
        ids(store
            .outbox_of_agent(&t, &booking, DeliveryState::Sent, None, 10)
            .await
            .expect("outbox_of_agent")),
        ["lapse:early"],
        "sent entries are found by state too"
    );
}

/// `outbox_following`: only entries of (tenant, agent) with `follow_at` set, due by `due_by`
/// when given, earliest first; clearing `follow_at` removes an entry from the answer.
pub async fn outbox_following_by_next_poll<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let booking = agent("booking");
    let mut late = outbox_entry(&t, "lapse:late", t0());
    late.delivery = DeliveryState::Sent;
    late.follow_at = Some(at(30));
    late.follow_since = Some(t0());
    let mut early = outbox_entry(&t, "lapse:early", t0());
    early.delivery = DeliveryState::Sent;
    early.follow_at = Some(at(10));
    let not_followed = outbox_entry(&t, "lapse:plain", t0());
    let mut elsewhere = early.clone();
    elsewhere.agent = agent("other");
    store
        .commit(
            &t,
            Commit {
                outbox: vec![late.clone(), early.clone(), not_followed, elsewhere],
                ..Commit::default()
            },
        )
        .await
        .expect("commit lapse tasks");
    let ids = |v: Vec<OutboxEntry>| v.into_iter().map(|e| e.message_id).collect::<Vec<_>>();
    let following = |due_by| {
        let store = store.clone();
        let t = t.clone();
        let booking = booking.clone();
        async move {
            store
                .outbox_following(&t, &booking, due_by, 10)
                .await
                .expect("outbox_following")
        }
    };
    assert_eq!(
        ids(following(None).await),
        ["lapse:early", "lapse:late"],
        "followed entries of the agent, earliest poll first"
    );
    assert_eq!(ids(following(Some(at(10))).await), ["lapse:early"]);
    let mut done = early.clone();
    done.follow_at = None;
    done.task_state = Some("TASK_STATE_COMPLETED".into());
    store.outbox_update(&done).await.expect("stop following");
    assert_eq!(ids(following(None).await), ["lapse:late"]);
    let mut later = late.clone();
    later.follow_at = Some(at(5));
    store
        .outbox_update(&later)
        .await
        .expect("poll again sooner");
    assert_eq!(following(Some(at(5))).await, vec![later]);
}

/// The last agent card read is kept per (tenant, agent), replaced by the next, and read back as
/// it was (serve.md "Agents are independent").
pub async fn agent_cards_are_kept<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let booking = agent("booking");
    assert_eq!(
        store.agent_card(&a, &booking).await.expect("agent_card"),
        None,
        "nothing kept before a card is read"
    );
    let first = serde_json::json!({ "name": "Booking agent", "version": "1.0.0", "n": 1.5 });
    store
        .put_agent_card(&a, &booking, &first, at(1))
        .await
        .expect("keep a card");
    assert_eq!(
        store.agent_card(&a, &booking).await.expect("agent_card"),
        Some((first.clone(), at(1)))
    );
    let second = serde_json::json!({ "name": "Booking agent", "version": "1.1.0" });
    store
        .put_agent_card(&a, &booking, &second, at(2))
        .await
        .expect("replace it");
    assert_eq!(
        store.agent_card(&a, &booking).await.expect("agent_card"),
        Some((second, at(2))),
        "the last card read replaces the one before"
    );
    assert_eq!(
        store.agent_card(&b, &booking).await.expect("agent_card"),
        None,
        "another tenant's agent of the same id has its own"
    );
    assert_eq!(
        store
            .agent_card(&a, &agent("other"))
            .await
            .expect("agent_card"),
        None
    );
}

/// The lifecycle probe's descriptor is kept per (tenant, agent, protocol version), replaced by
/// the next probe of the same version, and read back as it was
/// (docs/specs/agent-card-vs-lifecycle-conformance.md: one descriptor per (callee,
/// protocolVersion)).
pub async fn lifecycle_descriptors_are_kept<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let booking = agent("booking");
    let get = |t: Tenant, ag: AgentId, v: &'static str| {
        let store = store.clone();
        async move {
            store
                .lifecycle_descriptor(&t, &ag, v)
                .await
                .expect("lifecycle_descriptor")
        }
    };
    assert_eq!(get(a.clone(), booking.clone(), "1.0").await, None);
    let first = serde_json::json!({ "protocolVersion": "1.0", "lifecycleTrusted": false,
                                    "demotions": ["a status without timestamp"] });
    store
        .put_lifecycle_descriptor(&a, &booking, "1.0", &first, at(1))
        .await
        .expect("keep a descriptor");
    let old = serde_json::json!({ "protocolVersion": "0.3", "lifecycleTrusted": true });
    store
        .put_lifecycle_descriptor(&a, &booking, "0.3", &old, at(2))
        .await
        .expect("keep another version's descriptor");
    assert_eq!(
        get(a.clone(), booking.clone(), "1.0").await,
        Some((first, at(1))),
        "each protocol version has its own"
    );
    let second = serde_json::json!({ "protocolVersion": "1.0", "lifecycleTrusted": true });
    store
        .put_lifecycle_descriptor(&a, &booking, "1.0", &second, at(3))
        .await
        .expect("replace it");
    assert_eq!(
        get(a.clone(), booking.clone(), "1.0").await,
        Some((second, at(3))),
        "a fresh probe replaces the one before"
    );
    assert_eq!(
        get(a.clone(), booking.clone(), "0.3").await,
        Some((old.clone(), at(2)))
    );
    // A descriptor kept before the probe exercised a cancel (no `cancel` member) is read back
    // as kept and stays readable, untrusted until probed again.
    let (kept, probed_at) = get(a.clone(), booking.clone(), "0.3").await.expect("kept");
    let lifecycle = crate::directory::Lifecycle::from_descriptor(kept, probed_at);
    assert!(!lifecycle.lifecycle_trusted);
    assert_eq!(lifecycle.protocol_version, "0.3");
    assert_eq!(
        lifecycle.demotions,
        [crate::directory::Lifecycle::NO_CANCEL_LEG]
    );
    assert_eq!(lifecycle.descriptor, old);
    assert_eq!(get(b, booking, "1.0").await, None, "tenants are apart");
    assert_eq!(get(a, agent("other"), "1.0").await, None);
}
/// Leased sends ([`crate::lease`]): of eight claims of one queued entry at once, exactly one is
/// granted (lease and `attempt_started_at` = now written, nothing else) and seven answer
/// `Taken` with the lease's end; a writer that read the entry
/// before the claim keeps the lease; the holder's outcome releases it; a `sent` entry answers
/// `Taken` and is not changed; an expired lease, or a restarted sender's own (same name, new
/// incarnation), is taken over as ambiguous; an entry not stored
/// answers `Gone`; another agent's entry with the same `messageId` is claimed on its own.
pub async fn outbox_claims_are_exclusive<S: Store + 'static>(store: Arc<S>) {
    use crate::lease::Claim;
    let t = tenant("tenant-a");
    let booking = agent("booking");
    let mut other_agent = outbox_entry(&t, "lapse:1", t0());
    other_agent.agent = agent("billing");
    let mut sent = outbox_entry(&t, "lapse:2", t0());
    sent.delivery = DeliveryState::Sent;
    let entries = vec![
        outbox_entry(&t, "lapse:1", t0()),
        sent.clone(),
        outbox_entry(&t, "lapse:3", t0()),
        outbox_entry(&t, "lapse:4", t0()),
        other_agent,
    ];
    store
        .commit(
            &t,
            Commit {
                outbox: entries,
                ..Commit::default()
            },
        )
        .await
        .expect("commit");
    let before = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("outbox_get")
        .expect("stored");

    // Eight senders at once.
    let claims = futures_join_all((0..8).map(|i| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        tokio::spawn(async move {
            store
                .outbox_claim(
                    &t,
                    &booking,
                    "lapse:1",
                    &lease_of(&format!("sender-{i}#0"), at(5)),
                    t0(),
                )
                .await
                .expect("outbox_claim")
        })
    }))
    .await;
    let granted: Vec<&OutboxEntry> = claims
        .iter()
        .filter_map(|c| match c {
            Claim::Claimed { entry, ambiguous } => {
                assert!(!ambiguous, "a fresh entry is not ambiguous");
                Some(entry)
            }
            _ => None,
        })
        .collect();
    assert_eq!(granted.len(), 1, "exactly one claim is granted: {claims:?}");
    for c in &claims {
        if !matches!(c, Claim::Claimed { .. }) {
            assert_eq!(
                c,
                &Claim::Taken {
                    delivery: DeliveryState::Queued,
                    leased_until: Some(at(5))
                }
            );
        }
    }
    let winner = granted[0].clone();
    let stored = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("outbox_get")
        .expect("stored");
    assert_eq!(stored, winner, "the claim answers the entry as written");
    assert_eq!(stored.attempt_started_at, Some(t0()));
    assert_eq!(
        stored.next_attempt_at,
        t0(),
        "a claim changes only the lease and the attempt"
    );
    let lease = stored.lease.clone().expect("leased");
    assert_eq!(lease.until, at(5));

    // A writer that read the entry before the claim (a deferral) keeps the lease.
    let mut stale = before.clone();
    stale.last_error = Some("deferred".into());
    store.outbox_update(&stale).await.expect("outbox_update");
    let kept = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("outbox_get")
        .expect("stored");
    assert_eq!(
        kept.lease,
        Some(lease.clone()),
        "only the holder releases a lease"
    );
    assert_eq!(
        store
            .outbox_claim(&t, &booking, "lapse:1", &lease_of("late#0", at(9)), at(4))
            .await
            .expect("outbox_claim"),
        Claim::Taken {
            delivery: DeliveryState::Queued,
            leased_until: Some(at(5))
        },
        "a live lease is not taken over"
    );

    // The holder's outcome releases it; a sent entry is never claimed.
    let mut outcome = winner.clone();
    outcome.delivery = DeliveryState::Sent;
    outcome.attempt_started_at = None;
    store.outbox_update(&outcome).await.expect("outbox_update");
    let done = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("outbox_get")
        .expect("stored");
    assert_eq!(done.lease, None, "the holder's outcome releases the lease");
    assert_eq!(done.delivery, DeliveryState::Sent);
    for id in ["lapse:1", "lapse:2"] {
        assert_eq!(
            store
                .outbox_claim(&t, &booking, id, &lease_of("again#0", at(15)), at(10))
                .await
                .expect("outbox_claim"),
            Claim::Taken {
                delivery: DeliveryState::Sent,
                leased_until: None
            },
            "{id}: a sent entry is taken"
        );
    }
    assert_eq!(
        store
            .outbox_get(&t, &booking, "lapse:2")
            .await
            .expect("outbox_get")
            .expect("stored"),
        sent,
        "a refused claim writes nothing"
    );

    // A crashed sender's lease expires and is taken over, as ambiguous.
    let first = store
        .outbox_claim(&t, &booking, "lapse:3", &lease_of("crashed#0", at(5)), t0())
        .await
        .expect("outbox_claim");
    assert!(matches!(
        first,
        Claim::Claimed {
            ambiguous: false,
            ..
        }
    ));
    match store
        .outbox_claim(&t, &booking, "lapse:3", &lease_of("next#0", at(10)), at(5))
        .await
        .expect("outbox_claim")
    {
        Claim::Claimed { entry, ambiguous } => {
            assert!(ambiguous, "the crashed sender may have posted it");
            assert_eq!(entry.lease.map(|l| l.owner).as_deref(), Some("next#0"));
            assert_eq!(entry.attempt_started_at, Some(at(5)));
        }
        other => panic!("an expired lease is taken over, got {other:?}"),
    }

    // A restarted sender (same name, new incarnation) takes its predecessor's claim at once.
    let named = |incarnation: &str| crate::lease::Lease {
        owner: format!("{incarnation}#0"),
        incarnation: incarnation.to_owned(),
        sender: Some("serve:/var/lib/watcher.db".into()),
        until: at(5),
    };
    let before_crash = store
        .outbox_claim(&t, &booking, "lapse:4", &named("run-1"), t0())
        .await
        .expect("outbox_claim");
    assert!(matches!(before_crash, Claim::Claimed { .. }));
    match store
        .outbox_claim(&t, &booking, "lapse:4", &named("run-2"), at(1))
        .await
        .expect("outbox_claim")
    {
        Claim::Claimed { entry, ambiguous } => {
            assert!(ambiguous, "the predecessor may have posted it");
            assert_eq!(entry.lease, Some(named("run-2")));
        }
        other => panic!("a restarted sender takes back its claim, got {other:?}"),
    }

    // Identity: another agent's entry with the same messageId; an entry not stored.
    assert!(matches!(
        store
            .outbox_claim(
                &t,
                &agent("billing"),
                "lapse:1",
                &lease_of("b#0", at(5)),
                t0()
            )
            .await
            .expect("outbox_claim"),
        Claim::Claimed { .. }
    ));
    assert_eq!(
        store
            .outbox_claim(&t, &booking, "lapse:none", &lease_of("x#0", at(5)), t0())
            .await
            .expect("outbox_claim"),
        Claim::Gone
    );
}

/// A claim's lease by `owner` (its own incarnation, no sender name) until `until`.
fn lease_of(owner: &str, until: Instant) -> crate::lease::Lease {
    crate::lease::Lease {
        owner: owner.to_owned(),
        incarnation: owner.to_owned(),
        sender: None,
        until,
    }
}

/// Awaits every spawned task, panicking when one panicked.
async fn futures_join_all<T: Send + 'static>(
    handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<T> {
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("the task ran"));
    }
    out
}

/// A lapse task marked `withdrawn` (never sent: its origin task was found ended before sending)
/// is stored as such, found by its agent and state, and left out of the queue.
pub async fn withdrawn_lapse_tasks_are_kept<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let entry = outbox_entry(&t, "lapse:withdrawn", at(1));
    store
        .commit(
            &t,
            Commit {
                outbox: vec![entry.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("commit a lapse task");
    let mut withdrawn = entry.clone();
    withdrawn.delivery = DeliveryState::Withdrawn;
    withdrawn.last_error = Some("not sent: the origin task is TASK_STATE_CANCELED".into());
    store
        .outbox_update(&withdrawn)
        .await
        .expect("mark withdrawn");
    let got = store
        .outbox_get(&t, &entry.agent, &entry.message_id)
        .await
        .expect("outbox_get")
        .expect("kept");
    assert_eq!(got.delivery, DeliveryState::Withdrawn);
    let listed = store
        .outbox_of_agent(&t, &entry.agent, DeliveryState::Withdrawn, None, 10)
        .await
        .expect("outbox_of_agent");
    assert_eq!(listed.len(), 1);
    let queued = store
        .outbox_of_agent(&t, &entry.agent, DeliveryState::Queued, None, 10)
        .await
        .expect("outbox_of_agent");
    assert!(queued.is_empty(), "{queued:?}");
    assert!(store
        .outbox_due(at(100), 10)
        .await
        .expect("outbox_due")
        .is_empty());
}

/// `probe_write` succeeds on a healthy store, again and again, and changes nothing of the record.
pub async fn probe_write_writes<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    store
        .commit(
            &t,
            Commit {
                outbox: vec![outbox_entry(&t, "lapse:kept", t0())],
                ..Commit::default()
            },
        )
        .await
        .expect("commit a lapse task");
    store.probe_write(at(1)).await.expect("a first probe");
    store.probe_write(at(2)).await.expect("a second probe");
    assert_eq!(
        store.lapses(&t).await.expect("lapses").len(),
        1,
        "the probe touches nothing of the record"
    );
    assert!(
        store.next_timer().await.expect("next_timer").is_none(),
        "the probe is not a timer"
    );
}

/// What tenant A stores is invisible to tenant B through `load` (subjects, indexes, tasks, live
/// counts), `subject`, `rejections` and `lapses`; the same subject in B has its own versions.
pub async fn tenants_are_isolated<S: Store + 'static>(store: Arc<S>) {
    let a = tenant("tenant-a");
    let b = tenant("tenant-b");
    let s = shipment("PA-1");
    let task = task_ref("booking", "task-1");
    let state_a = subject_with_record(&a, "PA-1", "exp-1", 1);
    store
        .commit(
            &a,
            Commit {
                subjects: vec![state_a.clone()],
                tasks: vec![TaskRecord::new(task.clone())],
                outbox: vec![outbox_entry(&a, "lapse:exp-1:overdue:1", t0())],
                rejections: vec![rejection("booking", "in-a", t0())],
            },
        )
        .await
        .expect("commit in A");

    let mut scope = scope_of(&[&s]);
    scope.fact_keys.insert(fact_key("manifest:PA-1"));
    scope.expectations.insert(eref("booking", "exp-1"));
    scope.tasks.insert(task.clone());
    scope.agents.insert(agent("booking"));

    let in_a = store.load(&a, &scope, t0()).await.expect("load A");
    assert_eq!(in_a.subjects[&s].version, 1);
    assert_eq!(in_a.fact_index[&fact_key("manifest:PA-1")].len(), 1);
    assert_eq!(in_a.id_index[&eref("booking", "exp-1")], Some(s.clone()));
    assert!(in_a.tasks[&task].is_some());
    assert_eq!(in_a.agent_live[&agent("booking")], 1);

    let in_b = store.load(&b, &scope, t0()).await.expect("load B");
    assert_eq!(in_b.tenant, b);
    assert_eq!(
        in_b.subjects[&s],
        SubjectState::new(s.clone()),
        "A's subject is empty at version 0 in B"
    );
    assert!(in_b.fact_index[&fact_key("manifest:PA-1")].is_empty());
    assert_eq!(in_b.id_index[&eref("booking", "exp-1")], None);
    assert_eq!(in_b.tasks[&task], None);
    assert_eq!(in_b.agent_live[&agent("booking")], 0);
    assert!(store.subject(&b, &s).await.expect("subject").is_none());
    assert!(store
        .rejections(&b, &agent("booking"))
        .await
        .expect("rejections")
        .is_empty());
    assert!(store.lapses(&b).await.expect("lapses").is_empty());
    assert!(store
        .outbox_get(&b, &agent("booking"), "lapse:exp-1:overdue:1")
        .await
        .expect("outbox_get")
        .is_none());

    // The same subject in B starts at version 0 and does not disturb A.
    let mut state_b = SubjectState::new(s.clone());
    state_b.facts.push(fact("only-in-b", &s, t0()));
    store
        .commit(
            &b,
            Commit {
                subjects: vec![state_b.clone()],
                tasks: vec![TaskRecord::new(task.clone())],
                ..Commit::default()
            },
        )
        .await
        .expect("version 0 in B, whatever A holds");
    assert_eq!(
        store.subject(&b, &s).await.expect("subject"),
        Some(SubjectState {
            version: 1,
            ..state_b
        })
    );
    assert_eq!(
        store.subject(&a, &s).await.expect("subject"),
        Some(SubjectState {
            version: 1,
            ..state_a
        }),
        "B's commit leaves A's subject as it was"
    );
    let in_a = store.load(&a, &scope, t0()).await.expect("load A");
    assert_eq!(in_a.tasks[&task].as_ref().map(|r| r.version), Some(1));
    let timers = store.due_timers(at(1000), 100).await.expect("timers");
    assert!(
        timers.iter().all(|d| d.tenant == a),
        "B holds no records, so no timers of B"
    );
    assert_eq!(timers.len(), 2, "A's record has a deadline and a horizon");
}

/// Rejections are kept per tenant and agent, oldest first, across commits.
pub async fn rejections_per_tenant_and_agent<S: Store + 'static>(store: Arc<S>) {
    let a = tenant("tenant-a");
    let b = tenant("tenant-b");
    let r1 = rejection("booking", "r1", at(2));
    let r2 = rejection("pricing", "r2", at(1));
    let r3 = rejection("booking", "r3", at(1));
    let r4 = rejection("booking", "r4", at(0));
    let r5 = Rejection {
        expectation_id: None,
        task_id: None,
        ..rejection("booking", "r5", at(3))
    };
    store
        .commit(
            &a,
            Commit {
                rejections: vec![r1.clone(), r2.clone(), r3.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("commit rejections");
    store
        .commit(
            &b,
            Commit {
                rejections: vec![r4.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("commit rejections");
    store
        .commit(
            &a,
            Commit {
                rejections: vec![r5.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("commit rejections");
    let got = |t: &Tenant, name: &str| {
        let store = Arc::clone(&store);
        let t = t.clone();
        let name = name.to_string();
        async move {
            store
                .rejections(&t, &agent(&name))
                .await
                .expect("rejections")
        }
    };
    assert_eq!(
        got(&a, "booking").await,
        vec![r1.clone(), r3.clone(), r5.clone()],
        "oldest (first kept) first, across commits"
    );
    assert_eq!(got(&a, "pricing").await, vec![r2]);
    assert_eq!(got(&b, "booking").await, vec![r4]);
    assert!(got(&b, "pricing").await.is_empty());

    // In pages of 2: r1, r3, then r5 with no next page; each exactly once.
    let (first, next) = store
        .rejections_page(&a, &agent("booking"), None, 2)
        .await
        .expect("rejections_page");
    let first: Vec<Rejection> = first.into_iter().map(|(_, r)| r).collect();
    assert_eq!(first, vec![r1, r3]);
    assert!(next.is_some(), "a third rejection remains");
    let (second, end) = store
        .rejections_page(&a, &agent("booking"), next, 2)
        .await
        .expect("rejections_page");
    let second: Vec<Rejection> = second.into_iter().map(|(_, r)| r).collect();
    assert_eq!(second, vec![r5]);
    assert_eq!(end, None, "the last page has no next");
}

/// `next_sequence` keeps its contract ([`Store::next_sequence`]), also under concurrency: no
/// number is answered twice, one caller sees strictly increasing numbers, and a number asked
/// for after others were answered (in this process) is greater than them. Numbers need not be
/// dense (the DynamoDB store answers time-ordered ids). A store answering a duplicate fails.
pub async fn sequence_strictly_increases<S: Store + 'static>(store: Arc<S>) {
    let first = store.next_sequence().await.expect("next_sequence");
    let second = store.next_sequence().await.expect("next_sequence");
    assert!(second > first, "{second} > {first}");

    const TASKS: usize = 8;
    const EACH: usize = 50;
    let mut joins = Vec::new();
    for _ in 0..TASKS {
        let store = Arc::clone(&store);
        joins.push(tokio::spawn(async move {
            let mut mine = Vec::with_capacity(EACH);
            for _ in 0..EACH {
                mine.push(store.next_sequence().await.expect("next_sequence"));
            }
            mine
        }));
    }
    let mut all = BTreeSet::new();
    for j in joins {
        let mine = j.await.expect("sequence task");
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "one caller sees strictly increasing numbers: {mine:?}"
        );
        for n in mine {
            assert!(n > second, "every later number is greater than {second}");
            assert!(all.insert(n), "{n} was handed out twice");
        }
    }
    assert_eq!(all.len(), TASKS * EACH);
    let last = store.next_sequence().await.expect("next_sequence");
    let max = all.last().copied().unwrap_or(second);
    assert!(last > max, "{last} > every number before ({max})");
}

// ---------------------------------------------------------------------------------------------
// Retention (expectations-v1 §14, crate::retention).

/// What the retention checks store, in tenants A and B, through the engine where it can:
///
/// * A `PA-OPEN`: e-open raised at 0 (deadline 60, horizon 180), never fired: pending timers.
///   Its task-open reported `working` at 5.
/// * A `PA-ANCHOR`: e-anchored raised at 0, anchored on an id never raised and without a
///   horizon: no timer at all, yet it can still lapse (once its anchor is satisfied).
/// * A `PA-SAT`: e-sat (key `k-sat`) raised at 0 by task-sat, satisfied at 10.
/// * A `PA-RECENT`: e-recent (key `k-recent`, deadline 1000) raised at 0, satisfied at 500.
/// * A task-done: completed at 5, no expectations.
/// * A lapse tasks: `q-old` queued at 0; `s-old` sent at 1; `f-old` failed at 2; `s-new` lapsed
///   at 50, sent, next attempt 150.
/// * A rejections of booking at 1 and at 500.
/// * B `PA-OPEN` (same id as A's): one fact received at 0, no records. B rejection at 1.
async fn store_retention_fixture<S: Store + 'static>(store: &Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let watcher = Watcher::new(Arc::clone(store), Directory::new(), Settings::default());
    let raised = [
        (
            "task-open",
            expectation(
                "e-open",
                "shipment.manifest",
                "PA-OPEN",
                "k-open",
                at(60),
                Some(at(180)),
            ),
        ),
        (
            "task-anchor",
            Expectation::from_json(&json!({
                "expectationId": "e-anchored",
                "kind": "shipment.departure",
                "subject": { "type": "shipment", "id": "PA-ANCHOR" },
                "expects": "departure one hour after a manifest never raised",
                "satisfiedBy": { "factKey": "k-anchored" },
                "dueAt": at(30).to_string(),
                "anchor": { "expectationId": "e-never", "offset": "PT1H" },
                "basis": "observed",
            }))
            .expect("a valid anchored expectation"),
        ),
        (
            "task-sat",
            expectation(
                "e-sat",
                "shipment.manifest",
                "PA-SAT",
                "k-sat",
                at(60),
                None,
            ),
        ),
        (
            "task-recent",
            expectation(
                "e-recent",
                "shipment.manifest",
                "PA-RECENT",
                "k-recent",
                at(1000),
                None,
            ),
        ),
    ];
    for (task, e) in raised {
        watcher
            .apply(&a, &raise(task, vec![e]), t0())
            .await
            .expect("raise");
    }
    for (key, subject, when) in [
        ("k-sat", "PA-SAT", at(10)),
        ("k-recent", "PA-RECENT", at(500)),
    ] {
        watcher
            .apply(
                &a,
                &Input::Facts(vec![ReportedFact {
                    fact_key: fact_key(key),
                    observed_at: when,
                    observed_at_given: None,
                    mapping: None,
                    subject: Some(shipment(subject)),
                    source: source(),
                }]),
                when,
            )
            .await
            .expect("report a fact");
    }
    for (task, state) in [
        ("task-open", "TASK_STATE_WORKING"),
        ("task-done", "TASK_STATE_COMPLETED"),
    ] {
        watcher
            .apply(
                &a,
                &Input::Push {
                    agent: booking_profile(),
                    items: vec![PushItem::Status {
                        origin: Origin {
                            task_id: TaskId::parse(task).expect("a valid task id"),
                            context_id: None,
                        },
                        state: state.into(),
                        timestamp: Some(at(5)),
                        given_timestamp: None,
                    }],
                },
                at(5),
            )
            .await
            .expect("a task status");
    }

    let failed = OutboxEntry {
        delivery: DeliveryState::Failed,
        attempts: 8,
        ..outbox_entry(&a, "lapse:f-old", at(2))
    };
    let sent_new = OutboxEntry {
        lapsed_at: at(50),
        delivery: DeliveryState::Sent,
        attempts: 3,
        ..outbox_entry(&a, "lapse:s-new", at(150))
    };
    store
        .commit(
            &a,
            Commit {
                outbox: vec![
                    outbox_entry(&a, "lapse:q-old", t0()),
                    outbox_entry(&a, "lapse:s-old", t0()),
                    failed,
                    sent_new,
                ],
                rejections: vec![
                    rejection("booking", "old", at(1)),
                    rejection("booking", "new", at(500)),
                ],
                ..Commit::default()
            },
        )
        .await
        .expect("lapse tasks and rejections");
    let sent_old = OutboxEntry {
        delivery: DeliveryState::Sent,
        attempts: 1,
        next_attempt_at: at(1),
        ..outbox_entry(&a, "lapse:s-old", t0())
    };
    store.outbox_update(&sent_old).await.expect("mark sent");

    let mut only_facts = SubjectState::new(shipment("PA-OPEN"));
    only_facts
        .facts
        .push(fact("k-other", &shipment("PA-OPEN"), t0()));
    store
        .commit(
            &b,
            Commit {
                subjects: vec![only_facts],
                rejections: vec![rejection("booking", "old-b", at(1))],
                ..Commit::default()
            },
        )
        .await
        .expect("tenant B");
}

fn subjects_set(subjects: &[&str]) -> BTreeSet<Subject> {
    subjects.iter().map(|id| shipment(id)).collect()
}

/// Everything the retention checks can observe of a store, for before/after comparisons.
#[derive(Debug, PartialEq)]
struct Observed {
    subjects: Vec<Option<SubjectState>>,
    index: (Vec<BTreeSet<Subject>>, Vec<Option<Subject>>),
    tasks: Vec<Option<TaskRecord>>,
    lapses: Vec<String>,
    rejections: Vec<String>,
    timers: Vec<(Instant, String)>,
    live: u64,
}

async fn observe<S: Store + 'static>(store: &Arc<S>) -> Observed {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let mut subjects = Vec::new();
    for (t, id) in [
        (&a, "PA-OPEN"),
        (&a, "PA-ANCHOR"),
        (&a, "PA-SAT"),
        (&a, "PA-RECENT"),
        (&b, "PA-OPEN"),
    ] {
        subjects.push(store.subject(t, &shipment(id)).await.expect("subject"));
    }
    let keys = ["k-open", "k-anchored", "k-sat", "k-recent"];
    let ids = ["e-open", "e-anchored", "e-sat", "e-recent"];
    let tasks = [
        "task-open",
        "task-anchor",
        "task-sat",
        "task-recent",
        "task-done",
    ];
    let scope = Scope {
        fact_keys: keys.iter().map(|k| fact_key(k)).collect(),
        expectations: ids.iter().map(|e| eref("booking", e)).collect(),
        tasks: tasks.iter().map(|x| task_ref("booking", x)).collect(),
        agents: [agent("booking")].into(),
        ..Scope::default()
    };
    let slice = store.load(&a, &scope, at(20)).await.expect("load");
    let mut rejections = Vec::new();
    for t in [&a, &b] {
        for r in store
            .rejections(t, &agent("booking"))
            .await
            .expect("rejections")
        {
            rejections.push(format!("{t}/{}", r.reason));
        }
    }
    Observed {
        subjects,
        index: (
            keys.iter()
                .map(|k| slice.fact_index[&fact_key(k)].clone())
                .collect(),
            ids.iter()
                .map(|e| slice.id_index[&eref("booking", e)].clone())
                .collect(),
        ),
        tasks: tasks
            .iter()
            .map(|x| slice.tasks[&task_ref("booking", x)].clone())
            .collect(),
        lapses: store
            .lapses(&a)
            .await
            .expect("lapses")
            .into_iter()
            .map(|o| o.message_id)
            .collect(),
        rejections,
        timers: store
            .due_timers(at(100_000), 100)
            .await
            .expect("timers")
            .into_iter()
            .map(|d| (d.at, format!("{}/{}", d.key.subject, d.key.expectation.id)))
            .collect(),
        live: slice.agent_live[&agent("booking")],
    }
}

/// `purge(before)` forgets, in every tenant, what the retention rule allows and nothing else:
///
/// * an open subject with pending timers is kept whatever its age, and so is one waiting on an
///   anchor (no timer, yet it can lapse);
/// * a satisfied subject last active before `before` is deleted with its index rows: its fact
///   key and expectation id no longer resolve to it, and the id can be raised again;
/// * one last active after `before` is kept;
/// * a subject in another tenant with the same id is deleted or kept on its own account;
/// * a queued lapse task is kept whatever its age; sent and failed ones last active before
///   `before` are deleted, a sent one with a later next attempt is kept;
/// * rejections made before `before` are dropped;
/// * a finished task, and a task whose subjects are gone, are deleted once last active before
///   `before`; a running task with a stored subject is kept.
///
/// A second purge deletes nothing more.
pub async fn purge_follows_retention<S: Store + 'static>(store: Arc<S>) {
    let a = tenant("tenant-a");
    store_retention_fixture(&store).await;
    let kept = observe(&store).await;
    assert_eq!(
        kept.lapses,
        ["lapse:q-old", "lapse:s-old", "lapse:f-old", "lapse:s-new"]
    );
    assert!(
        !kept.timers.iter().any(|(_, k)| k.contains("PA-ANCHOR")),
        "the anchored record has no timer: {:?}",
        kept.timers
    );

    let origins = follow_old_and_new_origins(&store).await;
    let report = store.purge(at(100)).await.expect("purge");
    assert_eq!(
        followed_origins(&store, &origins).await,
        ["task-new"],
        "an origin followed since before the cut is forgotten; a later one is kept"
    );
    assert_eq!(
        report,
        PurgeReport {
            subjects: 2,
            outbox: 2,
            rejections: 2,
            tasks: 2,
        },
        "A PA-SAT and B PA-OPEN; s-old and f-old; the two rejections at 1; task-sat and task-done"
    );
    let after = observe(&store).await;

    assert_eq!(
        after.subjects,
        vec![
            kept.subjects[0].clone(),
            kept.subjects[1].clone(),
            None,
            kept.subjects[3].clone(),
            None
        ],
        "PA-OPEN (pending timers) and PA-ANCHOR (waiting on its anchor) are kept though raised \
         before `before`; PA-SAT (satisfied at 10) goes; PA-RECENT (satisfied at 500) stays; B's \
         PA-OPEN goes without touching A's"
    );
    assert_eq!(
        after.index.0,
        vec![
            subjects_set(&["PA-OPEN"]),
            subjects_set(&["PA-ANCHOR"]),
            BTreeSet::new(),
            subjects_set(&["PA-RECENT"]),
        ],
        "the purged subject's fact key no longer resolves to it"
    );
    assert_eq!(
        after.index.1,
        vec![
            Some(shipment("PA-OPEN")),
            Some(shipment("PA-ANCHOR")),
            None,
            Some(shipment("PA-RECENT")),
        ],
        "the purged subject's expectation id no longer resolves to it"
    );
    assert_eq!(
        after.tasks,
        vec![
            kept.tasks[0].clone(),
            kept.tasks[1].clone(),
            None,
            kept.tasks[3].clone(),
            None
        ],
        "task-sat (its subject gone) and task-done (completed at 5) go; the others stay"
    );
    assert!(kept.tasks.iter().all(Option::is_some), "{:?}", kept.tasks);
    assert_eq!(after.lapses, ["lapse:q-old", "lapse:s-new"]);
    assert_eq!(
        after.rejections,
        ["tenant-a/new"],
        "rejections at 1 go in both tenants"
    );
    assert_eq!(
        after.timers, kept.timers,
        "the kept subjects keep their timers"
    );
    assert_eq!(after.live, kept.live, "and their live counts");
    assert_eq!(kept.live, 2, "e-open and e-anchored");

    assert_eq!(
        store.purge(at(100)).await.expect("purge again"),
        PurgeReport::default(),
        "nothing more to forget"
    );

    // The id index forgot e-sat: raising it again is a new expectation (docs/interpretation.md).
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    watcher
        .apply(
            &a,
            &raise(
                "task-sat-2",
                vec![expectation(
                    "e-sat",
                    "shipment.manifest",
                    "PA-SAT",
                    "k-sat",
                    at(2000),
                    None,
                )],
            ),
            at(1500),
        )
        .await
        .expect("raise the purged id again");
    let again = store
        .subject(&a, &shipment("PA-SAT"))
        .await
        .expect("subject")
        .expect("PA-SAT is stored again");
    assert_eq!(again.version, 1, "a fresh subject");
    assert_eq!(again.records.len(), 1);
    assert_eq!(again.records[0].status, Status::Open);
    assert_eq!(again.records[0].raised_at, at(1500));
}

/// For a store whose backend expires items itself (DynamoDB's TTL): `purge` answers an empty
/// report and deletes nothing, whatever `before`.
pub async fn purge_leaves_retention_to_ttl<S: Store + 'static>(store: Arc<S>) {
    store_retention_fixture(&store).await;
    let origins = follow_old_and_new_origins(&store).await;
    let kept = observe(&store).await;
    let report = store.purge(at(100_000)).await.expect("purge");
    assert!(report.is_empty(), "{report:?}");
    assert_eq!(
        followed_origins(&store, &origins).await,
        ["task-old", "task-new"],
        "followed origins are left to the TTL too"
    );
    assert_eq!(observe(&store).await, kept, "nothing was deleted");
}

// ---------------------------------------------------------------------------------------------
// Flat cost and pages (issue 10).

/// `n` lapse tasks of tenant `t`, alternating between agents `booking` and `billing`, each with
/// its own lapse task id `task-{i}`, lapsed one second apart from [`t0`]; the entry `i` is
/// `lapse:{prefix}{i}`.
fn numbered_entries(t: &Tenant, prefix: &str, from: usize, n: usize) -> Vec<OutboxEntry> {
    (from..from + n)
        .map(|i| {
            let when = t0().plus(IsoDuration::parse(&format!("PT{i}S")).expect("a duration"));
            let mut o = outbox_entry(t, &format!("lapse:{prefix}{i}"), when);
            if i % 2 == 1 {
                o.agent = agent("billing");
            }
            o.task_id = Some(format!("task-{prefix}{i}"));
            o
        })
        .collect()
}

/// Commits `entries` in commits of at most 40: a DynamoDB transaction takes at most 100 items,
/// and a lapse task may write more than one (its item and its agent's counter).
async fn commit_outbox<S: Store + ?Sized>(store: &S, t: &Tenant, entries: Vec<OutboxEntry>) {
    for chunk in entries.chunks(40) {
        store
            .commit(
                t,
                Commit {
                    outbox: chunk.to_vec(),
                    ..Commit::default()
                },
            )
            .await
            .expect("commit lapse tasks");
    }
}

/// Every page of `query` from the start, following `next`; panics after `max_pages`.
async fn all_pages<S: Store + ?Sized>(
    store: &S,
    t: &Tenant,
    mut query: LapseQuery,
    max_pages: usize,
) -> (Vec<OutboxEntry>, usize) {
    let mut got = Vec::new();
    let mut pages = 0;
    loop {
        let page = store.lapses_page(t, &query).await.expect("lapses_page");
        pages += 1;
        assert!(
            page.entries.len() <= query.limit,
            "a page holds at most `limit` ({}) entries, got {}",
            query.limit,
            page.entries.len()
        );
        got.extend(page.entries.into_iter().map(|(_, o)| o));
        match page.next {
            Some(next) => query.after = Some(next),
            None => return (got, pages),
        }
        assert!(
            pages < max_pages,
            "more than {max_pages} pages: `next` never ends"
        );
    }
}

fn ids(entries: &[OutboxEntry]) -> Vec<String> {
    entries.iter().map(|o| o.message_id.clone()).collect()
}

/// `outbox_by_task` finds a lapse task by (tenant, agent, taskId) — set when it was queued or
/// later by `outbox_update` — and never another agent's or tenant's entry with the same task id.
pub async fn outbox_by_task_id<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let mut queued = outbox_entry(&a, "lapse:1", t0());
    queued.task_id = Some("task-x".into());
    let mut billing = outbox_entry(&a, "lapse:2", t0());
    billing.agent = agent("billing");
    billing.task_id = Some("task-x".into());
    let mut other_tenant = outbox_entry(&b, "lapse:1", t0());
    other_tenant.task_id = Some("task-x".into());
    let later = outbox_entry(&a, "lapse:3", t0());
    store
        .commit(
            &a,
            Commit {
                outbox: vec![queued.clone(), billing.clone(), later.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("commit");
    store
        .commit(
            &b,
            Commit {
                outbox: vec![other_tenant],
                ..Commit::default()
            },
        )
        .await
        .expect("commit");
    let found = |t: Tenant, who: &'static str, task: &'static str| {
        let store = Arc::clone(&store);
        async move {
            ids(&store
                .outbox_by_task(&t, &agent(who), task)
                .await
                .expect("outbox_by_task"))
        }
    };
    assert_eq!(found(a.clone(), "booking", "task-x").await, ["lapse:1"]);
    assert_eq!(found(a.clone(), "billing", "task-x").await, ["lapse:2"]);
    assert_eq!(found(b.clone(), "booking", "task-x").await, ["lapse:1"]);
    assert!(found(a.clone(), "booking", "task-y").await.is_empty());

    // The agent answers lapse:3 with a Task: its id is found from then on; lapse:1 moves to
    // another task id and is no longer found under the old one.
    let mut answered = later.clone();
    answered.task_id = Some("task-y".into());
    answered.delivery = DeliveryState::Sent;
    store.outbox_update(&answered).await.expect("update");
    let mut moved = queued.clone();
    moved.task_id = Some("task-z".into());
    store.outbox_update(&moved).await.expect("update");
    assert_eq!(found(a.clone(), "booking", "task-y").await, ["lapse:3"]);
    assert_eq!(found(a.clone(), "booking", "task-z").await, ["lapse:1"]);
    assert!(
        found(a.clone(), "booking", "task-x").await.is_empty(),
        "an entry whose task id changed is not found under the old one"
    );
    let got = store
        .outbox_by_task(&a, &agent("booking"), "task-y")
        .await
        .expect("outbox_by_task");
    assert_eq!(got, vec![answered], "the entry comes back whole");
}

/// The lapse task's task state kept in the outbox never goes back, whichever of its writers
/// lands last (`crate::task_progress`): `outbox_task_state` (a push) changes only the task
/// fields and takes a task id the entry does not have yet; `outbox_update` (the delivery's
/// answer, written from a copy read before the push) keeps a further state pushed meanwhile; a
/// terminal state is final; another task id is left alone. Then a race: pushes of every state
/// and stale answers written at once end on the terminal state, with the delivery's fields.
pub async fn lapse_task_state_never_goes_back<S: Store + 'static>(store: Arc<S>) {
    use a2a_types::TaskState;
    let t = tenant("tenant-a");
    let booking = agent("booking");
    let mut queued = outbox_entry(&t, "lapse:1", t0());
    queued.attempt_started_at = Some(t0());
    store
        .commit(
            &t,
            Commit {
                outbox: vec![queued.clone(), outbox_entry(&t, "lapse:2", t0())],
                ..Commit::default()
            },
        )
        .await
        .expect("commit");
    let stored = |id: &'static str| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        async move {
            store
                .outbox_get(&t, &booking, id)
                .await
                .expect("outbox_get")
                .expect("stored")
        }
    };
    let push = |id: &'static str, task: &'static str, state: TaskState| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        async move {
            store
                .outbox_task_state(&t, &booking, id, task, state)
                .await
                .expect("outbox_task_state")
        }
    };

    // The pushed Task beats the answer: its id and state are recorded, nothing else changes.
    let written = push("lapse:1", "task-9", TaskState::Working).await;
    let now = stored("lapse:1").await;
    assert_eq!(
        written.as_ref(),
        Some(&now),
        "the entry as written is answered"
    );
    assert_eq!(
        (now.task_id.as_deref(), now.task_state.as_deref()),
        (Some("task-9"), Some("TASK_STATE_WORKING"))
    );
    assert_eq!(
        OutboxEntry {
            task_id: None,
            task_state: None,
            ..now.clone()
        },
        queued,
        "a push changes only the task fields (delivery, attempts, attempt under way kept)"
    );
    assert_eq!(
        ids(&store
            .outbox_by_task(&t, &booking, "task-9")
            .await
            .expect("outbox_by_task")),
        ["lapse:1"],
        "a task id recorded by a push is found by it"
    );

    // The answer (SUBMITTED), recorded from the copy read before the push: the delivery fields
    // are the answer's, the pushed state is kept.
    let mut answered = queued.clone();
    answered.delivery = DeliveryState::Sent;
    answered.attempts = 1;
    answered.attempt_started_at = None;
    answered.task_id = Some("task-9".into());
    answered.task_state = Some("TASK_STATE_SUBMITTED".into());
    store.outbox_update(&answered).await.expect("update");
    let now = stored("lapse:1").await;
    assert_eq!(now.delivery, DeliveryState::Sent);
    assert_eq!((now.attempts, now.attempt_started_at), (1, None));
    assert_eq!(now.task_state.as_deref(), Some("TASK_STATE_WORKING"));

    // The terminal push; then a late push of an earlier state, a stale answer, another task.
    assert!(push("lapse:1", "task-9", TaskState::Completed)
        .await
        .is_some());
    assert_eq!(push("lapse:1", "task-9", TaskState::Working).await, None);
    store.outbox_update(&answered).await.expect("update");
    assert_eq!(push("lapse:1", "task-other", TaskState::Failed).await, None);
    let now = stored("lapse:1").await;
    assert_eq!(now.task_id.as_deref(), Some("task-9"));
    assert_eq!(
        now.task_state.as_deref(),
        Some("TASK_STATE_COMPLETED"),
        "a terminal state is final"
    );
    assert_eq!(
        push("lapse:missing", "task-9", TaskState::Working).await,
        None,
        "never inserts"
    );

    // The race, on lapse:2: fifteen writers at once, in no particular order (a store that
    // retries a lost compare-and-set gives up after more tries than that: each lost try means
    // another writer's one write landed).
    let mut tasks = Vec::new();
    for round in 0..3u32 {
        for state in [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed,
            TaskState::Working,
        ] {
            let store = Arc::clone(&store);
            let (t, booking) = (t.clone(), booking.clone());
            tasks.push(tokio::spawn(async move {
                store
                    .outbox_task_state(&t, &booking, "lapse:2", "task-race", state)
                    .await
                    .map(|_| ())
            }));
        }
        let mut stale = outbox_entry(&t, "lapse:2", t0());
        stale.delivery = DeliveryState::Sent;
        stale.attempts = round + 1;
        stale.task_id = Some("task-race".into());
        stale.task_state = Some("TASK_STATE_SUBMITTED".into());
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(
            async move { store.outbox_update(&stale).await },
        ));
    }
    for task in tasks {
        task.await.expect("no panic").expect("each write succeeds");
    }
    let now = stored("lapse:2").await;
    assert_eq!(now.delivery, DeliveryState::Sent);
    assert_eq!(now.task_id.as_deref(), Some("task-race"));
    assert_eq!(now.task_state.as_deref(), Some("TASK_STATE_COMPLETED"));
}

/// `lapses_page` pages through 500 lapse tasks (a size the DynamoDB emulator pages through in seconds;
/// `shared/watcher-http/tests/pagination.rs` pages 2,500): each exactly once, in order of lapse, at most
/// `limit` per page, ending with no `next`; with the `agent`, `delivery` and `since` filters
/// every page holds only matching entries and together exactly the matching ones; other
/// tenants' entries never appear.
pub async fn lapses_are_paged<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let entries = numbered_entries(&a, "", 0, 500);
    commit_outbox(&*store, &a, entries.clone()).await;
    commit_outbox(&*store, &b, numbered_entries(&b, "b", 0, 30)).await;
    // Every 7th entry was delivered.
    let mut expected = entries.clone();
    for o in expected.iter_mut().step_by(7) {
        o.delivery = DeliveryState::Sent;
        store.outbox_update(o).await.expect("update");
    }

    let query = |limit: usize| LapseQuery {
        limit,
        ..LapseQuery::default()
    };
    let (got, pages) = all_pages(&*store, &a, query(20), 100).await;
    assert_eq!(
        ids(&got),
        ids(&expected),
        "each lapse task exactly once, in order"
    );
    assert_eq!(got, expected, "entries come back whole");
    assert!(
        (25..=26).contains(&pages),
        "500 at 20 a page: {pages} pages"
    );

    let (got, _) = all_pages(&*store, &a, query(200), 10).await;
    assert_eq!(ids(&got), ids(&expected));
    let (got, pages) = all_pages(&*store, &a, query(600), 10).await;
    assert_eq!(ids(&got), ids(&expected));
    assert_eq!(pages, 1, "everything fits one page of 600");

    let filtered = |q: &LapseQuery| -> Vec<String> {
        ids(&expected
            .iter()
            .filter(|o| q.matches(o))
            .cloned()
            .collect::<Vec<_>>())
    };
    let mut by_agent = query(20);
    by_agent.agent = Some(agent("billing"));
    let (got, _) = all_pages(&*store, &a, by_agent.clone(), 100).await;
    assert_eq!(ids(&got), filtered(&by_agent));
    assert_eq!(got.len(), 250);

    let mut sent = query(10);
    sent.delivery = Some(DeliveryState::Sent);
    let (got, _) = all_pages(&*store, &a, sent.clone(), 100).await;
    assert_eq!(ids(&got), filtered(&sent));
    assert_eq!(got.len(), 72);

    let mut since = query(20);
    since.since = Some(t0().plus(IsoDuration::parse("PT400S").expect("a duration")));
    since.agent = Some(agent("booking"));
    since.delivery = Some(DeliveryState::Queued);
    let (got, _) = all_pages(&*store, &a, since.clone(), 100).await;
    assert_eq!(ids(&got), filtered(&since));
    assert!(!got.is_empty());

    let (got, _) = all_pages(&*store, &b, query(7), 10).await;
    assert_eq!(got.len(), 30, "tenant-b sees its 30 lapse tasks only");
    let none = store
        .lapses_page(&tenant("tenant-c"), &query(10))
        .await
        .expect("lapses_page");
    assert_eq!(
        none,
        LapsePage::default(),
        "an empty tenant: no entries, no next"
    );
}

/// Grows tenant `t`'s record to `to` open expectations of agent `booking` (one subject each,
/// from `from`) and as many lapse tasks, in commits of 1,000.
async fn grow<S: Store + ?Sized>(store: &S, t: &Tenant, from: usize, to: usize) {
    let mut i = from;
    while i < to {
        let end = (i + 1000).min(to);
        let subjects = (i..end)
            .map(|k| subject_with_record(t, &format!("FILL-{k}"), &format!("fill-{k}"), k as u64))
            .collect();
        store
            .commit(
                t,
                Commit {
                    subjects,
                    ..Commit::default()
                },
            )
            .await
            .expect("commit filler subjects");
        commit_outbox(store, t, numbered_entries(t, "fill-", i, end - i)).await;
        i = end;
    }
}

/// The work (`Store::work_done`) of one round of request steps at the current size: a push
/// raising one expectation on a new subject (live count, load, commit), a fact satisfying it,
/// a status-update lookup by task id, and the first and a middle page of `GET /v1/lapses`.
async fn one_round<S: Store + 'static>(store: &Arc<S>, t: &Tenant, round: usize) -> Vec<u64> {
    let watcher = Watcher::new(Arc::clone(store), Directory::new(), Settings::default());
    let work = || store.work_done().expect("counted");
    let subject = format!("NEW-{round}");
    let key = format!("manifest:new-{round}");
    let mut costs = Vec::new();

    let before = work();
    let applied = watcher
        .apply(
            t,
            &raise(
                &format!("task-new-{round}"),
                vec![expectation(
                    &format!("new-{round}"),
                    "shipment.manifest",
                    &subject,
                    &key,
                    at(60),
                    Some(at(180)),
                )],
            ),
            t0(),
        )
        .await
        .expect("raise");
    assert!(
        applied
            .effects
            .iter()
            .any(|e| matches!(e, watcher_core::engine::Effect::Raised { .. })),
        "the push raises its expectation: {:?}",
        applied.effects
    );
    costs.push(work() - before);

    let before = work();
    watcher
        .apply(
            t,
            &Input::Facts(vec![ReportedFact {
                fact_key: fact_key(&key),
                observed_at: at(5),
                observed_at_given: None,
                mapping: None,
                subject: Some(shipment(&subject)),
                source: source(),
            }]),
            at(5),
        )
        .await
        .expect("fact");
    costs.push(work() - before);

    let before = work();
    let found = store
        .outbox_by_task(t, &agent("booking"), "task-fill-500")
        .await
        .expect("outbox_by_task");
    assert_eq!(ids(&found), ["lapse:fill-500"]);
    costs.push(work() - before);

    let mut query = LapseQuery {
        limit: 100,
        ..LapseQuery::default()
    };
    let before = work();
    let page = store.lapses_page(t, &query).await.expect("page");
    costs.push(work() - before);
    query.after = page.next;
    query.agent = Some(agent("billing"));
    let before = work();
    let page = store.lapses_page(t, &query).await.expect("page");
    assert_eq!(page.entries.len(), 100);
    assert!(page
        .entries
        .iter()
        .all(|(_, o)| o.agent == agent("billing")));
    costs.push(work() - before);
    costs
}

/// No step reads more than it must (issue 10): the work a store counts (`Store::work_done`:
/// records, index entries or SQLite instructions) for a push raising one expectation, a fact, a
/// status-update lookup by task id and a page of lapse tasks is about the same at 1,000 and at
/// 10,000 open expectations and lapse tasks of the same agent (at most twice, plus a little; a
/// read of every open expectation or lapse task would cost ten times as much). Not timing.
/// A store that does not count its work (`work_done` is `None`) is not checked here.
pub async fn steps_read_what_they_must<S: Store + 'static>(store: Arc<S>) {
    if store.work_done().is_none() {
        eprintln!("steps_read_what_they_must: this store does not count its work; not checked");
        return;
    }
    let t = tenant("tenant-a");
    grow(&*store, &t, 0, 1_000).await;
    let small = one_round(&store, &t, 0).await;
    grow(&*store, &t, 1_000, 10_000).await;
    let large = one_round(&store, &t, 1).await;
    let names = [
        "push",
        "fact",
        "status update",
        "first page",
        "agent's page",
    ];
    for ((name, s), l) in names.iter().zip(&small).zip(&large) {
        assert!(
            *l <= 2 * s + 20,
            "{name}: work {l} at 10,000 open vs {s} at 1,000: it reads what grows with the record"
        );
    }
}

/// Follows two origin tasks of `booking`, since [`t0`] and since `at(200)`; answers the key
/// (tenant, agent) they are followed under.
async fn follow_old_and_new_origins<S: Store + 'static>(store: &Arc<S>) -> (Tenant, AgentId) {
    let t = Tenant::default_tenant();
    let booking = AgentId::parse("booking").expect("agent");
    for (task, since) in [("task-old", t0()), ("task-new", at(200))] {
        let origin = crate::origins::FollowedOrigin {
            tenant: t.clone(),
            agent: booking.clone(),
            task_id: task.to_owned(),
            since,
            next_at: at(300),
        };
        store.origin_follow(&origin).await.expect("origin_follow");
    }
    (t, booking)
}

/// The task ids of the origins followed under `key`, in due order (next poll, then id).
async fn followed_origins<S: Store + 'static>(
    store: &Arc<S>,
    (t, agent): &(Tenant, AgentId),
) -> Vec<String> {
    let mut ids: Vec<String> = store
        .origins_due(t, agent, at(1_000_000), 10)
        .await
        .expect("origins_due")
        .into_iter()
        .map(|o| o.task_id)
        .collect();
    ids.sort_by_key(|id| id != "task-old");
    ids
}

/// `origin_follow`, `origins_due`, `origin_reschedule`, `origin_stop`: origin tasks followed in
/// the store come back per (tenant, agent), due by the instant given, earliest next poll first,
/// at most `limit`; following a followed task keeps its schedule; a rescheduled task moves; a
/// stopped one is gone.
pub async fn origins_followed_by_next_poll<S: Store + 'static>(store: Arc<S>) {
    use crate::origins::FollowedOrigin;
    let t = Tenant::default_tenant();
    let other_tenant = Tenant::parse("acme").expect("tenant");
    let booking = AgentId::parse("booking").expect("agent");
    let other = AgentId::parse("other").expect("agent");
    let origin = |tenant: &Tenant, agent: &AgentId, task: &str, next: u32| FollowedOrigin {
        tenant: tenant.clone(),
        agent: agent.clone(),
        task_id: task.to_owned(),
        since: t0(),
        next_at: at(next),
    };
    for (o, added) in [
        (origin(&t, &booking, "task-late", 20), true),
        (origin(&t, &booking, "task-early", 10), true),
        (origin(&t, &booking, "task-early", 1), false),
        (origin(&t, &other, "task-other", 1), true),
        (origin(&other_tenant, &booking, "task-acme", 1), true),
    ] {
        assert_eq!(
            store.origin_follow(&o).await.expect("origin_follow"),
            added,
            "origin_follow answers whether {} was added",
            o.task_id
        );
    }
    let due = |by: u32, limit: usize| {
        let (store, t, booking) = (store.clone(), t.clone(), booking.clone());
        async move {
            store
                .origins_due(&t, &booking, at(by), limit)
                .await
                .expect("origins_due")
                .into_iter()
                .map(|o| (o.task_id, o.next_at))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(due(5, 10).await, vec![], "nothing of booking is due at 5");
    assert_eq!(
        due(10, 10).await,
        vec![("task-early".to_owned(), at(10))],
        "a task already followed keeps its schedule; only booking's, only the default tenant's"
    );
    assert_eq!(
        due(30, 10).await,
        vec![
            ("task-early".to_owned(), at(10)),
            ("task-late".to_owned(), at(20))
        ],
        "earliest next poll first"
    );
    assert_eq!(due(30, 1).await.len(), 1, "at most limit");
    let early = (t.clone(), booking.clone(), "task-early".to_owned());
    store
        .origin_reschedule(&early, at(25))
        .await
        .expect("origin_reschedule");
    assert_eq!(
        due(30, 10).await,
        vec![
            ("task-late".to_owned(), at(20)),
            ("task-early".to_owned(), at(25))
        ],
        "a rescheduled task moves"
    );
    let kept = store
        .origins_due(&t, &booking, at(30), 10)
        .await
        .expect("origins_due");
    assert_eq!(kept[1].since, t0(), "since is kept");
    store.origin_stop(&early).await.expect("origin_stop");
    store
        .origin_stop(&(t.clone(), booking.clone(), "never-followed".to_owned()))
        .await
        .expect("stopping an origin not followed is nothing");
    assert_eq!(due(30, 10).await, vec![("task-late".to_owned(), at(20))]);
    store
        .origin_reschedule(&early, at(1))
        .await
        .expect("rescheduling an origin not followed is nothing");
    assert_eq!(due(30, 10).await, vec![("task-late".to_owned(), at(20))]);
    let acme = store
        .origins_due(&other_tenant, &booking, at(30), 10)
        .await
        .expect("origins_due");
    assert_eq!(acme.len(), 1, "tenants are apart");
    assert!(
        store
            .origin_follow(&origin(&t, &booking, "task-early", 15))
            .await
            .expect("origin_follow"),
        "a stopped task may be followed again"
    );
    assert_eq!(
        due(30, 10).await,
        vec![
            ("task-early".to_owned(), at(15)),
            ("task-late".to_owned(), at(20))
        ]
    );
}
