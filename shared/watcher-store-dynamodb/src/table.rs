//! The table: attribute names, the eight global secondary indexes, TTL, and [`create_table`]
//! (docs/dynamodb.md, "Table"; the CloudFormation table in `template.yaml` mirrors it).

use std::time::Duration;

use aws_sdk_dynamodb::client::Waiters;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection,
    ProjectionType, ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;
use watcher_runtime::store::StoreError;

/// Partition key (S) of every item.
pub const PK: &str = "pk";
/// Sort key (S) of every item.
pub const SK: &str = "sk";
/// Item type (S): `subject`, `task`, `fact`, `expectation`, `outbox`, `rejections`, `live-count`,
/// `health`, and on tables of an earlier version `counter`.
pub const KIND: &str = "kind";
/// Tenant (S) of subjects, tasks, outbox entries and rejections.
pub const TENANT: &str = "tenant";
/// Compare-and-set version (N) of subjects and tasks.
pub const VERSION: &str = "version";
/// JSON (S) of a `SubjectState` or `TaskRecord`.
pub const STATE: &str = "state";
/// JSON (S) of what a subject contributed to the index rows (fact keys, expectations and their
/// live-until), read before a commit to write only the rows that changed.
pub const INDEXED: &str = "indexed";
/// JSON (S) of a subject's pending timers; projected into the `timers` index.
pub const TIMERS: &str = "timers";
/// Partition key (S) of the `timers` index while the subject has a pending timer: `timers#{k}`,
/// `k` in 0..16 the shard of the subject's key (`timers` on items of an earlier version, still
/// read).
pub const TIMERS_PK: &str = "timersPk";
/// Sort key (S) of the `timers` index: the subject's earliest timer in firing order.
pub const TIMERS_SK: &str = "timersSk";
/// JSON (S) of a `Subject`, on fact-key and expectation rows.
pub const SUBJECT: &str = "subject";
/// Partition key (S) of the `live` index: tenant and agent, while the record can still lapse.
pub const LIVE_AGENT: &str = "liveAgent";
/// Sort key (S) of the `live` index: until when the record can lapse (instant key, or all 9s
/// while it waits on its anchor).
pub const LIVE_UNTIL: &str = "liveUntil";
/// JSON (S) of an `OutboxEntry`.
pub const ENTRY: &str = "entry";
/// Row id (N) of an outbox entry: a time-ordered id (`watcher_runtime::sequence`), its order of
/// lapse; sort key of the `lapses-tenant` and `lapses-agent` indexes.
pub const SEQ: &str = "seq";
/// `queued`, `sent` or `failed` (S), copied from the entry for the conditional update.
pub const DELIVERY: &str = "delivery";
/// The entry's next attempt as an instant key (S): sort key of the `outbox-agent` index.
pub const NEXT_ATTEMPT: &str = "nextAttempt";
/// The partition key (S) of the `outbox-due` index of earlier versions, on their queued entries:
/// no index holds it now, and an entry's next update removes it.
pub const QUEUED: &str = "queued";
/// Partition key (S) of the `outbox-agent` index: tenant, agent and delivery state.
pub const AGENT_DELIVERY: &str = "agentDelivery";
/// Partition key (S) of the `outbox-follow` index: tenant and agent, while the lapse task is
/// followed with `GetTask`.
pub const FOLLOW_AGENT: &str = "followAgent";
/// Sort key (S) of the `outbox-follow` index: the next poll (instant key).
pub const FOLLOW_AT: &str = "followAt";
/// Partition key (S) of the `outbox-incident` index, on every lapse task written or updated
/// since the index exists: `OPEN#{tenant}#{agent}` while its lapse is unresolved,
/// `RESOLVED#{tenant}#{agent}` once resolved (expectations-v1 §13.1; `keys::incident_keys`).
pub const INCIDENT_AGENT: &str = "incidentAgent";
/// Sort key (S) of the `outbox-incident` index: the instant key of the lapse task's `lapsedAt`
/// while it is open, of its resolution's `at` once resolved.
pub const INCIDENT_AT: &str = "incidentAt";
/// JSON (S) of a list of rejections.
pub const REJECTIONS: &str = "rejections";
/// A counter's value (N).
pub const VALUE: &str = "value";
/// TTL attribute (N, epoch seconds): DynamoDB deletes the item some time after it.
pub const EXPIRES_AT: &str = "expiresAt";

