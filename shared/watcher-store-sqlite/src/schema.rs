//! The tables, the connection settings, and the schema version (`PRAGMA user_version`).

use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};
use watcher_runtime::store::{OutboxEntry, StoreError};

use crate::codec::{db, from_json, instant_key};

/// The schema this build writes, kept in `PRAGMA user_version`. A file with a larger number was
/// written by a newer build and is refused; a file with a smaller one is migrated when the store
/// opens it, in the transaction that records the new version.
///
/// * 1: the first schema.
/// * 2: the outbox's identity is (tenant, agent, message_id), not (tenant, message_id):
///   expectation ids are scoped to the raising agent, so two agents of one tenant can have lapse
///   tasks with the same `messageId`.
/// * 3: the outbox's `follow_at` (the next `GetTask` poll of a followed lapse task), indexed.
/// * 4: the outbox's `task_id` (the lapse task the agent created) and `lapsed_at`, copied from
///   the entry, with indexes by (tenant, agent, task_id) (status-update pushes) and by
///   (tenant, agent, seq) (`GET /v1/lapses?agent=`), issue 10.
/// * 5: the outbox's `delivery` may be `withdrawn` (never sent: the origin task was found ended
///   before sending, origin-task reconciliation); the table is rebuilt for its CHECK. Also the
///   `lifecycle` table (the probe's descriptor per agent and protocol version), created by IF
///   NOT EXISTS.
/// * 6: the index tables (`fact_index`, `id_index`, `timers`, `live`, `agent_live_rows`) are
///   WITHOUT ROWID, without foreign keys and without their indexes by subject; `live` is keyed
///   by subject first. A push writes about half the pages it did (issue 10, write
///   amplification); the purge deletes a subject's index rows itself. The tables are rebuilt.
///   A subject's facts are rows of `subject_facts` (a fact appends one row instead of
///   rewriting every fact of its subject), counted and digested in the subject's row (`facts`,
///   `facts_digest`); a version 5 subject keeps its facts inline until its next commit moves
///   them.
/// * 7: the `origins` table (origin tasks followed with `GetTask`, origin-task reconciliation
///   kept in the store) and its index by (tenant, agent, next poll), created by IF NOT EXISTS.
/// * 8: the outbox's `person_at` (since when the lapse task's task waits for a person, copied
///   from the entry's `needs_person_since`), indexed for the notifier's
///   `lapse_task.needs_person` event (issue 25).
/// * 9: the outbox's `delivery` may be `unaddressed` (a lapse task no agent receives: the
///   Learnables authority's `lesson.review`, expectations-v1 §16); the table is rebuilt for its
///   CHECK, every row kept with its `seq`.
/// * 10: the outbox's index by (delivery, next attempt) across every tenant and agent,
///   `outbox_due`, is dropped: every lapse task is read by its agent's lane, through
///   `outbox_agent`, and an index no query reads is one more B-tree every outbox write updates.
/// * 11: the outbox's `resolved_at` (when the lapse's incident was resolved, copied from the
///   entry's `resolved.at`, expectations-v1 §13.1), with a sparse index by (tenant, agent,
///   resolved_at, seq) holding only resolved lapse tasks (`Lane::Resolved`).
pub const SCHEMA_VERSION: i64 = 11;

/// How long a statement waits for another connection's write lock before failing with
/// `SQLITE_BUSY` (a [`StoreError::Backend`]; retrying may help).
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Every table and index; idempotent.
///
/// Instants are 22-digit text keys (`codec::instant_key`); `u64` counters are `INTEGER`;
/// records are JSON (the serde form of the watcher-core types). The index tables are derived
/// from `subjects` on every commit (`watcher_runtime::index::subject_index`).
const SCHEMA: &str = r#"
-- state: the subject's JSON without its facts (version 6; older rows may still hold them inline
-- until their next commit). facts: how many of its facts are rows of subject_facts;
-- facts_digest: SHA-256 over those facts' JSON (`FactsDigest`), so that a commit whose facts
-- extend them appends the new ones only.
CREATE TABLE IF NOT EXISTS subjects (
    tenant TEXT NOT NULL,
    subject_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    state TEXT NOT NULL,
    facts INTEGER NOT NULL DEFAULT 0,
    facts_digest BLOB,
    PRIMARY KEY (tenant, subject_type, subject_id)
) STRICT;

