//! Notification channels on the AWS deployment (issue 25) against the emulator: the timer
//! function's parts build the channels from the configuration, the channel's cursor is an item
//! of the DynamoDB table, and a lapse is told once it is `NOTIFY_SETTLE` old (lapse-task
//! positions there are time-ordered ids taken by concurrent functions), once, signed, through a
//! cold start.
//!
//! An `sns` channel publishes the same event to an SNS topic of the emulator, read back through an
//! SQS queue subscribed to it.
//!
//! Needs moto: `bash infra/moto.sh` and `AWS_ENDPOINT_URL` (infra/test-all.sh does both).

use std::sync::Arc;

use serde_json::json;
use watcher_config::Config;
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_core::EXPECTATIONS_URI;
use watcher_host::aws::{assemble_for, Parts, NOTIFY_SETTLE};
use watcher_host::functions::Function;
use watcher_notify::testing::{Receiver, SECRET};
use watcher_runtime::clock::{Clock, FakeClock};
use watcher_runtime::store::{Commit, OutboxEntry, Store};

use crate::common;

fn at(secs: i64) -> Instant {
    Instant::parse("2026-09-11T00:00:00Z")
        .unwrap()
        .checked_add(jiff::SignedDuration::from_secs(secs))
        .unwrap()
}

fn tenant() -> Tenant {
    Tenant::parse("default".to_owned()).unwrap()
}

/// A lapse task as the engine writes it: the lapse block in the request's metadata.
fn lapse_task(exp: &str, lapsed_at: Instant) -> OutboxEntry {
    let message_id = format!("lapse:{exp}:overdue:{lapsed_at}");
    OutboxEntry::queued(
        tenant(),
        AgentId::parse("booking".to_owned()).unwrap(),
        message_id.clone(),
        ExpectationId::parse(exp.to_owned()).unwrap(),
        LapseKind::Overdue,
        lapsed_at,
        json!({ "message": {
            "messageId": message_id,
            "parts": [{ "text": format!("{exp} is overdue.") }],
            "metadata": { EXPECTATIONS_URI: { "lapse": {
                "expectationId": exp, "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": "PA-9" },
                "expects": "the manifest", "lapse": "overdue",
                "projectedDueAt": lapsed_at.to_string(), "dueAt": lapsed_at.to_string(),
                "lapsedAt": lapsed_at.to_string(), "lineage": 0,
            } } },
        }}),
    )
}

/// Commits `entries` as the engine would queue them.
async fn record(parts: &Parts, entries: Vec<OutboxEntry>) {
    parts
        .watcher
        .store
        .commit(
            &tenant(),
            Commit {
                outbox: entries,
                ..Commit::default()
            },
        )
        .await
        .expect("commit the lapse tasks");
}

/// `functions`' parts over a fresh table of `e`, configured by `toml`.
async fn parts_for(e: &common::Emulator, toml: &str, functions: &[Function]) -> Parts {
    let config = Config::from_toml(toml).expect("config");
    let store: Arc<dyn Store> = Arc::new(watcher_store_dynamodb::DynamoStore::new(
        e.ddb.clone(),
        &e.name,
        30,
    ));
    let timers = Arc::new(
        watcher_aws::SchedulerTimers::new(
            e.scheduler.clone(),
            watcher_aws::SchedulerConfig::new(&e.name, common::TIMER_ARN, common::ROLE_ARN),
        )
        .expect("timers"),
    );
    let queue = Arc::new(watcher_aws::SqsLapseQueue::new(
        e.sqs.clone(),
        &e.queues.queue_url,
    ));
    assemble_for(functions, store, timers, queue, None, &config)
        .await
        .expect("the functions' parts")
}

/// A teacher of the default tenant: a channel's tenant must have an agent or a teacher (else
/// the configuration is refused), and a teacher adds no agent to the directory.
const TEACHER: &str = "[[teachers]]\nid = \"teacher\"\ntoken = \"teacher-token\"\n";

