//! Reading items: one by key (consistent), a projection, a whole partition, and the subject, task
//! and index items an input loads.

use super::*;

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
            let out = make()
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(StoreError::backend)?;
            self.count(out.scanned_count);
            for item in out.items.unwrap_or_default() {
                found.push(read(item)?);
            }
            start = out.last_evaluated_key;
            if start.is_none() {
                break;
            }
        }
        Ok(found)
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
