//! A lapse's resolution on DynamoDB (`Commit::resolutions`, expectations-v1 §13.1): written in
//! the step's own transaction, counted against its 100 items, and indexed in `outbox-incident`.

use super::*;
use watcher_runtime::resolution::{Resolution, ResolutionReason, Resolved};

fn resolved_by_fact(message_id: &str, minute: u32) -> Resolved {
    Resolved {
        agent: agent("booking"),
        message_id: message_id.into(),
        resolution: Resolution {
            at: at(minute),
            reason: ResolutionReason::Fact,
        },
    }
}

async fn resolution_of(store: &DynamoStore, t: &Tenant, message_id: &str) -> Option<Resolution> {
    store
        .outbox_get(t, &agent("booking"), message_id)
        .await
        .expect("outbox_get")
        .expect("stored")
        .resolved
}

fn string(item: &Item, name: &str) -> Option<String> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Some(v.clone()),
        _ => None,
    }
}

/// The lapse task's stored item, found by its `entry`.
async fn raw_outbox(store: &DynamoStore, message_id: &str) -> Item {
    raw_items(store, "outbox")
        .await
        .into_iter()
        .find(|item| {
            string(item, "entry").is_some_and(|e| {
                serde_json::from_str::<OutboxEntry>(&e)
                    .expect("entry JSON")
                    .message_id
                    == message_id
            })
        })
        .unwrap_or_else(|| panic!("no stored item for {message_id}"))
}

/// A commit's resolution lands with its step or not at all: a step whose subject another
/// writer changed after its load fails in the transaction itself (the load left this process
/// the version's `indexed`, so nothing is read before it), and resolves nothing; the same
/// step, loaded again, lands both.
#[tokio::test]
async fn a_resolution_lands_with_its_step_or_not_at_all() {
    let first = store().await;
    let second = second_handle(&first).await;
    let t = tenant("tenant-r");
    let s = shipment("PA-1");
    first
        .commit(
            &t,
            Commit::of_subjects(vec![subject_with_record(&t, "PA-1", 1)]),
        )
        .await
        .expect("a subject");
    first
        .commit(
            &t,
            Commit::of_outbox(vec![outbox_entry(&t, "lapse:r", DeliveryState::Queued)]),
        )
        .await
        .expect("a lapse task");
    let scope = Scope {
        subjects: BTreeSet::from([s.clone()]),
        ..Scope::default()
    };
    let load = |store: DynamoStore| {
        let (t, scope, s) = (t.clone(), scope.clone(), s.clone());
        async move {
            let slice = store.load(&t, &scope, at(70)).await.expect("load");
            slice.subjects[&s].clone()
        }
    };
    let mut stale = load(first.clone()).await;
    let mut other = load(second.clone()).await;
    assert_eq!((stale.version, other.version), (1, 1));
    other.facts.push(fact("other", &s, at(69)));
    second
        .commit(&t, Commit::of_subjects(vec![other]))
        .await
        .expect("another writer");

    stale.facts.push(fact("late", &s, at(70)));
    let commit = Commit {
        subjects: vec![stale],
        resolutions: vec![resolved_by_fact("lapse:r", 70)],
        ..Commit::default()
    };
    match first.commit(&t, commit).await {
        Err(StoreError::Conflict(what)) => assert!(what.contains("PA-1"), "{what}"),
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(
        resolution_of(&first, &t, "lapse:r").await,
        None,
        "a failed transaction writes no resolution"
    );
    let item = raw_outbox(&first, "lapse:r").await;
    assert_eq!(
        string(&item, "incidentAgent").as_deref(),
        Some("OPEN#tenant-r#booking")
    );

    // Loaded again: the step and its resolution land together.
    let mut current = load(first.clone()).await;
    assert_eq!(
        current.version, 2,
        "nothing of the failed commit was written"
    );
    current.facts.push(fact("late", &s, at(70)));
    let commit = Commit {
        subjects: vec![current],
        resolutions: vec![resolved_by_fact("lapse:r", 70)],
        ..Commit::default()
    };
    first.commit(&t, commit).await.expect("the retry");
    assert_eq!(load_one(&first, &t, &s).await.version, 3);
    assert_eq!(
        resolution_of(&first, &t, "lapse:r").await.map(|r| r.at),
        Some(at(70))
    );
    let item = raw_outbox(&first, "lapse:r").await;
    assert_eq!(
        string(&item, "incidentAgent").as_deref(),
        Some("RESOLVED#tenant-r#booking"),
        "a resolved lapse task moves to its agent's RESOLVED# partition"
    );
    assert_eq!(
        string(&item, "incidentAt"),
        Some(format!("{:022}", at(70).as_nanos() + 10i128.pow(21))),
        "at the instant key of its resolution"
    );
}

/// Changes, in every `TransactWriteItems` the client sends, the entry an `Update` expects
/// (`:old`): as if another writer (the submitter recording an attempt) changed the lapse task
/// between the commit's read of it and its transaction.
#[derive(Debug)]
struct EntryChangedMeanwhile;

impl aws_smithy_runtime_api::client::interceptors::Intercept for EntryChangedMeanwhile {
    fn name(&self) -> &'static str {
        "entry-changed-meanwhile"
    }

    fn modify_before_serialization(
        &self,
        context: &mut aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextMut<'_>,
        _: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        _: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsInput;
        if let Some(input) = context
            .input_mut()
            .downcast_mut::<TransactWriteItemsInput>()
        {
            for item in input.transact_items.iter_mut().flatten() {
                if let Some(values) = item
                    .update
                    .as_mut()
                    .and_then(|u| u.expression_attribute_values.as_mut())
                {
                    values.insert(":old".into(), AttributeValue::S("changed".into()));
                }
            }
        }
        Ok(())
    }
}

