//! [`Records`](watcher_runtime::store::Records) on DynamoDB: the record: subjects and tasks loaded and committed by compare-and-set, and the input numbers ([`watcher_runtime::store::Records`]).

use super::*;
use watcher_runtime::store::Records;

#[async_trait]
impl Records for DynamoStore {
    async fn load(
        &self,
        tenant: &Tenant,
        scope: &Scope,
        now: Instant,
    ) -> Result<Slice, StoreError> {
        let mut slice = Slice::new(tenant.clone());
        // Owned arguments: a closure over borrowed ones trips the `Send` check of async-trait
        // futures (rust-lang/rust#102211).
        let subjects = each(scope.subjects.iter().cloned().collect(), |s| async move {
            let state = self.read_subject(tenant, &s).await?;
            Ok((s.clone(), state.unwrap_or_else(|| SubjectState::new(s))))
        })
        .await?;
        slice.subjects.extend(subjects);
        let facts = each(scope.fact_keys.iter().cloned().collect(), |k| async move {
            let subjects = self.read_fact_index(tenant, &k).await?;
            Ok((k, subjects))
        })
        .await?;
        slice.fact_index.extend(facts);
        let ids = each(
            scope.expectations.iter().cloned().collect(),
            |e| async move {
                let subject = self.read_id_index(tenant, &e).await?;
                Ok((e, subject))
            },
        )
        .await?;
        slice.id_index.extend(ids);
        let tasks = each(scope.tasks.iter().cloned().collect(), |t| async move {
            let task = self.read_task(tenant, &t).await?;
            Ok((t, task))
        })
        .await?;
        slice.tasks.extend(tasks);
        let live = each(scope.agents.iter().cloned().collect(), |a| async move {
            let enough = scope.live_enough.get(&a).copied();
            let count = self.count_live(tenant, &a, now, enough).await?;
            Ok((a, count))
        })
        .await?;
        slice.agent_live.extend(live);
        Ok(slice)
    }

    /// One `TransactWriteItems` (`DynamoStore::commit_transaction`, docs/dynamodb.md
    /// "Commit"), the resolutions of `commit.resolutions` (expectations-v1 §13.1) in it: each
    /// lapse task resolved is read before (one consistent `BatchGetItem`) and updated in the
    /// transaction on the condition that it is still as read.
    async fn commit(&self, tenant: &Tenant, commit: Commit) -> Result<(), StoreError> {
        self.commit_transaction(tenant, commit).await
    }

    /// A time-ordered id ([`TimeOrdered`]): no read, no write, so no item is written by every
    /// input. Every id is above every number the raising-order counter (`COUNTER`/`raise`) of an
    /// earlier version handed out, so a table written by it keeps its order.
    async fn next_sequence(&self) -> Result<u64, StoreError> {
        Ok(self.ids.next())
    }

    async fn subject(
        &self,
        tenant: &Tenant,
        subject: &Subject,
    ) -> Result<Option<SubjectState>, StoreError> {
        self.read_subject(tenant, subject).await
    }

    async fn all_records(&self) -> Result<Vec<ExpectationRecord>, StoreError> {
        let mut all = Vec::new();
        let mut start = None;
        loop {
            let scan = self
                .kind_scan("subject", "", "#s")
                .expression_attribute_names("#s", STATE)
                .consistent_read(true)
                .set_exclusive_start_key(start);
            let page = self.scan_page(scan).await?;
            for item in page.items {
                let state: SubjectState = from_json(get_s(&item, STATE, "subject")?, "subject")?;
                all.extend(state.records);
            }
            start = page.next;
            if start.is_none() {
                break;
            }
        }
        all.sort_by_key(|r| r.order);
        Ok(all)
    }
}
