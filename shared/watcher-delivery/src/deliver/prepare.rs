//! What to do with one lapse task before any network traffic: still queued and due, its
//! endpoint, a rate-limit token; the failure without an endpoint and the deferral recorded.

use super::*;

/// What to do with one entry before any network traffic.
pub(crate) enum Prepared {
    /// Settled without posting.
    Done(EntryOutcome),
    /// Post it (the entry as just read) to this endpoint.
    Post(Box<(OutboxEntry, AgentEndpoint)>),
}

/// Given the entry (tenant, agent, messageId) as just read (`found`, `None` when it is not
/// stored), checks it is queued and due, finds its endpoint and takes a rate-limit token;
/// records the no-endpoint failure and the deferral.
pub(crate) async fn prepare_read<S, E>(
    store: &S,
    endpoints: &E,
    limiter: &dyn RateBuckets,
    (tenant, agent, message_id): (&Tenant, &AgentId, &str),
    found: Option<OutboxEntry>,
    now: Instant,
) -> Result<Prepared, StoreError>
where
    S: Outbox + ?Sized,
    E: Endpoints + ?Sized,
{
    let Some(mut entry) = found else {
        tracing::debug!(message_id, %tenant, %agent, "lapse task gone; skipped");
        return Ok(Prepared::Done(EntryOutcome::Skipped { delivery: None }));
    };
    if entry.delivery != DeliveryState::Queued {
        tracing::debug!(
            message_id,
            %tenant,
            agent = %entry.agent,
            delivery = entry.delivery.as_str(),
            "lapse task no longer queued; skipped"
        );
        return Ok(Prepared::Done(EntryOutcome::Skipped {
            delivery: Some(entry.delivery),
        }));
    }
    if entry.next_attempt_at > now {
        return Ok(Prepared::Done(EntryOutcome::NotDue {
            at: entry.next_attempt_at,
        }));
    }
    let Some(endpoint) = endpoints.endpoint(&entry.tenant, &entry.agent) else {
        let error = format!(
            "no endpoint is configured for agent {:?} of tenant {:?}; add `endpoint` (or a card \
             with a JSONRPC interface) to its [[agents]] entry",
            entry.agent.as_str(),
            entry.tenant.as_str()
        );
        entry.delivery = DeliveryState::Failed;
        entry.next_attempt_at = now;
        entry.last_error = Some(error.clone());
        store.outbox_update(&entry).await?;
        let outcome = EntryOutcome::Failed {
            attempts: entry.attempts,
            error,
        };
        log_outcome(&entry, &outcome);
        return Ok(Prepared::Done(outcome));
    };
    if let Err(until) = limiter
        .try_acquire(&entry.tenant, &entry.agent, now)
        .await
        .map_err(StoreError::backend)?
    {
        entry.next_attempt_at = until;
        store.outbox_update(&entry).await?;
        let outcome = EntryOutcome::Deferred { until };
        log_outcome(&entry, &outcome);
        return Ok(Prepared::Done(outcome));
    }
    Ok(Prepared::Post(Box::new((entry, endpoint))))
}
