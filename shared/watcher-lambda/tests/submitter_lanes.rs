//! The SQS submitter runs one lane per agent a batch wakes, serve's `Lane` (docs/aws-latency.md,
//! "One delivery path: wake-ups, not lapse tasks, on the queue"): agents stay independent (a
//! failing or slow agent never holds up another's lapse tasks), a lane's run ends by asking to
//! be woken at its agent's next attempt, by continuing itself when its invocation's time is
//! short, or by handing its wake-ups back after a store failure; every `messageId` reaches the
//! agent once, whichever invocations and wake-ups run its lane.

use crate::common::emulator_table;
use crate::common::submitting::{
    lanes, queued, run_at, sqs_event, stored, submitter, t0, wake_event, Recorded,
};

use std::collections::HashMap;
use std::time::Duration;
use watcher_runtime::store::{Outbox as _, Records as _};

use a2a_types::TaskState;
use aws_lambda_events::event::sqs::SqsEvent;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_delivery::testing::{spawn_capture_agent, Behaviour, Reply};
use watcher_delivery::{AgentEndpoint, RateLimit};
use watcher_lambda::submitter::{After, LaneRun};
use watcher_runtime::clock::FakeClock;
use watcher_runtime::store::{Commit, DeliveryState, OutboxEntry};

fn entry(agent: &str, id: &str) -> OutboxEntry {
    queued(agent, id, "exp-1")
}

fn at(s: &str) -> Instant {
    Instant::parse(s).unwrap()
}

fn endpoints_of(agents: &[(&str, String)]) -> HashMap<(Tenant, AgentId), AgentEndpoint> {
    agents
        .iter()
        .map(|(id, url)| {
            (
                (Tenant::default_tenant(), AgentId::parse(*id).unwrap()),
                AgentEndpoint::configured(url.clone(), None),
            )
        })
        .collect()
}

fn run_of<'a>(runs: &'a [LaneRun], agent: &str) -> &'a LaneRun {
    runs.iter()
        .find(|r| r.agent.as_str() == agent)
        .unwrap_or_else(|| panic!("no run of {agent}: {runs:?}"))
}

async fn delivery_of(
    store: &dyn watcher_runtime::store::Outbox,
    agent: &str,
    id: &str,
) -> OutboxEntry {
    store
        .outbox_get(
            &Tenant::default_tenant(),
            &AgentId::parse(agent).unwrap(),
            id,
        )
        .await
        .unwrap()
        .unwrap()
}

/// One agent answering 503 and another answering at once, woken in one batch: the other's
/// lapse tasks are all sent; the failing agent's are each tried once and rescheduled at the
/// backoff's first step (1 s), and its lane asks the timer queue to wake it then; no wake-up is
/// handed back.
#[tokio::test]
async fn one_agents_retry_leaves_another_agents_lane_alone() {
    let down = spawn_capture_agent(Behaviour::always(Reply::status(503))).await;
    let up = spawn_capture_agent(Behaviour::always(Reply::task("t-1", TaskState::Submitted))).await;
    let store = stored(vec![
        entry("down", "d1"),
        entry("up", "u1"),
        entry("down", "d2"),
        entry("up", "u2"),
    ])
    .await;
    let endpoints = endpoints_of(&[("down", down.url()), ("up", up.url())]);
    let submitter = submitter(RateLimit::unlimited());
    let lanes = lanes(&store, &submitter, &endpoints);
    let runs = run_at(&lanes, wake_event(&["down", "up", "down"]), t0()).await;
    assert_eq!(runs.len(), 2, "one lane per agent: {runs:?}");
    assert_eq!(
        run_of(&runs, "down").messages.len(),
        2,
        "both wake-ups of the agent go with its one lane"
    );
    assert_eq!(up.sent_message_ids(), ["u1", "u2"]);
    // The agent answered with tasks still working: its lane is woken for their first poll
    // (`[delivery] poll_first`, 10 s).
    let poll = at("2026-09-10T12:00:10Z");
    assert_eq!(run_of(&runs, "up").after, After::WakeAt(poll));
    assert_eq!(
        down.request_count(),
        2,
        "each of its lapse tasks tried once"
    );
    // Each rescheduled within the backoff's first step (1 s, jittered); the lane is woken at
    // the earlier.
    let mut retries = Vec::new();
    for id in ["d1", "d2"] {
        let e = delivery_of(&store, "down", id).await;
        assert_eq!(e.delivery, DeliveryState::Queued, "{id}");
        assert!(e.next_attempt_at > t0() && e.next_attempt_at <= at("2026-09-10T12:00:01Z"));
        retries.push(e.next_attempt_at);
    }
    let retry = retries.into_iter().min().unwrap();
    assert_eq!(run_of(&runs, "down").after, After::WakeAt(retry));
    for id in ["u1", "u2"] {
        assert_eq!(
            delivery_of(&store, "up", id).await.delivery,
            DeliveryState::Sent
        );
    }
    let recorded = Recorded::default();
    let response = watcher_lambda::submitter::settle(&runs, &recorded, &recorded, t0()).await;
    assert!(response.batch_item_failures.is_empty(), "{response:?}");
    assert_eq!(
        *recorded.woken_at.lock().unwrap(),
        [("down".to_owned(), retry), ("up".to_owned(), poll)],
        "one delayed wake-up each: the retry, the first poll"
    );
}

