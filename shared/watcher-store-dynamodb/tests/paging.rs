//! Keyset pages of `GET /v1/lapses` and of an agent's rejections on a local moto server (see
//! `tests/common`): what a page reads does not grow with the outbox or the rejections kept
//! (issue 10), pages cross rejections items, and lapse tasks written before the `lapses-*`
//! indexes enter them at their next update (docs/dynamodb.md, "Upgrading").

use crate::common;

use aws_sdk_dynamodb::types::AttributeValue;
use common::*;
use serde_json::json;
use watcher_core::engine::Rejection;
use watcher_core::ids::{AgentId, TaskId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::{Instant, IsoDuration};
use watcher_runtime::store::{
    lapse_scan_budget, Commit, DeliveryState, LapseLog, LapseQuery, OutboxEntry,
};
use watcher_runtime::store::{Outbox as _, Records as _, Rejections as _, Upkeep as _};
use watcher_store_dynamodb::DynamoStore;

/// Lapse task `i` of tenant `t`: agent `booking` for even `i`, `billing` for odd; lapsed `i`
/// seconds after [`t0`]; every 7th one delivered (`sent`).
fn entry(t: &Tenant, i: usize) -> OutboxEntry {
    let when = t0().plus(IsoDuration::parse(&format!("PT{i}S")).expect("a duration"));
    let message_id = format!("lapse:exp-{i}:overdue:{when}");
    let mut entry = OutboxEntry::queued(
        t.clone(),
        agent(if i.is_multiple_of(2) {
            "booking"
        } else {
            "billing"
        }),
        message_id.clone(),
        expectation_id(&format!("exp-{i}")),
        LapseKind::Overdue,
        when,
        json!({ "message": { "messageId": message_id } }),
    );
    if i.is_multiple_of(7) {
        entry.delivery = DeliveryState::Sent;
    }
    entry
}

/// Stores lapse tasks `from..to` of `t` (40 a commit: a transaction holds at most 100 items).
async fn grow_outbox(store: &DynamoStore, t: &Tenant, from: usize, to: usize) {
    let entries: Vec<OutboxEntry> = (from..to).map(|i| entry(t, i)).collect();
    for chunk in entries.chunks(40) {
        store
            .commit(t, Commit::of_outbox(chunk.to_vec()))
            .await
            .expect("commit lapse tasks");
    }
}

fn rejection(who: &AgentId, i: usize, when: Instant) -> Rejection {
    Rejection {
        agent: who.clone(),
        expectation_id: Some(format!("exp-{i}")),
        reason: format!("reason {i}"),
        task_id: Some(TaskId::parse("task-1").expect("a task id")),
        at: when,
        warning: false,
    }
}

/// Keeps rejections `from..to` for `who` of `t`, `per_commit` a commit (100 an item).
async fn grow_rejections(
    store: &DynamoStore,
    t: &Tenant,
    who: &AgentId,
    from: usize,
    to: usize,
    per_commit: usize,
) -> Vec<Rejection> {
    let all: Vec<Rejection> = (from..to).map(|i| rejection(who, i, at(1))).collect();
    for chunk in all.chunks(per_commit) {
        store
            .commit(t, Commit::of_rejections(chunk.to_vec()))
            .await
            .expect("commit rejections");
    }
    all
}

/// Items read by `f` (the store counts its work).
async fn items_read<T>(store: &DynamoStore, f: impl std::future::Future<Output = T>) -> (u64, T) {
    let before = store.work_done().expect("counted");
    let out = f.await;
    (store.work_done().expect("counted") - before, out)
}

/// The items each page reads at the outbox's current size: the first page, a page from the
/// middle, an agent's page from the middle, a page of a delivery state no lapse task is in
/// (every position looked at is filtered out), and a page of rejections from the middle.
/// Also checks what each page holds.
async fn page_costs(store: &DynamoStore, t: &Tenant, middle: u64, reject_middle: u64) -> Vec<u64> {
    let booking = agent("booking");
    let query = |after: Option<u64>| LapseQuery {
        after,
        limit: 20,
        ..LapseQuery::default()
    };
    let mut costs = Vec::new();

    let (cost, page) = items_read(store, store.lapses_page(t, &query(None))).await;
    let page = page.expect("first page");
    assert_eq!(page.entries.len(), 20);
    assert_eq!(page.entries[0].1, entry(t, 0));
    assert_eq!(page.next, Some(page.entries[19].0));
    costs.push(cost);

    let (cost, page) = items_read(store, store.lapses_page(t, &query(Some(middle)))).await;
    let page = page.expect("middle page");
    assert_eq!(page.entries.len(), 20);
    assert!(page.entries.iter().all(|(p, _)| *p > middle));
    costs.push(cost);

    let mut by_agent = query(Some(middle));
    by_agent.agent = Some(booking.clone());
    let (cost, page) = items_read(store, store.lapses_page(t, &by_agent)).await;
    let page = page.expect("agent's page");
    assert_eq!(page.entries.len(), 20);
    assert!(page.entries.iter().all(|(_, o)| o.agent == booking));
    costs.push(cost);

    let mut failed = query(None);
    failed.delivery = Some(DeliveryState::Failed);
    let (cost, page) = items_read(store, store.lapses_page(t, &failed)).await;
    let page = page.expect("failed page");
    assert!(page.entries.is_empty(), "no lapse task failed");
    costs.push(cost);

    let (cost, page) = items_read(
        store,
        store.rejections_page(t, &booking, Some(reject_middle), 20),
    )
    .await;
    let (rejections, next) = page.expect("rejections page");
    assert_eq!(rejections.len(), 20);
    assert!(next.is_some());
    costs.push(cost);
    costs
}

/// A page reads about what it answers, never the outbox. Lapse pages merge the tenant's (or
/// agent's) 17 index partitions (16 shards and the one an earlier version wrote), each read a
/// chunk at a time: a page that looks at `n` positions reads at most 2 × `n` + 17 × its first
/// chunk (2 for a page of 20), at 300 lapse tasks as at 1,500. A page whose filter matches
/// nothing looks at most at the scan budget (1,000 positions), and goes on from there with
/// `next`. A rejections page reads one or two items.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_reads_a_bounded_number_of_items() {
    let store = store().await.counting_work();
    let t = tenant("tenant-paged");
    let booking = agent("booking");
    grow_outbox(&store, &t, 0, 300).await;
    grow_rejections(&store, &t, &booking, 0, 300, 100).await;
    // A position in the middle of each: the 100th lapse task's and the 150th rejection's.
    let all = store
        .lapses_page(
            &t,
            &LapseQuery {
                limit: 300,
                ..LapseQuery::default()
            },
        )
        .await
        .expect("all lapse tasks");
    assert_eq!(all.entries.len(), 300);
    assert_eq!(all.next, None);
    let middle = all.entries[99].0;
    let (rejections, _) = store
        .rejections_page(&t, &booking, None, 150)
        .await
        .expect("rejections");
    let reject_middle = rejections[149].0;

    let small = page_costs(&store, &t, middle, reject_middle).await;
    grow_outbox(&store, &t, 300, 1_500).await;
    grow_rejections(&store, &t, &booking, 300, 1_500, 100).await;
    let large = page_costs(&store, &t, middle, reject_middle).await;
    eprintln!("items read per page at 300: {small:?}; at 1,500: {large:?}");

    // 20 answered and the one that tells a next page exists: 21 positions looked at.
    const PARTITIONS: u64 = 17;
    let bound = |looked: u64, first_chunk: u64| 2 * looked + PARTITIONS * first_chunk;
    let names = ["first page", "middle page", "agent's page"];
    for ((name, s), l) in names.iter().zip(&small).zip(&large) {
        for (at, read) in [("300", s), ("1,500", l)] {
            assert!(
                (21..=bound(21, 2)).contains(read),
                "{name} at {at}: {read} items read for 21 positions"
            );
        }
    }
    assert_eq!(small[3], 300, "a filter matching nothing reads all 300");
    let budget = lapse_scan_budget(20) as u64;
    assert!(
        (budget..=bound(budget, 2)).contains(&large[3]),
        "at 1,500 it looks at the budget only: {} read",
        large[3]
    );
    assert_eq!(small[4], large[4], "rejections page: the same items read");
    assert!(
        large[4] <= 2,
        "a page of 20 rejections reads one or two items"
    );

    // The filter matching nothing goes on after the positions looked at, and ends.
    let mut failed = LapseQuery {
        limit: 20,
        delivery: Some(DeliveryState::Failed),
        ..LapseQuery::default()
    };
    let thousand = store
        .lapses_page(
            &t,
            &LapseQuery {
                limit: 1_000,
                ..LapseQuery::default()
            },
        )
        .await
        .expect("the first 1,000");
    let first = store.lapses_page(&t, &failed).await.expect("first");
    assert_eq!(
        first.next,
        Some(thousand.entries[999].0),
        "the next page starts after the 1,000th position"
    );
    failed.after = first.next;
    let rest = store.lapses_page(&t, &failed).await.expect("rest");
    assert!(rest.entries.is_empty());
    assert_eq!(rest.next, None, "500 positions left, within the budget");
}

