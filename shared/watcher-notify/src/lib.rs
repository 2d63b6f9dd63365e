//! Telling a person (expectations-v1 §13.1: "raised a lapse task" is an event worth surfacing to
//! a person, even when the agent concluded nothing was needed; issue 25).
//!
//! A notification channel (`[[notify]]` in the configuration, [`channel::ChannelConfig`]) reads
//! the tenant's lapse tasks in order with its own cursor ([`watcher_runtime::store::ChannelState`],
//! one small item per channel) and posts each lapse, or a digest of a window's lapses, to its
//! receiver:
//!
//! * [`channel`]: the configuration and its checks (url, format, filters, digest window);
//! * [`sign`]: Standard Webhooks signatures (`webhook-id`, `webhook-timestamp`,
//!   `webhook-signature`, HMAC-SHA256);
//! * [`event`]: a lapse, its end and an agent's event, each with its deterministic id;
//! * [`body`]: the body per format (Standard Webhooks JSON, Slack, Microsoft Teams) for one
//!   event or a digest;
//! * [`incident`]: PagerDuty, Opsgenie and Alertmanager payloads (an incident per lapse, keyed
//!   by its id), and the resolve payloads;
//! * [`redact`]: what a channel leaves out or hashes (`redact`, `redact_key`);
//! * [`escape`]: agent text made inert for the format it lands in (no markup, no link);
//! * [`transport`]: the HTTP post, behind a trait;
//! * [`notifier`]: the loop: read after the cursor, filter, post, move the cursor; then the
//!   ends of the lapses told ([`notifier::resolutions`]).
//!
//! Nothing here writes on the lapse path: a lapse task is committed as before, and the channel
//! finds it by reading the lapse pages. A notification is acknowledged (the cursor moves) only
//! after a 2xx; a crash between the post and the cursor's write posts it again with the same
//! `webhook-id`, which Standard Webhooks receivers deduplicate.

pub mod body;
pub mod channel;
pub mod escape;
pub mod event;
pub mod incident;
pub mod notifier;
pub mod redact;
pub mod sign;
#[cfg(feature = "test-utils")]
pub mod testing;
pub mod transport;

pub use channel::{Channel, ChannelConfig, Format};
pub use notifier::{Notifier, NotifyRecorder};
