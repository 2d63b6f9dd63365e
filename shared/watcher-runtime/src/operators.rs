//! What operators do to and read from the outbox (serve.md, docs/howto/operating.md): re-queue failed
//! lapse tasks (`POST /v1/lapses/retry`, `a2a-watcher retry`) and each agent's delivery state
//! (`GET /v1/agents`). Every read goes through [`Outbox::outbox_of_agent`]: the cost follows the
//! agent's entries in one delivery state, never the whole outbox.

use serde::Serialize;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;

use crate::store::{DeliveryState, Outbox, OutboxEntry, StoreError};

/// Most failed lapse tasks one call to [`requeue_failed`] re-queues when no messageIds are given;
/// the answer says when more remain.
pub const MAX_REQUEUE: usize = 10_000;

/// Entries read per page while re-queueing.
const PAGE: usize = 500;

/// Puts a `failed` entry back in the queue at `now`: `queued`, due at `now`, its retry age
/// restarted (`retrying_since` and `attempt_started_at` cleared); attempts so far are kept and
/// `last_error` says it was re-queued. `None` for an entry that is not `failed`.
pub fn requeue_entry(entry: &OutboxEntry, now: Instant) -> Option<OutboxEntry> {
    if entry.delivery != DeliveryState::Failed {
        return None;
    }
    let mut e = entry.clone();
    e.delivery = DeliveryState::Queued;
    e.next_attempt_at = now;
    e.retrying_since = None;
    e.attempt_started_at = None;
    e.last_error = e
        .last_error
        .take()
        .map(|last| format!("re-queued by an operator at {now}; before: {last}"));
    Some(e)
}

/// What [`requeue_failed`] did.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Requeued {
    /// The messageIds put back in the queue.
    pub requeued: Vec<String>,
    /// The re-queued entries as written, in the order of `requeued` (for the deployment's hand
    /// over to delivery; not part of the answer).
    #[serde(skip)]
    pub entries: Vec<OutboxEntry>,
    /// messageIds asked for that were not re-queued, with why (not found, not failed).
    pub skipped: Vec<SkippedId>,
    /// More failed lapse tasks remain than [`MAX_REQUEUE`]; call again.
    pub more: bool,
}

/// A messageId that was not re-queued.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SkippedId {
    /// The messageId.
    pub message_id: String,
    /// Why: `not found` or `queued` / `sent` (its state).
    pub reason: String,
}

/// Re-queues failed lapse tasks of `agent` of `tenant` at `now`: the ones named by
/// `message_ids`, or, when `None`, every failed one (up to [`MAX_REQUEUE`]).
///
/// # Errors
/// The first store error; entries re-queued before it stay re-queued.
pub async fn requeue_failed<S: Outbox + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
    message_ids: Option<&[String]>,
    now: Instant,
) -> Result<Requeued, StoreError> {
    let mut out = Requeued::default();
    match message_ids {
        Some(ids) => {
            for id in ids {
                match store.outbox_get(tenant, agent, id).await? {
                    None => out.skipped.push(SkippedId {
                        message_id: id.clone(),
                        reason: "not found".into(),
                    }),
                    Some(entry) => match requeue_entry(&entry, now) {
                        Some(q) => {
                            store.outbox_update(&q).await?;
                            out.requeued.push(q.message_id.clone());
                            out.entries.push(q);
                        }
                        None => out.skipped.push(SkippedId {
                            message_id: id.clone(),
                            reason: format!("not failed but {}", entry.delivery.as_str()),
                        }),
                    },
                }
            }
        }
        None => loop {
            // Each re-queued entry leaves the failed set, so the next page is the next entries.
            let page = store
                .outbox_of_agent(tenant, agent, DeliveryState::Failed, None, PAGE)
                .await?;
            if page.is_empty() {
                break;
            }
            for entry in &page {
                if out.requeued.len() >= MAX_REQUEUE {
                    out.more = true;
                    return Ok(out);
                }
                if let Some(q) = requeue_entry(entry, now) {
                    store.outbox_update(&q).await?;
                    out.requeued.push(q.message_id.clone());
                    out.entries.push(q);
                }
            }
        },
    }
    Ok(out)
}

/// An agent's lapse-task delivery as operators see it (`GET /v1/agents`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentDelivery {
    /// `ok`: nothing failed or being retried; `retrying`: a lapse task has failed retryably since
    /// `retryingSince` and is being retried; `failing`: lapse tasks were given up (`failed`) and
    /// wait for an operator's re-queue.
    pub delivery: &'static str,
    /// When the oldest retry run among the next queued lapse tasks began.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retrying_since: Option<Instant>,
    /// The latest failure seen, in words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

/// Entries looked at per state when computing [`AgentDelivery`].
const LOOK_AT: usize = 20;

