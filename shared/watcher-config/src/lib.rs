//! The deployment's configuration, shared by `a2a-watcher serve` and the Lambda functions:
//! the TOML file of contracts/serve.md (agents, sources, operators, teachers, `[limits]`,
//! `[delivery]`) as typed values, with credentials read from files or variables
//! ([`secrets`]). Pure configuration: reading cards, building clients and credentials is
//! `watcher_host`'s.

pub mod config;
pub mod error;
pub mod keys;
pub mod notify;
pub mod secrets;

pub use config::Config;
pub use error::ConfigError;
