//! [`Rejections`](watcher_runtime::store::Rejections) on DynamoDB: rejected expectations ([`watcher_runtime::store::Rejections`]).

use super::*;
use watcher_runtime::store::Rejections;

#[async_trait]
impl Rejections for DynamoStore {
    async fn rejections(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
    ) -> Result<Vec<Rejection>, StoreError> {
        let what = format!("rejections of {agent} in tenant {tenant}");
        let mut all = Vec::new();
        for item in self.partition(rejections_pk(tenant, agent)).await? {
            let row = row_of(get_s(&item, SK, &what)?)
                .map_err(|sk| StoreError::Corrupt(format!("{what}: sort key {sk}")))?;
            let list: Vec<Rejection> = from_json(get_s(&item, REJECTIONS, &what)?, &what)?;
            for (i, r) in list.into_iter().enumerate() {
                let position = position_in_item(row, i).ok_or_else(|| {
                    StoreError::Corrupt(format!("{what}: row {row} place {i} has no position"))
                })?;
                all.push((position, r));
            }
        }
        // In the order of `rejections_page`: items two instances wrote at one moment interleave.
        all.sort_by_key(|(p, _)| *p);
        Ok(all.into_iter().map(|(_, r)| r).collect())
    }

    /// A keyset page of the `REJECT#{tenant}#{agent}` partition, strongly consistent: one
    /// `Query` with `sk >= row_sk(first_row_after(after))` and a small `Limit` (2 items, then
    /// twice as many per further request), stopping once `limit` + 1 rejections are found and
    /// the next item can only hold later ones. Positions are `keys::position_in_item`: the
    /// time-ordered ids reserved for the item's rejections (or, for items written by an earlier
    /// version, `row × 1,000 + place in the item`), so a page may start in the middle of an item,
    /// and items written at the same microsecond by two instances interleave: the page is
    /// merged in position order. Reads `limit` + 2 items and a few more where items interleave.
    async fn rejections_page(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        after: Option<u64>,
        limit: usize,
    ) -> Result<(Vec<(u64, Rejection)>, Option<u64>), StoreError> {
        let what = format!("rejections of {agent} in tenant {tenant}");
        let limit = limit.max(1);
        let pk = rejections_pk(tenant, agent);
        let mut found: Vec<(u64, Rejection)> = Vec::new();
        let mut items_per_request = 2usize;
        let mut start = None;
        loop {
            // Every item holds at least one rejection; the first (the item of `after`) may hold
            // none after it.
            let wanted = (limit + 1).saturating_sub(found.len()).max(1);
            let first = usize::from(start.is_none());
            let items = items_per_request.min(wanted + first);
            let mut req = self
                .client
                .query()
                .table_name(&self.table)
                .expression_attribute_names("#pk", PK)
                .expression_attribute_values(":pk", s(pk.clone()))
                .consistent_read(true)
                .limit(i32::try_from(items).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start);
            req = match after {
                Some(after) => req
                    .key_condition_expression("#pk = :pk AND #sk >= :from")
                    .expression_attribute_names("#sk", SK)
                    .expression_attribute_values(
                        ":from",
                        s(row_sk(first_row_after(after, REJECTIONS_PER_ITEM))),
                    ),
                None => req.key_condition_expression("#pk = :pk"),
            };
            let page = self.query_page(req).await?;
            for item in page.items {
                let row = row_of(get_s(&item, SK, &what)?)
                    .map_err(|sk| StoreError::Corrupt(format!("{what}: sort key {sk}")))?;
                // Items come in order of their smallest position: once that is after the
                // (`limit` + 1)-th position found, no later item holds one before it.
                let smallest = position_in_item(row, 0).ok_or_else(|| {
                    StoreError::Corrupt(format!("{what}: row {row} has no position"))
                })?;
                if found.len() > limit {
                    found.sort_by_key(|(p, _)| *p);
                    found.truncate(limit + 1);
                    if found.last().is_some_and(|(p, _)| smallest > *p) {
                        return Ok(cut_page(found, limit));
                    }
                }
                let list: Vec<Rejection> = from_json(get_s(&item, REJECTIONS, &what)?, &what)?;
                for (i, r) in list.into_iter().enumerate() {
                    let position = position_in_item(row, i).ok_or_else(|| {
                        StoreError::Corrupt(format!("{what}: row {row} place {i} has no position"))
                    })?;
                    if after.is_some_and(|a| position <= a) {
                        continue;
                    }
                    found.push((position, r));
                }
            }
            start = page.next;
            if start.is_none() {
                found.sort_by_key(|(p, _)| *p);
                found.truncate(limit + 1);
                return Ok(cut_page(found, limit));
            }
            items_per_request = items_per_request.saturating_mul(2);
        }
    }
}