/// The timer function's parts over a fresh table, with one `[[notify]]` channel to `receiver`.
async fn timer_parts(receiver: &Receiver) -> Parts {
    let e = common::emulator("notify").await;
    let toml = format!(
        "public_url = \"https://watcher.example\"\n{TEACHER}[[notify]]\nid = \"ops\"\nurl = \"{}\"\nsecret = \"{SECRET}\"\n",
        receiver.url
    );
    parts_for(&e, &toml, &[Function::Timer]).await
}

#[tokio::test]
async fn the_sweep_tells_a_settled_lapse_once_through_a_cold_start() {
    let receiver = Receiver::start().await;
    let parts = timer_parts(&receiver).await;
    let clock = Arc::new(FakeClock::new(at(0)));
    let notifier = parts
        .notifier(clock.clone() as Arc<dyn Clock>)
        .expect("the timer function tells the configured channel");
    notifier.round().await;
    record(
        &parts,
        vec![lapse_task("exp-1", at(10)), lapse_task("exp-2", at(20))],
    )
    .await;
    let settle = NOTIFY_SETTLE.as_secs() as i64;
    clock.set(at(10 + settle - 1));
    assert_eq!(notifier.round().await[0].delivered, 0, "not settled yet");
    clock.set(at(20 + settle));
    assert_eq!(notifier.round().await[0].delivered, 2);
    let got = receiver.accepted();
    assert_eq!(got.len(), 2);
    assert!(got.iter().all(|r| r.verified));
    assert_eq!(got[0].body["data"]["block"]["expectationId"], "exp-1");
    assert_eq!(
        got[1].body["data"]["links"]["timeline"],
        "https://watcher.example/v1/subjects/shipment/PA%2D9/timeline.svg"
    );
    let state = parts
        .watcher
        .store
        .channel_state(&tenant(), "ops")
        .await
        .expect("read the channel's item")
        .expect("kept in the table");
    assert_eq!(state.delivered, 2);

    // A cold start: new parts' notifier on the same table tells nothing again.
    let again = parts
        .notifier(clock.clone() as Arc<dyn Clock>)
        .expect("a notifier");
    clock.set(at(20 + settle + 300));
    assert_eq!(again.round().await[0].delivered, 0);
    assert_eq!(receiver.seen().len(), 2);
}

const CARD: &str = include_str!("../../../examples/booking-card.json");

/// A lapse task the agent refused, as the submitter writes it in the table, is told by the
/// timer's sweep once it is settled: the agent's first as `delivery.failing`, once, through a
/// cold start (what the channel saw of the agent is in its item).
#[tokio::test]
async fn a_failed_lapse_task_is_told_once_settled_through_a_cold_start() {
    let receiver = Receiver::start().await;
    let e = common::emulator("notify-failed").await;
    let toml = format!(
        "public_url = \"https://watcher.example\"\n[[agents]]\nid = \"booking\"\ncard = '''{CARD}'''\nendpoint = \"http://127.0.0.1:9/a2a\"\npush_token = \"push-1\"\n[[notify]]\nid = \"ops\"\nurl = \"{}\"\nsecret = \"{SECRET}\"\nevents = [\"delivery.failing\", \"lapse_task.failed\"]\n",
        receiver.url
    );
    let parts = parts_for(&e, &toml, &[Function::Timer]).await;
    let clock = Arc::new(FakeClock::new(at(0)));
    let notifier = parts.notifier(clock.clone() as Arc<dyn Clock>).unwrap();
    notifier.round().await;

    let queued = lapse_task("exp-f", at(-1000));
    record(&parts, vec![queued.clone()]).await;
    let mut failed = queued;
    failed.delivery = watcher_runtime::store::DeliveryState::Failed;
    failed.attempts = 1;
    failed.next_attempt_at = at(10);
    failed.last_error = Some("agent answered JSON-RPC error -32602".into());
    parts.watcher.store.outbox_update(&failed).await.unwrap();

    let settle = NOTIFY_SETTLE.as_secs() as i64;
    clock.set(at(10 + settle - 1));
    assert_eq!(notifier.round().await[0].delivered, 0, "not settled yet");
    clock.set(at(10 + settle));
    assert_eq!(notifier.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].verified);
    assert_eq!(got[0].body["type"], "delivery.failing");
    assert_eq!(
        got[0].body["data"]["lapseTask"]["messageId"],
        failed.message_id.as_str()
    );

    let again = parts.notifier(clock.clone() as Arc<dyn Clock>).unwrap();
    clock.set(at(10 + settle + 300));
    assert_eq!(again.round().await[0].delivered, 0);
    assert_eq!(receiver.seen().len(), 1);
}