/// A slow agent holding its answer never delays another agent's lapse tasks in the same batch,
/// and an agent's lapse tasks of different contexts go up to `in_flight_per_agent` at once.
#[tokio::test]
async fn a_slow_agent_never_delays_another_agents_lapse_task_in_the_batch() {
    let slow =
        spawn_capture_agent(Behaviour::always(Reply::task("t-s", TaskState::Completed))).await;
    let fast =
        spawn_capture_agent(Behaviour::always(Reply::task("t-f", TaskState::Completed))).await;
    // The slow agent answers nothing until released.
    slow.hold(true);
    let store = stored(vec![
        entry("slow", "s1"),
        entry("fast", "f1"),
        entry("fast", "f2"),
    ])
    .await;
    let endpoints = endpoints_of(&[("slow", slow.url()), ("fast", fast.url())]);
    let submitter = submitter(RateLimit::unlimited());
    let lanes = lanes(&store, &submitter, &endpoints);
    let batch = run_at(&lanes, wake_event(&["slow", "fast"]), t0());
    let watch = async {
        // Both of the fast agent's lapse tasks arrive, in order, while the slow agent still holds
        // its answer; handled one after another they would wait behind it for ever.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while fast.request_count() < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "the fast agent's lapse tasks waited behind the slow agent"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(fast.sent_message_ids(), ["f1", "f2"]);
        assert_eq!(slow.request_count(), 1, "the slow agent has its request");
        slow.hold(false);
    };
    let (runs, ()) = tokio::join!(batch, watch);
    assert!(runs.iter().all(|r| r.after == After::Done), "{runs:?}");
    for (agent, id) in [("slow", "s1"), ("fast", "f1"), ("fast", "f2")] {
        assert_eq!(
            delivery_of(&store, agent, id).await.delivery,
            DeliveryState::Sent,
            "{id}"
        );
    }
}

/// One agent's lapse tasks of different contextIds go `in_flight_per_agent` (4) at once, as on
/// serve: with the agent holding every answer, four requests are open together, never five.
#[tokio::test]
async fn an_agent_gets_in_flight_per_agent_lapse_tasks_at_once() {
    let agent =
        spawn_capture_agent(Behaviour::always(Reply::task("t-1", TaskState::Completed))).await;
    agent.hold(true);
    let entries: Vec<OutboxEntry> = (0..6)
        .map(|n| {
            let mut e = entry("busy", &format!("m{n}"));
            e.request["message"]["contextId"] = serde_json::json!(format!("ctx-{n}"));
            e
        })
        .collect();
    let store = stored(entries).await;
    let endpoints = endpoints_of(&[("busy", agent.url())]);
    let submitter = submitter(RateLimit::unlimited());
    let lanes = lanes(&store, &submitter, &endpoints);
    let batch = run_at(&lanes, wake_event(&["busy"]), t0());
    let watch = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while agent.request_count() < 4 {
            assert!(tokio::time::Instant::now() < deadline, "four at once");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(agent.request_count(), 4, "never more than four in flight");
        agent.hold(false);
    };
    let (runs, ()) = tokio::join!(batch, watch);
    assert_eq!(runs[0].after, After::Done, "{runs:?}");
    assert_eq!(agent.sent_message_ids().len(), 6);
}

