//! [`LapseQueue`] over an SQS FIFO queue: one message per lapse task, one message group per
//! agent (ordered per agent, agents in parallel), deduplicated by the task's (tenant, agent,
//! `messageId`) and the instant it was queued for ([`deduplication_id`]).
//!
//! The queue carries the entry's identity and, when it is small, a copy of the entry as it was
//! queued ([`QueueMessage::entry`]): the submitter claims the entry by that copy, one write
//! conditional on the stored entry being the copy, with no read, and reads the entry only when
//! the write finds it changed. The copy decides nothing the store has not confirmed. FIFO
//! deduplication lasts five minutes only; the durable outbox, whose entries are keyed by
//! (tenant, agent, `messageId`) and never sent again once `sent`, is what guarantees one lapse
//! task per agent and `messageId`. (The agent is part of the key because expectation ids, and so
//! `messageId`s, are scoped to the raising agent: two agents of one tenant can have lapse tasks
//! with the same `messageId`.) The queue's dead-letter queue (a redrive policy on the queue)
//! catches messages the submitter keeps failing on.

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use serde::{Deserialize, Serialize};
use watcher_core::ids::{AgentId, Tenant};
use watcher_runtime::ports::{LapseQueue, PortError};
use watcher_runtime::store::OutboxEntry;

use crate::digest::{hex_lower, tuple_digest};
use crate::error::{permanent, port_error, MessageError};

/// Longest `MessageGroupId` SQS accepts, in characters.
pub const MAX_MESSAGE_GROUP_ID_LEN: usize = 128;

/// Longest `MessageDeduplicationId` SQS accepts, in characters.
pub const MAX_DEDUPLICATION_ID_LEN: usize = 128;

/// Longest `messageId` a queue message may carry, in bytes (the watcher's are far shorter:
/// `lapse:{expectationId}:{lapse}:{dueAt}`).
const MAX_MESSAGE_ID_LEN: usize = 2048;

/// Hex characters of the digest that makes a group id unique (128 bits).
const GROUP_DIGEST_HEX: usize = 32;

/// Domain tags of the two digests.
const GROUP_TAG: &str = "a2a-watcher/message-group/v1";
const DEDUP_TAG: &str = "a2a-watcher/deduplication/v1";

/// The lapse queue's message body, for the submitter:
/// `{"tenant": "...", "agent": "...", "messageId": "lapse:...", "entry": {...}}`: the first
/// three make the outbox entry's identity; `entry`, when present, is the whole outbox entry as it
/// was queued (its stored JSON form). The submitter claims the entry `(tenant, agent, messageId)`
/// and sends it to `agent` unless it was sent already.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueMessage {
    /// The tenant of the outbox entry.
    pub tenant: Tenant,
    /// The agent the lapse task goes to (part of the entry's identity).
    pub agent: AgentId,
    /// The outbox entry's `messageId` (unique per tenant and agent, not per tenant).
    pub message_id: String,
    /// The entry as it was when the message was sent, when the message's body with it is at
    /// most [`ENTRY_COPY_MAX_BYTES`]; absent in messages of earlier versions and for larger
    /// entries.
    /// A copy, not the truth: the submitter claims by it only on condition that the stored entry
    /// is still the same (`Outbox::outbox_claim_copy`). [`parse_queue_message`] drops a copy
    /// whose identity is not the message's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub entry: Option<OutboxEntry>,
}

/// The largest body, in bytes, a queue message carrying a copy of its entry may have: ten to a
/// `SendMessageBatch` stay far below SQS's 256 KiB per request. A lapse task's entry is about
/// 2 KB; a larger one goes by its identity alone and the submitter reads it.
pub const ENTRY_COPY_MAX_BYTES: usize = 16 * 1024;

impl From<&OutboxEntry> for QueueMessage {
    /// The message for `entry`, carrying its copy (the body sent drops it when too large:
    /// [`ENTRY_COPY_MAX_BYTES`]).
    fn from(entry: &OutboxEntry) -> Self {
        QueueMessage {
            tenant: entry.tenant.clone(),
            agent: entry.agent.clone(),
            message_id: entry.message_id.clone(),
            entry: Some(entry.clone()),
        }
    }
}

