//! [`SqliteDefinitionStore`]: one table of whole definition states, one transaction per write.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use async_trait::async_trait;
use learnables::{DefinitionId, DefinitionState, TenantId};
use rusqlite::{params, Connection, OptionalExtension, Transaction, TransactionBehavior};

use crate::{DefinitionBackend, DefinitionStoreError, Swapped};

/// The table definitions live in. Prefixed so the store can share a database file with the
/// watcher's store (`a2a-watcher serve` keeps one file).
pub const TABLE: &str = "learnables_definitions";

/// How long a statement waits for another connection's write lock before failing with
/// `SQLITE_BUSY` (a [`DefinitionStoreError::Backend`]; retrying may help).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The one table: the key, the revision compare-and-set checks, and the state as the JSON serde
/// form of [`DefinitionState`]. Idempotent, and touches nothing else in the file (in particular
/// not `PRAGMA user_version`, which belongs to whichever store owns the file's main schema).
const SCHEMA: &str = r"
CREATE TABLE IF NOT EXISTS learnables_definitions (
    tenant TEXT NOT NULL,
    id TEXT NOT NULL,
    revision INTEGER NOT NULL CHECK (revision > 0),
    state TEXT NOT NULL,
    PRIMARY KEY (tenant, id)
) STRICT;
";

/// A [`DefinitionStore`](crate::DefinitionStore) over SQLite (rusqlite, bundled): a file
/// ([`SqliteDefinitionStore::open`]) or a private in-memory database
/// ([`SqliteDefinitionStore::memory`]).
///
/// One table, [`TABLE`], with `(tenant, id, revision, state JSON)`; WAL journal, full
/// `synchronous`, a busy timeout of [`BUSY_TIMEOUT`]; every write is one `BEGIN IMMEDIATE`
/// transaction whose revision check runs inside it, so compare-and-set holds against other
/// connections and processes on the same file too.
///
/// Holds one connection behind a mutex and runs every call on tokio's blocking pool
/// (`spawn_blocking`), so it must be used inside a tokio runtime. Cloning shares the connection.
#[derive(Clone)]
pub struct SqliteDefinitionStore {
    conn: Arc<Mutex<Connection>>,
}

impl std::fmt::Debug for SqliteDefinitionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDefinitionStore")
            .finish_non_exhaustive()
    }
}

fn db(e: rusqlite::Error) -> DefinitionStoreError {
    DefinitionStoreError::backend(e)
}

fn revision_column(revision: u64) -> Result<i64, DefinitionStoreError> {
    i64::try_from(revision).map_err(|_| {
        DefinitionStoreError::Corrupt(format!("revision {revision} does not fit SQLite's INTEGER"))
    })
}

impl SqliteDefinitionStore {
    /// Opens (creating if missing) the database file at `path`, switches it to WAL, and creates
    /// the [`TABLE`] if it is not there. Blocks while it does; call it at start-up. The file may
    /// be the watcher store's own.
    ///
    /// # Errors
    /// [`DefinitionStoreError::Backend`] when the file cannot be opened, created or written (a
    /// missing directory, permissions, a file that is not SQLite).
    ///
    /// # Example
    /// ```no_run
    /// # use learnables_store::SqliteDefinitionStore;
    /// let store = SqliteDefinitionStore::open("watcher.db")?;
    /// # Ok::<(), learnables_store::DefinitionStoreError>(())
    /// ```
    pub fn open(path: impl AsRef<Path>) -> Result<Self, DefinitionStoreError> {
        Self::prepared(Connection::open(path).map_err(db)?)
    }

    /// A fresh, empty in-memory database, for tests. It lives as long as this store and its
    /// clones.
    ///
    /// # Errors
    /// [`DefinitionStoreError::Backend`] if SQLite cannot allocate it or create the table.
    pub fn memory() -> Result<Self, DefinitionStoreError> {
        Self::prepared(Connection::open_in_memory().map_err(db)?)
    }

    fn prepared(conn: Connection) -> Result<Self, DefinitionStoreError> {
        conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
        // Answers the mode now in force: `wal` for a file, `memory` for `:memory:`.
        let _mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(db)?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(db)?;
        conn.execute_batch(SCHEMA).map_err(db)?;
        Ok(Self {
            conn: Arc::new(Mutex::new(conn)),
        })
    }

