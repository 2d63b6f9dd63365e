//! The watcher's AWS Lambda functions as plain handlers over narrow parts, so that each binary
//! under `functions/` is a few lines of `main` and every handler can be driven in tests with its
//! real event type:
//!
//! * [`sink`]: after each commit, arm/disarm EventBridge schedules and enqueue lapse tasks;
//! * [`timer`]: the per-expectation schedules' target, the timer queue's consumer and the
//!   sweep's duties ([`sweep`]), over one typed event ([`timer_event`]);
//! * [`redelivery`]: a timer firing that failed for a passing reason, tried again within
//!   seconds (in the invocation, then the timer message's visibility backed off);
//! * [`submitter`]: the SQS-fed lapse-task submitter with partial batch failures;
//! * [`cards`]: what the handlers need of agent cards (re-read by the sweep, picked up from the
//!   table by every function), as a narrow trait;
//! * [`rate`]: the per-agent rate buckets every submitter instance shares (DynamoDB);
//! * [`api`]: the API function's router;
//! * [`emf`]: CloudWatch Embedded Metric Format lines on stdout.
//!
//! Building a function's parts at cold start (the environment, the clients, the cards) is the
//! host's: `watcher_host::aws`.

pub mod api;
pub mod cards;
pub mod emf;
pub mod handover;
pub mod rate;
pub mod redelivery;
pub mod sink;
pub mod submitter;
pub mod sweep;
pub mod timer;
pub mod timer_event;

/// JSON logs on stdout (CloudWatch adds the time), filtered by `RUST_LOG`; called first in every
/// function's `main`.
pub fn init_tracing() {
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .without_time()
        .init();
}
