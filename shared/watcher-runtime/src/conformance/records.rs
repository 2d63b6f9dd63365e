//! The conformance checks of subjects and tasks committed by compare-and-set, the indexes that follow, tenants, the input numbers, and the cost of a step.

use super::*;

// ---------------------------------------------------------------------------------------------
// The checks.

mod concurrency;
mod work;

pub use concurrency::*;
pub use work::*;

/// Timestamps as given survive the store (semantics.md "Time", revision 4): a question answered
/// by a status stamped ahead of its receipt in `+05:30`, and a fact claiming a time ahead in
/// `-03:00`, read back with their effective values and the texts exactly as given, on the record
/// (`claimedObservedAt`), the fact and the task's status.
pub async fn times_as_given_are_kept<S: Store + 'static>(store: Arc<S>) {
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    let a = tenant("given-times");
    let origin = Origin {
        task_id: TaskId::parse("task-q").expect("a valid task id"),
        context_id: None,
    };
    let question = expectation(
        "q-1",
        "shipment.manifest",
        "PA-Q",
        "answered:task-q",
        at(60),
        None,
    );
    let status = |state: &str, given: Option<&str>| PushItem::Status {
        origin: origin.clone(),
        state: state.into(),
        timestamp: None,
        given_timestamp: given.map(str::to_owned),
    };
    let ask = Input::Push {
        agent: booking_profile(),
        items: vec![
            PushItem::Raise {
                origin: origin.clone(),
                expectations: vec![Ok(question)],
                question_at: Some(t0()),
                question_timestamp: Some(t0()),
            },
            status("TASK_STATE_INPUT_REQUIRED", Some("2026-09-10T12:00:00Z")),
        ],
    };
    watcher.apply(&a, &ask, t0()).await.expect("ask");
    // 18:00Z, received at 12:10Z: counts as 12:10Z.
    let ahead = "2026-09-10T23:30:00+05:30";
    let moved_on = Input::Push {
        agent: booking_profile(),
        items: vec![status("TASK_STATE_WORKING", Some(ahead))],
    };
    watcher.apply(&a, &moved_on, at(10)).await.expect("move on");
    let claim = "2026-09-10T12:30:00-03:00";
    let fact_ahead = Input::Facts(vec![ReportedFact {
        fact_key: fact_key("k-ahead"),
        observed_at: instant(claim),
        observed_at_given: Some(claim.to_owned()),
        mapping: None,
        subject: Some(shipment("PA-Q")),
        source: source(),
    }]);
    watcher
        .apply(&a, &fact_ahead, at(20))
        .await
        .expect("a fact");

    let task = task_ref("booking", "task-q");
    let scope = Scope {
        subjects: [shipment("PA-Q")].into_iter().collect(),
        tasks: [task.clone()].into_iter().collect(),
        ..Scope::default()
    };
    let slice = store.load(&a, &scope, at(30)).await.expect("load");
    let state = &slice.subjects[&shipment("PA-Q")];
    let sat = state.records[0]
        .satisfaction
        .as_ref()
        .expect("the question was answered");
    assert_eq!(sat.observed_at, at(10), "observed at the status's receipt");
    assert_eq!(
        sat.claimed_observed_at.as_deref(),
        Some(ahead),
        "kept as given"
    );
    let answer = state
        .facts
        .iter()
        .find(|f| f.fact_key == fact_key("answered:task-q"))
        .expect("the answer fact is on the subject");
    assert_eq!(answer.observed_at_given.as_deref(), Some(ahead));
    let reported = state
        .facts
        .iter()
        .find(|f| f.fact_key == fact_key("k-ahead"))
        .expect("the reported fact is on the subject");
    assert_eq!(reported.observed_at, at(20));
    assert_eq!(reported.observed_at_given.as_deref(), Some(claim));
    let statuses = &slice.tasks[&task]
        .as_ref()
        .expect("the task is recorded")
        .statuses;
    let working = statuses.last().expect("two statuses");
    assert_eq!(working.timestamp, Some(at(10)), "bounded by its receipt");
    assert_eq!(working.given_timestamp.as_deref(), Some(ahead));
    assert_eq!(statuses[0].given_timestamp, None, "stamped exactly");
}

