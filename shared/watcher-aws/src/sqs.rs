//! [`LapseQueue`] over an SQS FIFO queue of wake-ups: a message is a [`WakeUp`] of one agent's
//! lane (`{"tenant","agent"}`), in the agent's message group ([`message_group_id`]: one lane of
//! an agent runs at a time, agents in parallel), deduplicated per agent and whole second
//! ([`wake_deduplication_id`]), so that an agent's wake-ups coalesce to at most one a second and
//! any backlog of any size puts a bounded number of messages in the queue every agent shares.
//! The backlog lives in the outbox (the table): the submitter's lane reads the agent's due lapse
//! tasks itself (docs/aws-latency.md, "One delivery path: wake-ups, not lapse tasks, on the
//! queue").
//!
//! Messages of earlier versions carried one lapse task each ([`QueueMessage`]: `messageId` and a
//! copy of the entry); [`parse_wake_up`] reads one as a wake-up of its agent, so messages in
//! flight across an upgrade are not lost. FIFO deduplication lasts five minutes only; the
//! durable outbox, whose entries are keyed by (tenant, agent, `messageId`) and claimed before
//! each send, is what guarantees one lapse task per agent and `messageId`. The queue's
//! dead-letter queue (a redrive policy on the queue) catches messages the submitter keeps
//! failing on.

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use serde::{Deserialize, Serialize};
use watcher_core::ids::{AgentId, Tenant};
use watcher_runtime::ports::{LapseQueue, PortError};
use watcher_runtime::retry::{Backoff, Retry};
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

/// Domain tag of the wake-ups' deduplication ids.
const WAKE_TAG: &str = "a2a-watcher/wake-up/v1";

/// A lapse queue message: a wake-up of the lane of `agent` of `tenant`,
/// `{"tenant": "...", "agent": "...", "second": 1796000000}`. `second` (Unix seconds, absent in
/// messages of earlier versions and in continuations) is the whole second the wake-up was sent
/// in, the one its deduplication id names: a wake-up of the same agent sent later in that second
/// was dropped by SQS as its duplicate, so the lane's last read must begin after that second
/// ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WakeUp {
    /// The agent's tenant.
    pub tenant: Tenant,
    /// The agent whose lane runs.
    pub agent: AgentId,
    /// The whole second (Unix seconds, the sender's clock) its deduplication id names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second: Option<i64>,
}

/// Reads a lapse queue message body as a [`WakeUp`]: a wake-up, or a message of an earlier
/// version (one lapse task, [`QueueMessage`]), read as a wake-up of its agent (its `messageId`
/// and copy are not needed: the lane reads the agent's due lapse tasks).
///
/// # Errors
/// [`MessageError::Malformed`] when it is not JSON with a valid `tenant` and `agent`. Not
/// retryable: the message belongs in the dead-letter queue.
pub fn parse_wake_up(body: &str) -> Result<WakeUp, MessageError> {
    serde_json::from_str(body).map_err(|source| MessageError::Malformed {
        what: "lapse queue message",
        source,
    })
}

/// The `MessageDeduplicationId` of a wake-up of `agent` of `tenant` keyed by `key`: the 64 hex
/// digits of a SHA-256 digest of the length-prefixed (tenant, agent, key). [`SqsLapseQueue::wake`]
/// keys by the whole second (`s:{unix seconds}`), so wake-ups of one agent within a second make
/// one message; a continuation keys by the SQS message id it continues (`c:{id}`), so the same
/// message handled twice continues once.
pub fn wake_deduplication_id(tenant: &Tenant, agent: &AgentId, key: &str) -> String {
    hex_lower(&tuple_digest(
        WAKE_TAG,
        &[tenant.as_str(), agent.as_str(), key],
    ))
}

/// The lapse queue's message body of earlier versions (still read, as a wake-up of its agent:
/// [`parse_wake_up`]):
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
    /// A copy, not the truth: the submitter never acts on it (it reads the agent's lane and
    /// claims by the entry it reads). [`parse_queue_message`] drops a copy whose identity is not
    /// the message's.
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
    /// [`ENTRY_RETRY`] on tokio's timer, unless a test set another.
    entry_retry: Retry,
}

impl SqsLapseQueue {
    /// The queue at `queue_url` on `client` (build it once, in `main`).
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        SqsLapseQueue {
            client,
            queue_url: queue_url.into(),
            entry_retry: Retry::new(ENTRY_RETRY),
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
        change_visibility(&self.client, &self.queue_url, receipt_handle, seconds).await
    }

    /// The same queue, retrying the entries a `SendMessageBatch` reports failed for a passing
    /// reason with `retry` ([`ENTRY_RETRY`] by default; tests record its waits).
    #[must_use]
    pub fn with_entry_retry(mut self, retry: Retry) -> Self {
        self.entry_retry = retry;
        self
    }
}

