//! What a commit writes: only the index rows and pages it changes; a subject read during appends is one committed state.

use super::*;

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
    let own = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
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
