//! The Learnables authority as the watcher records it (expectations-v1 §16): its agent id, and
//! the outbox entry of a lapse of its, which no agent receives. Below both the watcher, which
//! writes such entries, and [`crate::lesson_review`], which raises the authority's expectations.

use watcher_core::lapse::{Delivery, Lapse};
use watcher_core::time::Instant;

use crate::store::{DeliveryState, OutboxEntry};

/// The raiser of every `lesson.review` expectation no owning agent takes, and the source of the
/// facts that satisfy them: the Learnables authority. No configured agent or source may take
/// this id.
pub const AUTHORITY_AGENT: &str = "learnables-authority";

/// The outbox entry of a lapse of the authority's: recorded, never sent
/// ([`DeliveryState::Unaddressed`]); its request is the lapse task an agent would have been
/// sent, so `GET /v1/lapses` and the notification bodies read it as any other.
pub(crate) fn unaddressed(lapse: &Lapse, now: Instant) -> OutboxEntry {
    OutboxEntry {
        delivery: DeliveryState::Unaddressed,
        next_attempt_at: now,
        ..OutboxEntry::queued(
            lapse.tenant.clone(),
            lapse.agent.clone(),
            lapse.message_id.clone(),
            lapse.block.expectation_id.clone(),
            lapse.block.lapse,
            lapse.block.lapsed_at,
            lapse.request(&Delivery::default()),
        )
    }
}
