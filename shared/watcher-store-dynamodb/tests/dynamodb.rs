//! What the conformance suite does not check, on a local moto server (see `tests/common`):
//! conflicts between separate clients, commits of many subjects against the 100-write
//! transaction limit, the TTL attribute, the item size limit, and identifiers too long for a key.

use crate::common;

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use watcher_runtime::store::{
    Origins as _, Outbox as _, Records as _, TimerIndex as _, Upkeep as _,
};

use aws_sdk_dynamodb::types::{AttributeValue, TimeToLiveStatus};
use common::*;
use serde_json::json;
use watcher_core::engine::Rejection;
use watcher_core::ids::{FactKey, Source, Subject, TaskId, TaskRef, Tenant};
use watcher_core::record::{LapseEntry, LapseKind, Satisfaction, Status, Withdrawal};
use watcher_core::slice::{Scope, StatusSeen, SubjectState, TaskRecord};
use watcher_core::time::Instant;
use watcher_runtime::store::{Commit, DeliveryState, LapseQuery, OutboxEntry, StoreError};
use watcher_store_dynamodb::{
    DynamoStore, DynamoStoreError, MAX_ITEM_BYTES, MAX_TRANSACTION_ITEMS,
};

type Item = HashMap<String, AttributeValue>;

/// Every item of the store's table whose `kind` is `kind` (a scan: the tables here are small).
async fn raw_items(store: &DynamoStore, kind: &str) -> Vec<Item> {
    let out = store
        .client()
        .scan()
        .table_name(store.table())
        .filter_expression("#k = :k")
        .expression_attribute_names("#k", "kind")
        .expression_attribute_values(":k", AttributeValue::S(kind.into()))
        .consistent_read(true)
        .send()
        .await
        .expect("scan the test table");
    assert!(out.last_evaluated_key.is_none(), "test tables fit one page");
    out.items.unwrap_or_default()
}

/// The stored item of `subject`, found by its `state`.
async fn raw_subject(store: &DynamoStore, subject: &Subject) -> Item {
    raw_items(store, "subject")
        .await
        .into_iter()
        .find(|item| match item.get("state") {
            Some(AttributeValue::S(state)) => {
                serde_json::from_str::<SubjectState>(state)
                    .expect("state JSON")
                    .subject
                    == *subject
            }
            _ => false,
        })
        .unwrap_or_else(|| panic!("no stored item for {subject}"))
}

fn expires_at(item: &Item) -> Option<i64> {
    match item.get("expiresAt") {
        Some(AttributeValue::N(v)) => Some(v.parse().expect("expiresAt is an integer")),
        None => None,
        other => panic!("expiresAt is not a number: {other:?}"),
    }
}

/// Epoch seconds of `t` plus the tests' retention.
fn retained_until(t: Instant) -> i64 {
    t.as_second() + i64::from(RETENTION_DAYS) * 86_400
}

fn subjects_only(states: Vec<SubjectState>) -> Commit {
    Commit {
        subjects: states,
        ..Commit::default()
    }
}

async fn load_one(store: &DynamoStore, t: &Tenant, s: &Subject) -> SubjectState {
    store
        .subject(t, s)
        .await
        .expect("read the subject")
        .unwrap_or_else(|| SubjectState::new(s.clone()))
}

/// The store's own error behind a [`StoreError::Backend`].
fn dynamo_error(e: &StoreError) -> &DynamoStoreError {
    match e {
        StoreError::Backend(source) => source
            .downcast_ref::<DynamoStoreError>()
            .unwrap_or_else(|| panic!("expected a DynamoStoreError source, got {source:?}")),
        other => panic!("expected StoreError::Backend, got {other:?}"),
    }
}

fn outbox_entry(t: &Tenant, message_id: &str, delivery: DeliveryState) -> OutboxEntry {
    OutboxEntry {
        delivery,
        next_attempt_at: at(61),
        ..OutboxEntry::queued(
            t.clone(),
            agent("booking"),
            message_id.into(),
            expectation_id("exp-1"),
            LapseKind::Overdue,
            at(60),
            json!({ "message": { "messageId": message_id } }),
        )
    }
}

