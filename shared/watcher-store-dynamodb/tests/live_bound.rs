//! The per-agent bound (expectations-v1 §13.2) over the sharded live-row counter, on a local moto
//! server (see `tests/common`): the count is the sum of the shards, an earlier version's one
//! counter item is shard 0 and keeps counting, and steps of one agent loaded before each other's
//! commits may overshoot the bound by what the others raise, never more
//! (docs/interpretation.md "§13.2 per-agent bound under concurrency").

use crate::common;

use std::sync::Arc;
use watcher_runtime::store::Records as _;

use aws_sdk_dynamodb::types::AttributeValue;
use common::*;
use serde_json::json;
use watcher_core::card::declaration_from_card;
use watcher_core::engine::{initial_scope, step, AgentProfile, Effect, Input, Origin, PushItem};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, Subject, TaskId, Tenant};
use watcher_core::settings::Settings;
use watcher_core::slice::Scope;
use watcher_core::time::Instant;
use watcher_runtime::directory::Directory;
use watcher_runtime::store::Commit;
use watcher_runtime::watcher::Watcher;
use watcher_store_dynamodb::DynamoStore;

fn raise(id: &str, subject: &str) -> Input {
    let card = json!({
        "name": "Booking agent",
        "skills": [{ "id": "handle_lapse", "name": "Handle lapse" }],
        "capabilities": { "extensions": [{
            "uri": watcher_core::EXPECTATIONS_URI,
            "params": {
                "keepsTime": false,
                "lapseSkill": "handle_lapse",
                "kinds": [{ "kind": "shipment.manifest", "subjectType": "shipment",
                            "describes": "the airline manifest", "basis": "observed" }]
            }
        }]}
    });
    let expectation = Expectation::from_json(&json!({
        "expectationId": id,
        "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": subject },
        "expects": "the manifest",
        "satisfiedBy": { "factKey": format!("manifest:{subject}") },
        "dueAt": "2026-09-10T13:00:00Z",
        "basis": "observed",
    }))
    .expect("expectation");
    Input::Push {
        agent: AgentProfile {
            id: AgentId::parse("booking").expect("agent"),
            declaration: declaration_from_card(&card).expect("card"),
        },
        items: vec![PushItem::Raise {
            origin: Origin {
                task_id: TaskId::parse(format!("task-{id}")).expect("task"),
                context_id: None,
            },
            expectations: vec![Ok(expectation)],
            question_at: None,
            question_timestamp: None,
        }],
    }
}

fn now() -> Instant {
    Instant::parse("2026-09-10T12:00:00Z").expect("instant")
}

/// The live count of `booking` a step would read at [`now`].
async fn live(store: &DynamoStore, t: &Tenant) -> u64 {
    let mut scope = Scope::default();
    scope.agents.insert(agent("booking"));
    store.load(t, &scope, now()).await.expect("load").agent_live[&agent("booking")]
}

/// The live-count items of the table: (partition key, value).
async fn counter_items(store: &DynamoStore) -> Vec<(String, i64)> {
    raw_items(store, "live-count")
        .await
        .iter()
        .map(|item| match (item.get("pk"), item.get("value")) {
            (Some(AttributeValue::S(pk)), Some(AttributeValue::N(v))) => {
                (pk.clone(), v.parse().expect("a number"))
            }
            other => panic!("not a counter item: {other:?}"),
        })
        .collect()
}

/// One step of `input` loaded now, up to its commit (not sent).
async fn prepared(store: &DynamoStore, t: &Tenant, input: &Input, settings: &Settings) -> Commit {
    let mut scope = initial_scope(input, settings);
    let seq = store.next_sequence().await.expect("seq");
    loop {
        let slice = store.load(t, &scope, now()).await.expect("load");
        let ctx = watcher_core::engine::StepContext {
            now: now(),
            seq,
            settings,
        };
        match step(slice, input, &ctx) {
            Ok((mut slice, effects)) => {
                assert!(
                    !effects.iter().any(|e| matches!(e, Effect::Rejected(_))),
                    "{effects:?}"
                );
                return Commit {
                    subjects: slice
                        .dirty_subjects
                        .iter()
                        .filter_map(|s| slice.subjects.remove(s))
                        .collect(),
                    tasks: slice
                        .dirty_tasks
                        .iter()
                        .filter_map(|k| slice.tasks.remove(k).flatten())
                        .collect(),
                    ..Commit::default()
                };
            }
            Err(need) => {
                scope.add(need);
            }
        }
    }
}

