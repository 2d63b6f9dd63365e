//! The deployment's configuration, shared by `a2a-watcher serve` and the Lambda functions:
//! the TOML file of contracts/serve.md, agent cards (file, URL or inline JSON), credentials,
//! endpoints and bounds.

pub mod agents;
pub mod config;
pub mod deployment;
pub mod probe;
pub mod secrets;

pub use config::Config;
pub use deployment::{
    credentials, lane_settings, load_deployment, retry_policy, settings, submitter, Deployment,
};
