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
    /// With `enough` (the scope's [`Scope::live_enough`]: the agent's §13.2 bound less what the
    /// input may raise), the count is read only as exactly as the bound needs (issue 40):
    ///
    /// 1. **Far from the bound, no read.** A sum this process read or committed less than
    ///    [`LIVE_MEMO_TTL`] ago that is at most half of `enough` answers alone.
    /// 2. **Far from the bound, a cheap read.** Otherwise the 16 shards are read eventually
    ///    consistently (half the read units of a consistent read); a sum of at most half of
    ///    `enough` answers, and is remembered.
    /// 3. **Near the bound, as before.** Otherwise the shards are read again, strongly
    ///    consistently; a sum of at most `enough` answers (it is at least the live count, and
    ///    the engine decides its bound the same with it); above it, the 17 `live` queries count
    ///    the rows already past.
    ///
    /// Why 1 and 2 keep §13.2's guarantee (docs/interpretation.md "§13.2 per-agent bound under
    /// concurrency"): the answer there may miss commits of other instances of the last second
    /// (the memo's age, an eventually consistent read's lag), and is used only while it is at
    /// most half the ceiling, so the agent can end over its bound only if other instances
    /// raised more than half its bound for it within that second; and then by at most what they
    /// raised in it, as with steps in flight. The count is never lost, only late: the next read
    /// near the bound is consistent. This process's own commits are added to the memo as they
    /// land ([`LiveMemo::add`]), so one instance's raises in sequence are always counted.
    pub(crate) async fn count_live(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        now: Instant,
        enough: Option<u64>,
    ) -> Result<u64, StoreError> {
        if let Some(enough) = enough {
            let far = enough / 2;
            if let Some(sum) = self.live_memo.get(tenant, agent) {
                if sum <= far {
                    return Ok(sum);
                }
            }
            let sum = self.counter_sum(tenant, agent, false).await?;
            if sum <= far {
                self.live_memo.put(tenant, agent, sum);
                return Ok(sum);
            }
        }
        let rows = self.counter_sum(tenant, agent, true).await?;
        if let Some(enough) = enough {
            if rows <= enough {
                return Ok(rows);
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
        let rows = i64::try_from(rows).unwrap_or(i64::MAX);
        Ok(u64::try_from(rows - expired).unwrap_or(0))
    }

    /// The sum of the agent's 16 live-row counter shards (never below zero): one
    /// `BatchGetItem`, strongly consistent when `consistent` (16 read units), else eventually
    /// consistent (8).
    async fn counter_sum(
        &self,
        tenant: &Tenant,
        agent: &AgentId,
        consistent: bool,
    ) -> Result<u64, StoreError> {
        let what = format!("live-row counter of agent {agent} of tenant {tenant}");
        let keys: Vec<Item> = (0..LIVE_COUNT_SHARDS)
            .map(|k| {
                HashMap::from([
                    (PK.to_owned(), s(live_count_shard_pk(tenant, agent, k))),
                    (SK.to_owned(), s(ITEM)),
                ])
            })
            .collect();
        let request = KeysAndAttributes::builder()
            .set_keys(Some(keys))
            .consistent_read(consistent)
            .projection_expression("#v")
            .expression_attribute_names("#v", VALUE)
            .build()
            .map_err(error::backend)?;
        let mut rows = 0i64;
        for item in self.batch_get(request).await? {
            rows += get_i64(&item, VALUE, &what)?;
        }
        Ok(u64::try_from(rows).unwrap_or(0))
    }

    /// Tells the live-count memo that a commit of `tenant` changed the live rows of each agent
    /// by its delta (called once the transaction landed).
    pub(crate) fn live_committed(&self, tenant: &Tenant, deltas: &BTreeMap<AgentId, i64>) {
        for (agent, delta) in deltas {
            self.live_memo.add(tenant, agent, *delta);
        }
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
            .map_err(error::backend)?;
        Ok(TransactWriteItem::builder().update(update).build())
    }
}

/// How long a live count read for an agent far below its bound answers this process's later
/// steps of that agent with no read ([`DynamoStore::count_live`], step 1).
pub(crate) const LIVE_MEMO_TTL: std::time::Duration = std::time::Duration::from_secs(1);

/// Most agents the memo holds; past it, it starts again empty (a memo, never the record).
const LIVE_MEMO_AGENTS: usize = 4096;

/// Recent live counts of agents far below their bound, with when each was read (this process's
/// monotonic clock), adjusted by this process's own commits since.
#[derive(Debug, Default)]
pub(crate) struct LiveMemo {
    counts: std::sync::Mutex<HashMap<(Tenant, AgentId), (u64, std::time::Instant)>>,
}

impl LiveMemo {
    fn lock(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<(Tenant, AgentId), (u64, std::time::Instant)>> {
        // Every change below is one map operation: a panic elsewhere leaves nothing half-done.
        self.counts
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The count remembered for `agent` of `tenant`, if read less than [`LIVE_MEMO_TTL`] ago.
    pub(crate) fn get(&self, tenant: &Tenant, agent: &AgentId) -> Option<u64> {
        let mut counts = self.lock();
        let key = (tenant.clone(), agent.clone());
        match counts.get(&key) {
            Some((sum, at)) if at.elapsed() < LIVE_MEMO_TTL => Some(*sum),
            Some(_) => {
                counts.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Remembers `sum` for `agent` of `tenant`, read now.
    pub(crate) fn put(&self, tenant: &Tenant, agent: &AgentId, sum: u64) {
        let mut counts = self.lock();
        if counts.len() >= LIVE_MEMO_AGENTS {
            counts.clear();
        }
        counts.insert(
            (tenant.clone(), agent.clone()),
            (sum, std::time::Instant::now()),
        );
    }

    /// Adds a landed commit's `delta` to the count remembered for `agent` of `tenant`, if any
    /// (its age unchanged).
    pub(crate) fn add(&self, tenant: &Tenant, agent: &AgentId, delta: i64) {
        if let Some((sum, _)) = self.lock().get_mut(&(tenant.clone(), agent.clone())) {
            *sum = sum.saturating_add_signed(delta);
        }
    }
}
