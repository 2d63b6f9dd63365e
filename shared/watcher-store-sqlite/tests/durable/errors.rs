//! What cannot be read is reported, never panicked on; instants beyond 2262 are kept and ordered.

use super::*;
use watcher_runtime::store::LapseLog;

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
