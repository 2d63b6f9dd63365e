//! Sending a lapse task by the copy its lapse-queue message carries, with no read
//! ([`Submitter::deliver_copy`]): claimed only if the stored entry is still the copy
//! (docs/interpretation.md, "A lapse message's copy of its entry is a hint").

use super::*;

impl Submitter {
    /// [`Submitter::deliver_read_with`] of `copy`, the entry as it was when its lapse-queue message
    /// was sent, for a send with no read at all: when `copy` is queued, due at `now`, has an
    /// endpoint and gets a rate-limit token, it is claimed by a write conditional on the stored
    /// entry being `copy` (`Outbox::outbox_claim_copy`), posted and recorded as
    /// [`Submitter::deliver_read_with`] does. Answers `None`, having written nothing, when the copy
    /// cannot be acted on: it would settle the entry otherwise (not queued, not due, no
    /// endpoint, over the rate) or the store's entry is no longer the copy. The caller then
    /// reads the entry and goes by [`Submitter::deliver_read_with`]. A stale copy costs that fallback
    /// a conditional write and, at most, one rate-limit token of the agent's; it is never sent.
    /// On a store that cannot claim by a copy ([`Outbox::outbox_claims_copies`] `false`) it
    /// answers `None` at once, having taken nothing.
    ///
    /// # Errors
    /// A [`StoreError`] claiming or updating the entry.
    pub async fn deliver_copy<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        copy: OutboxEntry,
        now: Instant,
    ) -> Result<Option<EntryOutcome>, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        match self
            .deliver_copy_unrecorded(store, endpoints, self.buckets(), copy, now)
            .await?
        {
            None => Ok(None),
            Some(Posted::Done(outcome)) => Ok(Some(outcome)),
            Some(Posted::Unrecorded(unrecorded)) => (*unrecorded).record(store).await.map(Some),
        }
    }

    /// [`Submitter::deliver_copy`] up to the agent's answer, taking its rate token from `buckets`
    /// (tokens the caller took for a batch at once, [`crate::rate::Prepaid`]): a lapse task posted comes back
    /// [`Posted::Unrecorded`], for the caller to write ([`Unrecorded::record`]) while it goes on
    /// to the next (the SQS-fed submitter's lanes write one lapse task's record while claiming
    /// the next).
    ///
    /// # Errors
    /// A [`StoreError`] claiming the entry.
    pub async fn deliver_copy_unrecorded<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        buckets: &dyn RateBuckets,
        copy: OutboxEntry,
        now: Instant,
    ) -> Result<Option<Posted>, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        if !store.outbox_claims_copies() {
            // The claim could not come: read now, before a rate-limit token is spent on it.
            return Ok(None);
        }
        let (tenant, agent, message_id) = (
            copy.tenant.clone(),
            copy.agent.clone(),
            copy.message_id.clone(),
        );
        let prepared = prepare_read(
            store,
            endpoints,
            buckets,
            (&tenant, &agent, &message_id),
            Found::Copy(copy),
            now,
        )
        .await?;
        let (entry, endpoint) = match prepared {
            Prepared::Post(post_it) => *post_it,
            Prepared::Done(_) | Prepared::Unsure => return Ok(None),
        };
        let lease = self.claims.next(now);
        let Some(claimed) = store.outbox_claim_copy(&entry, &lease, now).await? else {
            tracing::debug!(message_id = %entry.message_id, "the lapse task changed since it was queued; read again");
            return Ok(None);
        };
        let span = lapse_task_span(&entry);
        post_unrecorded(
            store,
            &self.client,
            &self.policy,
            self.recorder.as_ref(),
            &entry,
            claimed,
            endpoint,
            now,
        )
        .instrument(span)
        .await
        .map(Some)
    }
}
