//! Unit tests of [`super`] (keys.rs).

use super::*;
use std::collections::BTreeSet;

fn instant(text: &str) -> Instant {
    Instant::parse(text).unwrap()
}

#[test]
fn components_are_escaped() {
    let t = Tenant::parse("a#b").unwrap();
    let s = Subject::parse("ship%ment", "PA#1").unwrap();
    assert_eq!(subject_pk(&t, &s), "SUBJECT#a%23b#ship%25ment#PA%231");
    let t2 = Tenant::parse("a").unwrap();
    let s2 = Subject::parse("b#ship%ment", "PA#1").unwrap();
    assert_ne!(subject_pk(&t, &s), subject_pk(&t2, &s2));
    assert_eq!(fact_sk(&s), "ship%25ment#PA%231");
    let booking = AgentId::parse("booking").unwrap();
    assert_eq!(outbox_sk(&booking, "lapse:e#1"), "booking#lapse:e%231");
    let other = AgentId::parse("other").unwrap();
    assert_ne!(
        outbox_sk(&booking, "lapse:e#1"),
        outbox_sk(&other, "lapse:e#1"),
        "two agents' lapse tasks with one messageId are two items"
    );
    let (a, b) = (AgentId::parse("a#b").unwrap(), AgentId::parse("a").unwrap());
    assert_ne!(outbox_sk(&a, "m"), outbox_sk(&b, "b#m"));
}

#[test]
fn long_keys_are_hashed_within_limits() {
    let long = "x".repeat(512);
    let t = Tenant::parse(long.replace('x', "#")).unwrap();
    let s = Subject::parse(&long, &long).unwrap();
    let pk = subject_pk(&t, &s);
    assert!(pk.starts_with("SUBJECT#%sha256:"), "{pk}");
    assert!(pk.len() <= MAX_PARTITION_KEY);
    assert_eq!(pk, subject_pk(&t, &s), "hashing is deterministic");
    let sk = fact_sk(&s);
    assert!(
        sk.starts_with("%sha256:") && sk.len() <= MAX_SORT_KEY,
        "{sk}"
    );
}

#[test]
fn rejection_positions_keep_the_order_of_items_and_places() {
    let list = [(1, 0), (1, 1), (1, 99), (2, 0), (10, 5), (11, 0)];
    let positions: Vec<u64> = list
        .iter()
        .map(|(row, i)| rejection_position(*row, *i).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    for ((row, i), p) in list.iter().zip(&positions) {
        assert_eq!(rejection_row(*p), (*row, *i as u64));
    }
    assert_eq!(rejection_position(1, 1000), None, "a place past the stride");
    assert_eq!(rejection_position(u64::MAX / 10, 0), None, "a row past u64");
    assert_eq!(row_of(&row_sk(42)), Ok(42));
    assert!(row_of("00042").is_err() && row_of("0000000000000000004x").is_err());
}

#[test]
fn positions_of_both_kinds_of_rejection_items_keep_their_order() {
    let old = [(1, 0), (1, 99), (7, 3)];
    let first = FIRST_TIME_ORDERED + 5;
    let new = [(first, 0), (first, 1), (first, 99)];
    let positions: Vec<u64> = old
        .iter()
        .chain(&new)
        .map(|(row, i)| position_in_item(*row, *i).unwrap())
        .collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "{positions:?}");
    assert_eq!(position_in_item(first, 2), Some(first + 2 * TICK));
    for (row, i) in old.iter().chain(&new) {
        let p = position_in_item(*row, *i).unwrap();
        assert!(
            first_row_after(p, 100) <= *row,
            "the item of {p} is read again"
        );
    }
    assert_eq!(first_row_after(7003, 100), 7);
}

#[test]
fn live_count_shards_are_distinct_partitions_and_shard_0_is_the_old_item() {
    let t = Tenant::parse("t").unwrap();
    let a = AgentId::parse("a").unwrap();
    let keys: BTreeSet<String> = (0..LIVE_COUNT_SHARDS)
        .map(|k| live_count_shard_pk(&t, &a, k))
        .collect();
    assert_eq!(keys.len() as u64, LIVE_COUNT_SHARDS);
    assert_eq!(live_count_shard_pk(&t, &a, 0), "LIVECOUNT#t#a");
    assert_eq!(live_count_shard_pk(&t, &a, 3), "LIVECOUNT#t#a#3");
    let shards: BTreeSet<u64> = (0..200)
        .map(|i| shard_of(&format!("SUBJECT#t#shipment#{i}"), LIVE_COUNT_SHARDS))
        .collect();
    assert_eq!(shards.len() as u64, LIVE_COUNT_SHARDS, "subjects spread");
    assert_eq!(shard_of("x", 16), shard_of("x", 16), "stable");
}