#[test]
fn a_message_returns_at_its_next_attempt_rounded_up_within_sqs_bounds() {
    use watcher_lambda::submitter::seconds_until;
    assert_eq!(seconds_until(t0(), at("2026-09-10T12:00:01Z")), 1);
    assert_eq!(seconds_until(t0(), at("2026-09-10T12:00:01.2Z")), 2);
    assert_eq!(seconds_until(t0(), at("2026-09-10T12:05:00Z")), 300);
    // Due already, or now: a second, never at once.
    assert_eq!(seconds_until(t0(), at("2026-09-10T11:00:00Z")), 1);
    assert_eq!(seconds_until(t0(), t0()), 1);
    // SQS takes at most 12 hours.
    assert_eq!(seconds_until(t0(), at("2026-09-12T12:00:00Z")), 43_200);
}

/// A lane stops taking at `margin` before its invocation's deadline (the default 10 s request
/// timeout leaves 25 s), or half of what is left when that is less, and after a slice of 5 s at
/// most.
#[test]
fn a_lane_stops_taking_its_margin_before_the_deadline() {
    use watcher_lambda::submitter::{margin, stop_taking_at};
    assert_eq!(margin(Duration::from_secs(10)), Duration::from_secs(25));
    let within = |deadline_ms: u64, takes: Duration| {
        let before = std::time::Instant::now();
        let stop = stop_taking_at(deadline_ms, 1_000_000_000, Duration::from_secs(25));
        let after = std::time::Instant::now();
        assert!(
            stop >= before + takes && stop <= after + takes,
            "{deadline_ms}"
        );
    };
    // A slice of 5 s at most (`LANE_SLICE`), then the lane continues itself.
    within(1_000_060_000, Duration::from_secs(5));
    within(1_000_008_000, Duration::from_secs(4));
    within(1_000_000_000, Duration::ZERO);
}

/// Two submitter invocations (two Lambda containers) woken for the same agent at once, over the
/// DynamoDB outbox on the emulator: each lapse task is claimed by one of them, and every
/// `messageId` reaches the agent exactly once. Needs the emulator (`bash infra/moto.sh`,
/// `AWS_ENDPOINT_URL`).
#[tokio::test]
async fn two_submitters_woken_for_one_agent_send_each_message_once() {
    two_submitters_woken_at_once("two-submitters", || wake_event(&["booking"])).await;
}

/// The same with messages of an earlier version (one lapse task each, with its copy) in flight
/// across an upgrade, each received by both: each wakes its agent, and each lapse task is sent
/// once.
#[tokio::test]
async fn messages_of_an_earlier_version_wake_their_agent_and_send_each_once() {
    two_submitters_woken_at_once("two-submitters-old", || {
        let ids: Vec<String> = (0..10).map(|n| format!("lapse:e{n}")).collect();
        first_receives(
            &ids.iter()
                .map(|id| entry("booking", id))
                .collect::<Vec<_>>(),
        )
    })
    .await;
}

