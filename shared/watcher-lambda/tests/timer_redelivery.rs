//! A timer firing that fails for a passing reason comes back within seconds
//! (`watcher_lambda::redelivery`, docs/aws-latency.md "When a firing fails"), driven with fakes:
//! a memory store that conflicts or fails its commits, a lapse queue that refuses a send, and a
//! timer queue that records each visibility change.
//!
//! * A timer-queue record whose evaluation fails is handed back (`batchItemFailures`) with its
//!   visibility changed to the full-jitter backoff of its `ApproximateReceiveCount`: within
//!   `[0, min(60, 2^(n−1))]` seconds.
//! * A passing store failure is tried again inside the invocation when its deadline leaves time.
//! * A lapse committed whose lapse task the lapse queue did not take hands the record back; its
//!   redelivery hands the task over, so the agent's queue gets it once (one messageId).
//! * A schedule's direct fire in that case arms its timer again on the timer queue (Lambda's
//!   asynchronous retries are off for the timer function).
//! * Each sweep duty is its own tick: a backlog of due timers never delays the re-queue.
//! * A malformed body, or a send refused for good, is not handed back.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};
use watcher_core::card::declaration_from_card;
use watcher_core::engine::{AgentProfile, Input, Origin, PushItem, TimerKey, TimerKind};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, ExpectationId, ExpectationRef, Subject, TaskId, Tenant};
use watcher_core::lapse::Delivery;
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_lambda::redelivery::{Invocation, STORE_RETRY, TIMER_REDELIVERY};
use watcher_lambda::sink::AwsSink;
use watcher_lambda::submitter::Redelivery;
use watcher_lambda::timer::{handle, handle_in, TimerError, TimerReport, FIRE_AGAIN_AFTER};
use watcher_runtime::directory::{AgentEntry, Directory};
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::ports::{LapseQueue, PortError, Timers};
use watcher_runtime::retry::{Backoff, RecordingSleeper, Retry};
use watcher_runtime::store::OutboxEntry;
use watcher_runtime::watcher::Watcher;

const CARD: &str = include_str!("../../../examples/booking-card.json");
const DUE: &str = "2026-09-10T20:00:00Z";
const FIRED: &str = "2026-09-10T20:00:01Z";

fn t(s: &str) -> Instant {
    Instant::parse(s).expect("instant")
}

/// Schedules that are always armed and disarmed.
struct NoSchedules;

#[async_trait::async_trait]
impl Timers for NoSchedules {
    async fn arm(&self, _: &Tenant, _: &TimerKey, _: Instant) -> Result<(), PortError> {
        Ok(())
    }
    async fn disarm(&self, _: &Tenant, _: &TimerKey) -> Result<(), PortError> {
        Ok(())
    }
}

/// A lapse queue that refuses the next `refusals` sends (retryable or not, as `retryable`
/// says), then keeps the `messageId` of every lapse task it takes.
struct Flaky {
    refusals: Mutex<usize>,
    retryable: bool,
    taken: Mutex<Vec<String>>,
}

impl Flaky {
    fn refusing(refusals: usize, retryable: bool) -> Arc<Self> {
        Arc::new(Flaky {
            refusals: Mutex::new(refusals),
            retryable,
            taken: Mutex::new(Vec::new()),
        })
    }

