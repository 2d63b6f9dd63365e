//! The watcher's AWS adapters for the serverless deployment:
//!
//! * [`SchedulerTimers`] implements [`Timers`](watcher_runtime::ports::Timers) with one-time
//!   EventBridge Scheduler schedules, one per deadline and per horizon, named by the pure
//!   [`schedule_name`] and fired at the pure [`at_expression`];
//! * [`SqsLapseQueue`] implements [`LapseQueue`](watcher_runtime::ports::LapseQueue) over an SQS
//!   FIFO queue, one message group per agent and a deduplication id from the (tenant, agent,
//!   `messageId`, instant it was queued for), so an operator's re-queue is a new message;
//! * [`SqsTimerQueue`] finishes each timer's wait on a standard SQS queue with `DelaySeconds` up
//!   to the exact instant, after a schedule armed [`SCHEDULE_LEAD`] early (docs/aws-latency.md).
//!
//! Both are hints over the durable record (style: "timers are hints, the record is the truth"):
//! the timer function re-reads the record and lapses only when the deadline has passed on its own
//! clock, and the record's outbox, not the queue, guarantees one lapse task per (tenant, agent,
//! `messageId`) (FIFO deduplication lasts five minutes only).
//!
//! Names and expressions are validated here before any call (moto, the emulator the tests run
//! against, checks neither). SDK errors become [`PortError`](watcher_runtime::ports::PortError)s
//! typed by whether a retry can help, with the SDK error kept as the source.
//!
//! Build the SDK clients once, in `main`, and pass them in:
//!
//! ```no_run
//! # async fn example() -> Result<(), watcher_aws::ConfigError> {
//! use watcher_aws::{SchedulerConfig, SchedulerTimers, SqsLapseQueue};
//! let config = aws_config::load_defaults(aws_config::BehaviorVersion::latest()).await;
//! let timers = SchedulerTimers::new(
//!     aws_sdk_scheduler::Client::new(&config),
//!     SchedulerConfig::new(
//!         "watcher-timers",
//!         "arn:aws:lambda:us-east-1:123456789012:function:lapse-timer",
//!         "arn:aws:iam::123456789012:role/watcher-scheduler",
//!     )
//!     .with_dead_letter_queue("arn:aws:sqs:us-east-1:123456789012:watcher-timer-dlq"),
//! )?;
//! let queue = SqsLapseQueue::new(
//!     aws_sdk_sqs::Client::new(&config),
//!     "https://sqs.us-east-1.amazonaws.com/123456789012/watcher-lapses.fifo",
//! );
//! # let _ = (timers, queue);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub mod config_secret;
mod digest;
mod error;
pub mod names;
#[cfg(feature = "test-utils")]
pub mod provision;
pub mod scheduler;
pub mod sdk_env;
pub mod sqs;
pub mod timer_input;
pub mod timer_queue;

pub use crate::error::{ConfigError, MessageError};
pub use crate::names::{
    at_expression, schedule_name, should_schedule, validate_at_expression, validate_group_name,
    validate_schedule_name, ScheduleInputError, MAX_SCHEDULE_NAME_LEN, SCHEDULER_RESOLUTION,
};
pub use crate::scheduler::{
    SchedulerConfig, SchedulerTimers, DEFAULT_MAX_EVENT_AGE_SECS, DEFAULT_MAX_RETRY_ATTEMPTS,
};
pub use crate::sqs::{
    deduplication_id, message_group_id, parse_queue_message, parse_wake_up, wake_deduplication_id,
    QueueMessage, SqsLapseQueue, WakeUp, ENTRY_RETRY, MAX_DEDUPLICATION_ID_LEN,
    MAX_MESSAGE_GROUP_ID_LEN, MAX_VISIBILITY_SECS,
};
pub use crate::timer_input::{parse_timer_input, TimerInput};
pub use crate::timer_queue::{
    delay_seconds, parse_disarm_message, wake_delay_seconds, wake_lane_body, DisarmMessage,
    SqsTimerQueue, TimerQueue, TimerQueueMessage, WakeLane, MAX_DELAY_SECS, SCHEDULE_LEAD,
};
