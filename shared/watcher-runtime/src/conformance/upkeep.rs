//! The conformance checks of the health probe's write and retention.

use super::*;

/// `probe_write` succeeds on a healthy store, again and again, and changes nothing of the record.
pub async fn probe_write_writes<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    store
        .commit(
            &t,
            Commit::of_outbox(vec![outbox_entry(&t, "lapse:kept", t0())]),
        )
        .await
        .expect("commit a lapse task");
    store.probe_write(at(1)).await.expect("a first probe");
    store.probe_write(at(2)).await.expect("a second probe");
    assert_eq!(
        store.lapses(&t).await.expect("lapses").len(),
        1,
        "the probe touches nothing of the record"
    );
    assert!(
        store.next_timer().await.expect("next_timer").is_none(),
        "the probe is not a timer"
    );
}

// ---------------------------------------------------------------------------------------------
// Retention (expectations-v1 §14, crate::retention).

/// What the retention checks store, in tenants A and B, through the engine where it can:
///
/// * A `PA-OPEN`: e-open raised at 0 (deadline 60, horizon 180), never fired: pending timers.
///   Its task-open reported `working` at 5.
/// * A `PA-ANCHOR`: e-anchored raised at 0, anchored on an id never raised and without a
///   horizon: no timer at all, yet it can still lapse (once its anchor is satisfied).
/// * A `PA-SAT`: e-sat (key `k-sat`) raised at 0 by task-sat, satisfied at 10.
/// * A `PA-RECENT`: e-recent (key `k-recent`, deadline 1000) raised at 0, satisfied at 500.
/// * A task-done: completed at 5, no expectations.
/// * A lapse tasks: `q-old` queued at 0; `s-old` sent at 1; `f-old` failed at 2; `s-new` lapsed
///   at 50, sent, next attempt 150.
/// * A rejections of booking at 1 and at 500.
/// * B `PA-OPEN` (same id as A's): one fact received at 0, no records. B rejection at 1.
pub(crate) async fn store_retention_fixture<S: Store + 'static>(store: &Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let watcher = Watcher::new(Arc::clone(store), Directory::new(), Settings::default());
    let raised = [
        (
            "task-open",
            expectation(
                "e-open",
                "shipment.manifest",
                "PA-OPEN",
                "k-open",
                at(60),
                Some(at(180)),
            ),
        ),
        (
            "task-anchor",
            anchored_departure(
                "e-anchored",
                "PA-ANCHOR",
                "departure one hour after a manifest never raised",
                "k-anchored",
                at(30),
                "e-never",
            ),
        ),
        (
            "task-sat",
            expectation(
                "e-sat",
                "shipment.manifest",
                "PA-SAT",
                "k-sat",
                at(60),
                None,
            ),
        ),
        (
            "task-recent",
            expectation(
                "e-recent",
                "shipment.manifest",
                "PA-RECENT",
                "k-recent",
                at(1000),
                None,
            ),
        ),
    ];
    for (task, e) in raised {
        watcher
            .apply(&a, &raise(task, vec![e]), t0())
            .await
            .expect("raise");
    }
    for (key, subject, when) in [
        ("k-sat", "PA-SAT", at(10)),
        ("k-recent", "PA-RECENT", at(500)),
    ] {
        watcher
            .apply(
                &a,
                &Input::Facts(vec![ReportedFact {
                    fact_key: fact_key(key),
                    observed_at: when,
                    observed_at_given: None,
                    mapping: None,
                    subject: Some(shipment(subject)),
                    source: source(),
                }]),
                when,
            )
            .await
            .expect("report a fact");
    }
    for (task, state) in [
        ("task-open", "TASK_STATE_WORKING"),
        ("task-done", "TASK_STATE_COMPLETED"),
    ] {
        watcher
            .apply(
                &a,
                &Input::Push {
                    agent: booking_profile(),
                    items: vec![PushItem::Status {
                        origin: Origin {
                            task_id: TaskId::parse(task).expect("a valid task id"),
                            context_id: None,
                        },
                        state: state.into(),
                        timestamp: Some(at(5)),
                        given_timestamp: None,
                    }],
                },
                at(5),
            )
            .await
            .expect("a task status");
    }

    let failed = OutboxEntry {
        delivery: DeliveryState::Failed,
        attempts: 8,
        ..outbox_entry(&a, "lapse:f-old", at(2))
    };
    let sent_new = OutboxEntry {
        lapsed_at: at(50),
        delivery: DeliveryState::Sent,
        attempts: 3,
        ..outbox_entry(&a, "lapse:s-new", at(150))
    };
    store
        .commit(
            &a,
            Commit {
                outbox: vec![
                    outbox_entry(&a, "lapse:q-old", t0()),
                    outbox_entry(&a, "lapse:s-old", t0()),
                    failed,
                    sent_new,
                ],
                rejections: vec![
                    rejection("booking", "old", at(1)),
                    rejection("booking", "new", at(500)),
                ],
                ..Commit::default()
            },
        )
        .await
        .expect("lapse tasks and rejections");
    let sent_old = OutboxEntry {
        delivery: DeliveryState::Sent,
        attempts: 1,
        next_attempt_at: at(1),
        ..outbox_entry(&a, "lapse:s-old", t0())
    };
    store.outbox_update(&sent_old).await.expect("mark sent");

    let mut only_facts = SubjectState::new(shipment("PA-OPEN"));
    only_facts
        .facts
        .push(fact("k-other", &shipment("PA-OPEN"), t0()));
    store
        .commit(
            &b,
            Commit {
                subjects: vec![only_facts],
                rejections: vec![rejection("booking", "old-b", at(1))],
                ..Commit::default()
            },
        )
        .await
        .expect("tenant B");
}