    fn taken(&self) -> Vec<String> {
        self.taken.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl LapseQueue for Flaky {
    async fn enqueue(&self, entry: &OutboxEntry) -> Result<(), PortError> {
        let mut left = self.refusals.lock().unwrap();
        if *left > 0 {
            *left -= 1;
            let why = if self.retryable {
                "SendMessage (ThrottlingException)"
            } else {
                "SendMessage (AccessDenied)"
            };
            return Err(PortError::new(self.retryable, why.into(), None));
        }
        self.taken.lock().unwrap().push(entry.message_id.clone());
        Ok(())
    }
}

/// The timer queue's `ChangeMessageVisibility`, recorded: `(receiptHandle, seconds)`; fails
/// every call when `fails`.
#[derive(Default)]
struct Visibility {
    changed: Mutex<Vec<(String, u32)>>,
    fails: bool,
}

#[async_trait::async_trait]
impl Redelivery for Visibility {
    async fn redeliver_after(&self, receipt_handle: &str, seconds: u32) -> Result<(), PortError> {
        self.changed
            .lock()
            .unwrap()
            .push((receipt_handle.to_owned(), seconds));
        if self.fails {
            return Err(PortError::new(
                true,
                "ChangeMessageVisibility (ThrottlingException)".into(),
                None,
            ));
        }
        Ok(())
    }
}

/// The booking agent's expectations `m-0`.. `m-{n-1}`, each on its own subject `S-{i}`, due at
/// [`DUE`], raised an hour before on a memory store, the watcher's sink sending to `queue`;
/// a lost compare-and-set waits nothing (its waits recorded).
async fn raised(n: usize, queue: Arc<Flaky>) -> (Watcher<MemoryStore>, Arc<MemoryStore>) {
    let card: Value = serde_json::from_str(CARD).expect("card");
    let profile = AgentProfile {
        id: AgentId::parse("booking").expect("id"),
        declaration: declaration_from_card(&card).expect("valid card"),
    };
    let directory = Directory::new();
    directory.insert(AgentEntry {
        tenant: Tenant::default_tenant(),
        profile: profile.clone(),
        submits_lapses: true,
        delivery: Delivery::default(),
    });
    let store = Arc::new(MemoryStore::new());
    let sink = Arc::new(AwsSink {
        timers: Arc::new(NoSchedules),
        queue,
        timer_queue: None,
        disarm_later: false,
    });
    let watcher = Watcher::new(Arc::clone(&store), directory, Settings::default())
        .with_sink(sink)
        .with_retry(Retry::with_sleeper(
            Backoff::CONFLICT,
            Arc::new(RecordingSleeper::new()),
        ))
        .evaluating_due_at_once();
    let expectations = (0..n)
        .map(|i| {
            Expectation::from_json(&json!({
                "expectationId": format!("m-{i}"), "kind": "shipment.manifest",
                "subject": { "type": "shipment", "id": format!("S-{i}") },
                "expects": "the airline manifest",
                "satisfiedBy": { "factKey": format!("manifest:S-{i}") },
                "dueAt": DUE, "basis": "observed"
            }))
        })
        .collect();
    let raise = Input::Push {
        agent: profile,
        items: vec![PushItem::Raise {
            origin: Origin {
                task_id: TaskId::parse("task-1".to_owned()).expect("task"),
                context_id: None,
            },
            expectations,
            question_at: None,
            question_timestamp: None,
        }],
    };
    watcher
        .apply(&Tenant::default_tenant(), &raise, t("2026-09-10T19:00:00Z"))
        .await
        .expect("raise");
    (watcher, store)
}

/// Expectation `m-{i}`'s deadline timer.
fn deadline(i: usize) -> TimerKey {
    TimerKey {
        subject: Subject::parse("shipment", &format!("S-{i}")).expect("subject"),
        expectation: ExpectationRef {
            agent: AgentId::parse("booking").expect("id"),
            id: ExpectationId::parse(format!("m-{i}")).expect("id"),
        },
        kind: TimerKind::Deadline,
    }
}

/// The schedule's input (`{"tenant", "timer"}`) for `m-{i}`'s deadline.
fn timer_input(i: usize) -> Value {
    serde_json::to_value(watcher_aws::TimerInput {
        tenant: Tenant::default_tenant(),
        timer: deadline(i),
    })
    .expect("timer input")
}

/// A timer-queue record of `body` received `received` times, as the event source mapping
/// hands it over.
fn record(id: &str, body: &str, received: u32) -> Value {
    json!({
        "messageId": id,
        "receiptHandle": format!("rh-{id}"),
        "body": body,
        "attributes": { "ApproximateReceiveCount": received.to_string() },
        "eventSource": "aws:sqs",
    })
}

/// A timer-queue record for `m-{i}`'s deadline.
fn timer_record(id: &str, i: usize, received: u32) -> Value {
    record(id, &timer_input(i).to_string(), received)
}

/// An invocation with a minute and more left, its visibility changes recorded in
/// `visibility`, its store retries' waits in `waits`.
fn invocation<'a>(visibility: &'a Visibility, waits: &Arc<RecordingSleeper>) -> Invocation<'a> {
    let mut invocation = Invocation::new(visibility, SystemTime::now() + Duration::from_secs(100));
    invocation.retry = Retry::with_sleeper(STORE_RETRY, waits.clone());
    invocation
}

