//! What the API function's tests share: its router over a fresh table, schedule group and
//! queue on the emulator, and the API Gateway event of a request.

#![allow(
    dead_code,
    reason = "each test binary uses its own part of this module"
)]

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_smithy_runtime_api::box_error::BoxError;
use aws_smithy_runtime_api::client::interceptors::context::{
    AfterDeserializationInterceptorContextRef, BeforeSerializationInterceptorContextRef,
    BeforeTransmitInterceptorContextRef, FinalizerInterceptorContextRef,
};
use aws_smithy_runtime_api::client::interceptors::Intercept;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;
use aws_smithy_types::config_bag::ConfigBag;

use base64::Engine as _;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tower::ServiceExt;
use watcher_config::Config;
use watcher_core::engine::TimerKey;
use watcher_core::ids::Tenant;
use watcher_core::time::Instant;
use watcher_host::aws::Parts;
use watcher_lambda::timer::TimerReport;
use watcher_runtime::clock::FakeClock;
use watcher_runtime::ports::{LapseQueue, PortError, Timers};
use watcher_runtime::store::{OutboxEntry, Store};

pub const TIMER_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:watcher-timer";
pub const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/watcher-scheduler";

/// The operator `ops` (bearer `ops-1`), as configuration.
pub const OPS_TOML: &str = "[[operators]]\nid = \"ops\"\ntoken = \"ops-1\"\n";

/// The source `carrier-feed:emirates` (bearer `src-1`), as configuration.
pub const CARRIER_TOML: &str = "[[sources]]\nid = \"carrier-feed:emirates\"\ntoken = \"src-1\"\n";

/// The agent `booking` (push token `push-1`) with the card `card` (its JSON) inline, as
/// configuration; more of its keys may follow.
pub fn booking_toml(card: &str) -> String {
    format!("[[agents]]\nid = \"booking\"\ncard = '''{card}'''\npush_token = \"push-1\"\n")
}

/// A fresh table, schedule group and lapse queues on the emulator, named after `name` (made
/// unique), with the clients that reach them.
pub struct Emulator {
    /// The unique name of the table, the schedule group and the queues.
    pub name: String,
    /// Every request the three clients send, counted.
    pub requests: Requests,
    pub ddb: aws_sdk_dynamodb::Client,
    pub scheduler: aws_sdk_scheduler::Client,
    pub sqs: aws_sdk_sqs::Client,
    pub queues: watcher_aws::provision::LapseQueues,
}

pub mod costs;
pub mod submitting;
pub mod units;

/// Every request an SDK client sends (each attempt), by service and operation
/// (`DynamoDB GetItem`), counted by an interceptor on the client (`read_before_transmit`); and
/// DynamoDB's read units and writes ([`units::Measured`]) from each request's typed input and
/// output. [`Requests::take`] answers the counts so far and starts again from zero.
#[derive(Debug, Clone, Default)]
pub struct Requests {
    counts: Arc<Mutex<BTreeMap<String, u64>>>,
    units: Arc<Mutex<units::Measured>>,
    /// When set, each write request's items are read before and after it
    /// ([`Requests::measure_per_request`]).
    snapshots: Arc<Mutex<Option<Arc<Snapshots>>>>,
}

/// Reads items of one table by key, consistently, for the interceptor, which cannot wait on
/// the runtime it runs in: on a thread of its own, with its own runtime and a client that no
/// interceptor watches (its reads are not the functions').
#[derive(Debug)]
pub struct Snapshots {
    key: Vec<String>,
    asks: Mutex<std::sync::mpsc::Sender<SnapshotAsk>>,
}

/// Keys to read, and where to answer the items (`None`: absent) in their order.
type SnapshotAsk = (
    Vec<units::Item>,
    std::sync::mpsc::Sender<Vec<Option<units::Item>>>,
);