/// The other way round: a resolution whose lapse task changed since the commit read it fails
/// the transaction, and the step with it (a conflict: the step is tried again); nothing of it
/// is written.
#[tokio::test]
async fn a_lapse_task_changed_meanwhile_fails_the_step_with_its_resolution() {
    let plain = store().await;
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk_config().await)
        .interceptor(EntryChangedMeanwhile)
        .build();
    let meddled = DynamoStore::new(
        aws_sdk_dynamodb::Client::from_conf(config),
        plain.table(),
        RETENTION_DAYS,
    );
    let t = tenant("tenant-m");
    let s = shipment("PA-1");
    plain
        .commit(
            &t,
            Commit::of_subjects(vec![subject_with_record(&t, "PA-1", 1)]),
        )
        .await
        .expect("a subject");
    plain
        .commit(
            &t,
            Commit::of_outbox(vec![outbox_entry(&t, "lapse:m", DeliveryState::Queued)]),
        )
        .await
        .expect("a lapse task");
    let mut state = load_one(&plain, &t, &s).await;
    state.facts.push(fact("late", &s, at(70)));
    let commit = Commit {
        subjects: vec![state],
        resolutions: vec![resolved_by_fact("lapse:m", 70)],
        ..Commit::default()
    };
    match meddled.commit(&t, commit.clone()).await {
        Err(StoreError::Conflict(what)) => assert!(what.contains("lapse:m"), "{what}"),
        other => panic!("expected a conflict naming the lapse task, got {other:?}"),
    }
    assert_eq!(
        load_one(&plain, &t, &s).await.version,
        1,
        "the step is not written without its resolution"
    );
    assert_eq!(resolution_of(&plain, &t, "lapse:m").await, None);
    plain.commit(&t, commit).await.expect("unmeddled, it lands");
    assert_eq!(load_one(&plain, &t, &s).await.version, 2);
    assert_eq!(
        resolution_of(&plain, &t, "lapse:m").await.map(|r| r.at),
        Some(at(70))
    );
}

