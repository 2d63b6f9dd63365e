//! Agent cards and lifecycle descriptors kept per agent: the [`Cards`] capability of the store
//! port.

use async_trait::async_trait;
use serde_json::Value;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;

use super::StoreError;

/// Which document of an agent [`Cards`] keeps: its agent card, or the lifecycle probe's
/// descriptor at one protocol version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardKind<'a> {
    /// The last agent card read for the agent (the JSON as fetched); its instant is when it
    /// was read.
    AgentCard,
    /// The lifecycle probe's descriptor at this `protocolVersion`; its instant is when the
    /// probe ran.
    Lifecycle(&'a str),
}

/// One document [`Cards`] keeps: `kind` of `agent` of `tenant`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CardKey<'a> {
    /// The agent's tenant.
    pub tenant: &'a Tenant,
    /// The agent.
    pub agent: &'a AgentId,
    /// Which of its documents.
    pub kind: CardKind<'a>,
}

impl CardKey<'_> {
    /// The document, as errors name it: "the kept card of agent {agent}", "the lifecycle
    /// descriptor of agent {agent}".
    pub fn what(&self) -> String {
        match self.kind {
            CardKind::AgentCard => format!("the kept card of agent {}", self.agent),
            CardKind::Lifecycle(_) => format!("the lifecycle descriptor of agent {}", self.agent),
        }
    }
}

/// How long the read instant kept with an unchanged agent card may lag behind the latest read
/// ([`Cards::put_agent_card`]): five minutes, the AWS sweep's period.
///
/// Why the read instant is recorded at all, rather than left in each instance's directory:
/// another process takes up a kept card only when it was read after the one it holds
/// (`watcher_host::deployment::adopt_kept_card`), and an instance that fell back to the kept
/// card while the agent's card server failed (card health `stale`, read at the kept instant)
/// turns back to `ok` only once the kept instant moves past its own. With the instant never
/// updated for an unchanged card, such an instance would stay `stale` until its next cold start.
/// With it recorded at most this often, it turns `ok` within this interval (and the pick-up's 30
/// s) of a read by any process, and one card costs at most one write per interval, however many
/// instances read it.
pub const CARD_READ_RECORDED_EVERY: jiff::SignedDuration = jiff::SignedDuration::from_secs(300);

/// Whether a card equal to the one kept at `kept_at`, read again at `read_at`, has its read
/// instant recorded ([`Cards::put_agent_card`]): when the kept instant is at least
/// [`CARD_READ_RECORDED_EVERY`] before `read_at`. Never when it is after `read_at` (a later read
/// by another process is already kept).
pub fn read_at_to_record(kept_at: Instant, read_at: Instant) -> bool {
    kept_at <= read_at
        && kept_at
            .checked_add(CARD_READ_RECORDED_EVERY)
            .is_none_or(|due| due <= read_at)
}

/// Agent cards and the lifecycle descriptors the registration probe found, kept per agent.
///
/// A store keeps both kinds the same way ([`Cards::keep`], [`Cards::kept`]:
/// a JSON document and an instant under a [`CardKey`]); the named methods are those two.
#[async_trait]
pub trait Cards: Send + Sync {
    /// Keeps `doc` as the document `key`, read (or probed) at `at`, replacing the one kept
    /// before under that key: one write.
    ///
    /// # Errors
    /// The backend's error when it cannot write.
    async fn keep(&self, key: CardKey<'_>, doc: &Value, at: Instant) -> Result<(), StoreError>;

    /// The document kept under `key` and its instant, if any: one keyed read.
    ///
    /// # Errors
    /// The backend's error, or [`StoreError::Corrupt`] when the kept document is not JSON.
    async fn kept(&self, key: CardKey<'_>) -> Result<Option<(Value, Instant)>, StoreError>;

    /// Keeps the last agent card read for `agent` (the JSON as fetched), replacing the one
    /// kept before (serve.md "Agents are independent": used while a fetch fails, so a restart
    /// during a partner's outage changes nothing for it).
    ///
    /// A card equal to the one kept (the same JSON value, members in any order) is not written
    /// again while the kept read instant is less than [`CARD_READ_RECORDED_EVERY`] before
    /// `read_at`, nor when it is after `read_at`: the kept instant stays. Once it is that old,
    /// `read_at` is recorded. Every function instance keeps each card it reads at its cold start,
    /// so without this rule each cold start wrote every card (docs/dynamodb.md "Cards and
    /// lifecycle descriptors across functions"). The default reads the kept card ([`Cards::kept`])
    /// and compares; a store may compare more cheaply (DynamoDB: a digest kept beside the card).
    ///
    /// # Errors
    /// The backend's error when it cannot read or write.
    async fn put_agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        card: &Value,
        read_at: Instant,
    ) -> Result<(), StoreError> {
        let key = CardKey {
            tenant,
            agent,
            kind: CardKind::AgentCard,
        };
        if let Some((kept, kept_at)) = self.kept(key).await? {
            if kept == *card && !read_at_to_record(kept_at, read_at) {
                return Ok(());
            }
        }
        self.keep(key, card, read_at).await
    }

    /// The last agent card kept for `agent` and when it was read, if any.
    ///
    /// # Errors
    /// The backend's error, or [`StoreError::Corrupt`] when the kept card is not JSON.
    async fn agent_card(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Option<(Value, Instant)>, StoreError> {
        let kind = CardKind::AgentCard;
        self.kept(CardKey {
            tenant,
            agent,
            kind,
        })
        .await
    }

    /// Keeps the lifecycle probe's descriptor for `agent` at `protocol_version` (the JSON
    /// `a2a-watcher probe` prints), replacing the one kept before for that pair
    /// (docs/specs/agent-card-vs-lifecycle-conformance.md: the probe outcome is the
    /// authoritative lifecycle descriptor, one per (callee, protocolVersion)).
    ///
    /// # Errors
    /// The backend's error when it cannot write.
    async fn put_lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
        descriptor: &Value,
        probed_at: Instant,
    ) -> Result<(), StoreError> {
        let kind = CardKind::Lifecycle(protocol_version);
        self.keep(
            CardKey {
                tenant,
                agent,
                kind,
            },
            descriptor,
            probed_at,
        )
        .await
    }

    /// The descriptor kept for `agent` at `protocol_version` and when the probe ran, if any.
    ///
    /// # Errors
    /// The backend's error, or [`StoreError::Corrupt`] when the kept descriptor is not JSON.
    async fn lifecycle_descriptor(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        protocol_version: &str,
    ) -> Result<Option<(Value, Instant)>, StoreError> {
        let kind = CardKind::Lifecycle(protocol_version);
        self.kept(CardKey {
            tenant,
            agent,
            kind,
        })
        .await
    }
}