    /// Runs `f` on the connection on tokio's blocking pool (rusqlite blocks on disk I/O and on
    /// the busy timeout, which must not stall an async worker).
    async fn run<T, F>(&self, f: F) -> Result<T, DefinitionStoreError>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T, DefinitionStoreError> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            // A panic while the lock was held poisons it, but rusqlite rolls back a transaction
            // dropped during unwinding, so the connection is still consistent: keep using it.
            let mut guard = conn.lock().unwrap_or_else(PoisonError::into_inner);
            f(&mut guard)
        })
        .await
        .map_err(DefinitionStoreError::backend)?
    }
}

/// Begins a write with `BEGIN IMMEDIATE`: the write lock is taken first, so the revision the
/// write checks cannot change under it, on this connection or another.
fn begin_write(conn: &mut Connection) -> Result<Transaction<'_>, DefinitionStoreError> {
    conn.transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)
}

/// Serializes a state for the `state` column.
fn to_json(state: &DefinitionState) -> Result<String, DefinitionStoreError> {
    serde_json::to_string(state).map_err(DefinitionStoreError::backend)
}

/// Reads a row back, checking it is a valid state for its key and revision.
fn from_row(
    tenant: &TenantId,
    id: &DefinitionId,
    revision: i64,
    json: &str,
) -> Result<DefinitionState, DefinitionStoreError> {
    let state: DefinitionState = serde_json::from_str(json)
        .map_err(|e| DefinitionStoreError::Corrupt(format!("definition {tenant}/{id}: {e}")))?;
    if state.tenant() != tenant || state.id() != id {
        return Err(DefinitionStoreError::Corrupt(format!(
            "the row {tenant}/{id} holds definition {}/{}",
            state.tenant(),
            state.id()
        )));
    }
    if i64::try_from(state.revision()).ok() != Some(revision) {
        return Err(DefinitionStoreError::Corrupt(format!(
            "definition {tenant}/{id}: the row says revision {revision}, its state {}",
            state.revision()
        )));
    }
    Ok(state)
}

#[async_trait]
impl DefinitionBackend for SqliteDefinitionStore {
    async fn load(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        let (tenant, id) = (tenant.clone(), id.clone());
        self.run(move |conn| {
            let row: Option<(i64, String)> = conn
                .query_row(
                    "SELECT revision, state FROM learnables_definitions WHERE tenant = ?1 AND id = ?2",
                    params![tenant.as_str(), id.as_str()],
                    |r| Ok((r.get(0)?, r.get(1)?)),
                )
                .optional()
                .map_err(db)?;
            row.map(|(revision, json)| from_row(&tenant, &id, revision, &json))
                .transpose()
        })
        .await
    }

    async fn insert(&self, state: &DefinitionState) -> Result<bool, DefinitionStoreError> {
        let json = to_json(state)?;
        let revision = revision_column(state.revision())?;
        let (tenant, id) = (state.tenant().clone(), state.id().clone());
        self.run(move |conn| {
            let tx = begin_write(conn)?;
            let inserted = tx
                .execute(
                    "INSERT INTO learnables_definitions (tenant, id, revision, state)
                     VALUES (?1, ?2, ?3, ?4) ON CONFLICT (tenant, id) DO NOTHING",
                    params![tenant.as_str(), id.as_str(), revision, json],
                )
                .map_err(db)?;
            if inserted == 0 {
                return Ok(false);
            }
            tx.commit().map_err(db)?;
            Ok(true)
        })
        .await
    }

    async fn swap(
        &self,
        state: &DefinitionState,
        expected_revision: u64,
    ) -> Result<Swapped, DefinitionStoreError> {
        let json = to_json(state)?;
        let revision = revision_column(state.revision())?;
        let expected = revision_column(expected_revision)?;
        let (tenant, id) = (state.tenant().clone(), state.id().clone());
        self.run(move |conn| {
            let tx = begin_write(conn)?;
            let updated = tx
                .execute(
                    "UPDATE learnables_definitions SET revision = ?3, state = ?4
                     WHERE tenant = ?1 AND id = ?2 AND revision = ?5",
                    params![tenant.as_str(), id.as_str(), revision, json, expected],
                )
                .map_err(db)?;
            if updated == 0 {
                let stored: Option<i64> = tx
                    .query_row(
                        "SELECT revision FROM learnables_definitions WHERE tenant = ?1 AND id = ?2",
                        params![tenant.as_str(), id.as_str()],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(db)?;
                return Ok(stored.map_or(Swapped::Missing, |r| Swapped::AtRevision(r.to_string())));
            }
            tx.commit().map_err(db)?;
            Ok(Swapped::Done)
        })
        .await
    }
}
