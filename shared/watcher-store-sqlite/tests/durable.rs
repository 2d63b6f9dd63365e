//! What only a file-backed SQLite store has to show: the record survives a reopen, the file is
//! in WAL mode at the current schema version, a file of an older version is migrated with
//! nothing lost, several connections to one file never lose an update, and bad stored data or a
//! newer schema is reported, not panicked on.

use std::path::Path;
use std::sync::Arc;
use watcher_runtime::store::{
    Origins as _, Outbox as _, Records as _, Rejections as _, TimerIndex as _, Upkeep as _,
};

use serde_json::json;
use watcher_core::engine::{Rejection, TimerKind};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, ExpectationId, Subject, TaskId, TaskRef, Tenant};
use watcher_core::record::{
    AnchorState, ExpectationRecord, LapseKind, RaiseOrder, RaisedBy, Status,
};
use watcher_core::slice::{Scope, SubjectState, TaskRecord};
use watcher_core::time::Instant;
use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry, StoreError};
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
        question_timestamp: None,
        question_answered: false,
    }
}

fn state_with(records: Vec<ExpectationRecord>, subject_id: &str) -> SubjectState {
    let mut s = SubjectState::new(subject(subject_id));
    s.records = records;
    s
}

fn entry(message_id: &str) -> OutboxEntry {
    OutboxEntry::queued(
        tenant(),
        agent(),
        message_id.into(),
        ExpectationId::parse("exp-1").unwrap(),
        LapseKind::Overdue,
        instant("2026-09-10T13:00:00Z"),
        json!({ "message": { "messageId": message_id } }),
    )
}

fn fact(key: &str, subject_id: &str, received: &str) -> watcher_core::slice::FactEntry {
    let at = instant(received);
    watcher_core::slice::FactEntry {
        fact_key: watcher_core::ids::FactKey::parse(key).unwrap(),
        source: watcher_core::ids::Source::parse("carrier-feed:test").unwrap(),
        observed_at: at,
        claimed_observed_at: at,
        observed_at_given: None,
        mapping: None,
        received_at: at,
        subject: Some(subject(subject_id)),
        satisfied: Vec::new(),
    }
}

/// Commits `subjects` (each at the version it was loaded at) for tenant `t`, nothing else.
async fn commit_subjects(store: &SqliteStore, t: &Tenant, subjects: Vec<SubjectState>) {
    store
        .commit(
            t,
            Commit {
                subjects,
                ..Commit::default()
            },
        )
        .await
        .unwrap();
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
        warning: false,
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
        store
            .outbox_get(&t, &agent(), "lapse:exp-1:overdue:x")
            .await
            .unwrap(),
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

/// The version 1 schema, exactly as the first build wrote it.
const SCHEMA_V1: &str = include_str!("fixtures/schema_v1.sql");

/// An instant as v1 stored it: `as_nanos() + 10^21`, 22 digits.
fn v1_instant_key(t: Instant) -> String {
    format!("{:022}", t.as_nanos() + 1_000_000_000_000_000_000_000)
}

/// Writes a version 1 file at `path` as the first build left it: the v1 tables, a subject, and
/// outbox rows with `seq` 1 and 2 (a third row, seq 3, was deleted: the AUTOINCREMENT
/// high-water mark is 3, above the largest `seq` stored).
fn write_v1_file(path: &Path, subject_state: &SubjectState, rows: &[&OutboxEntry]) {
    let conn = raw(path);
    conn.pragma_update(None, "journal_mode", "WAL").unwrap();
    conn.execute_batch(SCHEMA_V1).unwrap();
    conn.pragma_update(None, "user_version", 1).unwrap();
    conn.execute(
        "INSERT INTO subjects (tenant, subject_type, subject_id, version, state)
         VALUES (?1, ?2, ?3, ?4, ?5)",
        rusqlite::params![
            tenant().as_str(),
            subject_state.subject.subject_type,
            subject_state.subject.id,
            subject_state.version as i64,
            serde_json::to_string(subject_state).unwrap()
        ],
    )
    .unwrap();
    let mut gone = entry("lapse:gone");
    gone.agent = AgentId::parse("someone").unwrap();
    for o in rows.iter().copied().chain([&gone]) {
        conn.execute(
            "INSERT INTO outbox (tenant, message_id, agent, delivery, next_attempt, entry)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            rusqlite::params![
                o.tenant.as_str(),
                o.message_id,
                o.agent.as_str(),
                o.delivery.as_str(),
                v1_instant_key(o.next_attempt_at),
                serde_json::to_string(o).unwrap()
            ],
        )
        .unwrap();
    }
    conn.execute("DELETE FROM outbox WHERE message_id = 'lapse:gone'", [])
        .unwrap();
    // The v1 uniqueness: one row per (tenant, messageId), whatever the agent.
    let mut other = entry("lapse:exp-1:overdue:x");
    other.agent = AgentId::parse("other").unwrap();
    assert!(
        conn.execute(
            "INSERT INTO outbox (tenant, message_id, agent, delivery, next_attempt, entry)
             VALUES (?1, ?2, ?3, 'queued', 'x', '{}')",
            rusqlite::params![
                other.tenant.as_str(),
                other.message_id,
                other.agent.as_str()
            ],
        )
        .is_err(),
        "the fixture is the v1 schema: UNIQUE (tenant, message_id)"
    );
}