-- A subject's facts, one row each, in receipt order (position from 0); only ever appended
-- unless a commit rewrites a subject's facts (issue 10, write amplification).
CREATE TABLE IF NOT EXISTS subject_facts (
    tenant TEXT NOT NULL,
    subject_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    position INTEGER NOT NULL,
    fact TEXT NOT NULL,
    PRIMARY KEY (tenant, subject_type, subject_id, position)
) STRICT, WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS tasks (
    tenant TEXT NOT NULL,
    agent TEXT NOT NULL,
    task_id TEXT NOT NULL,
    version INTEGER NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (tenant, agent, task_id)
) STRICT;

-- The index tables below are WITHOUT ROWID (version 6, issue 10 write amplification): each is
-- one B-tree ordered by its primary key, not a rowid table plus a second tree for the key, so a
-- row written dirties one page where it dirtied two. None of them has a foreign key or an index
-- by subject: the purge deletes a subject's index rows itself, from the subject's own state.

-- fact key -> subjects with an expectation satisfied by it; rows are only ever added.
CREATE TABLE IF NOT EXISTS fact_index (
    tenant TEXT NOT NULL,
    fact_key TEXT NOT NULL,
    subject_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    PRIMARY KEY (tenant, fact_key, subject_type, subject_id)
) STRICT, WITHOUT ROWID;

-- (agent, expectationId) -> its subject; rows are only ever added.
CREATE TABLE IF NOT EXISTS id_index (
    tenant TEXT NOT NULL,
    agent TEXT NOT NULL,
    expectation_id TEXT NOT NULL,
    subject_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    PRIMARY KEY (tenant, agent, expectation_id)
) STRICT, WITHOUT ROWID;