#[tokio::test]
async fn functions_other_than_the_timer_tell_nobody() {
    let receiver = Receiver::start().await;
    let e = common::emulator("notify-api").await;
    let toml = format!(
        "{TEACHER}[[notify]]\nid = \"ops\"\nurl = \"{}\"\n",
        receiver.url
    );
    let parts = parts_for(&e, &toml, &[Function::Api]).await;
    assert!(parts.notifier(Arc::new(FakeClock::new(at(0)))).is_none());
}

#[tokio::test]
async fn an_sns_channel_publishes_the_event_with_its_id_and_type_as_attributes() {
    let e = common::emulator("notify-sns").await;
    let aws = common::emulator_config().await;
    let sns = aws_sdk_sns::Client::new(&aws);
    let topic = sns
        .create_topic()
        .name(format!("{}-notify", e.name))
        .send()
        .await
        .expect("a topic")
        .topic_arn
        .expect("its ARN");
    let queue_url = e
        .sqs
        .create_queue()
        .queue_name(format!("{}-notified", e.name))
        .send()
        .await
        .expect("a queue")
        .queue_url
        .expect("its URL");
    let queue_arn = e
        .sqs
        .get_queue_attributes()
        .queue_url(&queue_url)
        .attribute_names(aws_sdk_sqs::types::QueueAttributeName::QueueArn)
        .send()
        .await
        .unwrap()
        .attributes
        .unwrap()[&aws_sdk_sqs::types::QueueAttributeName::QueueArn]
        .clone();
    sns.subscribe()
        .topic_arn(&topic)
        .protocol("sqs")
        .endpoint(&queue_arn)
        .send()
        .await
        .expect("subscribe the queue");

    let toml =
        format!("{TEACHER}[[notify]]\nid = \"topic\"\nformat = \"sns\"\nurl = \"{topic}\"\n");
    let mut parts = parts_for(&e, &toml, &[Function::Timer]).await;
    parts.notifying.as_mut().expect("the channel").publisher = Some(Arc::new(
        watcher_host::aws::sns::SnsPublisher::new(sns.clone()),
    ));
    let clock = Arc::new(FakeClock::new(at(0)));
    let notifier = parts.notifier(clock.clone() as Arc<dyn Clock>).unwrap();
    notifier.round().await;
    record(&parts, vec![lapse_task("exp-sns", at(10))]).await;
    clock.set(at(10 + NOTIFY_SETTLE.as_secs() as i64));
    assert_eq!(notifier.round().await[0].delivered, 1);

    let got = e
        .sqs
        .receive_message()
        .queue_url(&queue_url)
        .wait_time_seconds(5)
        .send()
        .await
        .unwrap()
        .messages
        .unwrap_or_default();
    assert_eq!(got.len(), 1);
    let envelope: serde_json::Value =
        serde_json::from_str(got[0].body.as_deref().unwrap()).unwrap();
    assert_eq!(
        envelope["Subject"],
        "a2a-watcher: overdue shipment.manifest for shipment PA-9 (agent booking)"
    );
    let message: serde_json::Value =
        serde_json::from_str(envelope["Message"].as_str().unwrap()).unwrap();
    assert_eq!(message["type"], "lapse.recorded");
    assert_eq!(message["data"]["block"]["expectationId"], "exp-sns");
    assert_eq!(
        envelope["MessageAttributes"]["type"]["Value"],
        "lapse.recorded"
    );
    let id = envelope["MessageAttributes"]["webhook-id"]["Value"]
        .as_str()
        .unwrap();
    assert!(id.starts_with("msg_"), "{id}");
    let state = parts
        .watcher
        .store
        .channel_state(&tenant(), "topic")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(state.target.as_deref(), Some(topic.as_str()));
}