/// Index of subjects by earliest pending timer (sparse: only subjects with a timer).
pub const TIMERS_INDEX: &str = "timers";
/// Index of outbox entries by (tenant, agent, delivery state), ordered by next attempt.
pub const OUTBOX_AGENT_INDEX: &str = "outbox-agent";
/// Index of followed outbox entries by (tenant, agent), ordered by next poll (sparse).
pub const OUTBOX_FOLLOW_INDEX: &str = "outbox-follow";
/// Index of expectation rows by agent and live-until (sparse: only records that can lapse).
pub const LIVE_INDEX: &str = "live";
/// Partition key (S) of the `outbox-task` index: tenant, agent and the A2A `taskId` the agent
/// answered a lapse task with (present once the submitter recorded it).
pub const TASK_KEY: &str = "taskKey";
/// Index of lapse tasks by (tenant, agent) and whether their lapse is resolved: the open ones
/// by `lapsedAt` ([`Lane::Open`](watcher_runtime::store::Lane::Open)), the resolved ones by
/// their resolution's instant ([`Lane::Resolved`](watcher_runtime::store::Lane::Resolved));
/// sparse: outbox items only, KEYS_ONLY.
pub const OUTBOX_INCIDENT_INDEX: &str = "outbox-incident";
/// Index of outbox entries by (tenant, agent, taskId) (sparse: only entries answered with a
/// Task), for status updates pushed on that task.
pub const OUTBOX_TASK_INDEX: &str = "outbox-task";

/// Partition key (S) of the `lapses-tenant` index: `LAPSES#{tenant}#{k}`, `k` the lapse
/// task's shard of sixteen, on every lapse task written or updated since the index exists
/// (`LAPSES#{tenant}` on those an earlier version wrote and no update has moved yet).
pub const LAPSES_TENANT: &str = "lapsesTenant";
/// Partition key (S) of the `lapses-agent` index: `LAPSES#{tenant}#{agent}#{k}` (earlier:
/// `LAPSES#{tenant}#{agent}`), on the same items.
pub const LAPSES_AGENT: &str = "lapsesAgent";
/// Index of a tenant's lapse tasks in order of lapse ([`SEQ`]) within each of its partitions,
/// every attribute projected: a page of `GET /v1/lapses` queries the tenant's partitions and
/// merges them (sparse: only outbox items).
pub const LAPSES_TENANT_INDEX: &str = "lapses-tenant";
/// Index of one agent's lapse tasks in order of lapse ([`SEQ`]) within each of its partitions,
/// every attribute projected: a page of `GET /v1/lapses?agent=` (sparse: only outbox items).
pub const LAPSES_AGENT_INDEX: &str = "lapses-agent";

fn key(name: &str, key_type: KeyType) -> Result<KeySchemaElement, StoreError> {
    KeySchemaElement::builder()
        .attribute_name(name)
        .key_type(key_type)
        .build()
        .map_err(crate::error::backend)
}

fn attribute(name: &str, t: ScalarAttributeType) -> Result<AttributeDefinition, StoreError> {
    AttributeDefinition::builder()
        .attribute_name(name)
        .attribute_type(t)
        .build()
        .map_err(crate::error::backend)
}

fn index(
    name: &str,
    hash: &str,
    range: &str,
    projection: Projection,
) -> Result<GlobalSecondaryIndex, StoreError> {
    GlobalSecondaryIndex::builder()
        .index_name(name)
        .key_schema(key(hash, KeyType::Hash)?)
        .key_schema(key(range, KeyType::Range)?)
        .projection(projection)
        .build()
        .map_err(crate::error::backend)
}