-- Pending deadlines and horizons, kept with the subject on every commit (only the rows that
-- change are written). kind: 0 = deadline, 1 = horizon (a deadline fires before a horizon at
-- the same instant).
CREATE TABLE IF NOT EXISTS timers (
    tenant TEXT NOT NULL,
    subject_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    expectation_id TEXT NOT NULL,
    kind INTEGER NOT NULL CHECK (kind IN (0, 1)),
    at_key TEXT NOT NULL,
    order_input INTEGER NOT NULL,
    order_index INTEGER NOT NULL,
    PRIMARY KEY (tenant, subject_type, subject_id, agent, expectation_id, kind)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS timers_due ON timers (at_key, order_input, order_index, kind);

-- Records that can still lapse, by subject; live_until NULL = indefinitely (waiting on an
-- anchor). Closed records have no row. Kept with the subject on every commit.
CREATE TABLE IF NOT EXISTS live (
    tenant TEXT NOT NULL,
    subject_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    expectation_id TEXT NOT NULL,
    live_until TEXT,
    PRIMARY KEY (tenant, subject_type, subject_id, agent, expectation_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS live_agent ON live (tenant, agent, live_until);

-- Live rows per agent (the bound's count, issue 10): kept by every commit with the live rows,
-- and rebuilt from them whenever the store opens (`prepare`), so a file written by a build
-- without this table is counted right.
CREATE TABLE IF NOT EXISTS agent_live_rows (
    tenant TEXT NOT NULL,
    agent TEXT NOT NULL,
    rows INTEGER NOT NULL,
    PRIMARY KEY (tenant, agent)
) STRICT, WITHOUT ROWID;

-- Lapse tasks. (tenant, agent, message_id) is the identity (expectation ids, and so message
-- ids, are scoped to the raising agent); seq is insertion order. delivery and next_attempt copy
-- the entry's fields for the due query; the entry JSON is the truth.
CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    message_id TEXT NOT NULL,
    agent TEXT NOT NULL,
    delivery TEXT NOT NULL
        CHECK (delivery IN ('queued', 'sent', 'failed', 'withdrawn', 'unaddressed')),
    next_attempt TEXT NOT NULL,
    entry TEXT NOT NULL,
    follow_at TEXT,
    task_id TEXT,
    lapsed_at TEXT,
    person_at TEXT,
    resolved_at TEXT,
    UNIQUE (tenant, agent, message_id)
) STRICT;
CREATE INDEX IF NOT EXISTS outbox_tenant ON outbox (tenant, seq);
-- Each agent's delivery lane, its failed lapse tasks, its delivery state (Outbox::outbox_of_agent).
-- Added within version 2: IF NOT EXISTS creates it in older version-2 files when they open.
CREATE INDEX IF NOT EXISTS outbox_agent ON outbox (tenant, agent, delivery, next_attempt, seq);
-- Followed lapse tasks only (Outbox::outbox_following).
CREATE INDEX IF NOT EXISTS outbox_follow ON outbox (tenant, agent, follow_at)
    WHERE follow_at IS NOT NULL;
-- Lapse tasks whose task waits for a person only (Outbox::outbox_needing_person).
CREATE INDEX IF NOT EXISTS outbox_person ON outbox (tenant, agent, person_at, seq)
    WHERE person_at IS NOT NULL;
-- Resolved lapse tasks only, by when they were resolved (Outbox::outbox_resolved; version 11).
CREATE INDEX IF NOT EXISTS outbox_resolved ON outbox (tenant, agent, resolved_at, seq)
    WHERE resolved_at IS NOT NULL;
-- Lapse tasks not resolved only, by when they lapsed: the open incidents (Outbox::outbox_open).
-- Created by IF NOT EXISTS when a file opens: an older build keeps it up to date unknowingly.
CREATE INDEX IF NOT EXISTS outbox_open ON outbox (tenant, agent, lapsed_at, seq)
    WHERE resolved_at IS NULL;

-- A lapse task by the Task the agent created (Outbox::outbox_by_task).
CREATE INDEX IF NOT EXISTS outbox_task ON outbox (tenant, agent, task_id)
    WHERE task_id IS NOT NULL;
-- One agent's lapse tasks in order of lapse (LapseLog::lapses_page with an agent).
CREATE INDEX IF NOT EXISTS outbox_agent_seq ON outbox (tenant, agent, seq);

-- One row rewritten by Upkeep::probe_write, so /healthz sees whether the file takes writes.
CREATE TABLE IF NOT EXISTS health (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    probed_at TEXT NOT NULL
) STRICT;

-- The last agent card read per agent (serve.md "Agents are independent"); created by
-- IF NOT EXISTS in older files when they open.
CREATE TABLE IF NOT EXISTS agent_cards (
    tenant TEXT NOT NULL,
    agent TEXT NOT NULL,
    card TEXT NOT NULL,
    read_at TEXT NOT NULL,
    PRIMARY KEY (tenant, agent)
) STRICT;

-- The lifecycle probe's descriptor per (agent, protocol version)
-- (Cards::put_lifecycle_descriptor); created by IF NOT EXISTS in older files when they open.
CREATE TABLE IF NOT EXISTS lifecycle (
    tenant TEXT NOT NULL,
    agent TEXT NOT NULL,
    protocol_version TEXT NOT NULL,
    descriptor TEXT NOT NULL,
    probed_at TEXT NOT NULL,
    PRIMARY KEY (tenant, agent, protocol_version)
) STRICT;

CREATE TABLE IF NOT EXISTS rejections (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant TEXT NOT NULL,
    agent TEXT NOT NULL,
    at_key TEXT NOT NULL,
    rejection TEXT NOT NULL
) STRICT;
CREATE INDEX IF NOT EXISTS rejections_agent ON rejections (tenant, agent, id);

-- Origin tasks followed with GetTask (Origins::origin_follow; version 7): instants are
-- instant_key text; origins_due serves Origins::origins_due.
CREATE TABLE IF NOT EXISTS origins (
    tenant TEXT NOT NULL,
    agent TEXT NOT NULL,
    task_id TEXT NOT NULL,
    since TEXT NOT NULL,
    next_at TEXT NOT NULL,
    PRIMARY KEY (tenant, agent, task_id)
) STRICT;
CREATE INDEX IF NOT EXISTS origins_due ON origins (tenant, agent, next_at, task_id);

-- Each notification channel's progress (Notifications::put_channel_state, issue 25): the
-- ChannelState's JSON; created by IF NOT EXISTS in older files when they open.
CREATE TABLE IF NOT EXISTS notify_channels (
    tenant TEXT NOT NULL,
    channel TEXT NOT NULL,
    state TEXT NOT NULL,
    PRIMARY KEY (tenant, channel)
) STRICT;

-- The raising-order sequence: one row.
CREATE TABLE IF NOT EXISTS sequence (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    value INTEGER NOT NULL
) STRICT;
INSERT INTO sequence (id, value) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
"#;

/// Recounts `agent_live_rows` from `live` (at open: one pass over the live index, not on any
/// request path).
pub(crate) const REBUILD_AGENT_LIVE_ROWS: &str = r"
DELETE FROM agent_live_rows;
INSERT INTO agent_live_rows (tenant, agent, rows)
    SELECT tenant, agent, COUNT(*) FROM live GROUP BY tenant, agent;
";

/// Version 1 → 2, before [`SCHEMA`]: the v1 outbox (UNIQUE (tenant, message_id)) is set aside
/// with its indexes dropped, so that [`SCHEMA`] creates the v2 outbox and its indexes.
const V1_TO_V2_BEFORE: &str = r"
ALTER TABLE outbox RENAME TO outbox_v1;
DROP INDEX IF EXISTS outbox_due;
DROP INDEX IF EXISTS outbox_tenant;
";

/// Version 9 or older → 10, after [`SCHEMA`]: the unread index across every agent's lapse tasks
/// goes (idempotent: a file already without it is unchanged).
const TO_V10: &str = "DROP INDEX IF EXISTS outbox_due;";

/// Version 9 or 10 → 11, before [`SCHEMA`] (whose index on `resolved_at` needs the column): the
/// column, added where missing. Older files rebuild the outbox from [`SCHEMA`], which has it; no
/// stored entry is resolved (the entries of older builds have no `resolved`), so nothing is
/// copied into it.
fn add_resolved_at(tx: &Connection) -> Result<(), StoreError> {
    let present: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('outbox') WHERE name = 'resolved_at')",
            [],
            |r| r.get(0),
        )
        .map_err(db)?;
    if !present {
        tx.execute_batch("ALTER TABLE outbox ADD COLUMN resolved_at TEXT;")
            .map_err(db)?;
    }
    Ok(())
}

/// Version 2 → 3, before [`SCHEMA`] (whose index on `follow_at` needs the column).
const V2_TO_V3_BEFORE: &str = "ALTER TABLE outbox ADD COLUMN follow_at TEXT;";

/// Version 5, 6 or 7 → 8, before [`SCHEMA`] (whose index on `person_at` needs the column). Older
/// files rebuild the outbox from [`SCHEMA`], which has it.
const V7_TO_V8_BEFORE: &str = "ALTER TABLE outbox ADD COLUMN person_at TEXT;";

/// Before [`SCHEMA`], for a migration that rebuilds the outbox for its CHECK (version 4 → 5:
/// `withdrawn`; 5 to 8 → 9: `unaddressed`): the outbox is renamed `old` with its indexes dropped,
/// so that [`SCHEMA`] creates the current outbox and its indexes.
fn set_outbox_aside(old: &str) -> String {
    format!(
        "ALTER TABLE outbox RENAME TO {old};
        DROP INDEX IF EXISTS outbox_due;
        DROP INDEX IF EXISTS outbox_tenant;
        DROP INDEX IF EXISTS outbox_agent;
        DROP INDEX IF EXISTS outbox_follow;
        DROP INDEX IF EXISTS outbox_person;
        DROP INDEX IF EXISTS outbox_resolved;
        DROP INDEX IF EXISTS outbox_open;
        DROP INDEX IF EXISTS outbox_task;
        DROP INDEX IF EXISTS outbox_agent_seq;"
    )
}

/// After [`SCHEMA`], the other half of [`set_outbox_aside`]: every row of `old` copied with its
/// `seq` (the `columns` that version has), the AUTOINCREMENT high-water mark carried over, `old`
/// dropped.
fn copy_outbox_back(old: &str, columns: &str) -> String {
    format!(
        "INSERT INTO outbox ({columns}) SELECT {columns} FROM {old} ORDER BY seq;
        INSERT INTO sqlite_sequence (name, seq)
            SELECT 'outbox', seq FROM sqlite_sequence WHERE name = '{old}'
            AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'outbox');
        UPDATE sqlite_sequence
            SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = '{old}'), 0))
            WHERE name = 'outbox';
        DELETE FROM sqlite_sequence WHERE name = '{old}';
        DROP TABLE {old};"
    )
}

