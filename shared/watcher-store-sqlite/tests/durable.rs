//! What only a file-backed SQLite store has to show: the record survives a reopen, the file is
//! in WAL mode at the current schema version, several connections to one file never lose an
//! update, and bad stored data or a newer schema is reported, not panicked on.

use std::path::Path;
use std::sync::Arc;

use serde_json::json;
use watcher_core::engine::{Rejection, TimerKind};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, ExpectationId, Subject, TaskId, TaskRef, Tenant};
use watcher_core::record::{
    AnchorState, ExpectationRecord, LapseKind, RaiseOrder, RaisedBy, Status,
};
use watcher_core::slice::{Scope, SubjectState, TaskRecord};
use watcher_core::time::Instant;
use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry, Store, StoreError};
use watcher_store_sqlite::schema::SCHEMA_VERSION;
use watcher_store_sqlite::SqliteStore;

fn instant(text: &str) -> Instant {
    Instant::parse(text).unwrap()
}

fn tenant() -> Tenant {
    Tenant::parse("tenant-a").unwrap()
}

fn agent() -> AgentId {
    AgentId::parse("booking").unwrap()
}

fn subject(id: &str) -> Subject {
    Subject::parse("shipment", id).unwrap()
}

fn record(
    id: &str,
    subject_id: &str,
    due: &str,
    horizon: Option<&str>,
    input: u64,
) -> ExpectationRecord {
    let mut v = json!({
        "expectationId": id,
        "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": subject_id },
        "expects": "the airline manifest",
        "satisfiedBy": { "factKey": format!("manifest:{subject_id}") },
        "dueAt": due,
        "basis": "observed",
    });
    if let Some(h) = horizon {
        v["horizon"] = json!(h);
    }
    let e = Expectation::from_json(&v).unwrap();
    ExpectationRecord {
        due_at: e.due_at,
        expectation: e,
        agent: agent(),
        tenant: tenant(),
        status: Status::Open,
        lineage: 0,
        raised_at: instant("2026-09-10T12:00:00Z"),
        raised_by: RaisedBy {
            task_id: TaskId::parse("task-1").unwrap(),
            context_id: None,
        },
        satisfaction: None,
        lapses: Vec::new(),
        withdrawal: None,
        superseded_by: None,
        order: RaiseOrder { input, index: 0 },
        anchor_state: AnchorState::Unanchored,
        horizon_checked: false,
        question_at: None,
    }
}

fn state_with(records: Vec<ExpectationRecord>, subject_id: &str) -> SubjectState {
    let mut s = SubjectState::new(subject(subject_id));
    s.records = records;
    s
}

fn entry(message_id: &str) -> OutboxEntry {
    OutboxEntry {
        tenant: tenant(),
        agent: agent(),
        message_id: message_id.into(),
        expectation_id: ExpectationId::parse("exp-1").unwrap(),
        lapse: LapseKind::Overdue,
        lapsed_at: instant("2026-09-10T13:00:00Z"),
        request: json!({ "message": { "messageId": message_id } }),
        delivery: DeliveryState::Queued,
        attempts: 0,
        next_attempt_at: instant("2026-09-10T13:00:00Z"),
        task_id: None,
        task_state: None,
        answered_with_message: false,
        last_error: None,
    }
}

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

#[tokio::test]
async fn the_record_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let t = tenant();
    let state = state_with(
        vec![record(
            "exp-1",
            "PA-1",
            "2026-09-10T13:00:00Z",
            Some("2026-09-10T15:00:00Z"),
            1,
        )],
        "PA-1",
    );
    let task = TaskRef {
        agent: agent(),
        task_id: TaskId::parse("task-1").unwrap(),
    };
    let rejection = Rejection {
        agent: agent(),
        expectation_id: Some("exp-0".into()),
        reason: "field `kind`: not declared".into(),
        task_id: Some(TaskId::parse("task-1").unwrap()),
        at: instant("2026-09-10T12:00:00Z"),
    };
    let (timers, seq) = {
        let store = SqliteStore::open(&path).unwrap();
        store
            .commit(
                &t,
                Commit {
                    subjects: vec![state.clone()],
                    tasks: vec![TaskRecord::new(task.clone())],
                    outbox: vec![entry("lapse:exp-1:overdue:x")],
                    rejections: vec![rejection.clone()],
                },
            )
            .await
            .unwrap();
        let mut seq = 0;
        for _ in 0..3 {
            seq = store.next_sequence().await.unwrap();
        }
        (
            store
                .due_timers(instant("2100-01-01T00:00:00Z"), 10)
                .await
                .unwrap(),
            seq,
        )
    }; // dropped: the connection closes

    let store = SqliteStore::open(&path).unwrap();
    let mut scope = Scope::default();
    scope.subjects.insert(subject("PA-1"));
    scope.tasks.insert(task.clone());
    scope.agents.insert(agent());
    let slice = store
        .load(&t, &scope, instant("2026-09-10T12:00:00Z"))
        .await
        .unwrap();
    assert_eq!(
        slice.subjects[&subject("PA-1")],
        SubjectState {
            version: 1,
            ..state
        }
    );
    assert_eq!(slice.tasks[&task].as_ref().map(|r| r.version), Some(1));
    assert_eq!(slice.agent_live[&agent()], 1);
    assert_eq!(timers.len(), 2);
    assert_eq!(
        store
            .due_timers(instant("2100-01-01T00:00:00Z"), 10)
            .await
            .unwrap(),
        timers,
        "timers survive"
    );
    assert_eq!(
        store.outbox_get(&t, "lapse:exp-1:overdue:x").await.unwrap(),
        Some(entry("lapse:exp-1:overdue:x")),
        "a queued lapse task survives"
    );
    assert_eq!(
        store.rejections(&t, &agent()).await.unwrap(),
        vec![rejection]
    );
    assert!(
        store.next_sequence().await.unwrap() > seq,
        "the sequence continues after a reopen"
    );
}

