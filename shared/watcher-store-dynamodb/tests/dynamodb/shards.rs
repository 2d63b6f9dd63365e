//! No index partition or item collection written by every input: the sharded timers, due, lapse-page and outbox partitions, and those an earlier version wrote, still read.

use super::*;
use watcher_runtime::store::LapseLog;

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

/// The string values of the attribute `name` over `items`.
fn attribute_values<'a>(items: &'a [Item], name: &str) -> BTreeSet<&'a str> {
    items.iter().filter_map(|i| attribute(i, name)).collect()
}

/// The item of `items` whose sort key is `sk`.
fn item_with_sk<'a>(items: &'a [Item], sk: &str) -> &'a Item {
    items
        .iter()
        .find(|i| attribute(i, "sk") == Some(sk))
        .unwrap_or_else(|| panic!("no item {sk}"))
}

/// `n` queued lapse tasks of `booking` in tenant `t`, `lapse:00` to `lapse:{n-1}`.
fn queued_lapse_tasks(t: &Tenant, n: usize) -> Vec<OutboxEntry> {
    (0..n)
        .map(|i| outbox_entry(t, &format!("lapse:{i:02}"), DeliveryState::Queued))
        .collect()
}

/// Commits `entries` to tenant `t` in one commit, as the engine queues lapse tasks.
async fn queue(store: &DynamoStore, t: &Tenant, entries: Vec<OutboxEntry>) {
    let commit = Commit::of_outbox(entries);
    store
        .commit(t, commit)
        .await
        .expect("queue the lapse tasks");
}

/// Moves the lapse-task item `item` of tenant `t` from its shard to the one partition an earlier
/// version kept a tenant's lapse tasks in (`OUTBOX#{tenant}`).
async fn keep_in_earlier_partition(store: &DynamoStore, item: &Item, t: &Tenant) {
    let mut legacy = item.clone();
    legacy.insert("pk".into(), AttributeValue::S(format!("OUTBOX#{t}")));
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
        .key("pk", item["pk"].clone())
        .key("sk", item["sk"].clone())
        .send()
        .await
        .expect("not in its shard");
}

/// The lapse-task items of the tenant `tenant` as they are stored.
async fn tenants_lapse_items(store: &DynamoStore, tenant: &str) -> Vec<Item> {
    raw_items(store, "outbox")
        .await
        .into_iter()
        .filter(|i| attribute(i, "tenant") == Some(tenant))
        .collect()
}

/// No index partition is written by every subject or every lapse task: subjects with a timer
/// spread over the shards of `timers` (`timers#{k}`) and queued lapse tasks write no due index;
/// the timers' reads query every shard and the earlier version's
/// one value (`timers`) and merge them in order, so subjects an earlier version wrote are still
/// found; items an earlier version wrote move to their shard when next written
/// (docs/dynamodb.md "Upgrading").
#[tokio::test]
async fn the_timer_and_due_indexes_are_sharded_and_still_read_the_unsharded_value() {
    let store = store().await;
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
    let partitions = attribute_values(&items, "timersPk");
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

    // Queued lapse tasks write no due index (the `outbox-due` index of earlier versions is
    // gone): no `queued` attribute, and an earlier version's is removed at the next update.
    let entries = queued_lapse_tasks(&t, 20);
    for e in &entries {
        queue(&store, &t, vec![e.clone()]).await;
    }
    let outbox = raw_items(&store, "outbox").await;
    assert!(attribute_values(&outbox, "queued").is_empty());
    let old = item_with_sk(&outbox, "booking#lapse:07");
    set_raw(&store, old, "queued", "queued#3").await;
    let mut moved = entries[7].clone();
    moved.attempts = 1;
    store.outbox_update(&moved).await.expect("update");
    let after = raw_items(&store, "outbox").await;
    assert_eq!(
        attribute(item_with_sk(&after, "booking#lapse:07"), "queued"),
        None,
        "removed at its next update"
    );
}

/// The shard of `key` among `shards` as the store computes it (docs/dynamodb.md "Shards": the
/// first 8 bytes of its SHA-256, big-endian, modulo the count).
fn shard(key: &str, shards: u64) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) % shards
}

