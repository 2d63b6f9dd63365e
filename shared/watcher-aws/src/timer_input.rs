//! The timer function's input, from a schedule or from the timer queue: which timer to
//! evaluate, never what to decide (the record does). Below both [`crate::scheduler`] and
//! [`crate::timer_queue`], which send it.

use serde::{Deserialize, Serialize};
use watcher_core::engine::TimerKey;
use watcher_core::ids::Tenant;

use crate::error::MessageError;

/// The JSON a schedule hands the timer function:
/// `{"tenant": "...", "timer": {"subject": {"type", "id"}, "expectation": {"agent", "id"},
/// "kind": "deadline" | "horizon"}}` (the `timer` is [`TimerKey`]'s serde form). It says which
/// timer to evaluate, never what to decide: the record does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimerInput {
    /// The tenant whose record to read.
    pub tenant: Tenant,
    /// Which timer fired.
    pub timer: TimerKey,
}

/// Reads a schedule's target input, for the timer function.
///
/// # Errors
/// [`MessageError::Malformed`] when it is not a [`TimerInput`] (an id empty or longer than
/// [`MAX_ID_LEN`](watcher_core::ids::MAX_ID_LEN) included). Not retryable.
pub fn parse_timer_input(input: &str) -> Result<TimerInput, MessageError> {
    serde_json::from_str(input).map_err(|source| MessageError::Malformed {
        what: "timer input",
        source,
    })
}