#[tokio::test]
async fn a_concurrent_writer_makes_the_commit_conflict_and_the_retry_loses_nothing() {
    let first = common::store().await;
    let second = second_handle(&first).await;
    let t = tenant("tenant-a");
    let s = shipment("PA-1");
    first
        .commit(&t, subjects_only(vec![subject_with_record(&t, "PA-1", 1)]))
        .await
        .expect("create the subject");

    // Both writers load version 1; the first commits; the second's commit conflicts.
    let mut a = load_one(&first, &t, &s).await;
    let mut b = load_one(&second, &t, &s).await;
    assert_eq!((a.version, b.version), (1, 1));
    a.facts.push(fact("from-a", &s, at(1)));
    b.facts.push(fact("from-b", &s, at(2)));
    first
        .commit(&t, subjects_only(vec![a]))
        .await
        .expect("the first writer commits");
    match second.commit(&t, subjects_only(vec![b])).await {
        Err(StoreError::Conflict(what)) => assert!(what.contains("PA-1"), "{what}"),
        other => panic!("expected a conflict, got {other:?}"),
    }

    // The retry reloads, sees the first writer's fact, and keeps both.
    let mut b = load_one(&second, &t, &s).await;
    assert_eq!(b.version, 2);
    b.facts.push(fact("from-b", &s, at(2)));
    second
        .commit(&t, subjects_only(vec![b]))
        .await
        .expect("the retry commits");
    let keys: Vec<String> = load_one(&first, &t, &s)
        .await
        .facts
        .iter()
        .map(|f| f.fact_key.to_string())
        .collect();
    assert_eq!(keys, ["seen", "from-a", "from-b"], "no update is lost");

    // A task is checked by the transaction's own condition (no read before it): the stale
    // writer's whole transaction is cancelled, its subject change included.
    let task = TaskRef {
        agent: agent("booking"),
        task_id: TaskId::parse("task-1").expect("a valid task id"),
    };
    first
        .commit(
            &t,
            Commit {
                tasks: vec![TaskRecord::new(task.clone())],
                ..Commit::default()
            },
        )
        .await
        .expect("create the task");
    let mut scope = Scope::default();
    scope.tasks.insert(task.clone());
    scope.subjects.insert(s.clone());
    let slice_a = first.load(&t, &scope, t0()).await.expect("load");
    let slice_b = second.load(&t, &scope, t0()).await.expect("load");
    let task_a = slice_a.tasks[&task].clone().expect("stored task");
    let mut task_b = slice_b.tasks[&task].clone().expect("stored task");
    first
        .commit(
            &t,
            Commit {
                tasks: vec![task_a],
                ..Commit::default()
            },
        )
        .await
        .expect("the first writer commits the task");
    let mut subject_b = slice_b.subjects[&s].clone();
    subject_b.facts.push(fact("with-stale-task", &s, at(3)));
    task_b.statuses.push(StatusSeen {
        state: "TASK_STATE_WORKING".into(),
        at: at(3),
        received_at: at(3),
        timestamp: None,
        seq: 0,
        given_timestamp: None,
    });
    match second
        .commit(
            &t,
            Commit {
                subjects: vec![subject_b],
                tasks: vec![task_b],
                ..Commit::default()
            },
        )
        .await
    {
        Err(StoreError::Conflict(what)) => assert!(what.contains("task-1"), "{what}"),
        other => panic!("expected a conflict on the task, got {other:?}"),
    }
    assert_eq!(
        load_one(&first, &t, &s).await.version,
        3,
        "the cancelled transaction wrote nothing of the subject"
    );
}

#[tokio::test]
async fn writers_on_two_clients_lose_nothing() {
    let first = common::store().await;
    let second = second_handle(&first).await;
    watcher_runtime::conformance::concurrent_writers_across(vec![
        Arc::new(first),
        Arc::new(second),
    ])
    .await;
}