/// Each stored lapse task a commit resolves is one more item of its transaction, counted
/// before anything is sent (101 refused, nothing written); a resolution of a lapse task not
/// stored, or of one the commit itself queues, costs no item.
#[tokio::test]
async fn resolutions_count_against_the_transaction_limit() {
    let store = store().await;
    let t = tenant("tenant-limit");
    let stored: Vec<OutboxEntry> = (0..3)
        .map(|i| outbox_entry(&t, &format!("lapse:stored-{i}"), DeliveryState::Queued))
        .collect();
    store
        .commit(&t, Commit::of_outbox(stored))
        .await
        .expect("three lapse tasks");
    let new = |n: usize| -> Vec<OutboxEntry> {
        (0..n)
            .map(|i| outbox_entry(&t, &format!("lapse:new-{i:03}"), DeliveryState::Queued))
            .collect()
    };

    // 98 puts and 3 updates: 101.
    let commit = Commit {
        outbox: new(98),
        resolutions: (0..3)
            .map(|i| resolved_by_fact(&format!("lapse:stored-{i}"), 70))
            .collect(),
        ..Commit::default()
    };
    let err = store
        .commit(&t, commit)
        .await
        .expect_err("101 items do not fit one transaction");
    match dynamo_error(&err) {
        DynamoStoreError::TransactionTooLarge { items, .. } => assert_eq!(*items, 101),
        other => panic!("expected TransactionTooLarge, got {other:?}"),
    }
    assert_eq!(resolution_of(&store, &t, "lapse:stored-0").await, None);
    assert!(
        store
            .outbox_get(&t, &agent("booking"), "lapse:new-000")
            .await
            .expect("outbox_get")
            .is_none(),
        "a refused commit writes nothing"
    );

    // 98 puts, 2 updates, and resolutions of what is not stored or is queued here: 100.
    let mut resolutions: Vec<Resolved> = (0..2)
        .map(|i| resolved_by_fact(&format!("lapse:stored-{i}"), 70))
        .collect();
    resolutions.push(resolved_by_fact("lapse:nowhere", 70));
    resolutions.push(resolved_by_fact("lapse:new-000", 71));
    let commit = Commit {
        outbox: new(98),
        resolutions,
        ..Commit::default()
    };
    store.commit(&t, commit).await.expect("100 items fit");
    assert_eq!(
        resolution_of(&store, &t, "lapse:stored-1")
            .await
            .map(|r| r.at),
        Some(at(70))
    );
    assert_eq!(
        resolution_of(&store, &t, "lapse:new-000")
            .await
            .map(|r| r.at),
        Some(at(71)),
        "queued and resolved by one commit: one put"
    );
    assert_eq!(resolution_of(&store, &t, "lapse:new-001").await, None);
    assert_eq!(resolution_of(&store, &t, "lapse:stored-2").await, None);
}

/// A lapse task written before `outbox-incident` (no `incidentAgent`, `incidentAt`) is in
/// neither incident lane until `backfill_lapse_indexes` writes its keys (or its next update).
#[tokio::test]
async fn lapse_tasks_from_before_the_incident_index_are_backfilled() {
    let store = store().await;
    let t = tenant("tenant-old");
    let booking = agent("booking");
    store
        .commit(
            &t,
            Commit::of_outbox(vec![
                outbox_entry(&t, "lapse:old", DeliveryState::Sent),
                outbox_entry(&t, "lapse:new", DeliveryState::Sent),
            ]),
        )
        .await
        .expect("lapse tasks");
    let old = raw_outbox(&store, "lapse:old").await;
    store
        .client()
        .update_item()
        .table_name(store.table())
        .key("pk", old["pk"].clone())
        .key("sk", old["sk"].clone())
        .update_expression("REMOVE incidentAgent, incidentAt")
        .send()
        .await
        .expect("make the item look written before the index");
    let open = |store: DynamoStore| {
        let (t, booking) = (t.clone(), booking.clone());
        async move {
            store
                .outbox_open(&t, &booking, None, 10)
                .await
                .expect("outbox_open")
                .into_iter()
                .map(|e| e.message_id)
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(open(store.clone()).await, ["lapse:new"]);
    assert_eq!(store.backfill_lapse_indexes().await.expect("backfill"), 1);
    assert_eq!(open(store.clone()).await, ["lapse:old", "lapse:new"]);
    assert_eq!(
        store.backfill_lapse_indexes().await.expect("again"),
        0,
        "nothing left to backfill"
    );
}
