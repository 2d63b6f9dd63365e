//! The crate's integration tests as one binary (`cargo test --test it`), each file of
//! `tests/` a module: one link of the crate and its dependencies instead of one per file.
//! Run one file's tests with `cargo test --test it <file>::`.

mod aws_cards;
mod aws_notify;
mod aws_probe;
mod aws_rate;
mod common;
mod end_to_end;
mod ids_api;
mod operator_view_api;
mod root_and_bodies_api;
mod submitter_lanes;
mod sweep_schedules;
mod template_alarms;
mod template_deploys;
mod timer_redelivery;
mod times_api;
mod webhooks_api;
