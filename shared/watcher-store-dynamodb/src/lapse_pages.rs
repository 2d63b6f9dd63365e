//! Keyset pages of lapse tasks over the sharded `lapses-tenant` and `lapses-agent` indexes
//! (`GET /v1/lapses`, the notifier's cursor): each partition of the tenant (or agent) is read in
//! order of `seq`, a chunk at a time, and the partitions are merged, so a page is in order of
//! lapse across them while every lapse task's index writes go to one of sixteen partitions.

use std::collections::VecDeque;

use super::*;
use crate::reads::StartKey;

/// One partition of a lapse-page index, read in order of `seq`.
struct Partition {
    value: String,
    /// Read but not yet merged, in order.
    read: VecDeque<(u64, OutboxEntry)>,
    /// Where the next query starts; `None` with `done` unset: not queried yet.
    start: StartKey,
    /// The partition has nothing left past `read`.
    done: bool,
    /// Items the next query asks for (doubled after each, as the unsharded page did).
    chunk: usize,
}

impl DynamoStore {
    /// The newest lapse-page position of `tenant`: the greatest of each partition's newest
    /// (one item from each of [`lapses_tenant_partitions`], concurrently).
    pub(crate) async fn newest_lapse_position(
        &self,
        tenant: &Tenant,
    ) -> Result<Option<u64>, StoreError> {
        let newest = each(lapses_tenant_partitions(tenant), |p| async move {
            let query = self
                .index_query(LAPSES_TENANT_INDEX, (LAPSES_TENANT, p))
                .key_condition_expression("#p = :p")
                .scan_index_forward(false)
                .limit(1);
            self.query_page(query)
                .await?
                .items
                .first()
                .map(|item| entry_of(item).map(|(seq, _)| seq))
                .transpose()
        })
        .await?;
        Ok(newest.into_iter().flatten().max())
    }

    /// A page of `query` over the partitions of `tenant` (or of `query.agent`), merged in order
    /// of `seq`: the same page the one unsharded partition gave (`delivery` and `since`
    /// filtered here, at most [`lapse_scan_budget`] positions looked at, `next` after the last
    /// position looked at). Each partition is first asked for its share of `limit` + 1 items
    /// (at least 2), and asked again, for twice as many but at most its share of the budget
    /// left, only when the merge needs its next item: what a page reads beyond the positions it
    /// looks at is at most one chunk per partition, whatever the outbox's size.
    pub(crate) async fn merged_lapses_page(
        &self,
        tenant: &Tenant,
        query: &LapseQuery,
    ) -> Result<LapsePage, StoreError> {
        let limit = query.limit.max(1);
        let budget = lapse_scan_budget(limit);
        let (index, attribute, values) = match &query.agent {
            Some(agent) => (
                LAPSES_AGENT_INDEX,
                LAPSES_AGENT,
                lapses_agent_partitions(tenant, agent),
            ),
            None => (
                LAPSES_TENANT_INDEX,
                LAPSES_TENANT,
                lapses_tenant_partitions(tenant),
            ),
        };
        let first_chunk = limit.saturating_add(1).div_ceil(values.len()).max(2);
        let mut partitions: Vec<Partition> = values
            .into_iter()
            .map(|value| Partition {
                value,
                read: VecDeque::new(),
                start: None,
                done: false,
                chunk: first_chunk,
            })
            .collect();
        // Every partition's first chunk, concurrently.
        let firsts = each(
            partitions
                .iter()
                .map(|p| (p.value.clone(), p.chunk))
                .collect(),
            |(value, chunk)| async move {
                self.lapse_chunk(index, attribute, value, query.after, None, chunk, budget)
                    .await
            },
        )
        .await?;
        for (p, (items, start)) in partitions.iter_mut().zip(firsts) {
            p.read.extend(items);
            p.done = start.is_none();
            p.start = start;
            p.chunk = p.chunk.saturating_mul(2);
        }

        let mut page = LapsePage::default();
        let mut looked = 0usize;
        let mut last = None;
        loop {
            // Every partition with more to read shows its next item before the least is taken.
            // A chunk asked for again doubles, but never past this partition's share of the
            // budget left: the merge takes about as much from each.
            let open = partitions.iter().filter(|p| !p.done).count().max(1);
            let share = (budget - looked).div_ceil(open).max(first_chunk);
            for p in partitions.iter_mut() {
                p.chunk = p.chunk.min(share);
                while p.read.is_empty() && !p.done {
                    let (items, start) = self
                        .lapse_chunk(
                            index,
                            attribute,
                            p.value.clone(),
                            query.after,
                            p.start.take(),
                            p.chunk,
                            budget,
                        )
                        .await?;
                    p.read.extend(items);
                    p.done = start.is_none();
                    p.start = start;
                    p.chunk = p.chunk.saturating_mul(2);
                }
            }
            let Some(least) = partitions
                .iter_mut()
                .filter(|p| !p.read.is_empty())
                .min_by_key(|p| p.read.front().map(|(seq, _)| *seq))
            else {
                break;
            };
            let Some((seq, entry)) = least.read.pop_front() else {
                break;
            };
            if entry.tenant == *tenant && query.matches(&entry) {
                if page.entries.len() == limit {
                    // A match after a full page: the next page starts after the page's last
                    // position looked at.
                    page.next = last;
                    break;
                }
                page.entries.push((seq, entry));
            }
            looked += 1;
            last = Some(seq);
            if looked == budget {
                page.next = last;
                break;
            }
        }
        Ok(page)
    }

    /// Up to `items` (at most `budget`) lapse tasks of one index partition past `after`, in
    /// order of `seq`, and where the next query goes on (`None`: nothing left).
    #[allow(
        clippy::too_many_arguments,
        reason = "each argument is a distinct dependency"
    )]
    async fn lapse_chunk(
        &self,
        index: &str,
        attribute: &str,
        partition: String,
        after: Option<u64>,
        start: StartKey,
        items: usize,
        budget: usize,
    ) -> Result<(Vec<(u64, OutboxEntry)>, StartKey), StoreError> {
        let items = i32::try_from(items.min(budget).max(1)).unwrap_or(i32::MAX);
        let mut req = self
            .index_query(index, (attribute, partition))
            .limit(items)
            .set_exclusive_start_key(start);
        req = match after {
            Some(after) => req
                .key_condition_expression("#p = :p AND #s > :after")
                .expression_attribute_names("#s", SEQ)
                .expression_attribute_values(":after", n(after)),
            None => req.key_condition_expression("#p = :p"),
        };
        let page = self.query_page(req).await?;
        let entries = page
            .items
            .iter()
            .map(entry_of)
            .collect::<Result<Vec<_>, _>>()?;
        Ok((entries, page.next))
    }
}
