//! Primary keys and sort-key values of the single table (docs/dynamodb.md, "Items").
//!
//! Every key is a prefix naming the item type followed by `#`-separated components. Components
//! are escaped (`%` → `%25`, `#` → `%23`), so a component never contains a raw `#` and two
//! different tuples never give the same key. A key longer than DynamoDB allows (2048 bytes for
//! a partition key, 1024 for a sort key; identifiers may be 512 bytes each) is replaced by
//! `{prefix}#%sha256:{hex}` of the full key: `%s` never occurs in an escaped component, so a
//! hashed key never equals a natural one. Nothing reads a key back but a rejections item's
//! [`row_sk`] (a plain number, never hashed: [`row_of`]); every other item carries its
//! identifiers as attributes.

use sha2::{Digest, Sha256};
use watcher_core::engine::TimerKind;
use watcher_core::ids::{AgentId, ExpectationId, FactKey, Subject, TaskRef, Tenant};
use watcher_core::record::RaiseOrder;
use watcher_core::time::Instant;
use watcher_runtime::sequence::{FIRST_TIME_ORDERED, TICK};
use watcher_runtime::store::OutboxEntry;

/// Largest partition key DynamoDB accepts, in bytes.
const MAX_PARTITION_KEY: usize = 2048;
/// Largest sort key DynamoDB accepts, in bytes.
const MAX_SORT_KEY: usize = 1024;

/// Added to an instant's nanoseconds since the Unix epoch so that every instant (years
/// 1..=9999, about -6.2 × 10^19 to 2.6 × 10^20 ns) becomes a positive number below 10^22.
const INSTANT_OFFSET: i128 = 1_000_000_000_000_000_000_000;

/// A sort-key value above the [`instant_key`] of every instant: "live indefinitely" (a record
/// waiting on its anchor) in the `live` index.
pub(crate) const AFTER_EVERY_INSTANT: &str = "9999999999999999999999";

/// The sort key of every single-item partition (subjects, tasks, expectation rows, counters).
pub(crate) const ITEM: &str = "#";

/// The partition key of the health row (`Upkeep::probe_write`), beside the counters an earlier
/// version kept there (`raise`, `rows`: no longer read or written).
pub(crate) const COUNTER_PK: &str = "COUNTER";

/// The partition value of the `timers` index written by an earlier version (one partition for
/// every subject); read still, never written ([`timers_partitions`]).
pub(crate) const TIMERS_PARTITION: &str = "timers";

/// Shards of the `live` index (an agent's `LIVE#{tenant}#{agent}#{k}`), of a tenant's lapse
/// tasks (`OUTBOX#{tenant}#{k}`, `LAPSES#…#{k}`) and of an agent's followed origin tasks
/// (`ORIGINS#…#{k}`): each item goes to the shard of its key ([`shard_of`]), and a read queries
/// every shard and merges them in order. Sixteen, and fixed: a keyed read of a lapse task looks
/// in its one shard, and every raise counts the `live` index over all of the agent's shards, so
/// a larger number would cost each raise more queries (docs/dynamodb.md "Partitions and their
/// ceilings").
pub(crate) const INDEX_SHARDS: u64 = 16;

/// Shards of the `timers` index (`timers#{k}`), which every subject whose timers change writes,
/// over all tenants. At the goal (10,000 raises and 10,000 facts a second, each arming, moving or
/// ending a timer) `timers` takes about 20,000 index writes a second, over the 16,000 that
/// sixteen partitions of 1,000 write units allow; 64 shards allow 64,000 (32,000 commits a
/// second whose index entry is 1–2 KB). Only the sweep queries them all (65 queries, with the
/// earlier version's one value), never a request. (The `outbox-due` index of earlier versions,
/// sharded the same way, is gone: each agent's lane reads `outbox-agent`.)
///
/// Raising the number needs no migration: an item written under a smaller number is in a shard
/// below it (`timers#{k}`, `k` < 16, for the sixteen of an earlier version), which every read
/// still queries, and it moves to its shard here when next written. Lowering it would leave
/// items in shards no read queries.
pub(crate) const DUE_SHARDS: u64 = 64;

/// `timers#{k}`: the `timers` index partition of the subject whose key is `subject_pk`, `k` its
/// shard of [`DUE_SHARDS`].
pub(crate) fn timers_partition(subject_pk: &str) -> String {
    format!("{TIMERS_PARTITION}#{}", shard_of(subject_pk, DUE_SHARDS))
}

