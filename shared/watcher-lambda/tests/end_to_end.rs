//! The serverless deployment end to end on the AWS emulator (moto): the API function's routes
//! driven with real API Gateway HTTP API events, records in DynamoDB, schedules in EventBridge
//! Scheduler, the timer function invoked with a schedule's stored input, lapse tasks through
//! SQS FIFO, the submitter with a real `SqsEvent`, and a capture agent at the end.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use std::sync::Arc;

use a2a_types::TaskState;
use aws_lambda_events::event::sqs::SqsEvent;
use http_body_util::BodyExt;
use serde_json::{json, Value};
use tokio::sync::Notify;
use tower::ServiceExt;
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
const CARD: &str = include_str!("../../../examples/booking-card.json");

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
        r#"
[[agents]]
id = "booking"
card = '''{card}'''
endpoint = "{url}"
push_token = "push-1"
[[sources]]
id = "carrier-feed:emirates"
token = "src-1"
[[operators]]
id = "ops"
token = "ops-1"
"#,
        card = card,
        url = agent.url()
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

/// An API Gateway HTTP API (payload 2.0) event, as the API function receives it.
fn api_event(method: &str, path: &str, headers: Value, body: &Value) -> lambda_http::Request {
    let event = json!({
        "version": "2.0", "routeKey": "$default", "rawPath": path, "rawQueryString": "",
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012", "apiId": "api", "domainName": "api.execute-api.us-east-1.amazonaws.com",
            "domainPrefix": "api", "requestId": "req", "routeKey": "$default", "stage": "$default",
            "time": "10/Sep/2026:01:00:00 +0000", "timeEpoch": 1789000000000u64,
            "http": { "method": method, "path": path, "protocol": "HTTP/1.1", "sourceIp": "127.0.0.1", "userAgent": "test" }
        },
        "body": body.to_string(), "isBase64Encoded": false
    });
    lambda_http::request::from_str(&event.to_string()).expect("API Gateway event")
}

impl Deployment {
    /// The A2A client's parts ([`assemble_with_timer_queue`] builds every function's).
    fn sending(&self) -> &watcher_host::aws::Sending {
        self.parts.sending.as_ref().expect("every function's parts")
    }

