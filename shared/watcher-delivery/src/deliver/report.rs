//! What happened to each lapse task a pass looked at ([`EntryOutcome`]), a pass's counts
//! ([`DeliveryReport`]), and the log line of each outcome.

use super::*;

/// What happened to one outbox entry in a delivery pass.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryOutcome {
    /// Delivered; the entry is now `sent`.
    Sent(SendOutcome),
    /// A retryable failure; the entry stays `queued` until `next_attempt_at`.
    Retried {
        /// Attempts made so far.
        attempts: u32,
        /// Earliest next attempt.
        next_attempt_at: Instant,
        /// The failure, in words.
        error: String,
    },
    /// Given up; the entry is now `failed`.
    Failed {
        /// Attempts made so far (0 when nothing was posted, e.g. no endpoint).
        attempts: u32,
        /// Why, in words (the entry's `last_error`).
        error: String,
    },
    /// Over the agent's rate limit: not posted and no attempt counted; the entry stays `queued`
    /// with `next_attempt_at` = `until`.
    Deferred {
        /// When a token frees.
        until: Instant,
    },
    /// Not posted because, on re-reading, the entry is no longer `queued` (another pass delivered
    /// or failed it) or is gone.
    Skipped {
        /// Its state on re-reading, `None` when gone.
        delivery: Option<DeliveryState>,
    },
    /// Not posted because its next attempt is later than `now` (an entry read before another
    /// pass rescheduled it), or because another sender's claim on it holds until
    /// `at` ([`Outbox::outbox_claim`]).
    NotDue {
        /// Its `next_attempt_at`, or the end of another sender's claim.
        at: Instant,
    },
}

/// Counts of one lane's pass ([`crate::lane::Lane::pass`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeliveryReport {
    /// Entries delivered (now `sent`).
    pub sent: usize,
    /// Entries that failed retryably and were rescheduled.
    pub retried: usize,
    /// Entries that became `failed`.
    pub failed: usize,
    /// Entries deferred by the rate limit (no attempt counted).
    pub deferred: usize,
    /// Entries not posted because they were no longer queued or not due on re-reading.
    pub skipped: usize,
}

impl DeliveryReport {
    /// Counts one outcome.
    pub fn count(&mut self, outcome: &EntryOutcome) {
        match outcome {
            EntryOutcome::Sent(_) => self.sent += 1,
            EntryOutcome::Retried { .. } => self.retried += 1,
            EntryOutcome::Failed { .. } => self.failed += 1,
            EntryOutcome::Deferred { .. } => self.deferred += 1,
            EntryOutcome::Skipped { .. } | EntryOutcome::NotDue { .. } => self.skipped += 1,
        }
    }

    /// Entries looked at in this pass, whatever happened to them.
    pub fn total(&self) -> usize {
        self.sent + self.retried + self.failed + self.deferred + self.skipped
    }
}

pub(crate) fn outcome_name(outcome: &EntryOutcome) -> &'static str {
    match outcome {
        EntryOutcome::Sent(_) => "sent",
        EntryOutcome::Retried { .. } => "retried",
        EntryOutcome::Failed { .. } => "failed",
        EntryOutcome::Deferred { .. } => "deferred",
        EntryOutcome::Skipped { .. } => "skipped",
        EntryOutcome::NotDue { .. } => "not_due",
    }
}

/// One log line per outcome; `warn` when the lapse task is given up.
pub(crate) fn log_outcome(entry: &OutboxEntry, outcome: &EntryOutcome) {
    let message_id = entry.message_id.as_str();
    let tenant = entry.tenant.as_str();
    let agent = entry.agent.as_str();
    let attempt = entry.attempts;
    let name = outcome_name(outcome);
    match outcome {
        EntryOutcome::Sent(sent) => {
            let (task_id, task_state, answered_with_message) = match sent {
                SendOutcome::Task { id, state } => (Some(id.as_str()), Some(state.as_str()), false),
                SendOutcome::Message { .. } => (None, None, true),
                SendOutcome::Unrecognised { .. } => (None, None, false),
            };
            tracing::info!(
                message_id,
                tenant,
                agent,
                attempt,
                outcome = name,
                task_id,
                task_state,
                answered_with_message,
                "lapse task delivered"
            );
        }
        EntryOutcome::Retried {
            next_attempt_at,
            error,
            ..
        } => tracing::info!(
            message_id,
            tenant,
            agent,
            attempt,
            outcome = name,
            %next_attempt_at,
            error = error.as_str(),
            "lapse task not delivered; will retry"
        ),
        EntryOutcome::Failed { error, .. } => tracing::warn!(
            message_id,
            tenant,
            agent,
            attempt,
            outcome = name,
            error = error.as_str(),
            "lapse task failed"
        ),
        EntryOutcome::Deferred { until } => tracing::info!(
            message_id,
            tenant,
            agent,
            attempt,
            outcome = name,
            %until,
            "lapse task deferred by the agent's rate limit"
        ),
        EntryOutcome::Skipped { .. } | EntryOutcome::NotDue { .. } => {
            tracing::debug!(
                message_id,
                tenant,
                agent,
                outcome = name,
                "lapse task skipped"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_counts_outcomes() {
        let mut r = DeliveryReport::default();
        r.count(&EntryOutcome::Deferred {
            until: Instant::parse("2026-09-10T22:15:00Z").unwrap(),
        });
        r.count(&EntryOutcome::NotDue {
            at: Instant::parse("2026-09-10T22:15:00Z").unwrap(),
        });
        r.count(&EntryOutcome::Skipped { delivery: None });
        assert_eq!((r.deferred, r.skipped, r.total()), (1, 2, 3));
    }
}