/// Two invocations woken for an agent with ten queued lapse tasks at once, by `event`.
async fn two_submitters_woken_at_once(name: &str, event: impl Fn() -> SqsEvent) {
    let (ddb, table) = emulator_table(name).await;
    let store = std::sync::Arc::new(watcher_store_dynamodb::DynamoStore::new(ddb, &table, 30));
    let ids: Vec<String> = (0..10).map(|n| format!("lapse:e{n}")).collect();
    store
        .commit(
            &Tenant::default_tenant(),
            Commit {
                outbox: ids.iter().map(|id| entry("booking", id)).collect(),
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let agent = watcher_delivery::testing::CaptureAgent::spawn_keeping_tasks(Behaviour::accept())
        .await
        .unwrap();
    agent.hold(true);
    let endpoints = std::sync::Arc::new(endpoints_of(&[("booking", agent.url())]));
    let invocation = |batch: SqsEvent| {
        let (store, endpoints) = (store.clone(), endpoints.clone());
        tokio::spawn(async move {
            let submitter = submitter(RateLimit::unlimited());
            let lanes = lanes(&*store, &submitter, &*endpoints);
            let recorded = Recorded::default();
            let clock = FakeClock::new(t0());
            let response = watcher_lambda::submitter::handle(
                &lanes,
                &recorded,
                &recorded,
                &clock,
                batch,
                Some(std::time::Instant::now() + Duration::from_secs(30)),
            )
            .await;
            (response, recorded.visibility.into_inner().unwrap())
        })
    };
    let a = invocation(event());
    let b = invocation(event());
    // Both invocations are posting, or refused, before the agent answers anything.
    tokio::time::sleep(Duration::from_millis(500)).await;
    agent.hold(false);
    let (a, b) = (a.await.unwrap(), b.await.unwrap());
    let mut sent = agent.sent_message_ids();
    sent.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(sent, want, "each messageId sent exactly once");
    assert!(
        a.0.batch_item_failures.is_empty() && b.0.batch_item_failures.is_empty(),
        "nothing to hand back: {a:?} {b:?}"
    );
    for id in &ids {
        let stored = delivery_of(&*store, "booking", id).await;
        assert_eq!(stored.delivery, DeliveryState::Sent, "{id}");
        assert_eq!(stored.lease, None, "{id}: released");
    }
}

/// The lapse queue's SQS event of an earlier version handing over `entries` as their messages'
/// first receives: each body carries its entry as queued (`QueueMessage::entry`).
fn first_receives(entries: &[OutboxEntry]) -> SqsEvent {
    let records: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let body = serde_json::to_string(&watcher_aws::QueueMessage::from(e)).unwrap();
            serde_json::json!({ "messageId": format!("sqs-{}", e.message_id),
                    "receiptHandle": format!("r-{}", e.message_id), "body": body,
                    "attributes": { "ApproximateReceiveCount": "1" }, "messageAttributes": {},
                    "eventSource": "aws:sqs", "awsRegion": "us-east-1",
                    "eventSourceARN": "arn:aws:sqs:us-east-1:123456789012:lapses.fifo" })
        })
        .collect();
    serde_json::from_value(serde_json::json!({ "Records": records })).unwrap()
}

