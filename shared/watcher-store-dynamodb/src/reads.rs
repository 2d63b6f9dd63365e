//! Reading items: one by key (consistent), projections of many by key, a whole partition, and
//! the subject, task and index items an input loads.

use super::*;
use aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder;

/// The most keys one `BatchGetItem` request may name (DynamoDB's limit; its 16 MB answer limit
/// is far off for the projections read here).
pub(crate) const BATCH_GET_KEYS: usize = 100;

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
            .map_err(error::backend)?;
        self.count(1u64);
        Ok(out.item)
    }

    /// Strongly consistent reads of `attributes` of each item of `keys` ((pk, sk) pairs), by
    /// `BatchGetItem`: up to [`BATCH_GET_KEYS`] keys a request, the requests made at once, and
    /// the keys a request leaves unprocessed (throttling) asked for again. Answers the items
    /// found by their (pk, sk); a key not found is absent. The same read units as one `GetItem`
    /// a key, in one request instead of one each.
    ///
    /// # Errors
    /// Backend errors; an item without its key attributes.
    pub(crate) async fn get_projected_batch(
        &self,
        keys: Vec<(String, String)>,
        attributes: &[&str],
    ) -> Result<HashMap<(String, String), Item>, StoreError> {
        self.batch_read(keys, Some(attributes), true).await
    }

    /// Strongly consistent reads of whole items by key, by `BatchGetItem` as
    /// [`DynamoStore::get_projected_batch`] reads (up to [`BATCH_GET_KEYS`] keys a request, the
    /// unprocessed asked for again): the same read units as one `GetItem` a key, in one request
    /// per hundred keys. Answers the items found by their (pk, sk); a key not found is absent.
    ///
    /// # Errors
    /// Backend errors; an item without its key attributes.
    pub(crate) async fn get_whole_batch(
        &self,
        keys: Vec<(String, String)>,
    ) -> Result<HashMap<(String, String), Item>, StoreError> {
        self.batch_read(keys, None, true).await
    }

    /// [`DynamoStore::get_projected_batch`], eventually consistent (half the read units): for
    /// items no current writer changes (the earlier version's `OUTBOX#{tenant}`, which this
    /// version only reads and updates in place, so a lagging replica answers what a consistent
    /// read would).
    pub(crate) async fn get_projected_batch_eventually(
        &self,
        keys: Vec<(String, String)>,
        attributes: &[&str],
    ) -> Result<HashMap<(String, String), Item>, StoreError> {
        self.batch_read(keys, Some(attributes), false).await
    }

    /// The reads of [`DynamoStore::get_projected_batch`] (`attributes` given) and
    /// [`DynamoStore::get_whole_batch`] (`None`: whole items): each key once, a hundred a request.
    async fn batch_read(
        &self,
        keys: Vec<(String, String)>,
        attributes: Option<&[&str]>,
        consistent: bool,
    ) -> Result<HashMap<(String, String), Item>, StoreError> {
        let mut unique: Vec<(String, String)> = Vec::new();
        for key in keys {
            if !unique.contains(&key) {
                unique.push(key);
            }
        }
        let chunks: Vec<Vec<(String, String)>> = unique
            .chunks(BATCH_GET_KEYS)
            .map(<[(String, String)]>::to_vec)
            .collect();
        let found = each(chunks, |chunk| async move {
            self.batch_get_chunk(chunk, attributes, consistent).await
        })
        .await?;
        Ok(found.into_iter().flatten().collect())
    }

    /// One request of [`DynamoStore::batch_read`] of at most [`BATCH_GET_KEYS`] keys,
    /// asked again for what it leaves unprocessed.
    async fn batch_get_chunk(
        &self,
        chunk: Vec<(String, String)>,
        attributes: Option<&[&str]>,
        consistent: bool,
    ) -> Result<Vec<((String, String), Item)>, StoreError> {
        let keys: Vec<Item> = chunk
            .into_iter()
            .map(|(pk, sk)| HashMap::from([(PK.to_owned(), s(pk)), (SK.to_owned(), s(sk))]))
            .collect();
        let mut request = KeysAndAttributes::builder()
            .set_keys(Some(keys))
            .consistent_read(consistent);
        if let Some(attributes) = attributes {
            let mut names: HashMap<String, String> = HashMap::from([
                ("#pk".to_owned(), PK.to_owned()),
                ("#sk".to_owned(), SK.to_owned()),
            ]);
            let mut projection = vec!["#pk".to_owned(), "#sk".to_owned()];
            for (i, a) in attributes.iter().enumerate() {
                let name = format!("#a{i}");
                names.insert(name.clone(), (*a).to_owned());
                projection.push(name);
            }
            request = request
                .projection_expression(projection.join(", "))
                .set_expression_attribute_names(Some(names));
        }
        let request = request.build().map_err(error::backend)?;
        let mut found = Vec::new();
        for item in self.batch_get(request).await? {
            let key = (
                get_s(&item, PK, "batch-read item")?.to_owned(),
                get_s(&item, SK, "batch-read item")?.to_owned(),
            );
            found.push((key, item));
        }
        Ok(found)
    }

    /// Every item one `BatchGetItem` of `request` (at most 100 keys) answers. Keys DynamoDB
    /// leaves unprocessed (throttling, or a response over 16 MB) are asked again after a wait,
    /// as DynamoDB asks (exponential backoff with full jitter, [`Backoff::THROTTLED`]); keys
    /// still unprocessed after its attempts fail the read as throttled
    /// ([`Unavailable::Throttled`](watcher_runtime::store::Unavailable::Throttled): the caller
    /// answers 503 with `Retry-After`). Before, they were asked again at once, without end.
    pub(crate) async fn batch_get(
        &self,
        request: KeysAndAttributes,
    ) -> Result<Vec<Item>, StoreError> {
        let retry = self.retry(Backoff::THROTTLED);
        let mut request = Some(request);
        let mut found = Vec::new();
        let mut retries = 0u32;
        while let Some(keys) = request.take() {
            if retries > 0 {
                if !retry.allows(retries) {
                    return Err(StoreError::unavailable(
                        watcher_runtime::store::Unavailable::Throttled,
                        std::io::Error::other(format!(
                            "{} keys of a BatchGetItem still unprocessed after {retries} retries",
                            keys.keys.len()
                        )),
                    ));
                }
                retry.pause(retries).await;
            }
            let out = self
                .client
                .batch_get_item()
                .request_items(&self.table, keys)
                .send()
                .await
                .map_err(error::backend)?;
            for item in out
                .responses
                .unwrap_or_default()
                .remove(&self.table)
                .unwrap_or_default()
            {
                self.count(1u64);
                found.push(item);
            }
            request = out
                .unprocessed_keys
                .unwrap_or_default()
                .remove(&self.table)
                .filter(|k| !k.keys.is_empty());
            retries += 1;
        }
        Ok(found)
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

    /// [`DynamoStore::index_until`] with, when `from` is given, a lower bound too: the keys
    /// whose sort key is between `from` and `until` (both included; `from` at most `until`,
    /// which DynamoDB's `BETWEEN` requires).
    pub(crate) fn index_range(
        &self,
        index: &str,
        partition: (&str, String),
        sort: &str,
        (from, until): (Option<String>, String),
        limit: usize,
    ) -> QueryFluentBuilder {
        let Some(from) = from else {
            return self.index_until(index, partition, sort, until, limit);
        };
        self.index_query(index, partition)
            .key_condition_expression("#p = :p AND #s BETWEEN :from AND :until")
            .expression_attribute_names("#s", sort)
            .expression_attribute_values(":from", s(from))
            .expression_attribute_values(":until", s(until))
            .limit(i32::try_from(limit.clamp(1, 1000)).unwrap_or(1000))
    }

    /// Sends `query` (one page: its start key and `Limit` already set), counts the items it
    /// scanned, and answers the page.
    ///
    /// # Errors
    /// The backend's.
    pub(crate) async fn query_page(&self, query: QueryFluentBuilder) -> Result<Page, StoreError> {
        let out = query.send().await.map_err(error::backend)?;
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
        let out = scan.send().await.map_err(error::backend)?;
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
        let pk = subject_pk(tenant, subject);
        match self.get(pk.clone(), ITEM).await? {
            None => {
                self.loaded.saw(pk, 0, None);
                Ok(None)
            }
            Some(item) => {
                let what = format!("subject {subject} of tenant {tenant}");
                let mut state: SubjectState = from_json(get_s(&item, STATE, &what)?, &what)?;
                state.version = get_u64(&item, VERSION, &what)?;
                // An item without `indexed` is not remembered: its commit reads, and says
                // what is wrong with it.
                if let Ok(indexed) = get_s(&item, INDEXED, &what) {
                    self.loaded.saw(pk, state.version, Some(indexed.to_owned()));
                }
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