/// Reads a lapse queue message body, for the submitter.
///
/// # Errors
/// [`MessageError::Malformed`] when it is not a [`QueueMessage`] (a tenant or agent empty or too
/// long included); [`MessageError::Invalid`] when the `messageId` is empty or longer than 2048
/// bytes. Not retryable: the message belongs in the dead-letter queue.
pub fn parse_queue_message(body: &str) -> Result<QueueMessage, MessageError> {
    let message: QueueMessage =
        serde_json::from_str(body).map_err(|source| MessageError::Malformed {
            what: "lapse queue message",
            source,
        })?;
    if message.message_id.trim().is_empty() || message.message_id.len() > MAX_MESSAGE_ID_LEN {
        return Err(MessageError::Invalid {
            what: "lapse queue message",
            reason: format!(
                "messageId must be 1 to {MAX_MESSAGE_ID_LEN} bytes, not blank; got {} bytes",
                message.message_id.len()
            ),
        });
    }
    let mut message = message;
    if message.entry.as_ref().is_some_and(|e| {
        (&e.tenant, &e.agent, &e.message_id)
            != (&message.tenant, &message.agent, &message.message_id)
    }) {
        tracing::warn!(message_id = %message.message_id, "lapse queue message carries another entry's copy; ignored");
        message.entry = None;
    }
    Ok(message)
}

/// The `MessageGroupId` of `agent` of `tenant`: `{tenant}/{agent}` with every character SQS does
/// not allow (anything but printable ASCII) replaced by `_` and cut to 95 characters, then `~`
/// and 32 hex digits (128 bits) of a SHA-256 digest of the length-prefixed (tenant, agent). At
/// most 128 characters of SQS's alphabet (alphanumerics and ASCII punctuation).
///
/// The readable part is for people; the digest makes the id unique per (tenant, agent) even
/// where the readable parts agree (`a b` and `a_b`, long ids cut short). Two agents share a group
/// only if 128 bits of SHA-256 collide, and even then only their ordering is shared: each message
/// still names its own tenant and agent.
pub fn message_group_id(tenant: &Tenant, agent: &AgentId) -> String {
    let readable_len = MAX_MESSAGE_GROUP_ID_LEN - 1 - GROUP_DIGEST_HEX;
    let readable: String = format!("{tenant}/{agent}")
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '_' })
        .take(readable_len)
        .collect();
    let digest = hex_lower(&tuple_digest(GROUP_TAG, &[tenant.as_str(), agent.as_str()]));
    format!("{readable}~{}", &digest[..GROUP_DIGEST_HEX])
}

/// The `MessageDeduplicationId` of one hand-over of a lapse task: the 64 hex digits of a SHA-256
/// digest of the length-prefixed (tenant, agent, messageId, `next_attempt_at` as RFC 3339 UTC).
/// SQS drops a second message with the same id sent within five minutes.
///
/// The instant is part of it because an operator's re-queue (`POST /v1/lapses/retry`) moves
/// `next_attempt_at` to the moment of the re-queue: without it, a lapse task that failed and was
/// re-queued within five minutes of its first hand-over would be dropped by SQS as a duplicate
/// and wait for the sweep. Two hand-overs of one commit (a replayed input, the sweep finding a
/// message still in the queue) carry the same instant and still make one message; the outbox,
/// not this id, is what keeps one lapse task per messageId.
pub fn deduplication_id(entry: &OutboxEntry) -> String {
    let queued_for = entry.next_attempt_at.to_string();
    hex_lower(&tuple_digest(
        DEDUP_TAG,
        &[
            entry.tenant.as_str(),
            entry.agent.as_str(),
            &entry.message_id,
            &queued_for,
        ],
    ))
}

