//! The in-memory store against the store conformance suite.

watcher_runtime::store_conformance!(watcher_runtime::memory::MemoryStore::new());
