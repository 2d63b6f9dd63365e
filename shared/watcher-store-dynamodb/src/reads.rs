//! Reading items: one by key (consistent), a projection, a whole partition, and the subject, task
//! and index items an input loads.

use super::*;
use aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder;

/// Where a query or scan goes on from: the key of the last item read (`None`: from the first,
/// or, answered by a page, nothing after it).
pub(crate) type StartKey = Option<Item>;

/// One page of a query or scan ([`DynamoStore::query_page`], [`DynamoStore::scan_page`]).
pub(crate) struct Page {
    /// The items read, in the order the backend answered them.
    pub items: Vec<Item>,
    /// How many items matched (with `Select::Count`, the only answer).
    pub count: i32,
    /// Where the next page starts; `None` after the last page.
    pub next: StartKey,
}

impl DynamoStore {
    /// A strongly consistent read of one item.
    pub(crate) async fn get(&self, pk: String, sk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .consistent_read(true)
            .send()
            .await
            .map_err(StoreError::backend)?;
        self.count(1u64);
        Ok(out.item)
    }

    /// A strongly consistent read of some attributes of one item.
    pub(crate) async fn get_projected(
        &self,
        pk: String,
        sk: &str,
        attributes: &[&str],
    ) -> Result<Option<Item>, StoreError> {
        let mut req = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(pk))
            .key(SK, s(sk))
            .consistent_read(true);
        let mut projection = Vec::new();
        for (i, a) in attributes.iter().enumerate() {
            let name = format!("#a{i}");
            req = req.expression_attribute_names(&name, *a);
            projection.push(name);
        }
        let out = req
            .projection_expression(projection.join(", "))
            .send()
            .await
            .map_err(StoreError::backend)?;
        self.count(1u64);
        Ok(out.item)
    }

    /// Every item a query answers, following pagination.
    pub(crate) async fn query_all(
        &self,
        make: impl Fn() -> QueryFluentBuilder,
    ) -> Result<Vec<Item>, StoreError> {
        self.query_at_least(usize::MAX, make, Ok).await
    }

    /// The items a query answers, each read by `read`, following pagination until at least
    /// `at_least` are read or the query ends: a bounded read of an index partition (the query
    /// sets its own `Limit` per page, when it wants one). Every item scanned is counted.
    ///
    /// # Errors
    /// The backend's, or `read`'s for an item it cannot read.
    pub(crate) async fn query_at_least<T>(
        &self,
        at_least: usize,
        make: impl Fn() -> QueryFluentBuilder,
        read: impl Fn(Item) -> Result<T, StoreError>,
    ) -> Result<Vec<T>, StoreError> {
        let mut found = Vec::new();
        let mut start = None;
        while found.len() < at_least {
            let page = self
                .query_page(make().set_exclusive_start_key(start))
                .await?;
            for item in page.items {
                found.push(read(item)?);
            }
            start = page.next;
            if start.is_none() {
                break;
            }
        }
        Ok(found)
    }

    /// A query of the index `index` for one partition, `partition` = (its key attribute, the
    /// value): `#p` names the attribute and `:p` is the value; the caller adds the key
    /// condition (`#p = :p`, maybe with a sort key condition) and the rest.
    pub(crate) fn index_query(&self, index: &str, partition: (&str, String)) -> QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .index_name(index)
            .expression_attribute_names("#p", partition.0)
            .expression_attribute_values(":p", s(partition.1))
    }

    /// A query of the index `index` for the keys of `partition` (as in
    /// [`DynamoStore::index_query`]) whose sort key `sort` is at or before `until`, in index
    /// order, `limit` a page (1 to 1,000).
    pub(crate) fn index_until(
        &self,
        index: &str,
        partition: (&str, String),
        sort: &str,
        until: String,
        limit: usize,
    ) -> QueryFluentBuilder {
        self.index_query(index, partition)
            .key_condition_expression("#p = :p AND #s <= :until")
            .expression_attribute_names("#s", sort)
            .expression_attribute_values(":until", s(until))
            .limit(i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000))
    }

    /// Sends `query` (one page: its start key and `Limit` already set), counts the items it
    /// scanned, and answers the page.
    ///
    /// # Errors
    /// The backend's.
    pub(crate) async fn query_page(&self, query: QueryFluentBuilder) -> Result<Page, StoreError> {
        let out = query.send().await.map_err(StoreError::backend)?;
        self.count(out.scanned_count);
        Ok(Page {
            items: out.items.unwrap_or_default(),
            count: out.count,
            next: out.last_evaluated_key,
        })
    }

    /// A scan of the whole table for the items of kind `kind` (`#k` names the kind attribute,
    /// `:kind` is the value) that also pass `and` (` AND …`, or empty), answering the
    /// attributes `projection`. Never on a request path: it reads the whole table.
    pub(crate) fn kind_scan(&self, kind: &str, and: &str, projection: &str) -> ScanFluentBuilder {
        self.client
            .scan()
            .table_name(&self.table)
            .filter_expression(format!("#k = :kind{and}"))
            .projection_expression(projection)
            .expression_attribute_names("#k", KIND)
            .expression_attribute_values(":kind", s(kind))
    }

    /// Sends `scan` (one page: its start key already set), counts the items it scanned, and
    /// answers the page. Never on a request path: a scan reads the whole table.
    ///
    /// # Errors
    /// The backend's.
    pub(crate) async fn scan_page(&self, scan: ScanFluentBuilder) -> Result<Page, StoreError> {
        let out = scan.send().await.map_err(StoreError::backend)?;
        self.count(out.scanned_count);
        Ok(Page {
            items: out.items.unwrap_or_default(),
            count: out.count,
            next: out.last_evaluated_key,
        })
    }

    /// A query of one partition of the table, strongly consistent, in sort-key order.
    pub(crate) async fn partition(&self, pk: String) -> Result<Vec<Item>, StoreError> {
        self.query_all(|| {
            self.client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#pk = :pk")
                .expression_attribute_names("#pk", PK)
                .expression_attribute_values(":pk", s(pk.clone()))
                .consistent_read(true)
        })
        .await
    }

    pub(crate) async fn read_subject(
        &self,
        tenant: &Tenant,
        subject: &Subject,
    ) -> Result<Option<SubjectState>, StoreError> {
        match self.get(subject_pk(tenant, subject), ITEM).await? {
            None => Ok(None),
            Some(item) => {
                let what = format!("subject {subject} of tenant {tenant}");
                let mut state: SubjectState = from_json(get_s(&item, STATE, &what)?, &what)?;
                state.version = get_u64(&item, VERSION, &what)?;
                Ok(Some(state))
            }
        }
    }

    pub(crate) async fn read_task(
        &self,
        tenant: &Tenant,
        task: &TaskRef,
    ) -> Result<Option<TaskRecord>, StoreError> {
        match self.get(task_pk(tenant, task), ITEM).await? {
            None => Ok(None),
            Some(item) => {
                let what = format!("task {}/{} of tenant {tenant}", task.agent, task.task_id);
                let mut rec: TaskRecord = from_json(get_s(&item, STATE, &what)?, &what)?;
                rec.version = get_u64(&item, VERSION, &what)?;
                Ok(Some(rec))
            }
        }
    }

    pub(crate) async fn read_fact_index(
        &self,
        tenant: &Tenant,
        key: &FactKey,
    ) -> Result<BTreeSet<Subject>, StoreError> {
        let what = format!("fact-key row {key} of tenant {tenant}");
        self.partition(fact_pk(tenant, key))
            .await?
            .iter()
            .map(|item| from_json(get_s(item, SUBJECT, &what)?, &what))
            .collect()
    }

    pub(crate) async fn read_id_index(
        &self,
        tenant: &Tenant,
        e: &ExpectationRef,
    ) -> Result<Option<Subject>, StoreError> {
        let what = format!("expectation row {}/{} of tenant {tenant}", e.agent, e.id);
        match self
            .get(expectation_pk(tenant, &e.agent, &e.id), ITEM)
            .await?
        {
            None => Ok(None),
            Some(item) => from_json(get_s(&item, SUBJECT, &what)?, &what).map(Some),
        }
    }
}
