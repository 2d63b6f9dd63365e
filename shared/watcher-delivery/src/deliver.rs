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
//! * `send`: sending by a read of the entry ([`Submitter::deliver_read_with`], the lane's one
//!   send entry point; [`Submitter::deliver_one`] and [`Submitter::deliver_due`], which read
//!   first).
//! * `copy`: sending by the lapse-queue message's copy of the entry
//!   ([`Submitter::deliver_copy`]).
//! * `pass`: one pass over what is due ([`deliver_due`]).
//! * `prepare`: what to do with an entry before any network traffic (queued, due, endpoint,
//!   rate limit).
//! * `post`: posting a claimed entry and recording the answer ([`Posted`], [`Unrecorded`]).
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
use futures_util::stream::{self, StreamExt};
use tracing::Instrument;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::metrics::{seconds_between, AttemptOutcome, NoRecorder, Recorder};
use watcher_runtime::store::{Claim, DeliveryState, Lease, Outbox, OutboxEntry, StoreError};

use crate::client::{A2aClient, DeliveryError, SendOutcome};
use crate::endpoint::{AgentEndpoint, Endpoints};
use crate::rate::{RateBuckets, RateLimit, RateLimiter};
use crate::retry::{add, elapsed, jitter_fraction, next_attempt_at, RetryPolicy};

mod claims;
mod config;
mod copy;
mod follow;
mod lookup;
mod outcome;
mod pass;
mod post;
mod prepare;
mod report;
mod send;
mod submitter;

pub use claims::*;
pub use config::*;
pub use lookup::*;
pub use outcome::*;
pub use pass::*;
pub use post::*;
pub(crate) use prepare::*;
pub use report::*;
pub use submitter::*;