/// A subject never stored loads empty at version 0 (and `subject` answers `None`); after a
/// commit it loads at version 1 with the same records and facts, and a task comes back at
/// version 1; committing at the loaded version again moves it to 2.
pub async fn load_and_commit<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let s = shipment("PA-1");
    let task = task_ref("booking", "task-1");

    let mut scope = scope_of(&[&s]);
    scope.tasks.insert(task.clone());
    let slice = store.load(&t, &scope, t0()).await.expect("load succeeds");
    assert_eq!(slice.tenant, t, "a slice carries its tenant");
    assert_eq!(
        slice.subjects.get(&s),
        Some(&SubjectState::new(s.clone())),
        "an unknown subject loads empty at version 0"
    );
    assert_eq!(
        slice.tasks.get(&task),
        Some(&None),
        "an unknown task loads as None"
    );
    assert!(
        store.subject(&t, &s).await.expect("subject").is_none(),
        "subject() answers None for a subject never stored"
    );

    let state = subject_with_record(&t, "PA-1", "exp-1", 1);
    let mut task_rec = TaskRecord::new(task.clone());
    task_rec.subjects.insert(s.clone());
    store
        .commit(
            &t,
            Commit {
                subjects: vec![state.clone()],
                tasks: vec![task_rec.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("a commit at version 0 of a new subject succeeds");

    let slice = store.load(&t, &scope, t0()).await.expect("load succeeds");
    let loaded = slice.subjects.get(&s).expect("subject in scope").clone();
    assert_eq!(loaded.version, 1, "a first commit stores version 1");
    assert_eq!(
        loaded.records, state.records,
        "records come back as committed"
    );
    assert_eq!(loaded.facts, state.facts, "facts come back as committed");
    assert_eq!(
        loaded,
        SubjectState {
            version: 1,
            ..state.clone()
        }
    );
    let loaded_task = slice
        .tasks
        .get(&task)
        .cloned()
        .flatten()
        .expect("a committed task loads");
    assert_eq!(
        loaded_task,
        TaskRecord {
            version: 1,
            ..task_rec
        }
    );
    assert_eq!(
        store.subject(&t, &s).await.expect("subject"),
        Some(loaded.clone()),
        "subject() answers what load answers"
    );

    let mut next = loaded;
    next.facts.push(fact("second", &s, at(1)));
    store
        .commit(&t, Commit::of_subjects(vec![next.clone()]))
        .await
        .expect("a commit at the loaded version succeeds");
    let again = load_subject(&*store, &t, &s).await;
    assert_eq!(again.version, 2, "each commit bumps the version by one");
    assert_eq!(again.facts, next.facts);
}

/// An agent's live-row counter read without counting
/// ([`crate::metrics::open_expectations_by_counter`]) is never below the exact live count, and
/// equals it once every due timer fired ([`Watcher::fire_due`]): what the AWS sweep's
/// `OpenExpectations` gauge, read after the sweep fired, relies on.
pub async fn live_counter_is_exact_once_due_timers_fired<S: Store + 'static>(store: Arc<S>) {
    use crate::metrics::{open_expectations, open_expectations_by_counter};
    let t = tenant("tenant-live");
    let booking = agent("booking");
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    watcher
        .apply(
            &t,
            &raise(
                "task-live",
                vec![
                    expectation(
                        "early",
                        "shipment.manifest",
                        "PA-L",
                        "k-early",
                        at(10),
                        None,
                    ),
                    expectation(
                        "later",
                        "shipment.departure",
                        "PA-L",
                        "k-later",
                        at(1000),
                        None,
                    ),
                ],
            ),
            t0(),
        )
        .await
        .expect("raise");
    let exact = |now| open_expectations(&*store, &t, &booking, now);
    let counter = |now| open_expectations_by_counter(&*store, &t, &booking, now);
    assert_eq!(exact(at(5)).await.expect("count"), 2);
    assert_eq!(counter(at(5)).await.expect("counter"), 2);
    // At 20 `early` passed its deadline (no horizon), not yet fired: no longer live.
    assert_eq!(exact(at(20)).await.expect("count"), 1);
    let before = counter(at(20)).await.expect("counter");
    assert!(
        (1..=2).contains(&before),
        "the counter before firing: {before}, at least the live count 1"
    );
    let fired = watcher.fire_due(at(20)).await.expect("fire");
    assert_eq!(fired.len(), 1, "early's deadline");
    assert_eq!(
        counter(at(20)).await.expect("counter"),
        1,
        "exact once fired"
    );
    assert_eq!(exact(at(20)).await.expect("count"), 1);
}

/// The indexes follow what is committed (raised through the real [`Watcher`]): fact key →
/// subjects, expectation → subject (`None` when unknown), due timers in firing order (instant,
/// raising order, deadline before horizon) and dropped once a record is satisfied, the earliest
/// timer, live counts per agent, and every record in raising order.
pub async fn indexes_follow_commits<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    let (pa1, pa2) = (shipment("PA-1"), shipment("PA-2"));

    // PA-1, one push: e1 (deadline 60, horizon 180), e2 (deadline 60, horizon 120), e4
    // (deadline and horizon both at 120), e5 (anchored on e1: no timer, live indefinitely,
    // until e1's satisfaction fixes its due time). At 120, e2's horizon comes before e4's
    // deadline: raising order first, kind only within one record.
    watcher
        .apply(
            &t,
            &raise(
                "task-1",
                vec![
                    expectation(
                        "e1",
                        "shipment.manifest",
                        "PA-1",
                        "k-manifest",
                        at(60),
                        Some(at(180)),
                    ),
                    expectation(
                        "e2",
                        "shipment.departure",
                        "PA-1",
                        "k-dep",
                        at(60),
                        Some(at(120)),
                    ),
                    expectation(
                        "e4",
                        "shipment.arrival",
                        "PA-1",
                        "k-arr",
                        at(120),
                        Some(at(120)),
                    ),
                    anchored_departure(
                        "e5",
                        "PA-1",
                        "departure one hour after the manifest",
                        "k-dep-5",
                        at(90),
                        "e1",
                    ),
                ],
            ),
            t0(),
        )
        .await
        .expect("raise on PA-1");
    // PA-2, a later push: e3 (deadline 30, horizon 60), sharing e2's fact key.
    watcher
        .apply(
            &t,
            &raise(
                "task-2",
                vec![expectation(
                    "e3",
                    "shipment.departure",
                    "PA-2",
                    "k-dep",
                    at(30),
                    Some(at(60)),
                )],
            ),
            t0(),
        )
        .await
        .expect("raise on PA-2");

    let stored1 = store
        .subject(&t, &pa1)
        .await
        .expect("subject")
        .expect("PA-1");
    let stored2 = store
        .subject(&t, &pa2)
        .await
        .expect("subject")
        .expect("PA-2");
    assert_eq!(
        stored1.records.len(),
        4,
        "the engine recorded e1, e2, e4, e5"
    );
    assert_eq!(stored2.records.len(), 1, "the engine recorded e3");
    let order = |state: &SubjectState, id: &str| {
        state
            .records
            .iter()
            .find(|r| r.id().as_str() == id)
            .map(|r| r.order)
            .expect("record present")
    };
    assert!(
        order(&stored1, "e1") < order(&stored2, "e3"),
        "a later input raises later"
    );

    // Fact-key and id indexes.
    let mut scope = Scope::default();
    for k in ["k-manifest", "k-dep", "k-arr", "k-unknown"] {
        scope.fact_keys.insert(fact_key(k));
    }
    for id in ["e1", "e2", "e3", "e4", "e5", "e-unknown"] {
        scope.expectations.insert(eref("booking", id));
    }
    scope.expectations.insert(eref("other-agent", "e1"));
    scope.tasks.insert(task_ref("booking", "task-1"));
    let slice = store.load(&t, &scope, t0()).await.expect("load");
    let set = |subjects: &[&Subject]| -> BTreeSet<Subject> {
        subjects.iter().map(|s| (*s).clone()).collect()
    };
    assert_eq!(slice.fact_index[&fact_key("k-manifest")], set(&[&pa1]));
    assert_eq!(
        slice.fact_index[&fact_key("k-dep")],
        set(&[&pa1, &pa2]),
        "a fact key used on two subjects indexes both"
    );
    assert_eq!(slice.fact_index[&fact_key("k-arr")], set(&[&pa1]));
    assert_eq!(
        slice.fact_index[&fact_key("k-unknown")],
        BTreeSet::new(),
        "an unknown fact key is loaded as an empty set"
    );
    for (id, s) in [
        ("e1", &pa1),
        ("e2", &pa1),
        ("e3", &pa2),
        ("e4", &pa1),
        ("e5", &pa1),
    ] {
        assert_eq!(
            slice.id_index[&eref("booking", id)],
            Some(s.clone()),
            "id index for {id}"
        );
    }
    assert_eq!(slice.id_index[&eref("booking", "e-unknown")], None);
    assert_eq!(
        slice.id_index[&eref("other-agent", "e1")],
        None,
        "expectation ids are scoped to their agent"
    );
    let task1 = slice.tasks[&task_ref("booking", "task-1")]
        .as_ref()
        .expect("the raising task is stored");
    assert_eq!(task1.subjects, set(&[&pa1]));

    // Timers, in firing order.
    let key = |s: &Subject, id: &str, kind: TimerKind| TimerKey {
        subject: s.clone(),
        expectation: eref("booking", id),
        kind,
    };
    use TimerKind::{Deadline, Horizon};
    let all_timers = vec![
        (at(30), key(&pa2, "e3", Deadline)),
        (at(60), key(&pa1, "e1", Deadline)),
        (at(60), key(&pa1, "e2", Deadline)),
        (at(60), key(&pa2, "e3", Horizon)),
        (at(120), key(&pa1, "e2", Horizon)),
        (at(120), key(&pa1, "e4", Deadline)),
        (at(120), key(&pa1, "e4", Horizon)),
        (at(180), key(&pa1, "e1", Horizon)),
    ];
    let due = |list: Vec<crate::store::DueTimer>| -> Vec<(Instant, TimerKey)> {
        for d in &list {
            assert_eq!(d.tenant, t, "due timers carry their tenant");
        }
        list.into_iter().map(|d| (d.at, d.key)).collect()
    };
    assert_eq!(
        due(store.due_timers(at(1000), 100).await.expect("timers")),
        all_timers,
        "timers come earliest first, then raising order, deadline before horizon"
    );
    assert_eq!(
        due(store.due_timers(at(60), 100).await.expect("timers")),
        all_timers[..4].to_vec(),
        "timers due at `until` are included, later ones are not"
    );
    assert_eq!(
        due(store.due_timers(at(1000), 3).await.expect("timers")),
        all_timers[..3].to_vec(),
        "at most `limit` timers"
    );
    assert!(
        store
            .due_timers(at(29), 100)
            .await
            .expect("timers")
            .is_empty(),
        "nothing is due before the earliest timer"
    );
    let next = store.next_timer().await.expect("next_timer").expect("some");
    assert_eq!((next.at, next.key), all_timers[0].clone());
    let all = store.due_timers(at(1000), 100).await.expect("timers");
    assert!(
        all.windows(2)
            .all(|w| w[0].order <= w[1].order || w[0].at < w[1].at),
        "raising order breaks ties at one instant"
    );

    // Live counts.
    let live_at = |now: Instant| {
        let store = Arc::clone(&store);
        let t = t.clone();
        async move {
            let mut scope = Scope::default();
            scope.agents.insert(agent("booking"));
            scope.agents.insert(agent("nobody"));
            let slice = store.load(&t, &scope, now).await.expect("load");
            assert_eq!(slice.agent_live[&agent("nobody")], 0);
            let expected = store
                .all_records()
                .await
                .expect("all_records")
                .iter()
                .filter(|r| r.tenant == t && r.agent == agent("booking") && is_live(r, now))
                .count() as u64;
            let got = slice.agent_live[&agent("booking")];
            assert_eq!(got, expected, "agent_live at {now} counts the live records");
            got
        }
    };
    assert_eq!(live_at(t0()).await, 5);
    assert_eq!(
        live_at(at(90)).await,
        4,
        "e1 (horizon 180), e2 and e4 (120), e5"
    );
    assert_eq!(live_at(at(150)).await, 2, "e1 (horizon 180) and e5");
    assert_eq!(
        live_at(at(180)).await,
        2,
        "a horizon at exactly now has not passed (semantics.md \"States\"): e1 and e5"
    );
    assert_eq!(live_at(at(181)).await, 1, "e5 waits on its anchor");
    // With a ceiling (`Scope::live_enough`), a store may answer a count above the live one up
    // to the ceiling, never below the live count and never above the ceiling unless exact.
    for (now, live) in [(at(90), 4u64), (at(150), 2), (at(181), 1)] {
        for enough in [0u64, 2, 3, 5, 100] {
            let mut scope = Scope::default();
            scope.agents.insert(agent("booking"));
            scope.live_enough.insert(agent("booking"), enough);
            let slice = store.load(&t, &scope, now).await.expect("load");
            let got = slice.agent_live[&agent("booking")];
            assert!(
                got == live || (got > live && got <= enough),
                "agent_live at {now} with the ceiling {enough}: {got}, the live count {live}"
            );
        }
    }

    // Every record, in raising order.
    let ids: Vec<String> = store
        .all_records()
        .await
        .expect("all_records")
        .iter()
        .map(|r| r.id().to_string())
        .collect();
    assert_eq!(
        ids,
        ["e1", "e2", "e4", "e5", "e3"],
        "all_records in raising order"
    );

    // Satisfying e1 (observed at 10) drops its timers and its live row, and re-anchors e5:
    // a deadline at 70 appears.
    let applied = watcher
        .apply(
            &t,
            &Input::Facts(vec![ReportedFact {
                fact_key: fact_key("k-manifest"),
                observed_at: at(10),
                observed_at_given: None,
                mapping: None,
                subject: None,
                source: source(),
            }]),
            at(10),
        )
        .await
        .expect("report a fact");
    assert!(
        applied
            .effects
            .iter()
            .any(|e| matches!(e, watcher_core::engine::Effect::Satisfied { expectation, .. } if expectation.id.as_str() == "e1")),
        "the fact satisfied e1"
    );
    let mut remaining: Vec<(Instant, TimerKey)> = all_timers
        .iter()
        .filter(|(_, k)| k.expectation.id.as_str() != "e1")
        .cloned()
        .collect();
    remaining.insert(3, (at(70), key(&pa1, "e5", Deadline)));
    assert_eq!(
        due(store.due_timers(at(1000), 100).await.expect("timers")),
        remaining,
        "a satisfied record's timers are dropped; a re-anchored one's deadline is added"
    );
    assert_eq!(
        live_at(t0()).await,
        4,
        "a satisfied record is not live: e2, e3, e4, e5"
    );
    assert_eq!(live_at(at(65)).await, 3, "e2, e4 (120) and e5 (70)");
    assert_eq!(live_at(at(150)).await, 0);
    let slice = store.load(&t, &scope, at(10)).await.expect("load");
    assert_eq!(
        slice.id_index[&eref("booking", "e1")],
        Some(pa1.clone()),
        "the id index keeps a closed record"
    );
    assert_eq!(
        slice.fact_index[&fact_key("k-manifest")],
        set(&[&pa1]),
        "the fact-key index keeps a closed record's key"
    );
}

