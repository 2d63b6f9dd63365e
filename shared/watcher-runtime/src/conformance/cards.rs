//! The conformance checks of agent cards and lifecycle descriptors kept.

use super::*;

/// The last agent card read is kept per (tenant, agent), replaced by the next, and read back as
/// it was (serve.md "Agents are independent").
pub async fn agent_cards_are_kept<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let booking = agent("booking");
    assert_eq!(
        store.agent_card(&a, &booking).await.expect("agent_card"),
        None,
        "nothing kept before a card is read"
    );
    let first = serde_json::json!({ "name": "Booking agent", "version": "1.0.0", "n": 1.5 });
    store
        .put_agent_card(&a, &booking, &first, at(1))
        .await
        .expect("keep a card");
    assert_eq!(
        store.agent_card(&a, &booking).await.expect("agent_card"),
        Some((first.clone(), at(1)))
    );
    let second = serde_json::json!({ "name": "Booking agent", "version": "1.1.0" });
    store
        .put_agent_card(&a, &booking, &second, at(2))
        .await
        .expect("replace it");
    assert_eq!(
        store.agent_card(&a, &booking).await.expect("agent_card"),
        Some((second, at(2))),
        "the last card read replaces the one before"
    );
    assert_eq!(
        store.agent_card(&b, &booking).await.expect("agent_card"),
        None,
        "another tenant's agent of the same id has its own"
    );
    assert_eq!(
        store
            .agent_card(&a, &agent("other"))
            .await
            .expect("agent_card"),
        None
    );
}

/// A card equal to the one kept is not written again while the kept read instant is less than
/// `CARD_READ_RECORDED_EVERY` (5 minutes) old: reading it again keeps the earlier instant; once
/// the kept instant is that old the new one is recorded; a later instant already kept is never
/// moved back; a changed card is kept at once (`Cards::put_agent_card`).
pub async fn an_unchanged_card_is_written_at_most_once_per_interval<S: Store + 'static>(
    store: Arc<S>,
) {
    let a = tenant("tenant-a");
    let booking = agent("booking");
    let secs = |n: i64| {
        t0().checked_add(jiff::SignedDuration::from_secs(n))
            .expect("a test instant")
    };
    let card = serde_json::json!({ "name": "Booking agent", "version": "1.0.0",
                                   "skills": [{ "id": "book" }] });
    // The same card as a fetch may give it: members in another order.
    let same: serde_json::Value = serde_json::from_str(
        r#"{ "skills": [{ "id": "book" }], "version": "1.0.0", "name": "Booking agent" }"#,
    )
    .expect("JSON");
    let keep = |card: serde_json::Value, read_at: Instant| {
        let (store, a, booking) = (store.clone(), a.clone(), booking.clone());
        async move {
            store
                .put_agent_card(&a, &booking, &card, read_at)
                .await
                .expect("keep the card");
            store
                .agent_card(&a, &booking)
                .await
                .expect("agent_card")
                .expect("a card kept")
        }
    };
    assert_eq!(keep(card.clone(), secs(0)).await, (card.clone(), secs(0)));
    for n in [1, 60, 299] {
        assert_eq!(
            keep(same.clone(), secs(n)).await,
            (card.clone(), secs(0)),
            "read again {n} s later: not written again"
        );
    }
    assert_eq!(
        keep(same.clone(), secs(300)).await,
        (card.clone(), secs(300)),
        "5 minutes after the kept read: the read instant is recorded"
    );
    assert_eq!(
        keep(same.clone(), secs(10)).await,
        (card.clone(), secs(300)),
        "an earlier read does not move the kept instant back"
    );
    let changed = serde_json::json!({ "name": "Booking agent", "version": "1.1.0" });
    assert_eq!(
        keep(changed.clone(), secs(301)).await,
        (changed, secs(301)),
        "a changed card is kept at once"
    );
}

/// The lifecycle probe's descriptor is kept per (tenant, agent, protocol version), replaced by
/// the next probe of the same version, and read back as it was
/// (docs/specs/agent-card-vs-lifecycle-conformance.md: one descriptor per (callee,
/// protocolVersion)).
pub async fn lifecycle_descriptors_are_kept<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let booking = agent("booking");
    let get = |t: Tenant, ag: AgentId, v: &'static str| {
        let store = store.clone();
        async move {
            store
                .lifecycle_descriptor(&t, &ag, v)
                .await
                .expect("lifecycle_descriptor")
        }
    };
    // Keeps `descriptor` for booking of tenant-a at `version`, probed at `when`.
    let put = |version: &'static str,
               descriptor: &serde_json::Value,
               when: Instant,
               what: &'static str| {
        let (store, a, booking, descriptor) = (
            store.clone(),
            a.clone(),
            booking.clone(),
            descriptor.clone(),
        );
        async move {
            store
                .put_lifecycle_descriptor(&a, &booking, version, &descriptor, when)
                .await
                .expect(what);
        }
    };
    assert_eq!(get(a.clone(), booking.clone(), "1.0").await, None);
    let first = serde_json::json!({ "protocolVersion": "1.0", "lifecycleTrusted": false,
                                    "demotions": ["a status without timestamp"] });
    put("1.0", &first, at(1), "keep a descriptor").await;
    let old = serde_json::json!({ "protocolVersion": "0.3", "lifecycleTrusted": true });
    put("0.3", &old, at(2), "keep another version's descriptor").await;
    assert_eq!(
        get(a.clone(), booking.clone(), "1.0").await,
        Some((first, at(1))),
        "each protocol version has its own"
    );
    let second = serde_json::json!({ "protocolVersion": "1.0", "lifecycleTrusted": true });
    put("1.0", &second, at(3), "replace it").await;
    assert_eq!(
        get(a.clone(), booking.clone(), "1.0").await,
        Some((second, at(3))),
        "a fresh probe replaces the one before"
    );
    assert_eq!(
        get(a.clone(), booking.clone(), "0.3").await,
        Some((old.clone(), at(2)))
    );
    // A descriptor kept before the probe exercised a cancel (no `cancel` member) is read back
    // as kept and stays readable, untrusted until probed again.
    let (kept, probed_at) = get(a.clone(), booking.clone(), "0.3").await.expect("kept");
    let lifecycle = crate::directory::Lifecycle::from_descriptor(kept, probed_at);
    assert!(!lifecycle.lifecycle_trusted);
    assert_eq!(lifecycle.protocol_version, "0.3");
    assert_eq!(
        lifecycle.demotions,
        [crate::directory::Lifecycle::NO_CANCEL_LEG]
    );
    assert_eq!(lifecycle.descriptor, old);
    assert_eq!(get(b, booking, "1.0").await, None, "tenants are apart");
    assert_eq!(get(a, agent("other"), "1.0").await, None);
}