pub(crate) fn subjects_set(subjects: &[&str]) -> BTreeSet<Subject> {
    subjects.iter().map(|id| shipment(id)).collect()
}

/// Everything the retention checks can observe of a store, for before/after comparisons.
#[derive(Debug, PartialEq)]
pub(crate) struct Observed {
    subjects: Vec<Option<SubjectState>>,
    index: (Vec<BTreeSet<Subject>>, Vec<Option<Subject>>),
    tasks: Vec<Option<TaskRecord>>,
    lapses: Vec<String>,
    rejections: Vec<String>,
    timers: Vec<(Instant, String)>,
    live: u64,
}

pub(crate) async fn observe<S: Store + 'static>(store: &Arc<S>) -> Observed {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let mut subjects = Vec::new();
    for (t, id) in [
        (&a, "PA-OPEN"),
        (&a, "PA-ANCHOR"),
        (&a, "PA-SAT"),
        (&a, "PA-RECENT"),
        (&b, "PA-OPEN"),
    ] {
        subjects.push(store.subject(t, &shipment(id)).await.expect("subject"));
    }
    let keys = ["k-open", "k-anchored", "k-sat", "k-recent"];
    let ids = ["e-open", "e-anchored", "e-sat", "e-recent"];
    let tasks = [
        "task-open",
        "task-anchor",
        "task-sat",
        "task-recent",
        "task-done",
    ];
    let scope = Scope {
        fact_keys: keys.iter().map(|k| fact_key(k)).collect(),
        expectations: ids.iter().map(|e| eref("booking", e)).collect(),
        tasks: tasks.iter().map(|x| task_ref("booking", x)).collect(),
        agents: [agent("booking")].into(),
        ..Scope::default()
    };
    let slice = store.load(&a, &scope, at(20)).await.expect("load");
    let mut rejections = Vec::new();
    for t in [&a, &b] {
        for r in store
            .rejections(t, &agent("booking"))
            .await
            .expect("rejections")
        {
            rejections.push(format!("{t}/{}", r.reason));
        }
    }
    Observed {
        subjects,
        index: (
            keys.iter()
                .map(|k| slice.fact_index[&fact_key(k)].clone())
                .collect(),
            ids.iter()
                .map(|e| slice.id_index[&eref("booking", e)].clone())
                .collect(),
        ),
        tasks: tasks
            .iter()
            .map(|x| slice.tasks[&task_ref("booking", x)].clone())
            .collect(),
        lapses: store
            .lapses(&a)
            .await
            .expect("lapses")
            .into_iter()
            .map(|o| o.message_id)
            .collect(),
        rejections,
        timers: store
            .due_timers(at(100_000), 100)
            .await
            .expect("timers")
            .into_iter()
            .map(|d| (d.at, format!("{}/{}", d.key.subject, d.key.expectation.id)))
            .collect(),
        live: slice.agent_live[&agent("booking")],
    }
}

