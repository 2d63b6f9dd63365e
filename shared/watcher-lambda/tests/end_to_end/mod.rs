//! The serverless deployment end to end on the AWS emulator (moto): the API function's routes
//! driven with real API Gateway HTTP API events, records in DynamoDB, schedules in EventBridge
//! Scheduler, the timer function invoked with a schedule's stored input, lapse tasks through
//! SQS FIFO, the submitter with a real `SqsEvent`, and a capture agent at the end.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use std::sync::Arc;

use a2a_types::TaskState;
use aws_lambda_events::event::sqs::SqsEvent;
use serde_json::{json, Value};
use tokio::sync::Notify;
use watcher_config::Config;
use watcher_core::ids::Tenant;
use watcher_core::record::Status;
use watcher_core::time::Instant;
use watcher_delivery::testing::{Behaviour, CaptureAgent, Reply};
use watcher_host::aws::{assemble_for, assemble_with_timer_queue, Parts};
use watcher_host::functions::Function;
use watcher_http::{watcher_router, AppState};
use watcher_runtime::clock::FakeClock;
use watcher_runtime::store::{DeliveryState, Store};

use crate::common;
use common::{ROLE_ARN, TIMER_ARN};

const URI: &str = "https://rsaxb.com/a2a/expectations/v1";
const CARD: &str = include_str!("../../../../examples/booking-card.json");

fn t(s: &str) -> Instant {
    Instant::parse(s).expect("instant")
}

/// One isolated deployment: its own table, schedule group and queues.
struct Deployment {
    parts: Parts,
    clock: Arc<FakeClock>,
    router: axum::Router,
    scheduler: aws_sdk_scheduler::Client,
    sqs: aws_sdk_sqs::Client,
    /// The table's client (the store holds another handle on it).
    ddb: aws_sdk_dynamodb::Client,
    group: String,
    queue_url: String,
    /// The timer queue, when the deployment finishes timers on SQS (docs/aws-latency.md).
    timer_queue_url: Option<String>,
    agent: CaptureAgent,
    /// Every request of the deployment's clients (the test's own calls included).
    requests: common::Requests,
}

async fn deploy(name: &str) -> Deployment {
    deploy_with(name, false).await
}

/// A deployment whose schedules fire a minute early and whose timers due within 900 s go to a
/// delayed-message timer queue, as `template.yaml` deploys it.
async fn deploy_with(name: &str, timer_queue: bool) -> Deployment {
    let agent = CaptureAgent::spawn(Behaviour::accept())
        .await
        .expect("capture agent");
    deploy_to(name, timer_queue, agent).await
}

/// A deployment whose agent `booking` is `agent`.
async fn deploy_to(name: &str, timer_queue: bool, agent: CaptureAgent) -> Deployment {
    let common::Emulator {
        name: unique,
        requests,
        ddb,
        scheduler,
        sqs,
        queues,
    } = common::emulator(name).await;
    let mut card: Value = serde_json::from_str(CARD).expect("card");
    card["supportedInterfaces"][0]["url"] = json!(agent.url());
    let config = Config::from_toml(&format!(
        "{}endpoint = \"{}\"\n{}{}",
        common::booking_toml(&card.to_string()),
        agent.url(),
        common::CARRIER_TOML,
        common::OPS_TOML,
    ))
    .expect("config");
    let store: Arc<dyn Store> = Arc::new(watcher_store_dynamodb::DynamoStore::new(
        ddb.clone(),
        &unique,
        30,
    ));
    let mut scheduler_config = watcher_aws::SchedulerConfig::new(&unique, TIMER_ARN, ROLE_ARN);
    let mut timer_queue_url = None;
    let mut timer_queue_port: Option<Arc<dyn watcher_aws::TimerQueue>> = None;
    if timer_queue {
        scheduler_config = scheduler_config.with_lead(watcher_aws::SCHEDULE_LEAD);
        let (url, _) =
            watcher_aws::provision::create_timer_queue(&sqs, &format!("{unique}-timers"))
                .await
                .expect("timer queue");
        timer_queue_port = Some(Arc::new(watcher_aws::SqsTimerQueue::new(sqs.clone(), &url)));
        timer_queue_url = Some(url);
    }
    let timers = Arc::new(
        watcher_aws::SchedulerTimers::new(scheduler.clone(), scheduler_config).expect("timers"),
    );
    let queue = Arc::new(watcher_aws::SqsLapseQueue::new(
        sqs.clone(),
        &queues.queue_url,
    ));
    let clock = Arc::new(FakeClock::new(t("2026-09-10T01:00:00Z")));
    let parts = assemble_with_timer_queue(
        store.clone(),
        timers.clone(),
        queue.clone(),
        timer_queue_port.clone(),
        &config,
    )
    .await
    .expect("parts")
    .with_clock(clock.clone());
    // The API function's own parts, as it builds them: it leaves schedule deletes to the timer
    // queue.
    let api = assemble_for(
        &[Function::Api],
        store,
        timers,
        queue,
        timer_queue_port,
        &config,
    )
    .await
    .expect("the API function's parts");
    let router = watcher_router(AppState {
        watcher: api.watcher.clone(),
        credentials: api.credentials.clone(),
        clock: clock.clone(),
        wake: Arc::new(Notify::new()),
    });
    Deployment {
        parts,
        clock,
        router,
        scheduler,
        sqs,
        ddb,
        group: unique,
        queue_url: queues.queue_url,
        timer_queue_url,
        agent,
        requests,
    }
}