    async fn call(&self, req: lambda_http::Request) -> (u16, Value) {
        let resp = self.router.clone().oneshot(req).await.expect("router");
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.expect("body").to_bytes();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
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

    /// The timer queue's visible messages, as the SQS event its event source mapping hands the
    /// timer function.
    async fn timer_messages(&self) -> Value {
        let url = self.timer_queue_url.as_ref().expect("timer queue");
        let out = self
            .sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive");
        let records: Vec<Value> = out
            .messages()
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
            .filter_map(|s| s.name().map(str::to_string))
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
            .to_string();
        (
            serde_json::from_str(&input).expect("json input"),
            s.schedule_expression().unwrap_or_default().to_string(),
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

    /// Receives what is on the lapse queue as a Lambda `SqsEvent`.
    async fn receive(&self) -> SqsEvent {
        let out = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(10)
            .visibility_timeout(0)
            .send()
            .await
            .expect("receive");
        let records: Vec<Value> = out
            .messages()
            .iter()
            .map(|m| json!({ "messageId": m.message_id(), "receiptHandle": m.receipt_handle(), "body": m.body(),
                             "attributes": {}, "messageAttributes": {}, "eventSource": "aws:sqs",
                             "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lapses.fifo", "awsRegion": "us-east-1" }))
            .collect();
        serde_json::from_value(json!({ "Records": records })).expect("SqsEvent")
    }

    async fn submit(&self, event: SqsEvent, now: Instant) -> usize {
        let resp = watcher_lambda::submitter::handle(
            &*self.parts.watcher.store,
            &self.sending().submitter,
            &self.parts.endpoints,
            Some(&*self.sending().reconciler),
            &*self.parts.redelivery,
            event,
            now,
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
            .and_then(|r| r.json())
            .expect("a SendMessage with a JSON-RPC body")
    }

    fn delivered(&self) -> Vec<String> {
        self.agent
            .requests()
            .iter()
            .filter_map(|r| {
                r.json().unwrap_or_default()["params"]["message"]["messageId"]
                    .as_str()
                    .map(str::to_string)
            })
            .collect()
    }
}

const OVERDUE: &str = "lapse:exp-01J8Q0MANIFEST:overdue:2026-09-10T20:15:00Z";

#[tokio::test(flavor = "multi_thread")]
async fn push_schedule_fire_queue_submit_delivers_exactly_one_lapse_task() {
    let d = deploy("e2e").await;
    let pushed = d.push_booking("").await;
    assert_eq!(pushed["raised"], json!(["exp-01J8Q0MANIFEST"]));

    // Recorded in DynamoDB.
    let subject = watcher_core::ids::Subject::parse("shipment", "PA-2026-0901").unwrap();
    let state = d
        .parts
        .watcher
        .store
        .subject(&Tenant::default_tenant(), &subject)
        .await
        .unwrap()
        .expect("subject");
    assert_eq!(state.records.len(), 1);

    // One schedule, for the deadline 20:15 + 2h, in UTC.
    let names = d.schedules().await;
    assert_eq!(names.len(), 1, "{names:?}");
    let (input, expression) = d.schedule_input(&names[0]).await;
    assert_eq!(expression, "at(2026-09-10T22:15:00)");
    assert_eq!(input["timer"]["kind"], "deadline");

    // The schedule fires: the timer function lapses it and queues the task.
    let report = d.fire(&input, t("2026-09-10T22:15:20Z")).await;
    assert_eq!(report.lapses, 1);
    let event = d.receive().await;
    assert_eq!(event.records.len(), 1);
    assert_eq!(d.submit(event.clone(), t("2026-09-10T22:15:21Z")).await, 0);
    assert_eq!(d.delivered(), [OVERDUE]);

    // The timer fired twice: nothing more lapses, nothing more is sent.
    assert_eq!(d.fire(&input, t("2026-09-10T22:15:40Z")).await.lapses, 0);
    // The SQS message delivered twice: the outbox says sent; the agent sees one task.
    assert_eq!(d.submit(event, t("2026-09-10T22:16:00Z")).await, 0);
    let again = d.receive().await;
    d.submit(again, t("2026-09-10T22:16:01Z")).await;
    assert_eq!(d.delivered(), [OVERDUE]);

    // The lapse is visible to an operator, delivered.
    let (status, lapses) = d
        .call(api_event(
            "GET",
            "/v1/lapses",
            json!({ "authorization": "Bearer ops-1" }),
            &json!(null),
        ))
        .await;
    assert_eq!(status, 200);
    assert_eq!(lapses["lapses"][0]["delivery"], "sent");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schedule_deleted_behind_the_watchers_back_still_lapses_by_the_sweep() {
    let d = deploy("e2e-sweep").await;
    d.push_booking("").await;
    for name in d.schedules().await {
        d.scheduler
            .delete_schedule()
            .group_name(&d.group)
            .name(name)
            .send()
            .await
            .expect("delete");
    }
    assert!(d.schedules().await.is_empty());
    let report = watcher_lambda::timer::handle(
        &*d.parts.watcher,
        &*d.parts.queue,
        &*d.parts.timers,
        Some(&d.following()),
        &json!({ "sweep": true }),
        t("2026-09-10T22:20:00Z"),
    )
    .await
    .expect("sweep");
    assert_eq!(report.lapses, 1);
    let event = d.receive().await;
    d.submit(event, t("2026-09-10T22:20:01Z")).await;
    assert_eq!(d.delivered(), [OVERDUE]);
    // Late, never skipped: lapsedAt is the sweep's clock.
    let task = d.sent_lapse_task();
    assert_eq!(
        task["params"]["message"]["metadata"][URI]["lapse"]["lapsedAt"],
        "2026-09-10T22:20:00Z"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_timer_woken_forty_seconds_early_lapses_nothing_and_re_arms() {
    let d = deploy("e2e-early").await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    // Scheduler deletes a schedule once it fires; an early wake must put it back.
    d.scheduler
        .delete_schedule()
        .group_name(&d.group)
        .name(&names[0])
        .send()
        .await
        .expect("delete");
    let report = d.fire(&input, t("2026-09-10T22:14:20Z")).await;
    assert_eq!(report.lapses, 0);
    assert_eq!(d.receive().await.records.len(), 0);
    let (again, expression) = d.schedule_input(&names[0]).await;
    assert_eq!(again, input);
    assert_eq!(expression, "at(2026-09-10T22:15:00)");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fact_and_a_timer_racing_on_one_expectation_give_one_lapse_at_most() {
    let d = deploy("e2e-race").await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    d.clock.set(t("2026-09-10T22:15:30Z"));
    let fact = json!({ "factKey": "shipment.manifest.received:PA-2026-0901", "observedAt": "2026-09-10T22:10:00Z",
                       "subject": { "type": "shipment", "id": "PA-2026-0901" } });
    let fact_call = d.call(api_event(
        "POST",
        "/v1/facts",
        json!({ "authorization": "Bearer src-1", "content-type": "application/json" }),
        &fact,
    ));
    let timer_call = d.fire(&input, t("2026-09-10T22:15:30Z"));
    let ((status, _), _) = tokio::join!(fact_call, timer_call);
    assert_eq!(status, 200);
    // Whichever won, the deadline had passed on the watcher's clock before the fact arrived:
    // exactly one overdue lapse, and the expectation is satisfied (late).
    let records = d
        .parts
        .watcher
        .store
        .subject(
            &Tenant::default_tenant(),
            &watcher_core::ids::Subject::parse("shipment", "PA-2026-0901").unwrap(),
        )
        .await
        .unwrap()
        .expect("subject")
        .records;
    assert_eq!(records[0].lapses.len(), 1);
    assert_eq!(records[0].status, watcher_core::record::Status::Satisfied);
    let event = d.receive().await;
    assert_eq!(event.records.len(), 1);
    d.submit(event, t("2026-09-10T22:15:31Z")).await;
    assert_eq!(d.delivered(), [OVERDUE]);
    // The satisfied expectation's schedule is gone.
    assert!(d.schedules().await.is_empty());
}

/// `ApproximateNumberOfMessages` and `ApproximateNumberOfMessagesDelayed` of the queue at `url`.
async fn visible_and_delayed(sqs: &aws_sdk_sqs::Client, url: &str) -> (u32, u32) {
    use aws_sdk_sqs::types::QueueAttributeName as A;
    let out = sqs
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(A::ApproximateNumberOfMessages)
        .attribute_names(A::ApproximateNumberOfMessagesDelayed)
        .send()
        .await
        .expect("queue attributes");
    let get = |name: A| -> u32 {
        out.attributes()
            .and_then(|a| a.get(&name))
            .map(|v| v.parse().expect("count"))
            .unwrap_or_default()
    };
    (
        get(A::ApproximateNumberOfMessages),
        get(A::ApproximateNumberOfMessagesDelayed),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_schedule_a_minute_early_then_a_delayed_message_lapses_at_the_deadline_never_before() {
    let d = deploy_with("e2e-lead", true).await;
    let timer_queue = d.timer_queue_url.clone().expect("timer queue");
    d.push_booking("").await;

    // The deadline 22:15:00 is far off: one schedule, armed a minute early, flexible window off.
    let names = d.schedules().await;
    assert_eq!(names.len(), 1, "{names:?}");
    let (input, expression) = d.schedule_input(&names[0]).await;
    assert_eq!(expression, "at(2026-09-10T22:14:00)");
    assert_eq!(visible_and_delayed(&d.sqs, &timer_queue).await, (0, 0));

    // Scheduler fires within its minute, here at 22:14:58.3: early, so nothing lapses and nothing
    // is queued for the submitter; the rest of the wait is one message delayed 2 s (1.7 s
    // rounded up), to the timer queue.
    let report = d.fire(&input, t("2026-09-10T22:14:58.3Z")).await;
    assert_eq!((report.evaluated, report.lapses), (1, 0));
    assert!(d.receive().await.records.is_empty());
    assert_eq!(visible_and_delayed(&d.sqs, &timer_queue).await, (0, 1));
    let sent = std::time::Instant::now();
    let message = loop {
        let out = d
            .sqs
            .receive_message()
            .queue_url(&timer_queue)
            .wait_time_seconds(1)
            .send()
            .await
            .expect("receive");
        if let Some(m) = out.messages().first() {
            break m.clone();
        }
        assert!(sent.elapsed().as_secs() < 10, "no delayed timer message");
    };
    // moto counts the delay in whole seconds from the send: at least about 2 s after it.
    assert!(
        sent.elapsed() >= std::time::Duration::from_millis(1500),
        "{:?}",
        sent.elapsed()
    );
    let body: Value = serde_json::from_str(message.body().expect("body")).expect("json");
    assert_eq!(body, input, "the message carries the schedule's own input");

    // The timer function receives it through its event source mapping, as an SQS event.
    let event = json!({ "Records": [{ "messageId": message.message_id(), "body": message.body(),
        "eventSource": "aws:sqs", "receiptHandle": message.receipt_handle() }] });
    // Delivered a little early on the function's clock (clock skew): still nothing lapses; the
    // remaining 0.4 s becomes another message, delayed 1 s.
    let early = d.fire(&event, t("2026-09-10T22:14:59.6Z")).await;
    assert_eq!((early.evaluated, early.lapses), (1, 0));
    assert!(early.batch_item_failures.is_empty());
    assert!(d.receive().await.records.is_empty());
    assert_eq!(visible_and_delayed(&d.sqs, &timer_queue).await.1, 1);
    // At the deadline: the lapse, once, within a second of it.
    let due = d.fire(&event, t("2026-09-10T22:15:00.4Z")).await;
    assert_eq!((due.evaluated, due.lapses), (1, 1));
    let lapse = d.receive().await;
    assert_eq!(lapse.records.len(), 1);
    assert_eq!(d.submit(lapse, t("2026-09-10T22:15:00.6Z")).await, 0);
    assert_eq!(d.delivered(), [OVERDUE]);
    // The second delayed message arrives late: lapses nothing more.
    assert_eq!(d.fire(&event, t("2026-09-10T22:15:01Z")).await.lapses, 0);
    let task = d.sent_lapse_task();
    assert_eq!(
        task["params"]["message"]["metadata"][URI]["lapse"]["lapsedAt"],
        "2026-09-10T22:15:00.4Z"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_deadline_within_fifteen_minutes_goes_straight_to_a_delayed_message() {
    let d = deploy_with("e2e-short", true).await;
    let timer_queue = d.timer_queue_url.clone().expect("timer queue");
    // Pushed ten minutes before the deadline (22:15): no schedule, one delayed message.
    d.clock.set(t("2026-09-10T22:05:00Z"));
    d.push_booking("").await;
    assert!(d.schedules().await.is_empty());
    assert_eq!(visible_and_delayed(&d.sqs, &timer_queue).await, (0, 1));
}

/// A JSON-RPC result answering `req`.
fn rpc_result(req: &watcher_delivery::testing::CapturedRequest, result: Value) -> Reply {
    Reply::Http {
        status: 200,
        headers: vec![("content-type".into(), "application/json".into())],
        body: json!({ "jsonrpc": "2.0", "id": req.rpc_id(), "result": result }).to_string(),
    }
}

/// The methods the agent was called with, in order.
fn methods(agent: &CaptureAgent) -> Vec<String> {
    agent
        .requests()
        .iter()
        .filter_map(|r| r.rpc_method())
        .collect()
}

/// The origin task is canceled and the cancel is never pushed: when the lapse message reaches
/// the submitter, `GetTask` on the origin finds it canceled, the expectation is withdrawn and the
/// lapse task is marked `withdrawn`, never sent (serve's origin check before the first send).
#[tokio::test(flavor = "multi_thread")]
async fn a_cancel_never_pushed_gives_no_lapse_task_on_aws() {
    let agent = CaptureAgent::spawn(Behaviour::from_fn(|_, req| {
        match req.rpc_method().as_deref() {
            Some("GetTask") => rpc_result(
                req,
                json!({ "id": req.json().unwrap_or_default()["params"]["id"],
                        "contextId": "ctx-northgate-sep",
                        "status": { "state": "TASK_STATE_CANCELED",
                                    "timestamp": "2026-09-10T02:00:00Z" } }),
            ),
            _ => Reply::task("lapse-task-1", TaskState::Submitted),
        }
    }))
    .await
    .expect("capture agent");
    let d = deploy_to("e2e-origin-check", false, agent).await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    d.clock.set(t("2026-09-10T22:15:20Z"));
    assert_eq!(d.fire(&input, t("2026-09-10T22:15:20Z")).await.lapses, 1);
    let event = d.receive().await;
    assert_eq!(event.records.len(), 1);
    d.clock.set(t("2026-09-10T22:15:21Z"));
    assert_eq!(d.submit(event, t("2026-09-10T22:15:21Z")).await, 0);

    assert_eq!(
        methods(&d.agent),
        ["GetTask"],
        "asked for the origin, sent nothing"
    );
    assert!(d.delivered().is_empty());
    let tenant = Tenant::default_tenant();
    let store = &d.parts.watcher.store;
    let entry = store
        .outbox_get(
            &tenant,
            &watcher_core::ids::AgentId::parse("booking").unwrap(),
            OVERDUE,
        )
        .await
        .unwrap()
        .expect("outbox entry");
    assert_eq!(entry.delivery, DeliveryState::Withdrawn);
    let subject = watcher_core::ids::Subject::parse("shipment", "PA-2026-0901").unwrap();
    let state = store.subject(&tenant, &subject).await.unwrap().unwrap();
    assert_eq!(state.records[0].status, Status::Withdrawn);
}

/// The agent was asked for no push notifications and never pushes: the sweep asks for the
/// delivered lapse task with `GetTask` once its next poll is due, and its state follows the
/// agent's answer to `TASK_STATE_COMPLETED`, after which it is no longer followed.
#[tokio::test(flavor = "multi_thread")]
async fn a_lapse_task_never_pushed_follows_get_task_to_completed_at_the_sweep() {
    let agent = CaptureAgent::spawn_keeping_tasks(Behaviour::always(Reply::task(
        "lapse-task-1",
        TaskState::Working,
    )))
    .await
    .expect("capture agent");
    let d = deploy_to("e2e-follow", false, agent).await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    d.clock.set(t("2026-09-10T22:15:20Z"));
    d.fire(&input, t("2026-09-10T22:15:20Z")).await;
    d.clock.set(t("2026-09-10T22:15:21Z"));
    assert_eq!(
        d.submit(d.receive().await, t("2026-09-10T22:15:21Z")).await,
        0
    );
    assert_eq!(d.delivered(), [OVERDUE]);
    let tenant = Tenant::default_tenant();
    let booking: watcher_core::ids::AgentId = watcher_core::ids::AgentId::parse("booking").unwrap();
    let entry = |d: &Deployment| {
        let store = d.parts.watcher.store.clone();
        let (tenant, booking) = (tenant.clone(), booking.clone());
        async move {
            store
                .outbox_get(&tenant, &booking, OVERDUE)
                .await
                .unwrap()
                .expect("outbox entry")
        }
    };
    let sent = entry(&d).await;
    assert_eq!(sent.task_state.as_deref(), Some("TASK_STATE_WORKING"));
    assert!(sent.follow_at.is_some(), "followed: no push was asked for");

    // The agent finishes the task and pushes nothing; the next sweep asks.
    d.agent.set_task_state("lapse-task-1", TaskState::Completed);
    d.clock.set(t("2026-09-10T22:20:00Z"));
    let report = d
        .fire(&json!({ "sweep": true }), t("2026-09-10T22:20:00Z"))
        .await;
    assert_eq!(report.followed, 1);
    let followed = entry(&d).await;
    assert_eq!(followed.task_state.as_deref(), Some("TASK_STATE_COMPLETED"));
    assert_eq!(followed.follow_at, None, "no longer followed");
    let asked = d
        .agent
        .requests()
        .iter()
        .filter(|r| r.rpc_method().as_deref() == Some("GetTask"))
        .filter_map(|r| r.json()?["params"]["id"].as_str().map(str::to_owned))
        .collect::<Vec<_>>();
    assert!(asked.contains(&"lapse-task-1".to_owned()), "{asked:?}");

    // A later sweep polls nothing more.
    let report = d
        .fire(&json!({ "sweep": true }), t("2026-09-10T22:25:00Z"))
        .await;
    assert_eq!(report.followed, 0);
}

/// The origin task is followed in the table from the push that raised its expectation: the
/// sweep after the first poll falls due asks for it with `GetTask`, finds it canceled (the
/// cancel never pushed) and withdraws the expectation long before its deadline; the task is no
/// longer followed, and the deadline lapses nothing.
#[tokio::test(flavor = "multi_thread")]
async fn an_origin_followed_in_the_table_is_found_canceled_by_the_sweep() {
    let agent = CaptureAgent::spawn(Behaviour::from_fn(|_, req| {
        match req.rpc_method().as_deref() {
            Some("GetTask") => rpc_result(
                req,
                json!({ "id": req.json().unwrap_or_default()["params"]["id"],
                        "contextId": "ctx-northgate-sep",
                        "status": { "state": "TASK_STATE_CANCELED",
                                    "timestamp": "2026-09-10T01:00:05Z" } }),
            ),
            _ => Reply::task("lapse-task-1", TaskState::Submitted),
        }
    }))
    .await
    .expect("capture agent");
    let d = deploy_to("e2e-origins", false, agent).await;
    d.push_booking("").await;
    let tenant = Tenant::default_tenant();
    let booking = watcher_core::ids::AgentId::parse("booking").unwrap();
    let followed = d
        .parts
        .watcher
        .store
        .origins_due(&tenant, &booking, t("2026-09-10T02:00:00Z"), 10)
        .await
        .unwrap();
    assert_eq!(
        followed
            .iter()
            .map(|o| o.task_id.as_str())
            .collect::<Vec<_>>(),
        ["task-booking-7f3a"],
        "the push that raised the expectation follows its task in the table"
    );
    assert_eq!(
        followed[0].next_at,
        t("2026-09-10T01:00:10Z"),
        "poll_first after"
    );

    // A sweep before the first poll is due asks nothing.
    let early = d
        .fire(&json!({ "sweep": true }), t("2026-09-10T01:00:05Z"))
        .await;
    assert_eq!(early.origins, 0);
    assert!(methods(&d.agent).is_empty());

    d.clock.set(t("2026-09-10T01:05:00Z"));
    let report = d
        .fire(&json!({ "sweep": true }), t("2026-09-10T01:05:00Z"))
        .await;
    assert_eq!(report.origins, 1);
    assert_eq!(methods(&d.agent), ["GetTask"]);
    let subject = watcher_core::ids::Subject::parse("shipment", "PA-2026-0901").unwrap();
    let state = d
        .parts
        .watcher
        .store
        .subject(&tenant, &subject)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.records[0].status, Status::Withdrawn);
    assert!(
        d.parts
            .watcher
            .store
            .origins_due(&tenant, &booking, t("2026-09-11T00:00:00Z"), 10)
            .await
            .unwrap()
            .is_empty(),
        "a terminal origin is no longer followed"
    );
    let later = d
        .fire(&json!({ "sweep": true }), t("2026-09-10T23:00:00Z"))
        .await;
    assert_eq!((later.lapses, later.origins), (0, 0));
    assert!(d.delivered().is_empty());
}

/// An agent that holds every answer: the sweep's following passes end at their budget, the
/// sweep still returns (long before the function's timeout) with `cutShort`, and the poll it cut
/// short recorded nothing, so the origin is due again at the next sweep.
#[tokio::test(flavor = "multi_thread")]
async fn a_sweep_whose_agent_holds_its_answers_ends_at_its_budget() {
    let agent = CaptureAgent::spawn(Behaviour::accept())
        .await
        .expect("capture agent");
    let d = deploy_to("e2e-budget", false, agent).await;
    d.push_booking("").await;
    d.agent.hold(true);
    let budget = std::time::Duration::from_millis(500);
    let following = watcher_lambda::timer::Following {
        budget,
        ..d.following()
    };
    let started = std::time::Instant::now();
    let report = watcher_lambda::timer::handle(
        &*d.parts.watcher,
        &*d.parts.queue,
        &*d.parts.timers,
        Some(&following),
        &json!({ "sweep": true }),
        t("2026-09-10T01:05:00Z"),
    )
    .await
    .expect("sweep");
    let took = started.elapsed();
    assert!(report.cut_short, "{report:?}");
    assert!(took < budget * 4, "took {took:?}");
    let tenant = Tenant::default_tenant();
    let booking = watcher_core::ids::AgentId::parse("booking").unwrap();
    let still = d
        .parts
        .watcher
        .store
        .origins_due(&tenant, &booking, t("2026-09-10T01:05:00Z"), 10)
        .await
        .unwrap();
    assert_eq!(still.len(), 1, "due again at the next sweep");
    d.agent.hold(false);
}

/// The AWS requests each step of the README's scenario makes, as the functions make them on the
/// emulator, counted by service and operation (`common::Requests`): a push that raises one
/// expectation, a fact that satisfies it in time, and a lapse delivered once (its schedule's
/// early fire, the delayed message's fire, the submitter's send). The test's own look-ups are
/// left out. `docs/costs.md`'s table of measured requests is this count: the test fails when
/// they differ and prints the table; `UPDATE_DOCS=1` writes it.
#[tokio::test(flavor = "multi_thread")]
async fn the_requests_of_each_step_are_docs_costs_tables() {
    use common::costs::{check_generated, render, render_scale, Prices, Quotas, Run, Step};
    let d = deploy_with("e2e-cost", true).await;
    let mut table = Table::of(&d).await;
    d.push_booking("").await;
    let push = table
        .step(&d, "push (raise)", 1, vec![Run::Push], 0, 0)
        .await;
    d.clock.set(t("2026-09-10T10:00:00Z"));
    d.report_manifest().await;
    // The timer function deletes the schedule the fact's commit left to it on the timer queue
    // (its event source's receive, stood in for by the test's, and delete: 1 more request).
    let deferred = d.timer_messages().await;
    assert_eq!(
        d.fire(&deferred, t("2026-09-10T10:00:01Z")).await.disarmed,
        1
    );
    let satisfy = table
        .step(
            &d,
            "fact that satisfies it",
            1,
            vec![Run::Fact, Run::Timer],
            0,
            1,
        )
        .await;

    let d = deploy_with("e2e-cost-lapse", true).await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, _) = d.schedule_input(&names[0]).await;
    let mut table = Table::of(&d).await;
    // The schedule fires a minute early: the rest of the wait goes on the timer queue.
    assert_eq!(d.fire(&input, t("2026-09-10T22:14:00Z")).await.lapses, 0);
    // The delayed message arrives at the deadline: the lapse, queued.
    assert_eq!(d.fire(&input, t("2026-09-10T22:15:00Z")).await.lapses, 1);
    let event = d.receive().await;
    assert_eq!(d.submit(event, t("2026-09-10T22:15:01Z")).await, 0);
    assert_eq!(d.delivered(), [OVERDUE]);
    // One schedule fired; the timer-queue message's receive and delete and the lapse message's
    // delete are the event sources' (the test hands both messages over itself). The timer
    // function deletes schedules itself: nothing waits for it.
    let lapse = table
        .step(
            &d,
            "lapse (overdue), delivered once",
            0,
            vec![Run::Timer, Run::Timer, Run::Submitter],
            1,
            3,
        )
        .await;
    let steps = [push, satisfy, lapse];
    let how = "cargo test -p watcher-lambda --test it end_to_end::the_requests";
    check_generated("costs.md", "costs", &render(&steps, &Prices::load()), how);
    // What each input has of its own: its partitions are not shared with other inputs.
    let own = [
        "PA-2026-0901",
        "task-booking-7f3a",
        "exp-01J8Q0MANIFEST",
        "booking-7f3a",
        // The Task the agent answered the lapse task with: each lapse task gets its own.
        "OUTTASK#default#booking#task-",
    ];
    let scale = render_scale(&steps, &Prices::load(), &Quotas::load(), &own);
    check_generated("costs.md", "scale", &scale, how);

    /// The table between steps: its items and schema, to measure the next step's write units.
    struct Table {
        schema: common::units::Schema,
        items: std::collections::BTreeMap<String, common::units::Item>,
    }
    impl Table {
        async fn of(d: &Deployment) -> Table {
            let schema = common::units::Schema::of(&d.ddb, &d.group).await;
            let items = schema.scan(&d.ddb, &d.group).await;
            d.requests.take_all();
            Table { schema, items }
        }
        /// What the deployment's clients did since the last step, and the step's other counts.
        async fn step(
            &mut self,
            d: &Deployment,
            name: &'static str,
            api_requests: u64,
            runs: Vec<Run>,
            scheduler_invocations: u64,
            event_source_sqs: u64,
        ) -> Step {
            let (requests, measured) = d.requests.take_all();
            let after = self.schema.scan(&d.ddb, &d.group).await;
            d.requests.take_all();
            let partition_units =
                self.schema
                    .partition_units(&measured.writes, &self.items, &after);
            let write_units = partition_units.values().sum();
            self.items = after;
            Step {
                name,
                requests,
                read_halves: measured.read_halves,
                write_units,
                api_requests,
                runs,
                scheduler_invocations,
                event_source_sqs,
                partition_units,
            }
        }
    }
}

/// docs/dynamodb.md, "Partitions": no item or index partition is written by every input. Twenty
/// raises and their twenty facts, each on a subject of its own, for one agent: the partitions
/// each input writes are read from the table before and after it, and none is written by more
/// than a quarter of the inputs.
#[tokio::test]
async fn no_partition_is_written_by_every_input() {
    let d = deploy("e2e-partitions").await;
    let schema = common::units::Schema::of(&d.ddb, &d.group).await;
    let mut items = schema.scan(&d.ddb, &d.group).await;
    let mut written: std::collections::BTreeMap<String, usize> = Default::default();
    let inputs = 40;
    for i in 0..inputs {
        let n = i % 20;
        d.requests.take_all();
        if i < 20 {
            let artifact = json!({ "artifactUpdate": { "taskId": format!("task-{n}"), "contextId": format!("ctx-{n}"),
                "artifact": { "artifactId": format!("a-{n}"), "parts": [{ "text": "Booked" }],
                    "metadata": { URI: { "expectations": [{
                        "expectationId": format!("exp-{n}"), "kind": "shipment.manifest",
                        "subject": { "type": "shipment", "id": format!("PA-{n}") },
                        "expects": format!("the airline manifest for PA-{n}"),
                        "satisfiedBy": { "factKey": format!("shipment.manifest.received:PA-{n}") },
                        "dueAt": "2026-09-10T20:15:00Z", "basis": "observed" }] } } } } });
            let body = d.post_ok("/v1/agents/booking/push", json!({ "content-type": "application/json", "x-a2a-notification-token": "push-1" }), &artifact).await;
            assert_eq!(body["rejected"], json!([]), "{body}");
        } else {
            let fact = json!({ "factKey": format!("shipment.manifest.received:PA-{n}"), "observedAt": "2026-09-10T09:59:00Z",
                               "subject": { "type": "shipment", "id": format!("PA-{n}") } });
            d.post_ok(
                "/v1/facts",
                json!({ "authorization": "Bearer src-1", "content-type": "application/json" }),
                &fact,
            )
            .await;
        }
        let (_, measured) = d.requests.take_all();
        let after = schema.scan(&d.ddb, &d.group).await;
        for p in schema.partitions_written(&measured.writes, &items, &after) {
            *written.entry(p).or_default() += 1;
        }
        items = after;
    }
    let mut busiest: Vec<(&String, &usize)> = written.iter().collect();
    busiest.sort_by(|a, b| b.1.cmp(a.1));
    let busiest: Vec<String> = busiest
        .iter()
        .take(8)
        .map(|(p, n)| format!("{p}: {n}"))
        .collect();
    assert!(
        written.values().all(|n| *n * 4 <= inputs),
        "a partition written by more than a quarter of {inputs} inputs; the busiest: {busiest:#?}"
    );
    assert!(written.len() > inputs, "{written:#?}");
}

/// expectations-v1 §9.3 on AWS, the fact's answer: the commit's schedule delete goes to the timer
/// queue, and the timer function makes it; a delete SQS hands over twice changes nothing more.
#[tokio::test(flavor = "multi_thread")]
async fn a_facts_answer_leaves_the_schedule_delete_to_the_timer_function() {
    let d = deploy_with("e2e-defer", true).await;
    d.push_booking("").await;
    assert_eq!(d.schedules().await.len(), 1);
    d.clock.set(t("2026-09-10T10:00:00Z"));
    d.requests.take();
    d.report_manifest().await;
    let answered = d.requests.take();
    assert_eq!(
        answered.get("Scheduler DeleteSchedule"),
        None,
        "{answered:?}"
    );
    assert_eq!(
        answered.get("SQS SendMessageBatch"),
        Some(&1),
        "{answered:?}"
    );
    assert_eq!(
        d.schedules().await.len(),
        1,
        "deleted after the answer, not before"
    );

    let event = d.timer_messages().await;
    assert_eq!(
        event["Records"].as_array().map(Vec::len),
        Some(1),
        "{event}"
    );
    let report = d.fire(&event, t("2026-09-10T10:00:01Z")).await;
    assert_eq!((report.disarmed, report.lapses), (1, 0));
    assert!(report.batch_item_failures.is_empty());
    assert!(d.schedules().await.is_empty());
    // Redelivered: the delete of a schedule already gone is success, and nothing is armed.
    let again = d.fire(&event, t("2026-09-10T10:00:02Z")).await;
    assert_eq!((again.disarmed, again.lapses), (1, 0));
    assert!(d.schedules().await.is_empty());
}

/// A deferred delete that reaches the timer function after the record armed the timer again
/// (here: a delete for a timer that is still pending) deletes the schedule and arms it again:
/// the record decides, never the message.
#[tokio::test(flavor = "multi_thread")]
async fn a_deferred_delete_of_a_timer_the_record_still_holds_arms_it_again() {
    let d = deploy_with("e2e-defer-race", true).await;
    d.push_booking("").await;
    let names = d.schedules().await;
    let (input, expression) = d.schedule_input(&names[0]).await;
    let body = json!({ "tenant": input["tenant"], "disarm": input["timer"] }).to_string();
    let event =
        json!({ "Records": [{ "messageId": "m-1", "body": body, "eventSource": "aws:sqs" }] });
    let report = d.fire(&event, t("2026-09-10T10:00:00Z")).await;
    assert_eq!((report.disarmed, report.lapses), (1, 0));
    assert!(report.batch_item_failures.is_empty());
    let after = d.schedules().await;
    assert_eq!(after.len(), 1, "armed again");
    assert_eq!(d.schedule_input(&after[0]).await, (input, expression));
}
