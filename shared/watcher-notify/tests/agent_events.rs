//! The agents' events against a real local receiver (issue 25, expectations-v1 §13.1): a failed
//! lapse task is told once (the first of an agent as `delivery.failing`, the next as
//! `lapse_task.failed`), through a restart, again only after a re-queue fails again; an
//! unreadable card is told once after a minute, and again only after it was read in between;
//! the `events` filter; a receiver that was down gets the event after.

use std::sync::Arc;

use watcher_config::config::NotifyConfig;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_notify::transport::HttpTransport;
use watcher_notify::{Channel, Notifier};
use watcher_runtime::clock::{Clock, FakeClock};
use watcher_runtime::directory::{CardHealth, CardState, Directory};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::operators::requeue_entry;
use watcher_runtime::store::{DeliveryState, Notifications, Outbox, OutboxEntry};

use crate::common::{at, channel_config, lapse_task, record, Receiver};

fn config(url: &str, events: &[&str]) -> NotifyConfig {
    channel_config(url, events)
}

fn tenant() -> Tenant {
    Tenant::parse("default".to_owned()).unwrap()
}

fn agent(id: &str) -> AgentId {
    AgentId::parse(id.to_owned()).unwrap()
}

fn ok_card() -> CardHealth {
    CardHealth {
        state: CardState::Ok,
        read_at: Some(at(0)),
        failing_since: None,
        error: None,
        next_try_at: None,
    }
}

fn down_card(since: Instant) -> CardHealth {
    CardHealth {
        state: CardState::Stale,
        read_at: Some(at(0)),
        failing_since: Some(since),
        error: Some("HTTP 502 reading https://booking.example/.well-known/agent-card.json".into()),
        next_try_at: None,
    }
}

/// A directory of the agents `booking` and `billing`, both cards read.
fn directory() -> Directory {
    let d = Directory::new();
    d.set_card_health(&tenant(), &agent("booking"), ok_card());
    d.set_card_health(&tenant(), &agent("billing"), ok_card());
    d
}

/// A started receiver, an empty store, a fake clock at `now` and the [`directory`] of `booking`
/// and `billing`.
async fn receiver_and_agents(
    now: Instant,
) -> (Receiver, Arc<MemoryStore>, Arc<FakeClock>, Directory) {
    let receiver = Receiver::start().await;
    let store = Arc::new(MemoryStore::new());
    let clock = Arc::new(FakeClock::new(now));
    (receiver, store, clock, directory())
}

fn notifier(
    store: &Arc<MemoryStore>,
    clock: &Arc<FakeClock>,
    directory: &Directory,
    config: NotifyConfig,
) -> Notifier<MemoryStore> {
    Notifier::new(
        store.clone(),
        vec![Channel::from_config(&config).expect("a valid channel")],
        Arc::new(HttpTransport::new().unwrap()),
        clock.clone() as Arc<dyn Clock>,
        Some("https://watcher.example".into()),
    )
    .with_directory(directory.clone())
}

/// Records the lapse task of `exp` of `agent` and has it fail at `failed_at`, as delivery
/// writes it (`failed`, `next_attempt_at` = the failure's instant).
async fn fail(store: &MemoryStore, agent: &str, exp: &str, failed_at: Instant) -> OutboxEntry {
    // Lapsed before every channel here started: only its failure is news.
    let queued = lapse_task(agent, exp, LapseKind::Overdue, exp, at(-1000));
    record(store, vec![queued.clone()]).await;
    let mut failed = queued;
    failed.delivery = DeliveryState::Failed;
    failed.attempts = 1;
    failed.next_attempt_at = failed_at;
    failed.last_error =
        Some("agent answered JSON-RPC error -32602: the agent refuses this message".into());
    store.outbox_update(&failed).await.unwrap();
    failed
}