/// Rejections kept in items of 100 (several per commit) and of a few: pages of any size
/// answer each once, oldest first, starting in the middle of an item where the last ended.
#[tokio::test]
async fn rejection_pages_cross_items() {
    let store = store().await;
    let t = tenant("tenant-rejections");
    let (booking, billing) = (agent("booking"), agent("billing"));
    let mut kept = Vec::new();
    // 250 in one commit (items of 100, 100, 50), then 3, then 1, then 120 (100 and 20).
    for (from, to, per_commit) in [(0, 250, 250), (250, 253, 3), (253, 254, 1), (254, 374, 120)] {
        kept.extend(grow_rejections(&store, &t, &booking, from, to, per_commit).await);
    }
    grow_rejections(&store, &t, &billing, 0, 5, 5).await;
    assert_eq!(
        store.rejections(&t, &booking).await.expect("all"),
        kept,
        "kept oldest first"
    );
    for limit in [1, 7, 100, 374, 500] {
        let mut got = Vec::new();
        let mut positions = Vec::new();
        let mut after = None;
        let mut pages = 0;
        loop {
            let (page, next) = store
                .rejections_page(&t, &booking, after, limit)
                .await
                .expect("page");
            pages += 1;
            assert!(page.len() <= limit);
            positions.extend(page.iter().map(|(p, _)| *p));
            got.extend(page.into_iter().map(|(_, r)| r));
            match next {
                Some(n) => after = Some(n),
                None => break,
            }
            assert!(pages <= 400, "next never ends");
        }
        assert_eq!(got, kept, "pages of {limit}: each rejection once, in order");
        assert!(
            positions.windows(2).all(|w| w[0] < w[1]),
            "positions ascend"
        );
        assert_eq!(pages, kept.len().div_ceil(limit).max(1), "pages of {limit}");
    }
    let (other, next) = store
        .rejections_page(&t, &billing, None, 10)
        .await
        .expect("billing");
    assert_eq!(other.len(), 5);
    assert_eq!(next, None);
    let (none, next) = store
        .rejections_page(&tenant("tenant-none"), &booking, None, 10)
        .await
        .expect("none");
    assert!(none.is_empty() && next.is_none());
}

