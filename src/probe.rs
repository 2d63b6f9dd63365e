//! `a2a-watcher probe AGENT_URL` and serve's probe on registration: the lifecycle probe lives in
//! `watcher_host::probe` (shared with the AWS functions, which receive its pushes on the
//! deployment's own push route).

pub use watcher_host::probe::{on_registration, run};
