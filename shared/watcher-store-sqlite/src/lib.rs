//! The watcher's [`Store`](watcher_runtime::store::Store) over SQLite: the durable store of `a2a-watcher serve`
//! (contracts/serve.md, "an embedded durable store (a single SQLite file)").
//!
//! * One transaction per commit (`BEGIN IMMEDIATE`); the subject and task versions are checked
//!   inside it, so a lost compare-and-set writes nothing, also against another process or
//!   connection on the same file.
//! * The index tables (fact key, expectation id, timers, live records) are derived on every
//!   commit from [`watcher_runtime::index::subject_index`], the same function every store uses.
//! * WAL journal, full `synchronous`, foreign keys on, a busy timeout of
//!   [`schema::BUSY_TIMEOUT`]; the schema version lives in `PRAGMA user_version`.
//! * Instants are stored as 22-digit sortable text (see `codec::instant_key` for why not `i64`
//!   nanoseconds); records as the JSON serde form of the watcher-core types.
//!
//! Passes [`watcher_runtime::conformance`] (tests/conformance.rs).

mod cards;
mod codec;
mod group;
mod lapse_pages;
mod notify;
mod origins;
mod outbox;
mod purge;
mod read;
mod records;
mod rejections;
pub mod schema;
mod timers;
mod upkeep;
mod write;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use a2a_types::TaskState;
use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension};
use watcher_core::engine::{LiveUntil, Rejection, TimerKey, TimerKind};
use watcher_core::ids::{AgentId, ExpectationId, ExpectationRef, Subject, TaskRef, Tenant};
use watcher_core::record::{ExpectationRecord, RaiseOrder};
use watcher_core::slice::{Scope, Slice, SubjectState, TaskRecord};
use watcher_core::time::Instant;
use watcher_runtime::index::subject_index;
use watcher_runtime::lease::{claim, keep_lease, Lease};
use watcher_runtime::retention::{
    outbox_retention, rejection_retention, subject_retention, task_retention,
};
use watcher_runtime::store::{
    lapse_scan_budget, Claim, Commit, DeliveryState, DueTimer, LapsePage, LapseQuery, OutboxEntry,
    PurgeReport, StoreError,
};
use watcher_runtime::task_progress::{keep_task_progress, with_task_state};

use codec::{
    db, from_json, instant_from_key, instant_key, int_of, to_json, u64_of, AFTER_EVERY_INSTANT,
};

use lapse_pages::*;
pub use purge::PURGE_BATCH;
use read::*;
use write::*;

/// A [`Store`](watcher_runtime::store::Store) over one SQLite database: a file ([`SqliteStore::open`]) or a private in-memory
/// database ([`SqliteStore::memory`]).
///
/// Writes go through group commit (the `group` module, issue 10): one writer thread owns the
/// write connection, takes every write waiting, runs each in its own savepoint inside one
/// transaction and commits them with one sync; a write answers only once its group is on disk,
/// and a failing write is rolled back alone. Reads of a file use their own connections (WAL:
/// they see the last commit and never wait for the writer), on tokio's blocking pool
/// (`spawn_blocking`, so it must be used inside a tokio runtime). An in-memory database has one
/// connection: its reads go through the writer too. Cloning shares the writer and the readers.
///
/// Why `spawn_blocking` and not `block_in_place`: rusqlite blocks (disk I/O, waiting up to the
/// busy timeout for another writer), which must not stall an async worker; `block_in_place`
/// panics on a current-thread runtime (the default of `#[tokio::test]`) and stalls the other
/// tasks of its worker.
#[derive(Clone)]
pub struct SqliteStore {
    writer: group::Writer,
    /// The largest raising-order number this store handed out ([`take_sequence`]).
    sequence_high: Arc<AtomicU64>,
    /// Read connections of a file database; `None` for `:memory:` (reads go to the writer).
    readers: Option<Arc<group::Readers>>,
    /// SQLite virtual-machine instructions run so far ([`Upkeep::work_done`](watcher_runtime::store::Upkeep::work_done)), while counted
    /// ([`SqliteStore::counting_work`]).
    work: Option<Arc<AtomicU64>>,
}

