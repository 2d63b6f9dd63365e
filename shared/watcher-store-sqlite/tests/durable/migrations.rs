//! Files of every earlier schema version are migrated when opened; a failed migration changes nothing; a newer schema is refused.

use super::*;
use watcher_runtime::store::LapseLog;

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
        SCHEMA_VERSION, 11,
        "this test migrates from version 1 through 2, 3, 4, 5, 6, 7 and 8 to the current one"
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
    let version = user_version(&path);
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
            "outbox_follow",
            "outbox_open",
            "outbox_person",
            "outbox_resolved",
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
        store
            .outbox_of_agent(
                &t,
                &agent(),
                DeliveryState::Queued,
                Some(queued.next_attempt_at),
                10
            )
            .await
            .unwrap(),
        vec![queued.clone()],
        "the agent's delivery lane works on the migrated rows"
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
        .commit(&t, Commit::of_outbox(vec![other.clone()]))
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

/// A version 3 file is migrated on opening: the outbox gains `task_id` and `lapsed_at`, filled
/// from every stored entry, and their indexes, so status updates find a lapse task by its task
/// id and pages filter by `since` on the old rows; nothing is lost; opening again changes nothing.
#[tokio::test]
async fn a_version_3_file_is_migrated() {
    assert_eq!(
        SCHEMA_VERSION, 11,
        "this test migrates from version 3 through 4, 5, 6, 7 and 8 to 9"
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
        let version = user_version(&path);
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

/// A version 6 file (everything but the `origins` table and the outbox's `person_at`) is
/// migrated on opening: the table and its index are created, the version becomes the current
/// one, and origins are followed from then on, across a reopening.
#[tokio::test]
async fn a_version_6_file_gets_the_origins_table() {
    assert_eq!(
        SCHEMA_VERSION, 11,
        "this test migrates from version 6 through 7 and 8 to 9"
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    drop(SqliteStore::open(&path).unwrap());
    {
        let conn = raw(&path);
        back_to_version_7(&conn);
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
        let version = user_version(&path);
        assert_eq!(version, SCHEMA_VERSION);
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
    let version = user_version(&path);
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
            .commit(&t, Commit::of_outbox(vec![queued.clone()]))
            .await
            .unwrap();
    }
    // Make it the version 2 file an older build left.
    let conn = raw(&path);
    conn.execute_batch(
        "DROP INDEX outbox_follow; ALTER TABLE outbox DROP COLUMN follow_at;
         DROP INDEX outbox_task; DROP INDEX outbox_agent_seq; DROP INDEX outbox_open;
         ALTER TABLE outbox DROP COLUMN task_id; ALTER TABLE outbox DROP COLUMN lapsed_at;
         PRAGMA user_version = 2;",
    )
    .unwrap();
    drop(conn);

    let store = SqliteStore::open(&path).unwrap();
    let version = user_version(&path);
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

/// A version 7 file (no `person_at` on the outbox) is migrated on opening: the column and its
/// index are added, every lapse task is kept, the version becomes 8, and a lapse task whose task
/// then asks for input is listed as waiting for a person, across a reopening.
#[tokio::test]
async fn a_version_7_file_gets_the_waiting_for_a_person_column() {
    use a2a_types::TaskState;
    use watcher_runtime::store::Outbox as _;
    assert_eq!(SCHEMA_VERSION, 11, "this test migrates from version 7 to 9");
    let t = tenant();
    let (_dir, path) = file_with_lapse_tasks(&["lapse:1"]).await;
    {
        let conn = raw(&path);
        back_to_version_7(&conn);
        conn.pragma_update(None, "user_version", 7).unwrap();
    }
    let at = instant("2026-09-10T13:00:00Z");
    {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(user_version(&path), 11);
        assert_eq!(store.lapses(&t).await.unwrap(), vec![entry("lapse:1")]);
        store
            .outbox_task_state(
                &t,
                &agent(),
                "lapse:1",
                "task-1",
                TaskState::InputRequired,
                at,
            )
            .await
            .unwrap()
            .expect("recorded");
    }
    let store = SqliteStore::open(&path).unwrap();
    let waiting = store
        .outbox_needing_person(&t, &agent(), None, 10)
        .await
        .unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].needs_person_since, Some(at));
}

/// A version 8 file (its outbox CHECK without `unaddressed`) is migrated on opening: the outbox
/// is rebuilt with every row and its `seq` kept, the version becomes 9, and a lapse task no agent
/// receives (the Learnables authority's, expectations-v1 §16) can then be recorded.
#[tokio::test]
async fn a_version_8_file_takes_lapse_tasks_no_agent_receives() {
    assert_eq!(SCHEMA_VERSION, 11, "this test migrates from version 8 to 9");
    let t = tenant();
    let (_dir, path) = file_with_lapse_tasks(&["lapse:1", "lapse:2"]).await;
    let seqs = |conn: &rusqlite::Connection| -> Vec<(i64, String)> {
        let mut q = conn
            .prepare("SELECT seq, message_id FROM outbox ORDER BY seq")
            .unwrap();
        q.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    let before = {
        let conn = raw(&path);
        back_to_version_8(&conn);
        conn.pragma_update(None, "user_version", 8).unwrap();
        assert!(
            conn.execute(
                "INSERT INTO outbox (tenant, message_id, agent, delivery, next_attempt, entry)
                 VALUES ('default', 'lapse:3', 'booking', 'unaddressed', 'x', '{}')",
                [],
            )
            .is_err(),
            "the fixture is version 8's outbox: no `unaddressed`"
        );
        seqs(&conn)
    };
    let store = SqliteStore::open(&path).unwrap();
    let conn = raw(&path);
    assert_eq!(user_version(&path), 11);
    assert_eq!(seqs(&conn), before, "every row kept with its seq");
    let mut unaddressed = entry("lapse:3");
    unaddressed.delivery = DeliveryState::Unaddressed;
    store
        .commit(&t, Commit::of_outbox(vec![unaddressed.clone()]))
        .await
        .unwrap();
    let lapses = store.lapses(&t).await.unwrap();
    assert_eq!(lapses.len(), 3);
    assert_eq!(lapses[2], unaddressed);
    assert!(seqs(&conn)[2].0 > before[1].0, "the sequence carried over");
}

/// A version 9 file (with the outbox's index across every agent, `outbox_due`, and without
/// `resolved_at`) is migrated on opening: the index goes, every lapse task is kept and still due
/// through its agent's lane, and the version becomes 11.
#[tokio::test]
async fn a_version_9_file_loses_the_unread_due_index() {
    use watcher_runtime::store::Outbox as _;
    assert_eq!(
        SCHEMA_VERSION, 11,
        "this test migrates from version 9 to 11"
    );
    let t = tenant();
    let (_dir, path) = file_with_lapse_tasks(&["lapse:1", "lapse:2"]).await;
    let indexes = |conn: &rusqlite::Connection| -> Vec<String> {
        let mut q = conn
            .prepare(
                "SELECT name FROM sqlite_master
                 WHERE type = 'index' AND tbl_name = 'outbox' AND name NOT LIKE 'sqlite_%'
                 ORDER BY name",
            )
            .unwrap();
        q.query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect()
    };
    {
        let conn = raw(&path);
        assert!(!indexes(&conn).iter().any(|i| i == "outbox_due"));
        back_to_version_10(&conn);
        conn.execute_batch(
            "CREATE INDEX outbox_due ON outbox (delivery, next_attempt, seq);
             PRAGMA user_version = 9;",
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let conn = raw(&path);
    assert_eq!(user_version(&path), 11);
    assert_eq!(
        indexes(&conn),
        [
            "outbox_agent",
            "outbox_agent_seq",
            "outbox_follow",
            "outbox_open",
            "outbox_person",
            "outbox_resolved",
            "outbox_task",
            "outbox_tenant"
        ]
    );
    assert_eq!(
        store.lapses(&t).await.unwrap(),
        vec![entry("lapse:1"), entry("lapse:2")]
    );
    let due = store
        .outbox_of_agent(
            &t,
            &agent(),
            DeliveryState::Queued,
            Some(instant("2100-01-01T00:00:00Z")),
            10,
        )
        .await
        .unwrap();
    assert_eq!(due.len(), 2, "both still due through the agent's index");
}

/// A current file in a fresh directory holding the lapse tasks `ids` (the directory goes when
/// the guard does).
async fn file_with_lapse_tasks(ids: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    SqliteStore::open(&path)
        .unwrap()
        .commit(
            &tenant(),
            Commit::of_outbox(ids.iter().map(|id| entry(id)).collect()),
        )
        .await
        .unwrap();
    (dir, path)
}

/// A version 10 file (no `resolved_at` on the outbox) is migrated on opening: the column and its
/// sparse index arrive, every lapse task is kept unresolved, a resolution written afterwards is
/// read through the index, and the version becomes 11.
#[tokio::test]
async fn a_version_10_file_gains_the_resolved_index() {
    use watcher_runtime::resolution::{Resolution, ResolutionReason};
    use watcher_runtime::store::Outbox as _;
    assert_eq!(
        SCHEMA_VERSION, 11,
        "this test migrates from version 10 to 11"
    );
    let t = tenant();
    let (_dir, path) = file_with_lapse_tasks(&["lapse:1", "lapse:2"]).await;
    {
        let conn = raw(&path);
        back_to_version_10(&conn);
        conn.execute_batch("PRAGMA user_version = 10;").unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(user_version(&path), 11);
    let conn = raw(&path);
    let (column, index): (i64, i64) = conn
        .query_row(
            "SELECT
                 (SELECT COUNT(*) FROM pragma_table_info('outbox') WHERE name = 'resolved_at'),
                 (SELECT COUNT(*) FROM sqlite_master WHERE type = 'index'
                     AND name = 'outbox_resolved')",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((column, index), (1, 1), "the column and its index");
    assert_eq!(
        store.lapses(&t).await.unwrap(),
        vec![entry("lapse:1"), entry("lapse:2")],
        "every lapse task kept, none resolved"
    );
    assert!(store
        .outbox_resolved(&t, &agent(), None, 10)
        .await
        .unwrap()
        .is_empty());
    let mut resolved = entry("lapse:2");
    resolved.resolved = Some(Resolution {
        at: instant("2026-09-10T13:00:00Z"),
        reason: ResolutionReason::Fact,
    });
    store.outbox_update(&resolved).await.unwrap();
    // Read through `outbox_resolved` (the query names the index: it fails without it).
    assert_eq!(
        store.outbox_resolved(&t, &agent(), None, 10).await.unwrap(),
        vec![resolved]
    );
}

/// A version 11 file made before the `outbox_open` index (no version of its own: it is created
/// by `IF NOT EXISTS` whenever a file opens) gets it on opening, stays at version 11, and
/// answers `Lane::Open` through it: the unresolved lapse tasks, by when they lapsed.
#[tokio::test]
async fn a_version_11_file_gains_the_open_index() {
    use watcher_runtime::resolution::{Resolution, ResolutionReason};
    use watcher_runtime::store::Outbox as _;
    assert_eq!(SCHEMA_VERSION, 11, "outbox_open came without a version");
    let t = tenant();
    let (_dir, path) = file_with_lapse_tasks(&["lapse:1", "lapse:2"]).await;
    let has_index = |conn: &rusqlite::Connection| -> bool {
        conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index'
                 AND name = 'outbox_open')",
            [],
            |r| r.get(0),
        )
        .unwrap()
    };
    {
        let conn = raw(&path);
        assert!(has_index(&conn), "a new file has it");
        conn.execute_batch("DROP INDEX outbox_open;").unwrap();
        assert!(!has_index(&conn));
        assert_eq!(user_version(&path), 11);
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(user_version(&path), 11, "no version of its own");
    assert!(has_index(&raw(&path)), "created on opening");
    // Read through `outbox_open` (the query names the index: it fails without it).
    assert_eq!(
        store.outbox_open(&t, &agent(), None, 10).await.unwrap(),
        vec![entry("lapse:1"), entry("lapse:2")]
    );
    let mut resolved = entry("lapse:1");
    resolved.resolved = Some(Resolution {
        at: instant("2026-09-10T13:00:00Z"),
        reason: ResolutionReason::Fact,
    });
    store.outbox_update(&resolved).await.unwrap();
    assert_eq!(
        store.outbox_open(&t, &agent(), None, 10).await.unwrap(),
        vec![entry("lapse:2")],
        "a resolved lapse task is no longer open"
    );
}