/// [`LapseQueue`] over the SQS FIFO queue at `queue_url` (deduplication ids explicit, so
/// content-based deduplication may be off).
#[derive(Debug, Clone)]
pub struct SqsLapseQueue {
    client: Client,
    queue_url: String,
}

impl SqsLapseQueue {
    /// The queue at `queue_url` on `client` (build it once, in `main`).
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        SqsLapseQueue {
            client,
            queue_url: queue_url.into(),
        }
    }

    /// The queue's URL.
    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    /// Makes the received message `receipt_handle` visible again `seconds` from now
    /// (`ChangeMessageVisibility`; SQS takes 0 to 43,200 s, and this clamps to that range).
    ///
    /// # Errors
    /// Permanent: an expired or unknown receipt handle, permissions. Retryable: throttling, 5xx.
    pub async fn redeliver_after(
        &self,
        receipt_handle: &str,
        seconds: u32,
    ) -> Result<(), PortError> {
        self.client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(seconds.min(MAX_VISIBILITY_SECS) as i32)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                port_error(
                    format!("change the visibility of a message on {}", self.queue_url),
                    e,
                )
            })
    }
}

/// The longest visibility timeout SQS accepts, in seconds (12 hours).
pub const MAX_VISIBILITY_SECS: u32 = 43_200;

#[async_trait]
impl LapseQueue for SqsLapseQueue {
    /// Sends a [`QueueMessage`] for `entry` in the agent's [`message_group_id`] with its
    /// [`deduplication_id`]. Sending the same entry twice within five minutes makes one message.
    ///
    /// # Errors
    /// Permanent: a missing queue, permissions, validation. Retryable: throttling, 5xx,
    /// timeouts.
    async fn enqueue(&self, entry: &OutboxEntry) -> Result<(), PortError> {
        let body = body_of(entry)?;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .message_group_id(message_group_id(&entry.tenant, &entry.agent))
            .message_deduplication_id(deduplication_id(entry))
            .send()
            .await
            .map_err(|e| {
                port_error(
                    format!(
                        "send {} to agent {} on {}",
                        entry.message_id, entry.agent, self.queue_url
                    ),
                    e,
                )
            })?;
        tracing::debug!(message_id = %entry.message_id, agent = %entry.agent, "lapse task queued");
        Ok(())
    }

    /// Sends the entries with `SendMessageBatch`, [`BATCH_MAX`] per request, the requests one
    /// after another so that each agent's messages keep their order in its message group. An
    /// entry the batch reports failed gets its own error (permanent when SQS says the sender
    /// is at fault); a request that fails as a whole fails each of its entries.
    async fn enqueue_all(&self, entries: &[OutboxEntry]) -> Vec<Result<(), PortError>> {
        let mut results = Vec::with_capacity(entries.len());
        for chunk in entries.chunks(BATCH_MAX) {
            results.extend(self.send_batch(chunk).await);
        }
        results
    }
}

/// The most messages one `SendMessageBatch` takes.
pub const BATCH_MAX: usize = 10;

