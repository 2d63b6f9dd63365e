//! Checks of the lapses' resolutions (expectations-v1 §13.1; [`crate::resolution`]): recorded
//! on the lapse task by the step that ends the lapse, once, and listed per agent by instant.

use a2a_types::TaskState;
use watcher_core::lapse::Delivery;

use super::*;
use crate::directory::AgentEntry;
use crate::resolution::{Resolution, ResolutionReason, Resolved};
use crate::store::{Lane, LaneQuery};

/// The `messageId` of the `overdue` lapse of `id`, due at [`at`]`(10)`.
fn overdue_id(id: &str) -> String {
    watcher_core::lapse::message_id(
        &ExpectationId::parse(id).expect("a valid expectation id"),
        LapseKind::Overdue,
        at(10),
    )
}

/// The expectations [`lapsed`] raises, each on its own subject.
const LAPSED: [&str; 4] = ["r-fact", "r-withdrawn", "r-task", "r-superseded"];

/// A watcher over `store` for tenant `t`, whose booking agent receives lapse tasks, with the
/// expectations [`LAPSED`] (each on subject `S-{id}`, due at `at(10)`) lapsed `overdue` at
/// `at(11)`.
async fn lapsed<S: Store + 'static>(store: &Arc<S>, t: &Tenant) -> Watcher<S> {
    let directory = Directory::new();
    directory.insert(AgentEntry {
        tenant: t.clone(),
        profile: booking_profile(),
        submits_lapses: true,
        delivery: Delivery::default(),
    });
    let watcher = Watcher::new(Arc::clone(store), directory, Settings::default());
    let expectations = LAPSED
        .iter()
        .map(|id| {
            let subject = format!("S-{id}");
            let key = format!("k-{id}");
            expectation(id, "shipment.manifest", &subject, &key, at(10), None)
        })
        .collect();
    watcher
        .apply(t, &raise("task-r", expectations), at(0))
        .await
        .expect("raise");
    watcher.fire_due(at(11)).await.expect("fire the deadlines");
    for id in LAPSED {
        let entry = stored_entry(&**store, t, &agent("booking"), &overdue_id(id)).await;
        let entry = entry.unwrap_or_else(|| panic!("{id} lapsed into a lapse task"));
        assert_eq!(entry.resolved, None, "{id}: a new lapse is unresolved");
    }
    watcher
}

/// A lapse task is resolved by the step that ends its lapse, in that step's commit: the late
/// fact (reason `fact`, at the fact's receipt), the expectation's withdrawal (`withdrawn`, with
/// its reason) or supersession (`superseded`, with the successor), its Task reaching `TASK_STATE_COMPLETED` (`task`, at the instant the state was
/// recorded; a state that is not final resolves nothing). The first resolution stays: a later
/// resolution, or a writer that read the entry before it was resolved, changes nothing; a
/// resolution of a lapse task that is not stored is skipped.
pub async fn lapses_are_resolved_once<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("t-resolve");
    let booking = agent("booking");
    let watcher = lapsed(&store, &t).await;
    let stale = stored_entry(&*store, &t, &booking, &overdue_id("r-fact"))
        .await
        .expect("stored");

    let fact = Input::Facts(vec![ReportedFact {
        fact_key: fact_key("k-r-fact"),
        observed_at: at(29),
        observed_at_given: None,
        mapping: None,
        subject: Some(shipment("S-r-fact")),
        source: source(),
    }]);
    watcher
        .apply(&t, &fact, at(30))
        .await
        .expect("the late fact");
    let resolved = |id: &'static str| {
        let store = Arc::clone(&store);
        let (t, booking) = (t.clone(), booking.clone());
        async move {
            stored_entry(&*store, &t, &booking, &overdue_id(id))
                .await
                .expect("stored")
                .resolved
        }
    };
    assert_eq!(
        resolved("r-fact").await,
        Some(Resolution {
            at: at(30),
            reason: ResolutionReason::Fact
        }),
        "the late fact resolves its lapse at the fact's receipt"
    );

    let withdraw = Input::Push {
        agent: booking_profile(),
        items: vec![PushItem::Withdraw {
            origin: Origin {
                task_id: TaskId::parse("task-r").expect("a valid task id"),
                context_id: None,
            },
            ids: vec![ExpectationId::parse("r-withdrawn").expect("a valid id")],
            reason: Some("the booking was canceled".into()),
        }],
    };
    watcher
        .apply(&t, &withdraw, at(31))
        .await
        .expect("the withdrawal");
    let withdrawn = resolved("r-withdrawn").await.expect("resolved");
    assert_eq!(withdrawn.at, at(31));
    match &withdrawn.reason {
        ResolutionReason::Withdrawn { detail } => assert!(
            detail.contains("the booking was canceled"),
            "the withdrawal's reason: {detail}"
        ),
        other => panic!("a withdrawal resolves with reason withdrawn, not {other:?}"),
    }

    let successor = Expectation::from_json(&json!({
        "expectationId": "r-successor",
        "kind": "shipment.manifest",
        "subject": { "type": "shipment", "id": "S-r-superseded" },
        "expects": "the manifest, rebooked",
        "satisfiedBy": { "factKey": "k-r-superseded" },
        "dueAt": at(60).to_string(),
        "basis": "observed",
        "supersedes": "r-superseded",
    }))
    .expect("a valid successor");
    watcher
        .apply(&t, &raise("task-r", vec![successor]), at(34))
        .await
        .expect("the successor");
    assert_eq!(
        resolved("r-superseded").await,
        Some(Resolution {
            at: at(34),
            reason: ResolutionReason::Superseded {
                by: ExpectationId::parse("r-successor").expect("a valid id")
            }
        }),
        "a supersession resolves the predecessor's lapse, naming the successor"
    );

    let task_id = overdue_id("r-task");
    let working = store
        .outbox_task_state(&t, &booking, &task_id, "lt-1", TaskState::Working, at(32))
        .await
        .expect("a push");
    assert_eq!(
        working.map(|e| e.resolved),
        Some(None),
        "a working task resolves nothing"
    );
    store
        .outbox_task_state(&t, &booking, &task_id, "lt-1", TaskState::Completed, at(33))
        .await
        .expect("a push");
    assert_eq!(
        resolved("r-task").await,
        Some(Resolution {
            at: at(33),
            reason: ResolutionReason::Task {
                state: "TASK_STATE_COMPLETED".into()
            }
        })
    );

    // The first resolution stays.
    let later = Resolution {
        at: at(40),
        reason: ResolutionReason::Acknowledged { by: "ops".into() },
    };
    let again = Commit {
        resolutions: vec![
            Resolved {
                agent: booking.clone(),
                message_id: overdue_id("r-fact"),
                resolution: later.clone(),
            },
            Resolved {
                agent: booking.clone(),
                message_id: "lapse:not-stored:overdue:2026-09-10T12:10:00Z".into(),
                resolution: later.clone(),
            },
        ],
        ..Commit::default()
    };
    store
        .commit(&t, again)
        .await
        .expect("a commit of resolutions, one of nothing stored");
    assert_eq!(
        resolved("r-fact").await.map(|r| r.reason),
        Some(ResolutionReason::Fact),
        "a later resolution changes nothing"
    );
    store
        .outbox_update(&stale)
        .await
        .expect("a stale delivery write");
    assert_eq!(
        resolved("r-fact").await.map(|r| r.at),
        Some(at(30)),
        "a writer that read the entry before it was resolved does not unresolve it"
    );
    assert_eq!(
        stored_entry(
            &*store,
            &t,
            &booking,
            "lapse:not-stored:overdue:2026-09-10T12:10:00Z"
        )
        .await,
        None,
        "a resolution never inserts"
    );
}