/// What tenant A stores is invisible to tenant B through `load` (subjects, indexes, tasks, live
/// counts), `subject`, `rejections` and `lapses`; the same subject in B has its own versions.
pub async fn tenants_are_isolated<S: Store + 'static>(store: Arc<S>) {
    let a = tenant("tenant-a");
    let b = tenant("tenant-b");
    let s = shipment("PA-1");
    let task = task_ref("booking", "task-1");
    let state_a = subject_with_record(&a, "PA-1", "exp-1", 1);
    store
        .commit(
            &a,
            Commit {
                subjects: vec![state_a.clone()],
                tasks: vec![TaskRecord::new(task.clone())],
                outbox: vec![outbox_entry(&a, "lapse:exp-1:overdue:1", t0())],
                rejections: vec![rejection("booking", "in-a", t0())],
                resolutions: Vec::new(),
            },
        )
        .await
        .expect("commit in A");

    let mut scope = scope_of(&[&s]);
    scope.fact_keys.insert(fact_key("manifest:PA-1"));
    scope.expectations.insert(eref("booking", "exp-1"));
    scope.tasks.insert(task.clone());
    scope.agents.insert(agent("booking"));

    let in_a = store.load(&a, &scope, t0()).await.expect("load A");
    assert_eq!(in_a.subjects[&s].version, 1);
    assert_eq!(in_a.fact_index[&fact_key("manifest:PA-1")].len(), 1);
    assert_eq!(in_a.id_index[&eref("booking", "exp-1")], Some(s.clone()));
    assert!(in_a.tasks[&task].is_some());
    assert_eq!(in_a.agent_live[&agent("booking")], 1);

    let in_b = store.load(&b, &scope, t0()).await.expect("load B");
    assert_eq!(in_b.tenant, b);
    assert_eq!(
        in_b.subjects[&s],
        SubjectState::new(s.clone()),
        "A's subject is empty at version 0 in B"
    );
    assert!(in_b.fact_index[&fact_key("manifest:PA-1")].is_empty());
    assert_eq!(in_b.id_index[&eref("booking", "exp-1")], None);
    assert_eq!(in_b.tasks[&task], None);
    assert_eq!(in_b.agent_live[&agent("booking")], 0);
    assert!(store.subject(&b, &s).await.expect("subject").is_none());
    assert!(store
        .rejections(&b, &agent("booking"))
        .await
        .expect("rejections")
        .is_empty());
    assert!(store.lapses(&b).await.expect("lapses").is_empty());
    assert!(store
        .outbox_get(&b, &agent("booking"), "lapse:exp-1:overdue:1")
        .await
        .expect("outbox_get")
        .is_none());

    // The same subject in B starts at version 0 and does not disturb A.
    let mut state_b = SubjectState::new(s.clone());
    state_b.facts.push(fact("only-in-b", &s, t0()));
    store
        .commit(
            &b,
            Commit {
                subjects: vec![state_b.clone()],
                tasks: vec![TaskRecord::new(task.clone())],
                ..Commit::default()
            },
        )
        .await
        .expect("version 0 in B, whatever A holds");
    assert_eq!(
        store.subject(&b, &s).await.expect("subject"),
        Some(SubjectState {
            version: 1,
            ..state_b
        })
    );
    assert_eq!(
        store.subject(&a, &s).await.expect("subject"),
        Some(SubjectState {
            version: 1,
            ..state_a
        }),
        "B's commit leaves A's subject as it was"
    );
    let in_a = store.load(&a, &scope, t0()).await.expect("load A");
    assert_eq!(in_a.tasks[&task].as_ref().map(|r| r.version), Some(1));
    let timers = store.due_timers(at(1000), 100).await.expect("timers");
    assert!(
        timers.iter().all(|d| d.tenant == a),
        "B holds no records, so no timers of B"
    );
    assert_eq!(timers.len(), 2, "A's record has a deadline and a horizon");
}
