//! Following a delivered lapse task with `GetTask` when it asked for no push notifications
//! (semantics.md "The lapse task"): one poll, and its record ([`record_poll`]).

use super::*;

impl Submitter {
    /// Polls the followed lapse task `entry` with `GetTask` at `now` and records what it says
    /// ([`record_poll`]); answers the entry as written.
    ///
    /// # Errors
    /// A [`StoreError`] recording the poll.
    pub async fn poll_one<S, E>(
        &self,
        store: &S,
        endpoints: &E,
        entry: &OutboxEntry,
        now: Instant,
    ) -> Result<OutboxEntry, StoreError>
    where
        S: Outbox + ?Sized,
        E: Endpoints + ?Sized,
    {
        let result = match (
            endpoints.endpoint(&entry.tenant, &entry.agent),
            entry.task_id.as_deref(),
        ) {
            (Some(endpoint), Some(task_id)) => {
                let tenant = entry
                    .request
                    .get("tenant")
                    .and_then(serde_json::Value::as_str);
                self.client.get_task_state(&endpoint, task_id, tenant).await
            }
            _ => Err(DeliveryError::Permanent {
                reason: "no endpoint or task id to poll".into(),
                source: None,
            }),
        };
        self.record_poll_result(store, entry, result, now).await
    }

    /// Records `result`, a `GetTask` poll of the followed lapse task `entry` made elsewhere (the
    /// reconciler, which also feeds the task's artifacts through the push ingest path), as
    /// [`Submitter::poll_one`] does.
    ///
    /// # Errors
    /// A [`StoreError`] recording the poll.
    pub async fn record_poll_result<S>(
        &self,
        store: &S,
        entry: &OutboxEntry,
        result: Result<TaskState, DeliveryError>,
        now: Instant,
    ) -> Result<OutboxEntry, StoreError>
    where
        S: Outbox + ?Sized,
    {
        let updated = record_poll(entry, &result, now, &self.policy);
        store.outbox_update(&updated).await?;
        if updated.task_state != entry.task_state {
            tracing::info!(
                message_id = %entry.message_id,
                agent = %entry.agent,
                task_state = updated.task_state.as_deref(),
                following = updated.follow_at.is_some(),
                "lapse task's task changed state"
            );
        }
        Ok(updated)
    }
}