impl Snapshots {
    /// Starts the reader of `table`, whose key attributes are `key`; it ends when the last
    /// handle on it is dropped.
    fn start(table: &str, key: Vec<String>) -> Snapshots {
        let (asks, questions) = std::sync::mpsc::channel::<SnapshotAsk>();
        let table = table.to_owned();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("the snapshot thread's runtime");
            rt.block_on(async move {
                let ddb = aws_sdk_dynamodb::Client::new(&emulator_config().await);
                // Blocking between asks is fine: nothing else runs on this thread.
                while let Ok((keys, answer)) = questions.recv() {
                    let mut items = Vec::with_capacity(keys.len());
                    for key in keys {
                        let out = ddb
                            .get_item()
                            .table_name(&table)
                            .set_key(Some(key))
                            .consistent_read(true)
                            .send()
                            .await
                            .expect("read an item around a write");
                        items.push(out.item);
                    }
                    let _ = answer.send(items);
                }
            });
        });
        Snapshots {
            key,
            asks: Mutex::new(asks),
        }
    }

    /// The items of `writes`' keys as they stand now.
    fn read(&self, writes: &[units::Write]) -> Vec<Option<units::Item>> {
        let keys = writes
            .iter()
            .map(|w| {
                w.attrs
                    .iter()
                    .filter(|(name, _)| self.key.contains(name))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .collect();
        let (answer, answered) = std::sync::mpsc::channel();
        self.asks
            .lock()
            .expect("snapshot asks")
            .send((keys, answer))
            .expect("the snapshot thread runs");
        answered.recv().expect("the snapshot thread answers")
    }
}

/// A write request's writes between its serialization and its end, with the items before it.
#[derive(Debug, Clone)]
struct PendingWrites(Vec<units::Write>);

impl aws_smithy_types::config_bag::Storable for PendingWrites {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

/// An SQS request to a standard queue (not FIFO): priced apart.
#[derive(Debug, Clone, Copy)]
struct StandardQueue;

impl aws_smithy_types::config_bag::Storable for StandardQueue {
    type Storer = aws_smithy_types::config_bag::StoreReplace<Self>;
}

impl Requests {
    /// From now on, reads the items each DynamoDB write request touches in `table` (key
    /// attributes `key`) just before and just after it, so each request's index writes are
    /// billed (`units::Write::states`). Blocks the request's task for those reads: for the
    /// cost measurement, not for tests of timing.
    pub fn measure_per_request(&self, table: &str, key: &[String]) {
        *self.snapshots.lock().expect("snapshots") =
            Some(Arc::new(Snapshots::start(table, key.to_vec())));
    }

    fn snapshots(&self) -> Option<Arc<Snapshots>> {
        self.snapshots.lock().expect("snapshots").clone()
    }

    /// The counts since the last take, and zero from now on.
    pub fn take(&self) -> BTreeMap<String, u64> {
        self.take_all().0
    }

    /// The counts and DynamoDB's units since the last take, and zero from now on.
    pub fn take_all(&self) -> (BTreeMap<String, u64>, units::Measured) {
        (
            std::mem::take(&mut *self.counts.lock().expect("request counts")),
            std::mem::take(&mut *self.units.lock().expect("units")),
        )
    }
}

impl Intercept for Requests {
    fn name(&self) -> &'static str {
        "count-requests"
    }

    fn read_before_serialization(
        &self,
        context: &BeforeSerializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let mut writes = units::writes_of(context.input());
        match self.snapshots() {
            Some(snapshots) if !writes.is_empty() => {
                let befores = snapshots.read(&writes);
                for (w, before) in writes.iter_mut().zip(befores) {
                    w.states = Some((before, None));
                }
                cfg.interceptor_state().store_put(PendingWrites(writes));
            }
            _ => self.units.lock().expect("units").writes.extend(writes),
        }
        if let Some(kind) = units::read_kind(context.input()) {
            cfg.interceptor_state().store_put(kind);
        }
        if units::sqs_queue_url(context.input()).is_some_and(|url| !url.ends_with(".fifo")) {
            cfg.interceptor_state().store_put(StandardQueue);
        }
        Ok(())
    }

    /// A write measured per request: the items after it, whether it succeeded or not (a
    /// failed conditional write is billed too, changing nothing).
    fn read_after_execution(
        &self,
        _: &FinalizerInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let (Some(PendingWrites(writes)), Some(snapshots)) =
            (cfg.load::<PendingWrites>().cloned(), self.snapshots())
        else {
            return Ok(());
        };
        let mut writes = writes;
        let afters = snapshots.read(&writes);
        for (w, after) in writes.iter_mut().zip(afters) {
            if let Some((_, a)) = &mut w.states {
                *a = after;
            }
        }
        self.units.lock().expect("units").writes.extend(writes);
        Ok(())
    }

    fn read_after_deserialization(
        &self,
        context: &AfterDeserializationInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if let (Some(kind), Ok(output)) = (cfg.load::<units::ReadKind>(), context.output_or_error())
        {
            let halves = units::read_halves(*kind, output);
            self.units.lock().expect("units").read_halves += halves;
        }
        Ok(())
    }

    fn read_before_transmit(
        &self,
        _: &BeforeTransmitInterceptorContextRef<'_>,
        _: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        if cfg.load::<StandardQueue>().is_some() {
            self.units.lock().expect("units").sqs_standard += 1;
        }
        if let Some(m) = cfg.load::<Metadata>() {
            let key = format!("{} {}", m.service(), m.name());
            *self
                .counts
                .lock()
                .expect("request counts")
                .entry(key)
                .or_default() += 1;
        }
        Ok(())
    }
}

/// The SDK configuration the tests reach the emulator with: the functions' HTTPS client
/// (`watcher_aws::sdk_env::https_client`), us-east-1, and the endpoint and credentials of the
/// environment (`AWS_ENDPOINT_URL`, set by `infra/test-all.sh`).
pub async fn emulator_config() -> aws_config::SdkConfig {
    aws_config::defaults(aws_config::BehaviorVersion::latest())
        .http_client(watcher_aws::sdk_env::https_client())
        .region(aws_config::Region::new("us-east-1"))
        .load()
        .await
}

/// Creates an [`Emulator`] set-up; panics naming what to start when `AWS_ENDPOINT_URL` is unset.
pub async fn emulator(name: &str) -> Emulator {
    std::env::var("AWS_ENDPOINT_URL").unwrap_or_else(|_| {
        panic!("AWS_ENDPOINT_URL is not set: start the emulator with `bash infra/moto.sh` and export AWS_ENDPOINT_URL (infra/test-all.sh does both)")
    });
    let aws = emulator_config().await;
    // Unique within the test binary too: its tests run at once, in one process.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let name = format!(
        "{name}-{}-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
    );
    let requests = Requests::default();
    let ddb = aws_sdk_dynamodb::Client::from_conf(
        aws_sdk_dynamodb::config::Builder::from(&aws)
            .interceptor(requests.clone())
            .build(),
    );
    watcher_store_dynamodb::create_table(&ddb, &name, std::time::Duration::from_secs(30))
        .await
        .expect("table");
    let scheduler = aws_sdk_scheduler::Client::from_conf(
        aws_sdk_scheduler::config::Builder::from(&aws)
            .interceptor(requests.clone())
            .build(),
    );
    watcher_aws::provision::ensure_schedule_group(&scheduler, &name)
        .await
        .expect("schedule group");
    let sqs = aws_sdk_sqs::Client::from_conf(
        aws_sdk_sqs::config::Builder::from(&aws)
            .interceptor(requests.clone())
            .build(),
    );
    let queues = watcher_aws::provision::create_lapse_queues(&sqs, &name, 10)
        .await
        .expect("queues");
    Emulator {
        name,
        requests,
        ddb,
        scheduler,
        sqs,
        queues,
    }
}

