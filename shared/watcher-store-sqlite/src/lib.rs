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
mod origins;
mod outbox;
mod records;
mod rejections;
pub mod schema;
mod timers;
mod upkeep;

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
    work: Option<Arc<std::sync::atomic::AtomicU64>>,
}

/// Counts every instruction of `conn`'s virtual machine into `work` (SQLite's progress
/// handler, called once per instruction; never interrupts). For tests: it slows SQLite down.
fn count_work(
    conn: &mut Connection,
    work: &Arc<std::sync::atomic::AtomicU64>,
) -> Result<(), StoreError> {
    let work = Arc::clone(work);
    conn.progress_handler(
        1,
        Some(move || {
            work.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
        let work = Arc::new(std::sync::atomic::AtomicU64::new(0));
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

/// Runs `f` in a read transaction (one snapshot), unless `conn` is already in a transaction
/// (a read of `:memory:` inside the writer's group).
fn read_tx<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    if !conn.is_autocommit() {
        return f(conn);
    }
    let tx = conn.transaction().map_err(db)?;
    let out = f(&tx)?;
    tx.commit().map_err(db)?;
    Ok(out)
}

/// Takes the next raising-order number (inside the writer's group, whose write lock makes the
/// stored value current even with other connections on the file): one more than both the
/// stored value and `high`, the largest this store handed out. The number is answered before
/// its group commits ([`group::Writer::write_answered_early`]); if that group is rolled back,
/// `high` still keeps this process from handing it out again, and a commit that uses it raises
/// the stored value to it ([`keep_sequence_ahead`]), so no number is used twice. Known limit:
/// a second process writing the same file could take that number between the failed group and
/// the commit that uses it (only after a commit failed: an I/O error or a full disk); `serve`
/// is one process per file.
fn take_sequence(tx: &Connection, high: &AtomicU64) -> Result<u64, StoreError> {
    let stored: i64 = tx
        .prepare_cached("SELECT value FROM sequence WHERE id = 1")
        .map_err(db)?
        .query_row([], |r| r.get(0))
        .map_err(db)?;
    let v = u64_of(stored, "sequence")?.max(high.load(Ordering::Relaxed)) + 1;
    tx.prepare_cached("UPDATE sequence SET value = ?1 WHERE id = 1")
        .map_err(db)?
        .execute(params![int_of(v, "sequence")?])
        .map_err(db)?;
    high.store(v, Ordering::Relaxed);
    Ok(v)
}

/// Raises the stored sequence to the largest number a commit stores (its records' raising
/// orders, its task statuses' input numbers; [`PreparedCommit::used_sequence`]), in the commit:
/// a number answered early whose own group was rolled back is then on disk with the first
/// commit that uses it. Writes nothing (dirties no page) when the stored value is ahead, which
/// is every time unless a group failed.
fn keep_sequence_ahead(tx: &Connection, used: Option<u64>) -> Result<(), StoreError> {
    if let Some(used) = used {
        tx.prepare_cached("UPDATE sequence SET value = ?1 WHERE id = 1 AND value < ?1")
            .map_err(db)?
            .execute(params![int_of(used, "raising order")?])
            .map_err(db)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Reading rows.

fn subject_of(t: &str, id: &str) -> Result<Subject, StoreError> {
    Subject::parse(t, id).map_err(|e| StoreError::Corrupt(format!("stored subject: {e}")))
}

fn agent_of(text: &str) -> Result<AgentId, StoreError> {
    AgentId::parse(text).map_err(|e| StoreError::Corrupt(format!("stored agent: {e}")))
}

fn tenant_of(text: &str) -> Result<Tenant, StoreError> {
    Tenant::parse(text).map_err(|e| StoreError::Corrupt(format!("stored tenant: {e}")))
}

fn kind_code(kind: TimerKind) -> i64 {
    match kind {
        TimerKind::Deadline => 0,
        TimerKind::Horizon => 1,
    }
}

fn kind_of(code: i64) -> Result<TimerKind, StoreError> {
    match code {
        0 => Ok(TimerKind::Deadline),
        1 => Ok(TimerKind::Horizon),
        other => Err(StoreError::Corrupt(format!("timer kind {other}"))),
    }
}

fn read_subject(
    conn: &Connection,
    tenant: &Tenant,
    subject: &Subject,
) -> Result<Option<SubjectState>, StoreError> {
    let row: Option<(i64, String, i64)> = conn
        .prepare_cached(
            "SELECT version, state, facts FROM subjects
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        )
        .map_err(db)?
        .query_row(
            params![tenant.as_str(), subject.subject_type, subject.id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(db)?;
    let Some((version, json, facts)) = row else {
        return Ok(None);
    };
    let mut state: SubjectState = from_json(&json, &format!("subject {subject}"))?;
    if &state.subject != subject {
        return Err(StoreError::Corrupt(format!(
            "the row of subject {subject} holds subject {}",
            state.subject
        )));
    }
    state.version = u64_of(version, "subject version")?;
    with_fact_rows(conn, tenant.as_str(), &mut state, facts)?;
    Ok(Some(state))
}

/// Appends to `state.facts` (empty, or a version 5 row's inline facts) the subject's `count`
/// fact rows, in receipt order.
///
/// # Errors
/// [`StoreError::Corrupt`] when a row does not parse or the rows are not `count`.
fn with_fact_rows(
    conn: &Connection,
    t: &str,
    state: &mut SubjectState,
    count: i64,
) -> Result<(), StoreError> {
    if count == 0 {
        return Ok(());
    }
    let what = format!("fact of subject {}", state.subject);
    let rows: Vec<String> = conn
        .prepare_cached(
            "SELECT fact FROM subject_facts
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3 ORDER BY position",
        )
        .map_err(db)?
        .query_map(
            params![t, state.subject.subject_type, state.subject.id],
            |r| r.get(0),
        )
        .map_err(db)?
        .collect::<Result<_, _>>()
        .map_err(db)?;
    if rows.len() as i64 != count {
        return Err(StoreError::Corrupt(format!(
            "subject {} counts {count} facts but has {} fact rows",
            state.subject,
            rows.len()
        )));
    }
    for json in &rows {
        state.facts.push(from_json(json, &what)?);
    }
    Ok(())
}

/// What a commit reads of a subject's stored row before writing it: its version (the
/// compare-and-set) and its fact rows' count and digest ([`write_facts`]); a subject not stored
/// is at version 0 with no facts.
struct StoredSubject {
    version: u64,
    facts: i64,
    facts_digest: Option<Vec<u8>>,
}

fn stored_subject(
    conn: &Connection,
    tenant: &Tenant,
    subject: &Subject,
) -> Result<StoredSubject, StoreError> {
    let row: Option<(i64, i64, Option<Vec<u8>>)> = conn
        .prepare_cached(
            "SELECT version, facts, facts_digest FROM subjects
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        )
        .map_err(db)?
        .query_row(
            params![tenant.as_str(), subject.subject_type, subject.id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()
        .map_err(db)?;
    match row {
        None => Ok(StoredSubject {
            version: 0,
            facts: 0,
            facts_digest: None,
        }),
        Some((version, facts, facts_digest)) => Ok(StoredSubject {
            version: u64_of(version, "subject version")?,
            facts,
            facts_digest,
        }),
    }
}

fn read_task(
    conn: &Connection,
    tenant: &Tenant,
    task: &TaskRef,
) -> Result<Option<TaskRecord>, StoreError> {
    let row: Option<(i64, String)> = conn
        .prepare_cached(
            "SELECT version, state FROM tasks WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3",
        )
        .map_err(db)?
        .query_row(
            params![tenant.as_str(), task.agent.as_str(), task.task_id.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(db)?;
    let Some((version, json)) = row else {
        return Ok(None);
    };
    let mut rec: TaskRecord = from_json(&json, &format!("task {}", task.task_id))?;
    if &rec.task != task {
        return Err(StoreError::Corrupt(format!(
            "the row of task {} holds task {}",
            task.task_id, rec.task.task_id
        )));
    }
    rec.version = u64_of(version, "task version")?;
    Ok(Some(rec))
}

fn task_version(conn: &Connection, tenant: &Tenant, task: &TaskRef) -> Result<u64, StoreError> {
    let v: Option<i64> = conn
        .prepare_cached(
            "SELECT version FROM tasks WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3",
        )
        .map_err(db)?
        .query_row(
            params![tenant.as_str(), task.agent.as_str(), task.task_id.as_str()],
            |r| r.get(0),
        )
        .optional()
        .map_err(db)?;
    v.map_or(Ok(0), |v| u64_of(v, "task version"))
}

/// Rows of `sql` whose single column is JSON of `T`.
fn json_rows<T: serde::de::DeserializeOwned>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
    what: &str,
) -> Result<Vec<T>, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(db)?;
    let texts = stmt
        .query_map(params, |r| r.get::<_, String>(0))
        .map_err(db)?
        .collect::<Result<Vec<String>, _>>()
        .map_err(db)?;
    texts.iter().map(|t| from_json(t, what)).collect()
}

/// The outbox entry (tenant, agent, messageId), if stored.
fn outbox_row(
    conn: &Connection,
    tenant: &Tenant,
    agent: &AgentId,
    message_id: &str,
) -> Result<Option<OutboxEntry>, StoreError> {
    let rows: Vec<OutboxEntry> = json_rows(
        conn,
        "SELECT entry FROM outbox WHERE tenant = ?1 AND agent = ?2 AND message_id = ?3",
        params![tenant.as_str(), agent.as_str(), message_id],
        "outbox entry",
    )?;
    Ok(rows.into_iter().next())
}

/// Writes `entry` over the stored row with its identity (tenant, agent, messageId), with the
/// columns its indexes read; `sent` is final: a sent row only takes another `sent` update.
fn write_outbox_row(conn: &Connection, entry: &OutboxEntry) -> Result<(), StoreError> {
    conn.prepare_cached(
        "UPDATE outbox SET delivery = ?4, next_attempt = ?5, entry = ?6, follow_at = ?7,
             task_id = ?8
         WHERE tenant = ?1 AND message_id = ?2 AND agent = ?3
           AND (delivery <> 'sent' OR ?4 = 'sent')",
    )
    .map_err(db)?
    .execute(params![
        entry.tenant.as_str(),
        entry.message_id,
        entry.agent.as_str(),
        entry.delivery.as_str(),
        instant_key(entry.next_attempt_at),
        to_json(entry)?,
        entry.follow_at.map(instant_key),
        entry.task_id
    ])
    .map_err(db)?;
    Ok(())
}

/// Timers in firing order: instant, raising order, deadline before horizon (then identity, so
/// that the order is total).
const TIMERS_IN_ORDER: &str = "SELECT tenant, subject_type, subject_id, agent, expectation_id,
        kind, at_key, order_input, order_index
    FROM timers WHERE at_key <= ?1
    ORDER BY at_key, order_input, order_index, kind, tenant, subject_type, subject_id, agent,
        expectation_id
    LIMIT ?2";

fn read_timers(conn: &Connection, until: &str, limit: i64) -> Result<Vec<DueTimer>, StoreError> {
    type Row = (
        String,
        String,
        String,
        String,
        String,
        i64,
        String,
        i64,
        i64,
    );
    let mut stmt = conn.prepare_cached(TIMERS_IN_ORDER).map_err(db)?;
    let rows = stmt
        .query_map(params![until, limit], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
                r.get(7)?,
                r.get(8)?,
            ))
        })
        .map_err(db)?
        .collect::<Result<Vec<Row>, _>>()
        .map_err(db)?;
    rows.into_iter()
        .map(|(tenant, st, sid, agent, eid, kind, at, input, index)| {
            Ok(DueTimer {
                at: instant_from_key(&at)?,
                order: RaiseOrder {
                    input: u64_of(input, "raising order")?,
                    index: u32::try_from(index).map_err(|_| {
                        StoreError::Corrupt(format!("raising index {index} is not a u32"))
                    })?,
                },
                tenant: tenant_of(&tenant)?,
                key: TimerKey {
                    subject: subject_of(&st, &sid)?,
                    expectation: ExpectationRef {
                        agent: agent_of(&agent)?,
                        id: ExpectationId::parse(eid).map_err(|e| {
                            StoreError::Corrupt(format!("stored expectation id: {e}"))
                        })?,
                    },
                    kind: kind_of(kind)?,
                },
            })
        })
        .collect()
}

fn limit_of(limit: usize) -> i64 {
    i64::try_from(limit).unwrap_or(i64::MAX)
}

// ---------------------------------------------------------------------------------------------
// Writing rows.

/// A subject ready for the writer: everything costly (its JSON, its index rows, their keys) is
/// done by the caller before the write reaches the writer's group (issue 10: JSON work outside
/// the write lock), so the writer runs SQL only.
struct SubjectWrite {
    subject: Subject,
    /// The version it was loaded at (the compare-and-set).
    loaded: u64,
    /// Its state's JSON at `loaded + 1`, without its facts.
    json: String,
    /// Each fact's JSON, in receipt order.
    facts: Vec<String>,
    /// [`facts_digests`] of `facts`: the digest of each prefix, from the empty one.
    digests: Vec<[u8; 32]>,
    ix: watcher_runtime::index::SubjectIndex,
    /// Its timer rows: (agent, expectation id, kind) → (at, order input, order index).
    timers: std::collections::BTreeMap<(String, String, i64), (String, i64, i64)>,
    /// Its live rows: (agent, expectation id) → until (`None`: indefinitely).
    live: std::collections::BTreeMap<(String, String), Option<String>>,
}

impl SubjectWrite {
    /// Bumps `state` to its next version and derives what the writer writes.
    fn of(mut state: SubjectState) -> Result<Self, StoreError> {
        let loaded = state.version;
        state.version += 1;
        let ix = subject_index(&state);
        let mut timers = std::collections::BTreeMap::new();
        for (key, at, order) in &ix.timers {
            timers.insert(
                (
                    key.expectation.agent.as_str().to_owned(),
                    key.expectation.id.as_str().to_owned(),
                    kind_code(key.kind),
                ),
                (
                    instant_key(*at),
                    int_of(order.input, "raising order")?,
                    i64::from(order.index),
                ),
            );
        }
        let mut live = std::collections::BTreeMap::new();
        for (key, agent, until) in &ix.live {
            let until = match until {
                LiveUntil::Closed => continue,
                LiveUntil::Indefinite => None,
                LiveUntil::Until(at) => Some(instant_key(*at)),
            };
            live.insert(
                (agent.as_str().to_owned(), key.id.as_str().to_owned()),
                until,
            );
        }
        let facts = state
            .facts
            .iter()
            .map(to_json)
            .collect::<Result<Vec<_>, _>>()?;
        state.facts = Vec::new();
        Ok(SubjectWrite {
            json: to_json(&state)?,
            digests: facts_digests(&facts),
            facts,
            subject: state.subject,
            loaded,
            ix,
            timers,
            live,
        })
    }
}

/// Writes a subject at its new version and brings its index rows to what the new state
/// derives, touching only the rows that change (issue 10, write amplification): an index
/// row already right is neither deleted nor rewritten, so its pages stay clean.
fn write_subject(
    conn: &Connection,
    tenant: &Tenant,
    w: &SubjectWrite,
    stored: &StoredSubject,
) -> Result<(), StoreError> {
    let t = tenant.as_str();
    let (st, sid) = (&w.subject.subject_type, &w.subject.id);
    write_facts(conn, t, st, sid, w, stored)?;
    let all = w.facts.len();
    conn.prepare_cached(
        "INSERT INTO subjects (tenant, subject_type, subject_id, version, state, facts,
             facts_digest)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
         ON CONFLICT (tenant, subject_type, subject_id)
         DO UPDATE SET version = excluded.version, state = excluded.state,
             facts = excluded.facts, facts_digest = excluded.facts_digest",
    )
    .map_err(db)?
    .execute(params![
        t,
        st,
        sid,
        int_of(w.loaded + 1, "subject version")?,
        w.json,
        all as i64,
        w.digests[all].as_slice()
    ])
    .map_err(db)?;

    let ix = &w.ix;
    // Expectations whose id was indexed under another subject (the engine never moves one;
    // kept right if a record ever does): their live row there is dropped, counted once.
    let mut moved: Vec<(String, String, String, String)> = Vec::new();
    for e in &ix.expectations {
        let (agent, id) = (e.agent.as_str(), e.id.as_str());
        let stored: Option<(String, String)> = conn
            .prepare_cached(
                "SELECT subject_type, subject_id FROM id_index
                 WHERE tenant = ?1 AND agent = ?2 AND expectation_id = ?3",
            )
            .map_err(db)?
            .query_row(params![t, agent, id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(db)?;
        match stored {
            Some((ost, osid)) if ost == *st && osid == *sid => {}
            Some((ost, osid)) => {
                conn.prepare_cached(
                    "UPDATE id_index SET subject_type = ?4, subject_id = ?5
                     WHERE tenant = ?1 AND agent = ?2 AND expectation_id = ?3",
                )
                .map_err(db)?
                .execute(params![t, agent, id, st, sid])
                .map_err(db)?;
                moved.push((ost, osid, agent.to_owned(), id.to_owned()));
            }
            None => {
                conn.prepare_cached(
                    "INSERT INTO id_index (tenant, agent, expectation_id, subject_type, subject_id)
                     VALUES (?1, ?2, ?3, ?4, ?5)",
                )
                .map_err(db)?
                .execute(params![t, agent, id, st, sid])
                .map_err(db)?;
            }
        }
    }
    for k in &ix.fact_keys {
        conn.prepare_cached(
            "INSERT INTO fact_index (tenant, fact_key, subject_type, subject_id)
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT DO NOTHING",
        )
        .map_err(db)?
        .execute(params![t, k.as_str(), st, sid])
        .map_err(db)?;
    }
    for (ost, osid, agent, id) in &moved {
        let gone = conn
            .prepare_cached(
                "DELETE FROM live WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                    AND agent = ?4 AND expectation_id = ?5",
            )
            .map_err(db)?
            .execute(params![t, ost, osid, agent, id])
            .map_err(db)?;
        conn.prepare_cached(
            "DELETE FROM timers WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                AND agent = ?4 AND expectation_id = ?5",
        )
        .map_err(db)?
        .execute(params![t, ost, osid, agent, id])
        .map_err(db)?;
        if gone > 0 {
            add_live_rows(conn, t, agent, -(gone as i64))?;
        }
    }
    write_timers(conn, t, st, sid, &w.timers)?;
    write_live(conn, t, st, sid, &w.live)
}

/// The SHA-256 digest of every prefix of `facts` (each fact's JSON, length-prefixed), from the
/// empty prefix to the whole: `facts.len() + 1` digests. Written with the subject
/// (`facts_digest`), it tells the next commit whether its facts extend the stored ones.
fn facts_digests(facts: &[String]) -> Vec<[u8; 32]> {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    let mut out = Vec::with_capacity(facts.len() + 1);
    out.push(hasher.clone().finalize().into());
    for f in facts {
        hasher.update((f.len() as u64).to_le_bytes());
        hasher.update(f.as_bytes());
        out.push(hasher.clone().finalize().into());
    }
    out
}

/// Writes the subject's fact rows (issue 10, write amplification): when the stored facts are
/// a prefix of the new ones (same count and digest, what every step of the engine does: facts
/// are only appended), only the new facts are inserted; otherwise every fact row is rewritten.
/// A version 5 row (facts inline in `state`, none counted) has the empty prefix: all its facts
/// become rows.
fn write_facts(
    conn: &Connection,
    t: &str,
    st: &str,
    sid: &str,
    w: &SubjectWrite,
    stored: &StoredSubject,
) -> Result<(), StoreError> {
    let kept = usize::try_from(stored.facts).ok().filter(|&c| {
        w.digests
            .get(c)
            .is_some_and(|d| match &stored.facts_digest {
                Some(stored) => stored.as_slice() == d.as_slice(),
                None => c == 0,
            })
    });
    let from = match kept {
        Some(c) => c,
        None => {
            conn.prepare_cached(
                "DELETE FROM subject_facts
                 WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
            )
            .map_err(db)?
            .execute(params![t, st, sid])
            .map_err(db)?;
            0
        }
    };
    for (position, json) in w.facts.iter().enumerate().skip(from) {
        conn.prepare_cached(
            "INSERT INTO subject_facts (tenant, subject_type, subject_id, position, fact)
             VALUES (?1, ?2, ?3, ?4, ?5)",
        )
        .map_err(db)?
        .execute(params![t, st, sid, position as i64, json])
        .map_err(db)?;
    }
    Ok(())
}

/// Brings the subject's timer rows to `wanted` ([`SubjectWrite::timers`]): deletes the ones
/// gone, inserts the new ones, updates the ones whose instant or order changed, leaves the rest.
fn write_timers(
    conn: &Connection,
    t: &str,
    st: &str,
    sid: &str,
    wanted: &std::collections::BTreeMap<(String, String, i64), (String, i64, i64)>,
) -> Result<(), StoreError> {
    let stored: std::collections::BTreeMap<(String, String, i64), (String, i64, i64)> = conn
        .prepare_cached(
            "SELECT agent, expectation_id, kind, at_key, order_input, order_index FROM timers
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        )
        .map_err(db)?
        .query_map(params![t, st, sid], |r| {
            Ok((
                (r.get(0)?, r.get(1)?, r.get(2)?),
                (r.get(3)?, r.get(4)?, r.get(5)?),
            ))
        })
        .map_err(db)?
        .collect::<Result<_, _>>()
        .map_err(db)?;
    for (id, _) in stored.iter().filter(|(id, _)| !wanted.contains_key(*id)) {
        conn.prepare_cached(
            "DELETE FROM timers WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                AND agent = ?4 AND expectation_id = ?5 AND kind = ?6",
        )
        .map_err(db)?
        .execute(params![t, st, sid, id.0, id.1, id.2])
        .map_err(db)?;
    }
    for (id, value) in wanted {
        match stored.get(id) {
            Some(old) if old == value => {}
            Some(_) => {
                conn.prepare_cached(
                    "UPDATE timers SET at_key = ?7, order_input = ?8, order_index = ?9
                     WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                        AND agent = ?4 AND expectation_id = ?5 AND kind = ?6",
                )
                .map_err(db)?
                .execute(params![
                    t, st, sid, id.0, id.1, id.2, value.0, value.1, value.2
                ])
                .map_err(db)?;
            }
            None => {
                conn.prepare_cached(
                    "INSERT INTO timers (tenant, subject_type, subject_id, agent, expectation_id,
                         kind, at_key, order_input, order_index)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
                )
                .map_err(db)?
                .execute(params![
                    t, st, sid, id.0, id.1, id.2, value.0, value.1, value.2
                ])
                .map_err(db)?;
            }
        }
    }
    Ok(())
}

/// Brings the subject's live rows to `wanted` ([`SubjectWrite::live`]; closed records have
/// none), touching only the rows that change, and `agent_live_rows` by the difference, per
/// agent.
fn write_live(
    conn: &Connection,
    t: &str,
    st: &str,
    sid: &str,
    wanted: &std::collections::BTreeMap<(String, String), Option<String>>,
) -> Result<(), StoreError> {
    let stored: std::collections::BTreeMap<(String, String), Option<String>> = conn
        .prepare_cached(
            "SELECT agent, expectation_id, live_until FROM live
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        )
        .map_err(db)?
        .query_map(params![t, st, sid], |r| {
            Ok(((r.get(0)?, r.get(1)?), r.get(2)?))
        })
        .map_err(db)?
        .collect::<Result<_, _>>()
        .map_err(db)?;
    let mut delta: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    for ((agent, id), _) in stored.iter().filter(|(k, _)| !wanted.contains_key(*k)) {
        conn.prepare_cached(
            "DELETE FROM live WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                AND agent = ?4 AND expectation_id = ?5",
        )
        .map_err(db)?
        .execute(params![t, st, sid, agent, id])
        .map_err(db)?;
        *delta.entry(agent.clone()).or_default() -= 1;
    }
    for ((agent, id), until) in wanted {
        match stored.get(&(agent.clone(), id.clone())) {
            Some(old) if old == until => {}
            Some(_) => {
                conn.prepare_cached(
                    "UPDATE live SET live_until = ?6
                     WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                        AND agent = ?4 AND expectation_id = ?5",
                )
                .map_err(db)?
                .execute(params![t, st, sid, agent, id, until])
                .map_err(db)?;
            }
            None => {
                conn.prepare_cached(
                    "INSERT INTO live (tenant, subject_type, subject_id, agent, expectation_id,
                         live_until)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .map_err(db)?
                .execute(params![t, st, sid, agent, id, until])
                .map_err(db)?;
                *delta.entry(agent.clone()).or_default() += 1;
            }
        }
    }
    for (agent, d) in delta.into_iter().filter(|(_, d)| *d != 0) {
        add_live_rows(conn, t, &agent, d)?;
    }
    Ok(())
}

/// Adds `d` (may be negative) to the agent's count of live rows.
fn add_live_rows(conn: &Connection, t: &str, agent: &str, d: i64) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO agent_live_rows (tenant, agent, rows) VALUES (?1, ?2, ?3)
         ON CONFLICT (tenant, agent) DO UPDATE SET rows = rows + excluded.rows",
    )
    .map_err(db)?
    .execute(params![t, agent, d])
    .map_err(db)?;
    Ok(())
}

/// How many of an agent's records count against its bound at `?3` (`is_live`: no end, or an end
/// at or after now): its `live` rows, kept as a counter in `agent_live_rows` by every commit,
/// less the rows whose end has passed — an index range that holds only deadlines not yet fired,
/// so the cost does not grow with the agent's open expectations (issue 10). NULL ends (waiting
/// on an anchor) sort before every key; `live_until > ''` starts the range after them.
pub(crate) const LIVE_COUNT_SQL: &str =
    "SELECT coalesce((SELECT rows FROM agent_live_rows WHERE tenant = ?1 AND agent = ?2), 0)
          - (SELECT COUNT(*) FROM live WHERE tenant = ?1 AND agent = ?2
                AND live_until > '' AND live_until < ?3)";

/// A task record ready for the writer (see [`SubjectWrite`]).
struct TaskWrite {
    task: TaskRef,
    loaded: u64,
    /// Its JSON at `loaded + 1`.
    json: String,
}

/// An outbox row ready for the writer: the entry, its JSON and its keys.
struct OutboxWrite {
    entry: OutboxEntry,
    json: String,
    next_attempt: String,
    follow_at: Option<String>,
    lapsed_at: String,
}

/// A [`Commit`] ready for the writer: serialised and keyed by [`PreparedCommit::of`] on the
/// caller's thread, so that the writer's group (the one thread every commit waits for) runs
/// SQL only.
struct PreparedCommit {
    subjects: Vec<SubjectWrite>,
    tasks: Vec<TaskWrite>,
    outbox: Vec<OutboxWrite>,
    /// (agent, at, JSON) per rejection.
    rejections: Vec<(String, String, String)>,
    /// The largest input number the commit stores: its records' raising orders and its task
    /// statuses' `seq` ([`keep_sequence_ahead`]).
    used_sequence: Option<u64>,
}

impl PreparedCommit {
    fn of(commit: Commit) -> Result<Self, StoreError> {
        // Every number the commit stores: raising orders and the inputs of task statuses.
        let used_sequence = commit
            .subjects
            .iter()
            .flat_map(|s| s.records.iter().map(|r| r.order.input))
            .chain(commit.tasks.iter().flat_map(|t| {
                t.statuses
                    .iter()
                    .chain(t.withdrawn_by.iter())
                    .map(|seen| seen.seq)
            }))
            .max();
        let tasks = commit
            .tasks
            .into_iter()
            .map(|mut t| {
                let loaded = t.version;
                t.version += 1;
                Ok(TaskWrite {
                    json: to_json(&t)?,
                    task: t.task,
                    loaded,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        let outbox = commit
            .outbox
            .into_iter()
            .map(|o| {
                Ok(OutboxWrite {
                    json: to_json(&o)?,
                    next_attempt: instant_key(o.next_attempt_at),
                    follow_at: o.follow_at.map(instant_key),
                    lapsed_at: instant_key(o.lapsed_at),
                    entry: o,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        let rejections = commit
            .rejections
            .iter()
            .map(|r| Ok((r.agent.as_str().to_owned(), instant_key(r.at), to_json(r)?)))
            .collect::<Result<_, StoreError>>()?;
        Ok(PreparedCommit {
            subjects: commit
                .subjects
                .into_iter()
                .map(SubjectWrite::of)
                .collect::<Result<_, _>>()?,
            tasks,
            outbox,
            rejections,
            used_sequence,
        })
    }
}

fn write_task(conn: &Connection, tenant: &Tenant, w: &TaskWrite) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO tasks (tenant, agent, task_id, version, state) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (tenant, agent, task_id)
         DO UPDATE SET version = excluded.version, state = excluded.state",
    )
    .map_err(db)?
    .execute(params![
        tenant.as_str(),
        w.task.agent.as_str(),
        w.task.task_id.as_str(),
        int_of(w.loaded + 1, "task version")?,
        w.json
    ])
    .map_err(db)?;
    Ok(())
}

/// The whole of [`Records::commit`](watcher_runtime::store::Records::commit), inside the writer's group (`BEGIN IMMEDIATE`, its own
/// savepoint): the write lock is held before the versions are read, so no other writer can move
/// them in between; a lost compare-and-set rolls back this commit alone.
fn commit_in(tx: &Connection, tenant: &Tenant, commit: &PreparedCommit) -> Result<(), StoreError> {
    let mut stored = Vec::with_capacity(commit.subjects.len());
    for s in &commit.subjects {
        let row = stored_subject(tx, tenant, &s.subject)?;
        if row.version != s.loaded {
            // Dropping `tx` rolls back: nothing of this commit is written.
            return Err(StoreError::Conflict(format!("subject {}", s.subject)));
        }
        stored.push(row);
    }
    for t in &commit.tasks {
        if task_version(tx, tenant, &t.task)? != t.loaded {
            return Err(StoreError::Conflict(format!("task {}", t.task.task_id)));
        }
    }
    keep_sequence_ahead(tx, commit.used_sequence)?;
    for (s, row) in commit.subjects.iter().zip(&stored) {
        write_subject(tx, tenant, s, row)?;
    }
    for t in &commit.tasks {
        write_task(tx, tenant, t)?;
    }
    for o in &commit.outbox {
        let e = &o.entry;
        tx.prepare_cached(
            "INSERT INTO outbox (tenant, message_id, agent, delivery, next_attempt, entry, follow_at,
                 task_id, lapsed_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
             ON CONFLICT (tenant, agent, message_id) DO NOTHING",
        )
        .map_err(db)?
        .execute(params![
            e.tenant.as_str(),
            e.message_id,
            e.agent.as_str(),
            e.delivery.as_str(),
            o.next_attempt,
            o.json,
            o.follow_at,
            e.task_id,
            o.lapsed_at
        ])
        .map_err(db)?;
    }
    for (agent, at, json) in &commit.rejections {
        tx.prepare_cached(
            "INSERT INTO rejections (tenant, agent, at_key, rejection) VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(db)?
        .execute(params![tenant.as_str(), agent, at, json])
        .map_err(db)?;
    }
    Ok(())
}

fn load_in(
    conn: &mut Connection,
    tenant: &Tenant,
    scope: &Scope,
    now: Instant,
) -> Result<Slice, StoreError> {
    // One read transaction: every part of the slice comes from the same snapshot.
    read_tx(conn, |tx| load_body(tx, tenant, scope, now))
}

fn load_body(
    tx: &Connection,
    tenant: &Tenant,
    scope: &Scope,
    now: Instant,
) -> Result<Slice, StoreError> {
    let t = tenant.as_str();
    let mut slice = Slice::new(tenant.clone());
    for s in &scope.subjects {
        let state = read_subject(tx, tenant, s)?.unwrap_or_else(|| SubjectState::new(s.clone()));
        slice.subjects.insert(s.clone(), state);
    }
    for k in &scope.fact_keys {
        let mut stmt = tx
            .prepare_cached(
                "SELECT subject_type, subject_id FROM fact_index WHERE tenant = ?1 AND fact_key = ?2",
            )
            .map_err(db)?;
        let rows = stmt
            .query_map(params![t, k.as_str()], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
            })
            .map_err(db)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db)?;
        let set = rows
            .iter()
            .map(|(st, sid)| subject_of(st, sid))
            .collect::<Result<_, _>>()?;
        slice.fact_index.insert(k.clone(), set);
    }
    for e in &scope.expectations {
        let row: Option<(String, String)> = tx
            .prepare_cached(
                "SELECT subject_type, subject_id FROM id_index
                 WHERE tenant = ?1 AND agent = ?2 AND expectation_id = ?3",
            )
            .map_err(db)?
            .query_row(params![t, e.agent.as_str(), e.id.as_str()], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()
            .map_err(db)?;
        let subject = row.map(|(st, sid)| subject_of(&st, &sid)).transpose()?;
        slice.id_index.insert(e.clone(), subject);
    }
    for task in &scope.tasks {
        slice
            .tasks
            .insert(task.clone(), read_task(tx, tenant, task)?);
    }
    let now_key = instant_key(now);
    for a in &scope.agents {
        let count: i64 = tx
            .prepare_cached(LIVE_COUNT_SQL)
            .map_err(db)?
            .query_row(params![t, a.as_str(), now_key], |r| r.get(0))
            .map_err(db)?;
        slice
            .agent_live
            .insert(a.clone(), u64_of(count, "live count")?);
    }
    Ok(slice)
}

/// Rows of `sql` as (key, JSON text) pairs, the key being the first column.
fn keyed_json_rows<K: rusqlite::types::FromSql>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<(K, String)>, StoreError> {
    let mut stmt = conn.prepare_cached(sql).map_err(db)?;
    let rows = stmt
        .query_map(params, |r| Ok((r.get::<_, K>(0)?, r.get::<_, String>(1)?)))
        .map_err(db)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(db)?;
    Ok(rows)
}

/// Rows one batch of [`Upkeep::purge`](watcher_runtime::store::Upkeep::purge) looks at: each batch is its own short transaction, and
/// the connection is free for requests between batches (issue 10: one purge of 98k rows in one
/// transaction stalled every request for half a second).
pub const PURGE_BATCH: usize = 500;

/// Where a batched purge stands: the table being purged and the last key looked at in it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum PurgeCursor {
    /// Subjects after (tenant, subject_type, subject_id).
    Subjects(Option<(String, String, String)>),
    /// Tasks after (tenant, agent, task_id), once every subject was looked at.
    Tasks(Option<(String, String, String)>),
    /// Outbox rows after `seq`.
    Outbox(i64),
    /// Rejections after `id`.
    Rejections(i64),
}

type Key3 = (String, String, String);

/// One batch of [`Upkeep::purge`](watcher_runtime::store::Upkeep::purge), one write of the writer's group: looks at up to `batch`
/// rows of the table `at` stands in, after its key, deletes those [`watcher_runtime::retention`]
/// allows, and answers what it deleted and where the next batch starts (`None`: done). Which
/// items go is decided by the retention rule; the SQL only narrows the rows it is asked about.
fn purge_batch(
    tx: &Connection,
    before: Instant,
    at: PurgeCursor,
    batch: usize,
) -> Result<(PurgeReport, Option<PurgeCursor>), StoreError> {
    let mut report = PurgeReport::default();
    let limit = limit_of(batch.max(1));
    let full = |n: usize| n >= batch.max(1);
    let next = match at {
        PurgeCursor::Subjects(after) => {
            // A subject with a `live` row has a record that can still lapse: its state is not
            // read. A subject is deleted with its index rows (fact keys, expectation ids,
            // timers), found from its state (`delete_subject_index`).
            let (t, st, sid) = after.clone().unwrap_or_default();
            type Row = (String, String, String, Option<String>, i64);
            let rows: Vec<Row> = {
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT tenant, subject_type, subject_id,
                            CASE WHEN EXISTS (SELECT 1 FROM live AS l WHERE l.tenant = s.tenant
                                AND l.subject_type = s.subject_type
                                AND l.subject_id = s.subject_id) THEN NULL ELSE state END,
                            facts
                         FROM subjects AS s
                         WHERE ?1 = 0 OR (tenant, subject_type, subject_id) > (?2, ?3, ?4)
                         ORDER BY tenant, subject_type, subject_id LIMIT ?5",
                    )
                    .map_err(db)?;
                let rows = stmt
                    .query_map(params![after.is_some(), t, st, sid, limit], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
                    })
                    .map_err(db)?
                    .collect::<Result<Vec<Row>, _>>()
                    .map_err(db)?;
                rows
            };
            for (tenant, st, sid, json, facts) in &rows {
                let Some(json) = json else { continue };
                let mut state: SubjectState = from_json(json, "subject")?;
                with_fact_rows(tx, tenant, &mut state, *facts)?;
                if !subject_retention(&state).purgeable(before) {
                    continue;
                }
                report.subjects += tx
                    .prepare_cached(
                        "DELETE FROM subjects
                         WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
                    )
                    .map_err(db)?
                    .execute(params![tenant, st, sid])
                    .map_err(db)? as u64;
                delete_subject_index(tx, tenant, st, sid, &subject_index(&state))?;
            }
            match rows.last() {
                Some((t, st, sid, _, _)) if full(rows.len()) => {
                    PurgeCursor::Subjects(Some((t.clone(), st.clone(), sid.clone())))
                }
                _ => PurgeCursor::Tasks(None),
            }
        }
        PurgeCursor::Tasks(after) => {
            let (t, ag, id) = after.clone().unwrap_or_default();
            let rows: Vec<(Key3, String)> = {
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT tenant, agent, task_id, state FROM tasks
                         WHERE ?1 = 0 OR (tenant, agent, task_id) > (?2, ?3, ?4)
                         ORDER BY tenant, agent, task_id LIMIT ?5",
                    )
                    .map_err(db)?;
                let rows = stmt
                    .query_map(params![after.is_some(), t, ag, id, limit], |r| {
                        Ok(((r.get(0)?, r.get(1)?, r.get(2)?), r.get(3)?))
                    })
                    .map_err(db)?
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(db)?;
                rows
            };
            for ((tenant, agent, task_id), json) in &rows {
                let task: TaskRecord = from_json(json, "task")?;
                let mut stored = false;
                for s in &task.subjects {
                    let found: Option<i64> = tx
                        .prepare_cached(
                            "SELECT 1 FROM subjects
                             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
                        )
                        .map_err(db)?
                        .query_row(params![tenant, s.subject_type, s.id], |r| r.get(0))
                        .optional()
                        .map_err(db)?;
                    if found.is_some() {
                        stored = true;
                        break;
                    }
                }
                if !task_retention(&task, stored).purgeable(before) {
                    continue;
                }
                report.tasks += tx
                    .prepare_cached(
                        "DELETE FROM tasks WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3",
                    )
                    .map_err(db)?
                    .execute(params![tenant, agent, task_id])
                    .map_err(db)? as u64;
            }
            match rows.last() {
                Some((key, _)) if full(rows.len()) => PurgeCursor::Tasks(Some(key.clone())),
                _ => PurgeCursor::Outbox(0),
            }
        }
        PurgeCursor::Outbox(after) => {
            // Lapse tasks: queued ones are always kept.
            let rows: Vec<(i64, String)> = keyed_json_rows(
                tx,
                "SELECT seq, entry FROM outbox WHERE seq > ?1 AND delivery <> 'queued'
                 ORDER BY seq LIMIT ?2",
                params![after, limit],
            )?;
            for (seq, json) in &rows {
                let entry: OutboxEntry = from_json(json, "outbox entry")?;
                if outbox_retention(&entry).purgeable(before) {
                    report.outbox += tx
                        .prepare_cached("DELETE FROM outbox WHERE seq = ?1")
                        .map_err(db)?
                        .execute(params![seq])
                        .map_err(db)? as u64;
                }
            }
            match rows.last() {
                Some((seq, _)) if full(rows.len()) => PurgeCursor::Outbox(*seq),
                _ => PurgeCursor::Rejections(0),
            }
        }
        PurgeCursor::Rejections(after) => {
            // `at_key` is the rejection's `at`.
            let rows: Vec<(i64, String)> = keyed_json_rows(
                tx,
                "SELECT id, rejection FROM rejections WHERE id > ?1 AND at_key < ?2
                 ORDER BY id LIMIT ?3",
                params![after, instant_key(before), limit],
            )?;
            for (id, json) in &rows {
                let stored: Rejection = from_json(json, "rejection")?;
                if rejection_retention(&stored).purgeable(before) {
                    report.rejections += tx
                        .prepare_cached("DELETE FROM rejections WHERE id = ?1")
                        .map_err(db)?
                        .execute(params![id])
                        .map_err(db)? as u64;
                }
            }
            return Ok((
                report,
                match rows.last() {
                    Some((id, _)) if full(rows.len()) => Some(PurgeCursor::Rejections(*id)),
                    _ => None,
                },
            ));
        }
    };
    Ok((report, Some(next)))
}

/// Deletes the rows of a purged subject besides its own: its timer and fact rows (by the
/// subject, their key's prefix), the expectation ids still pointing at it and its fact keys' rows for it. Every
/// record a subject ever held stays in its state, so its index derives every row it was given.
fn delete_subject_index(
    tx: &Connection,
    t: &str,
    st: &str,
    sid: &str,
    ix: &watcher_runtime::index::SubjectIndex,
) -> Result<(), StoreError> {
    // A subject with a live row is never purged, so it has no live rows to delete.
    for sql in [
        "DELETE FROM timers WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        "DELETE FROM subject_facts WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
    ] {
        tx.prepare_cached(sql)
            .map_err(db)?
            .execute(params![t, st, sid])
            .map_err(db)?;
    }
    for e in &ix.expectations {
        tx.prepare_cached(
            "DELETE FROM id_index WHERE tenant = ?1 AND agent = ?2 AND expectation_id = ?3
                AND subject_type = ?4 AND subject_id = ?5",
        )
        .map_err(db)?
        .execute(params![t, e.agent.as_str(), e.id.as_str(), st, sid])
        .map_err(db)?;
    }
    for k in &ix.fact_keys {
        tx.prepare_cached(
            "DELETE FROM fact_index WHERE tenant = ?1 AND fact_key = ?2
                AND subject_type = ?3 AND subject_id = ?4",
        )
        .map_err(db)?
        .execute(params![t, k.as_str(), st, sid])
        .map_err(db)?;
    }
    Ok(())
}

impl SqliteStore {
    /// [`Upkeep::purge`](watcher_runtime::store::Upkeep::purge) in batches of `batch` rows, each its own transaction; `between(n)` is
    /// awaited after the `n`-th batch (from 1), with the connection free: `serve`'s purge
    /// yields there so requests go on during a large purge, and tests make requests there.
    ///
    /// # Errors
    /// The first batch's error; what earlier batches deleted stays deleted (each batch deletes
    /// whole items: a subject with its index rows).
    pub async fn purge_batched<F, Fut>(
        &self,
        before: Instant,
        batch: usize,
        mut between: F,
    ) -> Result<PurgeReport, StoreError>
    where
        F: FnMut(u64) -> Fut + Send,
        Fut: std::future::Future<Output = ()> + Send,
    {
        let mut report = PurgeReport::default();
        let mut at = Some(PurgeCursor::Subjects(None));
        let mut batches = 0u64;
        while let Some(cursor) = at {
            let (done, next) = self
                .write(move |conn| purge_batch(conn, before, cursor, batch))
                .await?;
            report.subjects += done.subjects;
            report.tasks += done.tasks;
            report.outbox += done.outbox;
            report.rejections += done.rejections;
            batches += 1;
            between(batches).await;
            at = next;
        }
        // Origins followed since before the cut (long past any give_up_after: an agent no
        // longer configured), in batches like the rest.
        loop {
            let deleted = self.purge_origins(before, batch).await?;
            if deleted < batch {
                break;
            }
            between(batches).await;
        }
        Ok(report)
    }
}

/// The positions one page may look at, in order, after `?2`, at most `?3`, through the index
/// by (tenant, seq) or (tenant, agent, seq) (`?4`, the agent, is NULL with the first); the
/// entry only where the filters (`?5` delivery, `?6` lapsed at or after) match.
const LAPSE_WINDOW_TENANT: &str = "SELECT seq,
        CASE WHEN (?5 IS NULL OR delivery = ?5) AND (?6 IS NULL OR lapsed_at >= ?6)
            THEN entry END
    FROM outbox INDEXED BY outbox_tenant
    WHERE tenant = ?1 AND seq > ?2 AND ?4 IS NULL ORDER BY seq LIMIT ?3";
const LAPSE_WINDOW_AGENT: &str = "SELECT seq,
        CASE WHEN (?5 IS NULL OR delivery = ?5) AND (?6 IS NULL OR lapsed_at >= ?6)
            THEN entry END
    FROM outbox INDEXED BY outbox_agent_seq
    WHERE tenant = ?1 AND agent = ?4 AND seq > ?2 ORDER BY seq LIMIT ?3";

/// The whole of [`Outbox::lapses_page`](watcher_runtime::store::Outbox::lapses_page) in one read transaction: steps through the window and
/// stops as soon as the page is full, so the cost follows the positions looked at.
fn lapses_page_in(
    conn: &mut Connection,
    tenant: &Tenant,
    query: &LapseQuery,
) -> Result<LapsePage, StoreError> {
    read_tx(conn, |tx| lapses_page_body(tx, tenant, query))
}

fn lapses_page_body(
    tx: &Connection,
    tenant: &Tenant,
    query: &LapseQuery,
) -> Result<LapsePage, StoreError> {
    let limit = query.limit.max(1);
    let budget = lapse_scan_budget(limit);
    let after = query.after.map_or(Ok(0), |a| int_of(a, "lapse cursor"))?;
    let window = if query.agent.is_some() {
        LAPSE_WINDOW_AGENT
    } else {
        LAPSE_WINDOW_TENANT
    };
    let agent = query.agent.as_ref().map(|a| a.as_str().to_string());
    let mut page = LapsePage::default();
    {
        let mut stmt = tx.prepare_cached(window).map_err(db)?;
        let mut rows = stmt
            .query(params![
                tenant.as_str(),
                after,
                limit_of(budget),
                agent,
                query.delivery.map(DeliveryState::as_str),
                query.since.map(instant_key)
            ])
            .map_err(db)?;
        let mut looked = 0usize;
        let mut last = None;
        while let Some(row) = rows.next().map_err(db)? {
            let seq: i64 = row.get(0).map_err(db)?;
            let entry: Option<String> = row.get(1).map_err(db)?;
            if let Some(json) = entry {
                if page.entries.len() == limit {
                    // A match after a full page: the next page starts after the page's last.
                    page.next = last;
                    break;
                }
                page.entries.push((
                    u64_of(seq, "outbox seq")?,
                    from_json(&json, "outbox entry")?,
                ));
            }
            looked += 1;
            last = Some(u64_of(seq, "outbox seq")?);
            if looked == budget {
                page.next = last;
            }
        }
    }
    Ok(page)
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
        "it is a folder, not a database file".to_string()
    } else if path.exists()
        && std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
    {
        "permission denied: the file cannot be opened for writing by this user".to_string()
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
        let prepared = PreparedCommit::of(Commit {
            tasks: vec![rec],
            ..Commit::default()
        })
        .unwrap();
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
                .commit(
                    &t,
                    Commit {
                        subjects: vec![state],
                        ..Commit::default()
                    },
                )
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
            store
                .outbox_due(at("2026-09-10T12:00:00Z"), limit)
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
                store
                    .commit(
                        &t,
                        Commit {
                            rejections: vec![r],
                            ..Commit::default()
                        },
                    )
                    .await
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
                store
                    .commit(
                        &t,
                        Commit {
                            subjects: vec![s],
                            ..Commit::default()
                        },
                    )
                    .await
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
