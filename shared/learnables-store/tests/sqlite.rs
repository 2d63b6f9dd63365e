//! What only the SQLite store can show: a definition survives reopening the file, a corrupt row
//! is reported as corrupt, and the table shares a file with another store's schema.

use learnables::{
    create, Collections, DefinitionId, DefinitionState, Registry, TaughtBy, TenantId, Via,
};
use learnables_store::{DefinitionStore, DefinitionStoreError, SqliteDefinitionStore, TABLE};
use serde_json::json;

fn key() -> (TenantId, DefinitionId) {
    (
        TenantId::parse("acme").expect("a tenant"),
        DefinitionId::parse("prealert-triage").expect("an id"),
    )
}

fn definition() -> DefinitionState {
    let registry = Registry::builtin();
    let collections = Collections::parse(
        &json!({ "fields": {
            "learnable": "column-mapping", "entry": "field",
            "teaches": "which field a spreadsheet column holds",
            "entries": { "amount": { "label": "Amount", "value": { "headers": ["Total"] } } }
        } }),
        &registry,
    )
    .expect("valid collections");
    let (tenant, id) = key();
    create(
        tenant,
        id,
        collections,
        TaughtBy::parse("dana@warehouse.example").expect("a person"),
        Via::parse("teacher-console").expect("a credential"),
        None,
        jiff::Timestamp::from_second(1_786_957_200).expect("an instant"),
        &registry,
    )
    .expect("created")
}

#[tokio::test]
async fn a_definition_survives_reopening_the_file() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("watcher.db");
    let (tenant, id) = key();
    let state = definition();
    {
        let store = SqliteDefinitionStore::open(&path).expect("open");
        store.create(&tenant, &id, &state).await.expect("create");
    }
    let reopened = SqliteDefinitionStore::open(&path).expect("reopen");
    let back = reopened.get(&tenant, &id).await.expect("get");
    assert_eq!(back, Some(state));
}

#[tokio::test]
async fn a_corrupt_row_is_reported_corrupt() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("watcher.db");
    let (tenant, id) = key();
    let store = SqliteDefinitionStore::open(&path).expect("open");
    store
        .create(&tenant, &id, &definition())
        .await
        .expect("create");

    let raw = rusqlite::Connection::open(&path).expect("a second connection");
    raw.execute(&format!("UPDATE {TABLE} SET revision = 7"), [])
        .expect("tamper with the revision");
    let wrong_revision = store.get(&tenant, &id).await;
    assert!(
        matches!(wrong_revision, Err(DefinitionStoreError::Corrupt(_))),
        "{wrong_revision:?}"
    );
    raw.execute(
        &format!("UPDATE {TABLE} SET revision = 1, state = '{{\"versions\": []}}'"),
        [],
    )
    .expect("tamper with the state");
    let not_a_state = store.get(&tenant, &id).await;
    assert!(
        matches!(not_a_state, Err(DefinitionStoreError::Corrupt(_))),
        "{not_a_state:?}"
    );
}

#[tokio::test]
async fn the_table_shares_a_file_with_another_schema() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("watcher.db");
    {
        let other = rusqlite::Connection::open(&path).expect("another store's connection");
        other
            .execute_batch("CREATE TABLE subjects (k TEXT PRIMARY KEY); PRAGMA user_version = 1;")
            .expect("another store's schema");
    }
    let (tenant, id) = key();
    let store = SqliteDefinitionStore::open(&path).expect("open a file another store owns");
    store
        .create(&tenant, &id, &definition())
        .await
        .expect("create");
    let other = rusqlite::Connection::open(&path).expect("reopen");
    let version: i64 = other
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .expect("user_version");
    assert_eq!(version, 1, "the other store's schema version is left alone");
    let tables: i64 = other
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('subjects', ?1)",
            [TABLE],
            |r| r.get(0),
        )
        .expect("tables");
    assert_eq!(tables, 2);
}
