//! The index tables rebuilt from a version 5 file, and a version 4 file migrated to take `withdrawn`.

use super::*;
use watcher_runtime::store::LapseLog;

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
    let mut open = pa1_with_record();
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
        back_to_version_7(&conn);
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
        let version = user_version(&path);
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
                Commit::of_outbox(vec![followed.clone(), queued.clone()]),
            )
            .await
            .unwrap();
        store.outbox_update(&followed).await.unwrap();
    }
    // Back to the version 4 outbox, as a version 4 build left it.
    let conn = raw(&path);
    back_to_version_7(&conn);
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
    let version = user_version(&path);
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
