//! Items past DynamoDB's limits are refused and left as stored; identifiers too long for a key round-trip.

use super::*;
use watcher_runtime::store::LapseLog;

#[tokio::test]
async fn a_subject_past_the_item_limit_is_refused_and_left_as_stored() {
    let store = store().await;
    let t = tenant("tenant-a");
    let s = shipment("PA-BIG");
    store
        .commit(
            &t,
            subjects_only(vec![subject_with_record(&t, "PA-BIG", 1)]),
        )
        .await
        .expect("create the subject");
    let mut big = load_one(&store, &t, &s).await;
    let long_key = "k".repeat(400);
    for i in 0..800 {
        big.facts.push(fact(&format!("{long_key}-{i}"), &s, at(1)));
    }
    let err = store
        .commit(&t, subjects_only(vec![big]))
        .await
        .expect_err("a state over 400 KB");
    match dynamo_error(&err) {
        DynamoStoreError::ItemTooLarge { what, bytes } => {
            assert!(what.contains("PA-BIG"), "{what}");
            assert!(*bytes > MAX_ITEM_BYTES);
        }
        other => panic!("expected ItemTooLarge, got {other:?}"),
    }
    assert!(
        err.to_string().contains("store backend failed"),
        "a backend error: {err}"
    );
    let stored = load_one(&store, &t, &s).await;
    assert_eq!(stored.version, 1, "left as stored");
    assert_eq!(stored.facts.len(), 1);
}

#[tokio::test]
async fn identifiers_too_long_for_a_key_round_trip() {
    let store = store().await;
    // 512-byte identifiers full of `#` and `%`: the natural keys pass DynamoDB's limits, so
    // they are hashed.
    let long = |c: &str| c.repeat(512);
    let t = Tenant::parse(long("#")).expect("a valid tenant");
    let id = long("%");
    let s = Subject::parse(&long("t"), &id).expect("a valid subject");
    let mut state = SubjectState::new(s.clone());
    state.facts.push(fact(&long("f"), &s, t0()));
    store
        .commit(&t, subjects_only(vec![state.clone()]))
        .await
        .expect("commit under long identifiers");
    let mut scope = Scope::default();
    scope.subjects.insert(s.clone());
    let slice = store.load(&t, &scope, t0()).await.expect("load");
    assert_eq!(
        slice.subjects[&s],
        SubjectState {
            version: 1,
            ..state
        }
    );
    let other = Tenant::parse(long("%")).expect("a valid tenant");
    assert!(
        store.subject(&other, &s).await.expect("subject").is_none(),
        "another tenant's hashed key differs"
    );
    let entry = outbox_entry(&t, &format!("lapse:{}", long("m")), DeliveryState::Queued);
    // The same messageId for an agent with a long id: the sort key (agent, messageId) is hashed
    // too, and stays apart from the first agent's.
    let mut long_agent = entry.clone();
    long_agent.agent = agent(&long("#"));
    store
        .commit(
            &t,
            Commit::of_outbox(vec![entry.clone(), long_agent.clone()]),
        )
        .await
        .expect("outbox entries with a long messageId");
    for e in [&entry, &long_agent] {
        assert_eq!(
            store
                .outbox_get(&t, &e.agent, &e.message_id)
                .await
                .expect("outbox_get"),
            Some(e.clone())
        );
    }
    assert_eq!(
        store.lapses(&t).await.expect("lapses"),
        vec![entry, long_agent]
    );
}
