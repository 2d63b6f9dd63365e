//! The record survives a reopen; the file is WAL at the current schema version.

use super::*;

#[tokio::test]
async fn the_record_survives_a_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("watcher.db");
    let t = tenant();
    let state = pa1_with_record();
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
                    resolutions: Vec::new(),
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
    let version = user_version(&path);
    assert_eq!(version, SCHEMA_VERSION);
}