/// The outbox columns of version 4 (copied into version 5's table).
const V4_OUTBOX_COLUMNS: &str =
    "seq, tenant, message_id, agent, delivery, next_attempt, entry, follow_at, task_id, lapsed_at";

/// The outbox columns of versions 5 to 8 once [`V7_TO_V8_BEFORE`] ran (copied into version 9's).
const V8_OUTBOX_COLUMNS: &str = "seq, tenant, message_id, agent, delivery, next_attempt, entry, \
     follow_at, task_id, lapsed_at, person_at";

/// Version 3 → 4, before [`SCHEMA`] (whose indexes need the columns).
const V3_TO_V4_BEFORE: &str = "ALTER TABLE outbox ADD COLUMN task_id TEXT;
    ALTER TABLE outbox ADD COLUMN lapsed_at TEXT;";

/// Version 5 → 6, before [`SCHEMA`]: the index tables are set aside with their indexes
/// dropped, so that [`SCHEMA`] creates them WITHOUT ROWID; `agent_live_rows` (absent from
/// files older than it) is recounted at open anyway.
const V5_TO_V6_BEFORE: &str = r"
ALTER TABLE fact_index RENAME TO fact_index_v5;
ALTER TABLE id_index RENAME TO id_index_v5;
ALTER TABLE timers RENAME TO timers_v5;
ALTER TABLE live RENAME TO live_v5;
DROP TABLE IF EXISTS agent_live_rows;
DROP INDEX IF EXISTS fact_index_subject;
DROP INDEX IF EXISTS id_index_subject;
DROP INDEX IF EXISTS timers_due;
DROP INDEX IF EXISTS live_agent;
DROP INDEX IF EXISTS live_subject;
";