/// The delivery state of `agent` of `tenant`, from its next queued and its failed lapse tasks.
///
/// # Errors
/// Store errors.
pub async fn agent_delivery<S: Outbox + ?Sized>(
    store: &S,
    tenant: &Tenant,
    agent: &AgentId,
) -> Result<AgentDelivery, StoreError> {
    let failed = store
        .outbox_of_agent(tenant, agent, DeliveryState::Failed, None, 1)
        .await?;
    let queued = store
        .outbox_of_agent(tenant, agent, DeliveryState::Queued, None, LOOK_AT)
        .await?;
    let retrying = queued
        .iter()
        .filter_map(|e| e.retrying_since.map(|s| (s, e)))
        .min_by_key(|(s, _)| *s);
    let retrying_since = retrying.map(|(s, _)| s);
    if let Some(f) = failed.first() {
        return Ok(AgentDelivery {
            delivery: "failing",
            retrying_since,
            last_error: f.last_error.clone(),
        });
    }
    Ok(match retrying {
        Some((since, e)) => AgentDelivery {
            delivery: "retrying",
            retrying_since: Some(since),
            last_error: e.last_error.clone(),
        },
        None => AgentDelivery {
            delivery: "ok",
            retrying_since: None,
            last_error: None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::MemoryStore;
    use crate::store::Commit;
    use crate::store::Records as _;
    use serde_json::json;
    use watcher_core::ids::ExpectationId;
    use watcher_core::record::LapseKind;

    fn t0() -> Instant {
        Instant::parse("2026-09-10T12:00:00Z").unwrap()
    }

    fn entry(agent: &str, id: &str, delivery: DeliveryState) -> OutboxEntry {
        let mut entry = OutboxEntry::queued(
            Tenant::default_tenant(),
            AgentId::parse(agent).unwrap(),
            id.into(),
            ExpectationId::parse("exp-1").unwrap(),
            LapseKind::Overdue,
            t0(),
            json!({}),
        );
        entry.delivery = delivery;
        entry.attempts = 3;
        entry.last_error = Some("HTTP 503".into());
        entry
    }

    async fn store_with(entries: Vec<OutboxEntry>) -> MemoryStore {
        let store = MemoryStore::new();
        store
            .commit(&Tenant::default_tenant(), Commit::of_outbox(entries))
            .await
            .unwrap();
        store
    }

    #[tokio::test]
    async fn requeues_all_failed_of_one_agent_or_the_ones_named() {
        let t = Tenant::default_tenant();
        let booking = AgentId::parse("booking").unwrap();
        let store = store_with(vec![
            entry("booking", "f1", DeliveryState::Failed),
            entry("booking", "f2", DeliveryState::Failed),
            entry("booking", "s1", DeliveryState::Sent),
            entry("other", "f3", DeliveryState::Failed),
        ])
        .await;
        let later = Instant::parse("2026-09-11T12:00:00Z").unwrap();
        let named = requeue_failed(
            &store,
            &t,
            &booking,
            Some(&["f1".to_owned(), "s1".to_owned(), "nope".to_owned()]),
            later,
        )
        .await
        .unwrap();
        assert_eq!(named.requeued, ["f1"]);
        assert_eq!(
            named.skipped,
            [
                SkippedId {
                    message_id: "s1".into(),
                    reason: "not failed but sent".into()
                },
                SkippedId {
                    message_id: "nope".into(),
                    reason: "not found".into()
                }
            ]
        );
        let f1 = store.outbox_get(&t, &booking, "f1").await.unwrap().unwrap();
        assert_eq!(f1.delivery, DeliveryState::Queued);
        assert_eq!(f1.next_attempt_at, later);
        assert_eq!(f1.attempts, 3);
        let all = requeue_failed(&store, &t, &booking, None, later)
            .await
            .unwrap();
        assert_eq!(all.requeued, ["f2"]);
        assert!(!all.more);
        let other = AgentId::parse("other").unwrap();
        let f3 = store.outbox_get(&t, &other, "f3").await.unwrap().unwrap();
        assert_eq!(f3.delivery, DeliveryState::Failed, "another agent's stay");
    }

    #[tokio::test]
    async fn delivery_state_is_ok_retrying_or_failing() {
        let t = Tenant::default_tenant();
        let a = AgentId::parse("booking").unwrap();
        let store = store_with(vec![entry("booking", "q1", DeliveryState::Queued)]).await;
        assert_eq!(agent_delivery(&store, &t, &a).await.unwrap().delivery, "ok");
        let mut q = entry("booking", "q1", DeliveryState::Queued);
        q.retrying_since = Some(t0());
        store.outbox_update(&q).await.unwrap();
        let d = agent_delivery(&store, &t, &a).await.unwrap();
        assert_eq!((d.delivery, d.retrying_since), ("retrying", Some(t0())));
        q.delivery = DeliveryState::Failed;
        store.outbox_update(&q).await.unwrap();
        assert_eq!(
            agent_delivery(&store, &t, &a).await.unwrap().delivery,
            "failing"
        );
    }
}
