//! `a2a-watcher probe AGENT_URL`: the lifecycle probe lives in `watcher_host::probe` (shared with
//! serve's probe on registration and the AWS functions, which receive its pushes on the
//! deployment's own push route).

pub use watcher_host::probe::run;
