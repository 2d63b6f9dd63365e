//! Shared setup of the DynamoDB store's tests: a client for the local emulator (moto) and a
//! fresh table per test.
//!
//! The tests need moto: `bash infra/moto.sh` starts it on 127.0.0.1:5005, and the test script
//! sets `AWS_ENDPOINT_URL=http://127.0.0.1:5005`. Without that variable every test fails,
//! saying so: a suite that skips itself is a test that cannot fail.

#![allow(
    dead_code,
    reason = "each test binary uses its own part of this module"
)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::config::{Credentials, Region};
use aws_sdk_dynamodb::Client;
use serde_json::json;
use std::sync::Arc;
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, ExpectationId, FactKey, Source, Subject, Tenant};
use watcher_core::record::{ExpectationRecord, RaiseOrder};
use watcher_core::slice::{FactEntry, SubjectState};
use watcher_core::time::{Instant, IsoDuration};
use watcher_runtime::clock::FakeClock;
use watcher_runtime::conformance::open_record;
use watcher_runtime::sequence::TimeOrdered;
use watcher_store_dynamodb::{create_table, DynamoStore};

/// Retention the tests give the store.
pub const RETENTION_DAYS: u32 = 30;

/// A client for the emulator named by `AWS_ENDPOINT_URL`, with the region and credentials of
/// the environment (dummy ones by default: moto accepts any).
///
/// # Panics
/// When `AWS_ENDPOINT_URL` is not set.
pub async fn client() -> Client {
    Client::new(&sdk_config().await)
}

/// The SDK configuration [`client`] is built from.
///
/// # Panics
/// When `AWS_ENDPOINT_URL` is not set.
pub async fn sdk_config() -> aws_config::SdkConfig {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!(
            "AWS_ENDPOINT_URL is not set. The DynamoDB store's tests run against a local moto \
             server: run `bash infra/moto.sh`, then `AWS_ENDPOINT_URL=http://127.0.0.1:5005 \
             AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_REGION=us-east-1 \
             cargo test -p watcher-store-dynamodb`"
        )
    });
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    aws_config::defaults(BehaviorVersion::latest())
        .http_client(watcher_aws::sdk_env::https_client())
        .endpoint_url(endpoint)
        .region(Region::new(var("AWS_REGION", "us-east-1")))
        .credentials_provider(Credentials::new(
            var("AWS_ACCESS_KEY_ID", "test"),
            var("AWS_SECRET_ACCESS_KEY", "test"),
            None,
            None,
            "watcher-store-dynamodb tests",
        ))
        .load()
        .await
}

/// A table name no other test of this run uses.
pub fn unique_table() -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    format!(
        "watcher-test-{}-{}-{nanos}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A store over a fresh table of its own.
pub async fn store() -> DynamoStore {
    let client = client().await;
    let table = unique_table();
    create_table(&client, &table, Duration::from_secs(60))
        .await
        .expect("create the test table (is moto answering at AWS_ENDPOINT_URL? `bash infra/moto.sh` starts it)");
    DynamoStore::new(client, table, RETENTION_DAYS)
}

/// A second handle onto `store`'s table, through a client of its own.
pub async fn second_handle(store: &DynamoStore) -> DynamoStore {
    DynamoStore::new(client().await, store.table(), RETENTION_DAYS)
}

pub fn instant(text: &str) -> Instant {
    Instant::parse(text).expect("a valid test instant")
}

/// 2026-09-10T12:00:00Z.
pub fn t0() -> Instant {
    instant("2026-09-10T12:00:00Z")
}

/// `minutes` after [`t0`].
pub fn at(minutes: u32) -> Instant {
    t0().plus(IsoDuration::parse(&format!("PT{minutes}M")).expect("a valid duration"))
}

pub fn tenant(name: &str) -> Tenant {
    Tenant::parse(name).expect("a valid tenant")
}

pub fn agent(name: &str) -> AgentId {
    AgentId::parse(name).expect("a valid agent id")
}

pub fn shipment(id: &str) -> Subject {
    Subject::parse("shipment", id).expect("a valid subject")
}

pub fn fact(key: &str, subject: &Subject, received: Instant) -> FactEntry {
    FactEntry {
        fact_key: FactKey::parse(key).expect("a valid fact key"),
        source: Source::parse("carrier-feed:test").expect("a valid source"),
        observed_at: received,
        claimed_observed_at: received,
        observed_at_given: None,
        mapping: None,
        received_at: received,
        subject: Some(subject.clone()),
        satisfied: Vec::new(),
    }
}

/// An open record of expectation `id` about shipment `subject_id` (deadline at 60, horizon at
/// 180), raised at [`t0`] by agent `booking`.
pub fn record(t: &Tenant, id: &str, subject_id: &str, input: u64) -> ExpectationRecord {
    let e = Expectation::from_json(&json!({
        "expectationId": id,
        "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": subject_id },
        "expects": format!("the manifest for {subject_id}"),
        "satisfiedBy": { "factKey": format!("manifest:{subject_id}") },
        "dueAt": at(60).to_string(),
        "horizon": at(180).to_string(),
        "basis": "observed",
    }))
    .expect("a valid test expectation");
    open_record(t, "booking", e, RaiseOrder { input, index: 0 })
}

