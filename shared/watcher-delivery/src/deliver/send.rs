//! Sending a lapse task by the entry the caller has just read ([`Submitter::deliver_read_with`]):
//! the one send entry point, a [`crate::lane::Lane`]'s.

use super::*;

impl Submitter {
    /// Delivers the entry (tenant, agent, messageId) the caller has just read (`found`; `None`
    /// when it is not stored) if it is queued and due at `now`, taking its rate token from
    /// `buckets` (tokens the caller took for a batch at once, [`crate::rate::Prepaid`], or
    /// [`Submitter::buckets`]): the one send entry point of a lane
    /// ([`crate::lane::Lane`]). It does not read the entry again: the claim is tried against
    /// `found` (`Outbox::outbox_claim_read`), and the outcome written against the entry as
    /// claimed (`Outbox::outbox_update_read`), so a send costs the store no read when nothing
    /// else writes the entry meanwhile. A stale `found` costs a read, never a second send: the
    /// claim judges the stored entry whenever it differs from `found`. An ambiguous entry (an
    /// earlier attempt whose outcome is unknown) is looked for with `ListTasks` before it is
    /// posted again (`post`). Answers what happened: [`EntryOutcome::Retried`],
    /// [`EntryOutcome::Deferred`] and [`EntryOutcome::NotDue`] mean "try again at the instant
    /// given". `places` (the lane's per-agent place and shared slot, taken before the claim)
    /// are released as soon as the agent has answered, before the answer is recorded
    /// ([`Places`]).
    ///
    /// # Errors
    /// A [`StoreError`] reading or updating the entry.
    #[allow(
        clippy::too_many_arguments,
        reason = "the one send entry point: each argument is what a lane holds for the send"
    )]
    pub async fn deliver_read_with<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        buckets: &dyn RateBuckets,
        (tenant, agent, message_id): (&Tenant, &AgentId, &str),
        found: Option<OutboxEntry>,
        places: Places<'_>,
        now: Instant,
    ) -> Result<EntryOutcome, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        match prepare_read(
            store,
            endpoints,
            buckets,
            (tenant, agent, message_id),
            found,
            now,
        )
        .await?
        {
            Prepared::Done(outcome) => {
                count_unposted(self.recorder.as_ref(), &outcome);
                Ok(outcome)
            }
            Prepared::Post(post_it) => {
                let (entry, endpoint) = *post_it;
                post(
                    store,
                    &self.client,
                    &self.policy,
                    self.recorder.as_ref(),
                    entry,
                    endpoint,
                    self.claims.next(now),
                    places,
                    now,
                )
                .await
            }
        }
    }
}

/// A lapse task failed without being posted (no endpoint for its agent) is a delivery failure.
fn count_unposted(recorder: &dyn Recorder, outcome: &EntryOutcome) {
    if matches!(outcome, EntryOutcome::Failed { .. }) {
        recorder.attempt(AttemptOutcome::Failed, None);
    }
}