fn failed_ids(report: &TimerReport) -> Vec<&str> {
    report
        .batch_item_failures
        .iter()
        .map(|f| f.item_identifier.as_str())
        .collect()
}

/// The lapse task `messageId` of `m-{i}`'s overdue lapse.
fn lapse_id(i: usize) -> String {
    format!("lapse:m-{i}:overdue:{DUE}")
}

/// Three records whose commits keep failing, received 1, 3 and 9 times: each is handed back,
/// its visibility first changed to a draw within its receive count's ceiling (1, 4, 60 s:
/// 1 s doubling, capped at a minute). Over twenty batches the draws for the 9th receive are not
/// all within the 1st's second: the backoff follows the receive count.
#[tokio::test]
async fn a_failing_record_returns_after_the_backoff_of_its_receive_count() {
    let (watcher, store) = raised(3, Flaky::refusing(0, true)).await;
    store.fail_commits_of(Some(Tenant::default_tenant()));
    let visibility = Visibility::default();
    let waits = Arc::new(RecordingSleeper::new());
    let event = json!({ "Records": [
        timer_record("a", 0, 1), timer_record("b", 1, 3), timer_record("c", 2, 9)
    ]});
    for _ in 0..20 {
        let report = handle_in(
            &watcher,
            &NoQueue,
            &NoSchedules,
            None,
            &event,
            t(FIRED),
            &invocation(&visibility, &waits),
        )
        .await
        .expect("a batch never fails whole");
        assert_eq!(failed_ids(&report), ["a", "b", "c"]);
        assert_eq!(report.lapses, 0);
    }
    let changed = visibility.changed.lock().unwrap().clone();
    assert_eq!(changed.len(), 60);
    let of = |receipt: &str| -> Vec<u32> {
        changed
            .iter()
            .filter(|(r, _)| r == receipt)
            .map(|(_, s)| *s)
            .collect()
    };
    let (first, third, ninth) = (of("rh-a"), of("rh-b"), of("rh-c"));
    assert_eq!((first.len(), third.len(), ninth.len()), (20, 20, 20));
    assert!(first.iter().all(|s| *s <= 1), "{first:?}");
    assert!(third.iter().all(|s| *s <= 4), "{third:?}");
    assert!(ninth.iter().all(|s| *s <= 60), "{ninth:?}");
    assert!(
        ninth.iter().any(|s| *s > 4),
        "the 9th receive's draws span a minute: {ninth:?}"
    );
    assert_eq!(TIMER_REDELIVERY.cap, Duration::from_secs(60));
    // An unclassified store failure is not tried again inside the invocation.
    assert!(waits.waits().is_empty(), "{:?}", waits.waits());
}

/// A lapse queue never used (the records fail before any send).
struct NoQueue;

#[async_trait::async_trait]
impl LapseQueue for NoQueue {
    async fn enqueue(&self, _: &OutboxEntry) -> Result<(), PortError> {
        Err(PortError::new(false, "no lapse queue here".into(), None))
    }
}

