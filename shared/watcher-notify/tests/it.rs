//! The crate's integration tests as one binary (`cargo test -p watcher-notify --test it`).

mod agent_events;
mod common;
mod escaping;
mod incident_delivery;
mod incident_formats;
mod independence;
mod notifier;
mod preview;
mod redaction;
mod redirects;
mod resolutions;
mod routing;