/// Lapse tasks written before the `lapses-*` indexes (no `lapsesTenant`, `lapsesAgent`) are
/// not in the pages; the next update of one writes them, and it is back at its place (its
/// `seq`); `backfill_lapse_indexes` writes them on the others, once.
#[tokio::test]
async fn lapse_tasks_written_before_the_indexes_enter_them_when_updated_or_backfilled() {
    let store = store().await;
    let t = tenant("tenant-old");
    grow_outbox(&store, &t, 0, 5).await;
    let old = entry(&t, 2);
    for i in [2, 3] {
        let o = entry(&t, i);
        let sk = format!("{}#{}", o.agent, o.message_id);
        // Its partition: the shard of `OUTBOX#tenant-old` it was written to.
        let found = store
            .client()
            .scan()
            .table_name(store.table())
            .filter_expression("sk = :sk AND tenant = :t")
            .expression_attribute_values(":sk", AttributeValue::S(sk.clone()))
            .expression_attribute_values(":t", AttributeValue::S("tenant-old".into()))
            .send()
            .await
            .expect("find the lapse task");
        let pk = found.items.unwrap_or_default()[0]["pk"].clone();
        store
            .client()
            .update_item()
            .table_name(store.table())
            .key("pk", pk)
            .key("sk", AttributeValue::S(sk))
            .update_expression("REMOVE lapsesTenant, lapsesAgent")
            .condition_expression("attribute_exists(pk)")
            .send()
            .await
            .expect("make it an entry of before the indexes");
    }
    let ids = |q: LapseQuery| {
        let store = store.clone();
        let t = t.clone();
        async move {
            let page = store.lapses_page(&t, &q).await.expect("page");
            page.entries
                .into_iter()
                .map(|(_, o)| o.message_id)
                .collect::<Vec<_>>()
        }
    };
    let all = LapseQuery {
        limit: 10,
        ..LapseQuery::default()
    };
    let booking_only = LapseQuery {
        agent: Some(agent("booking")),
        ..all.clone()
    };
    let expected = |skip: &[usize], step: usize| -> Vec<String> {
        (0..5)
            .step_by(step)
            .filter(|i| !skip.contains(i))
            .map(|i| entry(&t, i).message_id)
            .collect()
    };
    assert_eq!(ids(all.clone()).await, expected(&[2, 3], 1));
    assert_eq!(ids(booking_only.clone()).await, expected(&[2], 2));
    assert_eq!(
        store.lapses(&t).await.expect("lapses").len(),
        5,
        "still in the table"
    );

    let mut sent = old.clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    store.outbox_update(&sent).await.expect("update");
    assert_eq!(
        ids(all.clone()).await,
        expected(&[3], 1),
        "back at its place"
    );
    assert_eq!(ids(booking_only).await, expected(&[], 2));

    assert_eq!(store.backfill_lapse_indexes().await.expect("backfill"), 1);
    assert_eq!(
        ids(all).await,
        expected(&[], 1),
        "every lapse task, in order"
    );
    assert_eq!(
        store.backfill_lapse_indexes().await.expect("again"),
        0,
        "nothing left to backfill"
    );
}