/// A visibility change that fails still hands the record back (the queue's 720 s apply).
#[tokio::test]
async fn a_record_goes_back_even_when_its_visibility_cannot_be_changed() {
    let (watcher, store) = raised(1, Flaky::refusing(0, true)).await;
    store.fail_commits_of(Some(Tenant::default_tenant()));
    let visibility = Visibility {
        fails: true,
        ..Visibility::default()
    };
    let waits = Arc::new(RecordingSleeper::new());
    let report = handle_in(
        &watcher,
        &NoQueue,
        &NoSchedules,
        None,
        &json!({ "Records": [timer_record("a", 0, 2)] }),
        t(FIRED),
        &invocation(&visibility, &waits),
    )
    .await
    .expect("a batch never fails whole");
    assert_eq!(failed_ids(&report), ["a"]);
    assert_eq!(visibility.changed.lock().unwrap().len(), 1);
}

/// A commit that loses to other writers past the step's 32 loads (`Exhausted`, contention that
/// passes) is tried again inside the invocation after a wait within 250 ms, and lapses: the
/// record is not handed back. Without a deadline (`handle`) it is handed back at once.
#[tokio::test]
async fn contention_that_passes_is_tried_again_inside_the_invocation() {
    let queue = Flaky::refusing(0, true);
    let (watcher, store) = raised(1, queue.clone()).await;
    let event = json!({ "Records": [timer_record("a", 0, 1)] });

    store.conflict_next_commits(40);
    let without_deadline = handle(&watcher, &*queue, &NoSchedules, None, &event, t(FIRED))
        .await
        .expect("batch");
    assert_eq!(failed_ids(&without_deadline), ["a"]);
    assert!(queue.taken().is_empty());

    store.conflict_next_commits(40);
    let visibility = Visibility::default();
    let waits = Arc::new(RecordingSleeper::new());
    let report = handle_in(
        &watcher,
        &*queue,
        &NoSchedules,
        None,
        &event,
        t(FIRED),
        &invocation(&visibility, &waits),
    )
    .await
    .expect("batch");
    assert!(report.batch_item_failures.is_empty(), "{report:?}");
    assert_eq!((report.evaluated, report.lapses), (1, 1));
    assert_eq!(queue.taken(), [lapse_id(0)]);
    let waited = waits.waits();
    assert_eq!(waited.len(), 1, "{waited:?}");
    assert!(waited[0] <= Duration::from_millis(250), "{waited:?}");
    assert!(visibility.changed.lock().unwrap().is_empty());
}

/// The lapse is committed but the lapse queue throttles its task: the record is handed back
/// (the lapse counted once), its visibility within its first receive's second. Its redelivery
/// finds the lapse recorded and hands the task over: the queue takes it once, by its messageId,
/// and nothing lapses twice.
#[tokio::test]
async fn a_lapse_task_the_queue_did_not_take_comes_back_with_its_record() {
    let queue = Flaky::refusing(1, true);
    let (watcher, _store) = raised(1, queue.clone()).await;
    let visibility = Visibility::default();
    let waits = Arc::new(RecordingSleeper::new());

    let first = handle_in(
        &watcher,
        &*queue,
        &NoSchedules,
        None,
        &json!({ "Records": [timer_record("a", 0, 1)] }),
        t(FIRED),
        &invocation(&visibility, &waits),
    )
    .await
    .expect("batch");
    assert_eq!(failed_ids(&first), ["a"]);
    assert_eq!(first.lapses, 1);
    assert!(queue.taken().is_empty());
    let changed = visibility.changed.lock().unwrap().clone();
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].0, "rh-a");
    assert!(changed[0].1 <= 1, "{changed:?}");

    let again = handle_in(
        &watcher,
        &*queue,
        &NoSchedules,
        None,
        &json!({ "Records": [timer_record("a", 0, 2)] }),
        t("2026-09-10T20:00:02Z"),
        &invocation(&visibility, &waits),
    )
    .await
    .expect("batch");
    assert!(again.batch_item_failures.is_empty(), "{again:?}");
    assert_eq!((again.lapses, again.handed_over), (0, 1));
    assert_eq!(queue.taken(), [lapse_id(0)], "one send, one messageId");
    assert_eq!(visibility.changed.lock().unwrap().len(), 1);
}