/// Delayed wake-ups taken and dropped: a deployment without a timer queue, whose test wakes
/// the lanes itself.
struct Later;

#[async_trait::async_trait]
impl watcher_lambda::submitter::LaneWakes for Later {
    async fn wake_lane_at(
        &self,
        _: &Tenant,
        _: &watcher_core::ids::AgentId,
        _: Instant,
    ) -> Result<(), watcher_runtime::ports::PortError> {
        Ok(())
    }
}

/// An API Gateway HTTP API (payload 2.0) event, as the API function receives it.
fn api_event(method: &str, path: &str, headers: Value, body: &Value) -> lambda_http::Request {
    common::api_event(method, path, headers, &body.to_string(), false)
}

impl Deployment {
    /// The A2A client's parts ([`assemble_with_timer_queue`] builds every function's).
    fn sending(&self) -> &watcher_host::aws::Sending {
        self.parts.sending.as_ref().expect("every function's parts")
    }

    async fn call(&self, req: lambda_http::Request) -> (u16, Value) {
        let (status, _, body) = common::call(&self.router, req).await;
        (status, body)
    }

    async fn push_booking(&self, deadline_offset: &str) -> Value {
        let _ = deadline_offset;
        let artifact = json!({ "artifactUpdate": { "taskId": "task-booking-7f3a", "contextId": "ctx-northgate-sep",
            "artifact": { "artifactId": "booking-7f3a", "parts": [{ "text": "Booked" }],
                "metadata": { URI: { "expectations": [{
                    "expectationId": "exp-01J8Q0MANIFEST", "kind": "shipment.manifest",
                    "subject": { "type": "shipment", "id": "PA-2026-0901" },
                    "expects": "the airline manifest for PA-2026-0901",
                    "satisfiedBy": { "factKey": "shipment.manifest.received:PA-2026-0901" },
                    "dueAt": "2026-09-10T20:15:00Z", "grace": "PT2H", "basis": "observed" }] } } } } });
        let body = self
            .post_ok(
                "/v1/agents/booking/push",
                json!({ "content-type": "application/json", "x-a2a-notification-token": "push-1" }),
                &artifact,
            )
            .await;
        body
    }

    /// POSTs `body` to `path` with `headers` through the API router; answers the body of its
    /// 200 (any other status fails the test, showing the body).
    async fn post_ok(&self, path: &str, headers: Value, body: &Value) -> Value {
        let (status, answer) = self.call(api_event("POST", path, headers, body)).await;
        assert_eq!(status, 200, "{answer}");
        answer
    }

    /// The carrier reports the manifest for the booking's subject; answered 200.
    async fn report_manifest(&self) {
        let fact = json!({ "factKey": "shipment.manifest.received:PA-2026-0901", "observedAt": "2026-09-10T09:59:00Z",
                           "subject": { "type": "shipment", "id": "PA-2026-0901" } });
        self.post_ok(
            "/v1/facts",
            json!({ "authorization": "Bearer src-1", "content-type": "application/json" }),
            &fact,
        )
        .await;
    }

    /// Up to ten visible messages of the queue at `url`, hidden again for `visibility` seconds
    /// when given (else for the queue's visibility timeout).
    async fn visible(
        &self,
        url: &str,
        visibility: Option<i32>,
    ) -> Vec<aws_sdk_sqs::types::Message> {
        self.sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .set_visibility_timeout(visibility)
            .message_system_attribute_names(aws_sdk_sqs::types::MessageSystemAttributeName::All)
            .send()
            .await
            .expect("receive")
            .messages()
            .to_vec()
    }

    /// The timer queue's visible messages, as the SQS event its event source mapping hands the
    /// timer function.
    async fn timer_messages(&self) -> Value {
        let url = self.timer_queue_url.as_ref().expect("timer queue");
        let records: Vec<Value> = self
            .visible(url, None)
            .await
            .iter()
            .map(|m| {
                json!({ "messageId": m.message_id(), "body": m.body(), "eventSource": "aws:sqs",
                             "receiptHandle": m.receipt_handle() })
            })
            .collect();
        json!({ "Records": records })
    }

