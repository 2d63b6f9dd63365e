//! A lapse task found by its agent's Task, an origin that expires, inputs numbered in time order with no write.

use super::*;

#[tokio::test]
async fn a_lapse_task_is_found_by_the_task_its_agent_answered_with() {
    let store = store().await;
    let t = tenant("tenant-task");
    let first = outbox_entry(&t, "lapse:exp-1:overdue:a", DeliveryState::Queued);
    let second = outbox_entry(&t, "lapse:exp-2:overdue:b", DeliveryState::Queued);
    store
        .commit(&t, Commit::of_outbox(vec![first.clone(), second.clone()]))
        .await
        .expect("two lapse tasks");
    assert_eq!(
        store
            .outbox_by_task_id(&t, &agent("booking"), "task-9")
            .await
            .expect("by task"),
        None
    );
    let mut answered = first.clone();
    answered.delivery = DeliveryState::Sent;
    answered.task_id = Some("task-9".into());
    answered.task_state = Some("TASK_STATE_WORKING".into());
    store.outbox_update(&answered).await.expect("sent");
    assert_eq!(
        store
            .outbox_by_task_id(&t, &agent("booking"), "task-9")
            .await
            .expect("by task"),
        Some(answered.clone())
    );
    // Ids compared as given: another task, another agent, another tenant find nothing.
    for (tn, ag, task) in [
        ("tenant-task", "booking", "TASK-9"),
        ("tenant-task", "booking", "task-8"),
        ("tenant-task", "carrier", "task-9"),
        ("tenant-other", "booking", "task-9"),
    ] {
        assert_eq!(
            store
                .outbox_by_task_id(&tenant(tn), &agent(ag), task)
                .await
                .expect("by task"),
            None,
            "{tn} {ag} {task}"
        );
    }
    // The index holds only answered entries: one row here, not the outbox.
    let indexed = store
        .client()
        .scan()
        .table_name(store.table())
        .index_name("outbox-task")
        .send()
        .await
        .expect("scan the index");
    assert_eq!(indexed.count, 1);
}

/// A followed origin task's item expires `retention_days` after following began (an agent no
/// longer configured never has its origins polled, so nothing else would delete them); a
/// reschedule keeps that expiry.
#[tokio::test]
async fn a_followed_origin_expires_after_the_retention() {
    let store = store().await;
    let since = Instant::parse("2026-09-10T12:00:00Z").unwrap();
    let origin = watcher_runtime::origins::FollowedOrigin {
        tenant: tenant("tenant-a"),
        agent: watcher_core::ids::AgentId::parse("booking").unwrap(),
        task_id: "task-1".into(),
        since,
        next_at: since,
    };
    assert!(store.origin_follow(&origin).await.unwrap());
    store
        .origin_reschedule(
            &origin.key(),
            Instant::parse("2026-09-10T13:00:00Z").unwrap(),
        )
        .await
        .unwrap();
    let items = raw_items(&store, "origin").await;
    assert_eq!(items.len(), 1);
    assert_eq!(expires_at(&items[0]), Some(retained_until(since)));
}

/// Two function instances on one table number inputs with no shared item: their numbers never
/// collide, each instance's increase, and numbers answered a moment apart are ordered in time
/// (docs/interpretation.md "Raising order without a counter"). No item is written.
#[tokio::test]
async fn two_instances_number_inputs_with_no_write_and_in_time_order() {
    use watcher_runtime::clock::FakeClock;
    use watcher_runtime::sequence::FIRST_TIME_ORDERED;

    let store = store().await.counting_work();
    let clock = Arc::new(FakeClock::new(
        Instant::parse("2026-09-10T12:00:00Z").unwrap(),
    ));
    let (a, b) = two_instances(&store, &clock);
    let mut all = BTreeSet::new();
    let (mut last_a, mut last_b) = (0, 0);
    for _ in 0..50 {
        let (x, y) = (
            a.next_sequence().await.unwrap(),
            b.next_sequence().await.unwrap(),
        );
        assert!(x > last_a && y > last_b, "each instance's numbers increase");
        assert!(x >= FIRST_TIME_ORDERED && y >= FIRST_TIME_ORDERED);
        assert!(all.insert(x) && all.insert(y), "no number twice");
        (last_a, last_b) = (x, y);
    }
    // A millisecond later (past the 50 microseconds each borrowed), either instance answers
    // above everything answered before.
    clock.set(Instant::parse("2026-09-10T12:00:00.001Z").unwrap());
    let later = b.next_sequence().await.unwrap();
    assert!(all.iter().all(|n| *n < later));
    assert_eq!(
        store.work_done(),
        Some(0),
        "numbering reads and writes nothing"
    );
    assert!(raw_items(&store, "counter").await.is_empty());
}

/// A send by the read it was handed (`Outbox::outbox_claim_read`, `Outbox::outbox_update_read`)
/// writes without reading: the claim is one conditional `UpdateItem`, the outcome another,
/// where the plain calls read the item before each. A read gone stale (another writer changed
/// the entry) costs the failed write and a read, and the claim still judges the stored entry.
#[tokio::test]
async fn a_send_by_its_read_writes_without_reading_again() {
    use watcher_runtime::lease::{Claim, Lease};
    let store = store().await.counting_work();
    let t = tenant("tenant-read");
    let booking = agent("booking");
    let entries = ["lapse:a", "lapse:b"]
        .map(|id| outbox_entry(&t, id, DeliveryState::Queued))
        .to_vec();
    store
        .commit(&t, Commit::of_outbox(entries))
        .await
        .expect("two lapse tasks");
    let lease = |owner: &str| Lease {
        owner: owner.into(),
        incarnation: owner.into(),
        sender: None,
        until: instant("2026-09-10T12:05:00Z"),
    };
    let now = instant("2026-09-10T12:00:00Z");
    let work = || store.work_done().expect("counted");

    let read = store
        .outbox_get(&t, &booking, "lapse:a")
        .await
        .expect("get")
        .expect("stored");
    let before = work();
    let Claim::Claimed { entry: marked, .. } = store
        .outbox_claim_read(&read, &lease("s#0"), now)
        .await
        .expect("claim")
    else {
        panic!("a queued entry is claimed");
    };
    assert_eq!(work() - before, 1, "the claim is one write, no read");
    let mut sent = marked.clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    sent.attempt_started_at = None;
    let before = work();
    store
        .outbox_update_read(&marked, &sent)
        .await
        .expect("sent");
    assert_eq!(work() - before, 1, "the outcome is one write, no read");
    let stored = store
        .outbox_get(&t, &booking, "lapse:a")
        .await
        .expect("get")
        .expect("stored");
    assert_eq!(stored.delivery, DeliveryState::Sent);
    assert_eq!(stored.lease, None);

    // Stale: another sender claimed `lapse:b` after it was read.
    let stale = store
        .outbox_get(&t, &booking, "lapse:b")
        .await
        .expect("get")
        .expect("stored");
    assert!(matches!(
        store
            .outbox_claim(&t, &booking, "lapse:b", &lease("other#0"), now)
            .await
            .expect("claim"),
        Claim::Claimed { .. }
    ));
    let before = work();
    assert_eq!(
        store
            .outbox_claim_read(&stale, &lease("s#0"), now)
            .await
            .expect("claim"),
        Claim::Taken {
            delivery: DeliveryState::Queued,
            leased_until: Some(instant("2026-09-10T12:05:00Z"))
        },
        "the stored entry, not the stale read, is judged"
    );
    assert_eq!(work() - before, 2, "the failed write and a read");
}
