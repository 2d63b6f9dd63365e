//! The conformance checks of compare-and-set: a stale commit changes nothing, and concurrent
//! writers, on one handle or several, lose nothing.

use super::*;

/// A commit with a stale subject or task version fails with [`StoreError::Conflict`] and writes
/// nothing: not the other subjects and tasks of the commit, not its outbox entries, not its
/// rejections, not their index rows.
pub async fn stale_commit_changes_nothing<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let x = shipment("PA-X");
    let y = shipment("PA-Y");
    let z = shipment("PA-Z");
    let task = task_ref("booking", "task-1");
    let original = subject_with_record(&t, "PA-X", "exp-x", 1);
    store
        .commit(
            &t,
            Commit {
                subjects: vec![original.clone()],
                tasks: vec![TaskRecord::new(task.clone())],
                ..Commit::default()
            },
        )
        .await
        .expect("first commit");
    let stored_x = store
        .subject(&t, &x)
        .await
        .expect("subject")
        .expect("X stored");
    let timers_before = store.due_timers(at(100_000), 1000).await.expect("timers");

    // A fresh subject (valid) first, the stale one last: nothing of the first may stay.
    let fresh_y = subject_with_record(&t, "PA-Y", "exp-y", 2);
    let stale_x = original.clone(); // still version 0
    let result = store
        .commit(
            &t,
            Commit {
                subjects: vec![fresh_y.clone(), stale_x],
                tasks: vec![],
                outbox: vec![outbox_entry(&t, "lapse:stale-1", t0())],
                rejections: vec![rejection("booking", "stale-1", t0())],
                resolutions: Vec::new(),
            },
        )
        .await;
    expect_conflict(result, "a subject committed at a stale version");

    // A stale task with a fresh subject.
    let fresh_z = subject_with_record(&t, "PA-Z", "exp-z", 3);
    let result = store
        .commit(
            &t,
            Commit {
                subjects: vec![fresh_z],
                tasks: vec![TaskRecord::new(task.clone())],
                outbox: vec![outbox_entry(&t, "lapse:stale-2", t0())],
                rejections: vec![rejection("booking", "stale-2", t0())],
                resolutions: Vec::new(),
            },
        )
        .await;
    expect_conflict(result, "a task committed at a stale version");

    // A version ahead of the stored one, and a version for a subject never stored.
    let mut ahead = stored_x.clone();
    ahead.version = 5;
    expect_conflict(
        store.commit(&t, Commit::of_subjects(vec![ahead])).await,
        "a version ahead of the stored one",
    );
    let mut phantom = SubjectState::new(shipment("PA-NEVER"));
    phantom.version = 1;
    expect_conflict(
        store.commit(&t, Commit::of_subjects(vec![phantom])).await,
        "a non-zero version for a subject never stored",
    );

    assert_eq!(
        store.subject(&t, &x).await.expect("subject"),
        Some(stored_x.clone()),
        "a failed commit leaves the stale subject as stored"
    );
    for (s, what) in [(&y, "Y"), (&z, "Z"), (&shipment("PA-NEVER"), "PA-NEVER")] {
        assert!(
            store.subject(&t, s).await.expect("subject").is_none(),
            "a failed commit must not store subject {what}"
        );
    }
    let mut scope = scope_of(&[&y]);
    scope.tasks.insert(task.clone());
    scope.fact_keys.insert(fact_key("manifest:PA-Y"));
    scope.fact_keys.insert(fact_key("manifest:PA-Z"));
    scope.expectations.insert(eref("booking", "exp-y"));
    scope.expectations.insert(eref("booking", "exp-z"));
    let slice = store.load(&t, &scope, t0()).await.expect("load");
    assert_eq!(slice.subjects[&y].version, 0);
    assert_eq!(
        slice.tasks[&task].as_ref().map(|r| r.version),
        Some(1),
        "a failed commit leaves the task at its stored version"
    );
    for k in ["manifest:PA-Y", "manifest:PA-Z"] {
        assert!(
            slice.fact_index[&fact_key(k)].is_empty(),
            "a failed commit must not add fact-key index rows ({k})"
        );
    }
    for id in ["exp-y", "exp-z"] {
        assert_eq!(
            slice.id_index[&eref("booking", id)],
            None,
            "a failed commit must not add id index rows ({id})"
        );
    }
    assert_eq!(
        store.due_timers(at(100_000), 1000).await.expect("timers"),
        timers_before,
        "a failed commit must not add timers"
    );
    for m in ["lapse:stale-1", "lapse:stale-2"] {
        assert!(
            store
                .outbox_get(&t, &agent("booking"), m)
                .await
                .expect("outbox_get")
                .is_none(),
            "a failed commit must not write its outbox entry {m}"
        );
    }
    assert!(store.lapses(&t).await.expect("lapses").is_empty());
    assert!(
        store
            .rejections(&t, &agent("booking"))
            .await
            .expect("rejections")
            .is_empty(),
        "a failed commit must not keep its rejections"
    );

    // The stored version still commits.
    let mut next = stored_x;
    next.facts.push(fact("later", &x, at(5)));
    store
        .commit(&t, Commit::of_subjects(vec![next]))
        .await
        .expect("a commit at the stored version succeeds after conflicts");
    assert_eq!(load_subject(&*store, &t, &x).await.version, 2);
}