    async fn schedules(&self) -> Vec<String> {
        let out = self
            .scheduler
            .list_schedules()
            .group_name(&self.group)
            .send()
            .await
            .expect("list schedules");
        out.schedules()
            .iter()
            .filter_map(|s| s.name().map(str::to_owned))
            .collect()
    }

    /// The stored target input of schedule `name`, as the timer function would receive it.
    async fn schedule_input(&self, name: &str) -> (Value, String) {
        let s = self
            .scheduler
            .get_schedule()
            .group_name(&self.group)
            .name(name)
            .send()
            .await
            .expect("get schedule");
        let input = s
            .target()
            .and_then(|t| t.input())
            .expect("input")
            .to_owned();
        (
            serde_json::from_str(&input).expect("json input"),
            s.schedule_expression().unwrap_or_default().to_owned(),
        )
    }

    async fn fire(&self, input: &Value, now: Instant) -> watcher_lambda::timer::TimerReport {
        let following = self.following();
        watcher_lambda::timer::handle(
            &*self.parts.watcher,
            &*self.parts.queue,
            &*self.parts.timers,
            Some(&following),
            input,
            now,
        )
        .await
        .expect("timer")
    }

    /// What the timer function's sweep follows lapse tasks with, as `functions/timer` builds it.
    fn following(&self) -> watcher_lambda::timer::Following<'_> {
        watcher_lambda::timer::Following {
            submitter: &self.sending().submitter,
            endpoints: &self.parts.endpoints,
            reconciler: Some(&*self.sending().reconciler),
            budget: watcher_lambda::timer::FOLLOW_BUDGET,
        }
    }

    /// Receives what is on the lapse queue as a Lambda `SqsEvent`, each record's `attributes`
    /// the message's system attributes as SQS answered them (`ApproximateReceiveCount` among
    /// them), as the event source mapping hands them over.
    async fn receive(&self) -> SqsEvent {
        let records: Vec<Value> = self
            .visible(&self.queue_url, Some(0))
            .await
            .iter()
            .map(|m| json!({ "messageId": m.message_id(), "receiptHandle": m.receipt_handle(), "body": m.body(),
                             "attributes": m.attributes().into_iter().flatten()
                                 .map(|(k, v)| (k.as_str().to_owned(), Value::from(v.as_str())))
                                 .collect::<serde_json::Map<String, Value>>(),
                             "messageAttributes": {}, "eventSource": "aws:sqs",
                             "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lapses.fifo", "awsRegion": "us-east-1" }))
            .collect();
        serde_json::from_value(json!({ "Records": records })).expect("SqsEvent")
    }

    /// Hands `event` to the submitter at `now` (a stopped clock, no deadline), as
    /// `functions/submitter` does: one lane per agent woken, delayed wake-ups to the timer queue
    /// when the deployment has one (else taken, and left to the test); answers the wake-ups
    /// handed back.
    async fn submit(&self, event: SqsEvent, now: Instant) -> usize {
        let sending = self.sending();
        let lanes = watcher_lambda::submitter::Lanes {
            store: &*self.parts.watcher.store,
            submitter: &sending.submitter,
            endpoints: &self.parts.endpoints,
            reconciler: Some(&*sending.reconciler),
            per_agent: sending.lanes.per_agent,
            batch: sending.lanes.batch,
        };
        let wakes: Box<dyn watcher_lambda::submitter::LaneWakes> = match &self.timer_queue_url {
            Some(url) => Box::new(watcher_aws::SqsTimerQueue::new(self.sqs.clone(), url)),
            // Without a timer queue, the test hands the lanes their next wake-up itself.
            None => Box::new(Later),
        };
        let resp = watcher_lambda::submitter::handle(
            &lanes,
            &*self.parts.redelivery,
            &*wakes,
            &FakeClock::new(now),
            event,
            None,
        )
        .await;
        resp.batch_item_failures.len()
    }

    /// The body of the first `SendMessage` the agent received (before it, the origin check's
    /// `GetTask`).
    fn sent_lapse_task(&self) -> Value {
        self.agent
            .requests()
            .iter()
            .find(|r| r.rpc_method().as_deref() == Some("SendMessage"))
            .and_then(watcher_delivery::testing::CapturedRequest::json)
            .expect("a SendMessage with a JSON-RPC body")
    }

    fn delivered(&self) -> Vec<String> {
        self.agent
            .requests()
            .iter()
            .filter_map(|r| {
                r.json().unwrap_or_default()["params"]["message"]["messageId"]
                    .as_str()
                    .map(str::to_owned)
            })
            .collect()
    }
}

const OVERDUE: &str = "lapse:exp-01J8Q0MANIFEST:overdue:2026-09-10T20:15:00Z";

mod costs_and_partitions;
mod following;
mod schedule_deletes;
mod timers;
mod wake_ups;
