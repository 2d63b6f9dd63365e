//! The adapters against moto, a local AWS emulator: `bash infra/moto.sh`, then
//!
//! ```text
//! AWS_ENDPOINT_URL=http://127.0.0.1:5005 AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test \
//!     AWS_REGION=us-east-1 cargo test -p watcher-aws
//! ```
//!
//! Without `AWS_ENDPOINT_URL` these tests fail (never skip): they are the only check that the
//! adapters speak Scheduler's and SQS's APIs. Each test makes its own schedule group and queues,
//! named uniquely, so tests run in parallel on one moto and never see each other's resources.

use std::collections::HashSet;

use aws_sdk_scheduler::operation::get_schedule::GetScheduleError;
use aws_sdk_scheduler::types::{ActionAfterCompletion, FlexibleTimeWindowMode};
use aws_sdk_sqs::types::{MessageSystemAttributeName, QueueAttributeName};
use watcher_aws::provision::{create_lapse_queues, ensure_schedule_group};
use watcher_aws::{
    at_expression, message_group_id, parse_timer_input, parse_wake_up, schedule_name,
    SchedulerConfig, SchedulerTimers, SqsLapseQueue, TimerInput,
};
use watcher_core::engine::{TimerKey, TimerKind};
use watcher_core::ids::{AgentId, ExpectationId, ExpectationRef, Subject, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_runtime::ports::{LapseQueue, PortError, Timers};
use watcher_runtime::store::OutboxEntry;

mod common;
use common::{moto_config, unique};

const TARGET_ARN: &str = "arn:aws:lambda:us-east-1:123456789012:function:lapse-timer";
const ROLE_ARN: &str = "arn:aws:iam::123456789012:role/watcher-scheduler";
const DLQ_ARN: &str = "arn:aws:sqs:us-east-1:123456789012:watcher-timer-dlq";

fn key(agent: &str, id: &str, kind: TimerKind) -> TimerKey {
    TimerKey {
        subject: Subject::parse("shipment", "PA-2026-0901").unwrap(),
        expectation: ExpectationRef {
            agent: AgentId::parse(agent).unwrap(),
            id: ExpectationId::parse(id).unwrap(),
        },
        kind,
    }
}

fn instant(t: &str) -> Instant {
    Instant::parse(t).unwrap()
}

/// Timers in a new schedule group of their own.
async fn spawn_timers() -> (SchedulerTimers, aws_sdk_scheduler::Client, String) {
    let client = aws_sdk_scheduler::Client::new(&moto_config().await);
    let group = unique("g");
    ensure_schedule_group(&client, &group).await.unwrap();
    // Not Scheduler's defaults (185 attempts, one day): moto fills those in when a target has no
    // retry policy, so only other values show that the adapter sends its own.
    let mut config =
        SchedulerConfig::new(&group, TARGET_ARN, ROLE_ARN).with_dead_letter_queue(DLQ_ARN);
    config.max_retry_attempts = 7;
    config.max_event_age_secs = 3_600;
    let timers = SchedulerTimers::new(client.clone(), config).unwrap();
    (timers, client, group)
}

async fn get_schedule(
    client: &aws_sdk_scheduler::Client,
    group: &str,
    name: &str,
) -> Option<aws_sdk_scheduler::operation::get_schedule::GetScheduleOutput> {
    match client
        .get_schedule()
        .group_name(group)
        .name(name)
        .send()
        .await
    {
        Ok(s) => Some(s),
        Err(e)
            if matches!(
                e.as_service_error(),
                Some(GetScheduleError::ResourceNotFoundException(_))
            ) =>
        {
            None
        }
        Err(e) => panic!("get_schedule {name}: {e:?}"),
    }
}

/// The schedules in `group`.
async fn list_schedules(
    client: &aws_sdk_scheduler::Client,
    group: &str,
) -> aws_sdk_scheduler::operation::list_schedules::ListSchedulesOutput {
    client
        .list_schedules()
        .group_name(group)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn arm_creates_rearm_updates_disarm_deletes() {
    let (timers, client, group) = spawn_timers().await;
    let tenant = Tenant::parse("acme").unwrap();
    let key = key("planner", "exp-1", TimerKind::Deadline);
    let name = schedule_name(&tenant, &key);
    let first = instant("2030-09-10T20:15:00.5Z");

    timers.arm(&tenant, &key, first).await.unwrap();
    let s = get_schedule(&client, &group, &name).await.expect("created");
    assert_eq!(s.name(), Some(name.as_str()));
    assert_eq!(s.group_name(), Some(group.as_str()));
    assert_eq!(s.schedule_expression(), Some("at(2030-09-10T20:15:01)"));
    assert_eq!(s.schedule_expression_timezone(), Some("UTC"));
    assert_eq!(
        s.action_after_completion(),
        Some(&ActionAfterCompletion::Delete)
    );
    assert_eq!(
        s.flexible_time_window()
            .map(aws_sdk_scheduler::types::FlexibleTimeWindow::mode),
        Some(&FlexibleTimeWindowMode::Off)
    );
    let target = s.target().expect("target");
    assert_eq!(target.arn(), TARGET_ARN);
    assert_eq!(target.role_arn(), ROLE_ARN);
    assert_eq!(
        target.dead_letter_config().and_then(|d| d.arn()),
        Some(DLQ_ARN)
    );
    let retry = target.retry_policy().expect("retry policy");
    assert_eq!(retry.maximum_retry_attempts(), Some(7));
    assert_eq!(retry.maximum_event_age_in_seconds(), Some(3_600));
    let input = parse_timer_input(target.input().expect("input")).unwrap();
    assert_eq!(
        input,
        TimerInput {
            tenant: tenant.clone(),
            timer: key.clone()
        }
    );

    // Re-anchored: the same schedule moves.
    let second = instant("2030-09-11T08:00:00Z");
    timers.arm(&tenant, &key, second).await.unwrap();
    let s = get_schedule(&client, &group, &name).await.expect("updated");
    assert_eq!(
        s.schedule_expression(),
        Some(at_expression(second).unwrap().as_str())
    );
    assert_eq!(
        s.action_after_completion(),
        Some(&ActionAfterCompletion::Delete)
    );
    let listed = list_schedules(&client, &group).await;
    assert_eq!(listed.schedules().len(), 1, "updated, not duplicated");

    timers.disarm(&tenant, &key).await.unwrap();
    assert!(get_schedule(&client, &group, &name).await.is_none());
    // Not found is success: disarming twice, or a schedule that fired and deleted itself.
    timers.disarm(&tenant, &key).await.unwrap();

    // A later generation of the same timer uses the same name again.
    timers.arm(&tenant, &key, first).await.unwrap();
    assert!(get_schedule(&client, &group, &name).await.is_some());
    timers.disarm(&tenant, &key).await.unwrap();
}

#[tokio::test]
async fn each_timer_has_its_own_schedule() {
    let (timers, client, group) = spawn_timers().await;
    let at = instant("2030-01-01T00:00:00Z");
    let acme = Tenant::parse("acme").unwrap();
    let other = Tenant::parse("other").unwrap();
    let armed = [
        (&acme, key("planner", "exp-1", TimerKind::Deadline)),
        (&acme, key("planner", "exp-1", TimerKind::Horizon)),
        (&acme, key("planner", "exp-2", TimerKind::Deadline)),
        (&acme, key("carrier", "exp-1", TimerKind::Deadline)),
        (&other, key("planner", "exp-1", TimerKind::Deadline)),
    ];
    for (tenant, key) in &armed {
        timers.arm(tenant, key, at).await.unwrap();
    }
    let listed = list_schedules(&client, &group).await;
    let names: HashSet<&str> = listed.schedules().iter().filter_map(|s| s.name()).collect();
    let expected: HashSet<String> = armed
        .iter()
        .map(|(tenant, key)| schedule_name(tenant, key))
        .collect();
    assert_eq!(
        names,
        expected.iter().map(String::as_str).collect::<HashSet<_>>()
    );

    // Disarming one leaves the others.
    timers.disarm(armed[0].0, &armed[0].1).await.unwrap();
    let left = list_schedules(&client, &group).await;
    assert_eq!(left.schedules().len(), armed.len() - 1);
}

#[tokio::test]
async fn ensuring_a_group_twice_keeps_its_schedules() {
    let (timers, client, group) = spawn_timers().await;
    let tenant = Tenant::default_tenant();
    let key = key("planner", "exp-1", TimerKind::Deadline);
    timers
        .arm(&tenant, &key, instant("2030-01-01T00:00:00Z"))
        .await
        .unwrap();
    ensure_schedule_group(&client, &group).await.unwrap();
    assert!(
        get_schedule(&client, &group, &schedule_name(&tenant, &key))
            .await
            .is_some(),
        "re-creating the group emptied it"
    );
}

#[tokio::test]
async fn arming_into_a_missing_group_fails() {
    let client = aws_sdk_scheduler::Client::new(&moto_config().await);
    let timers = SchedulerTimers::new(
        client,
        SchedulerConfig::new(unique("missing"), TARGET_ARN, ROLE_ARN),
    )
    .unwrap();
    let tenant = Tenant::default_tenant();
    let key = key("planner", "exp-1", TimerKind::Deadline);
    // AWS answers ResourceNotFoundException (permanent); moto 5.2.5 answers 500 (retryable).
    let e = timers
        .arm(&tenant, &key, instant("2030-01-01T00:00:00Z"))
        .await
        .unwrap_err();
    assert!(std::error::Error::source(&e).is_some(), "{e}");
    // Disarming there is best effort: the schedule is certainly not there.
    timers.disarm(&tenant, &key).await.unwrap();
}

#[tokio::test]
async fn instants_scheduler_cannot_hold_fail_before_any_call() {
    let (timers, _, _) = spawn_timers().await;
    let e = timers
        .arm(
            &Tenant::default_tenant(),
            &key("planner", "exp-1", TimerKind::Deadline),
            instant("0999-01-01T00:00:00Z"),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, PortError::Permanent { .. }), "{e}");
}

fn entry(tenant: &str, agent: &str, message_id: &str) -> OutboxEntry {
    OutboxEntry::queued(
        Tenant::parse(tenant).unwrap(),
        AgentId::parse(agent).unwrap(),
        message_id.into(),
        ExpectationId::parse("exp-1").unwrap(),
        LapseKind::Overdue,
        instant("2030-01-01T00:00:00Z"),
        serde_json::json!({}),
    )
}

/// One received message: its body and its group id.
struct Received {
    body: String,
    group: String,
}

/// Receives and deletes every message on the queue until a receive comes back empty (FIFO hides
/// a group's later messages while an earlier one is in flight, so each batch is deleted before
/// the next receive).
async fn drain(client: &aws_sdk_sqs::Client, queue_url: &str) -> Vec<Received> {
    let mut out = Vec::new();
    loop {
        let batch = client
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(10)
            .message_system_attribute_names(MessageSystemAttributeName::MessageGroupId)
            .visibility_timeout(30)
            .send()
            .await
            .unwrap();
        let messages = batch.messages();
        if messages.is_empty() {
            return out;
        }
        for m in messages {
            client
                .delete_message()
                .queue_url(queue_url)
                .receipt_handle(m.receipt_handle().unwrap())
                .send()
                .await
                .unwrap();
            out.push(Received {
                body: m.body().unwrap_or_default().to_owned(),
                group: m
                    .attributes()
                    .and_then(|a| a.get(&MessageSystemAttributeName::MessageGroupId))
                    .cloned()
                    .unwrap_or_default(),
            });
        }
    }
}

async fn spawn_queue() -> (SqsLapseQueue, aws_sdk_sqs::Client, String) {
    let client = aws_sdk_sqs::Client::new(&moto_config().await);
    let queues = create_lapse_queues(&client, &unique("lapses"), 5)
        .await
        .unwrap();
    let queue = SqsLapseQueue::new(client.clone(), &queues.queue_url);
    (queue, client, queues.queue_url)
}

/// The whole second of the system clock now (the one [`SqsLapseQueue::wake`] names).
fn second_now() -> i64 {
    jiff::Timestamp::now().as_second()
}

/// A lapse task enqueued is a wake-up of its agent, `{"tenant","agent","second"}` in the agent's
/// group; wake-ups of one agent within a second are one message (FIFO deduplication by tenant,
/// agent and second), and the lapse task itself is not on the queue.
#[tokio::test]
async fn wake_ups_of_one_agent_within_a_second_are_one_message() {
    let (queue, client, url) = spawn_queue().await;
    let task = entry(
        "acme",
        "planner",
        "lapse:exp-1:overdue:2030-01-01T00:00:00Z",
    );
    let before = second_now();
    queue.enqueue(&task).await.unwrap();
    queue.wake(&task.tenant, &task.agent).await.unwrap();
    let after = second_now();
    let received = drain(&client, &url).await;
    let want = if before == after { 1 } else { 2 };
    assert_eq!(received.len(), want, "one a second: {before}..{after}");
    let wake = parse_wake_up(&received[0].body).unwrap();
    assert_eq!((&wake.tenant, &wake.agent), (&task.tenant, &task.agent));
    assert_eq!(wake.second, Some(before));
    assert!(
        !received[0].body.contains("messageId"),
        "{}",
        received[0].body
    );
    assert_eq!(
        received[0].group,
        message_group_id(&task.tenant, &task.agent)
    );
}

/// A wake-up a second later is a new message within SQS's five-minute deduplication window (a
/// lapse task re-queued moments after its first hand-over is not dropped), and so is a
/// continuation, whatever the second: deduplicated by the message it continues, once.
#[tokio::test]
async fn a_later_second_or_a_continuation_is_a_new_message() {
    let (queue, client, url) = spawn_queue().await;
    let (t, a) = (
        Tenant::parse("acme").unwrap(),
        AgentId::parse("planner").unwrap(),
    );
    queue.wake(&t, &a).await.unwrap();
    let first = second_now();
    while second_now() == first {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    queue.wake(&t, &a).await.unwrap();
    queue.wake_continuing(&t, &a, "sqs-1").await.unwrap();
    queue.wake_continuing(&t, &a, "sqs-1").await.unwrap();
    let received = drain(&client, &url).await;
    assert_eq!(
        received.len(),
        3,
        "two seconds' wake-ups and one continuation"
    );
    let last = parse_wake_up(&received[2].body).unwrap();
    assert_eq!(last.second, None, "a continuation names no second");
}

/// A message of an earlier version (one lapse task, with its copy) reads as a wake-up of its
/// agent; a body without a valid tenant and agent is malformed.
#[test]
fn a_message_of_an_earlier_version_is_a_wake_up_of_its_agent() {
    let old = serde_json::json!({ "tenant": "acme", "agent": "planner",
        "messageId": "lapse:exp-1:overdue:t1", "entry": { "anything": true } });
    let wake = parse_wake_up(&old.to_string()).unwrap();
    assert_eq!(wake.tenant.as_str(), "acme");
    assert_eq!(wake.agent.as_str(), "planner");
    assert_eq!(wake.second, None);
    for bad in [
        r#"{"tenant":"acme"}"#,
        r#"{"tenant":"","agent":"planner"}"#,
        "not json",
    ] {
        assert!(parse_wake_up(bad).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn a_handed_back_message_returns_when_its_visibility_is_changed() {
    let (queue, client, url) = spawn_queue().await;
    queue
        .enqueue(&entry(
            "acme",
            "planner",
            "lapse:exp-v:overdue:2030-01-01T00:00:00Z",
        ))
        .await
        .unwrap();
    let receive = || async {
        client
            .receive_message()
            .queue_url(&url)
            .visibility_timeout(300)
            .send()
            .await
            .unwrap()
            .messages()
            .to_vec()
    };
    let first = receive().await;
    assert_eq!(first.len(), 1);
    assert!(receive().await.is_empty(), "invisible for its 300 s");
    // Due again now: visible at once, not after the 300 s.
    queue
        .redeliver_after(first[0].receipt_handle().unwrap(), 0)
        .await
        .unwrap();
    let again = receive().await;
    assert_eq!(again.len(), 1, "back before its visibility timeout");
    assert_eq!(again[0].body(), first[0].body());
    assert!(
        queue
            .redeliver_after("not-a-receipt-handle", 5)
            .await
            .is_err(),
        "an unknown receipt handle is refused"
    );
}

/// Each (tenant, agent) has its own message group: lapse tasks of three agents, however many,
/// are one wake-up each, in its agent's group.
#[tokio::test]
async fn each_agent_has_its_own_group() {
    let (queue, client, url) = spawn_queue().await;
    let sent = [
        entry("acme", "planner", "lapse:exp-1:overdue:t1"),
        entry("acme", "carrier", "lapse:exp-1:overdue:t1"),
        entry("acme", "planner", "lapse:exp-2:overdue:t1"),
        entry("other", "planner", "lapse:exp-1:overdue:t1"),
        entry("acme", "planner", "lapse:exp-3:stalled:t1"),
    ];
    assert!(queue.enqueue_all(&sent).await.iter().all(Result::is_ok));
    let received = drain(&client, &url).await;
    assert_eq!(received.len(), 3, "one wake-up per agent");
    let groups: HashSet<&str> = received.iter().map(|r| r.group.as_str()).collect();
    assert_eq!(groups.len(), 3, "acme/planner, acme/carrier, other/planner");
    for r in &received {
        let m = parse_wake_up(&r.body).unwrap();
        assert_eq!(r.group, message_group_id(&m.tenant, &m.agent));
    }
}

#[tokio::test]
async fn the_lapse_queue_redrives_to_its_dead_letter_queue() {
    let client = aws_sdk_sqs::Client::new(&moto_config().await);
    let queues = create_lapse_queues(&client, &unique("lapses"), 3)
        .await
        .unwrap();
    let attributes = client
        .get_queue_attributes()
        .queue_url(&queues.queue_url)
        .attribute_names(QueueAttributeName::All)
        .send()
        .await
        .unwrap();
    let attributes = attributes.attributes().unwrap();
    assert_eq!(
        attributes
            .get(&QueueAttributeName::FifoQueue)
            .map(String::as_str),
        Some("true")
    );
    let redrive: serde_json::Value = serde_json::from_str(
        attributes
            .get(&QueueAttributeName::RedrivePolicy)
            .expect("redrive policy"),
    )
    .unwrap();
    assert_eq!(redrive["deadLetterTargetArn"], queues.dlq_arn.as_str());
    assert!(queues.dlq_arn.ends_with("-dlq.fifo"), "{}", queues.dlq_arn);
    assert_eq!(
        redrive["maxReceiveCount"].to_string().trim_matches('"'),
        "3"
    );
}

/// `enqueue_all` wakes each agent once, whatever its lapse tasks (23 of two agents: two
/// wake-ups), and sends the wake-ups ten to a request (`SendMessageBatch`: 12 agents, two
/// requests); to a missing queue every entry fails, permanently.
#[tokio::test]
async fn enqueue_all_wakes_each_agent_once() {
    let (queue, client, url) = spawn_queue().await;
    let sent: Vec<_> = (0..23)
        .map(|i| {
            let agent = if i % 3 == 0 { "carrier" } else { "planner" };
            entry("acme", agent, &format!("lapse:exp-{i}:overdue:t1"))
        })
        .collect();
    let results = queue.enqueue_all(&sent).await;
    assert_eq!(results.len(), sent.len());
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    let received = drain(&client, &url).await;
    assert_eq!(received.len(), 2, "one wake-up per agent");
    let many: Vec<_> = (0..12)
        .map(|i| entry("acme", &format!("agent-{i}"), "lapse:exp-1:overdue:t1"))
        .collect();
    assert!(queue.enqueue_all(&many).await.iter().all(Result::is_ok));
    assert_eq!(drain(&client, &url).await.len(), 12);
    let missing = missing_lapse_queue(client);
    let results = missing.enqueue_all(&sent[..12]).await;
    assert_eq!(results.len(), 12);
    assert!(
        results
            .iter()
            .all(|r| matches!(r, Err(PortError::Permanent { .. }))),
        "{results:?}"
    );
}

/// A lapse queue on `client` at a URL where moto has no queue.
fn missing_lapse_queue(client: aws_sdk_sqs::Client) -> SqsLapseQueue {
    let endpoint = std::env::var("AWS_ENDPOINT_URL").unwrap();
    SqsLapseQueue::new(
        client,
        format!("{endpoint}/123456789012/{}.fifo", unique("missing")),
    )
}

#[tokio::test]
async fn enqueueing_to_a_missing_queue_fails_permanently() {
    let queue = missing_lapse_queue(aws_sdk_sqs::Client::new(&moto_config().await));
    let e = queue
        .enqueue(&entry("acme", "planner", "lapse:exp-1:overdue:t1"))
        .await
        .unwrap_err();
    assert!(matches!(e, PortError::Permanent { .. }), "{e}");
}

/// `ApproximateNumberOfMessages` and `ApproximateNumberOfMessagesDelayed` of the queue at `url`.
async fn visible_and_delayed(client: &aws_sdk_sqs::Client, url: &str) -> (u32, u32) {
    let out = client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessages)
        .attribute_names(QueueAttributeName::ApproximateNumberOfMessagesDelayed)
        .send()
        .await
        .unwrap();
    let get = |name: QueueAttributeName| -> u32 {
        out.attributes()
            .and_then(|a| a.get(&name))
            .map(|v| v.parse().unwrap())
            .unwrap_or_default()
    };
    (
        get(QueueAttributeName::ApproximateNumberOfMessages),
        get(QueueAttributeName::ApproximateNumberOfMessagesDelayed),
    )
}

#[tokio::test]
async fn a_schedule_with_a_lead_fires_a_minute_before_its_instant() {
    let client = aws_sdk_scheduler::Client::new(&moto_config().await);
    let group = unique("g-lead");
    ensure_schedule_group(&client, &group).await.unwrap();
    let timers = SchedulerTimers::new(
        client.clone(),
        SchedulerConfig::new(&group, TARGET_ARN, ROLE_ARN).with_lead(watcher_aws::SCHEDULE_LEAD),
    )
    .unwrap();
    let tenant = Tenant::default_tenant();
    let k = key("planner", "exp-lead", TimerKind::Deadline);
    timers
        .arm(&tenant, &k, instant("2026-09-10T22:15:00.250Z"))
        .await
        .unwrap();
    let s = get_schedule(&client, &group, &schedule_name(&tenant, &k))
        .await
        .expect("schedule");
    // 22:15:00.250 less 60 s, rounded up to the second.
    assert_eq!(s.schedule_expression(), Some("at(2026-09-10T22:14:01)"));
    assert_eq!(
        s.flexible_time_window()
            .map(aws_sdk_scheduler::types::FlexibleTimeWindow::mode),
        Some(&FlexibleTimeWindowMode::Off)
    );
    // The input names the timer, not the early instant: the record holds the deadline.
    let input = parse_timer_input(s.target().unwrap().input().unwrap()).unwrap();
    assert_eq!(input.timer, k);
    // A lead SQS could not finish is refused.
    let too_long = SchedulerConfig::new(&group, TARGET_ARN, ROLE_ARN)
        .with_lead(jiff::SignedDuration::from_secs(901));
    assert!(matches!(
        too_long.validate(),
        Err(watcher_aws::ConfigError::Lead { .. })
    ));
}

#[tokio::test]
async fn a_timer_message_is_delayed_to_its_instant() {
    let client = aws_sdk_sqs::Client::new(&moto_config().await);
    let (url, arn) = watcher_aws::provision::create_timer_queue(&client, &unique("timers"))
        .await
        .unwrap();
    assert!(arn.starts_with("arn:"), "{arn}");
    let queue = watcher_aws::SqsTimerQueue::new(client.clone(), &url);
    let tenant = Tenant::default_tenant();
    let k = key("planner", "exp-delay", TimerKind::Deadline);
    // Seen from 22:14:58.5, 22:15:00 is 1.5 s away: delayed 2 s (rounded up, never early).
    let sent = std::time::Instant::now();
    watcher_aws::TimerQueue::send_at(
        &queue,
        &tenant,
        &k,
        instant("2026-09-10T22:15:00Z"),
        instant("2026-09-10T22:14:58.5Z"),
    )
    .await
    .unwrap();
    assert_eq!(visible_and_delayed(&client, &url).await, (0, 1));
    let none = client
        .receive_message()
        .queue_url(&url)
        .send()
        .await
        .unwrap();
    assert!(none.messages().is_empty(), "delivered before its delay");
    // Visible once the two seconds are up (moto counts them on its own clock).
    let body = loop {
        let out = client
            .receive_message()
            .queue_url(&url)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        if let Some(m) = out.messages().first() {
            break m.body().unwrap().to_owned();
        }
        assert!(
            sent.elapsed().as_secs() < 10,
            "the delayed message never came"
        );
    };
    assert!(
        sent.elapsed() >= std::time::Duration::from_millis(1900),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(
        parse_timer_input(&body).unwrap(),
        TimerInput {
            tenant: tenant.clone(),
            timer: k.clone()
        }
    );
    // Beyond SQS's 900 s: refused before any call.
    let far = watcher_aws::TimerQueue::send_at(
        &queue,
        &tenant,
        &k,
        instant("2026-09-10T22:30:01Z"),
        instant("2026-09-10T22:15:00Z"),
    )
    .await
    .unwrap_err();
    assert!(matches!(far, PortError::Permanent { .. }), "{far}");
}

/// A lane wake-up is one `{"kind": "wakeLane", ...}` message on the timer queue, delayed to its
/// instant (rounded up) or to SQS's 900 s at most; it reads back as the same wake-up.
#[tokio::test]
async fn a_lane_wake_up_is_delayed_to_its_instant_at_most_fifteen_minutes() {
    let client = aws_sdk_sqs::Client::new(&moto_config().await);
    let (url, _) = watcher_aws::provision::create_timer_queue(&client, &unique("wakes"))
        .await
        .unwrap();
    let queue = watcher_aws::SqsTimerQueue::new(client.clone(), &url);
    let tenant = Tenant::default_tenant();
    let agent = AgentId::parse("planner").unwrap();
    let sent = std::time::Instant::now();
    // Seen from 22:14:58.5, 22:15:00 is 1.5 s away: delayed 2 s.
    let at = instant("2026-09-10T22:15:00Z");
    queue
        .wake_lane_at_from(&tenant, &agent, at, instant("2026-09-10T22:14:58.5Z"))
        .await
        .unwrap();
    // An hour away: the longest delay, 900 s (sent on when it arrives).
    queue
        .wake_lane_at_from(&tenant, &agent, at, instant("2026-09-10T21:15:00Z"))
        .await
        .unwrap();
    assert_eq!(visible_and_delayed(&client, &url).await, (0, 2));
    let body = loop {
        let out = client
            .receive_message()
            .queue_url(&url)
            .wait_time_seconds(1)
            .send()
            .await
            .unwrap();
        if let Some(m) = out.messages().first() {
            break m.body().unwrap().to_owned();
        }
        assert!(sent.elapsed().as_secs() < 10, "the wake-up never came");
    };
    assert!(
        sent.elapsed() >= std::time::Duration::from_millis(1900),
        "{:?}",
        sent.elapsed()
    );
    assert_eq!(
        watcher_aws::TimerQueueMessage::parse(&body).unwrap(),
        watcher_aws::TimerQueueMessage::WakeLane(watcher_aws::WakeLane { tenant, agent, at })
    );
    assert_eq!(
        visible_and_delayed(&client, &url).await,
        (0, 1),
        "the other waits its 900 s"
    );
}
