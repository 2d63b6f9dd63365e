//! The per-agent live count (expectations-v1 §13.2), kept in the commit.

use super::*;

/// The live rows of `booking` of `t` its counter's shards hold together, if any shard exists.
async fn live_counter(store: &DynamoStore, t: &Tenant) -> Option<i64> {
    raw_items(store, "live-count")
        .await
        .into_iter()
        .filter(|item| matches!(item.get("tenant"), Some(AttributeValue::S(v)) if v == t.as_str()))
        .map(|item| match item.get("value") {
            Some(AttributeValue::N(v)) => v.parse::<i64>().expect("counter value"),
            other => panic!("counter value is not a number: {other:?}"),
        })
        .reduce(|a, b| a + b)
}

async fn live_of_booking(store: &DynamoStore, t: &Tenant, now: Instant) -> u64 {
    let mut scope = Scope::default();
    scope.agents.insert(agent("booking"));
    let slice = store.load(t, &scope, now).await.expect("load");
    slice.agent_live[&agent("booking")]
}

#[tokio::test]
async fn the_live_count_is_a_counter_kept_in_the_commit_less_the_expired_range() {
    // Issue 10, item 1: the per-agent live count comes from a counter item written in the same
    // transaction as the rows, not from counting the agent's rows.
    let store = store().await;
    let t = tenant("tenant-live");
    store
        .commit(
            &t,
            subjects_only(vec![
                subject_with_record(&t, "L-1", 1),
                subject_with_record(&t, "L-2", 2),
                subject_with_record(&t, "L-3", 3),
            ]),
        )
        .await
        .expect("three open records");
    assert_eq!(live_counter(&store, &t).await, Some(3));
    assert_eq!(live_of_booking(&store, &t, t0()).await, 3);
    // Re-writing a subject without changing its live rows leaves the counter as it is.
    let mut s1 = load_one(&store, &t, &shipment("L-1")).await;
    s1.facts.push(fact("again", &shipment("L-1"), at(1)));
    store
        .commit(&t, subjects_only(vec![s1]))
        .await
        .expect("a fact");
    assert_eq!(live_counter(&store, &t).await, Some(3));
    // Closing one takes its row out of the counter in the same commit.
    let mut s2 = load_one(&store, &t, &shipment("L-2")).await;
    s2.records[0].status = Status::Withdrawn;
    s2.records[0].withdrawal = Some(Withdrawal {
        withdrawn_at: at(2),
        reason: "test".into(),
    });
    store
        .commit(&t, subjects_only(vec![s2]))
        .await
        .expect("withdraw");
    assert_eq!(live_counter(&store, &t).await, Some(2));
    assert_eq!(live_of_booking(&store, &t, at(2)).await, 2);
    // Past every record's horizon (180) and nothing closed them: the expired range of the index
    // is taken off the counter.
    assert_eq!(live_of_booking(&store, &t, at(500)).await, 0);
    // Another tenant's agent of the same name counts nothing of these.
    assert_eq!(
        live_of_booking(&store, &tenant("tenant-other"), t0()).await,
        0
    );
}