/// An agent's resolved lapse tasks are listed by when they were resolved (`Lane::Resolved`,
/// `Outbox::outbox_resolved`): earliest first, from `from` (inclusive, the notifier's cursor)
/// through `due_by`, at most `limit`, only that agent's, and none that is unresolved.
pub async fn resolved_lapse_tasks_are_listed<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("t-resolved-lane");
    let (booking, other) = (agent("booking"), agent("other"));
    let mut entries = Vec::new();
    for (who, id) in [
        (&booking, "lapse:a"),
        (&booking, "lapse:b"),
        (&booking, "lapse:c"),
        (&booking, "lapse:open"),
        (&other, "lapse:a"),
    ] {
        entries.push(OutboxEntry {
            agent: who.clone(),
            ..outbox_entry(&t, id, at(5))
        });
    }
    store
        .commit(&t, Commit::of_outbox(entries))
        .await
        .expect("lapse tasks");
    // Resolved out of their order of lapse: c first, then a, then b.
    let resolve = |who: &AgentId, id: &str, minute: u32| Resolved {
        agent: who.clone(),
        message_id: id.to_owned(),
        resolution: Resolution {
            at: at(minute),
            reason: ResolutionReason::Fact,
        },
    };
    let commit = Commit {
        resolutions: vec![
            resolve(&booking, "lapse:c", 20),
            resolve(&booking, "lapse:a", 21),
            resolve(&booking, "lapse:b", 22),
            resolve(&other, "lapse:a", 20),
        ],
        ..Commit::default()
    };
    store.commit(&t, commit).await.expect("resolutions");
    let ids = |found: Vec<OutboxEntry>| -> Vec<String> {
        found.into_iter().map(|e| e.message_id).collect()
    };
    let all = store
        .outbox_resolved(&t, &booking, None, 10)
        .await
        .expect("outbox_resolved");
    assert_eq!(
        ids(all),
        ["lapse:c", "lapse:a", "lapse:b"],
        "earliest resolution first; the open one is not listed"
    );
    let after = store
        .outbox_resolved(&t, &booking, Some(at(21)), 10)
        .await
        .expect("outbox_resolved from a cursor");
    assert_eq!(ids(after), ["lapse:a", "lapse:b"], "from is inclusive");
    let first = store
        .outbox_resolved(&t, &booking, None, 1)
        .await
        .expect("outbox_resolved, limited");
    assert_eq!(ids(first), ["lapse:c"]);
    let through = store
        .outbox_lane(&LaneQuery {
            tenant: &t,
            agent: &booking,
            lane: Lane::Resolved,
            due_by: Some(at(21)),
            from: Some(at(21)),
            limit: 10,
        })
        .await
        .expect("outbox_lane");
    assert_eq!(ids(through), ["lapse:a"], "between from and due_by");
    let others = store
        .outbox_resolved(&t, &other, None, 10)
        .await
        .expect("outbox_resolved of another agent");
    assert_eq!(ids(others), ["lapse:a"], "only the agent's own");
    assert!(
        store
            .outbox_resolved(&tenant("t-elsewhere"), &booking, None, 10)
            .await
            .expect("outbox_resolved of another tenant")
            .is_empty(),
        "tenants are apart"
    );
}