/// `ChangeMessageVisibility` of the received message `receipt_handle` on `queue_url`: visible
/// again `seconds` from now, clamped to SQS's 0 to [`MAX_VISIBILITY_SECS`].
pub(crate) async fn change_visibility(
    client: &Client,
    queue_url: &str,
    receipt_handle: &str,
    seconds: u32,
) -> Result<(), PortError> {
    let seconds = i32::try_from(seconds.min(MAX_VISIBILITY_SECS)).unwrap_or(i32::MAX);
    client
        .change_message_visibility()
        .queue_url(queue_url)
        .receipt_handle(receipt_handle)
        .visibility_timeout(seconds)
        .send()
        .await
        .map(|_| ())
        .map_err(|e| {
            port_error(
                format!("change the visibility of a message on {queue_url}"),
                e,
            )
        })
}

/// How the entries a `SendMessageBatch` answered as failed for a passing reason (its `Failed`
/// list, `SenderFault` false: SQS throttled or failed that entry alone) are sent again: the
/// shared policy (`watcher_runtime::retry`), 25 ms doubling, 3 attempts in all (waits of at most
/// 25 and 50 ms). The SDK's standard retry mode retries a request that fails as a whole
/// (throttling, 5xx, a timeout: 3 attempts, `sdk_env`), but not an entry of a request that
/// succeeded, which it hands back as part of the answer; a request that fails as a whole is
/// therefore not tried again here, so the two never multiply.
pub const ENTRY_RETRY: Backoff = Backoff::THROTTLED.with_attempts(3);

/// The longest visibility timeout SQS accepts, in seconds (12 hours).
pub const MAX_VISIBILITY_SECS: u32 = 43_200;

#[async_trait]
impl LapseQueue for SqsLapseQueue {
    /// Sends a [`WakeUp`] of the agent in its [`message_group_id`], deduplicated by the current
    /// whole second ([`wake_deduplication_id`]): wake-ups of one agent within a second make one
    /// message.
    ///
    /// # Errors
    /// Permanent: a missing queue, permissions, validation. Retryable: throttling, 5xx,
    /// timeouts.
    async fn wake(&self, tenant: &Tenant, agent: &AgentId) -> Result<(), PortError> {
        let second = jiff::Timestamp::now().as_second();
        self.send_wake(tenant, agent, &format!("s:{second}"), Some(second))
            .await
    }

    /// Wakes `entry`'s agent ([`LapseQueue::wake`]).
    async fn enqueue(&self, entry: &OutboxEntry) -> Result<(), PortError> {
        self.wake(&entry.tenant, &entry.agent).await
    }

    /// Wakes each agent of `entries` once, with `SendMessageBatch`, [`BATCH_MAX`] wake-ups per
    /// request; each entry gets its agent's wake-up's result (permanent when SQS says the
    /// sender is at fault; a request that fails as a whole fails each of its wake-ups).
    async fn enqueue_all(&self, entries: &[OutboxEntry]) -> Vec<Result<(), PortError>> {
        let second = jiff::Timestamp::now().as_second();
        // The distinct agents, in the order they first appear; each entry's agent's place.
        let mut agents: Vec<(&Tenant, &AgentId)> = Vec::new();
        let places: Vec<usize> = entries
            .iter()
            .map(|e| {
                let key = (&e.tenant, &e.agent);
                agents.iter().position(|a| *a == key).unwrap_or_else(|| {
                    agents.push(key);
                    agents.len() - 1
                })
            })
            .collect();
        let mut woken = Vec::with_capacity(agents.len());
        for chunk in agents.chunks(BATCH_MAX) {
            woken.extend(self.wake_batch(chunk, second).await);
        }
        places
            .into_iter()
            .map(|i| match woken.get(i) {
                Some(Ok(())) => Ok(()),
                Some(Err(e)) => Err(PortError::new(e.is_retryable(), e.to_string(), None)),
                None => Err(PortError::new(false, "wake-up not sent".into(), None)),
            })
            .collect()
    }
}

impl SqsLapseQueue {
    /// Sends a continuation of the lane of `agent` of `tenant`: a wake-up deduplicated by
    /// `continues` (the SQS message id of the wake-up whose lane ran out of time), so that the
    /// same message handled twice continues once, whatever second it is.
    ///
    /// # Errors
    /// As [`LapseQueue::wake`].
    pub async fn wake_continuing(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        continues: &str,
    ) -> Result<(), PortError> {
        self.send_wake(tenant, agent, &format!("c:{continues}"), None)
            .await
    }

    /// One `SendMessage` of a [`WakeUp`] of `agent` deduplicated by `key`.
    async fn send_wake(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        key: &str,
        second: Option<i64>,
    ) -> Result<(), PortError> {
        let body = wake_body(tenant, agent, second)?;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .message_group_id(message_group_id(tenant, agent))
            .message_deduplication_id(wake_deduplication_id(tenant, agent, key))
            .send()
            .await
            .map_err(|e| {
                port_error(
                    format!(
                        "wake agent {agent} of tenant {tenant} on {}",
                        self.queue_url
                    ),
                    e,
                )
            })?;
        tracing::debug!(%agent, key, "lane woken");
        Ok(())
    }

