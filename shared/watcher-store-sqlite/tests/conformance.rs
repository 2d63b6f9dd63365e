//! The SQLite store against the store conformance suite: in memory, and on a file.

use watcher_runtime::conformance::Guarded;
use watcher_store_sqlite::SqliteStore;

mod in_memory {
    use super::*;

    watcher_runtime::store_conformance!(SqliteStore::memory()
        .and_then(SqliteStore::counting_work)
        .expect("an in-memory database"));
}

/// A store on a fresh file in its own temporary directory, removed when the check ends.
fn on_file() -> Guarded<SqliteStore, tempfile::TempDir> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteStore::open(dir.path().join("watcher.db"))
        .and_then(SqliteStore::counting_work)
        .expect("open the database file");
    Guarded { store, guard: dir }
}

mod on_a_file {
    use super::*;

    watcher_runtime::store_conformance!(on_file());
}