#[test]
fn instant_keys_sort_as_instants() {
    let list = [
        "0001-01-01T00:00:00.000000001Z",
        "1969-12-31T23:59:59.999999999Z",
        "1970-01-01T00:00:00Z",
        "2026-09-10T12:00:00Z",
        "2300-01-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
    ];
    let mut keys: Vec<String> = list.iter().map(|t| instant_key(instant(t))).collect();
    // The first and last instants of the contract's range.
    keys.insert(0, instant_key(Instant::MIN));
    keys.push(instant_key(Instant::MAX));
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    assert!(keys.iter().all(|k| k.len() == 22));
    assert!(keys.iter().all(|k| k.as_str() < AFTER_EVERY_INSTANT));
}

#[test]
fn an_origin_task_goes_to_one_of_the_partitions_a_read_queries() {
    let (t, a) = (
        Tenant::parse("t").unwrap(),
        AgentId::parse("booking").unwrap(),
    );
    let read = origins_partitions(&t, &a);
    assert_eq!(read.len() as u64, INDEX_SHARDS + 1);
    assert_eq!(
        read[0], "ORIGINS#t#booking",
        "an earlier version's partition is read"
    );
    let written: BTreeSet<String> = (0..200)
        .map(|i| origins_partition(&t, &a, &format!("task-{i}")))
        .collect();
    assert!(written.iter().all(|p| read.contains(p)));
    assert_eq!(
        written.len() as u64,
        INDEX_SHARDS,
        "tasks spread over every shard"
    );
    assert!(
        !written.contains(&read[0]),
        "nothing is written to the earlier partition"
    );
}

/// The `timers` index spreads over 64 shards, and a read queries every value an earlier version
/// wrote: its sixteen shards (`timers#{k}` with `k` the key's shard of 16) and its one unsharded
/// value.
#[test]
fn the_timers_index_reads_every_shard_an_earlier_version_wrote() {
    let timers = timers_partitions();
    assert_eq!(timers.len() as u64, DUE_SHARDS + 1);
    assert_eq!(timers[0].as_str(), "timers");
    let mut written = BTreeSet::new();
    for i in 0..2000 {
        let pk = format!("SUBJECT#t#shipment#{i}");
        let earlier = format!("timers#{}", shard_of(&pk, 16));
        assert!(timers.contains(&earlier), "{earlier}");
        assert!(timers.contains(&timers_partition(&pk)));
        written.insert(timers_partition(&pk));
    }
    assert_eq!(written.len() as u64, DUE_SHARDS, "subjects use every shard");
    assert!(!written.contains("timers"));
}

#[test]
fn due_keys_sort_in_firing_order() {
    let t = instant("2026-09-10T12:00:00Z");
    let later = instant("2026-09-10T12:00:01Z");
    let o = |input, index| RaiseOrder { input, index };
    let keys = [
        due_key(t, o(1, 0), TimerKind::Deadline),
        due_key(t, o(1, 0), TimerKind::Horizon),
        due_key(t, o(1, 1), TimerKind::Deadline),
        due_key(t, o(2, 0), TimerKind::Deadline),
        due_key(t, o(10, 0), TimerKind::Deadline),
        due_key(later, o(0, 0), TimerKind::Deadline),
    ];
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "{keys:?}");
    assert!(keys[..5]
        .iter()
        .all(|k| k.as_str() < due_key_bound(t).as_str()));
    assert!(keys[5].as_str() > due_key_bound(t).as_str());
}

/// Each lapse task is in exactly one `outbox-incident` partition of its agent: `OPEN#` at its
/// `lapsedAt` while unresolved, `RESOLVED#` at its resolution's instant once resolved.
#[test]
fn incident_keys_follow_the_resolution() {
    use watcher_runtime::resolution::{Resolution, ResolutionReason};
    let tenant = Tenant::parse("t#1").unwrap();
    let agent = AgentId::parse("booking").unwrap();
    let lapsed = instant("2026-09-10T12:11:00Z");
    let mut entry = OutboxEntry::queued(
        tenant.clone(),
        agent.clone(),
        "lapse:e:overdue:2026-09-10T12:10:00Z".into(),
        ExpectationId::parse("e").unwrap(),
        watcher_core::record::LapseKind::Overdue,
        lapsed,
        serde_json::json!({}),
    );
    assert_eq!(
        incident_keys(&entry),
        ("OPEN#t%231#booking".to_owned(), instant_key(lapsed))
    );
    let at = instant("2026-09-10T12:30:00Z");
    entry.resolved = Some(Resolution {
        at,
        reason: ResolutionReason::Fact,
    });
    assert_eq!(
        incident_keys(&entry),
        ("RESOLVED#t%231#booking".to_owned(), instant_key(at))
    );
    assert_ne!(open_agent(&tenant, &agent), resolved_agent(&tenant, &agent));
    let other = AgentId::parse("other").unwrap();
    assert_ne!(
        open_agent(&tenant, &agent),
        open_agent(&tenant, &other),
        "one partition per (tenant, agent), never tenant-wide"
    );
}