#[tokio::test]
async fn failed_lapse_tasks_are_told_once_the_first_as_failing_delivery() {
    let (receiver, store, clock, dir) = receiver_and_agents(at(0)).await;
    let first = notifier(&store, &clock, &dir, config(&receiver.url, &[]));
    first.round().await;

    let a = fail(&store, "booking", "exp-1", at(5)).await;
    clock.set(at(6));
    assert_eq!(first.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].verified);
    assert_eq!(got[0].body["type"], "delivery.failing");
    assert_eq!(got[0].body["timestamp"], "2026-09-11T00:00:05Z");
    let data = &got[0].body["data"];
    assert_eq!(data["agent"], "booking");
    assert_eq!(data["attempts"], 1);
    assert_eq!(data["lapseTask"]["messageId"], a.message_id.as_str());
    assert_eq!(data["lapseTask"]["block"]["subject"]["id"], "exp-1");
    assert!(data["error"].as_str().unwrap().contains("-32602"), "{data}");
    assert!(
        data["text"]
            .as_str()
            .unwrap()
            .starts_with("Lapse tasks to agent booking are failing."),
        "{data}"
    );
    assert_eq!(data["link"], "https://watcher.example/ui/agents");
    assert!(got[0].id.starts_with("evt_"), "{}", got[0].id);

    // A second failure of the same agent, at the same instant as a third: each told once, as
    // `lapse_task.failed`.
    let b = fail(&store, "booking", "exp-2", at(8)).await;
    let c = fail(&store, "booking", "exp-3", at(8)).await;
    clock.set(at(9));
    assert_eq!(first.round().await[0].delivered, 2);
    let got = receiver.accepted();
    assert_eq!(got.len(), 3);
    let told: Vec<(&str, &str)> = got[1..]
        .iter()
        .map(|r| {
            (
                r.body["type"].as_str().unwrap(),
                r.body["data"]["lapseTask"]["messageId"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        told.contains(&("lapse_task.failed", b.message_id.as_str())),
        "{told:?}"
    );
    assert!(
        told.contains(&("lapse_task.failed", c.message_id.as_str())),
        "{told:?}"
    );

    // A restart tells nothing again.
    let second = notifier(&store, &clock, &dir, config(&receiver.url, &[]));
    clock.set(at(10));
    assert_eq!(second.round().await[0].delivered, 0);
    assert_eq!(first.round().await[0].delivered, 0);
    assert_eq!(receiver.seen().len(), 3);

    // Re-queued by an operator and failed again: a new failure, told again with a new id.
    let requeued = requeue_entry(&a, at(20)).unwrap();
    store.outbox_update(&requeued).await.unwrap();
    let mut again = requeued;
    again.delivery = DeliveryState::Failed;
    again.attempts = 2;
    again.next_attempt_at = at(21);
    store.outbox_update(&again).await.unwrap();
    clock.set(at(22));
    assert_eq!(second.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 4);
    assert_eq!(
        got[3].body["type"], "lapse_task.failed",
        "the agent was failing already"
    );
    assert_eq!(got[3].body["data"]["attempts"], 2);
    assert_ne!(got[3].id, got[0].id);
}

#[tokio::test]
async fn an_agent_whose_failed_tasks_were_all_requeued_fails_anew_as_failing_delivery() {
    let (receiver, store, clock, dir) = receiver_and_agents(at(0)).await;
    let n = notifier(&store, &clock, &dir, config(&receiver.url, &[]));
    n.round().await;
    let a = fail(&store, "billing", "exp-1", at(5)).await;
    clock.set(at(6));
    n.round().await;
    // Fixed and re-queued: nothing failed any more.
    store
        .outbox_update(&requeue_entry(&a, at(7)).unwrap())
        .await
        .unwrap();
    clock.set(at(8));
    assert_eq!(n.round().await[0].delivered, 0);
    // Broken again later: told as failing delivery again.
    fail(&store, "billing", "exp-2", at(30)).await;
    clock.set(at(31));
    assert_eq!(n.round().await[0].delivered, 1);
    let types: Vec<String> = receiver
        .accepted()
        .iter()
        .map(|r| r.body["type"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(types, ["delivery.failing", "delivery.failing"]);
}

#[tokio::test]
async fn failures_before_the_channel_started_are_not_told_but_make_the_agent_failing() {
    let (receiver, store, clock, dir) = receiver_and_agents(at(100)).await;
    fail(&store, "booking", "exp-old", at(50)).await;
    let n = notifier(&store, &clock, &dir, config(&receiver.url, &[]));
    assert_eq!(n.round().await[0].delivered, 0, "history is not told");
    fail(&store, "booking", "exp-new", at(120)).await;
    clock.set(at(121));
    assert_eq!(n.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got[0].body["type"], "lapse_task.failed");
}

#[tokio::test]
async fn an_unreadable_card_is_told_once_after_a_minute_and_again_after_it_was_read() {
    let (receiver, store, clock, dir) = receiver_and_agents(at(0)).await;
    let n = notifier(&store, &clock, &dir, config(&receiver.url, &[]));
    n.round().await;

    dir.set_card_health(&tenant(), &agent("booking"), down_card(at(10)));
    clock.set(at(30));
    assert_eq!(
        n.round().await[0].delivered,
        0,
        "not within the first minute"
    );
    clock.set(at(70));
    assert_eq!(n.round().await[0].delivered, 1);
    clock.set(at(200));
    assert_eq!(
        n.round().await[0].delivered,
        0,
        "told once while it stays down"
    );
    let got = receiver.accepted();
    assert_eq!(got[0].body["type"], "card.unavailable");
    assert_eq!(got[0].body["timestamp"], "2026-09-11T00:00:10Z");
    assert_eq!(got[0].body["data"]["agent"], "booking");
    assert!(
        got[0].body["data"]["error"]
            .as_str()
            .unwrap()
            .contains("HTTP 502"),
        "{:?}",
        got[0].body
    );

    // A restart while it is down: not told again.
    let again = notifier(&store, &clock, &dir, config(&receiver.url, &[]));
    assert_eq!(again.round().await[0].delivered, 0);

    // Read again, then down again: told again, with a new id.
    dir.set_card_health(&tenant(), &agent("booking"), ok_card());
    clock.set(at(300));
    assert_eq!(again.round().await[0].delivered, 0);
    dir.set_card_health(&tenant(), &agent("booking"), down_card(at(400)));
    clock.set(at(500));
    assert_eq!(again.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 2);
    assert_ne!(got[0].id, got[1].id);
}

#[tokio::test]
async fn the_events_filter_picks_what_is_told() {
    let (receiver, store, clock, dir) = receiver_and_agents(at(0)).await;
    let n = notifier(
        &store,
        &clock,
        &dir,
        config(&receiver.url, &["lapse_task.failed"]),
    );
    n.round().await;
    // A lapse and an unreadable card: not told on this channel.
    record(
        &store,
        vec![lapse_task(
            "booking",
            "exp-l",
            LapseKind::Overdue,
            "L",
            at(2),
        )],
    )
    .await;
    dir.set_card_health(&tenant(), &agent("billing"), down_card(at(1)));
    // Without `delivery.failing`, the agent's first failure is a `lapse_task.failed`.
    fail(&store, "booking", "exp-1", at(5)).await;
    clock.set(at(100));
    assert_eq!(n.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].body["type"], "lapse_task.failed");

    // `agents` filters the agents' events too.
    let mut only_booking = config(&receiver.url, &["card.unavailable"]);
    only_booking.id = "billing-cards".into();
    only_booking.agents = vec!["booking".into()];
    let other = notifier(&store, &clock, &dir, only_booking);
    assert_eq!(
        other.round().await[0].delivered,
        0,
        "billing's card is not watched"
    );
}

#[tokio::test]
async fn a_receiver_that_was_down_gets_the_failure_after() {
    let (receiver, store, clock, dir) = receiver_and_agents(at(0)).await;
    receiver.answer(503);
    let n = notifier(&store, &clock, &dir, config(&receiver.url, &[]));
    n.round().await;
    fail(&store, "booking", "exp-1", at(5)).await;
    for s in (10..=600).step_by(10) {
        clock.set(at(s));
        assert_eq!(n.round().await[0].delivered, 0);
    }
    let state = store
        .channel_state(&tenant(), "ops")
        .await
        .unwrap()
        .unwrap();
    assert!(
        state
            .agents
            .get("booking")
            .is_none_or(|w| w.failed.is_empty()),
        "nothing passed while the receiver refused: {state:?}"
    );
    receiver.answer(200);
    clock.set(at(700));
    assert_eq!(n.round().await[0].delivered, 1);
    assert_eq!(receiver.accepted().len(), 1);
    assert_eq!(receiver.accepted()[0].body["type"], "delivery.failing");
}

#[tokio::test]
async fn a_settle_delay_holds_failures_until_they_are_settled() {
    let (receiver, store, clock, dir) = receiver_and_agents(at(0)).await;
    let n = notifier(&store, &clock, &dir, config(&receiver.url, &[]))
        .with_settle(std::time::Duration::from_secs(300));
    n.round().await;
    fail(&store, "booking", "exp-1", at(5)).await;
    clock.set(at(60));
    assert_eq!(n.round().await[0].delivered, 0, "not yet settled");
    clock.set(at(305));
    assert_eq!(n.round().await[0].delivered, 1);
}

/// A lapse task whose task asks for input is told once as `lapse_task.needs_person`, through a
/// restart; answered and asking again later, it is a new wait, told again with a new id
/// (expectations-v1 §10.2).
#[tokio::test]
async fn a_task_asking_for_input_is_told_once_per_wait() {
    use a2a_types::TaskState;
    let (receiver, store, clock, dir) = receiver_and_agents(at(0)).await;
    let n = notifier(&store, &clock, &dir, config(&receiver.url, &[]));
    n.round().await;
    let queued = lapse_task("booking", "exp-q", LapseKind::Overdue, "PA-Q", at(-1000));
    record(&store, vec![queued.clone()]).await;
    let ask = |state: TaskState, when: i64| {
        let store = store.clone();
        let id = queued.message_id.clone();
        async move {
            store
                .outbox_task_state(&tenant(), &agent("booking"), &id, "task-q", state, at(when))
                .await
                .unwrap()
        }
    };
    ask(TaskState::InputRequired, 5).await;
    clock.set(at(6));
    assert_eq!(n.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got[0].body["type"], "lapse_task.needs_person");
    assert_eq!(got[0].body["timestamp"], "2026-09-11T00:00:05Z");
    let data = &got[0].body["data"];
    assert_eq!(data["agent"], "booking");
    assert_eq!(data["lapseTask"]["messageId"], queued.message_id.as_str());
    assert!(
        data["text"]
            .as_str()
            .unwrap()
            .contains("its task task-q asks for input"),
        "{data}"
    );

    // The same wait pushed again, and a restart: nothing again.
    ask(TaskState::InputRequired, 7).await;
    let again = notifier(&store, &clock, &dir, config(&receiver.url, &[]));
    clock.set(at(8));
    assert_eq!(again.round().await[0].delivered, 0);
    assert_eq!(n.round().await[0].delivered, 0);

    // Answered, then asking again: a new wait.
    ask(TaskState::Working, 20).await;
    ask(TaskState::AuthRequired, 30).await;
    clock.set(at(31));
    assert_eq!(again.round().await[0].delivered, 1);
    let got = receiver.accepted();
    assert_eq!(got.len(), 2);
    assert_ne!(got[0].id, got[1].id);
    assert!(got[1].body["data"]["text"]
        .as_str()
        .unwrap()
        .contains("asks for authorization"));

    // A channel without the event tells none of it.
    let mut quiet = config(&receiver.url, &["lapse.recorded"]);
    quiet.id = "quiet".into();
    let q = notifier(&store, &clock, &dir, quiet);
    q.round().await;
    ask(TaskState::Working, 40).await;
    ask(TaskState::InputRequired, 50).await;
    clock.set(at(51));
    assert_eq!(q.round().await[0].delivered, 0);
}