/// Version 5 → 6, before [`SCHEMA`]: the subject's `facts` and `facts_digest` columns, added
/// where missing (their defaults say "no fact rows": a version 5 row keeps its facts inline
/// until its next commit).
fn add_subject_fact_columns(tx: &Connection) -> Result<(), StoreError> {
    let columns: Vec<String> = {
        let mut stmt = tx
            .prepare("SELECT name FROM pragma_table_info('subjects')")
            .map_err(db)?;
        let names = stmt
            .query_map([], |r| r.get(0))
            .map_err(db)?
            .collect::<Result<Vec<String>, _>>()
            .map_err(db)?;
        names
    };
    for (name, ddl) in [
        (
            "facts",
            "ALTER TABLE subjects ADD COLUMN facts INTEGER NOT NULL DEFAULT 0",
        ),
        (
            "facts_digest",
            "ALTER TABLE subjects ADD COLUMN facts_digest BLOB",
        ),
    ] {
        if !columns.iter().any(|c| c == name) {
            tx.execute_batch(ddl).map_err(db)?;
        }
    }
    Ok(())
}

/// Version 5 → 6, after [`SCHEMA`]: every row copied into the new tables, the old ones
/// dropped.
const V5_TO_V6_AFTER: &str = r"
INSERT INTO fact_index (tenant, fact_key, subject_type, subject_id)
    SELECT tenant, fact_key, subject_type, subject_id FROM fact_index_v5;