/// Sends the built `entries` (each entry's id its position in `entries`) in one
/// `SendMessageBatch` to `queue_url`; one result per position, in order. An entry that failed
/// to build keeps its error and is not sent (none sent: no request). A request that failed as a
/// whole fails every sent entry with its cause ([`PortError::for_each_of`], reason `what()`); an
/// entry SQS reports failed gets its own error, permanent when SQS says the sender is at fault.
pub(crate) async fn send_batch_entries(
    client: &Client,
    queue_url: &str,
    entries: Vec<Result<aws_sdk_sqs::types::SendMessageBatchRequestEntry, PortError>>,
    what: impl Fn() -> String,
) -> Vec<Result<(), PortError>> {
    let mut results = Vec::with_capacity(entries.len());
    let mut batch = Vec::with_capacity(entries.len());
    for entry in entries {
        match entry {
            Ok(entry) => {
                batch.push(entry);
                results.push(Ok(()));
            }
            Err(e) => results.push(Err(e)),
        }
    }
    if batch.is_empty() {
        return results;
    }
    let sent = client
        .send_message_batch()
        .queue_url(queue_url)
        .set_entries(Some(batch))
        .send()
        .await;
    match sent {
        Err(e) => {
            let e = port_error(what(), e);
            let sent = results.iter().filter(|r| r.is_ok()).count();
            let mut each = e.for_each_of(sent).into_iter();
            for result in results.iter_mut().filter(|r| r.is_ok()) {
                if let Some(e) = each.next() {
                    *result = Err(e);
                }
            }
        }
        Ok(out) => {
            for failed in out.failed {
                let Some(result) = failed
                    .id
                    .parse::<usize>()
                    .ok()
                    .and_then(|i| results.get_mut(i))
                else {
                    continue;
                };
                let reason = format!(
                    "{} (entry {}: {}: {})",
                    what(),
                    failed.id,
                    failed.code,
                    failed.message.unwrap_or_default()
                );
                *result = Err(PortError::new(!failed.sender_fault, reason, None));
            }
        }
    }
    results
}

/// The queue message body for `entry`: with its copy, or, when that body would be over
/// [`ENTRY_COPY_MAX_BYTES`], without it (serialized once more, for large entries only).
fn body_of(entry: &OutboxEntry) -> Result<String, PortError> {
    let mut message = QueueMessage::from(entry);
    let to_body = |message: &QueueMessage| {
        serde_json::to_string(message).map_err(|e| {
            permanent(
                format!("body of the queue message for {}", entry.message_id),
                e,
            )
        })
    };
    let body = to_body(&message)?;
    if body.len() <= ENTRY_COPY_MAX_BYTES {
        return Ok(body);
    }
    message.entry = None;
    to_body(&message)
}