/// A version 1 file (outbox UNIQUE (tenant, message_id)) is migrated on opening: the outbox is
/// rebuilt UNIQUE (tenant, agent, message_id) with every row, its `seq` order and its
/// AUTOINCREMENT high-water mark kept; the other tables are untouched; the version becomes
/// [`SCHEMA_VERSION`]; opening again changes nothing.
#[tokio::test]
async fn a_version_1_file_is_migrated() {
    assert_eq!(
        SCHEMA_VERSION, 7,
        "this test migrates from version 1 through 2, 3, 4, 5 and 6 to the current one"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let t = tenant();
    let mut state = state_with(
        vec![record("exp-1", "PA-1", "2026-09-10T13:00:00Z", None, 1)],
        "PA-1",
    );
    state.version = 1;
    let queued = entry("lapse:exp-1:overdue:x");
    let mut sent = entry("lapse:exp-2:overdue:x");
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    sent.task_id = Some("task-7".into());
    write_v1_file(&path, &state, &[&queued, &sent]);

    let store = SqliteStore::open(&path).unwrap();
    let conn = raw(&path);
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let tables: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE name LIKE 'outbox%' ORDER BY name")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        tables,
        [
            "outbox",
            "outbox_agent",
            "outbox_agent_seq",
            "outbox_due",
            "outbox_follow",
            "outbox_task",
            "outbox_tenant"
        ],
        "the v1 table is gone; the new one has its indexes"
    );
    let ddl: String = conn
        .query_row(
            "SELECT sql FROM sqlite_master WHERE name = 'outbox'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(ddl.contains("UNIQUE (tenant, agent, message_id)"), "{ddl}");

    // Everything is still there, found under its agent.
    assert_eq!(
        store.subject(&t, &subject("PA-1")).await.unwrap(),
        Some(state)
    );
    assert_eq!(
        store
            .outbox_get(&t, &agent(), &queued.message_id)
            .await
            .unwrap(),
        Some(queued.clone())
    );
    assert_eq!(
        store
            .outbox_get(&t, &agent(), &sent.message_id)
            .await
            .unwrap(),
        Some(sent.clone())
    );
    assert_eq!(
        store.lapses(&t).await.unwrap(),
        vec![queued.clone(), sent.clone()]
    );
    assert_eq!(
        store.outbox_due(queued.next_attempt_at, 10).await.unwrap(),
        vec![queued.clone()],
        "the due index works on the migrated rows"
    );
    assert_eq!(
        store.outbox_by_task(&t, &agent(), "task-7").await.unwrap(),
        vec![sent.clone()],
        "the task index holds the migrated rows' task ids"
    );

    // The same messageId for another agent is now another entry, after the old ones.
    let mut other = queued.clone();
    other.agent = AgentId::parse("other").unwrap();
    store
        .commit(
            &t,
            Commit {
                outbox: vec![other.clone()],
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(
        store
            .outbox_get(&t, &other.agent, &other.message_id)
            .await
            .unwrap(),
        Some(other.clone())
    );
    assert_eq!(
        store
            .outbox_get(&t, &agent(), &queued.message_id)
            .await
            .unwrap(),
        Some(queued.clone()),
        "booking's entry is left as it was"
    );
    assert_eq!(
        store.lapses(&t).await.unwrap(),
        vec![queued.clone(), sent.clone(), other.clone()]
    );
    let seqs: Vec<i64> = conn
        .prepare("SELECT seq FROM outbox ORDER BY seq")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        seqs,
        [1, 2, 4],
        "rows keep their seq; a new one comes after v1's high-water mark (3)"
    );
    drop(store);

    // Opening again migrates nothing and loses nothing.
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.lapses(&t).await.unwrap(), vec![queued, sent, other]);
}

/// The version 3 schema, exactly as the build before version 4 wrote it.
const SCHEMA_V3: &str = include_str!("fixtures/schema_v3.sql");

/// A version 3 file is migrated on opening: the outbox gains `task_id` and `lapsed_at`, filled
/// from every stored entry, and their indexes, so status updates find a lapse task by its task
/// id and pages filter by `since` on the old rows; nothing is lost; opening again changes nothing.
#[tokio::test]
async fn a_version_3_file_is_migrated() {
    assert_eq!(
        SCHEMA_VERSION, 7,
        "this test migrates from version 3 through 4, 5 and 6 to 7"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let t = tenant();
    let mut early = entry("lapse:exp-1:overdue:x");
    early.task_id = Some("task-1".into());
    early.delivery = DeliveryState::Sent;
    let mut late = entry("lapse:exp-2:overdue:x");
    late.lapsed_at = instant("2026-09-10T15:00:00Z");
    late.task_id = Some("task-2".into());
    let none = entry("lapse:exp-3:overdue:x");
    {
        let conn = raw(&path);
        conn.pragma_update(None, "journal_mode", "WAL").unwrap();
        conn.execute_batch(SCHEMA_V3).unwrap();
        conn.pragma_update(None, "user_version", 3).unwrap();
        for o in [&early, &late, &none] {
            conn.execute(
                "INSERT INTO outbox (tenant, message_id, agent, delivery, next_attempt, entry)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                rusqlite::params![
                    o.tenant.as_str(),
                    o.message_id,
                    o.agent.as_str(),
                    o.delivery.as_str(),
                    v1_instant_key(o.next_attempt_at),
                    serde_json::to_string(o).unwrap()
                ],
            )
            .unwrap();
        }
    }
    for _ in 0..2 {
        let store = SqliteStore::open(&path).unwrap();
        let version: i64 = raw(&path)
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        assert_eq!(
            store.outbox_by_task(&t, &agent(), "task-2").await.unwrap(),
            vec![late.clone()]
        );
        assert_eq!(
            store.outbox_by_task(&t, &agent(), "task-1").await.unwrap(),
            vec![early.clone()]
        );
        let page = store
            .lapses_page(
                &t,
                &watcher_runtime::store::LapseQuery {
                    since: Some(instant("2026-09-10T14:00:00Z")),
                    limit: 10,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let entries: Vec<OutboxEntry> = page.entries.into_iter().map(|(_, o)| o).collect();
        assert_eq!(
            entries,
            vec![late.clone()],
            "`since` reads the filled lapsed_at"
        );
        assert_eq!(
            store.lapses(&t).await.unwrap(),
            vec![early.clone(), late.clone(), none.clone()]
        );
    }
}

/// A version 6 file (everything but the `origins` table) is migrated on opening: the table and
/// its index are created, the version becomes 7, and origins are followed from then on, across
/// a reopening.
#[tokio::test]
async fn a_version_6_file_gets_the_origins_table() {
    assert_eq!(SCHEMA_VERSION, 7, "this test migrates from version 6 to 7");
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    drop(SqliteStore::open(&path).unwrap());
    {
        let conn = raw(&path);
        conn.execute_batch("DROP INDEX origins_due; DROP TABLE origins;")
            .unwrap();
        conn.pragma_update(None, "user_version", 6).unwrap();
    }
    let origin = watcher_runtime::origins::FollowedOrigin {
        tenant: tenant(),
        agent: agent(),
        task_id: "task-1".into(),
        since: instant("2026-09-10T12:00:00Z"),
        next_at: instant("2026-09-10T12:00:10Z"),
    };
    {
        let store = SqliteStore::open(&path).unwrap();
        let version: i64 = raw(&path)
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, 7);
        assert!(store.origin_follow(&origin).await.unwrap());
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(
        store
            .origins_due(&tenant(), &agent(), instant("2026-09-10T12:01:00Z"), 10)
            .await
            .unwrap(),
        vec![origin],
        "kept across a restart"
    );
}

/// A failed migration leaves the file at version 1 with its data: it runs in the transaction
/// that records the new version.
#[tokio::test]
async fn a_failed_migration_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let state = state_with(
        vec![record("exp-1", "PA-1", "2026-09-10T13:00:00Z", None, 1)],
        "PA-1",
    );
    let queued = entry("lapse:exp-1:overdue:x");
    write_v1_file(&path, &state, &[&queued]);
    // Something in the way of the migration: a table with the name it sets the v1 outbox aside as.
    raw(&path)
        .execute_batch("CREATE TABLE outbox_v1 (x INTEGER)")
        .unwrap();
    assert!(SqliteStore::open(&path).is_err(), "the migration fails");
    let conn = raw(&path);
    let version: i64 = conn
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 1, "the file stays at version 1");
    let rows: i64 = conn
        .query_row(
            "SELECT count(*) FROM outbox WHERE message_id = ?1",
            [&queued.message_id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 1, "the v1 outbox keeps its row");
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
        store.outbox_get(&t, &agent(), "lapse:1").await.map(drop),
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
    commit_subjects(&store, &t, vec![state.clone()]).await;
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

/// A version 2 file (no `follow_at`) is migrated on opening: the column is added, every row
/// kept, and followed lapse tasks are found by the new index.
#[tokio::test]
async fn a_version_2_file_is_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let t = tenant();
    let queued = entry("lapse:exp-1:overdue:x");
    {
        let store = SqliteStore::open(&path).unwrap();
        store
            .commit(
                &t,
                Commit {
                    outbox: vec![queued.clone()],
                    ..Commit::default()
                },
            )
            .await
            .unwrap();
    }
    // Make it the version 2 file an older build left.
    let conn = raw(&path);
    conn.execute_batch(
        "DROP INDEX outbox_follow; ALTER TABLE outbox DROP COLUMN follow_at;
         DROP INDEX outbox_task; DROP INDEX outbox_agent_seq;
         ALTER TABLE outbox DROP COLUMN task_id; ALTER TABLE outbox DROP COLUMN lapsed_at;
         PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(conn);

    let store = SqliteStore::open(&path).unwrap();
    let version: i64 = raw(&path)
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    assert_eq!(
        store
            .outbox_get(&t, &agent(), &queued.message_id)
            .await
            .unwrap(),
        Some(queued.clone())
    );
    let mut followed = queued.clone();
    followed.delivery = DeliveryState::Sent;
    followed.follow_at = Some(queued.next_attempt_at);
    store.outbox_update(&followed).await.unwrap();
    assert_eq!(
        store
            .outbox_following(&t, &agent(), None, 10)
            .await
            .unwrap(),
        vec![followed]
    );
}

/// The purge deletes in batches, each its own transaction, and the connection is free between
/// them: 1,300 purgeable subjects and 1,300 sent lapse tasks at batches of 500 take 3 + 3 batches
/// (plus the tasks' and rejections' tables), and at every boundary a request (a commit and a
/// read) goes through and sees a state in between — some deleted, some not yet (counts of
/// batches and rows, never time).
#[tokio::test]
async fn a_large_purge_goes_in_batches_and_requests_proceed_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("w.db")).unwrap());
    let t = tenant();
    // Closed (withdrawn) records last active long before the purge's `before`.
    let old = instant("2026-09-10T12:00:00Z");
    let mut subjects = Vec::new();
    for i in 0..1300 {
        let mut rec = record(
            &format!("exp-{i}"),
            &format!("S-{i}"),
            "2026-01-01T01:00:00Z",
            None,
            i + 1,
        );
        rec.status = Status::Withdrawn;
        rec.withdrawal = Some(watcher_core::record::Withdrawal {
            withdrawn_at: instant("2026-09-10T12:00:00Z"),
            reason: "the task was canceled".into(),
        });
        subjects.push(state_with(vec![rec], &format!("S-{i}")));
    }
    for chunk in subjects.chunks(500) {
        commit_subjects(&store, &t, chunk.to_vec()).await;
    }
    let outbox: Vec<OutboxEntry> = (0..1300)
        .map(|i| {
            let mut o = entry(&format!("lapse:{i}"));
            o.delivery = DeliveryState::Sent;
            o.lapsed_at = old;
            o.next_attempt_at = old;
            o
        })
        .collect();
    store
        .commit(
            &t,
            Commit {
                outbox,
                ..Commit::default()
            },
        )
        .await
        .unwrap();

    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let report = store
        .purge_batched(instant("2027-01-01T00:00:00Z"), 500, |n| {
            let store = Arc::clone(&store);
            let t = t.clone();
            let seen = Arc::clone(&seen);
            async move {
                // A request between batches: a commit and reads, on the same store.
                let live = state_with(
                    vec![record(
                        &format!("new-{n}"),
                        &format!("NEW-{n}"),
                        "2027-06-01T00:00:00Z",
                        None,
                        10_000 + n,
                    )],
                    &format!("NEW-{n}"),
                );
                store
                    .commit(
                        &t,
                        Commit {
                            subjects: vec![live],
                            ..Commit::default()
                        },
                    )
                    .await
                    .expect("a commit between two batches of the purge");
                let first = store.subject(&t, &subject("S-0")).await.unwrap().is_some();
                let last = store
                    .subject(&t, &subject("S-999"))
                    .await
                    .unwrap()
                    .is_some();
                let lapses = store.lapses(&t).await.unwrap().len();
                seen.lock().unwrap().push((n, first, last, lapses));
            }
        })
        .await
        .unwrap();
    assert_eq!(report.subjects, 1300);
    assert_eq!(report.outbox, 1300);
    let seen = seen.lock().unwrap().clone();
    // Subjects: 500, 500, 300 rows looked at (the new subjects sort after the S- ones); tasks,
    // outbox 500, 500, 300, rejections: 3 + 1 + 3 + 1 batches.
    assert_eq!(seen.len(), 8, "{seen:?}");
    assert!(
        !seen[0].1,
        "after the first batch S-0 is gone: the batch was committed on its own"
    );
    assert!(
        seen[0].2,
        "after the first batch S-999 is still there: {seen:?}"
    );
    assert_eq!(
        seen[0].3, 1300,
        "the lapse tasks wait for their own batches"
    );
    assert_eq!(seen[4].3, 800, "one batch of lapse tasks done: {seen:?}");
    for n in 1..=8u64 {
        assert!(
            store
                .subject(&t, &subject(&format!("NEW-{n}")))
                .await
                .unwrap()
                .is_some(),
            "the commit made between batches {n} and {} is kept",
            n + 1
        );
    }
}