#[tokio::test]
async fn commits_of_many_subjects_fit_one_transaction() {
    let store = common::store().await;
    let t = tenant("tenant-a");
    let per_new_subject = 3; // the subject, its fact-key row and its expectation row

    // 33 new subjects: 99 writes, and the agent's live-row counter: 100.
    let batch = MAX_TRANSACTION_ITEMS / per_new_subject;
    let ids: Vec<String> = (0..100).map(|i| format!("PA-{i:03}")).collect();
    let states = |range: std::ops::Range<usize>| -> Vec<SubjectState> {
        range
            .map(|i| subject_with_record(&t, &ids[i], i as u64 + 1))
            .collect()
    };
    store
        .commit(&t, subjects_only(states(0..batch)))
        .await
        .expect("a commit of 33 new subjects (99 writes and the counter)");
    let timers = store.due_timers(at(1000), 1000).await.expect("due timers");
    assert_eq!(timers.len(), batch * 2, "a deadline and a horizon each");

    // One more new subject would need 102 writes and the counter: refused, nothing written.
    let err = store
        .commit(&t, subjects_only(states(batch..2 * batch + 1)))
        .await
        .expect_err("103 writes do not fit one transaction");
    match dynamo_error(&err) {
        DynamoStoreError::TransactionTooLarge { items, .. } => assert_eq!(*items, 103),
        other => panic!("expected TransactionTooLarge, got {other:?}"),
    }
    assert!(
        store
            .subject(&t, &shipment(&ids[batch]))
            .await
            .expect("subject")
            .is_none(),
        "a refused commit writes nothing"
    );

    // The rest in smaller commits; then one commit changes all 100: each subject is one write,
    // since its index rows are written only when they change.
    for chunk in (batch..100).collect::<Vec<_>>().chunks(batch) {
        store
            .commit(
                &t,
                subjects_only(states(chunk[0]..chunk[chunk.len() - 1] + 1)),
            )
            .await
            .expect("a commit of new subjects");
    }
    let mut all = Vec::new();
    for id in &ids {
        let s = shipment(id);
        let mut state = load_one(&store, &t, &s).await;
        assert_eq!(state.version, 1, "{id} stored");
        state.facts.push(fact("flight-departed", &s, at(5)));
        all.push(state);
    }
    store
        .commit(&t, subjects_only(all))
        .await
        .expect("one commit of 100 changed subjects (100 writes)");

    // Everything is there, with its indexes.
    let mut scope = Scope::default();
    for id in &ids {
        scope.subjects.insert(shipment(id));
        scope
            .fact_keys
            .insert(FactKey::parse(format!("manifest:{id}")).expect("a valid fact key"));
        scope
            .expectations
            .insert(watcher_core::ids::ExpectationRef {
                agent: agent("booking"),
                id: expectation_id(&format!("exp-{id}")),
            });
    }
    scope.agents.insert(agent("booking"));
    let slice = store.load(&t, &scope, t0()).await.expect("load all");
    for id in &ids {
        let s = shipment(id);
        assert_eq!(slice.subjects[&s].version, 2, "{id} changed once more");
        assert_eq!(slice.subjects[&s].facts.len(), 2);
        let key = FactKey::parse(format!("manifest:{id}")).expect("a valid fact key");
        assert_eq!(slice.fact_index[&key].len(), 1, "fact-key row of {id}");
    }
    assert!(slice.id_index.values().all(Option::is_some));
    assert_eq!(slice.agent_live[&agent("booking")], 100);
    assert_eq!(
        store
            .due_timers(at(1000), 1000)
            .await
            .expect("due timers")
            .len(),
        200
    );
    assert_eq!(
        store
            .due_timers(at(1000), 7)
            .await
            .expect("due timers")
            .len(),
        7,
        "at most `limit`"
    );
}