impl SqsLapseQueue {
    /// One `SendMessageBatch` of at most [`BATCH_MAX`] entries; one result per entry, in order.
    /// Each batch entry's id is its position in `chunk`.
    async fn send_batch(&self, chunk: &[OutboxEntry]) -> Vec<Result<(), PortError>> {
        let entries = chunk
            .iter()
            .enumerate()
            .map(|(i, entry)| {
                aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                    .id(i.to_string())
                    .message_body(body_of(entry)?)
                    .message_group_id(message_group_id(&entry.tenant, &entry.agent))
                    .message_deduplication_id(deduplication_id(entry))
                    .build()
                    .map_err(|e| permanent(format!("batch entry for {}", entry.message_id), e))
            })
            .collect();
        let results = send_batch_entries(&self.client, &self.queue_url, entries, || {
            format!("send {} lapse tasks on {}", chunk.len(), self.queue_url)
        })
        .await;
        for (entry, result) in chunk.iter().zip(&results) {
            match result {
                Ok(()) => {
                    tracing::debug!(message_id = %entry.message_id, agent = %entry.agent, "lapse task queued");
                }
                Err(e) => {
                    tracing::debug!(message_id = %entry.message_id, agent = %entry.agent, error = %e, "lapse task not queued");
                }
            }
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    fn tenant(t: &str) -> Tenant {
        Tenant::parse(t).unwrap()
    }

    fn agent(a: &str) -> AgentId {
        AgentId::parse(a).unwrap()
    }

    fn sqs_char(c: char) -> bool {
        c.is_ascii_alphanumeric() || c.is_ascii_punctuation()
    }

    #[test]
    fn group_ids_are_readable_and_unique() {
        let g = message_group_id(&tenant("default"), &agent("planner"));
        assert!(g.starts_with("default/planner~"), "{g}");
        assert_eq!(g.len(), "default/planner~".len() + 32);
        let ids: HashSet<String> = [
            ("default", "planner"),
            ("default", "carrier"),
            ("other", "planner"),
            ("default", "a b"),
            ("default", "a_b"),
            ("default/a", "b"),
            ("default", "a/b"),
        ]
        .into_iter()
        .map(|(t, a)| message_group_id(&tenant(t), &agent(a)))
        .collect();
        assert_eq!(ids.len(), 7);
    }

    #[test]
    fn long_and_unicode_ids_make_valid_group_ids() {
        let long = "é".repeat(200);
        let g = message_group_id(&tenant(&long), &agent("agent with spaces"));
        assert!(g.len() <= MAX_MESSAGE_GROUP_ID_LEN, "{}", g.len());
        assert!(g.chars().all(sqs_char), "{g}");
    }

    fn queued(t: &str, a: &str, m: &str) -> OutboxEntry {
        OutboxEntry::queued(
            tenant(t),
            agent(a),
            m.to_owned(),
            watcher_core::ids::ExpectationId::parse("e").unwrap(),
            watcher_core::record::LapseKind::Overdue,
            watcher_core::time::Instant::parse("2030-01-01T00:00:00Z").unwrap(),
            serde_json::json!({}),
        )
    }

    #[test]
    fn deduplication_ids_are_hex_digests_of_the_task() {
        let d = deduplication_id(&queued("default", "planner", "lapse:e:overdue:t"));
        assert_eq!(d.len(), 64);
        assert!(d.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(
            d,
            deduplication_id(&queued("default", "planner", "lapse:e:overdue:t"))
        );
        assert_ne!(
            d,
            deduplication_id(&queued("default", "planner", "lapse:e:stalled:t"))
        );
        assert_ne!(
            d,
            deduplication_id(&queued("other", "planner", "lapse:e:overdue:t"))
        );
        assert_ne!(
            d,
            deduplication_id(&queued("default", "booking", "lapse:e:overdue:t")),
            "another agent's lapse task with the same messageId is not dropped as a duplicate"
        );
    }

    /// A failed lapse task an operator re-queues is a new hand-over: SQS must not drop it as a
    /// duplicate of its first message (sent moments before, within the five-minute window).
    #[test]
    fn a_requeued_lapse_task_is_not_a_duplicate_of_its_first_hand_over() {
        let first = queued("default", "planner", "lapse:e:overdue:t");
        let mut failed = first.clone();
        failed.delivery = watcher_runtime::store::DeliveryState::Failed;
        failed.attempts = 1;
        failed.last_error = Some("agent answered JSON-RPC error -32602".into());
        let at = watcher_core::time::Instant::parse("2030-01-01T00:00:03Z").unwrap();
        let requeued = watcher_runtime::operators::requeue_entry(&failed, at).unwrap();
        assert_ne!(deduplication_id(&first), deduplication_id(&requeued));
        assert_eq!(
            deduplication_id(&requeued),
            deduplication_id(&requeued.clone())
        );
    }

    #[test]
    fn queue_messages_have_the_documented_shape() {
        let m = QueueMessage {
            tenant: tenant("acme"),
            agent: agent("planner"),
            message_id: "lapse:exp-1:overdue:2026-09-10T20:15:00Z".into(),
            entry: None,
        };
        let json = serde_json::to_value(&m).unwrap();
        assert_eq!(
            json,
            serde_json::json!({
                "tenant": "acme",
                "agent": "planner",
                "messageId": "lapse:exp-1:overdue:2026-09-10T20:15:00Z"
            })
        );
        assert_eq!(parse_queue_message(&json.to_string()).unwrap(), m);
    }

    /// A message carries the entry as queued, in its stored JSON form, and reads back to the
    /// same entry; an entry too large for a copy goes by its identity alone.
    #[test]
    fn queue_messages_carry_a_copy_of_a_small_entry() {
        let entry = queued(
            "acme",
            "planner",
            "lapse:exp-1:overdue:2026-09-10T20:15:00Z",
        );
        let body = body_of(&entry).unwrap();
        let json: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(
            json["messageId"],
            "lapse:exp-1:overdue:2026-09-10T20:15:00Z"
        );
        assert_eq!(json["entry"], serde_json::to_value(&entry).unwrap());
        let read = parse_queue_message(&body).unwrap();
        assert_eq!(read.entry.as_ref(), Some(&entry));
        assert_eq!(
            serde_json::to_string(read.entry.as_ref().unwrap()).unwrap(),
            serde_json::to_string(&entry).unwrap(),
            "the copy serializes to the stored form, byte for byte"
        );

        let mut large = entry;
        large.request = serde_json::json!({ "text": "x".repeat(ENTRY_COPY_MAX_BYTES) });
        let read = parse_queue_message(&body_of(&large).unwrap()).unwrap();
        assert_eq!(read.entry, None);
        assert_eq!(read.message_id, large.message_id);
    }

    /// A copy of another entry than the one the message names is ignored, never trusted.
    #[test]
    fn a_copy_of_another_entry_is_dropped() {
        let entry = queued("acme", "planner", "lapse:a");
        let mut json = serde_json::to_value(QueueMessage::from(&entry)).unwrap();
        json["messageId"] = "lapse:b".into();
        let read = parse_queue_message(&json.to_string()).unwrap();
        assert_eq!((read.message_id.as_str(), read.entry), ("lapse:b", None));
        let mut json = serde_json::to_value(QueueMessage::from(&entry)).unwrap();
        json["agent"] = "booking".into();
        assert_eq!(parse_queue_message(&json.to_string()).unwrap().entry, None);
    }

    #[test]
    fn malformed_queue_messages_are_refused() {
        for bad in [
            "",
            "[]",
            r#"{"tenant":"acme","agent":"planner"}"#,
            r#"{"tenant":"","agent":"planner","messageId":"m"}"#,
            r#"{"tenant":"acme","agent":"planner","message_id":"m"}"#,
        ] {
            let e = parse_queue_message(bad).unwrap_err();
            assert!(matches!(e, MessageError::Malformed { .. }), "{bad:?}: {e}");
        }
        for bad in [
            r#"{"tenant":"acme","agent":"planner","messageId":" "}"#.to_owned(),
            format!(
                r#"{{"tenant":"acme","agent":"planner","messageId":"{}"}}"#,
                "m".repeat(MAX_MESSAGE_ID_LEN + 1)
            ),
        ] {
            let e = parse_queue_message(&bad).unwrap_err();
            assert!(matches!(e, MessageError::Invalid { .. }), "{e}");
        }
    }

    proptest! {
        #[test]
        fn group_and_deduplication_ids_fit_sqs(
            t in "\\PC{1,120}",
            a in "\\PC{1,120}",
            m in "\\PC{1,120}",
        ) {
            prop_assume!(!t.trim().is_empty() && !a.trim().is_empty());
            let (t, a) = (tenant(&t), agent(&a));
            let g = message_group_id(&t, &a);
            prop_assert!(g.len() <= MAX_MESSAGE_GROUP_ID_LEN);
            prop_assert!(g.chars().all(sqs_char), "{}", g);
            let d = deduplication_id(&OutboxEntry::queued(
                t,
                a,
                m,
                watcher_core::ids::ExpectationId::parse("e").unwrap(),
                watcher_core::record::LapseKind::Overdue,
                watcher_core::time::Instant::parse("2030-01-01T00:00:00Z").unwrap(),
                serde_json::json!({}),
            ));
            prop_assert!(d.len() <= MAX_DEDUPLICATION_ID_LEN);
            prop_assert!(d.chars().all(sqs_char));
        }

        #[test]
        fn distinct_agents_get_distinct_groups(
            pairs in proptest::collection::hash_set(("[a b_/]{1,4}", "[a b_/]{1,4}"), 1..100)
        ) {
            let pairs: Vec<_> = pairs
                .into_iter()
                .filter(|(t, a)| !t.trim().is_empty() && !a.trim().is_empty())
                .collect();
            let ids: HashSet<String> = pairs
                .iter()
                .map(|(t, a)| message_group_id(&tenant(t), &agent(a)))
                .collect();
            prop_assert_eq!(ids.len(), pairs.len());
        }
    }
}