/// A commit rewrites only the index rows that change (issue 10, write amplification): after a
/// second commit of a subject of two open records in which one is satisfied, the other
/// record's timer and live rows were neither written nor deleted (triggers log every change to
/// those tables), the satisfied record's rows are gone, and the per-agent count followed.
#[tokio::test]
async fn a_commit_leaves_unchanged_index_rows_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let store = SqliteStore::open(&path).unwrap();
    let t = tenant();
    let mut state = state_with(
        vec![
            record("exp-1", "PA-1", "2026-09-10T13:00:00Z", None, 1),
            record("exp-2", "PA-1", "2026-09-10T14:00:00Z", None, 2),
        ],
        "PA-1",
    );
    commit_subjects(&store, &t, vec![state.clone()]).await;
    let mut logging = String::from("CREATE TABLE touched (tbl TEXT, op TEXT, id TEXT);");
    for table in ["timers", "live", "id_index", "fact_index"] {
        for (op, row) in [("INSERT", "new"), ("UPDATE", "new"), ("DELETE", "old")] {
            let id = if table == "fact_index" {
                format!("{row}.fact_key")
            } else {
                format!("{row}.expectation_id")
            };
            logging.push_str(&format!(
                "CREATE TRIGGER log_{table}_{op} AFTER {op} ON {table} BEGIN
                     INSERT INTO touched VALUES ('{table}', '{op}', {id}); END;"
            ));
        }
    }
    raw(&path).execute_batch(&logging).unwrap();

    state.version = 1;
    state.records[0].status = Status::Satisfied;
    commit_subjects(&store, &t, vec![state]).await;
    let touched: Vec<(String, String, String)> = raw(&path)
        .prepare("SELECT tbl, op, id FROM touched ORDER BY tbl, op, id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let own = |a: &str, b: &str, c: &str| (a.to_string(), b.to_string(), c.to_string());
    assert_eq!(
        touched,
        vec![
            own("live", "DELETE", "exp-1"),
            own("timers", "DELETE", "exp-1"),
        ],
        "only the satisfied record's rows changed; exp-2's, the ids and the fact keys untouched"
    );
    let left: Vec<String> = raw(&path)
        .prepare("SELECT expectation_id FROM live UNION ALL SELECT expectation_id FROM timers")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(left, ["exp-2", "exp-2"]);
    let counted: i64 = raw(&path)
        .query_row("SELECT rows FROM agent_live_rows", [], |r| r.get(0))
        .unwrap();
    assert_eq!(counted, 1);
}