/// Every partition value of the `timers` index a read queries: the [`DUE_SHARDS`] shards (which
/// include the sixteen of an earlier version) and the one value of a version before that (a
/// subject written under either moves to its shard when next written).
pub(crate) fn timers_partitions() -> Vec<String> {
    std::iter::once(TIMERS_PARTITION.to_owned())
        .chain((0..DUE_SHARDS).map(|k| format!("{TIMERS_PARTITION}#{k}")))
        .collect()
}

fn escape(component: &str) -> String {
    let mut out = String::with_capacity(component.len());
    for c in component.chars() {
        match c {
            '%' => out.push_str("%25"),
            '#' => out.push_str("%23"),
            c => out.push(c),
        }
    }
    out
}

fn join(prefix: &str, components: &[&str], max: usize) -> String {
    let mut key = String::from(prefix);
    for c in components {
        key.push('#');
        key.push_str(&escape(c));
    }
    if key.len() <= max {
        return key;
    }
    let digest = Sha256::digest(key.as_bytes());
    let mut hex = String::with_capacity(64);
    for b in digest {
        hex.push_str(&format!("{b:02x}"));
    }
    format!("{prefix}#%sha256:{hex}")
}

/// `SUBJECT#{tenant}#{type}#{id}`.
pub(crate) fn subject_pk(tenant: &Tenant, subject: &Subject) -> String {
    join(
        "SUBJECT",
        &[tenant.as_str(), &subject.subject_type, &subject.id],
        MAX_PARTITION_KEY,
    )
}

