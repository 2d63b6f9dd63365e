//! Commits on DynamoDB: conflicts retried without loss, two clients, many subjects in one transaction.

use super::*;

#[tokio::test]
async fn a_concurrent_writer_makes_the_commit_conflict_and_the_retry_loses_nothing() {
    let first = store().await;
    let second = second_handle(&first).await;
    let t = tenant("tenant-a");
    let s = shipment("PA-1");
    first
        .commit(&t, subjects_only(vec![subject_with_record(&t, "PA-1", 1)]))
        .await
        .expect("create the subject");

    // Both writers load version 1; the first commits; the second's commit conflicts.
    let mut a = load_one(&first, &t, &s).await;
    let mut b = load_one(&second, &t, &s).await;
    assert_eq!((a.version, b.version), (1, 1));
    a.facts.push(fact("from-a", &s, at(1)));
    b.facts.push(fact("from-b", &s, at(2)));
    first
        .commit(&t, subjects_only(vec![a]))
        .await
        .expect("the first writer commits");
    match second.commit(&t, subjects_only(vec![b])).await {
        Err(StoreError::Conflict(what)) => assert!(what.contains("PA-1"), "{what}"),
        other => panic!("expected a conflict, got {other:?}"),
    }

    // The retry reloads, sees the first writer's fact, and keeps both.
    let mut b = load_one(&second, &t, &s).await;
    assert_eq!(b.version, 2);
    b.facts.push(fact("from-b", &s, at(2)));
    second
        .commit(&t, subjects_only(vec![b]))
        .await
        .expect("the retry commits");
    let keys: Vec<String> = load_one(&first, &t, &s)
        .await
        .facts
        .iter()
        .map(|f| f.fact_key.to_string())
        .collect();
    assert_eq!(keys, ["seen", "from-a", "from-b"], "no update is lost");

    // A task is checked by the transaction's own condition (no read before it): the stale
    // writer's whole transaction is cancelled, its subject change included.
    let task = TaskRef {
        agent: agent("booking"),
        task_id: TaskId::parse("task-1").expect("a valid task id"),
    };
    first
        .commit(&t, Commit::of_tasks(vec![TaskRecord::new(task.clone())]))
        .await
        .expect("create the task");
    let mut scope = Scope::default();
    scope.tasks.insert(task.clone());
    scope.subjects.insert(s.clone());
    let slice_a = first.load(&t, &scope, t0()).await.expect("load");
    let slice_b = second.load(&t, &scope, t0()).await.expect("load");
    let task_a = slice_a.tasks[&task].clone().expect("stored task");
    let mut task_b = slice_b.tasks[&task].clone().expect("stored task");
    first
        .commit(&t, Commit::of_tasks(vec![task_a]))
        .await
        .expect("the first writer commits the task");
    let mut subject_b = slice_b.subjects[&s].clone();
    subject_b.facts.push(fact("with-stale-task", &s, at(3)));
    task_b.statuses.push(StatusSeen {
        state: "TASK_STATE_WORKING".into(),
        at: at(3),
        received_at: at(3),
        timestamp: None,
        seq: 0,
        given_timestamp: None,
    });
    match second
        .commit(
            &t,
            Commit {
                subjects: vec![subject_b],
                tasks: vec![task_b],
                ..Commit::default()
            },
        )
        .await
    {
        Err(StoreError::Conflict(what)) => assert!(what.contains("task-1"), "{what}"),
        other => panic!("expected a conflict on the task, got {other:?}"),
    }
    assert_eq!(
        load_one(&first, &t, &s).await.version,
        3,
        "the cancelled transaction wrote nothing of the subject"
    );
}

#[tokio::test]
async fn writers_on_two_clients_lose_nothing() {
    let first = store().await;
    let second = second_handle(&first).await;
    watcher_runtime::conformance::concurrent_writers_across(vec![
        Arc::new(first),
        Arc::new(second),
    ])
    .await;
}

#[tokio::test]
async fn commits_of_many_subjects_fit_one_transaction() {
    let store = store().await;
    let t = tenant("tenant-a");
    let per_new_subject = 3; // the subject, its fact-key row and its expectation row

    // 33 new subjects: 99 writes, and the agent's live-row counter: 100.
    let batch = MAX_TRANSACTION_ITEMS / per_new_subject;
    let ids: Vec<String> = (0..100).map(|i| format!("PA-{i:03}")).collect();
    let states = |range: std::ops::Range<usize>| -> Vec<SubjectState> {
        range
            .map(|i| subject_with_record(&t, &ids[i], i as u64 + 1))
            .collect()
    };
    store
        .commit(&t, subjects_only(states(0..batch)))
        .await
        .expect("a commit of 33 new subjects (99 writes and the counter)");
    let timers = store.due_timers(at(1000), 1000).await.expect("due timers");
    assert_eq!(timers.len(), batch * 2, "a deadline and a horizon each");

    // One more new subject would need 102 writes and the counter: refused, nothing written.
    let err = store
        .commit(&t, subjects_only(states(batch..2 * batch + 1)))
        .await
        .expect_err("103 writes do not fit one transaction");
    match dynamo_error(&err) {
        DynamoStoreError::TransactionTooLarge { items, .. } => assert_eq!(*items, 103),
        other => panic!("expected TransactionTooLarge, got {other:?}"),
    }
    assert!(
        store
            .subject(&t, &shipment(&ids[batch]))
            .await
            .expect("subject")
            .is_none(),
        "a refused commit writes nothing"
    );

    // The rest in smaller commits; then one commit changes all 100: each subject is one write,
    // since its index rows are written only when they change.
    for chunk in (batch..100).collect::<Vec<_>>().chunks(batch) {
        store
            .commit(
                &t,
                subjects_only(states(chunk[0]..chunk[chunk.len() - 1] + 1)),
            )
            .await
            .expect("a commit of new subjects");
    }
    let mut all = Vec::new();
    for id in &ids {
        let s = shipment(id);
        let mut state = load_one(&store, &t, &s).await;
        assert_eq!(state.version, 1, "{id} stored");
        state.facts.push(fact("flight-departed", &s, at(5)));
        all.push(state);
    }
    store
        .commit(&t, subjects_only(all))
        .await
        .expect("one commit of 100 changed subjects (100 writes)");

    // Everything is there, with its indexes.
    let mut scope = Scope::default();
    for id in &ids {
        scope.subjects.insert(shipment(id));
        scope
            .fact_keys
            .insert(FactKey::parse(format!("manifest:{id}")).expect("a valid fact key"));
        scope
            .expectations
            .insert(watcher_core::ids::ExpectationRef {
                agent: agent("booking"),
                id: expectation_id(&format!("exp-{id}")),
            });
    }
    scope.agents.insert(agent("booking"));
    let slice = store.load(&t, &scope, t0()).await.expect("load all");
    for id in &ids {
        let s = shipment(id);
        assert_eq!(slice.subjects[&s].version, 2, "{id} changed once more");
        assert_eq!(slice.subjects[&s].facts.len(), 2);
        let key = FactKey::parse(format!("manifest:{id}")).expect("a valid fact key");
        assert_eq!(slice.fact_index[&key].len(), 1, "fact-key row of {id}");
    }
    assert!(slice.id_index.values().all(Option::is_some));
    assert_eq!(slice.agent_live[&agent("booking")], 100);
    assert_eq!(
        store
            .due_timers(at(1000), 1000)
            .await
            .expect("due timers")
            .len(),
        200
    );
    assert_eq!(
        store
            .due_timers(at(1000), 7)
            .await
            .expect("due timers")
            .len(),
        7,
        "at most `limit`"
    );
}