/// Commits of one agent on many subjects spread over the counter's shards; the count is their
/// sum, and the one counter item an earlier version kept (`LIVECOUNT#{tenant}#{agent}`, now
/// shard 0) is part of it.
#[tokio::test]
async fn the_live_count_sums_the_shards_and_the_earlier_counter_item() {
    let store = store().await;
    let t = tenant("tenant-shards");
    // A table written by the counting version: 5 live rows counted in the one item.
    store
        .client()
        .put_item()
        .table_name(store.table())
        .item("pk", AttributeValue::S(format!("LIVECOUNT#{t}#booking")))
        .item("sk", AttributeValue::S("#".into()))
        .item("kind", AttributeValue::S("live-count".into()))
        .item("tenant", AttributeValue::S(t.to_string()))
        .item("value", AttributeValue::N("5".into()))
        .send()
        .await
        .expect("the earlier counter item");
    assert_eq!(live(&store, &t).await, 5);
    let w = Watcher::new(
        Arc::new(store.clone()),
        Directory::new(),
        Settings::default(),
    );
    for i in 0..24 {
        w.apply(&t, &raise(&format!("e-{i}"), &format!("S-{i}")), now())
            .await
            .expect("raise");
    }
    assert_eq!(live(&store, &t).await, 29);
    let items = counter_items(&store).await;
    assert!(items.len() > 4, "24 subjects use several shards: {items:?}");
    assert_eq!(items.iter().map(|(_, v)| v).sum::<i64>(), 29);
    assert!(items
        .iter()
        .all(|(pk, _)| pk.starts_with(&format!("LIVECOUNT#{t}#booking"))));

    // The expectation rows spread over the agent's shards of the `live` index, and a row an
    // earlier version wrote in the one partition `LIVE#{tenant}#{agent}` is still counted: past
    // its `liveUntil`, it comes off the count.
    let rows = scan_kind(&store, "expectation").await;
    let partitions: std::collections::BTreeSet<String> = rows
        .iter()
        .filter_map(|r| match r.get("liveAgent") {
            Some(AttributeValue::S(v)) => Some(v.clone()),
            _ => None,
        })
        .collect();
    assert!(
        partitions.len() > 4
            && partitions
                .iter()
                .all(|p| p.starts_with(&format!("LIVE#{t}#booking#"))),
        "{partitions:?}"
    );
    let old = &rows[0];
    store
        .client()
        .update_item()
        .table_name(store.table())
        .key("pk", old["pk"].clone())
        .key("sk", old["sk"].clone())
        .update_expression("SET liveAgent = :a, liveUntil = :u")
        .expression_attribute_values(":a", AttributeValue::S(format!("LIVE#{t}#booking")))
        .expression_attribute_values(":u", AttributeValue::S("0".repeat(22)))
        .send()
        .await
        .expect("a row as the earlier version wrote it, past its liveUntil");
    assert_eq!(
        live(&store, &t).await,
        28,
        "the unsharded partition is read too"
    );
}

/// Every item of the table whose `kind` is `kind`.
async fn scan_kind(
    store: &DynamoStore,
    kind: &str,
) -> Vec<std::collections::HashMap<String, AttributeValue>> {
    store
        .client()
        .scan()
        .table_name(store.table())
        .filter_expression("#k = :k")
        .expression_attribute_names("#k", "kind")
        .expression_attribute_values(":k", AttributeValue::S(kind.into()))
        .send()
        .await
        .expect("scan")
        .items
        .unwrap_or_default()
}

/// §13.2 under concurrency, exactly as docs/interpretation.md states it: with the bound at 2
/// and one expectation live, two steps of the agent on different subjects load the count (1)
/// before either commits; both raise and both commit (the live count is not a condition of the
/// commit), and the agent has 3 live: over the bound by the one expectation the other step
/// raised. The next step reads 3 and refuses.
#[tokio::test]
async fn concurrent_steps_of_one_agent_overshoot_the_bound_by_what_the_others_raise() {
    let store = store().await;
    let t = tenant("tenant-bound");
    let settings = Settings {
        max_open_per_agent: 2,
        ..Settings::default()
    };
    let w = Watcher::new(Arc::new(store.clone()), Directory::new(), settings);
    w.apply(&t, &raise("e-0", "S-0"), now())
        .await
        .expect("raise");
    let first = prepared(&store, &t, &raise("e-1", "S-1"), &settings).await;
    let second = prepared(&store, &t, &raise("e-2", "S-2"), &settings).await;
    store.commit(&t, first).await.expect("the first commits");
    store
        .commit(&t, second)
        .await
        .expect("the second commits too: nothing conflicts");
    assert_eq!(live(&store, &t).await, 3, "over the bound by one");
    let refused = w
        .apply(&t, &raise("e-3", "S-3"), now())
        .await
        .expect("step");
    assert!(
        refused
            .effects
            .iter()
            .any(|e| matches!(e, Effect::Rejected(_))),
        "{:?}",
        refused.effects
    );
    let s3 = Subject::parse("shipment", "S-3").expect("subject");
    assert!(store
        .subject(&t, &s3)
        .await
        .expect("read")
        .is_none_or(|s| s.records.is_empty()));
}