#[tokio::test]
async fn closed_subjects_finished_tasks_sent_lapses_and_rejections_expire() {
    let store = common::store().await;
    let ttl = store
        .client()
        .describe_time_to_live()
        .table_name(store.table())
        .send()
        .await
        .expect("describe TTL");
    let ttl = ttl.time_to_live_description.expect("a TTL description");
    assert_eq!(ttl.time_to_live_status, Some(TimeToLiveStatus::Enabled));
    assert_eq!(ttl.attribute_name.as_deref(), Some("expiresAt"));

    let t = tenant("tenant-a");
    let satisfied = shipment("PA-SAT");
    let withdrawn = shipment("PA-WD");
    let lapsed = shipment("PA-LAPSED");
    let open = shipment("PA-OPEN");
    store
        .commit(
            &t,
            subjects_only(vec![
                subject_with_record(&t, "PA-SAT", 1),
                subject_with_record(&t, "PA-WD", 2),
                subject_with_record(&t, "PA-LAPSED", 3),
                subject_with_record(&t, "PA-OPEN", 4),
            ]),
        )
        .await
        .expect("create the subjects");
    for s in [&satisfied, &withdrawn, &lapsed, &open] {
        assert_eq!(
            expires_at(&raw_subject(&store, s).await),
            None,
            "{s}: a record that can lapse keeps its subject"
        );
    }

    // Satisfied at 30 (the fact received then), withdrawn at 40, lapsed overdue at 61 and
    // stalled at 181 (open, no timer left).
    let mut sat = load_one(&store, &t, &satisfied).await;
    sat.facts.push(fact("manifest:PA-SAT", &satisfied, at(30)));
    sat.records[0].status = Status::Satisfied;
    sat.records[0].satisfaction = Some(Satisfaction {
        fact_key: FactKey::parse("manifest:PA-SAT").expect("a valid fact key"),
        source: Source::parse("carrier-feed:test").expect("a valid source"),
        satisfied_at: at(30),
        observed_at: at(30),
        claimed_observed_at: None,
        late: false,
    });
    sat.last_satisfying_receipt = Some(at(30));
    let mut wd = load_one(&store, &t, &withdrawn).await;
    wd.records[0].status = Status::Withdrawn;
    wd.records[0].withdrawal = Some(Withdrawal {
        withdrawn_at: at(40),
        reason: "task task-1 was canceled".into(),
    });
    let mut lp = load_one(&store, &t, &lapsed).await;
    for (kind, when) in [(LapseKind::Overdue, at(61)), (LapseKind::Stalled, at(181))] {
        lp.records[0].lapses.push(LapseEntry {
            lapse: kind,
            lapsed_at: when,
            message_id: format!("lapse:exp-PA-LAPSED:{}:{}", kind.as_str(), at(60)),
            due_at: at(60),
        });
    }
    lp.records[0].horizon_checked = true;
    store
        .commit(&t, subjects_only(vec![sat, wd, lp]))
        .await
        .expect("close three subjects");
    assert_eq!(
        expires_at(&raw_subject(&store, &satisfied).await),
        Some(retained_until(at(30)))
    );
    assert_eq!(
        expires_at(&raw_subject(&store, &withdrawn).await),
        Some(retained_until(at(40)))
    );
    assert_eq!(
        expires_at(&raw_subject(&store, &lapsed).await),
        Some(retained_until(at(181)))
    );
    assert_eq!(expires_at(&raw_subject(&store, &open).await), None);

    // A new open record on a closed subject keeps it again.
    let mut again = load_one(&store, &t, &satisfied).await;
    again.records.push(record(&t, "exp-again", "PA-SAT", 9));
    store
        .commit(&t, subjects_only(vec![again]))
        .await
        .expect("reopen the subject");
    assert_eq!(expires_at(&raw_subject(&store, &satisfied).await), None);

    // Tasks: kept while running, expire after a terminal status.
    let task = TaskRef {
        agent: agent("booking"),
        task_id: TaskId::parse("task-1").expect("a valid task id"),
    };
    let mut rec = TaskRecord::new(task.clone());
    rec.statuses.push(StatusSeen {
        state: "TASK_STATE_WORKING".into(),
        at: at(1),
        received_at: at(1),
        timestamp: None,
        seq: 0,
        given_timestamp: None,
    });
    store
        .commit(
            &t,
            Commit {
                tasks: vec![rec.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("a running task");
    assert_eq!(expires_at(&raw_items(&store, "task").await[0]), None);
    rec.version = 1;
    rec.statuses.push(StatusSeen {
        state: "TASK_STATE_COMPLETED".into(),
        at: at(50),
        received_at: at(51),
        timestamp: None,
        seq: 0,
        given_timestamp: None,
    });
    store
        .commit(
            &t,
            Commit {
                tasks: vec![rec],
                ..Commit::default()
            },
        )
        .await
        .expect("a completed task");
    assert_eq!(
        expires_at(&raw_items(&store, "task").await[0]),
        Some(retained_until(at(51)))
    );

    // Lapse tasks: kept while queued, expire once sent; rejections expire.
    let queued = outbox_entry(&t, "lapse:exp-1:overdue:x", DeliveryState::Queued);
    store
        .commit(
            &t,
            Commit {
                outbox: vec![queued.clone()],
                rejections: vec![Rejection {
                    agent: agent("booking"),
                    expectation_id: Some("exp-bad".into()),
                    reason: "field `dueAt`: missing".into(),
                    task_id: None,
                    at: at(7),
                    warning: false,
                }],
                ..Commit::default()
            },
        )
        .await
        .expect("a lapse task and a rejection");
    assert_eq!(expires_at(&raw_items(&store, "outbox").await[0]), None);
    assert_eq!(
        expires_at(&raw_items(&store, "rejections").await[0]),
        Some(retained_until(at(7)))
    );
    let mut sent = queued.clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    sent.next_attempt_at = at(62);
    store.outbox_update(&sent).await.expect("mark sent");
    assert_eq!(
        expires_at(&raw_items(&store, "outbox").await[0]),
        Some(retained_until(at(62)))
    );
    assert!(
        store
            .outbox_due(at(1000), 10)
            .await
            .expect("due")
            .is_empty(),
        "a sent entry leaves the outbox-due index"
    );
}

#[tokio::test]
async fn a_subject_past_the_item_limit_is_refused_and_left_as_stored() {
    let store = common::store().await;
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
    let store = common::store().await;
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
            Commit {
                outbox: vec![entry.clone(), long_agent.clone()],
                ..Commit::default()
            },
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
    let store = common::store().await;
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

#[tokio::test]
async fn a_lapse_task_is_found_by_the_task_its_agent_answered_with() {
    let store = common::store().await;
    let t = tenant("tenant-task");
    let first = outbox_entry(&t, "lapse:exp-1:overdue:a", DeliveryState::Queued);
    let second = outbox_entry(&t, "lapse:exp-2:overdue:b", DeliveryState::Queued);
    store
        .commit(
            &t,
            Commit {
                outbox: vec![first.clone(), second.clone()],
                ..Commit::default()
            },
        )
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
    let store = common::store().await;
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
    use watcher_runtime::sequence::{TimeOrdered, FIRST_TIME_ORDERED};

    let store = common::store().await.counting_work();
    let clock = Arc::new(FakeClock::new(
        Instant::parse("2026-09-10T12:00:00Z").unwrap(),
    ));
    let a = store
        .clone()
        .with_ids(TimeOrdered::with_instance(clock.clone(), 1));
    let b = store
        .clone()
        .with_ids(TimeOrdered::with_instance(clock.clone(), 2));
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

/// The value of the string attribute `name` of `item`, if any.
fn attribute<'a>(item: &'a Item, name: &str) -> Option<&'a str> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Some(v),
        _ => None,
    }
}

/// Sets the string attribute `name` of the item (`pk`, `sk`) to `value`, as an earlier version
/// wrote it.
async fn set_raw(store: &DynamoStore, item: &Item, name: &str, value: &str) {
    store
        .client()
        .update_item()
        .table_name(store.table())
        .key("pk", item["pk"].clone())
        .key("sk", item["sk"].clone())
        .update_expression("SET #a = :v")
        .expression_attribute_names("#a", name)
        .expression_attribute_values(":v", AttributeValue::S(value.into()))
        .send()
        .await
        .expect("rewrite as the earlier version");
}

/// No index partition is written by every subject or every lapse task: subjects with a timer
/// and queued lapse tasks spread over the shards of `timers` and `outbox-due`
/// (`timers#{k}`, `queued#{k}`); reads query every shard and the earlier version's one value
/// (`timers`, `queued`) and merge them in order, so items an earlier version wrote are still
/// found, and move to their shard when next written (docs/dynamodb.md "Upgrading").
#[tokio::test]
async fn the_timer_and_due_indexes_are_sharded_and_still_read_the_unsharded_value() {
    let store = common::store().await;
    let t = tenant("tenant-shards");
    // Subject i's timers: deadline at 60 + i minutes (records are raised in order i).
    let subjects: Vec<SubjectState> = (0..24)
        .map(|i| {
            let mut s = subject_with_record(&t, &format!("T-{i:02}"), i + 1);
            s.records[0].due_at = at(60 + i as u32);
            s
        })
        .collect();
    for chunk in subjects.chunks(8) {
        store
            .commit(&t, subjects_only(chunk.to_vec()))
            .await
            .expect("subjects with timers");
    }
    let items = raw_items(&store, "subject").await;
    let partitions: BTreeSet<&str> = items
        .iter()
        .filter_map(|i| attribute(i, "timersPk"))
        .collect();
    assert!(
        partitions.len() > 4 && partitions.iter().all(|p| p.starts_with("timers#")),
        "{partitions:?}"
    );
    // One subject as the earlier version wrote it: in the one `timers` partition.
    let old = raw_subject(&store, &shipment("T-05")).await;
    set_raw(&store, &old, "timersPk", "timers").await;
    let due = store.due_timers(at(100), 1000).await.expect("due timers");
    let mut subjects_due: Vec<String> = Vec::new();
    for d in &due {
        if subjects_due.last() != Some(&d.key.subject.id) {
            subjects_due.push(d.key.subject.id.clone());
        }
    }
    let expected: Vec<String> = (0..24).map(|i| format!("T-{i:02}")).collect();
    assert_eq!(
        subjects_due, expected,
        "every shard, merged in firing order"
    );
    assert!(due.windows(2).all(|w| w[0] <= w[1]));
    let first_five = store.due_timers(at(100), 5).await.expect("a few");
    assert_eq!(first_five, due[..5].to_vec(), "a limit keeps the earliest");
    let next = store.next_timer().await.expect("next").expect("one");
    assert_eq!(next, due[0]);
    let old_due = store.due_timers(at(65), 100).await.expect("due at 65");
    assert!(
        old_due.iter().any(|d| d.key.subject.id == "T-05"),
        "the unsharded one"
    );

    // Queued lapse tasks.
    let entries: Vec<OutboxEntry> = (0..20)
        .map(|i| outbox_entry(&t, &format!("lapse:{i:02}"), DeliveryState::Queued))
        .collect();
    for e in &entries {
        store
            .commit(
                &t,
                Commit {
                    outbox: vec![e.clone()],
                    ..Commit::default()
                },
            )
            .await
            .expect("a lapse task");
    }
    let outbox = raw_items(&store, "outbox").await;
    let queued: BTreeSet<&str> = outbox
        .iter()
        .filter_map(|i| attribute(i, "queued"))
        .collect();
    assert!(
        queued.len() > 4 && queued.iter().all(|p| p.starts_with("queued#")),
        "{queued:?}"
    );
    let old = outbox
        .iter()
        .find(|i| attribute(i, "sk") == Some("booking#lapse:07"))
        .expect("lapse task 7");
    set_raw(&store, old, "queued", "queued").await;
    let due = store.outbox_due(at(61), 100).await.expect("due");
    assert_eq!(due, entries, "every shard, oldest first");
    let due = store.outbox_due(at(61), 8).await.expect("due");
    assert_eq!(due, entries[..8].to_vec(), "a limit keeps the oldest");
    // Its next update moves the earlier version's entry to its shard.
    let mut moved = entries[7].clone();
    moved.attempts = 1;
    store.outbox_update(&moved).await.expect("update");
    let after = raw_items(&store, "outbox").await;
    let now_in = after
        .iter()
        .find(|i| attribute(i, "sk") == Some("booking#lapse:07"))
        .and_then(|i| attribute(i, "queued"))
        .expect("still queued");
    assert!(now_in.starts_with("queued#"), "{now_in}");
}

/// No index partition is written by every lapse task of a tenant (or of an agent): lapse tasks
/// spread over the shards of `lapses-tenant` and `lapses-agent` (`LAPSES#{tenant}#{k}`,
/// `LAPSES#{tenant}#{agent}#{k}`); a page merges every shard and the earlier version's one
/// partition (`LAPSES#{tenant}`, `LAPSES#{tenant}#{agent}`) in order of `seq`, pages of any size
/// answer each lapse task once in that order, and an entry the earlier version indexed moves to
/// its shard at its next update (docs/dynamodb.md "Upgrading").
#[tokio::test]
async fn the_lapse_page_indexes_are_sharded_and_still_read_the_unsharded_partition() {
    let store = common::store().await;
    let t = tenant("tenant-lapse-shards");
    let entries: Vec<OutboxEntry> = (0..30)
        .map(|i| outbox_entry(&t, &format!("lapse:{i:02}"), DeliveryState::Queued))
        .collect();
    for e in &entries {
        store
            .commit(
                &t,
                Commit {
                    outbox: vec![e.clone()],
                    ..Commit::default()
                },
            )
            .await
            .expect("a lapse task");
    }
    let mine = |items: Vec<Item>| -> Vec<Item> {
        items
            .into_iter()
            .filter(|i| attribute(i, "tenant") == Some("tenant-lapse-shards"))
            .collect()
    };
    let outbox = mine(raw_items(&store, "outbox").await);
    assert_eq!(outbox.len(), 30);
    let tenant_parts: BTreeSet<&str> = outbox
        .iter()
        .filter_map(|i| attribute(i, "lapsesTenant"))
        .collect();
    let agent_parts: BTreeSet<&str> = outbox
        .iter()
        .filter_map(|i| attribute(i, "lapsesAgent"))
        .collect();
    assert!(
        tenant_parts.len() > 4
            && tenant_parts
                .iter()
                .all(|p| p.starts_with("LAPSES#tenant-lapse-shards#")),
        "{tenant_parts:?}"
    );
    assert!(
        agent_parts.len() > 4
            && agent_parts
                .iter()
                .all(|p| p.starts_with("LAPSES#tenant-lapse-shards#booking#")),
        "{agent_parts:?}"
    );
    // Two lapse tasks as the earlier version indexed them: in the one partition each.
    for sk in ["booking#lapse:03", "booking#lapse:17"] {
        let old = outbox
            .iter()
            .find(|i| attribute(i, "sk") == Some(sk))
            .expect("the lapse task");
        set_raw(&store, old, "lapsesTenant", "LAPSES#tenant-lapse-shards").await;
        set_raw(
            &store,
            old,
            "lapsesAgent",
            "LAPSES#tenant-lapse-shards#booking",
        )
        .await;
    }
    let ids = |page: &[(u64, OutboxEntry)]| -> Vec<String> {
        page.iter().map(|(_, e)| e.message_id.clone()).collect()
    };
    let expected: Vec<String> = entries.iter().map(|e| e.message_id.clone()).collect();
    for agent_filter in [None, Some(agent("booking"))] {
        let all = store
            .lapses_page(
                &t,
                &LapseQuery {
                    agent: agent_filter.clone(),
                    limit: 100,
                    ..LapseQuery::default()
                },
            )
            .await
            .expect("one page");
        assert_eq!(ids(&all.entries), expected, "every shard, merged in order");
        assert_eq!(all.next, None);
        assert!(all.entries.windows(2).all(|w| w[0].0 < w[1].0));
        // Pages of 7, each after the last: the same lapse tasks, once each, in order.
        let mut paged = Vec::new();
        let mut after = None;
        loop {
            let page = store
                .lapses_page(
                    &t,
                    &LapseQuery {
                        agent: agent_filter.clone(),
                        after,
                        limit: 7,
                        ..LapseQuery::default()
                    },
                )
                .await
                .expect("a page");
            paged.extend(ids(&page.entries));
            match page.next {
                Some(next) => after = Some(next),
                None => break,
            }
        }
        assert_eq!(paged, expected, "pages of 7 ({agent_filter:?})");
        assert_eq!(
            store.last_lapse_position(&t).await.expect("newest"),
            all.entries.last().map(|(seq, _)| *seq)
        );
    }
    // Its next update moves the earlier version's entry to its shard.
    let mut moved = entries[3].clone();
    moved.attempts = 1;
    store.outbox_update(&moved).await.expect("update");
    let after = mine(raw_items(&store, "outbox").await);
    let item = after
        .iter()
        .find(|i| attribute(i, "sk") == Some("booking#lapse:03"))
        .expect("lapse task 3");
    let tenant_part = attribute(item, "lapsesTenant").expect("indexed");
    assert!(
        tenant_part.starts_with("LAPSES#tenant-lapse-shards#"),
        "{tenant_part}"
    );
    let agent_part = attribute(item, "lapsesAgent").expect("indexed");
    assert!(
        agent_part.starts_with("LAPSES#tenant-lapse-shards#booking#"),
        "{agent_part}"
    );
}

/// A tenant's lapse tasks are spread over sixteen item collections (`OUTBOX#{tenant}#{k}`), not
/// one. A lapse task an earlier version kept in the one partition `OUTBOX#{tenant}` is still
/// found by its key, claimed and updated where it is, listed by `lapses`, and not queued a
/// second time when the same lapse is committed again (docs/dynamodb.md "Upgrading").
#[tokio::test]
async fn lapse_tasks_are_sharded_and_those_in_the_earlier_partition_are_still_served() {
    let store = common::store().await;
    let t = tenant("tenant-outbox-shards");
    let entries: Vec<OutboxEntry> = (0..24)
        .map(|i| outbox_entry(&t, &format!("lapse:{i:02}"), DeliveryState::Queued))
        .collect();
    store
        .commit(
            &t,
            Commit {
                outbox: entries.clone(),
                ..Commit::default()
            },
        )
        .await
        .expect("lapse tasks");
    let mine = || async {
        raw_items(&store, "outbox")
            .await
            .into_iter()
            .filter(|i| attribute(i, "tenant") == Some("tenant-outbox-shards"))
            .collect::<Vec<Item>>()
    };
    let items = mine().await;
    let partitions: BTreeSet<&str> = items.iter().filter_map(|i| attribute(i, "pk")).collect();
    assert!(
        partitions.len() > 4
            && partitions
                .iter()
                .all(|p| p.starts_with("OUTBOX#tenant-outbox-shards#")),
        "{partitions:?}"
    );

    // Lapse task 5 as the earlier version kept it: in `OUTBOX#{tenant}`.
    let five = items
        .iter()
        .find(|i| attribute(i, "sk") == Some("booking#lapse:05"))
        .expect("lapse task 5")
        .clone();
    let mut legacy = five.clone();
    legacy.insert(
        "pk".into(),
        AttributeValue::S("OUTBOX#tenant-outbox-shards".into()),
    );
    store
        .client()
        .put_item()
        .table_name(store.table())
        .set_item(Some(legacy))
        .send()
        .await
        .expect("keep it where the earlier version did");
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .key("pk", five["pk"].clone())
        .key("sk", five["sk"].clone())
        .send()
        .await
        .expect("not in its shard");

    let booking = agent("booking");
    let got = store
        .outbox_get(&t, &booking, "lapse:05")
        .await
        .expect("get")
        .expect("found in the earlier partition");
    assert_eq!(got, entries[5]);
    assert_eq!(store.lapses(&t).await.expect("lapses"), entries, "in order");
    // Committing the same lapse again queues nothing new.
    store
        .commit(
            &t,
            Commit {
                outbox: vec![entries[5].clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("the same lapse again");
    assert_eq!(mine().await.len(), 24, "no second lapse task");
    // Updated where it is.
    let mut sent = entries[5].clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    store.outbox_update(&sent).await.expect("update");
    assert_eq!(
        store
            .outbox_get(&t, &booking, "lapse:05")
            .await
            .expect("get"),
        Some(sent)
    );
    let after = mine().await;
    let five_now: Vec<&str> = after
        .iter()
        .filter(|i| attribute(i, "sk") == Some("booking#lapse:05"))
        .filter_map(|i| attribute(i, "pk"))
        .collect();
    assert_eq!(five_now, ["OUTBOX#tenant-outbox-shards"]);
}