/// Pages a commit appends to the write-ahead log, from the WAL file's size (32-byte header,
/// then frames of a 24-byte header and one page each).
fn wal_frames(path: &Path) -> u64 {
    let page: u64 = raw(path)
        .query_row("PRAGMA page_size", [], |r| r.get::<_, i64>(0))
        .unwrap() as u64;
    let wal = std::fs::metadata(path.with_extension("db-wal"))
        .map(|m| m.len())
        .unwrap_or(0);
    wal.saturating_sub(32) / (page + 24)
}

/// Issue 10, write amplification, counted in pages: a commit writes one page per B-tree whose
/// rows change, and the index tables are one B-tree each (WITHOUT ROWID), so raising one
/// record on a new subject writes the subject's two (row, key), the id, the fact key, the
/// timer and its due index, the live row and its agent index, and the agent's count: 9 pages,
/// where version 5's rowid tables and indexes by subject wrote 17. Satisfying one record of
/// two then writes the subject's row (its key is unchanged), the timer and its due index, the
/// live row and its agent index, and the count: 6 (version 5: 9), whatever the other record
/// holds.
/// In a file this small every B-tree is one page, so these are exact counts.
#[tokio::test]
async fn a_commit_writes_one_page_per_tree_it_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let store = SqliteStore::open(&path).unwrap();
    let t = tenant();
    // The raising-order number the record carries is taken first, as the watcher does; then
    // everything is on disk (the probe's commit follows the number's group) and the log is
    // empty.
    assert_eq!(store.next_sequence().await.unwrap(), 1);
    store
        .probe_write(instant("2026-09-10T12:00:00Z"))
        .await
        .unwrap();
    raw(&path)
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();
    assert_eq!(wal_frames(&path), 0);

    let mut state = state_with(
        vec![record("exp-1", "PA-1", "2026-09-10T13:00:00Z", None, 1)],
        "PA-1",
    );
    commit_subjects(&store, &t, vec![state.clone()]).await;
    assert_eq!(wal_frames(&path), 9, "pages written raising one record");

    state.version = 1;
    state
        .records
        .push(record("exp-2", "PA-1", "2026-09-10T14:00:00Z", None, 2));
    commit_subjects(&store, &t, vec![state.clone()]).await;
    raw(&path)
        .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
        .unwrap();

    state.version = 2;
    state.records[0].status = Status::Satisfied;
    commit_subjects(&store, &t, vec![state]).await;
    assert_eq!(
        wal_frames(&path),
        6,
        "pages written satisfying one record of two"
    );
}