/// Counts every instruction of `conn`'s virtual machine into `work` (SQLite's progress
/// handler, called once per instruction; never interrupts). For tests: it slows SQLite down.
fn count_work(conn: &mut Connection, work: &Arc<AtomicU64>) -> Result<(), StoreError> {
    let work = Arc::clone(work);
    conn.progress_handler(
        1,
        Some(move || {
            work.fetch_add(1, Ordering::Relaxed);
            false
        }),
    )
    .map_err(db)
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// Opens (creating if missing) the database file at `path`, switches it to WAL, and creates
    /// or checks the schema. Blocks while it does; call it at startup, before serving.
    ///
    /// # Errors
    /// [`StoreError::Backend`] when the file cannot be opened, created or written (a missing
    /// directory, permissions, a file that is not SQLite); [`StoreError::Corrupt`] when a newer
    /// build wrote the file (its schema version is above [`schema::SCHEMA_VERSION`]).
    ///
    /// # Example
    /// ```no_run
    /// # use watcher_store_sqlite::SqliteStore;
    /// let store = SqliteStore::open("watcher.db")?;
    /// # Ok::<(), watcher_runtime::store::StoreError>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let conn = Connection::open(path.as_ref()).map_err(|e| open_error(path.as_ref(), e))?;
        Self::prepared(
            conn,
            Some(Arc::new(group::Readers::new(path.as_ref().to_path_buf()))),
        )
    }

    /// A fresh, empty in-memory database, for tests. It lives as long as this store (and its
    /// clones): SQLite's `:memory:` database belongs to its one connection.
    ///
    /// # Errors
    /// [`StoreError::Backend`] if SQLite cannot allocate the database or write the schema.
    pub fn memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(db)?;
        Self::prepared(conn, None)
    }

    fn prepared(
        mut conn: Connection,
        readers: Option<Arc<group::Readers>>,
    ) -> Result<Self, StoreError> {
        schema::prepare(&mut conn)?;
        Ok(SqliteStore {
            writer: group::Writer::start(conn)?,
            sequence_high: Arc::new(AtomicU64::new(0)),
            readers,
            work: None,
        })
    }

    /// This store, counting the instructions SQLite runs for it from now on
    /// ([`Upkeep::work_done`](watcher_runtime::store::Upkeep::work_done)): for tests that check that a step's cost does not grow with the
    /// record (the conformance suite's `steps_read_what_they_must`). Counting slows SQLite
    /// down; `serve` never turns it on.
    ///
    /// # Errors
    /// [`StoreError::Backend`] if the handler cannot be installed.
    pub fn counting_work(mut self) -> Result<Self, StoreError> {
        let work = Arc::new(AtomicU64::new(0));
        let counted = Arc::clone(&work);
        self.writer
            .write_blocking(move |conn| count_work(conn, &counted))?;
        if let Some(readers) = &self.readers {
            *readers
                .work
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(Arc::clone(&work));
            readers.clear();
        }
        self.work = Some(work);
        Ok(self)
    }

    /// Runs `f` in the writer's next group; answers once that group is committed.
    async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        self.writer.write(f).await
    }

    /// Runs `f` on a read connection (through the writer for `:memory:`).
    async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        match &self.readers {
            Some(readers) => readers.read(f).await,
            None => self.writer.write(f).await,
        }
    }
}

/// Why the database file at `path` could not be opened, in words, without the path (the
/// caller names it once): a missing folder or a denied permission said as such, anything else
/// as SQLite's own short description. rusqlite's message repeats the path and SQLite's text
/// twice.
fn open_error(path: &Path, e: rusqlite::Error) -> StoreError {
    let folder = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let why = if !folder.is_dir() {
        format!("the folder {} does not exist", folder.display())
    } else if path.is_dir() {
        "it is a folder, not a database file".to_owned()
    } else if path.exists()
        && std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
    {
        "permission denied: the file cannot be opened for writing by this user".to_owned()
    } else if !path.exists() && folder_denies_new_files(folder) {
        format!(
            "permission denied: a file cannot be created in the folder {}",
            folder.display()
        )
    } else {
        match &e {
            rusqlite::Error::SqliteFailure(code, _) => code.to_string(),
            other => other.to_string(),
        }
    };
    StoreError::Backend(why.into())
}

