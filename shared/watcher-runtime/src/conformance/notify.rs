//! The conformance check of notification channels' progress (issue 25).

use super::*;
use crate::store::ChannelState;

/// A channel's state is kept per (tenant, channel), replaced by the next write, and read back
/// as it was; another tenant's channel of the same id, and another channel, have their own.
pub async fn channel_states_are_kept<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    assert_eq!(
        store.channel_state(&a, "ops").await.expect("channel_state"),
        None,
        "nothing kept before the channel runs"
    );
    let first = ChannelState::new(at(1));
    store
        .put_channel_state(&a, "ops", &first)
        .await
        .expect("keep a channel state");
    assert_eq!(
        store.channel_state(&a, "ops").await.expect("channel_state"),
        Some(first.clone())
    );
    let second = ChannelState {
        after: Some(u64::MAX - 1),
        delivered: 7,
        last_delivered_at: Some(at(5)),
        last_event_id: Some("msg_0123456789abcdef".into()),
        failures: 2,
        failing_since: Some(at(6)),
        last_error: Some("HTTP 503 from the receiver".into()),
        ..first.clone()
    };
    store
        .put_channel_state(&a, "ops", &second)
        .await
        .expect("replace it");
    assert_eq!(
        store.channel_state(&a, "ops").await.expect("channel_state"),
        Some(second),
        "the last write replaces the one before, every field kept (a position near u64::MAX too)"
    );
    assert_eq!(
        store.channel_state(&b, "ops").await.expect("channel_state"),
        None,
        "another tenant's channel of the same id has its own"
    );
    assert_eq!(
        store
            .channel_state(&a, "slack")
            .await
            .expect("channel_state"),
        None
    );
}
