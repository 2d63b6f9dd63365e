//! Delivering lapse tasks: takes due outbox entries, posts them, records what happened
//! (serve.md: "A lapse task is delivered when the agent answers with a JSON-RPC `result`;
//! permanent JSON-RPC errors mark it `failed`; transport errors, 5xx and transient errors are
//! retried with backoff … never sends a second one for a delivered `messageId`").
//!
//! Bookkeeping is pure ([`record_attempt`]); the other modules only carry it out against the
//! [`Store`](watcher_runtime::store::Store) and the network. One job per module:
//!
//! * `config`: [`SubmitterConfig`], the submitter's settings.
//! * `submitter`: the [`Submitter`] and how it is built.
//! * `claims`: the claim a sender holds on a lapse task while posting it ([`LEASE`],
//!   [`lease_for`]).
//! * `send`: sending by the entry the caller has just read ([`Submitter::deliver_read_with`],
//!   the one send entry point, a [`crate::lane::Lane`]'s).
//! * `prepare`: what to do with an entry before any network traffic (queued, due, endpoint,
//!   rate limit).
//! * `post`: claiming and posting an entry and recording the answer.
//! * `places`: the places a send holds at its agent while its request is there ([`Places`]).
//! * `lookup`: looking for an ambiguous entry with `ListTasks` before a second send
//!   ([`LOOKUP_BUDGET`]).
//! * `outcome`: what an answer does to the entry, pure ([`record_attempt`], [`record_found`],
//!   [`record_poll`], [`poll_delay`]).
//! * `follow`: following a delivered lapse task with `GetTask` ([`Submitter::poll_one`]).
//! * `report`: what happened to each entry ([`EntryOutcome`]), a pass's counts
//!   ([`DeliveryReport`]) and the log line of each outcome.
//!
//! The origin check before a first send (and its lineage) is origin-task reconciliation's
//! ([`crate::reconcile::Reconciler::check_before_send`]).

use a2a_types::TaskState;
use tracing::Instrument;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::metrics::{seconds_between, AttemptOutcome, Recorder};
use watcher_runtime::store::{Claim, DeliveryState, Lease, Outbox, OutboxEntry, StoreError};

use crate::client::{A2aClient, DeliveryError, SendOutcome};
use crate::endpoint::{AgentEndpoint, Endpoints};
use crate::rate::{RateBuckets, RateLimit, RateLimiter};
use crate::retry::{add, elapsed, jitter_fraction, next_attempt_at, RetryPolicy};

mod claims;
mod config;
mod follow;
mod lookup;
mod outcome;
mod places;
mod post;
mod prepare;
mod report;
mod send;
mod submitter;

pub use claims::*;
pub use config::*;
pub use lookup::*;
pub use outcome::*;
pub use places::Places;
pub(crate) use post::*;
pub(crate) use prepare::*;
pub use report::*;
pub use submitter::*;