/// The number after `{prefix}#` in `value`.
fn shard_number(value: &str, prefix: &str) -> u64 {
    value
        .strip_prefix(prefix)
        .and_then(|k| k.strip_prefix('#'))
        .and_then(|k| k.parse().ok())
        .unwrap_or_else(|| panic!("{value} is not {prefix}#{{k}}"))
}

/// `timers` is spread over 64 shards (`DUE_SHARDS`), where an earlier version spread it over 16:
/// a subject that version wrote (`timers#{k}`, `k` its key's shard of 16) is still found by the
/// sweep's read (`due_timers`, `next_timer`), and moves to its shard of 64 when next written
/// (docs/dynamodb.md "Upgrading").
#[tokio::test]
async fn timers_use_64_shards_and_still_find_what_16_shards_wrote() {
    let store = store().await;
    let t = tenant("tenant-64-shards");
    let subjects: Vec<SubjectState> = (0..40)
        .map(|i| {
            let mut s = subject_with_record(&t, &format!("S-{i:02}"), i + 1);
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
    for item in &items {
        let pk = attribute(item, "pk").expect("pk");
        let part = attribute(item, "timersPk").expect("a pending timer");
        assert_eq!(shard_number(part, "timers"), shard(pk, 64), "{pk}");
    }
    let shards: BTreeSet<u64> = items
        .iter()
        .map(|i| shard_number(attribute(i, "timersPk").expect("timersPk"), "timers"))
        .collect();
    assert!(
        shards.iter().any(|k| *k >= 16),
        "past the sixteen: {shards:?}"
    );

    // The first subject whose shard of 64 is not its shard of 16, as the earlier version wrote it.
    let old = items
        .iter()
        .find(|i| {
            let pk = attribute(i, "pk").expect("pk");
            shard(pk, 64) != shard(pk, 16)
        })
        .expect("a subject whose shard changed");
    let pk = attribute(old, "pk").expect("pk").to_owned();
    let earlier = format!("timers#{}", shard(&pk, 16));
    set_raw(&store, old, "timersPk", &earlier).await;
    let state: SubjectState =
        serde_json::from_str(attribute(old, "state").expect("state")).expect("state JSON");
    let id = state.subject.id.clone();
    let due = store.due_timers(at(150), 1000).await.expect("due timers");
    let ids: Vec<&str> = due.iter().map(|d| d.key.subject.id.as_str()).collect();
    let expected: Vec<String> = (0..40).map(|i| format!("S-{i:02}")).collect();
    assert_eq!(
        ids, expected,
        "every shard, the earlier one's too, in firing order"
    );
    let at_its_deadline = state.records[0].due_at;
    let just_then = store
        .due_timers(at_its_deadline, 1000)
        .await
        .expect("due then");
    assert_eq!(
        just_then.last().map(|d| d.key.subject.id.as_str()),
        Some(id.as_str()),
        "the sweep at its deadline fires it"
    );
    let next = store.next_timer().await.expect("next").expect("one");
    assert_eq!(next, due[0]);
    // Its next commit (the timer moved) puts it in its shard of 64.
    let mut moved = load_one(&store, &t, &state.subject).await;
    moved.records[0].due_at = at(120);
    store
        .commit(&t, subjects_only(vec![moved]))
        .await
        .expect("move the timer");
    let now_in = attribute(&raw_subject(&store, &state.subject).await, "timersPk")
        .expect("still pending")
        .to_owned();
    assert_eq!(now_in, format!("timers#{}", shard(&pk, 64)));
}

/// No index partition is written by every lapse task of a tenant (or of an agent): lapse tasks
/// spread over the shards of `lapses-tenant` and `lapses-agent` (`LAPSES#{tenant}#{k}`,
/// `LAPSES#{tenant}#{agent}#{k}`); a page merges every shard and the earlier version's one
/// partition (`LAPSES#{tenant}`, `LAPSES#{tenant}#{agent}`) in order of `seq`, pages of any size
/// answer each lapse task once in that order, and an entry the earlier version indexed moves to
/// its shard at its next update (docs/dynamodb.md "Upgrading").
#[tokio::test]
async fn the_lapse_page_indexes_are_sharded_and_still_read_the_unsharded_partition() {
    let store = store().await;
    let t = tenant("tenant-lapse-shards");
    let entries = queued_lapse_tasks(&t, 30);
    for e in &entries {
        queue(&store, &t, vec![e.clone()]).await;
    }
    let outbox = tenants_lapse_items(&store, "tenant-lapse-shards").await;
    assert_eq!(outbox.len(), 30);
    let tenant_parts = attribute_values(&outbox, "lapsesTenant");
    let agent_parts = attribute_values(&outbox, "lapsesAgent");
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
        let old = item_with_sk(&outbox, sk);
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
    let after = tenants_lapse_items(&store, "tenant-lapse-shards").await;
    let item = item_with_sk(&after, "booking#lapse:03");
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
    let store = store().await;
    let t = tenant("tenant-outbox-shards");
    let entries = queued_lapse_tasks(&t, 24);
    queue(&store, &t, entries.clone()).await;
    let items = tenants_lapse_items(&store, "tenant-outbox-shards").await;
    let partitions = attribute_values(&items, "pk");
    assert!(
        partitions.len() > 4
            && partitions
                .iter()
                .all(|p| p.starts_with("OUTBOX#tenant-outbox-shards#")),
        "{partitions:?}"
    );

    // Lapse task 5 as the earlier version kept it: in `OUTBOX#{tenant}`.
    keep_in_earlier_partition(&store, item_with_sk(&items, "booking#lapse:05"), &t).await;

    let booking = agent("booking");
    let got = store
        .outbox_get(&t, &booking, "lapse:05")
        .await
        .expect("get")
        .expect("found in the earlier partition");
    assert_eq!(got, entries[5]);
    assert_eq!(store.lapses(&t).await.expect("lapses"), entries, "in order");
    // Committing the same lapse again queues nothing new.
    queue(&store, &t, vec![entries[5].clone()]).await;
    assert_eq!(
        tenants_lapse_items(&store, "tenant-outbox-shards")
            .await
            .len(),
        24,
        "no second lapse task"
    );
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
    let after = tenants_lapse_items(&store, "tenant-outbox-shards").await;
    let five_now: Vec<&str> = after
        .iter()
        .filter(|i| attribute(i, "sk") == Some("booking#lapse:05"))
        .filter_map(|i| attribute(i, "pk"))
        .collect();
    assert_eq!(five_now, ["OUTBOX#tenant-outbox-shards"]);
}

/// A commit learns that a lapse task is stored in its shard from its transaction's condition,
/// with no read, and that one is stored in the earlier partition from its read of that
/// partition's keys (docs/dynamodb.md "Commit"), and queues nothing twice, with a few lapse
/// tasks and with many in one commit: one stored in its shard and one stored in the earlier
/// partition are each kept as first written; the others are queued.
#[tokio::test]
async fn a_commit_queues_no_lapse_task_twice_with_few_or_many() {
    for (name, n) in [("tenant-few", 4), ("tenant-many", 60)] {
        let store = store().await;
        let t = tenant(name);
        let entries = queued_lapse_tasks(&t, n);
        queue(&store, &t, vec![entries[1].clone(), entries[2].clone()]).await;
        let items = tenants_lapse_items(&store, name).await;
        keep_in_earlier_partition(&store, item_with_sk(&items, "booking#lapse:02"), &t).await;

        // Both stored ones committed again, changed: each stays as first written.
        let mut again = entries.clone();
        for e in &mut again[1..=2] {
            e.request = serde_json::json!({ "changed": true });
        }
        queue(&store, &t, again).await;
        let after = tenants_lapse_items(&store, name).await;
        assert_eq!(after.len(), n, "{name}: one item per lapse task");
        assert_eq!(store.lapses(&t).await.expect("lapses").len(), n, "{name}");
        let booking = agent("booking");
        for (i, first) in entries.iter().enumerate().take(3).skip(1) {
            assert_eq!(
                store
                    .outbox_get(&t, &booking, &format!("lapse:{i:02}"))
                    .await
                    .expect("get"),
                Some(first.clone()),
                "{name}: lapse task {i} as first written"
            );
        }
        let in_earlier: Vec<&str> = after
            .iter()
            .filter(|i| attribute(i, "pk") == Some(&format!("OUTBOX#{name}")))
            .filter_map(|i| attribute(i, "sk"))
            .collect();
        assert_eq!(in_earlier, ["booking#lapse:02"], "{name}");
    }
}
