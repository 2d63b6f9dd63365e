//! Both definition stores against the conformance suite: in memory, SQLite in memory, and SQLite
//! on a file.

use learnables_store::conformance::Guarded;
use learnables_store::{MemoryDefinitionStore, SqliteDefinitionStore};

mod memory {
    use super::*;

    learnables_store::definition_store_conformance!(MemoryDefinitionStore::new());
}

mod sqlite_in_memory {
    use super::*;

    learnables_store::definition_store_conformance!(
        SqliteDefinitionStore::memory().expect("an in-memory database")
    );
}

/// A store on a fresh file in its own temporary directory, removed when the check ends.
fn on_file() -> Guarded<SqliteDefinitionStore, tempfile::TempDir> {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let store = SqliteDefinitionStore::open(dir.path().join("watcher.db")).expect("open the file");
    Guarded { store, guard: dir }
}

mod sqlite_on_a_file {
    use super::*;

    learnables_store::definition_store_conformance!(on_file());
}