/// Issue 10, write amplification, for facts: a subject's facts are rows, so a fact on a subject
/// that already holds 300 facts (about 60 KB of JSON, which version 5 rewrote whole, some 16
/// pages, on every step) writes the subject's row and the one new fact row: the same 2 pages
/// as on a subject with 1 fact. The subject then loads with all 301 facts in order; a commit
/// whose facts do not extend the stored ones (here: one changed) rewrites them, and loads back
/// as committed.
#[tokio::test]
async fn a_fact_writes_one_row_whatever_its_subject_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let store = SqliteStore::open(&path).unwrap();
    let t = tenant();
    let mut pages = Vec::new();
    for held in [1usize, 300] {
        let id = format!("PA-{held}");
        let mut state = state_with(vec![], &id);
        for i in 0..held {
            state
                .facts
                .push(fact(&format!("scan:{i}"), &id, "2026-09-10T12:00:00Z"));
        }
        commit_subjects(&store, &t, vec![state.clone()]).await;
        raw(&path)
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
        let mut next = store.subject(&t, &subject(&id)).await.unwrap().unwrap();
        assert_eq!(next.facts, state.facts, "the facts load back in order");
        next.facts
            .push(fact("scan:new", &id, "2026-09-10T12:05:00Z"));
        commit_subjects(&store, &t, vec![next.clone()]).await;
        pages.push(wal_frames(&path));
        let loaded = store.subject(&t, &subject(&id)).await.unwrap().unwrap();
        assert_eq!(loaded.facts.len(), held + 1);
        assert_eq!(loaded.facts, next.facts);
    }
    assert_eq!(
        pages,
        [2, 2],
        "pages written by one more fact, at 1 and 300 facts held"
    );

    // Facts that do not extend the stored ones are rewritten, not appended.
    let mut changed = store
        .subject(&t, &subject("PA-300"))
        .await
        .unwrap()
        .unwrap();
    changed.facts[7] = fact("scan:changed", "PA-300", "2026-09-10T12:07:00Z");
    changed.facts.truncate(100);
    commit_subjects(&store, &t, vec![changed.clone()]).await;
    let loaded = store
        .subject(&t, &subject("PA-300"))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(loaded.facts, changed.facts);
    let rows: i64 = raw(&path)
        .query_row(
            "SELECT COUNT(*) FROM subject_facts WHERE subject_id = 'PA-300'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(rows, 100);
}

