//! The watcher's [`Store`] over SQLite: the durable store of `a2a-watcher serve`
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

mod codec;
pub mod schema;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};
use watcher_core::engine::{LiveUntil, Rejection, TimerKey, TimerKind};
use watcher_core::ids::{AgentId, ExpectationId, ExpectationRef, Subject, TaskRef, Tenant};
use watcher_core::record::{ExpectationRecord, RaiseOrder};
use watcher_core::slice::{Scope, Slice, SubjectState, TaskRecord};
use watcher_core::time::Instant;
use watcher_runtime::index::subject_index;
use watcher_runtime::retention::{
    outbox_retention, rejection_retention, subject_retention, task_retention,
};
use watcher_runtime::store::{
    Commit, DeliveryState, DueTimer, OutboxEntry, PurgeReport, Store, StoreError,
};

use codec::{
    db, from_json, instant_from_key, instant_key, int_of, to_json, u64_of, AFTER_EVERY_INSTANT,
};

/// A [`Store`] over one SQLite database: a file ([`SqliteStore::open`]) or a private in-memory
/// database ([`SqliteStore::memory`]).
///
/// Holds one connection behind a mutex; every operation runs on tokio's blocking pool
/// (`spawn_blocking`), so it must be used inside a tokio runtime. Cloning shares the connection.
///
/// Why `spawn_blocking` and not `block_in_place`: rusqlite blocks (disk I/O, waiting up to the
/// busy timeout for another writer), which must not stall an async worker; `block_in_place`
/// panics on a current-thread runtime (the default of `#[tokio::test]`) and stalls the other
/// tasks of its worker, whereas `spawn_blocking` works on every runtime at the cost of moving
/// owned arguments into the closure. One connection serialises this process's operations,
/// which is what a single-file local watcher needs; WAL still lets other processes read while
/// it writes.
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
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
        let conn = Connection::open(path).map_err(db)?;
        Self::prepared(conn)
    }

    /// A fresh, empty in-memory database, for tests. It lives as long as this store (and its
    /// clones): SQLite's `:memory:` database belongs to its one connection.
    ///
    /// # Errors
    /// [`StoreError::Backend`] if SQLite cannot allocate the database or write the schema.
    pub fn memory() -> Result<Self, StoreError> {
        let conn = Connection::open_in_memory().map_err(db)?;
        Self::prepared(conn)
    }

    fn prepared(mut conn: Connection) -> Result<Self, StoreError> {
        schema::prepare(&mut conn)?;
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection on tokio's blocking pool.
    async fn run<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, StoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            // A panic while the lock was held poisons it, but rusqlite rolls back a transaction
            // dropped during unwinding, so the connection is still consistent: keep using it.
            let mut guard = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut guard)
        })
        .await
        .map_err(StoreError::backend)?
    }
}