    /// One `SendMessageBatch` of wake-ups of `agents` (at most [`BATCH_MAX`]) in `second`, and
    /// those answered failed for a passing reason sent again ([`with_entry_retries`],
    /// [`ENTRY_RETRY`]); one result per agent, in order.
    async fn wake_batch(
        &self,
        agents: &[(&Tenant, &AgentId)],
        second: i64,
    ) -> Vec<Result<(), PortError>> {
        with_entry_retries(agents.len(), &self.entry_retry, |positions| async move {
            let entries = positions
                .iter()
                .filter_map(|&p| agents.get(p))
                .enumerate()
                .map(|(i, (tenant, agent))| {
                    aws_sdk_sqs::types::SendMessageBatchRequestEntry::builder()
                        .id(i.to_string())
                        .message_body(wake_body(tenant, agent, Some(second))?)
                        .message_group_id(message_group_id(tenant, agent))
                        .message_deduplication_id(wake_deduplication_id(
                            tenant,
                            agent,
                            &format!("s:{second}"),
                        ))
                        .build()
                        .map_err(|e| permanent(format!("wake-up of agent {agent}"), e))
                })
                .collect();
            send_batch_entries(&self.client, &self.queue_url, entries, || {
                format!("wake {} agents on {}", positions.len(), self.queue_url)
            })
            .await
        })
        .await
    }
}

/// The body of a [`WakeUp`] of `agent` of `tenant`.
fn wake_body(tenant: &Tenant, agent: &AgentId, second: Option<i64>) -> Result<String, PortError> {
    serde_json::to_string(&WakeUp {
        tenant: tenant.clone(),
        agent: agent.clone(),
        second,
    })
    .map_err(|e| permanent(format!("body of the wake-up of agent {agent}"), e))
}

/// The most messages one `SendMessageBatch` takes.
pub const BATCH_MAX: usize = 10;

/// What one `SendMessageBatch` came to: one result per entry given, in order, and whether the
/// request failed as a whole (then every sent entry carries that failure).
#[derive(Debug)]
pub(crate) struct Sent {
    /// One result per entry, in the order given.
    pub(crate) results: Vec<Result<(), PortError>>,
    /// The request failed as a whole (after the SDK's own retries), not entry by entry.
    pub(crate) request_failed: bool,
}

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
) -> Sent {
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
        return Sent {
            results,
            request_failed: false,
        };
    }
    let sent = client
        .send_message_batch()
        .queue_url(queue_url)
        .set_entries(Some(batch))
        .send()
        .await;
    let mut request_failed = false;
    match sent {
        Err(e) => {
            request_failed = true;
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
    Sent {
        results,
        request_failed,
    }
}

/// Sends `n` entries with `send` (given the positions to send, in order; it answers a [`Sent`]
/// for them), then, per `retry`, sends again those answered with a retryable error, in order,
/// while the previous request succeeded as a whole: an entry SQS throttled or failed alone gets
/// the shared backoff, a request the SDK already retried is not sent once more
/// ([`ENTRY_RETRY`]). One result per entry, in order: the last answer for each.
///
/// An entry sent again goes after the entries of its batch that were taken: in a FIFO message
/// group, it follows them (the sweep's re-queue would too; the submitter sends whatever it
/// receives, each lapse task once).
pub(crate) async fn with_entry_retries<F, Fut>(
    n: usize,
    retry: &Retry,
    mut send: F,
) -> Vec<Result<(), PortError>>
where
    F: FnMut(Vec<usize>) -> Fut,
    Fut: std::future::Future<Output = Sent>,
{
    let first = send((0..n).collect()).await;
    let mut results = first.results;
    let mut request_failed = first.request_failed;
    let mut attempt = 1;
    while !request_failed && retry.allows(attempt) {
        let again: Vec<usize> = results
            .iter()
            .enumerate()
            .filter(|(_, r)| r.as_ref().is_err_and(PortError::is_retryable))
            .map(|(i, _)| i)
            .collect();
        if again.is_empty() {
            break;
        }
        let waited = retry.pause(attempt).await;
        tracing::debug!(
            entries = again.len(),
            ?waited,
            attempt,
            "sending failed batch entries again"
        );
        let sent = send(again.clone()).await;
        for (i, result) in again.into_iter().zip(sent.results) {
            if let Some(slot) = results.get_mut(i) {
                *slot = result;
            }
        }
        request_failed = sent.request_failed;
        attempt += 1;
    }
    results
}

/// The queue message body of an earlier version for `entry` (tests build messages in flight
/// across an upgrade with it): with its copy, or, when that body would be over
/// [`ENTRY_COPY_MAX_BYTES`], without it (serialized once more, for large entries only).
#[cfg(test)]
pub(crate) fn body_of(entry: &OutboxEntry) -> Result<String, PortError> {
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

#[cfg(test)]
mod tests;