/// Schedules that record each arm `(timer, at)`, and refuse every arm when `refuse`.
#[derive(Default)]
struct Arms {
    armed: Mutex<Vec<(TimerKey, Instant)>>,
    refuse: bool,
}

#[async_trait::async_trait]
impl Timers for Arms {
    async fn arm(&self, _: &Tenant, key: &TimerKey, at: Instant) -> Result<(), PortError> {
        if self.refuse {
            return Err(PortError::new(
                true,
                "SendMessage (ThrottlingException)".into(),
                None,
            ));
        }
        self.armed.lock().unwrap().push((key.clone(), at));
        Ok(())
    }
    async fn disarm(&self, _: &Tenant, _: &TimerKey) -> Result<(), PortError> {
        Ok(())
    }
}

/// Fired by its schedule (Scheduler invokes Lambda asynchronously, and Lambda's asynchronous
/// retries are off for the timer function), a lapse whose task the queue throttled arms its
/// timer again `FIRE_AGAIN_AFTER` later (the timer queue's delayed message); that message's
/// evaluation hands the task over once. When the arm fails too, the invocation fails as
/// retryable (logged; the sweep's `requeue` duty wakes the lane).
#[tokio::test]
async fn a_schedules_fire_whose_lapse_task_was_not_queued_is_armed_again() {
    let queue = Flaky::refusing(1, true);
    let (watcher, _store) = raised(1, queue.clone()).await;
    let visibility = Visibility::default();
    let waits = Arc::new(RecordingSleeper::new());
    let run = invocation(&visibility, &waits);
    let arms = Arms::default();
    let fired = handle_in(
        &watcher,
        &*queue,
        &arms,
        None,
        &timer_input(0),
        t(FIRED),
        &run,
    )
    .await
    .expect("handed to the timer queue");
    assert_eq!((fired.lapses, fired.fired_again), (1, 1));
    assert_eq!(
        *arms.armed.lock().unwrap(),
        [(deadline(0), t("2026-09-10T20:00:03Z"))],
        "FIRE_AGAIN_AFTER (2 s) after {FIRED}"
    );
    assert_eq!(FIRE_AGAIN_AFTER, Duration::from_secs(2));
    assert!(queue.taken().is_empty());
    let again = handle_in(
        &watcher,
        &*queue,
        &arms,
        None,
        &json!({ "Records": [timer_record("a", 0, 1)] }),
        t("2026-09-10T20:00:03Z"),
        &run,
    )
    .await
    .expect("batch");
    assert_eq!((again.lapses, again.handed_over), (0, 1));
    assert_eq!(queue.taken(), [lapse_id(0)]);

    let queue = Flaky::refusing(1, true);
    let (watcher, _store) = raised(1, queue.clone()).await;
    let refusing = Arms {
        refuse: true,
        ..Arms::default()
    };
    let err = handle_in(
        &watcher,
        &*queue,
        &refusing,
        None,
        &timer_input(0),
        t(FIRED),
        &run,
    )
    .await
    .expect_err("neither queued nor armed again");
    assert!(matches!(err, TimerError::Enqueue(_)), "{err}");
    assert_eq!(
        lambda_runtime::Diagnostic::from(err).error_type,
        "Retryable.Enqueue"
    );
}