/// All of an agent's rejections, page after page of `limit`, with their positions.
async fn every_page(
    store: &DynamoStore,
    t: &Tenant,
    who: &AgentId,
    limit: usize,
) -> Vec<(u64, Rejection)> {
    let mut got = Vec::new();
    let mut after = None;
    for _ in 0..1000 {
        let (page, next) = store
            .rejections_page(t, who, after, limit)
            .await
            .expect("page");
        assert!(page.len() <= limit);
        got.extend(page);
        match next {
            Some(n) => after = Some(n),
            None => return got,
        }
    }
    panic!("next never ends");
}

/// Two function instances keep rejections for one agent at the same microsecond: their items'
/// positions (the time-ordered ids each reserved) interleave, and pages of any size still answer
/// each rejection once, in position order, as `rejections` does. No counter item is written.
#[tokio::test]
async fn rejections_of_two_instances_at_one_moment_interleave_and_page_once() {
    use std::sync::Arc;
    use watcher_runtime::clock::FakeClock;

    let store = store().await;
    let clock = Arc::new(FakeClock::new(at(0)));
    let (a, b) = two_instances(&store, &clock);
    let t = tenant("tenant-two");
    let booking = agent("booking");
    let mut kept = Vec::new();
    kept.extend(grow_rejections(&a, &t, &booking, 0, 3, 3).await);
    kept.extend(grow_rejections(&b, &t, &booking, 3, 6, 3).await);
    kept.extend(grow_rejections(&a, &t, &booking, 6, 130, 124).await);
    kept.extend(grow_rejections(&b, &t, &booking, 130, 140, 1).await);
    let all = store.rejections(&t, &booking).await.expect("all");
    assert_eq!(all.len(), kept.len());
    // Same microseconds, instance 1 before instance 2: a0 b3 a1 b4 a2 b5 …
    let first: Vec<String> = all[..6].iter().map(|r| r.reason.clone()).collect();
    assert_eq!(
        first,
        ["reason 0", "reason 3", "reason 1", "reason 4", "reason 2", "reason 5"]
    );
    for limit in [1, 2, 5, 100, 200] {
        let pages = every_page(&store, &t, &booking, limit).await;
        assert!(
            pages.windows(2).all(|w| w[0].0 < w[1].0),
            "positions ascend"
        );
        let got: Vec<Rejection> = pages.into_iter().map(|(_, r)| r).collect();
        assert_eq!(
            got, all,
            "pages of {limit}: each once, in the order of `rejections`"
        );
    }
}

/// Rejections items written by the previous version (sort key: the row counter's number, a
/// position `row × 1,000 + place`) come before the ones written since, and pages cross from
/// the first kind to the second.
#[tokio::test]
async fn rejections_kept_by_the_counting_version_come_first_and_page_on() {
    let store = store().await;
    let t = tenant("tenant-upgraded");
    let booking = agent("booking");
    let old: Vec<Rejection> = (0..5).map(|i| rejection(&booking, i, at(1))).collect();
    for (row, chunk) in [(7u64, &old[..3]), (9, &old[3..])] {
        store
            .client()
            .put_item()
            .table_name(store.table())
            .item("pk", AttributeValue::S(format!("REJECT#{t}#{booking}")))
            .item("sk", AttributeValue::S(format!("{row:020}")))
            .item("kind", AttributeValue::S("rejections".into()))
            .item("tenant", AttributeValue::S(t.to_string()))
            .item(
                "rejections",
                AttributeValue::S(serde_json::to_string(chunk).expect("json")),
            )
            .send()
            .await
            .expect("an item of the previous version");
    }
    let new = grow_rejections(&store, &t, &booking, 5, 9, 2).await;
    let kept: Vec<Rejection> = old.iter().cloned().chain(new).collect();
    assert_eq!(store.rejections(&t, &booking).await.expect("all"), kept);
    for limit in [1, 2, 4, 20] {
        let got: Vec<Rejection> = every_page(&store, &t, &booking, limit)
            .await
            .into_iter()
            .map(|(_, r)| r)
            .collect();
        assert_eq!(got, kept, "pages of {limit}");
    }
    let (page, _) = store
        .rejections_page(&t, &booking, None, 4)
        .await
        .expect("page");
    assert_eq!(page[2].0, 7002, "the old items keep their positions");
}
