//! Watcher core.