/// `TASK#{tenant}#{agent}#{taskId}`.
pub(crate) fn task_pk(tenant: &Tenant, task: &TaskRef) -> String {
    join(
        "TASK",
        &[tenant.as_str(), task.agent.as_str(), task.task_id.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `FACT#{tenant}#{factKey}`: the fact-key index partition, one row per subject.
pub(crate) fn fact_pk(tenant: &Tenant, key: &FactKey) -> String {
    join("FACT", &[tenant.as_str(), key.as_str()], MAX_PARTITION_KEY)
}

/// `{type}#{id}`: a subject's row in a fact-key partition.
pub(crate) fn fact_sk(subject: &Subject) -> String {
    // The prefix is empty: the sort key is only ever compared within its partition.
    let key = join("", &[&subject.subject_type, &subject.id], MAX_SORT_KEY);
    key.trim_start_matches('#').to_owned()
}

/// `EXP#{tenant}#{agent}#{expectationId}`: the id-index row.
pub(crate) fn expectation_pk(tenant: &Tenant, agent: &AgentId, id: &ExpectationId) -> String {
    join(
        "EXP",
        &[tenant.as_str(), agent.as_str(), id.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `LIVE#{tenant}#{agent}`: the one partition of the agent in the `live` index written by an
/// earlier version (read still: [`live_agent_partitions`]).
pub(crate) fn live_agent(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "LIVE",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `LIVE#{tenant}#{agent}#{k}`: the `live` index partition of the agent's expectation rows on
/// the subject whose key is `subject_pk`, `k` its shard ([`shard_of`], [`INDEX_SHARDS`]).
pub(crate) fn live_agent_shard(tenant: &Tenant, agent: &AgentId, subject_pk: &str) -> String {
    join(
        "LIVE",
        &[
            tenant.as_str(),
            agent.as_str(),
            &shard_of(subject_pk, INDEX_SHARDS).to_string(),
        ],
        MAX_PARTITION_KEY,
    )
}

/// Every `live` index partition of an agent a count queries: its [`INDEX_SHARDS`] shards and
/// the one value an earlier version wrote ([`live_agent`]; rows written then stay there until
/// their `liveUntil` changes).
pub(crate) fn live_agent_partitions(tenant: &Tenant, agent: &AgentId) -> Vec<String> {
    std::iter::once(live_agent(tenant, agent))
        .chain((0..INDEX_SHARDS).map(|k| {
            join(
                "LIVE",
                &[tenant.as_str(), agent.as_str(), &k.to_string()],
                MAX_PARTITION_KEY,
            )
        }))
        .collect()
}

/// `LIVECOUNT#{tenant}#{agent}`: the partition of an agent's live-row counter (how many of its
/// expectation rows carry a `liveUntil`, kept in the commit that changes them).
pub(crate) fn live_count_pk(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "LIVECOUNT",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// Shards of an agent's live-row counter ([`live_count_shard_pk`]): a commit adds to one, a load
/// reads them all with one `BatchGetItem` (at most 100 keys).
pub(crate) const LIVE_COUNT_SHARDS: u64 = 16;

/// Which of `shards` the string `key` falls in: the first 8 bytes of its SHA-256, modulo
/// `shards` (stable across processes and versions, unlike `std`'s hasher).
pub(crate) fn shard_of(key: &str, shards: u64) -> u64 {
    let digest = Sha256::digest(key.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    u64::from_be_bytes(first) % shards.max(1)
}

/// The partition key of shard `shard` of the live-row counter of `agent` of `tenant`: shard 0 is
/// [`live_count_pk`], the one counter item of an earlier version (so a table written by it keeps
/// its count with no migration); shard `k` > 0 is `LIVECOUNT#{tenant}#{agent}#{k}`, each its own
/// partition. Sort key [`ITEM`].
pub(crate) fn live_count_shard_pk(tenant: &Tenant, agent: &AgentId, shard: u64) -> String {
    if shard == 0 {
        live_count_pk(tenant, agent)
    } else {
        join(
            "LIVECOUNT",
            &[tenant.as_str(), agent.as_str(), &shard.to_string()],
            MAX_PARTITION_KEY,
        )
    }
}

/// `OUTTASK#{tenant}#{agent}#{taskId}`: partition of the `outbox-task` index (the lapse task an
/// agent answered with the A2A Task `taskId`).
pub(crate) fn outbox_task(tenant: &Tenant, agent: &AgentId, task_id: &str) -> String {
    join(
        "OUTTASK",
        &[tenant.as_str(), agent.as_str(), task_id],
        MAX_PARTITION_KEY,
    )
}

/// `AGENT#{tenant}#{agent}#{delivery}`: partition of the `outbox-agent` index (one agent's lapse
/// tasks in one delivery state).
pub(crate) fn agent_delivery(tenant: &Tenant, agent: &AgentId, delivery: &str) -> String {
    join(
        "AGENT",
        &[tenant.as_str(), agent.as_str(), delivery],
        MAX_PARTITION_KEY,
    )
}

/// `PERSON#{tenant}#{agent}`: the `outbox-follow` index partition of the agent's lapse tasks
/// whose task waits for a person (sorted by `needs_person_since`), beside (never in) its
/// `FOLLOW#…` partition: such a task is not followed.
pub(crate) fn person_agent(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "PERSON",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// The `outbox-follow` index keys of `entry`: its `FOLLOW#` partition and next poll while it is
/// followed, else its `PERSON#` partition and since when while its task waits for a person,
/// else none.
pub(crate) fn follow_keys(entry: &OutboxEntry) -> Option<(String, String)> {
    match (entry.follow_at, entry.needs_person_since) {
        (Some(at), _) => Some((follow_agent(&entry.tenant, &entry.agent), instant_key(at))),
        (None, Some(since)) => Some((
            person_agent(&entry.tenant, &entry.agent),
            instant_key(since),
        )),
        (None, None) => None,
    }
}

/// `FOLLOW#{tenant}#{agent}`: partition of the `outbox-follow` index (one agent's followed
/// lapse tasks).
pub(crate) fn follow_agent(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "FOLLOW",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `OPEN#{tenant}#{agent}`: the `outbox-incident` index partition of the agent's lapse tasks
/// whose lapse is not resolved (sorted by `lapsedAt`): the open incidents of
/// [`Lane::Open`](watcher_runtime::store::Lane::Open).
pub(crate) fn open_agent(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "OPEN",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `RESOLVED#{tenant}#{agent}`: the `outbox-incident` index partition of the agent's lapse
/// tasks whose lapse is resolved (sorted by the resolution's instant), beside (never in) its
/// `OPEN#…` partition: [`Lane::Resolved`](watcher_runtime::store::Lane::Resolved).
pub(crate) fn resolved_agent(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "RESOLVED",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// The `outbox-incident` index keys of `entry` (`incidentAgent`, `incidentAt`): its `OPEN#`
/// partition at the instant key of `lapsed_at` while unresolved, its `RESOLVED#` partition at
/// the instant key of the resolution's `at` once resolved. Every lapse task has one or the
/// other, so the two lanes' partitions together hold each of the agent's lapse tasks once.
pub(crate) fn incident_keys(entry: &OutboxEntry) -> (String, String) {
    match &entry.resolved {
        None => (
            open_agent(&entry.tenant, &entry.agent),
            instant_key(entry.lapsed_at),
        ),
        Some(resolution) => (
            resolved_agent(&entry.tenant, &entry.agent),
            instant_key(resolution.at),
        ),
    }
}

/// `ORIGIN#{tenant}#{agent}#{taskId}`: an origin task followed with `GetTask`
/// (`Origins::origin_follow`).
pub(crate) fn origin_pk(tenant: &Tenant, agent: &AgentId, task_id: &str) -> String {
    join(
        "ORIGIN",
        &[tenant.as_str(), agent.as_str(), task_id],
        MAX_PARTITION_KEY,
    )
}

/// `ORIGINS#{tenant}#{agent}`: the partition of the `outbox-follow` index that held one agent's
/// followed origin tasks in an earlier version; read still ([`origins_partitions`]), never
/// written.
fn origins_agent(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "ORIGINS",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `ORIGINS#{tenant}#{agent}#{k}`: the `outbox-follow` index partition of the origin task
/// `task_id`, `k` its shard ([`shard_of`], [`INDEX_SHARDS`]), beside (never in) the agent's
/// `FOLLOW#…` partition of followed lapse tasks. Every push of an agent that starts following
/// writes one of sixteen partitions, not one.
pub(crate) fn origins_partition(tenant: &Tenant, agent: &AgentId, task_id: &str) -> String {
    join(
        "ORIGINS",
        &[
            tenant.as_str(),
            agent.as_str(),
            &shard_of(task_id, INDEX_SHARDS).to_string(),
        ],
        MAX_PARTITION_KEY,
    )
}

/// Every `outbox-follow` partition of an agent's followed origin tasks a read queries: the
/// [`INDEX_SHARDS`] shards and the one value of an earlier version.
pub(crate) fn origins_partitions(tenant: &Tenant, agent: &AgentId) -> Vec<String> {
    std::iter::once(origins_agent(tenant, agent))
        .chain((0..INDEX_SHARDS).map(|k| {
            join(
                "ORIGINS",
                &[tenant.as_str(), agent.as_str(), &k.to_string()],
                MAX_PARTITION_KEY,
            )
        }))
        .collect()
}

/// `LAPSES#{tenant}`: the `lapses-tenant` index partition an earlier version wrote (a tenant's
/// lapse tasks in order of lapse, one partition); read still, never written
/// ([`lapses_tenant_partitions`]).
pub(crate) fn lapses_tenant(tenant: &Tenant) -> String {
    join("LAPSES", &[tenant.as_str()], MAX_PARTITION_KEY)
}

/// `LAPSES#{tenant}#{k}`: the `lapses-tenant` index partition of the lapse task
/// (`agent`, `message_id`), `k` its shard ([`shard_of`] of `{agent}#{messageId}`,
/// [`INDEX_SHARDS`]): a tenant's lapse tasks are written to sixteen partitions, not one, and
/// a page merges them in order of `seq`. (The value has the shape of a [`lapses_agent`] value
/// for an agent named `k`; the two live in different indexes' attributes, so they never meet.)
pub(crate) fn lapses_tenant_shard(tenant: &Tenant, agent: &AgentId, message_id: &str) -> String {
    join(
        "LAPSES",
        &[tenant.as_str(), &lapse_shard(agent, message_id).to_string()],
        MAX_PARTITION_KEY,
    )
}

/// Every `lapses-tenant` partition of a tenant a page reads: the [`INDEX_SHARDS`] shards and
/// the one value an earlier version wrote (its items move to their shard at their next
/// update, and the rest expire with the retention).
pub(crate) fn lapses_tenant_partitions(tenant: &Tenant) -> Vec<String> {
    std::iter::once(lapses_tenant(tenant))
        .chain((0..INDEX_SHARDS).map(|k| {
            join(
                "LAPSES",
                &[tenant.as_str(), &k.to_string()],
                MAX_PARTITION_KEY,
            )
        }))
        .collect()
}

/// `LAPSES#{tenant}#{agent}`: the `lapses-agent` index partition an earlier version wrote
/// (one agent's lapse tasks in order of lapse, `GET /v1/lapses?agent=`); read still, never
/// written ([`lapses_agent_partitions`]).
pub(crate) fn lapses_agent(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "LAPSES",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `LAPSES#{tenant}#{agent}#{k}`: the `lapses-agent` index partition of the lapse task
/// (`agent`, `message_id`), `k` its shard as in [`lapses_tenant_shard`].
pub(crate) fn lapses_agent_shard(tenant: &Tenant, agent: &AgentId, message_id: &str) -> String {
    join(
        "LAPSES",
        &[
            tenant.as_str(),
            agent.as_str(),
            &lapse_shard(agent, message_id).to_string(),
        ],
        MAX_PARTITION_KEY,
    )
}

/// Every `lapses-agent` partition of an agent a page reads: its [`INDEX_SHARDS`] shards and
/// the one value an earlier version wrote.
pub(crate) fn lapses_agent_partitions(tenant: &Tenant, agent: &AgentId) -> Vec<String> {
    std::iter::once(lapses_agent(tenant, agent))
        .chain((0..INDEX_SHARDS).map(|k| {
            join(
                "LAPSES",
                &[tenant.as_str(), agent.as_str(), &k.to_string()],
                MAX_PARTITION_KEY,
            )
        }))
        .collect()
}

/// The shard of the lapse task (`agent`, `message_id`) in the lapse-page indexes.
fn lapse_shard(agent: &AgentId, message_id: &str) -> u64 {
    shard_of(&format!("{agent}#{message_id}"), INDEX_SHARDS)
}

/// `CARD#{tenant}#{agent}`: the last agent card read (serve.md "Agents are independent").
pub(crate) fn agent_card_pk(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "CARD",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `NOTIFY#{tenant}`: the tenant's notification channels, one item each (sort key
/// [`notify_channel_sk`]), so `/ui/notifications` reads them with one query.
pub(crate) fn notify_pk(tenant: &Tenant) -> String {
    join("NOTIFY", &[tenant.as_str()], MAX_PARTITION_KEY)
}

/// `C#{channel}`: a notification channel's item in [`notify_pk`].
pub(crate) fn notify_channel_sk(channel: &str) -> String {
    format!("C#{channel}")
}

/// `LIFECYCLE#{tenant}#{agent}`: the lifecycle probe's descriptors of an agent, one item per
/// protocol version (sort key `V#{protocolVersion}`).
pub(crate) fn lifecycle_pk(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "LIFECYCLE",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `RATE#{tenant}#{agent}` (sort key `#`): the agent's lapse-task rate bucket, shared by every
/// submitter instance (docs/dynamodb.md "Rate buckets").
pub fn rate_pk(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "RATE",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// `OUTBOX#{tenant}#{k}`: the partition of the lapse task (`agent`, `message_id`), `k` its
/// shard of [`INDEX_SHARDS`] as in [`lapses_tenant_shard`]: a tenant's lapse tasks, one row per
/// (agent, `messageId`), spread over sixteen item collections instead of one.
pub(crate) fn outbox_pk(tenant: &Tenant, agent: &AgentId, message_id: &str) -> String {
    join(
        "OUTBOX",
        &[tenant.as_str(), &lapse_shard(agent, message_id).to_string()],
        MAX_PARTITION_KEY,
    )
}

/// `OUTBOX#{tenant}`: the one partition an earlier version wrote a tenant's lapse tasks to;
/// read still (a keyed read that misses the shard looks here), never written to anew. Its
/// items are updated where they are and expire with the retention.
pub(crate) fn legacy_outbox_pk(tenant: &Tenant) -> String {
    join("OUTBOX", &[tenant.as_str()], MAX_PARTITION_KEY)
}

/// Every partition of a tenant's lapse tasks: the earlier version's one and the shards.
pub(crate) fn outbox_partitions(tenant: &Tenant) -> Vec<String> {
    std::iter::once(legacy_outbox_pk(tenant))
        .chain((0..INDEX_SHARDS).map(|k| {
            join(
                "OUTBOX",
                &[tenant.as_str(), &k.to_string()],
                MAX_PARTITION_KEY,
            )
        }))
        .collect()
}

/// `{agent}#{messageId}`, escaped (hashed past 1024 bytes). The agent is part of the key: an
/// outbox entry's identity is (tenant, agent, messageId), since expectation ids (and so
/// `messageId`s) are scoped to the raising agent.
pub(crate) fn outbox_sk(agent: &AgentId, message_id: &str) -> String {
    // The prefix is empty: the sort key is only ever compared within its partition.
    let key = join("", &[agent.as_str(), message_id], MAX_SORT_KEY);
    key.trim_start_matches('#').to_owned()
}

/// `REJECT#{tenant}#{agent}`: refusals reported to an agent, one row per commit and agent.
pub(crate) fn rejections_pk(tenant: &Tenant, agent: &AgentId) -> String {
    join(
        "REJECT",
        &[tenant.as_str(), agent.as_str()],
        MAX_PARTITION_KEY,
    )
}

/// A row number as a sort key: 20 digits, so that string order is number order.
pub(crate) fn row_sk(seq: u64) -> String {
    format!("{seq:020}")
}

/// The row number of a rejections item, read back from its [`row_sk`].
///
/// # Errors
/// The sort key when it is not 20 digits (not written by [`row_sk`]).
pub(crate) fn row_of(sk: &str) -> Result<u64, String> {
    if sk.len() == 20 && sk.bytes().all(|b| b.is_ascii_digit()) {
        sk.parse().map_err(|_| sk.to_owned())
    } else {
        Err(sk.to_owned())
    }
}

/// The position of the `index`-th rejection of a rejections item whose sort key is the row
/// `row` ([`row_sk`]), and the smallest position of that item (`index` 0):
///
/// * an item written by an earlier version, numbered by its row counter (`row` below
///   [`FIRST_TIME_ORDERED`]): `row × REJECTION_STRIDE + index` ([`rejection_position`]);
/// * an item written since, whose row is the first of the time-ordered ids reserved for its
///   rejections (`TimeOrdered::next_block`): `row + index × TICK`, the `index`-th id reserved.
///
/// Every position of the first kind is below every position of the second, and an item's
/// smallest position grows with its row, so items read in row order come in order of their
/// smallest position (their positions may interleave with the next items' of the second kind:
/// `rejections_page` merges them). `None` when the position does not fit a `u64`.
pub(crate) fn position_in_item(row: u64, index: usize) -> Option<u64> {
    if row < FIRST_TIME_ORDERED {
        rejection_position(row, index)
    } else {
        u64::try_from(index)
            .ok()?
            .checked_mul(TICK)?
            .checked_add(row)
    }
}

/// The smallest row whose rejections item may hold a position after `after`
/// ([`position_in_item`]): where a page after `after` starts reading.
pub(crate) fn first_row_after(after: u64, per_item: usize) -> u64 {
    if after < FIRST_TIME_ORDERED {
        rejection_row(after).0
    } else {
        let span = u64::try_from(per_item.saturating_sub(1))
            .unwrap_or(u64::MAX)
            .saturating_mul(TICK);
        after.saturating_sub(span)
    }
}

/// Positions of rejections one item apart (`rejections_page`): a rejection's position is
/// `row × REJECTION_STRIDE + index`, `row` the row number of its item ([`row_sk`]) and `index`
/// its place in the item's list (below `REJECTIONS_PER_ITEM`, at most this). Positions so
/// ordered are ordered as (item, place in the item) is, which is the order rejections were
/// kept in; a position decodes back into both with [`rejection_row`]. A `u64` holds rows up to
/// 1.8 × 10^16, far beyond what the row counter reaches.
pub(crate) const REJECTION_STRIDE: u64 = 1000;

/// The position of the `index`-th rejection of the rejections item numbered `row`; `None` when
/// `row` is too large to number its rejections.
pub(crate) fn rejection_position(row: u64, index: usize) -> Option<u64> {
    let index = u64::try_from(index)
        .ok()
        .filter(|i| *i < REJECTION_STRIDE)?;
    row.checked_mul(REJECTION_STRIDE)?.checked_add(index)
}

/// The item row number and place in the item of a [`rejection_position`].
pub(crate) fn rejection_row(position: u64) -> (u64, u64) {
    (position / REJECTION_STRIDE, position % REJECTION_STRIDE)
}

/// An instant as a string key: `as_nanos() + 10^21`, zero-padded to 22 digits, so that string
/// order is time order for every instant (a number attribute could not hold
/// nanoseconds past the year 2262 exactly, and an agent may raise an expectation due later).
pub(crate) fn instant_key(t: Instant) -> String {
    format!("{:022}", t.as_nanos() + INSTANT_OFFSET)
}

/// The `timers` index sort key of a subject: its earliest timer in firing order
/// (`{instant}#{input}#{index}#{kind}`, deadline `0` before horizon `1`).
pub(crate) fn due_key(at: Instant, order: RaiseOrder, kind: TimerKind) -> String {
    let kind = match kind {
        TimerKind::Deadline => 0,
        TimerKind::Horizon => 1,
    };
    format!(
        "{}#{:020}#{:010}#{kind}",
        instant_key(at),
        order.input,
        order.index
    )
}

/// An upper bound (exclusive) for the [`due_key`]s of timers at or before `until`: `$` sorts
/// right after `#`.
pub(crate) fn due_key_bound(until: Instant) -> String {
    format!("{}$", instant_key(until))
}

#[cfg(test)]
mod tests;
