//! What only a file-backed SQLite store has to show: the record survives a reopen, the file is
//! in WAL mode at the current schema version, a file of an older version is migrated with
//! nothing lost, several connections to one file never lose an update, and bad stored data or a
//! newer schema is reported, not panicked on.

use std::path::Path;
use std::sync::Arc;
use watcher_runtime::store::{
    Origins as _, Outbox as _, Records as _, Rejections as _, TimerIndex as _, Upkeep as _,
};

use serde_json::json;
use watcher_core::engine::{Rejection, TimerKind};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, ExpectationId, Subject, TaskId, TaskRef, Tenant};
use watcher_core::record::{ExpectationRecord, LapseKind, RaiseOrder, Status};
use watcher_core::slice::{Scope, SubjectState, TaskRecord};
use watcher_core::time::Instant;
use watcher_runtime::conformance::open_record;
use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry, StoreError};
use watcher_store_sqlite::schema::SCHEMA_VERSION;
use watcher_store_sqlite::SqliteStore;

fn instant(text: &str) -> Instant {
    Instant::parse(text).unwrap()
}

fn tenant() -> Tenant {
    Tenant::parse("tenant-a").unwrap()
}

fn agent() -> AgentId {
    AgentId::parse("booking").unwrap()
}

fn subject(id: &str) -> Subject {
    Subject::parse("shipment", id).unwrap()
}

fn record(
    id: &str,
    subject_id: &str,
    due: &str,
    horizon: Option<&str>,
    input: u64,
) -> ExpectationRecord {
    let mut v = json!({
        "expectationId": id,
        "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": subject_id },
        "expects": "the airline manifest",
        "satisfiedBy": { "factKey": format!("manifest:{subject_id}") },
        "dueAt": due,
        "basis": "observed",
    });
    if let Some(h) = horizon {
        v["horizon"] = json!(h);
    }
    let e = Expectation::from_json(&v).unwrap();
    open_record(&tenant(), "booking", e, RaiseOrder { input, index: 0 })
}

/// Subject PA-1 holding one open record, exp-1 (deadline 13:00, horizon 15:00, raising order
/// 1).
fn pa1_with_record() -> SubjectState {
    state_with(
        vec![record(
            "exp-1",
            "PA-1",
            "2026-09-10T13:00:00Z",
            Some("2026-09-10T15:00:00Z"),
            1,
        )],
        "PA-1",
    )
}

fn state_with(records: Vec<ExpectationRecord>, subject_id: &str) -> SubjectState {
    let mut s = SubjectState::new(subject(subject_id));
    s.records = records;
    s
}

fn entry(message_id: &str) -> OutboxEntry {
    OutboxEntry::queued(
        tenant(),
        agent(),
        message_id.into(),
        ExpectationId::parse("exp-1").unwrap(),
        LapseKind::Overdue,
        instant("2026-09-10T13:00:00Z"),
        json!({ "message": { "messageId": message_id } }),
    )
}

fn fact(key: &str, subject_id: &str, received: &str) -> watcher_core::slice::FactEntry {
    let at = instant(received);
    watcher_core::slice::FactEntry {
        fact_key: watcher_core::ids::FactKey::parse(key).unwrap(),
        source: watcher_core::ids::Source::parse("carrier-feed:test").unwrap(),
        observed_at: at,
        claimed_observed_at: at,
        observed_at_given: None,
        mapping: None,
        received_at: at,
        subject: Some(subject(subject_id)),
        satisfied: Vec::new(),
    }
}

/// Commits `subjects` (each at the version it was loaded at) for tenant `t`, nothing else.
async fn commit_subjects(store: &SqliteStore, t: &Tenant, subjects: Vec<SubjectState>) {
    store
        .commit(t, Commit::of_subjects(subjects))
        .await
        .unwrap();
}

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

/// The version 1 schema, exactly as the first build wrote it.
const SCHEMA_V1: &str = include_str!("../fixtures/schema_v1.sql");

/// The version 3 schema, exactly as the build before version 4 wrote it.
const SCHEMA_V3: &str = include_str!("../fixtures/schema_v3.sql");

