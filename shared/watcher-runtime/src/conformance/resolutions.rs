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

/// `Outbox::outbox_resolve` (an operator's acknowledgement): resolves a stored lapse task once,
/// keeping every delivery field as stored; a second resolution answers `None` and changes
/// nothing; a lapse task not stored answers `None` and is not inserted.
pub async fn outbox_resolve_resolves_once<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("t-outbox-resolve");
    let booking = agent("booking");
    store
        .commit(
            &t,
            Commit::of_outbox(vec![outbox_entry(&t, "lapse:ack", at(5))]),
        )
        .await
        .expect("a lapse task");
    let mut delivered = stored_entry(&*store, &t, &booking, "lapse:ack")
        .await
        .expect("stored");
    delivered.delivery = DeliveryState::Sent;
    delivered.attempts = 2;
    delivered.next_attempt_at = at(7);
    delivered.task_id = Some("lt-ack".into());
    delivered.task_state = Some("TASK_STATE_WORKING".into());
    store.outbox_update(&delivered).await.expect("delivered");

    let acknowledged = Resolution {
        at: at(9),
        reason: ResolutionReason::Acknowledged {
            by: "ops@example.com".into(),
        },
    };
    let written = store
        .outbox_resolve(&t, &booking, "lapse:ack", &acknowledged)
        .await
        .expect("outbox_resolve")
        .expect("an unresolved lapse task is resolved");
    assert_eq!(written.resolved, Some(acknowledged.clone()));
    assert_eq!(
        OutboxEntry {
            resolved: None,
            ..written.clone()
        },
        delivered,
        "every other field is kept as stored"
    );
    assert_eq!(
        stored_entry(&*store, &t, &booking, "lapse:ack").await,
        Some(written.clone()),
        "the answer is the entry as written"
    );

    let later = Resolution {
        at: at(10),
        reason: ResolutionReason::Acknowledged { by: "later".into() },
    };
    assert_eq!(
        store
            .outbox_resolve(&t, &booking, "lapse:ack", &later)
            .await
            .expect("outbox_resolve again"),
        None,
        "resolved already: nothing written"
    );
    assert_eq!(
        stored_entry(&*store, &t, &booking, "lapse:ack")
            .await
            .and_then(|e| e.resolved),
        Some(acknowledged),
        "the first resolution stays"
    );
    assert_eq!(
        store
            .outbox_resolve(&t, &booking, "lapse:missing", &later)
            .await
            .expect("outbox_resolve of nothing"),
        None
    );
    assert_eq!(
        stored_entry(&*store, &t, &booking, "lapse:missing").await,
        None,
        "outbox_resolve never inserts"
    );
    assert_eq!(
        store
            .outbox_resolve(&t, &agent("other"), "lapse:ack", &later)
            .await
            .expect("outbox_resolve for another agent"),
        None,
        "the identity includes the agent"
    );
}