/// Eight writers on one subject, each appending five facts with load / commit / retry on
/// conflict, lose no update.
pub async fn concurrent_writers_lose_nothing<S: Store + 'static>(store: Arc<S>) {
    concurrent_writers_across(vec![store]).await;
}

/// As [`concurrent_writers_lose_nothing`], with writers spread over several handles onto one
/// backing store (e.g. two connections to one database file).
///
/// # Panics
/// When `handles` is empty, a writer gives up after 10 000 conflicts, or an update is lost.
pub async fn concurrent_writers_across<S: Store + 'static>(handles: Vec<Arc<S>>) {
    const WRITERS: usize = 8;
    const APPENDS: usize = 5;
    assert!(!handles.is_empty(), "at least one store handle");
    let t = tenant("tenant-a");
    let s = shipment("PA-HOT");
    let mut joins = Vec::new();
    for w in 0..WRITERS {
        let store = Arc::clone(&handles[w % handles.len()]);
        let (t, s) = (t.clone(), s.clone());
        joins.push(tokio::spawn(async move {
            let mut conflicts = 0usize;
            for n in 0..APPENDS {
                loop {
                    let mut state = load_subject(&*store, &t, &s).await;
                    state.facts.push(fact(&format!("w{w}-n{n}"), &s, at(1)));
                    // Let other writers load the same version before this one commits.
                    tokio::task::yield_now().await;
                    match store.commit(&t, Commit::of_subjects(vec![state])).await {
                        Ok(()) => break,
                        Err(StoreError::Conflict(_)) => {
                            conflicts += 1;
                            assert!(conflicts < 10_000, "writer {w} starved");
                            tokio::task::yield_now().await;
                        }
                        Err(e) => panic!("writer {w}: commit failed: {e}"),
                    }
                }
            }
            conflicts
        }));
    }
    for j in joins {
        j.await.expect("writer task");
    }
    let state = load_subject(&*handles[0], &t, &s).await;
    let keys: BTreeSet<String> = state.facts.iter().map(|f| f.fact_key.to_string()).collect();
    assert_eq!(
        state.facts.len(),
        WRITERS * APPENDS,
        "every committed append is kept exactly once"
    );
    for w in 0..WRITERS {
        for n in 0..APPENDS {
            assert!(keys.contains(&format!("w{w}-n{n}")), "lost w{w}-n{n}");
        }
    }
    assert_eq!(
        state.version,
        (WRITERS * APPENDS) as u64,
        "one version per successful commit"
    );
}