/// Whether creating a file in `folder` is refused for permissions (tried with a file that is
/// removed at once).
fn folder_denies_new_files(folder: &Path) -> bool {
    let probe = folder.join(format!(".a2a-watcher-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(_) => {
            let _ = std::fs::remove_file(&probe);
            false
        }
        Err(e) => e.kind() == std::io::ErrorKind::PermissionDenied,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use watcher_runtime::store::{Outbox as _, Records as _, Rejections as _, TimerIndex as _};

    #[test]
    fn a_database_that_cannot_be_opened_says_why_once() {
        let missing = std::path::PathBuf::from("/nonexistent-a2a-watcher-folder/w.db");
        let Err(e) = SqliteStore::open(&missing) else {
            panic!("opened a file in a folder that does not exist");
        };
        let text = e.to_string();
        assert!(
            text.contains("the folder /nonexistent-a2a-watcher-folder does not exist"),
            "{text}"
        );
        assert!(!text.contains("w.db"), "the caller names the file: {text}");
        let dir = tempfile::tempdir().unwrap();
        let folder_as_file = dir.path().join("a-folder");
        std::fs::create_dir(&folder_as_file).unwrap();
        let Err(e) = SqliteStore::open(&folder_as_file) else {
            panic!("opened a folder as a database");
        };
        let text = e.to_string();
        assert!(
            text.ends_with("it is a folder, not a database file"),
            "{text}"
        );
    }

    /// The writer's connection stays at `synchronous = FULL` (2) across sequence numbers and
    /// commits, so a 2xx means on disk; the numbers taken survive a reopen.
    #[tokio::test]
    async fn next_sequence_leaves_commits_full() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("w.db")).unwrap();
        let level = |store: &SqliteStore| {
            let store = store.clone();
            async move {
                store
                    .write(|conn| {
                        conn.query_row("PRAGMA synchronous", [], |r| r.get::<_, i64>(0))
                            .map_err(db)
                    })
                    .await
                    .unwrap()
            }
        };
        assert_eq!(level(&store).await, 2);
        let a = store.next_sequence().await.unwrap();
        let b = store.next_sequence().await.unwrap();
        assert!(b > a);
        assert_eq!(level(&store).await, 2);
        drop(store);
        // The numbers taken are on disk once the file is closed and reopened.
        let store = SqliteStore::open(dir.path().join("w.db")).unwrap();
        assert!(store.next_sequence().await.unwrap() > b);
    }

    /// A raising-order number is answered before its group commits; if that group is rolled
    /// back the number is still never handed out again by this store, and the first commit
    /// whose records use it puts it on disk; a commit whose records are behind the stored
    /// value leaves the value alone.
    #[test]
    fn a_number_answered_early_is_never_handed_out_twice() {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::prepare(&mut conn).unwrap();
        let high = AtomicU64::new(0);
        let stored = |c: &Connection| -> i64 {
            c.query_row("SELECT value FROM sequence", [], |r| r.get(0))
                .unwrap()
        };
        {
            let tx = conn.transaction().unwrap();
            assert_eq!(take_sequence(&tx, &high).unwrap(), 1);
            // Dropped: the group is rolled back.
        }
        assert_eq!(stored(&conn), 0);
        let tx = conn.transaction().unwrap();
        assert_eq!(
            take_sequence(&tx, &high).unwrap(),
            2,
            "1 is not handed out again"
        );
        tx.rollback().unwrap();

        let tx = conn.transaction().unwrap();
        keep_sequence_ahead(&tx, Some(2)).unwrap();
        tx.commit().unwrap();
        assert_eq!(
            stored(&conn),
            2,
            "the number used is on disk with its commit"
        );
        let tx = conn.transaction().unwrap();
        assert_eq!(
            take_sequence(&tx, &AtomicU64::new(0)).unwrap(),
            3,
            "a new store goes on after it"
        );
        keep_sequence_ahead(&tx, Some(2)).unwrap();
        assert_eq!(stored(&tx), 3, "a commit behind the stored value leaves it");
    }

    /// The number a commit stores is the largest of its records' raising orders and its task
    /// statuses' input numbers: a status-only push stores its number too.
    #[test]
    fn a_commits_used_number_counts_task_statuses() {
        let task = TaskRef {
            agent: AgentId::parse("a").unwrap(),
            task_id: watcher_core::ids::TaskId::parse("t-1").unwrap(),
        };
        let mut rec = TaskRecord::new(task);
        let seen: watcher_core::slice::StatusSeen = serde_json::from_value(serde_json::json!({
            "state": "TASK_STATE_WORKING",
            "at": "2026-09-10T12:00:00Z",
            "receivedAt": "2026-09-10T12:00:00Z",
            "seq": 7
        }))
        .unwrap();
        rec.statuses.push(seen);
        let prepared = PreparedCommit::of(Commit::of_tasks(vec![rec])).unwrap();
        assert_eq!(prepared.used_sequence, Some(7));
        let none = PreparedCommit::of(Commit::default()).unwrap();
        assert_eq!(none.used_sequence, None);
    }

    /// Writes `open` live rows for agent `a` of tenant `t` (one subject each, no end) and
    /// `expired` rows whose end is before `now_key`, straight into the tables, and counts.
    /// Returns the count and the virtual-machine steps the count took.
    fn count_with(open: usize, expired: usize) -> (i64, i32) {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::prepare(&mut conn).unwrap();
        let tx = conn.transaction().unwrap();
        for i in 0..open + expired {
            tx.execute(
                "INSERT INTO subjects (tenant, subject_type, subject_id, version, state)
                     VALUES ('t', 'shipment', ?1, 1, '{}')",
                [i.to_string()],
            )
            .unwrap();
            let until = if i < expired {
                Some("0000000000000000000001")
            } else if i % 2 == 0 {
                None
            } else {
                Some("9000000000000000000000")
            };
            tx.execute(
                "INSERT INTO live (tenant, agent, expectation_id, subject_type, subject_id,
                     live_until) VALUES ('t', 'a', ?1, 'shipment', ?1, ?2)",
                params![i.to_string(), until],
            )
            .unwrap();
        }
        // As the store keeps it, and rebuilds it at open.
        tx.execute_batch(schema::REBUILD_AGENT_LIVE_ROWS).unwrap();
        tx.commit().unwrap();
        let mut stmt = conn.prepare(LIVE_COUNT_SQL).unwrap();
        let count: i64 = stmt
            .query_row(params!["t", "a", "5000000000000000000000"], |r| r.get(0))
            .unwrap();
        (count, stmt.get_status(rusqlite::StatementStatus::VmStep))
    }

    /// The bound's count reads the counter and the expired range only: the same work at 100
    /// and 20,000 open rows (virtual-machine steps, not time), and the right number either way.
    #[test]
    fn live_count_does_not_read_every_open_row() {
        let (small, small_steps) = count_with(100, 3);
        let (large, large_steps) = count_with(20_000, 3);
        assert_eq!(small, 100);
        assert_eq!(large, 20_000);
        assert_eq!(
            small_steps, large_steps,
            "counting 20,000 open rows took {large_steps} steps, 100 took {small_steps}"
        );
    }

    /// Writes waiting together are committed as one group (one transaction, one sync), and a
    /// failing write of the group — a lost compare-and-set, an error after it wrote a row — is
    /// rolled back alone: the others are kept and answered only after the commit. Counts, not
    /// time: the writer is held until all 22 writes are queued.
    /// How many times the statements `conn` holds were planned again since they were prepared
    /// (`SQLITE_STMTSTATUS_REPREPARE`, summed over every statement of the connection).
    #[allow(
        unsafe_code,
        reason = "SQLite's statement counters have no safe rusqlite API"
    )]
    fn replanned(conn: &Connection) -> i64 {
        use rusqlite::ffi;
        let mut total = 0;
        // SAFETY: `conn.handle()` is a live connection for the whole loop; `sqlite3_next_stmt`
        // walks the statements that connection owns (its statement cache), none of which is
        // finalized meanwhile (this thread holds the connection), and `sqlite3_stmt_status`
        // only reads a counter of a live statement.
        unsafe {
            let db = conn.handle();
            let mut stmt = ffi::sqlite3_next_stmt(db, std::ptr::null_mut());
            while !stmt.is_null() {
                total += i64::from(ffi::sqlite3_stmt_status(
                    stmt,
                    ffi::SQLITE_STMTSTATUS_REPREPARE,
                    0,
                ));
                stmt = ffi::sqlite3_next_stmt(db, stmt);
            }
        }
        total
    }

    /// Every statement is planned once, whatever values it is run with (`schema::tune`): the
    /// bundled SQLite otherwise planned a statement with `LIMIT ?` or `ORDER BY` again on every
    /// call, which a profile of `bench` found taking a fifth of the readers' time. The calls
    /// below run the reads and writes of a push, a fact, the timer loop and the delivery lanes
    /// several times with other values each time.
    #[tokio::test]
    async fn statements_are_planned_once_whatever_their_values() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("w.db")).unwrap();
        let t = Tenant::default_tenant();
        let at = |s: &str| Instant::parse(s).unwrap();
        for i in 0..6u32 {
            let subject = Subject::parse("shipment", &format!("PA-{i}")).unwrap();
            let mut state = SubjectState::new(subject.clone());
            state.facts.push(watcher_core::slice::FactEntry {
                fact_key: watcher_core::ids::FactKey::parse(format!("k:{i}")).unwrap(),
                source: watcher_core::ids::Source::parse("carrier-feed:test").unwrap(),
                observed_at: at("2026-09-10T12:00:00Z"),
                claimed_observed_at: at("2026-09-10T12:00:00Z"),
                observed_at_given: None,
                mapping: None,
                received_at: at("2026-09-10T12:00:00Z"),
                subject: Some(subject.clone()),
                satisfied: Vec::new(),
            });
            store
                .commit(&t, Commit::of_subjects(vec![state]))
                .await
                .unwrap();
            let mut scope = Scope::default();
            scope.subjects.insert(subject.clone());
            let loaded = store
                .load(&t, &scope, at("2026-09-10T12:00:00Z"))
                .await
                .unwrap();
            assert_eq!(loaded.subjects[&subject].facts.len(), 1);
            let agent = AgentId::parse(format!("agent-{i}")).unwrap();
            let limit = 10 + i as usize;
            store.due_timers(Instant::MAX, limit).await.unwrap();
            store
                .outbox_of_agent(
                    &t,
                    &agent,
                    DeliveryState::Queued,
                    Some(at("2026-09-10T12:00:00Z")),
                    limit,
                )
                .await
                .unwrap();
            store
                .outbox_following(&t, &agent, None, limit)
                .await
                .unwrap();
            store
                .outbox_by_task(&t, &agent, &format!("task-{i}"))
                .await
                .unwrap();
        }
        let writer = store.write(|conn| Ok(replanned(conn))).await.unwrap();
        let readers: i64 = store
            .readers
            .as_ref()
            .expect("a file store has read connections")
            .idle
            .lock()
            .unwrap()
            .iter()
            .map(replanned)
            .sum();
        assert_eq!(
            (writer, readers),
            (0, 0),
            "statements planned again (writer, readers)"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_group_keeps_its_good_writes_when_one_fails() {
        use std::sync::atomic::Ordering;
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("w.db")).unwrap();
        let stats = Arc::clone(&store.writer.stats);
        let (release, held) = std::sync::mpsc::channel::<()>();
        let hold = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .write(move |_| {
                        held.recv().ok();
                        Ok(())
                    })
                    .await
            })
        };
        while stats.groups.load(Ordering::SeqCst) < 1 {
            tokio::task::yield_now().await;
        }
        let t = Tenant::parse("t").unwrap();
        let agent = AgentId::parse("booking").unwrap();
        let mut good = Vec::new();
        for i in 0..20 {
            let (store, t, agent) = (store.clone(), t.clone(), agent.clone());
            good.push(tokio::spawn(async move {
                let r = Rejection {
                    agent,
                    expectation_id: Some(format!("exp-{i}")),
                    reason: format!("reason {i}"),
                    task_id: None,
                    warning: false,
                    at: Instant::parse("2026-09-10T12:00:00Z").unwrap(),
                };
                store.commit(&t, Commit::of_rejections(vec![r])).await
            }));
        }
        let failing = {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .write(|conn| {
                        conn.execute(
                            "INSERT INTO health (id, probed_at) VALUES (1, 'written, then failed')",
                            [],
                        )
                        .map_err(db)?;
                        Err::<(), _>(StoreError::Corrupt("injected".into()))
                    })
                    .await
            })
        };
        let stale = {
            let (store, t) = (store.clone(), t.clone());
            tokio::spawn(async move {
                let mut s = SubjectState::new(Subject::parse("shipment", "PA-1").unwrap());
                s.version = 5;
                store.commit(&t, Commit::of_subjects(vec![s])).await
            })
        };
        while stats.sent.load(Ordering::SeqCst) < 23 {
            tokio::task::yield_now().await;
        }
        release.send(()).unwrap();
        hold.await.unwrap().unwrap();
        for h in good {
            h.await
                .unwrap()
                .expect("the good writes of the group are kept");
        }
        assert!(matches!(
            failing.await.unwrap(),
            Err(StoreError::Corrupt(_))
        ));
        assert!(matches!(stale.await.unwrap(), Err(StoreError::Conflict(_))));
        assert_eq!(
            stats.largest.load(Ordering::SeqCst),
            22,
            "the 22 writes waiting went in one group"
        );
        assert_eq!(store.rejections(&t, &agent).await.unwrap().len(), 20);
        let probed: Option<String> = store
            .read(|conn| {
                conn.query_row("SELECT probed_at FROM health", [], |r| r.get(0))
                    .optional()
                    .map_err(db)
            })
            .await
            .unwrap();
        assert_eq!(probed, None, "the failed write's row was rolled back");
        drop(store);
        // On disk: a fresh open finds the 20.
        let again = SqliteStore::open(dir.path().join("w.db")).unwrap();
        assert_eq!(again.rejections(&t, &agent).await.unwrap().len(), 20);
    }
}