/// Creates the watcher's table `table` (on-demand billing, eight GSIs), waits until it is
/// active (at most `wait`), and turns TTL on for [`EXPIRES_AT`]. For tests, local setups and as
/// the reference the CloudFormation template follows (docs/dynamodb.md lists the same).
///
/// # Errors
/// [`StoreError::Backend`] with the SDK error as its source when the table exists already,
/// the caller may not create it, or it does not become active within `wait`.
pub async fn create_table(client: &Client, table: &str, wait: Duration) -> Result<(), StoreError> {
    let s = ScalarAttributeType::S;
    client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute(PK, s.clone())?)
        .attribute_definitions(attribute(SK, s.clone())?)
        .attribute_definitions(attribute(TIMERS_PK, s.clone())?)
        .attribute_definitions(attribute(TIMERS_SK, s.clone())?)
        .attribute_definitions(attribute(SEQ, ScalarAttributeType::N)?)
        .attribute_definitions(attribute(LIVE_AGENT, s.clone())?)
        .attribute_definitions(attribute(AGENT_DELIVERY, s.clone())?)
        .attribute_definitions(attribute(NEXT_ATTEMPT, s.clone())?)
        .attribute_definitions(attribute(FOLLOW_AGENT, s.clone())?)
        .attribute_definitions(attribute(FOLLOW_AT, s.clone())?)
        .attribute_definitions(attribute(TASK_KEY, s.clone())?)
        .attribute_definitions(attribute(LAPSES_TENANT, s.clone())?)
        .attribute_definitions(attribute(LAPSES_AGENT, s.clone())?)
        .attribute_definitions(attribute(INCIDENT_AGENT, s.clone())?)
        .attribute_definitions(attribute(INCIDENT_AT, s.clone())?)
        .attribute_definitions(attribute(LIVE_UNTIL, s)?)
        .key_schema(key(PK, KeyType::Hash)?)
        .key_schema(key(SK, KeyType::Range)?)
        .global_secondary_indexes(index(
            TIMERS_INDEX,
            TIMERS_PK,
            TIMERS_SK,
            Projection::builder()
                .projection_type(ProjectionType::Include)
                .non_key_attributes(TENANT)
                .non_key_attributes(TIMERS)
                .build(),
        )?)
        .global_secondary_indexes(index(
            LIVE_INDEX,
            LIVE_AGENT,
            LIVE_UNTIL,
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )?)
        .global_secondary_indexes(index(
            OUTBOX_AGENT_INDEX,
            AGENT_DELIVERY,
            NEXT_ATTEMPT,
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )?)
        .global_secondary_indexes(index(
            OUTBOX_FOLLOW_INDEX,
            FOLLOW_AGENT,
            FOLLOW_AT,
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )?)
        .global_secondary_indexes(index(
            OUTBOX_TASK_INDEX,
            TASK_KEY,
            SK,
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )?)
        .global_secondary_indexes(index(
            OUTBOX_INCIDENT_INDEX,
            INCIDENT_AGENT,
            INCIDENT_AT,
            Projection::builder()
                .projection_type(ProjectionType::KeysOnly)
                .build(),
        )?)
        .global_secondary_indexes(index(
            LAPSES_TENANT_INDEX,
            LAPSES_TENANT,
            SEQ,
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )?)
        .global_secondary_indexes(index(
            LAPSES_AGENT_INDEX,
            LAPSES_AGENT,
            SEQ,
            Projection::builder()
                .projection_type(ProjectionType::All)
                .build(),
        )?)
        .send()
        .await
        .map_err(crate::error::backend)?;
    client
        .wait_until_table_exists()
        .table_name(table)
        .wait(wait)
        .await
        .map_err(StoreError::backend)?;
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(EXPIRES_AT)
                .build()
                .map_err(crate::error::backend)?,
        )
        .send()
        .await
        .map_err(crate::error::backend)?;
    Ok(())
}
