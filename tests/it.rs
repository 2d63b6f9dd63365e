//! The crate's integration tests as one binary (`cargo test --test it`), each file of
//! `tests/` a module: one link of the crate and its dependencies instead of one per file.
//! Run one file's tests with `cargo test --test it <file>::`.

mod aws_concurrency;
mod aws_faults;
mod aws_iam;
mod aws_kms;
mod aws_local;
mod aws_rearm;
mod cli_operator;
mod common;
mod deployments;
mod docs;
mod example_cli;
mod goal_load;
mod hostile;
mod instants_cli;
mod interop_sdk;
mod kits_python;
mod kits_typescript;
mod release_profile;
mod replay_cli;
mod serve_agents;
mod serve_crash;
mod serve_delivery;
mod serve_full_disk;
mod serve_http;
mod serve_ids;
mod serve_incidents;
mod serve_limits;
mod serve_lock;
mod serve_metrics;
mod serve_notify;
mod serve_notify_incidents;
mod serve_reconcile;
mod serve_retention;
mod serve_tracing;
mod serve_warnings_once;
mod serve_webhooks;
mod skipped;
mod validate_cli;
mod web_chromium;
mod workspace;