INSERT INTO id_index (tenant, agent, expectation_id, subject_type, subject_id)
    SELECT tenant, agent, expectation_id, subject_type, subject_id FROM id_index_v5;
INSERT INTO timers (tenant, subject_type, subject_id, agent, expectation_id, kind, at_key,
        order_input, order_index)
    SELECT tenant, subject_type, subject_id, agent, expectation_id, kind, at_key, order_input,
        order_index FROM timers_v5;
INSERT INTO live (tenant, subject_type, subject_id, agent, expectation_id, live_until)
    SELECT tenant, subject_type, subject_id, agent, expectation_id, live_until FROM live_v5;
DROP TABLE fact_index_v5;
DROP TABLE id_index_v5;
DROP TABLE timers_v5;
DROP TABLE live_v5;
";

/// Version 1 → 2, after [`SCHEMA`]: every v1 row is copied with its `seq` (so the order of lapse
/// is kept), the AUTOINCREMENT high-water mark is carried over (so no `seq` is handed out twice),
/// and the v1 table is dropped. v1's uniqueness is stricter than v2's, so every row fits.
const V1_TO_V2_AFTER: &str = r"
INSERT INTO outbox (seq, tenant, message_id, agent, delivery, next_attempt, entry)
    SELECT seq, tenant, message_id, agent, delivery, next_attempt, entry
    FROM outbox_v1 ORDER BY seq;
INSERT INTO sqlite_sequence (name, seq)
    SELECT 'outbox', seq FROM sqlite_sequence WHERE name = 'outbox_v1'
    AND NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'outbox');
UPDATE sqlite_sequence
    SET seq = max(seq, coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'outbox_v1'), 0))
    WHERE name = 'outbox';
DROP TABLE outbox_v1;
";

/// Version 3 → 4, after [`SCHEMA`]: copies each entry's `taskId` and `lapsedAt` into the new
/// columns (one pass over the outbox, at open only).
fn fill_v4_columns(tx: &Connection) -> Result<(), StoreError> {
    let rows: Vec<(i64, String)> = {
        let mut stmt = tx.prepare("SELECT seq, entry FROM outbox").map_err(db)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .map_err(db)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(db)?;
        rows
    };
    let mut update = tx
        .prepare("UPDATE outbox SET task_id = ?2, lapsed_at = ?3 WHERE seq = ?1")
        .map_err(db)?;
    for (seq, json) in rows {
        let entry: OutboxEntry = from_json(&json, "outbox entry")?;
        update
            .execute(rusqlite::params![
                seq,
                entry.task_id,
                instant_key(entry.lapsed_at)
            ])
            .map_err(db)?;
    }
    Ok(())
}

/// Prepared statements each connection keeps: more than the store's distinct statements
/// (about 50), so none is parsed again (rusqlite keeps 16 by default, and the writer's
/// statements then evicted one another: SQL parsing was 6% of its time).
pub(crate) const STATEMENT_CACHE: usize = 128;

/// What every connection of the store (the writer and each reader) is set to, so that a
/// statement is parsed and planned once, not per call:
///
/// * a statement cache of [`STATEMENT_CACHE`];
/// * the query planner stability guarantee (`SQLITE_DBCONFIG_ENABLE_QPSG`). Without it the
///   bundled SQLite plans a statement again on every new binding of a parameter used in
///   `LIMIT` or beside an `ORDER BY` (in a profile of `bench`, a fifth of the readers' time went
///   to `sqlite3Reprepare`). Every statement here is a lookup whose plan does not depend on
///   the values (no `ANALYZE` statistics, no `LIKE` on a parameter), so one plan is right;
/// * savepoint journals in memory (`temp_store = MEMORY`): the journal each write of a group
///   keeps (group.rs) only serves `ROLLBACK TO` within the open transaction, never durability;
///   in a temporary file it cost a `write` per page changed (a fifth of the writer's time).
///
/// # Errors
/// [`StoreError::Backend`] when a setting is refused.
pub(crate) fn tune(conn: &Connection) -> Result<(), StoreError> {
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map_err(db)?;
    conn.pragma_update(None, "temp_store", "MEMORY")
        .map_err(db)?;
    Ok(())
}

