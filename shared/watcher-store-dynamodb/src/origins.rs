//! The origin tasks followed with `GetTask` (`Origins::origin_follow` and its siblings): one item
//! per followed task (`ORIGIN#{tenant}#{agent}#{taskId}`, sort key `#`), carrying `followAgent`
//! = `ORIGINS#{tenant}#{agent}` and `followAt` (its next poll), so the sparse `outbox-follow`
//! index holds it in a partition of its own: a pass queries what is due and reads nothing else.
//! Stopping removes those two attributes (the item leaves the index and expires by its TTL);
//! a stopped task may be followed again.

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_runtime::origins::{FollowedOrigin, OriginKey};
use watcher_runtime::store::Origins;
use watcher_runtime::store::StoreError;

use crate::codec::{expires_at, get_s, n, s, Item};
use crate::error::landed;
use crate::keys::{instant_key, origin_pk, origins_partition, origins_partitions, ITEM};
use crate::table::{
    EXPIRES_AT, FOLLOW_AGENT, FOLLOW_AT, KIND, OUTBOX_FOLLOW_INDEX, PK, SK, TENANT,
};
use crate::{each, DynamoStore};

fn origin_of(item: &Item) -> Result<FollowedOrigin, StoreError> {
    let what = "followed origin task";
    let instant = |name: &str| {
        Instant::parse(get_s(item, name, what)?)
            .map_err(|e| StoreError::Corrupt(format!("{what}: {name}: {e}")))
    };
    Ok(FollowedOrigin {
        tenant: Tenant::parse(get_s(item, TENANT, what)?)
            .map_err(|e| StoreError::Corrupt(format!("{what}: tenant: {e}")))?,
        agent: AgentId::parse(get_s(item, "agent", what)?)
            .map_err(|e| StoreError::Corrupt(format!("{what}: agent: {e}")))?,
        task_id: get_s(item, "taskId", what)?.to_owned(),
        since: instant("since")?,
        next_at: instant("nextAt")?,
    })
}

/// An update of the item of the followed origin `key`, for the caller to finish.
fn origin_update(store: &DynamoStore, key: &OriginKey) -> UpdateItemFluentBuilder {
    store
        .client
        .update_item()
        .table_name(&store.table)
        .key(PK, s(origin_pk(&key.0, &key.1, &key.2)))
        .key(SK, s(ITEM))
}

// The [`Origins`](watcher_runtime::store::Origins) capability of the store port, on DynamoDB.
#[async_trait]
impl Origins for DynamoStore {
    async fn origin_follow(&self, origin: &FollowedOrigin) -> Result<bool, StoreError> {
        self.count(1u64);
        let put = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(
                PK,
                s(origin_pk(&origin.tenant, &origin.agent, &origin.task_id)),
            )
            .item(SK, s(ITEM))
            .item(KIND, s("origin"))
            .item(TENANT, s(origin.tenant.as_str()))
            .item("agent", s(origin.agent.as_str()))
            .item("taskId", s(origin.task_id.clone()))
            .item("since", s(origin.since.to_string()))
            .item("nextAt", s(origin.next_at.to_string()))
            .item(
                FOLLOW_AGENT,
                s(origins_partition(
                    &origin.tenant,
                    &origin.agent,
                    &origin.task_id,
                )),
            )
            .item(FOLLOW_AT, s(instant_key(origin.next_at)));
        // Forgotten by TTL `retention_days` after following began (long past any
        // give_up_after: an agent no longer configured), like the store's other items.
        let put = match self.retention_days {
            0 => put,
            days => put.item(EXPIRES_AT, n(expires_at(origin.since, days))),
        };
        let result = put
            // Absent, or stopped (kept until its TTL without the index attributes).
            .condition_expression("attribute_not_exists(#pk) OR attribute_not_exists(#fa)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#fa", FOLLOW_AGENT)
            .send()
            .await;
        landed(result)
    }

    async fn origins_due(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        due_by: Instant,
        limit: usize,
    ) -> Result<Vec<FollowedOrigin>, StoreError> {
        let what = "outbox-follow index entry";
        // Each shard's earliest `limit` entries; the earliest `limit` of them all are then the
        // agent's earliest.
        let per_partition = each(origins_partitions(tenant, agent), |partition| async move {
            self.query_at_least(
                limit,
                || {
                    self.index_until(
                        OUTBOX_FOLLOW_INDEX,
                        (FOLLOW_AGENT, partition.clone()),
                        FOLLOW_AT,
                        instant_key(due_by),
                        limit,
                    )
                },
                |item| {
                    Ok((
                        get_s(&item, FOLLOW_AT, what)?.to_owned(),
                        get_s(&item, PK, what)?.to_owned(),
                    ))
                },
            )
            .await
        })
        .await?;
        let mut entries: Vec<(String, String)> = per_partition.into_iter().flatten().collect();
        entries.sort();
        let mut keys: Vec<String> = entries.into_iter().map(|(_, pk)| pk).collect();
        keys.truncate(limit);
        let found = each(keys, |pk| async move {
            self.get(pk, ITEM)
                .await?
                .as_ref()
                .map(origin_of)
                .transpose()
        })
        .await?;
        // The index is eventually consistent: the item read is the truth.
        let mut due: Vec<FollowedOrigin> = found
            .into_iter()
            .flatten()
            .filter(|o| o.next_at <= due_by)
            .collect();
        due.sort_by(|a, b| (a.next_at, &a.task_id).cmp(&(b.next_at, &b.task_id)));
        Ok(due)
    }

    async fn origin_reschedule(&self, key: &OriginKey, at: Instant) -> Result<(), StoreError> {
        self.count(1u64);
        let result = origin_update(self, key)
            .update_expression("SET #n = :n, #f = :f")
            .condition_expression("attribute_exists(#fa)")
            .expression_attribute_names("#fa", FOLLOW_AGENT)
            .expression_attribute_names("#n", "nextAt")
            .expression_attribute_names("#f", FOLLOW_AT)
            .expression_attribute_values(":n", s(at.to_string()))
            .expression_attribute_values(":f", s(instant_key(at)))
            .send()
            .await;
        // Not followed (or gone): nothing to do.
        landed(result).map(|_| ())
    }

    /// Takes the item out of the index (removes `followAgent` and `followAt`); the item itself
    /// expires by its TTL, as every item of this store does (the functions' role has no
    /// `DeleteItem`). Nothing when it does not exist.
    async fn origin_stop(&self, key: &OriginKey) -> Result<(), StoreError> {
        self.count(1u64);
        let result = origin_update(self, key)
            .update_expression("REMOVE #fa, #f")
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#fa", FOLLOW_AGENT)
            .expression_attribute_names("#f", FOLLOW_AT)
            .send()
            .await;
        // Not followed (or gone): nothing to do.
        landed(result).map(|_| ())
    }
}