/// A fresh DynamoDB table on the emulator named after `name` (made unique to the process and
/// the millisecond), and the client that reaches it.
pub async fn emulator_table(name: &str) -> (aws_sdk_dynamodb::Client, String) {
    std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL: start `bash infra/moto.sh`");
    let aws = emulator_config().await;
    let name = format!(
        "{name}-{}-{}",
        std::process::id(),
        jiff::Timestamp::now().as_millisecond()
    );
    let ddb = aws_sdk_dynamodb::Client::new(&aws);
    watcher_store_dynamodb::create_table(&ddb, &name, std::time::Duration::from_secs(30))
        .await
        .expect("table");
    (ddb, name)
}

/// The store over a fresh [`emulator_table`] named after `name`.
pub async fn emulator_store(name: &str) -> Arc<dyn Store> {
    let (ddb, name) = emulator_table(name).await;
    Arc::new(watcher_store_dynamodb::DynamoStore::new(ddb, &name, 30))
}

/// Timers and a lapse queue that do nothing: for tests about something else (cards, the probe).
pub struct Nothing;

#[async_trait::async_trait]
impl Timers for Nothing {
    async fn arm(&self, _: &Tenant, _: &TimerKey, _: Instant) -> Result<(), PortError> {
        Ok(())
    }
    async fn disarm(&self, _: &Tenant, _: &TimerKey) -> Result<(), PortError> {
        Ok(())
    }
}