/// A subject read while facts are appended to it is always one committed state: its row and its
/// fact rows come from one snapshot, so a reader never sees a count that its rows contradict
/// (reported as corrupt) nor a mix of two versions.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_subject_read_during_appends_is_one_committed_state() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("w.db");
    let store = Arc::new(SqliteStore::open(&path).unwrap());
    let t = tenant();
    let s = subject("PA-R");
    commit_subjects(&store, &t, vec![state_with(vec![], "PA-R")]).await;
    let writer = {
        let (store, t, s) = (store.clone(), t.clone(), s.clone());
        tokio::spawn(async move {
            for i in 0..200 {
                let mut next = store.subject(&t, &s).await.unwrap().unwrap();
                next.facts
                    .push(fact(&format!("scan:{i}"), "PA-R", "2026-09-10T12:00:00Z"));
                commit_subjects(&store, &t, vec![next]).await;
            }
        })
    };
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (store, t, s) = (store.clone(), t.clone(), s.clone());
            tokio::spawn(async move {
                let mut reads = 0;
                loop {
                    let state = store.subject(&t, &s).await.unwrap().unwrap();
                    // Version v holds v - 1 facts (version 1: none).
                    assert_eq!(state.facts.len() as u64, state.version - 1, "one snapshot");
                    reads += 1;
                    if state.facts.len() == 200 {
                        return reads;
                    }
                }
            })
        })
        .collect();
    writer.await.unwrap();
    for r in readers {
        assert!(r.await.unwrap() > 0);
    }
}