#[tokio::test]
async fn the_file_is_wal_at_the_current_schema_version() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    drop(SqliteStore::open(&path).unwrap());
    drop(SqliteStore::open(&path).unwrap()); // opening again is idempotent
    let conn = raw(&path);
    let mode: String = conn
        .query_row("PRAGMA journal_mode", [], |r| r.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
}

#[tokio::test]
async fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    drop(SqliteStore::open(&path).unwrap());
    raw(&path)
        .pragma_update(None, "user_version", SCHEMA_VERSION + 1)
        .unwrap();
    match SqliteStore::open(&path) {
        Err(StoreError::Corrupt(why)) => assert!(why.contains("newer"), "{why}"),
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[tokio::test]
async fn a_missing_directory_is_a_backend_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("watcher.db");
    match SqliteStore::open(&path) {
        Err(StoreError::Backend(source)) => assert!(!source.to_string().is_empty()),
        other => panic!("expected Backend, got {other:?}"),
    }
}

#[tokio::test]
async fn corrupt_rows_are_reported_not_panicked_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let store = SqliteStore::open(&path).unwrap();
    let t = tenant();
    store
        .commit(
            &t,
            Commit {
                subjects: vec![state_with(
                    vec![record("exp-1", "PA-1", "2026-09-10T13:00:00Z", None, 1)],
                    "PA-1",
                )],
                outbox: vec![entry("lapse:1")],
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let conn = raw(&path);
    conn.execute("UPDATE subjects SET state = '{\"not\": \"a subject\"}'", [])
        .unwrap();
    conn.execute("UPDATE outbox SET entry = 'not json'", [])
        .unwrap();
    conn.execute("UPDATE timers SET at_key = '0'", []).unwrap();
    let mut scope = Scope::default();
    scope.subjects.insert(subject("PA-1"));
    let corrupt = |r: Result<(), StoreError>, what: &str| match r {
        Err(StoreError::Corrupt(_)) => {}
        other => panic!("{what}: expected Corrupt, got {other:?}"),
    };
    corrupt(
        store
            .load(&t, &scope, instant("2026-09-10T12:00:00Z"))
            .await
            .map(drop),
        "load",
    );
    corrupt(
        store.subject(&t, &subject("PA-1")).await.map(drop),
        "subject",
    );
    corrupt(store.all_records().await.map(drop), "all_records");
    corrupt(store.lapses(&t).await.map(drop), "lapses");
    corrupt(
        store.outbox_get(&t, "lapse:1").await.map(drop),
        "outbox_get",
    );
    corrupt(store.next_timer().await.map(drop), "next_timer");
}

#[tokio::test]
async fn instants_beyond_2262_are_kept_and_ordered() {
    let store = SqliteStore::memory().unwrap();
    let t = tenant();
    let state = state_with(
        vec![
            record(
                "far",
                "PA-1",
                "2300-01-01T00:00:00Z",
                Some("9999-12-30T00:00:00Z"),
                1,
            ),
            record("near", "PA-1", "2026-09-10T13:00:00Z", None, 2),
            record("past", "PA-1", "1600-01-01T00:00:00Z", None, 3),
        ],
        "PA-1",
    );
    store
        .commit(
            &t,
            Commit {
                subjects: vec![state.clone()],
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let due = store
        .due_timers(instant("9999-12-30T00:00:00Z"), 10)
        .await
        .unwrap();
    let got: Vec<(String, &str, TimerKind)> = due
        .iter()
        .map(|d| (d.at.to_string(), d.key.expectation.id.as_str(), d.key.kind))
        .collect();
    assert_eq!(
        got,
        vec![
            ("1600-01-01T00:00:00Z".into(), "past", TimerKind::Deadline),
            ("2026-09-10T13:00:00Z".into(), "near", TimerKind::Deadline),
            ("2300-01-01T00:00:00Z".into(), "far", TimerKind::Deadline),
            ("9999-12-30T00:00:00Z".into(), "far", TimerKind::Horizon),
        ]
    );
    let mut scope = Scope::default();
    scope.agents.insert(agent());
    let live = store
        .load(&t, &scope, instant("2500-01-01T00:00:00Z"))
        .await
        .unwrap()
        .agent_live[&agent()];
    assert_eq!(live, 1, "only `far` (horizon 9999) is live in 2500");
    assert_eq!(
        store.subject(&t, &subject("PA-1")).await.unwrap(),
        Some(SubjectState {
            version: 1,
            ..state
        })
    );
}

/// Two stores (two connections) on one file: `BEGIN IMMEDIATE` and the version check inside the
/// transaction keep every update, with writers on both.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn two_connections_on_one_file_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let a = Arc::new(SqliteStore::open(&path).unwrap());
    let b = Arc::new(SqliteStore::open(&path).unwrap());
    watcher_runtime::conformance::concurrent_writers_across(vec![a, b]).await;
}
