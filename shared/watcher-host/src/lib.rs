//! Start-up wiring of both deployments of the watcher: one process (`a2a-watcher serve`, SQLite)
//! and the AWS functions (DynamoDB, Scheduler, SQS). What both load from the configuration lives
//! here once:
//!
//! * [`agents`]: agent cards read (file, URL or inline JSON) and validated into directory
//!   entries and endpoints (serve.md "Outbound");
//! * [`deployment`]: the whole deployment loaded at start (agents, credentials, endpoints,
//!   bounds), a card refreshed or picked up later, and the submitter, lanes and limits of
//!   `[delivery]` and `[limits]`;
//! * [`probe`]: the lifecycle probe (`a2a-watcher probe`, and on registration);
//! * [`services`]: each deployment's declared services: what each guarantees and where it runs
//!   (`docs/deployments.md`'s table; `serve` logs them at start);
//! * [`functions`]: the AWS functions, the services each hosts, and what each builds at its
//!   cold start from them;
//! * [`serve`] (feature `serve`): `a2a-watcher serve`'s composition: the store, the routes and
//!   its loops;
//! * [`aws`] (feature `aws`): each function's parts, built once per cold start.
//!
//! `watcher_config` is the typed configuration these read; it does no I/O beyond the file.

pub mod agents;
#[cfg(feature = "aws")]
pub mod aws;
pub mod deployment;
pub mod functions;
pub mod probe;
#[cfg(feature = "serve")]
pub mod serve;
pub mod services;

pub use deployment::{
    credentials, http_limits, lane_settings, learnable_owners, load_deployment, retry_policy,
    settings, submitter, Deployment,
};
