//! The §13.2 live count of an agent: its counter shards, and the exact count from the `live` index
//! near the bound; the counter update a commit carries.

use super::*;

impl DynamoStore {
    /// Records of `agent` that can still lapse at `now`: the agent's live-row counter (rows
    /// with a `liveUntil`, kept in the commit that writes them) less the rows of the `live`
    /// index whose `liveUntil` is before `now` (records whose last chance to lapse passed and
    /// that no commit has closed yet: deadlines not yet fired). The cost follows that small
    /// range, not the agent's open expectations (issue 10, item 1).
    ///
    /// With `enough` (the scope's [`Scope::live_enough`]), the counter alone answers when it is
    /// at most `enough`: it is at least the live count, and the engine decides its bound the
    /// same with it. One `BatchGetItem`, none of the 16 `live` queries, unless the agent is
    /// within what the input may raise of its bound.
    pub(crate) async fn count_live(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        now: Instant,
        enough: Option<u64>,
    ) -> Result<u64, StoreError> {
        let what = format!("live-row counter of agent {agent} of tenant {tenant}");
        let mut rows = 0i64;
        let keys: Vec<Item> = (0..LIVE_COUNT_SHARDS)
            .map(|k| {
                HashMap::from([
                    (PK.to_owned(), s(live_count_shard_pk(tenant, agent, k))),
                    (SK.to_owned(), s(ITEM)),
                ])
            })
            .collect();
        let mut request = Some(
            KeysAndAttributes::builder()
                .set_keys(Some(keys))
                .consistent_read(true)
                .projection_expression("#v")
                .expression_attribute_names("#v", VALUE)
                .build()
                .map_err(StoreError::backend)?,
        );
        // A batch may leave keys unprocessed (throttling); ask again for those.
        while let Some(keys) = request.take() {
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, keys)
                .send()
                .await
                .map_err(StoreError::backend)?;
            for item in out
                .responses
                .unwrap_or_default()
                .remove(&self.table)
                .unwrap_or_default()
            {
                self.count(1u64);
                rows += get_i64(&item, VALUE, &what)?;
            }
            request = out
                .unprocessed_keys
                .unwrap_or_default()
                .remove(&self.table)
                .filter(|k| !k.keys.is_empty());
        }
        if let Some(enough) = enough {
            let counter = u64::try_from(rows).unwrap_or(0);
            if counter <= enough {
                return Ok(counter);
            }
        }
        // The rows already past, in each of the agent's `live` partitions at once.
        let expired = each(live_agent_partitions(tenant, agent), |p| async move {
            let mut expired = 0i64;
            let mut start = None;
            loop {
                let query = self
                    .index_query(LIVE_INDEX, (LIVE_AGENT, p.clone()))
                    .key_condition_expression("#p = :p AND #u < :now")
                    .expression_attribute_names("#u", LIVE_UNTIL)
                    .expression_attribute_values(":now", s(instant_key(now)))
                    .select(Select::Count)
                    .set_exclusive_start_key(start);
                let page = self.query_page(query).await?;
                expired += i64::from(page.count);
                start = page.next;
                if start.is_none() {
                    return Ok(expired);
                }
            }
        })
        .await?
        .into_iter()
        .sum::<i64>();
        // The index lags the table (eventually consistent): never below zero.
        Ok(u64::try_from(rows - expired).unwrap_or(0))
    }

    /// The update adding `delta` to shard `shard` of the live-row counter of `agent` of
    /// `tenant`, for the commit that changes as many of its rows.
    pub(crate) fn live_count_update(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        shard: u64,
        delta: i64,
    ) -> Result<TransactWriteItem, StoreError> {
        let update = Update::builder()
            .table_name(&self.table)
            .key(PK, s(live_count_shard_pk(tenant, agent, shard)))
            .key(SK, s(ITEM))
            .update_expression("SET #k = :kind, #t = :t ADD #v :d")
            .expression_attribute_names("#k", KIND)
            .expression_attribute_names("#t", TENANT)
            .expression_attribute_names("#v", VALUE)
            .expression_attribute_values(":kind", s("live-count"))
            .expression_attribute_values(":t", s(tenant.as_str()))
            .expression_attribute_values(":d", n(delta))
            .build()
            .map_err(StoreError::backend)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }
}
