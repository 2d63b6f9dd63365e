//! Sending a lapse task by a read of its entry: one pass over what is due
//! ([`Submitter::deliver_due`]), one entry ([`Submitter::deliver_one`]), or an entry the caller
//! has just read ([`Submitter::deliver_read_with`], the lane's).

use super::*;

impl Submitter {
    /// Delivers up to `limit` outbox entries due at `now` (see [`deliver_due`]).
    ///
    /// # Errors
    /// The first [`StoreError`]; entries posted before it are recorded, except the one whose
    /// update failed, which is posted again on a later pass (same `messageId`).
    pub async fn deliver_due<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        now: Instant,
        limit: usize,
    ) -> Result<DeliveryReport, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        run_due(
            store,
            &self.client,
            endpoints,
            &self.policy,
            self.buckets(),
            self.recorder.as_ref(),
            &self.claims,
            self.concurrency,
            now,
            limit,
        )
        .await
    }

    /// Delivers the entry (tenant, agent, messageId) if it is queued and due at `now`, and this
    /// submitter's claim on it is granted. Returns what happened; [`EntryOutcome::Retried`],
    /// [`EntryOutcome::Deferred`] and [`EntryOutcome::NotDue`] mean "try again at the instant
    /// given". Reads the entry, then [`Submitter::deliver_read_with`] with this submitter's own
    /// rate buckets ([`Submitter::buckets`]).
    ///
    /// # Errors
    /// A [`StoreError`] reading or updating the entry.
    pub async fn deliver_one<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        tenant: &Tenant,
        agent: &AgentId,
        message_id: &str,
        now: Instant,
    ) -> Result<EntryOutcome, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        let found = store.outbox_get(tenant, agent, message_id).await?;
        self.deliver_read_with(
            store,
            endpoints,
            self.buckets(),
            (tenant, agent, message_id),
            found,
            now,
        )
        .await
    }

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
    /// posted again (`post`).
    ///
    /// # Errors
    /// A [`StoreError`] reading or updating the entry.
    pub async fn deliver_read_with<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        buckets: &dyn RateBuckets,
        (tenant, agent, message_id): (&Tenant, &AgentId, &str),
        found: Option<OutboxEntry>,
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
            Found::Read(found),
            now,
        )
        .await?
        {
            Prepared::Done(outcome) => {
                count_unposted(self.recorder.as_ref(), &outcome);
                Ok(outcome)
            }
            // Only a copy is unsure; a read is what the store holds.
            Prepared::Unsure => Ok(EntryOutcome::Skipped { delivery: None }),
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
                    now,
                )
                .await
            }
        }
    }
}