/// A never-stored subject holding one open record and one fact.
pub fn subject_with_record(t: &Tenant, subject_id: &str, input: u64) -> SubjectState {
    let s = shipment(subject_id);
    let mut state = SubjectState::new(s.clone());
    state
        .records
        .push(record(t, &format!("exp-{subject_id}"), subject_id, input));
    state.facts.push(fact("seen", &s, t0()));
    state
}

pub fn expectation_id(id: &str) -> ExpectationId {
    ExpectationId::parse(id).expect("a valid expectation id")
}

/// An item of the table, as the SDK answers it.
pub type Item = std::collections::HashMap<String, aws_sdk_dynamodb::types::AttributeValue>;

/// Every item of the store's table whose `kind` is `kind` (a scan: the tables here are small).
pub async fn raw_items(store: &DynamoStore, kind: &str) -> Vec<Item> {
    let out = store
        .client()
        .scan()
        .table_name(store.table())
        .filter_expression("#k = :k")
        .expression_attribute_names("#k", "kind")
        .expression_attribute_values(
            ":k",
            aws_sdk_dynamodb::types::AttributeValue::S(kind.into()),
        )
        .consistent_read(true)
        .send()
        .await
        .expect("scan the test table");
    assert!(out.last_evaluated_key.is_none(), "test tables fit one page");
    out.items.unwrap_or_default()
}

/// Two handles on `store` that number inputs as instances 1 and 2 of one `clock`
/// ([`TimeOrdered`]): two processes sharing the table.
pub fn two_instances(store: &DynamoStore, clock: &Arc<FakeClock>) -> (DynamoStore, DynamoStore) {
    let instance = |n| {
        store
            .clone()
            .with_ids(TimeOrdered::with_instance(clock.clone(), n))
    };
    (instance(1), instance(2))
}

/// One request of an agent's live count as the client sent it (seen by [`LiveReads`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LiveRead {
    /// A `BatchGetItem` of live-row counter shards (`LIVECOUNT#…`): its `ConsistentRead` (absent
    /// is `false`, DynamoDB's default) and how many keys it asked for.
    Shards { consistent: bool, keys: usize },
    /// A `Query` of the `live` index (the rows already past).
    Past,
}

/// Records, by an interceptor on the client, every request of a live count the client sends:
/// what the store asked DynamoDB for, including each read's consistency, which no answer shows.
/// Other requests (a commit's reads of subjects, its transaction) are not recorded.
#[derive(Debug, Clone, Default)]
pub struct LiveReads(Arc<std::sync::Mutex<Vec<LiveRead>>>);

impl LiveReads {
    /// The requests since the last take, in the order sent; none from now on.
    pub fn take(&self) -> Vec<LiveRead> {
        std::mem::take(&mut *self.0.lock().expect("live reads"))
    }
}

impl aws_smithy_runtime_api::client::interceptors::Intercept for LiveReads {
    fn name(&self) -> &'static str {
        "record-live-reads"
    }

    fn read_before_serialization(
        &self,
        context: &aws_smithy_runtime_api::client::interceptors::context::BeforeSerializationInterceptorContextRef<'_>,
        _: &aws_smithy_runtime_api::client::runtime_components::RuntimeComponents,
        _: &mut aws_smithy_types::config_bag::ConfigBag,
    ) -> Result<(), aws_smithy_runtime_api::box_error::BoxError> {
        use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemInput;
        use aws_sdk_dynamodb::operation::query::QueryInput;
        use aws_sdk_dynamodb::types::AttributeValue;
        let input = context.input();
        let mut seen = self.0.lock().expect("live reads");
        if let Some(batch) = input.downcast_ref::<BatchGetItemInput>() {
            for asked in batch.request_items.iter().flat_map(|items| items.values()) {
                let counters = asked.keys.iter().all(|key| {
                    matches!(key.get("pk"), Some(AttributeValue::S(pk)) if pk.starts_with("LIVECOUNT#"))
                });
                if counters && !asked.keys.is_empty() {
                    seen.push(LiveRead::Shards {
                        consistent: asked.consistent_read.unwrap_or(false),
                        keys: asked.keys.len(),
                    });
                }
            }
        } else if let Some(query) = input.downcast_ref::<QueryInput>() {
            if query.index_name.as_deref() == Some("live") {
                seen.push(LiveRead::Past);
            }
        }
        Ok(())
    }
}

/// A store over a fresh table of its own whose client records its live-count requests.
pub async fn recorded_store() -> (DynamoStore, LiveReads) {
    let reads = LiveReads::default();
    let config = aws_sdk_dynamodb::config::Builder::from(&sdk_config().await)
        .interceptor(reads.clone())
        .build();
    let client = Client::from_conf(config);
    let table = unique_table();
    create_table(&client, &table, Duration::from_secs(60))
        .await
        .expect("create the test table (is moto answering at AWS_ENDPOINT_URL? `bash infra/moto.sh` starts it)");
    reads.take();
    (DynamoStore::new(client, table, RETENTION_DAYS), reads)
}