/// The version 5 index tables (rowid tables with foreign keys and indexes by subject), as a
/// version 5 build created them.
const INDEX_TABLES_V5: &str = r#"
CREATE TABLE fact_index (
    tenant TEXT NOT NULL, fact_key TEXT NOT NULL, subject_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    PRIMARY KEY (tenant, fact_key, subject_type, subject_id),
    FOREIGN KEY (tenant, subject_type, subject_id)
        REFERENCES subjects (tenant, subject_type, subject_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX fact_index_subject ON fact_index (tenant, subject_type, subject_id);
CREATE TABLE id_index (
    tenant TEXT NOT NULL, agent TEXT NOT NULL, expectation_id TEXT NOT NULL,
    subject_type TEXT NOT NULL, subject_id TEXT NOT NULL,
    PRIMARY KEY (tenant, agent, expectation_id),
    FOREIGN KEY (tenant, subject_type, subject_id)
        REFERENCES subjects (tenant, subject_type, subject_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX id_index_subject ON id_index (tenant, subject_type, subject_id);
CREATE TABLE timers (
    tenant TEXT NOT NULL, subject_type TEXT NOT NULL, subject_id TEXT NOT NULL,
    agent TEXT NOT NULL, expectation_id TEXT NOT NULL,
    kind INTEGER NOT NULL CHECK (kind IN (0, 1)), at_key TEXT NOT NULL,
    order_input INTEGER NOT NULL, order_index INTEGER NOT NULL,
    PRIMARY KEY (tenant, subject_type, subject_id, agent, expectation_id, kind),
    FOREIGN KEY (tenant, subject_type, subject_id)
        REFERENCES subjects (tenant, subject_type, subject_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX timers_due ON timers (at_key, order_input, order_index, kind);
CREATE TABLE live (
    tenant TEXT NOT NULL, agent TEXT NOT NULL, expectation_id TEXT NOT NULL,
    subject_type TEXT NOT NULL, subject_id TEXT NOT NULL, live_until TEXT,
    PRIMARY KEY (tenant, agent, expectation_id),
    FOREIGN KEY (tenant, subject_type, subject_id)
        REFERENCES subjects (tenant, subject_type, subject_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX live_agent ON live (tenant, agent, live_until);
CREATE INDEX live_subject ON live (tenant, subject_type, subject_id);
CREATE TABLE agent_live_rows (
    tenant TEXT NOT NULL, agent TEXT NOT NULL, rows INTEGER NOT NULL,
    PRIMARY KEY (tenant, agent)
) STRICT;
"#;

/// Every row of the index tables, as text, in key order.
fn index_rows(path: &Path) -> Vec<String> {
    let conn = raw(path);
    let mut out = Vec::new();
    for sql in [
        "SELECT 'fact', tenant || '|' || fact_key || '|' || subject_type || '|' || subject_id
         FROM fact_index ORDER BY 2",
        "SELECT 'id', tenant || '|' || agent || '|' || expectation_id || '|' || subject_type
            || '|' || subject_id FROM id_index ORDER BY 2",
        "SELECT 'timer', tenant || '|' || subject_type || '|' || subject_id || '|' || agent
            || '|' || expectation_id || '|' || kind || '|' || at_key || '|' || order_input
            || '|' || order_index FROM timers ORDER BY 2",
        "SELECT 'live', tenant || '|' || subject_type || '|' || subject_id || '|' || agent
            || '|' || expectation_id || '|' || coalesce(live_until, '-') FROM live ORDER BY 2",
        "SELECT 'count', tenant || '|' || agent || '|' || rows FROM agent_live_rows ORDER BY 2",
    ] {
        let rows: Vec<(String, String)> = conn
            .prepare(sql)
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        out.extend(rows.into_iter().map(|(k, v)| format!("{k} {v}")));
    }
    out
}

/// A version 5 file is migrated on opening: the index tables are rebuilt WITHOUT ROWID with
/// every row (the per-agent count recounted), their indexes by subject are gone, and the store
/// reads and writes them as before: a fact key and an expectation id find their subject, the
/// timer is due, the count is right, and a purge deletes the subject's index rows.
#[tokio::test]
async fn a_version_5_file_gets_its_index_tables_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let t = tenant();
    let mut closed = record("exp-2", "PA-2", "2026-09-10T14:00:00Z", None, 2);
    closed.status = Status::Satisfied;
    let mut open = state_with(
        vec![record(
            "exp-1",
            "PA-1",
            "2026-09-10T13:00:00Z",
            Some("2026-09-10T15:00:00Z"),
            1,
        )],
        "PA-1",
    );
    open.facts
        .push(fact("scan:1", "PA-1", "2026-09-10T12:00:00Z"));
    let full = {
        let store = SqliteStore::open(&path).unwrap();
        commit_subjects(&store, &t, vec![open, state_with(vec![closed], "PA-2")]).await;
        store.subject(&t, &subject("PA-1")).await.unwrap().unwrap()
    };
    assert_eq!(full.facts.len(), 1);
    let expected = index_rows(&path);
    assert_eq!(expected.len(), 8, "{expected:#?}");
    // Back to the version 5 index tables, with the same rows.
    {
        let conn = raw(&path);
        conn.execute_batch(
            "ALTER TABLE fact_index RENAME TO f6; ALTER TABLE id_index RENAME TO i6;
             ALTER TABLE timers RENAME TO t6; ALTER TABLE live RENAME TO l6;
             ALTER TABLE agent_live_rows RENAME TO a6;
             DROP INDEX timers_due; DROP INDEX live_agent;",
        )
        .unwrap();
        conn.execute_batch(INDEX_TABLES_V5).unwrap();
        conn.execute_batch(
            "INSERT INTO fact_index SELECT * FROM f6;
             INSERT INTO id_index SELECT * FROM i6;
             INSERT INTO timers SELECT * FROM t6;
             INSERT INTO live (tenant, agent, expectation_id, subject_type, subject_id,
                 live_until)
                 SELECT tenant, agent, expectation_id, subject_type, subject_id, live_until
                 FROM l6;
             INSERT INTO agent_live_rows SELECT * FROM a6;
             DROP TABLE f6; DROP TABLE i6; DROP TABLE t6; DROP TABLE l6; DROP TABLE a6;
             DROP TABLE subject_facts;
             ALTER TABLE subjects DROP COLUMN facts;
             ALTER TABLE subjects DROP COLUMN facts_digest;
             PRAGMA user_version = 5;",
        )
        .unwrap();
        // Version 5 kept a subject's facts inline, in its state.
        conn.execute(
            "UPDATE subjects SET state = ?1 WHERE subject_id = 'PA-1'",
            [serde_json::to_string(&full).unwrap()],
        )
        .unwrap();
    }
    assert_eq!(
        index_rows(&path),
        expected,
        "the version 5 file holds the same rows"
    );

    for _ in 0..2 {
        let store = SqliteStore::open(&path).unwrap();
        let conn = raw(&path);
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        assert_eq!(index_rows(&path), expected, "every index row kept");
        let rowid_tables: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table'
                 AND name IN ('fact_index', 'id_index', 'timers', 'live', 'agent_live_rows')
                 AND sql NOT LIKE '%WITHOUT ROWID%'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(rowid_tables, 0);
        let by_subject: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM sqlite_schema WHERE name IN
                 ('fact_index_subject', 'id_index_subject', 'live_subject')",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(by_subject, 0);

        let mut scope = Scope::default();
        scope
            .fact_keys
            .insert(watcher_core::ids::FactKey::parse("manifest:PA-1").unwrap());
        scope
            .expectations
            .insert(watcher_core::ids::ExpectationRef {
                agent: agent(),
                id: ExpectationId::parse("exp-2").unwrap(),
            });
        scope.agents.insert(agent());
        let slice = store
            .load(&t, &scope, instant("2026-09-10T12:00:00Z"))
            .await
            .unwrap();
        assert_eq!(
            slice
                .fact_index
                .values()
                .next()
                .unwrap()
                .iter()
                .collect::<Vec<_>>(),
            [&subject("PA-1")]
        );
        assert_eq!(
            slice.id_index.values().next().unwrap().as_ref(),
            Some(&subject("PA-2"))
        );
        assert_eq!(slice.agent_live[&agent()], 1);
        let due = store
            .due_timers(instant("2026-09-10T13:00:00Z"), 10)
            .await
            .unwrap();
        assert_eq!(due.len(), 1);
    }

    // The inline facts load as they were; the next commit makes them rows.
    let store = SqliteStore::open(&path).unwrap();
    let mut loaded = store.subject(&t, &subject("PA-1")).await.unwrap().unwrap();
    assert_eq!(loaded.facts, full.facts, "inline facts of a version 5 row");
    loaded
        .facts
        .push(fact("scan:2", "PA-1", "2026-09-10T12:30:00Z"));
    commit_subjects(&store, &t, vec![loaded.clone()]).await;
    let again = store.subject(&t, &subject("PA-1")).await.unwrap().unwrap();
    assert_eq!(again.facts, loaded.facts);
    let (rows, inline): (i64, String) = raw(&path)
        .query_row(
            "SELECT (SELECT COUNT(*) FROM subject_facts), state FROM subjects
             WHERE subject_id = 'PA-1'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(rows, 2, "both facts are rows now");
    assert!(inline.contains("\"facts\":[]"), "none inline: {inline}");

    // The closed subject is purged with its index rows; the open one keeps every row.
    let report = store.purge(instant("2030-01-01T00:00:00Z")).await.unwrap();
    assert_eq!(report.subjects, 1);
    let left = index_rows(&path);
    assert!(
        left.iter().all(|row| !row.contains("PA-2")),
        "the purged subject's index rows are gone: {left:#?}"
    );
    assert_eq!(left.len(), 6, "{left:#?}");
}

/// A version 4 file (the outbox's CHECK without `withdrawn`) is migrated on opening: the outbox is
/// rebuilt with every row, `seq`, `follow_at` and `task_id` kept, its indexes recreated, and a
/// lapse task can then be marked `withdrawn`.
#[tokio::test]
async fn a_version_4_file_is_migrated_to_take_withdrawn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let t = tenant();
    let mut followed = entry("lapse:followed");
    followed.delivery = DeliveryState::Sent;
    followed.task_id = Some("task-1".into());
    followed.follow_at = Some(instant("2026-09-10T13:05:00Z"));
    let queued = entry("lapse:queued");
    {
        let store = SqliteStore::open(&path).unwrap();
        store
            .commit(
                &t,
                Commit {
                    outbox: vec![followed.clone(), queued.clone()],
                    ..Commit::default()
                },
            )
            .await
            .unwrap();
        store.outbox_update(&followed).await.unwrap();
    }
    // Back to the version 4 outbox, as a version 4 build left it.
    let conn = raw(&path);
    conn.execute_batch(
        "ALTER TABLE outbox RENAME TO outbox_v5;
         CREATE TABLE outbox (
             seq INTEGER PRIMARY KEY AUTOINCREMENT,
             tenant TEXT NOT NULL, message_id TEXT NOT NULL, agent TEXT NOT NULL,
             delivery TEXT NOT NULL CHECK (delivery IN ('queued', 'sent', 'failed')),
             next_attempt TEXT NOT NULL, entry TEXT NOT NULL, follow_at TEXT,
             task_id TEXT, lapsed_at TEXT,
             UNIQUE (tenant, agent, message_id)) STRICT;
         INSERT INTO outbox SELECT * FROM outbox_v5;
         DROP TABLE outbox_v5;
         PRAGMA user_version = 4;",
    )
    .unwrap();
    assert!(conn
        .execute("UPDATE outbox SET delivery = 'withdrawn'", [])
        .is_err());
    drop(conn);

    let store = SqliteStore::open(&path).unwrap();
    let version: i64 = raw(&path)
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, SCHEMA_VERSION);
    let lapses = store.lapses(&t).await.unwrap();
    let ids: Vec<&str> = lapses.iter().map(|e| e.message_id.as_str()).collect();
    assert_eq!(
        ids,
        ["lapse:followed", "lapse:queued"],
        "rows and order kept"
    );
    let following = store
        .outbox_following(&t, &agent(), None, 10)
        .await
        .unwrap();
    assert_eq!(following.len(), 1, "follow_at kept and indexed");
    assert_eq!(
        store
            .outbox_by_task(&t, &agent(), "task-1")
            .await
            .unwrap()
            .into_iter()
            .map(|e| e.message_id)
            .collect::<Vec<_>>(),
        ["lapse:followed"],
        "task_id kept and indexed"
    );
    let mut withdrawn = queued.clone();
    withdrawn.delivery = DeliveryState::Withdrawn;
    store.outbox_update(&withdrawn).await.unwrap();
    assert_eq!(
        store
            .outbox_get(&t, &agent(), "lapse:queued")
            .await
            .unwrap()
            .unwrap()
            .delivery,
        DeliveryState::Withdrawn
    );
}