/// Bumps and returns the raising-order sequence in one transaction.
fn take_sequence(conn: &mut Connection) -> Result<u64, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)?;
    let v: i64 = tx
        .query_row(
            "UPDATE sequence SET value = value + 1 WHERE id = 1 RETURNING value",
            [],
            |r| r.get(0),
        )
        .map_err(db)?;
    tx.commit().map_err(db)?;
    u64_of(v, "sequence")
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
    let row: Option<(i64, String)> = conn
        .prepare_cached(
            "SELECT version, state FROM subjects
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        )
        .map_err(db)?
        .query_row(
            params![tenant.as_str(), subject.subject_type, subject.id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()
        .map_err(db)?;
    let Some((version, json)) = row else {
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
    Ok(Some(state))
}

fn subject_version(
    conn: &Connection,
    tenant: &Tenant,
    subject: &Subject,
) -> Result<u64, StoreError> {
    let v: Option<i64> = conn
        .prepare_cached(
            "SELECT version FROM subjects
             WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
        )
        .map_err(db)?
        .query_row(
            params![tenant.as_str(), subject.subject_type, subject.id],
            |r| r.get(0),
        )
        .optional()
        .map_err(db)?;
    v.map_or(Ok(0), |v| u64_of(v, "subject version"))
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

/// Writes a subject (already at its new version) and replaces its index rows.
fn write_subject(
    conn: &Connection,
    tenant: &Tenant,
    state: &SubjectState,
) -> Result<(), StoreError> {
    let t = tenant.as_str();
    let (st, sid) = (&state.subject.subject_type, &state.subject.id);
    conn.prepare_cached(
        "INSERT INTO subjects (tenant, subject_type, subject_id, version, state)
         VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (tenant, subject_type, subject_id)
         DO UPDATE SET version = excluded.version, state = excluded.state",
    )
    .map_err(db)?
    .execute(params![
        t,
        st,
        sid,
        int_of(state.version, "subject version")?,
        to_json(state)?
    ])
    .map_err(db)?;

    let ix = subject_index(state);
    for e in &ix.expectations {
        conn.prepare_cached(
            "INSERT INTO id_index (tenant, agent, expectation_id, subject_type, subject_id)
             VALUES (?1, ?2, ?3, ?4, ?5)
             ON CONFLICT (tenant, agent, expectation_id)
             DO UPDATE SET subject_type = excluded.subject_type, subject_id = excluded.subject_id",
        )
        .map_err(db)?
        .execute(params![t, e.agent.as_str(), e.id.as_str(), st, sid])
        .map_err(db)?;
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

    conn.prepare_cached(
        "DELETE FROM timers WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
    )
    .map_err(db)?
    .execute(params![t, st, sid])
    .map_err(db)?;
    for (key, at, order) in &ix.timers {
        conn.prepare_cached(
            "INSERT INTO timers (tenant, subject_type, subject_id, agent, expectation_id, kind,
                 at_key, order_input, order_index)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
        )
        .map_err(db)?
        .execute(params![
            t,
            key.subject.subject_type,
            key.subject.id,
            key.expectation.agent.as_str(),
            key.expectation.id.as_str(),
            kind_code(key.kind),
            instant_key(*at),
            int_of(order.input, "raising order")?,
            i64::from(order.index),
        ])
        .map_err(db)?;
    }

    // The live rows are replaced; `agent_live_rows` follows by the difference, per agent.
    let mut delta: std::collections::BTreeMap<String, i64> = std::collections::BTreeMap::new();
    {
        let mut stmt = conn
            .prepare_cached(
                "DELETE FROM live WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3
                 RETURNING agent",
            )
            .map_err(db)?;
        let gone = stmt
            .query_map(params![t, st, sid], |r| r.get::<_, String>(0))
            .map_err(db)?;
        for agent in gone {
            *delta.entry(agent.map_err(db)?).or_default() -= 1;
        }
    }
    for (key, agent, until) in &ix.live {
        let until = match until {
            LiveUntil::Closed => continue,
            LiveUntil::Indefinite => None,
            LiveUntil::Until(at) => Some(instant_key(*at)),
        };
        // An expectation has one subject, so this finds nothing unless a row was left under
        // another subject; then it moves, counted once.
        let moved = conn
            .prepare_cached(
                "DELETE FROM live WHERE tenant = ?1 AND agent = ?2 AND expectation_id = ?3",
            )
            .map_err(db)?
            .execute(params![t, agent.as_str(), key.id.as_str()])
            .map_err(db)?;
        conn.prepare_cached(
            "INSERT INTO live (tenant, agent, expectation_id, subject_type, subject_id, live_until)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )
        .map_err(db)?
        .execute(params![t, agent.as_str(), key.id.as_str(), st, sid, until])
        .map_err(db)?;
        *delta.entry(agent.as_str().to_owned()).or_default() += 1 - moved as i64;
    }
    for (agent, d) in delta.into_iter().filter(|(_, d)| *d != 0) {
        conn.prepare_cached(
            "INSERT INTO agent_live_rows (tenant, agent, rows) VALUES (?1, ?2, ?3)
             ON CONFLICT (tenant, agent) DO UPDATE SET rows = rows + excluded.rows",
        )
        .map_err(db)?
        .execute(params![t, agent, d])
        .map_err(db)?;
    }
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

fn write_task(conn: &Connection, tenant: &Tenant, rec: &TaskRecord) -> Result<(), StoreError> {
    conn.prepare_cached(
        "INSERT INTO tasks (tenant, agent, task_id, version, state) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (tenant, agent, task_id)
         DO UPDATE SET version = excluded.version, state = excluded.state",
    )
    .map_err(db)?
    .execute(params![
        tenant.as_str(),
        rec.task.agent.as_str(),
        rec.task.task_id.as_str(),
        int_of(rec.version, "task version")?,
        to_json(rec)?
    ])
    .map_err(db)?;
    Ok(())
}

/// The whole of [`Store::commit`], in one `BEGIN IMMEDIATE` transaction: the write lock is
/// taken before the versions are read, so no other writer can move them in between.
fn commit_in(conn: &mut Connection, tenant: &Tenant, commit: Commit) -> Result<(), StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)?;
    for s in &commit.subjects {
        if subject_version(&tx, tenant, &s.subject)? != s.version {
            // Dropping `tx` rolls back: nothing of this commit is written.
            return Err(StoreError::Conflict(format!("subject {}", s.subject)));
        }
    }
    for t in &commit.tasks {
        if task_version(&tx, tenant, &t.task)? != t.version {
            return Err(StoreError::Conflict(format!("task {}", t.task.task_id)));
        }
    }
    for mut s in commit.subjects {
        s.version += 1;
        write_subject(&tx, tenant, &s)?;
    }
    for mut t in commit.tasks {
        t.version += 1;
        write_task(&tx, tenant, &t)?;
    }
    for o in &commit.outbox {
        tx.prepare_cached(
            "INSERT INTO outbox (tenant, message_id, agent, delivery, next_attempt, entry, follow_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)
             ON CONFLICT (tenant, agent, message_id) DO NOTHING",
        )
        .map_err(db)?
        .execute(params![
            o.tenant.as_str(),
            o.message_id,
            o.agent.as_str(),
            o.delivery.as_str(),
            instant_key(o.next_attempt_at),
            to_json(o)?,
            o.follow_at.map(instant_key)
        ])
        .map_err(db)?;
    }
    for r in &commit.rejections {
        tx.prepare_cached(
            "INSERT INTO rejections (tenant, agent, at_key, rejection) VALUES (?1, ?2, ?3, ?4)",
        )
        .map_err(db)?
        .execute(params![
            tenant.as_str(),
            r.agent.as_str(),
            instant_key(r.at),
            to_json(r)?
        ])
        .map_err(db)?;
    }
    tx.commit().map_err(db)
}

fn load_in(
    conn: &mut Connection,
    tenant: &Tenant,
    scope: &Scope,
    now: Instant,
) -> Result<Slice, StoreError> {
    // One read transaction: every part of the slice comes from the same snapshot.
    let tx = conn.transaction().map_err(db)?;
    let t = tenant.as_str();
    let mut slice = Slice::new(tenant.clone());
    for s in &scope.subjects {
        let state = read_subject(&tx, tenant, s)?.unwrap_or_else(|| SubjectState::new(s.clone()));
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
            .insert(task.clone(), read_task(&tx, tenant, task)?);
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
    tx.commit().map_err(db)?;
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

/// The whole of [`Store::purge`], in one `BEGIN IMMEDIATE` transaction. Which items go is
/// decided by [`watcher_runtime::retention`]; the SQL only narrows the rows it is asked about.
fn purge_in(conn: &mut Connection, before: Instant) -> Result<PurgeReport, StoreError> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)?;
    let mut report = PurgeReport::default();

    // Subjects. A subject with a `live` row has a record that can still lapse, so only the
    // others are read. Deleting a subject deletes its index rows (fact key, expectation id,
    // timers, live) through their foreign keys (ON DELETE CASCADE).
    let candidates: Vec<(String, String)> = keyed_json_rows(
        &tx,
        "SELECT tenant, state FROM subjects AS s WHERE NOT EXISTS (
             SELECT 1 FROM live AS l WHERE l.tenant = s.tenant
                 AND l.subject_type = s.subject_type AND l.subject_id = s.subject_id)",
        [],
    )?;
    for (tenant, json) in candidates {
        let state: SubjectState = from_json(&json, "subject")?;
        if !subject_retention(&state).purgeable(before) {
            continue;
        }
        report.subjects += tx
            .prepare_cached(
                "DELETE FROM subjects
                 WHERE tenant = ?1 AND subject_type = ?2 AND subject_id = ?3",
            )
            .map_err(db)?
            .execute(params![
                tenant,
                state.subject.subject_type,
                state.subject.id
            ])
            .map_err(db)? as u64;
    }

    // Tasks, once the subjects above are gone.
    let tasks: Vec<(String, String)> = keyed_json_rows(&tx, "SELECT tenant, state FROM tasks", [])?;
    for (tenant, json) in tasks {
        let task: TaskRecord = from_json(&json, "task")?;
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
            .prepare_cached("DELETE FROM tasks WHERE tenant = ?1 AND agent = ?2 AND task_id = ?3")
            .map_err(db)?
            .execute(params![
                tenant,
                task.task.agent.as_str(),
                task.task.task_id.as_str()
            ])
            .map_err(db)? as u64;
    }

    // Lapse tasks: queued ones are always kept.
    let entries: Vec<(i64, String)> = keyed_json_rows(
        &tx,
        "SELECT seq, entry FROM outbox WHERE delivery <> 'queued'",
        [],
    )?;
    for (seq, json) in entries {
        let entry: OutboxEntry = from_json(&json, "outbox entry")?;
        if outbox_retention(&entry).purgeable(before) {
            report.outbox += tx
                .prepare_cached("DELETE FROM outbox WHERE seq = ?1")
                .map_err(db)?
                .execute(params![seq])
                .map_err(db)? as u64;
        }
    }

    // Rejections: `at_key` is the rejection's `at`.
    let rejections: Vec<(i64, String)> = keyed_json_rows(
        &tx,
        "SELECT id, rejection FROM rejections WHERE at_key < ?1",
        params![instant_key(before)],
    )?;
    for (id, json) in rejections {
        let stored: Rejection = from_json(&json, "rejection")?;
        if rejection_retention(&stored).purgeable(before) {
            report.rejections += tx
                .prepare_cached("DELETE FROM rejections WHERE id = ?1")
                .map_err(db)?
                .execute(params![id])
                .map_err(db)? as u64;
        }
    }

    tx.commit().map_err(db)?;
    Ok(report)
}

#[async_trait]
impl Store for SqliteStore {
    async fn load(
        &self,
        tenant: &Tenant,
        scope: &Scope,
        now: Instant,
    ) -> Result<Slice, StoreError> {
        let (tenant, scope) = (tenant.clone(), scope.clone());
        self.run(move |conn| load_in(conn, &tenant, &scope, now))
            .await
    }

    async fn commit(&self, tenant: &Tenant, commit: Commit) -> Result<(), StoreError> {
        let tenant = tenant.clone();
        self.run(move |conn| commit_in(conn, &tenant, commit)).await
    }

    /// Taken in its own transaction **without its own fsync** (`synchronous = NORMAL` for that
    /// transaction only): the WAL is one sequential file, so the commit that uses the number
    /// (`synchronous = FULL`) makes the sequence's frame durable with its own. A number whose
    /// commit never reached the disk may be handed out again after a crash, harmless since
    /// nothing durable holds it. This halves the fsyncs of a request (issue 10).
    async fn next_sequence(&self) -> Result<u64, StoreError> {
        self.run(|conn| {
            conn.pragma_update(None, "synchronous", "NORMAL")
                .map_err(db)?;
            let taken = take_sequence(conn);
            // Every other write of this connection must stay FULL: restore before answering.
            conn.pragma_update(None, "synchronous", "FULL")
                .map_err(db)?;
            taken
        })
        .await
    }

    async fn due_timers(&self, until: Instant, limit: usize) -> Result<Vec<DueTimer>, StoreError> {
        let until = instant_key(until);
        self.run(move |conn| read_timers(conn, &until, limit_of(limit)))
            .await
    }

    async fn next_timer(&self) -> Result<Option<DueTimer>, StoreError> {
        self.run(|conn| {
            Ok(read_timers(conn, AFTER_EVERY_INSTANT, 1)?
                .into_iter()
                .next())
        })
        .await
    }

    async fn subject(
        &self,
        tenant: &Tenant,
        subject: &Subject,
    ) -> Result<Option<SubjectState>, StoreError> {
        let (tenant, subject) = (tenant.clone(), subject.clone());
        self.run(move |conn| read_subject(conn, &tenant, &subject))
            .await
    }

    async fn all_records(&self) -> Result<Vec<ExpectationRecord>, StoreError> {
        self.run(|conn| {
            let states: Vec<SubjectState> = json_rows(
                conn,
                "SELECT state FROM subjects ORDER BY tenant, subject_type, subject_id",
                [],
                "subject",
            )?;
            let mut all: Vec<ExpectationRecord> =
                states.into_iter().flat_map(|s| s.records).collect();
            all.sort_by_key(|r| r.order);
            Ok(all)
        })
        .await
    }

    async fn rejections(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Vec<Rejection>, StoreError> {
        let (tenant, agent) = (tenant.clone(), agent.clone());
        self.run(move |conn| {
            let rows: Vec<Rejection> = json_rows(
                conn,
                "SELECT rejection FROM rejections WHERE tenant = ?1 AND agent = ?2 ORDER BY id",
                params![tenant.as_str(), agent.as_str()],
                "rejection",
            )?;
            Ok(rows)
        })
        .await
    }

    async fn outbox_due(&self, now: Instant, limit: usize) -> Result<Vec<OutboxEntry>, StoreError> {
        let now = instant_key(now);
        self.run(move |conn| {
            json_rows(
                conn,
                "SELECT entry FROM outbox WHERE delivery = 'queued' AND next_attempt <= ?1
                 ORDER BY seq LIMIT ?2",
                params![now, limit_of(limit)],
                "outbox entry",
            )
        })
        .await
    }

    async fn outbox_get(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
    ) -> Result<Option<OutboxEntry>, StoreError> {
        let (tenant, agent, message_id) = (tenant.clone(), agent.clone(), message_id.to_string());
        self.run(move |conn| {
            let rows: Vec<OutboxEntry> = json_rows(
                conn,
                "SELECT entry FROM outbox WHERE tenant = ?1 AND agent = ?2 AND message_id = ?3",
                params![tenant.as_str(), agent.as_str(), message_id],
                "outbox entry",
            )?;
            Ok(rows.into_iter().next())
        })
        .await
    }

    async fn outbox_update(&self, entry: &OutboxEntry) -> Result<(), StoreError> {
        let entry = entry.clone();
        self.run(move |conn| {
            // The row (tenant, agent, message_id); `sent` is final: a sent row only takes
            // another `sent` update.
            conn.prepare_cached(
                "UPDATE outbox SET delivery = ?4, next_attempt = ?5, entry = ?6, follow_at = ?7
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
                to_json(&entry)?,
                entry.follow_at.map(instant_key)
            ])
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn outbox_of_agent(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        delivery: DeliveryState,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let (tenant, agent) = (tenant.clone(), agent.clone());
        // Without a bound, the largest key: every next attempt is at or before it.
        let until = due_by.map_or_else(|| "~".to_string(), instant_key);
        self.run(move |conn| {
            json_rows(
                conn,
                "SELECT entry FROM outbox INDEXED BY outbox_agent
                 WHERE tenant = ?1 AND agent = ?2 AND delivery = ?3 AND next_attempt <= ?4
                 ORDER BY next_attempt, seq LIMIT ?5",
                params![
                    tenant.as_str(),
                    agent.as_str(),
                    delivery.as_str(),
                    until,
                    limit_of(limit)
                ],
                "outbox entry",
            )
        })
        .await
    }

    async fn outbox_following(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Option<Instant>,
        limit: usize,
    ) -> Result<Vec<OutboxEntry>, StoreError> {
        let (tenant, agent) = (tenant.clone(), agent.clone());
        let until = due_by.map_or_else(|| "~".to_string(), instant_key);
        self.run(move |conn| {
            json_rows(
                conn,
                "SELECT entry FROM outbox INDEXED BY outbox_follow
                 WHERE tenant = ?1 AND agent = ?2 AND follow_at IS NOT NULL AND follow_at <= ?3
                 ORDER BY follow_at LIMIT ?4",
                params![tenant.as_str(), agent.as_str(), until, limit_of(limit)],
                "outbox entry",
            )
        })
        .await
    }

    async fn probe_write(&self, now: Instant) -> Result<(), StoreError> {
        let at = instant_key(now);
        self.run(move |conn| {
            conn.prepare_cached(
                "INSERT INTO health (id, probed_at) VALUES (1, ?1)
                 ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
            )
            .map_err(db)?
            .execute(params![at])
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn put_agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        card: &serde_json::Value,
        read_at: Instant,
    ) -> Result<(), StoreError> {
        let (tenant, agent, card, at) = (
            tenant.as_str().to_string(),
            agent.as_str().to_string(),
            card.to_string(),
            read_at.to_string(),
        );
        self.run(move |conn| {
            conn.prepare_cached(
                "INSERT INTO agent_cards (tenant, agent, card, read_at) VALUES (?1, ?2, ?3, ?4)
                 ON CONFLICT (tenant, agent) DO UPDATE SET card = excluded.card, read_at = excluded.read_at",
            )
            .map_err(db)?
            .execute(params![tenant, agent, card, at])
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn put_lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
        descriptor: &serde_json::Value,
        probed_at: Instant,
    ) -> Result<(), StoreError> {
        let (tenant, agent, version, descriptor, at) = (
            tenant.as_str().to_string(),
            agent.as_str().to_string(),
            protocol_version.to_string(),
            descriptor.to_string(),
            probed_at.to_string(),
        );
        self.run(move |conn| {
            conn.prepare_cached(
                "INSERT INTO lifecycle (tenant, agent, protocol_version, descriptor, probed_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (tenant, agent, protocol_version) DO UPDATE
                 SET descriptor = excluded.descriptor, probed_at = excluded.probed_at",
            )
            .map_err(db)?
            .execute(params![tenant, agent, version, descriptor, at])
            .map_err(db)?;
            Ok(())
        })
        .await
    }

    async fn lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        let (tenant, agent, version) = (
            tenant.as_str().to_string(),
            agent.as_str().to_string(),
            protocol_version.to_string(),
        );
        self.run(move |conn| {
            let row: Option<(String, String)> = conn
                .prepare_cached(
                    "SELECT descriptor, probed_at FROM lifecycle
                     WHERE tenant = ?1 AND agent = ?2 AND protocol_version = ?3",
                )
                .map_err(db)?
                .query_row(params![tenant, agent, version], |r| {
                    Ok((r.get(0)?, r.get(1)?))
                })
                .optional()
                .map_err(db)?;
            row.map(|(d, at)| {
                let d = serde_json::from_str(&d).map_err(|e| {
                    StoreError::Corrupt(format!("the lifecycle descriptor of agent {agent}: {e}"))
                })?;
                let at = Instant::parse(&at).map_err(|e| {
                    StoreError::Corrupt(format!(
                        "the lifecycle descriptor of agent {agent}: probed_at: {e}"
                    ))
                })?;
                Ok((d, at))
            })
            .transpose()
        })
        .await
    }

    async fn agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Option<(serde_json::Value, Instant)>, StoreError> {
        let (tenant, agent) = (tenant.as_str().to_string(), agent.as_str().to_string());
        self.run(move |conn| {
            let row: Option<(String, String)> = conn
                .prepare_cached(
                    "SELECT card, read_at FROM agent_cards WHERE tenant = ?1 AND agent = ?2",
                )
                .map_err(db)?
                .query_row(params![tenant, agent], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .map_err(db)?;
            row.map(|(card, at)| {
                let card = serde_json::from_str(&card).map_err(|e| {
                    StoreError::Corrupt(format!("the kept card of agent {agent}: {e}"))
                })?;
                let at = Instant::parse(&at).map_err(|e| {
                    StoreError::Corrupt(format!("the kept card of agent {agent}: read_at {e}"))
                })?;
                Ok((card, at))
            })
            .transpose()
        })
        .await
    }

    async fn lapses(&self, tenant: &Tenant) -> Result<Vec<OutboxEntry>, StoreError> {
        let tenant = tenant.clone();
        self.run(move |conn| {
            json_rows(
                conn,
                "SELECT entry FROM outbox WHERE tenant = ?1 ORDER BY seq",
                params![tenant.as_str()],
                "outbox entry",
            )
        })
        .await
    }

    async fn purge(&self, before: Instant) -> Result<PurgeReport, StoreError> {
        self.run(move |conn| purge_in(conn, before)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `next_sequence` relaxes `synchronous` for its own transaction only: every commit after it
    /// is still FULL (2), so a 2xx still means on disk.
    #[tokio::test]
    async fn next_sequence_leaves_commits_full() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path().join("w.db")).unwrap();
        let level = |store: &SqliteStore| {
            let store = store.clone();
            async move {
                store
                    .run(|conn| {
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

    /// Writes `open` live rows for agent `a` of tenant `t` (one subject each, no end) and
    /// `expired` rows whose end is before `now_key`, straight into the tables, and counts.
    /// Returns the count and the virtual-machine steps the count took.
    fn count_with(open: usize, expired: usize) -> (i64, i32) {
        let mut conn = Connection::open_in_memory().unwrap();
        schema::prepare(&mut conn).unwrap();
        let tx = conn.transaction().unwrap();
        for i in 0..open + expired {
            tx.execute(
                "INSERT INTO subjects VALUES ('t', 'shipment', ?1, 1, '{}')",
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
                "INSERT INTO live VALUES ('t', 'a', ?1, 'shipment', ?1, ?2)",
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
}