/// `purge(before)` forgets, in every tenant, what the retention rule allows and nothing else:
///
/// * an open subject with pending timers is kept whatever its age, and so is one waiting on an
///   anchor (no timer, yet it can lapse);
/// * a satisfied subject last active before `before` is deleted with its index rows: its fact
///   key and expectation id no longer resolve to it, and the id can be raised again;
/// * one last active after `before` is kept;
/// * a subject in another tenant with the same id is deleted or kept on its own account;
/// * a queued lapse task is kept whatever its age; sent and failed ones last active before
///   `before` are deleted, a sent one with a later next attempt is kept;
/// * rejections made before `before` are dropped;
/// * a finished task, and a task whose subjects are gone, are deleted once last active before
///   `before`; a running task with a stored subject is kept.
///
/// A second purge deletes nothing more.
pub async fn purge_follows_retention<S: Store + 'static>(store: Arc<S>) {
    let a = tenant("tenant-a");
    store_retention_fixture(&store).await;
    let kept = observe(&store).await;
    assert_eq!(
        kept.lapses,
        ["lapse:q-old", "lapse:s-old", "lapse:f-old", "lapse:s-new"]
    );
    assert!(
        !kept.timers.iter().any(|(_, k)| k.contains("PA-ANCHOR")),
        "the anchored record has no timer: {:?}",
        kept.timers
    );

    let origins = follow_old_and_new_origins(&store).await;
    let report = store.purge(at(100)).await.expect("purge");
    assert_eq!(
        followed_origins(&store, &origins).await,
        ["task-new"],
        "an origin followed since before the cut is forgotten; a later one is kept"
    );
    assert_eq!(
        report,
        PurgeReport {
            subjects: 2,
            outbox: 2,
            rejections: 2,
            tasks: 2,
        },
        "A PA-SAT and B PA-OPEN; s-old and f-old; the two rejections at 1; task-sat and task-done"
    );
    let after = observe(&store).await;

    assert_eq!(
        after.subjects,
        vec![
            kept.subjects[0].clone(),
            kept.subjects[1].clone(),
            None,
            kept.subjects[3].clone(),
            None
        ],
        "PA-OPEN (pending timers) and PA-ANCHOR (waiting on its anchor) are kept though raised \
         before `before`; PA-SAT (satisfied at 10) goes; PA-RECENT (satisfied at 500) stays; B's \
         PA-OPEN goes without touching A's"
    );
    assert_eq!(
        after.index.0,
        vec![
            subjects_set(&["PA-OPEN"]),
            subjects_set(&["PA-ANCHOR"]),
            BTreeSet::new(),
            subjects_set(&["PA-RECENT"]),
        ],
        "the purged subject's fact key no longer resolves to it"
    );
    assert_eq!(
        after.index.1,
        vec![
            Some(shipment("PA-OPEN")),
            Some(shipment("PA-ANCHOR")),
            None,
            Some(shipment("PA-RECENT")),
        ],
        "the purged subject's expectation id no longer resolves to it"
    );
    assert_eq!(
        after.tasks,
        vec![
            kept.tasks[0].clone(),
            kept.tasks[1].clone(),
            None,
            kept.tasks[3].clone(),
            None
        ],
        "task-sat (its subject gone) and task-done (completed at 5) go; the others stay"
    );
    assert!(kept.tasks.iter().all(Option::is_some), "{:?}", kept.tasks);
    assert_eq!(after.lapses, ["lapse:q-old", "lapse:s-new"]);
    assert_eq!(
        after.rejections,
        ["tenant-a/new"],
        "rejections at 1 go in both tenants"
    );
    assert_eq!(
        after.timers, kept.timers,
        "the kept subjects keep their timers"
    );
    assert_eq!(after.live, kept.live, "and their live counts");
    assert_eq!(kept.live, 2, "e-open and e-anchored");

    assert_eq!(
        store.purge(at(100)).await.expect("purge again"),
        PurgeReport::default(),
        "nothing more to forget"
    );

    // The id index forgot e-sat: raising it again is a new expectation (docs/interpretation.md).
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    watcher
        .apply(
            &a,
            &raise(
                "task-sat-2",
                vec![expectation(
                    "e-sat",
                    "shipment.manifest",
                    "PA-SAT",
                    "k-sat",
                    at(2000),
                    None,
                )],
            ),
            at(1500),
        )
        .await
        .expect("raise the purged id again");
    let again = store
        .subject(&a, &shipment("PA-SAT"))
        .await
        .expect("subject")
        .expect("PA-SAT is stored again");
    assert_eq!(again.version, 1, "a fresh subject");
    assert_eq!(again.records.len(), 1);
    assert_eq!(again.records[0].status, Status::Open);
    assert_eq!(again.records[0].raised_at, at(1500));
}

/// For a store whose backend expires items itself (DynamoDB's TTL): `purge` answers an empty
/// report and deletes nothing, whatever `before`.
pub async fn purge_leaves_retention_to_ttl<S: Store + 'static>(store: Arc<S>) {
    store_retention_fixture(&store).await;
    let origins = follow_old_and_new_origins(&store).await;
    let kept = observe(&store).await;
    let report = store.purge(at(100_000)).await.expect("purge");
    assert!(report.is_empty(), "{report:?}");
    assert_eq!(
        followed_origins(&store, &origins).await,
        ["task-old", "task-new"],
        "followed origins are left to the TTL too"
    );
    assert_eq!(observe(&store).await, kept, "nothing was deleted");
}