/// A lane takes its agent's rate tokens at once from the bucket in the table: within the burst
/// its lapse tasks go in order and are recorded `sent`; beyond it nothing more is written and the
/// lane asks to be woken when the next token is free (a second on, at 60 a minute). Needs the
/// emulator (`bash infra/moto.sh`, `AWS_ENDPOINT_URL`).
#[tokio::test]
async fn a_lanes_tokens_are_taken_at_once_and_it_wakes_at_the_next_token() {
    let agent =
        spawn_capture_agent(Behaviour::always(Reply::task("t-1", TaskState::Submitted))).await;
    let entries: Vec<OutboxEntry> = ["m1", "m2", "m3", "m4"]
        .iter()
        .map(|id| entry("busy", id))
        .collect();
    let e = crate::common::emulator("lane-tokens").await;
    let store = watcher_store_dynamodb::DynamoStore::new(e.ddb.clone(), &e.name, 30);
    store
        .commit(
            &Tenant::default_tenant(),
            Commit {
                outbox: entries.clone(),
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let endpoints = endpoints_of(&[("busy", agent.url())]);
    // Two at once, then one a second, in the agent's bucket in the table.
    let limit = RateLimit {
        per_minute: 60,
        burst: 2,
    };
    let submitter = submitter(limit).with_rate_buckets(std::sync::Arc::new(
        watcher_lambda::rate::DynamoRateBuckets::new(e.ddb.clone(), &e.name, limit),
    ));
    let lanes = lanes(&store, &submitter, &endpoints);
    e.requests.take();
    let runs = run_at(&lanes, wake_event(&["busy"]), t0()).await;
    assert_eq!(
        agent.sent_message_ids(),
        ["m1", "m2"],
        "the burst, in order: {runs:?}"
    );
    assert_eq!(
        runs[0].after,
        After::WakeAt(at("2026-09-10T12:00:01Z")),
        "m3 waits a token's interval"
    );
    // The bucket's writes: one for the lane's two tokens (an idle bucket), one asking when the
    // next is free; none for each lapse task.
    assert_eq!(
        e.requests.take().get("DynamoDB PutItem"),
        Some(&2),
        "the lane's tokens in one write"
    );
    let t = Tenant::default_tenant();
    let busy = AgentId::parse("busy").unwrap();
    for (id, delivery) in [
        ("m1", DeliveryState::Sent),
        ("m2", DeliveryState::Sent),
        ("m3", DeliveryState::Queued),
        ("m4", DeliveryState::Queued),
    ] {
        let stored = store.outbox_get(&t, &busy, id).await.unwrap().unwrap();
        assert_eq!(stored.delivery, delivery, "{id}");
        assert_eq!(stored.lease, None, "{id}: no claim left");
    }
}

/// A lapse task whose record cannot be written after its send (the store failing from the
/// agent's answer on): the lane stops, sends nothing more, and its wake-ups are handed back to
/// return after the backoff of their receive count (the first: within 1 s), not the queue's
/// 360 s visibility timeout; the entry stays claimed with its attempt started, so that the next
/// run looks for it with `ListTasks` before posting it again.
#[tokio::test]
async fn a_record_that_fails_hands_the_wake_ups_back_and_stops_the_lane() {
    let store = std::sync::Arc::new(
        stored(
            ["m1", "m2", "m3"]
                .iter()
                .map(|id| entry("busy", id))
                .collect(),
        )
        .await,
    );
    let failing = store.clone();
    let agent = spawn_capture_agent(Behaviour::from_fn(move |_, _| {
        failing.fail_writes(true);
        Reply::task("t-1", TaskState::Submitted)
    }))
    .await;
    let endpoints = endpoints_of(&[("busy", agent.url())]);
    let submitter = submitter(RateLimit::unlimited());
    let lanes = lanes(&*store, &submitter, &endpoints);
    let recorded = Recorded::default();
    let response = watcher_lambda::submitter::handle(
        &lanes,
        &recorded,
        &recorded,
        &FakeClock::new(t0()),
        wake_event(&["busy", "busy"]),
        None,
    )
    .await;
    assert_eq!(agent.sent_message_ids(), ["m1"]);
    let failed: Vec<&str> = response
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect();
    assert_eq!(failed, ["wake-0", "wake-1"], "both wake-ups come back");
    let visibility = recorded.visibility.lock().unwrap().clone();
    assert_eq!(visibility.len(), 2, "{visibility:?}");
    for (_, seconds) in &visibility {
        assert!(*seconds <= 1, "first receive: within 1 s, got {seconds}");
    }
    store.fail_writes(false);
    let m1 = delivery_of(&*store, "busy", "m1").await;
    assert_eq!(m1.delivery, DeliveryState::Queued);
    assert_eq!(
        m1.attempt_started_at,
        Some(t0()),
        "claimed, its outcome unknown"
    );
}

/// A lane whose invocation is out of time takes nothing and continues itself: one continuation
/// wake-up naming the first wake-up it continues, and the wake-ups deleted; when the queue
/// refuses the continuation, the wake-ups are handed back to return in a second instead.
#[tokio::test]
async fn a_lane_out_of_time_continues_itself() {
    let agent =
        spawn_capture_agent(Behaviour::always(Reply::task("t-1", TaskState::Submitted))).await;
    let store = stored(vec![entry("busy", "m1"), entry("busy", "m2")]).await;
    let endpoints = endpoints_of(&[("busy", agent.url())]);
    let submitter = submitter(RateLimit::unlimited());
    let lanes = lanes(&store, &submitter, &endpoints);
    for refuse in [false, true] {
        let recorded = Recorded {
            refuse,
            ..Recorded::default()
        };
        let response = watcher_lambda::submitter::handle(
            &lanes,
            &recorded,
            &recorded,
            &FakeClock::new(t0()),
            wake_event(&["busy"]),
            Some(std::time::Instant::now()),
        )
        .await;
        assert_eq!(agent.request_count(), 0, "nothing taken after the stop");
        if refuse {
            assert_eq!(response.batch_item_failures.len(), 1);
            assert_eq!(
                *recorded.visibility.lock().unwrap(),
                [("r-wake-0".to_owned(), 1)]
            );
        } else {
            assert!(response.batch_item_failures.is_empty());
            assert_eq!(
                *recorded.continued.lock().unwrap(),
                [("busy".to_owned(), "wake-0".to_owned())]
            );
        }
    }
    assert_eq!(
        delivery_of(&store, "busy", "m1").await.delivery,
        DeliveryState::Queued
    );
}

/// A wake-up of second `S` makes its lane pass once more after `S` ends: a lapse task queued
/// later in `S` (its wake-up dropped by SQS as this one's duplicate) is sent by this run, not
/// left for the sweep.
#[tokio::test]
async fn a_lapse_task_queued_later_in_the_wake_ups_second_is_sent_by_its_run() {
    let agent =
        spawn_capture_agent(Behaviour::always(Reply::task("t-1", TaskState::Completed))).await;
    let store = std::sync::Arc::new(stored(vec![entry("busy", "m1")]).await);
    let endpoints = endpoints_of(&[("busy", agent.url())]);
    let submitter = submitter(RateLimit::unlimited());
    let lanes = lanes(&*store, &submitter, &endpoints);
    // Woken in the second of t0, seen 300 ms into it.
    let second = t0().as_nanos() / 1_000_000_000;
    let mut event = wake_event(&["busy"]);
    event.records[0].body = Some(
        serde_json::json!({ "tenant": "default", "agent": "busy", "second": second }).to_string(),
    );
    let clock = FakeClock::new(at("2026-09-10T12:00:00.3Z"));
    let later = {
        let store = store.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(200)).await;
            store
                .commit(
                    &Tenant::default_tenant(),
                    Commit {
                        outbox: vec![entry("busy", "m2")],
                        ..Commit::default()
                    },
                )
                .await
                .unwrap();
        }
    };
    let (runs, ()) = tokio::join!(
        watcher_lambda::submitter::handle_batch(
            &lanes,
            &clock,
            event,
            Some(std::time::Instant::now() + Duration::from_secs(30)),
        ),
        later
    );
    assert_eq!(agent.sent_message_ids(), ["m1", "m2"], "{runs:?}");
    assert_eq!(runs[0].after, After::Done);
    assert!(runs[0].passes >= 2, "{runs:?}");
}

/// Messages that are not wake-ups are dropped (they can never succeed); a wake-up's old shape
/// reads as its agent's.
#[tokio::test]
async fn unreadable_messages_are_dropped_and_old_ones_wake_their_agent() {
    let store = stored(vec![]).await;
    let endpoints = endpoints_of(&[]);
    let submitter = submitter(RateLimit::unlimited());
    let lanes = lanes(&store, &submitter, &endpoints);
    let mut event = sqs_event(&[("a", "m1"), ("b", "m2")]);
    event.records[1].body = Some("not json".into());
    let runs = run_at(&lanes, event, t0()).await;
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].agent.as_str(), "a");
    assert_eq!(runs[0].after, After::Done);
}