/// Each sweep duty is its own tick: with 40 deadlines due and one lapse task lost past
/// `REQUEUE_AFTER_SECS`, the `requeue` duty wakes the lost task's lane and evaluates none of
/// the timers (a backlog of due timers never delays it); the `timers` duty fires the 40 and
/// re-queues nothing.
#[tokio::test]
async fn a_backlog_of_due_timers_never_delays_another_duty() {
    let queue = Flaky::refusing(1, true);
    let (watcher, _store) = raised(41, queue.clone()).await;
    // m-40's lapse: committed at the deadline, its task refused by the queue and its timer not
    // armed again (lost).
    let refusing = Arms {
        refuse: true,
        ..Arms::default()
    };
    let lost = handle(&watcher, &*queue, &refusing, None, &timer_input(40), t(DUE)).await;
    assert!(lost.is_err(), "{lost:?}");
    assert!(queue.taken().is_empty());
    let later = t("2026-09-10T20:05:00Z");
    let requeue = handle(
        &watcher,
        &*queue,
        &NoSchedules,
        None,
        &json!({ "sweep": "requeue" }),
        later,
    )
    .await
    .expect("requeue");
    assert_eq!(
        (requeue.requeued, requeue.evaluated, requeue.lapses),
        (1, 0, 0)
    );
    assert_eq!(queue.taken(), [lapse_id(40)]);
    let timers = handle(
        &watcher,
        &*queue,
        &NoSchedules,
        None,
        &json!({ "sweep": "timers" }),
        later,
    )
    .await
    .expect("timers");
    assert_eq!(
        (timers.evaluated, timers.lapses, timers.requeued),
        (40, 40, 0)
    );
}

/// What can never succeed is not handed back: a body that is no timer message is dropped, and a
/// lapse task the queue refused for good (permissions) is left to the sweep's re-queue.
#[tokio::test]
async fn permanent_failures_are_not_handed_back() {
    let queue = Flaky::refusing(1, false);
    let (watcher, _store) = raised(1, queue.clone()).await;
    let visibility = Visibility::default();
    let waits = Arc::new(RecordingSleeper::new());
    let report = handle_in(
        &watcher,
        &*queue,
        &NoSchedules,
        None,
        &json!({ "Records": [
            record("bad", "{\"tenant\": \"default\"}", 1),
            record("worse", "not json", 4),
            timer_record("a", 0, 1),
        ]}),
        t(FIRED),
        &invocation(&visibility, &waits),
    )
    .await
    .expect("batch");
    assert!(report.batch_item_failures.is_empty(), "{report:?}");
    assert_eq!((report.evaluated, report.lapses), (1, 1));
    assert!(visibility.changed.lock().unwrap().is_empty());
    assert!(queue.taken().is_empty(), "the sweep re-queues it");
}

/// A deferred schedule delete whose evaluation lapses the timer (it fell due meanwhile) and
/// whose lapse task the queue throttled is handed back too; received again, it hands the task
/// over once.
#[tokio::test]
async fn a_disarm_whose_lapse_task_was_not_queued_comes_back_and_hands_it_over() {
    let queue = Flaky::refusing(1, true);
    let (watcher, _store) = raised(1, queue.clone()).await;
    let visibility = Visibility::default();
    let waits = Arc::new(RecordingSleeper::new());
    let body = serde_json::to_string(&watcher_aws::DisarmMessage {
        tenant: Tenant::default_tenant(),
        disarm: deadline(0),
    })
    .expect("disarm message");
    let run = |received: u32| {
        let event = json!({ "Records": [record("d", &body, received)] });
        let run = invocation(&visibility, &waits);
        let watcher = &watcher;
        let queue = &*queue;
        async move {
            handle_in(watcher, queue, &NoSchedules, None, &event, t(FIRED), &run)
                .await
                .expect("batch")
        }
    };
    let first = run(1).await;
    assert_eq!(failed_ids(&first), ["d"]);
    assert_eq!(first.lapses, 1);
    assert!(queue.taken().is_empty());
    let again = run(2).await;
    assert!(again.batch_item_failures.is_empty(), "{again:?}");
    assert_eq!((again.disarmed, again.lapses, again.handed_over), (1, 0, 1));
    assert_eq!(queue.taken(), [lapse_id(0)], "one send, one messageId");
}