/// The version 5 index tables (rowid tables with foreign keys and indexes by subject), as a
/// version 5 build created them.
const INDEX_TABLES_V5: &str = r"
CREATE TABLE fact_index (
    tenant TEXT NOT NULL, fact_key TEXT NOT NULL, subject_type TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    PRIMARY KEY (tenant, fact_key, subject_type, subject_id),
    FOREIGN KEY (tenant, subject_type, subject_id)
        REFERENCES subjects (tenant, subject_type, subject_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX fact_index_subject ON fact_index (tenant, subject_type, subject_id);
CREATE TABLE id_index (
    tenant TEXT NOT NULL, agent TEXT NOT NULL, expectation_id TEXT NOT NULL,
    subject_type TEXT NOT NULL, subject_id TEXT NOT NULL,
    PRIMARY KEY (tenant, agent, expectation_id),
    FOREIGN KEY (tenant, subject_type, subject_id)
        REFERENCES subjects (tenant, subject_type, subject_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX id_index_subject ON id_index (tenant, subject_type, subject_id);
CREATE TABLE timers (
    tenant TEXT NOT NULL, subject_type TEXT NOT NULL, subject_id TEXT NOT NULL,
    agent TEXT NOT NULL, expectation_id TEXT NOT NULL,
    kind INTEGER NOT NULL CHECK (kind IN (0, 1)), at_key TEXT NOT NULL,
    order_input INTEGER NOT NULL, order_index INTEGER NOT NULL,
    PRIMARY KEY (tenant, subject_type, subject_id, agent, expectation_id, kind),
    FOREIGN KEY (tenant, subject_type, subject_id)
        REFERENCES subjects (tenant, subject_type, subject_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX timers_due ON timers (at_key, order_input, order_index, kind);
CREATE TABLE live (
    tenant TEXT NOT NULL, agent TEXT NOT NULL, expectation_id TEXT NOT NULL,
    subject_type TEXT NOT NULL, subject_id TEXT NOT NULL, live_until TEXT,
    PRIMARY KEY (tenant, agent, expectation_id),
    FOREIGN KEY (tenant, subject_type, subject_id)
        REFERENCES subjects (tenant, subject_type, subject_id) ON DELETE CASCADE
) STRICT;
CREATE INDEX live_agent ON live (tenant, agent, live_until);
CREATE INDEX live_subject ON live (tenant, subject_type, subject_id);
CREATE TABLE agent_live_rows (
    tenant TEXT NOT NULL, agent TEXT NOT NULL, rows INTEGER NOT NULL,
    PRIMARY KEY (tenant, agent)
) STRICT;
";

/// Takes from a file of the current schema what version 8 added (the outbox's `person_at` and
/// its index), as the first step of turning it into an older version's file.
/// Turns a current file's outbox back into version 8's: the same columns, its CHECK without
/// `unaddressed` (every row and its `seq` kept).
fn back_to_version_8(conn: &rusqlite::Connection) {
    back_to_version_10(conn);
    conn.execute_batch(
        "ALTER TABLE outbox RENAME TO outbox_now;
         CREATE TABLE outbox (
             seq INTEGER PRIMARY KEY AUTOINCREMENT,
             tenant TEXT NOT NULL,
             message_id TEXT NOT NULL,
             agent TEXT NOT NULL,
             delivery TEXT NOT NULL CHECK (delivery IN ('queued', 'sent', 'failed', 'withdrawn')),
             next_attempt TEXT NOT NULL,
             entry TEXT NOT NULL,
             follow_at TEXT,
             task_id TEXT,
             lapsed_at TEXT,
             person_at TEXT,
             UNIQUE (tenant, agent, message_id)
         ) STRICT;
         INSERT INTO outbox SELECT * FROM outbox_now;
         DROP TABLE outbox_now;
         CREATE INDEX outbox_person ON outbox (tenant, agent, person_at, seq)
             WHERE person_at IS NOT NULL;",
    )
    .unwrap();
}

/// Takes from a file of the current schema what version 11 added: the outbox's `resolved_at`
/// and its index, and the `outbox_open` index added on top of it since (nothing when they are
/// gone already).
fn back_to_version_10(conn: &rusqlite::Connection) {
    let present: bool = conn
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM pragma_table_info('outbox') WHERE name = 'resolved_at')",
            [],
            |r| r.get(0),
        )
        .unwrap();
    if present {
        conn.execute_batch(
            "DROP INDEX IF EXISTS outbox_resolved; DROP INDEX IF EXISTS outbox_open;
             ALTER TABLE outbox DROP COLUMN resolved_at;",
        )
        .unwrap();
    }
}

fn back_to_version_7(conn: &rusqlite::Connection) {
    back_to_version_10(conn);
    conn.execute_batch("DROP INDEX outbox_person; ALTER TABLE outbox DROP COLUMN person_at;")
        .unwrap();
}

mod connections;
mod errors;
mod index_tables;
mod migrations;
mod purge;
mod reopen;
mod writes;

/// The schema version `PRAGMA user_version` records in the file at `path`.
fn user_version(path: &Path) -> i64 {
    raw(path)
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}