/// Sets the connection up: a busy timeout, WAL (a no-op for `:memory:`), full `synchronous`
/// (a commit is on disk when it returns: a queued lapse task survives a crash), foreign keys,
/// the settings of [`tune`];
/// then, in one transaction, migrates a file written at an older schema version, creates what
/// is missing and records [`SCHEMA_VERSION`]. A failed migration writes nothing: the file stays
/// at its version.
///
/// # Errors
/// [`StoreError::Backend`] when a pragma or the schema cannot be written;
/// [`StoreError::Corrupt`] when the file's schema is newer than [`SCHEMA_VERSION`].
pub(crate) fn prepare(conn: &mut Connection) -> Result<(), StoreError> {
    conn.busy_timeout(BUSY_TIMEOUT).map_err(db)?;
    // `journal_mode` answers the mode now in force: `wal` for a file, `memory` for `:memory:`.
    let _mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(db)?;
    conn.pragma_update(None, "synchronous", "FULL")
        .map_err(db)?;
    conn.pragma_update(None, "foreign_keys", true).map_err(db)?;
    tune(conn)?;

    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(db)?;
    let found: i64 = tx
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(db)?;
    if found > SCHEMA_VERSION {
        return Err(StoreError::Corrupt(format!(
            "the database has schema version {found}, newer than this build's {SCHEMA_VERSION}; run a newer watcher"
        )));
    }
    // 0 is a new, empty file: SCHEMA creates everything.
    let from_v1 = found == 1;
    if from_v1 {
        tx.execute_batch(V1_TO_V2_BEFORE).map_err(db)?;
    }
    if found == 2 {
        tx.execute_batch(V2_TO_V3_BEFORE).map_err(db)?;
    }
    if found == 2 || found == 3 {
        tx.execute_batch(V3_TO_V4_BEFORE).map_err(db)?;
    }
    // v1 files are rebuilt by the v1 → v2 steps straight into the current outbox.
    let rebuild_v4 = (2..=4).contains(&found);
    if rebuild_v4 {
        tx.execute_batch(&set_outbox_aside("outbox_v4"))
            .map_err(db)?;
    }
    let rebuild_v5 = (1..=5).contains(&found);
    if rebuild_v5 {
        add_subject_fact_columns(&tx)?;
        tx.execute_batch(V5_TO_V6_BEFORE).map_err(db)?;
    }
    if (5..=7).contains(&found) {
        tx.execute_batch(V7_TO_V8_BEFORE).map_err(db)?;
    }
    let rebuild_v8 = (5..=8).contains(&found);
    if rebuild_v8 {
        tx.execute_batch(&set_outbox_aside("outbox_v8"))
            .map_err(db)?;
    }
    if (9..=10).contains(&found) {
        add_resolved_at(&tx)?;
    }
    tx.execute_batch(SCHEMA).map_err(db)?;
    if rebuild_v8 {
        tx.execute_batch(&copy_outbox_back("outbox_v8", V8_OUTBOX_COLUMNS))
            .map_err(db)?;
    }
    if rebuild_v5 {
        tx.execute_batch(V5_TO_V6_AFTER).map_err(db)?;
    }
    if from_v1 {
        tx.execute_batch(V1_TO_V2_AFTER).map_err(db)?;
    }
    if rebuild_v4 {
        tx.execute_batch(&copy_outbox_back("outbox_v4", V4_OUTBOX_COLUMNS))
            .map_err(db)?;
    }
    if (1..4).contains(&found) {
        fill_v4_columns(&tx)?;
    }
    if (1..10).contains(&found) {
        tx.execute_batch(TO_V10).map_err(db)?;
    }
    tx.execute_batch(REBUILD_AGENT_LIVE_ROWS).map_err(db)?;
    tx.pragma_update(None, "user_version", SCHEMA_VERSION)
        .map_err(db)?;
    tx.commit().map_err(db)
}