#[async_trait::async_trait]
impl LapseQueue for Nothing {
    async fn enqueue(&self, _: &OutboxEntry) -> Result<(), PortError> {
        Ok(())
    }
}

/// A function instance's parts at its cold start over `store` (cards read then), its timers and
/// lapse queue doing [`Nothing`].
pub async fn cold_start(store: &Arc<dyn Store>, config: &Config) -> Parts {
    watcher_host::aws::assemble(store.clone(), Arc::new(Nothing), Arc::new(Nothing), config)
        .await
        .expect("parts")
}

/// The timer's sweep (`{"sweep": true}`) on `timer`'s parts at `at`, its cards included.
pub async fn sweep(timer: &Parts, at: Instant) -> TimerReport {
    watcher_lambda::timer::handle_with_cards(
        &timer.watcher,
        &*timer.queue,
        &*timer.timers,
        &timer.cards,
        None,
        &json!({ "sweep": true }),
        at,
    )
    .await
    .unwrap()
}

/// The API function's router for the configuration `toml`, over a table, schedule group and
/// lapse queues named after `name` (made unique) on the emulator, its clock stopped at `now`.
pub async fn api_router(name: &str, toml: &str, now: &str) -> axum::Router {
    let clock = Arc::new(FakeClock::new(Instant::parse(now).expect("instant")));
    api_router_on(name, toml, clock).await
}

/// [`api_router`] on `clock`, which the test keeps to move the API function's time on.
pub async fn api_router_on(name: &str, toml: &str, clock: Arc<FakeClock>) -> axum::Router {
    let Emulator {
        name: unique,
        requests: _,
        ddb,
        scheduler,
        sqs,
        queues,
    } = emulator(name).await;
    let config = Config::from_toml(toml).expect("config");
    let store: Arc<dyn Store> =
        Arc::new(watcher_store_dynamodb::DynamoStore::new(ddb, &unique, 30));
    let timers = Arc::new(
        watcher_aws::SchedulerTimers::new(
            scheduler,
            watcher_aws::SchedulerConfig::new(&unique, TIMER_ARN, ROLE_ARN),
        )
        .expect("timers"),
    );
    let queue = Arc::new(watcher_aws::SqsLapseQueue::new(sqs, &queues.queue_url));
    let parts = watcher_host::aws::assemble(store, timers, queue, &config)
        .await
        .expect("parts");
    watcher_host::aws::api_router(&parts, clock)
}

/// Sends `req` through the API function's `router`: the status, the headers and the body's
/// bytes.
pub async fn respond(
    router: &axum::Router,
    req: lambda_http::Request,
) -> (u16, axum::http::HeaderMap, axum::body::Bytes) {
    let resp = router.clone().oneshot(req).await.expect("router");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, headers, bytes)
}

/// [`respond`] with the body as JSON (`Value::Null` when it is not).
pub async fn call(
    router: &axum::Router,
    req: lambda_http::Request,
) -> (u16, axum::http::HeaderMap, Value) {
    let (status, headers, bytes) = respond(router, req).await;
    (
        status,
        headers,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

/// `GET path` as the operator `ops` ([`OPS_TOML`]).
pub fn ops_get(path: &str) -> lambda_http::Request {
    api_event(
        "GET",
        path,
        json!({ "authorization": "Bearer ops-1" }),
        "",
        false,
    )
}

/// An API Gateway HTTP API (payload 2.0) event; `base64` sends the body base64-encoded, as API
/// Gateway does for bodies it does not take for text.
pub fn api_event(
    method: &str,
    path: &str,
    headers: Value,
    body: &str,
    base64: bool,
) -> lambda_http::Request {
    let body = if base64 {
        base64::engine::general_purpose::STANDARD.encode(body)
    } else {
        body.to_owned()
    };
    let event = json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012", "apiId": "api", "domainName": "api.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "api", "requestId": "req", "routeKey": "$default", "stage": "$default",
            "time": "11/Sep/2026:09:00:00 +0000", "timeEpoch": 1789117200000u64,
            "http": { "method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "carrier" }
        },
        "body": body, "isBase64Encoded": base64
    });
    lambda_http::request::from_str(&event.to_string()).expect("API Gateway event")
}
