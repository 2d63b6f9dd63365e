//! The timer function's unit tests.

use std::sync::{Arc, Mutex};

use serde_json::json;
use watcher_core::engine::TimerKey;
use watcher_core::ids::{AgentId, ExpectationId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::settings::Settings;
use watcher_delivery::testing::agent_entry;
use watcher_runtime::directory::Directory;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::ports::PortError;
use watcher_runtime::store::{Commit, OutboxEntry};

use super::*;
use watcher_runtime::store::Records as _;

/// A lapse queue that keeps the `(agent, messageId)` of every entry enqueued.
#[derive(Default)]
struct Kept(Mutex<Vec<(String, String)>>);

#[async_trait::async_trait]
impl LapseQueue for Kept {
    async fn enqueue(&self, entry: &OutboxEntry) -> Result<(), PortError> {
        self.0
            .lock()
            .unwrap()
            .push((entry.agent.to_string(), entry.message_id.clone()));
        Ok(())
    }
}

fn queued(tenant: &Tenant, agent: &str, n: usize, at: Instant) -> OutboxEntry {
    OutboxEntry::queued(
        tenant.clone(),
        AgentId::parse(agent).unwrap(),
        format!("lapse:e-{n}:overdue:{at}"),
        ExpectationId::parse(format!("e-{n}")).unwrap(),
        LapseKind::Overdue,
        at,
        json!({}),
    )
}

/// Schedule deletes that wait until five are under way at once: handled one after
/// another, the first would wait for ever.
struct Gathering(tokio::sync::Barrier);

#[async_trait::async_trait]
impl Timers for Gathering {
    async fn arm(&self, _: &Tenant, _: &TimerKey, _: Instant) -> Result<(), PortError> {
        Ok(())
    }

    async fn disarm(&self, _: &Tenant, _: &TimerKey) -> Result<(), PortError> {
        self.0.wait().await;
        Ok(())
    }
}

/// A timer-queue batch's records are handled at once: five schedule deletes each waiting
/// for the other four all finish (the batch takes one record's time, not five).
#[tokio::test]
async fn a_timer_queue_batch_is_handled_at_once() {
    let t = Tenant::default_tenant();
    let watcher = Watcher::new(
        Arc::new(MemoryStore::new()),
        Directory::new(),
        Settings::default(),
    );
    let records: Vec<Value> = (0..5)
        .map(|n| {
            let message = watcher_aws::DisarmMessage {
                tenant: t.clone(),
                disarm: TimerKey {
                    subject: watcher_core::ids::Subject::parse("shipment", &format!("S-{n}"))
                        .unwrap(),
                    expectation: watcher_core::ids::ExpectationRef {
                        agent: AgentId::parse("booking").unwrap(),
                        id: ExpectationId::parse(format!("e-{n}")).unwrap(),
                    },
                    kind: watcher_core::engine::TimerKind::Deadline,
                },
            };
            json!({ "messageId": format!("m-{n}"), "body": serde_json::to_string(&message).unwrap() })
        })
        .collect();
    let timers = Gathering(tokio::sync::Barrier::new(5));
    let now = Instant::parse("2026-09-10T13:00:00Z").unwrap();
    let report = tokio::time::timeout(
        Duration::from_secs(10),
        handle(
            &watcher,
            &Kept::default(),
            &timers,
            None,
            &json!({ "Records": records }),
            now,
        ),
    )
    .await
    .expect("the five deletes run at once")
    .unwrap();
    assert_eq!(report.disarmed, 5);
    assert!(report.batch_item_failures.is_empty());
}

/// One agent with 5,000 lapse tasks queued (lapsed first), another with one lost message:
/// the sweep re-queues the other agent's, and at most `REQUEUE_PER_AGENT` of the backlog.
#[tokio::test]
async fn one_agents_backlog_never_hides_another_agents_lost_message() {
    let t = Tenant::default_tenant();
    let store = Arc::new(MemoryStore::new());
    let directory = Directory::new();
    directory.insert(agent_entry(&t, &AgentId::parse("backlog").unwrap()));
    directory.insert(agent_entry(&t, &AgentId::parse("quiet").unwrap()));
    let at = Instant::parse("2026-09-10T12:00:00Z").unwrap();
    let backlog: Vec<OutboxEntry> = (0..5000).map(|n| queued(&t, "backlog", n, at)).collect();
    store
        .commit(
            &t,
            Commit {
                outbox: backlog,
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let later = Instant::parse("2026-09-10T12:01:00Z").unwrap();
    store
        .commit(
            &t,
            Commit {
                outbox: vec![queued(&t, "quiet", 9, later)],
                ..Commit::default()
            },
        )
        .await
        .unwrap();
    let watcher = Watcher::new(Arc::clone(&store), directory, Settings::default());
    let queue = Kept::default();
    let now = Instant::parse("2026-09-10T13:00:00Z").unwrap();
    let report = sweep(&watcher, &queue, None, now).await.unwrap();
    let kept = queue.0.lock().unwrap().clone();
    assert!(
        kept.contains(&("quiet".into(), format!("lapse:e-9:overdue:{later}"))),
        "the quiet agent's lost message is re-queued"
    );
    let of_backlog = kept.iter().filter(|(a, _)| a == "backlog").count();
    assert_eq!(of_backlog, REQUEUE_PER_AGENT);
    assert_eq!(report.requeued, REQUEUE_PER_AGENT + 1);
}

/// A lapse queue that records lane wake-ups, refusing them as `refuse` says.
#[derive(Default)]
struct Wakes {
    woken: Mutex<Vec<String>>,
    refuse: Option<bool>,
}

#[async_trait::async_trait]
impl LapseQueue for Wakes {
    async fn wake(&self, _: &Tenant, agent: &AgentId) -> Result<(), PortError> {
        if let Some(retryable) = self.refuse {
            return Err(PortError::new(retryable, "refused".into(), None));
        }
        self.woken.lock().unwrap().push(agent.to_string());
        Ok(())
    }

    async fn enqueue(&self, _: &OutboxEntry) -> Result<(), PortError> {
        Ok(())
    }
}

/// A timer queue that records the wake-ups sent on: `(agent, at)`.
#[derive(Default)]
struct SentOn(Mutex<Vec<(String, Instant)>>);

#[async_trait::async_trait]
impl crate::submitter::LaneWakes for SentOn {
    async fn wake_lane_at(
        &self,
        _: &Tenant,
        agent: &AgentId,
        at: Instant,
    ) -> Result<(), PortError> {
        self.0.lock().unwrap().push((agent.to_string(), at));
        Ok(())
    }
}

fn wake_record(id: &str, agent: &str, at: &str) -> Value {
    let body = watcher_aws::wake_lane_body(&WakeLane {
        tenant: Tenant::default_tenant(),
        agent: AgentId::parse(agent).unwrap(),
        at: Instant::parse(at).unwrap(),
    })
    .unwrap();
    json!({ "messageId": id, "receiptHandle": format!("rh-{id}"), "body": body })
}

/// A wake-up whose instant has come wakes its lane through the lapse queue; one still ahead
/// (a wait beyond SQS's 15 minutes) is sent on with its instant and wakes
/// nothing yet.
#[tokio::test]
async fn a_lane_wake_up_wakes_at_its_instant_and_is_sent_on_before_it() {
    let watcher = Watcher::new(
        Arc::new(MemoryStore::new()),
        Directory::new(),
        Settings::default(),
    );
    let queue = Wakes::default();
    let sent_on = SentOn::default();
    let invocation = Invocation::unbounded().with_wakes(&sent_on);
    let now = Instant::parse("2026-09-10T13:00:00Z").unwrap();
    let event = json!({ "Records": [
        wake_record("due", "booking", "2026-09-10T12:59:59Z"),
        wake_record("now", "billing", "2026-09-10T13:00:00Z"),
        wake_record("ahead", "customs", "2026-09-10T14:00:00Z"),
    ]});
    let report = handle_in(
        &watcher,
        &queue,
        &Gathering(tokio::sync::Barrier::new(1)),
        None,
        &event,
        now,
        &invocation,
    )
    .await
    .unwrap();
    assert_eq!((report.lanes_woken, report.wakes_sent_on), (2, 1));
    assert!(report.batch_item_failures.is_empty());
    let mut woken = queue.woken.lock().unwrap().clone();
    woken.sort();
    assert_eq!(woken, ["billing", "booking"]);
    assert_eq!(
        *sent_on.0.lock().unwrap(),
        [(
            "customs".to_owned(),
            Instant::parse("2026-09-10T14:00:00Z").unwrap()
        )]
    );
}

/// A wake the lapse queue refuses for a passing reason is handed back; one it refuses for
/// good, or a wake still ahead with no timer queue to send it on, is dropped (logged).
#[tokio::test]
async fn a_lane_wake_up_that_fails_is_handed_back_only_when_it_may_pass() {
    let watcher = Watcher::new(
        Arc::new(MemoryStore::new()),
        Directory::new(),
        Settings::default(),
    );
    let now = Instant::parse("2026-09-10T13:00:00Z").unwrap();
    let timers = Gathering(tokio::sync::Barrier::new(1));
    let event = json!({ "Records": [wake_record("a", "booking", "2026-09-10T12:00:00Z")] });
    for (retryable, failed) in [(true, vec!["a"]), (false, vec![])] {
        let queue = Wakes {
            refuse: Some(retryable),
            ..Wakes::default()
        };
        let report = handle(&watcher, &queue, &timers, None, &event, now)
            .await
            .unwrap();
        let ids: Vec<&str> = report
            .batch_item_failures
            .iter()
            .map(|f| f.item_identifier.as_str())
            .collect();
        assert_eq!(ids, failed, "retryable: {retryable}");
        assert_eq!(report.lanes_woken, 0);
    }
    let ahead = json!({ "Records": [wake_record("b", "booking", "2026-09-10T14:00:00Z")] });
    let report = handle(&watcher, &Wakes::default(), &timers, None, &ahead, now)
        .await
        .unwrap();
    assert_eq!(
        (report.wakes_sent_on, report.batch_item_failures.len()),
        (0, 0)
    );
}

/// An event of none of the function's shapes is refused, not retried, and handles nothing.
#[tokio::test]
async fn an_unknown_event_is_refused() {
    let watcher = Watcher::new(
        Arc::new(MemoryStore::new()),
        Directory::new(),
        Settings::default(),
    );
    let now = Instant::parse("2026-09-10T13:00:00Z").unwrap();
    let timers = Gathering(tokio::sync::Barrier::new(1));
    for event in [
        json!({ "sweep": "everything" }),
        json!({ "detail": {} }),
        json!("sweep"),
    ] {
        let e = handle(&watcher, &Kept::default(), &timers, None, &event, now)
            .await
            .expect_err("refused");
        assert!(matches!(e, TimerError::Malformed(_)), "{e}");
    }
}

/// Cards that never answer, then notifications: with `{"sweep": true}` and two seconds
/// left past the reserve, the cards duty ends at its share and the notify duty still runs;
/// the tick answers within the invocation.
#[tokio::test]
async fn each_duty_of_a_full_sweep_ends_at_its_share() {
    struct Stuck;
    #[async_trait::async_trait]
    impl crate::cards::AgentCards for Stuck {
        async fn refresh(&self, _: Instant) -> crate::cards::CardsReport {
            std::future::pending().await
        }
        async fn pick_up(&self, _: &Tenant, _: &AgentId, _: Instant) -> bool {
            false
        }
        async fn pick_up_all(&self, _: Instant) -> usize {
            0
        }
    }
    struct Told;
    #[async_trait::async_trait]
    impl Notify for Told {
        async fn round(&self) -> crate::sweep::NotifyCounts {
            crate::sweep::NotifyCounts {
                delivered: 3,
                failed: 1,
            }
        }
    }
    let watcher = Watcher::new(
        Arc::new(MemoryStore::new()),
        Directory::new(),
        Settings::default(),
    );
    let none = Gathering(tokio::sync::Barrier::new(1));
    let parts = TimerParts {
        watcher: &watcher,
        queue: &Kept::default(),
        timers: &none,
        cards: Some(&Stuck),
        following: None,
        notify: Some(&Told),
    };
    let started = std::time::Instant::now();
    let deadline =
        std::time::SystemTime::now() + crate::sweep::SWEEP_RESERVE + Duration::from_secs(2);
    let invocation = Invocation::new(&crate::submitter::QueueTimeout, deadline);
    let now = Instant::parse("2026-09-10T13:00:00Z").unwrap();
    let report = handle_event(
        &parts,
        &TimerEvent::Sweep(crate::timer_event::SweepTick::All),
        now,
        &invocation,
    )
    .await
    .unwrap();
    assert!(report.cut_short, "{report:?}");
    assert_eq!((report.notified, report.notify_failed), (3, 1));
    let took = started.elapsed();
    assert!(took < Duration::from_secs(3), "took {took:?}");
}

#[test]
fn a_duty_shares_what_is_left_past_the_reserve() {
    let now = std::time::SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
    let secs = Duration::from_secs;
    let share = crate::sweep::share;
    assert_eq!(share(now + secs(125), now, 1), secs(120));
    assert_eq!(share(now + secs(125), now, 6), secs(20));
    assert_eq!(
        share(now + secs(3), now, 1),
        secs(0),
        "less than the reserve"
    );
    assert_eq!(share(now - secs(3), now, 2), secs(0), "past the deadline");
}