/// An agent's unresolved lapse tasks are listed by when they lapsed (`Lane::Open`,
/// `Outbox::outbox_open`): earliest first, from `from` (inclusive) through `due_by`, at most
/// `limit`, only that agent's; a lapse task leaves the lane when it is resolved (by
/// `outbox_resolve` or a commit) and is then in `Lane::Resolved`. A lapse task queued and
/// resolved by one commit is stored resolved; a commit that queues a lapse task stored already
/// and resolves it resolves the stored one.
pub async fn open_lapse_tasks_are_listed<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("t-open-lane");
    let (booking, other) = (agent("booking"), agent("other"));
    // Queued out of their order of lapse.
    let mut entries = Vec::new();
    for (who, id, minute) in [
        (&booking, "lapse:c", 7),
        (&booking, "lapse:a", 5),
        (&booking, "lapse:b", 6),
        (&booking, "lapse:d", 8),
        (&other, "lapse:a", 5),
    ] {
        entries.push(OutboxEntry {
            agent: who.clone(),
            ..outbox_entry(&t, id, at(minute))
        });
    }
    store
        .commit(&t, Commit::of_outbox(entries))
        .await
        .expect("lapse tasks");
    let ids = |found: Vec<OutboxEntry>| -> Vec<String> {
        found.into_iter().map(|e| e.message_id).collect()
    };
    let open = |from: Option<Instant>, limit: usize| {
        let store = Arc::clone(&store);
        let (t, booking) = (t.clone(), booking.clone());
        async move {
            store
                .outbox_open(&t, &booking, from, limit)
                .await
                .expect("outbox_open")
        }
    };
    assert_eq!(
        ids(open(None, 10).await),
        ["lapse:a", "lapse:b", "lapse:c", "lapse:d"],
        "earliest lapse first"
    );
    assert_eq!(
        ids(open(Some(at(6)), 10).await),
        ["lapse:b", "lapse:c", "lapse:d"],
        "from is inclusive"
    );
    assert_eq!(ids(open(None, 2).await), ["lapse:a", "lapse:b"]);
    let between = store
        .outbox_lane(&LaneQuery {
            tenant: &t,
            agent: &booking,
            lane: Lane::Open,
            due_by: Some(at(7)),
            from: Some(at(6)),
            limit: 10,
        })
        .await
        .expect("outbox_lane");
    assert_eq!(
        ids(between),
        ["lapse:b", "lapse:c"],
        "between from and due_by"
    );
    let none = store
        .outbox_lane(&LaneQuery {
            tenant: &t,
            agent: &booking,
            lane: Lane::Open,
            due_by: Some(at(5)),
            from: Some(at(6)),
            limit: 10,
        })
        .await
        .expect("outbox_lane, from after due_by");
    assert!(none.is_empty(), "from after due_by: nothing");
    assert_eq!(
        ids(store
            .outbox_open(&t, &other, None, 10)
            .await
            .expect("outbox_open of another agent")),
        ["lapse:a"],
        "only the agent's own"
    );

    // Resolved, one by outbox_resolve and one by a commit: they leave the open lane.
    let fact = |minute: u32| Resolution {
        at: at(minute),
        reason: ResolutionReason::Fact,
    };
    store
        .outbox_resolve(&t, &booking, "lapse:b", &fact(20))
        .await
        .expect("outbox_resolve")
        .expect("resolved");
    let commit = Commit {
        resolutions: vec![Resolved {
            agent: booking.clone(),
            message_id: "lapse:a".into(),
            resolution: fact(21),
        }],
        ..Commit::default()
    };
    store.commit(&t, commit).await.expect("a resolution");
    assert_eq!(
        ids(open(None, 10).await),
        ["lapse:c", "lapse:d"],
        "resolved lapse tasks leave the open lane"
    );
    assert_eq!(
        ids(store
            .outbox_resolved(&t, &booking, None, 10)
            .await
            .expect("outbox_resolved")),
        ["lapse:b", "lapse:a"],
        "and are in the resolved lane, by resolution"
    );

    // Queued and resolved by one commit; queued again (stored already) and resolved.
    let commit = Commit {
        outbox: vec![
            outbox_entry(&t, "lapse:e", at(9)),
            outbox_entry(&t, "lapse:c", at(7)),
        ],
        resolutions: vec![
            Resolved {
                agent: booking.clone(),
                message_id: "lapse:e".into(),
                resolution: fact(22),
            },
            Resolved {
                agent: booking.clone(),
                message_id: "lapse:c".into(),
                resolution: fact(23),
            },
        ],
        ..Commit::default()
    };
    store
        .commit(&t, commit)
        .await
        .expect("lapse tasks queued and resolved");
    assert_eq!(
        stored_entry(&*store, &t, &booking, "lapse:e")
            .await
            .and_then(|e| e.resolved),
        Some(fact(22)),
        "a lapse task queued and resolved by one commit is stored resolved"
    );
    assert_eq!(
        stored_entry(&*store, &t, &booking, "lapse:c")
            .await
            .and_then(|e| e.resolved),
        Some(fact(23)),
        "the stored lapse task takes the resolution"
    );
    assert_eq!(ids(open(None, 10).await), ["lapse:d"]);
    assert_eq!(
        ids(store
            .outbox_resolved(&t, &booking, Some(at(21)), 10)
            .await
            .expect("outbox_resolved")),
        ["lapse:a", "lapse:e", "lapse:c"]
    );
}
