//! The lapse-task submitter: takes due entries from the outbox ([`watcher_runtime::store::Store`])
//! and posts each as an A2A 1.0 JSON-RPC `SendMessage` to the agent that raised the expectation
//! (contracts/serve.md, semantics.md "The lapse task").
//!
//! One send path for both deployments: a [`lane::Lane`] per agent, whose [`lane::Lane::pass`]
//! `serve` runs in a loop per agent ([`lanes`]) and the SQS-fed submitter function runs for each
//! agent a lapse-queue wake-up names; both send by the entry held
//! ([`Submitter::deliver_read_with`]).
//!
//! * [`endpoint`]: where each agent is ([`AgentEndpoint`], [`Endpoints`]).
//! * [`client`]: the HTTP client ([`A2aClient`]) and the typed outcome of one post
//!   ([`SendOutcome`], [`DeliveryError`]: retryable or permanent).
//! * [`retry`]: [`RetryPolicy`] and the pure backoff [`next_attempt_at`].
//! * [`rate`]: per-agent rate limiting ([`RateLimit`], [`RateLimiter`]), expectations-v1 §13.2.
//! * [`deliver`]: [`Submitter`] (its one send entry point,
//!   [`Submitter::deliver_read_with`]) and the pure bookkeeping [`record_attempt`],
//!   [`record_found`].
//! * [`lane`]: one agent's lane ([`Lane`]), the one send path; [`contexts`]: its chains by
//!   contextId and how a pass shares its batch among them.
//! * [`lanes`]: serve's per-agent delivery lanes ([`spawn_lanes`]).
//! * [`origin_checks`]: the origin checks of a lane's pass, grouped by origin and context.
//! * [`reconcile`]: origin-task reconciliation for agents that are not lifecycle-trusted
//!   ([`reconcile::Reconciler`]).
//! * `testing` (feature `test-utils`): a recording A2A agent for tests.
//!
//! Time is an argument everywhere: nothing here reads a clock, so tests drive retries by passing
//! `now` values past `next_attempt_at`.

#![warn(missing_docs)]

pub mod client;
pub mod contexts;
pub mod deliver;
pub mod endpoint;
mod guard;
pub mod lane;
pub mod lanes;
pub mod origin_checks;
pub mod rate;
pub mod reconcile;
pub mod retry;

#[cfg(feature = "test-utils")]
pub mod testing;

pub use client::{A2aClient, ClientBuildError, ClientConfig, DeliveryError, SendOutcome};
pub use deliver::{
    poll_delay, record_attempt, record_found, record_poll, DeliveryReport, EntryOutcome, Submitter,
    SubmitterConfig,
};
pub use endpoint::{AgentEndpoint, Endpoints};
pub use guard::is_public as is_public_address;
pub use lane::{Lane, PassEnd, PassReport};
pub use lanes::{spawn_lanes, LaneContext, LaneSettings};
pub use rate::{BucketError, RateBuckets, RateLimit, RateLimiter};
pub use retry::{jitter_fraction, next_attempt_at, RetryPolicy};
