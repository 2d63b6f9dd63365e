//! The conformance checks of lapse-task reads: by task id, the task state that never goes back, and
//! the lapse pages with their cursors.

use super::*;

/// `n` lapse tasks of tenant `t`, alternating between agents `booking` and `billing`, each with
/// its own lapse task id `task-{i}`, lapsed one second apart from [`t0`]; the entry `i` is
/// `lapse:{prefix}{i}`.
pub(crate) fn numbered_entries(
    t: &Tenant,
    prefix: &str,
    from: usize,
    n: usize,
) -> Vec<OutboxEntry> {
    (from..from + n)
        .map(|i| {
            let when = t0().plus(IsoDuration::parse(&format!("PT{i}S")).expect("a duration"));
            let mut o = outbox_entry(t, &format!("lapse:{prefix}{i}"), when);
            if i % 2 == 1 {
                o.agent = agent("billing");
            }
            o.task_id = Some(format!("task-{prefix}{i}"));
            o
        })
        .collect()
}

/// Commits `entries` in commits of at most 40: a DynamoDB transaction takes at most 100 items,
/// and a lapse task may write more than one (its item and its agent's counter).
pub(crate) async fn commit_outbox<S: Store + ?Sized>(
    store: &S,
    t: &Tenant,
    entries: Vec<OutboxEntry>,
) {
    for chunk in entries.chunks(40) {
        store
            .commit(t, Commit::of_outbox(chunk.to_vec()))
            .await
            .expect("commit lapse tasks");
    }
}

/// Every page of `query` from the start, following `next`; panics after `max_pages`.
pub(crate) async fn all_pages<S: Store + ?Sized>(
    store: &S,
    t: &Tenant,
    mut query: LapseQuery,
    max_pages: usize,
) -> (Vec<OutboxEntry>, usize) {
    let mut got = Vec::new();
    let mut pages = 0;
    loop {
        let page = store.lapses_page(t, &query).await.expect("lapses_page");
        pages += 1;
        assert!(
            page.entries.len() <= query.limit,
            "a page holds at most `limit` ({}) entries, got {}",
            query.limit,
            page.entries.len()
        );
        got.extend(page.entries.into_iter().map(|(_, o)| o));
        match page.next {
            Some(next) => query.after = Some(next),
            None => return (got, pages),
        }
        assert!(
            pages < max_pages,
            "more than {max_pages} pages: `next` never ends"
        );
    }
}

pub(crate) fn ids(entries: &[OutboxEntry]) -> Vec<String> {
    entries.iter().map(|o| o.message_id.clone()).collect()
}

/// `outbox_by_task` finds a lapse task by (tenant, agent, taskId) — set when it was queued or
/// later by `outbox_update` — and never another agent's or tenant's entry with the same task id.
pub async fn outbox_by_task_id<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let mut queued = outbox_entry(&a, "lapse:1", t0());
    queued.task_id = Some("task-x".into());
    let mut billing = outbox_entry(&a, "lapse:2", t0());
    billing.agent = agent("billing");
    billing.task_id = Some("task-x".into());
    let mut other_tenant = outbox_entry(&b, "lapse:1", t0());
    other_tenant.task_id = Some("task-x".into());
    let later = outbox_entry(&a, "lapse:3", t0());
    store
        .commit(
            &a,
            Commit::of_outbox(vec![queued.clone(), billing.clone(), later.clone()]),
        )
        .await
        .expect("commit");
    store
        .commit(&b, Commit::of_outbox(vec![other_tenant]))
        .await
        .expect("commit");
    let found = |t: Tenant, who: &'static str, task: &'static str| {
        let store = Arc::clone(&store);
        async move {
            ids(&store
                .outbox_by_task(&t, &agent(who), task)
                .await
                .expect("outbox_by_task"))
        }
    };
    assert_eq!(found(a.clone(), "booking", "task-x").await, ["lapse:1"]);
    assert_eq!(found(a.clone(), "billing", "task-x").await, ["lapse:2"]);
    assert_eq!(found(b.clone(), "booking", "task-x").await, ["lapse:1"]);
    assert!(found(a.clone(), "booking", "task-y").await.is_empty());

    // The agent answers lapse:3 with a Task: its id is found from then on; lapse:1 moves to
    // another task id and is no longer found under the old one.
    let mut answered = later.clone();
    answered.task_id = Some("task-y".into());
    answered.delivery = DeliveryState::Sent;
    store.outbox_update(&answered).await.expect("update");
    let mut moved = queued.clone();
    moved.task_id = Some("task-z".into());
    store.outbox_update(&moved).await.expect("update");
    assert_eq!(found(a.clone(), "booking", "task-y").await, ["lapse:3"]);
    assert_eq!(found(a.clone(), "booking", "task-z").await, ["lapse:1"]);
    assert!(
        found(a.clone(), "booking", "task-x").await.is_empty(),
        "an entry whose task id changed is not found under the old one"
    );
    let got = store
        .outbox_by_task(&a, &agent("booking"), "task-y")
        .await
        .expect("outbox_by_task");
    assert_eq!(got, vec![answered], "the entry comes back whole");
}

/// The lapse task's task state kept in the outbox never goes back, whichever of its writers
/// lands last (`crate::task_progress`): `outbox_task_state` (a push) changes only the task
/// fields and takes a task id the entry does not have yet; `outbox_update` (the delivery's
/// answer, written from a copy read before the push) keeps a further state pushed meanwhile; a
/// terminal state is final; another task id is left alone. Then a race: pushes of every state
/// and stale answers written at once end on the terminal state, with the delivery's fields.
pub async fn lapse_task_state_never_goes_back<S: Store + 'static>(store: Arc<S>) {
    use a2a_types::TaskState;
    let t = tenant("tenant-a");
    let booking = agent("booking");
    let mut queued = outbox_entry(&t, "lapse:1", t0());
    queued.attempt_started_at = Some(t0());
    store
        .commit(
            &t,
            Commit::of_outbox(vec![queued.clone(), outbox_entry(&t, "lapse:2", t0())]),
        )
        .await
        .expect("commit");
    let stored = |id: &'static str| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        async move {
            stored_entry(&*store, &t, &booking, id)
                .await
                .expect("stored")
        }
    };
    let push = |id: &'static str, task: &'static str, state: TaskState| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        async move {
            store
                .outbox_task_state(&t, &booking, id, task, state, at(10))
                .await
                .expect("outbox_task_state")
        }
    };

    // The pushed Task beats the answer: its id and state are recorded, nothing else changes.
    let written = push("lapse:1", "task-9", TaskState::Working).await;
    let now = stored("lapse:1").await;
    assert_eq!(
        written.as_ref(),
        Some(&now),
        "the entry as written is answered"
    );
    assert_eq!(
        (now.task_id.as_deref(), now.task_state.as_deref()),
        (Some("task-9"), Some("TASK_STATE_WORKING"))
    );
    assert_eq!(
        OutboxEntry {
            task_id: None,
            task_state: None,
            ..now.clone()
        },
        queued,
        "a push changes only the task fields (delivery, attempts, attempt under way kept)"
    );
    assert_eq!(
        ids(&store
            .outbox_by_task(&t, &booking, "task-9")
            .await
            .expect("outbox_by_task")),
        ["lapse:1"],
        "a task id recorded by a push is found by it"
    );

    // The answer (SUBMITTED), recorded from the copy read before the push: the delivery fields
    // are the answer's, the pushed state is kept.
    let mut answered = queued.clone();
    answered.delivery = DeliveryState::Sent;
    answered.attempts = 1;
    answered.attempt_started_at = None;
    answered.task_id = Some("task-9".into());
    answered.task_state = Some("TASK_STATE_SUBMITTED".into());
    store.outbox_update(&answered).await.expect("update");
    let now = stored("lapse:1").await;
    assert_eq!(now.delivery, DeliveryState::Sent);
    assert_eq!((now.attempts, now.attempt_started_at), (1, None));
    assert_eq!(now.task_state.as_deref(), Some("TASK_STATE_WORKING"));

    // The terminal push; then a late push of an earlier state, a stale answer, another task.
    assert!(push("lapse:1", "task-9", TaskState::Completed)
        .await
        .is_some());
    assert_eq!(push("lapse:1", "task-9", TaskState::Working).await, None);
    store.outbox_update(&answered).await.expect("update");
    assert_eq!(push("lapse:1", "task-other", TaskState::Failed).await, None);
    let now = stored("lapse:1").await;
    assert_eq!(now.task_id.as_deref(), Some("task-9"));
    assert_eq!(
        now.task_state.as_deref(),
        Some("TASK_STATE_COMPLETED"),
        "a terminal state is final"
    );
    assert_eq!(
        push("lapse:missing", "task-9", TaskState::Working).await,
        None,
        "never inserts"
    );

    // The race, on lapse:2: fifteen writers at once, in no particular order (a store that
    // retries a lost compare-and-set gives up after more tries than that: each lost try means
    // another writer's one write landed).
    let mut tasks = Vec::new();
    for round in 0..3u32 {
        for state in [
            TaskState::Submitted,
            TaskState::Working,
            TaskState::Completed,
            TaskState::Working,
        ] {
            let store = Arc::clone(&store);
            let (t, booking) = (t.clone(), booking.clone());
            tasks.push(tokio::spawn(async move {
                store
                    .outbox_task_state(&t, &booking, "lapse:2", "task-race", state, at(10))
                    .await
                    .map(|_| ())
            }));
        }
        let mut stale = outbox_entry(&t, "lapse:2", t0());
        stale.delivery = DeliveryState::Sent;
        stale.attempts = round + 1;
        stale.task_id = Some("task-race".into());
        stale.task_state = Some("TASK_STATE_SUBMITTED".into());
        let store = Arc::clone(&store);
        tasks.push(tokio::spawn(
            async move { store.outbox_update(&stale).await },
        ));
    }
    for task in tasks {
        task.await.expect("no panic").expect("each write succeeds");
    }
    let now = stored("lapse:2").await;
    assert_eq!(now.delivery, DeliveryState::Sent);
    assert_eq!(now.task_id.as_deref(), Some("task-race"));
    assert_eq!(now.task_state.as_deref(), Some("TASK_STATE_COMPLETED"));
}

/// Lapse tasks whose task waits for a person (`needs_person_since`, expectations-v1 §10.2) are
/// listed per agent, earliest first, bounded by `due_by` and `limit`, whichever writer recorded
/// the state (a push through `outbox_task_state`, the delivery's answer through
/// `outbox_update`); a later state takes the entry off the list; another agent's are not listed.
pub async fn lapse_tasks_waiting_for_a_person_are_listed<S: Store + 'static>(store: Arc<S>) {
    use a2a_types::TaskState;
    let t = tenant("tenant-person");
    let (booking, billing) = (agent("booking"), agent("billing"));
    let mut other = outbox_entry(&t, "lapse:b", t0());
    other.agent = billing.clone();
    store
        .commit(
            &t,
            Commit::of_outbox(vec![
                outbox_entry(&t, "lapse:1", t0()),
                outbox_entry(&t, "lapse:2", t0()),
                outbox_entry(&t, "lapse:3", t0()),
                other,
            ]),
        )
        .await
        .expect("commit");
    let ids = |entries: Vec<OutboxEntry>| -> Vec<String> {
        entries.into_iter().map(|e| e.message_id).collect()
    };
    // The messageIds `outbox_needing_person` answers for `agent`.
    let waiting_ids = |agent: &AgentId, due_by: Option<Instant>, limit: usize, what: &str| {
        let (store, t, agent, what) = (
            Arc::clone(&store),
            t.clone(),
            agent.clone(),
            what.to_owned(),
        );
        async move {
            ids(store
                .outbox_needing_person(&t, &agent, due_by, limit)
                .await
                .expect(&what))
        }
    };
    // Booking's lapse task `message_id` is `task_id`, pushed `state` at `when`.
    let push = |message_id: &str, task_id: &str, state: TaskState, when: Instant, what: &str| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        let (message_id, task_id, what) =
            (message_id.to_owned(), task_id.to_owned(), what.to_owned());
        async move {
            store
                .outbox_task_state(&t, &booking, &message_id, &task_id, state, when)
                .await
                .expect(&what)
        }
    };
    assert!(waiting_ids(&booking, None, 10, "none yet").await.is_empty());

    // lapse:2 pushed input-required at minute 5; lapse:1 answered input-required at minute 7
    // (the delivery's write); lapse:3 working.
    push("lapse:2", "task-2", TaskState::InputRequired, at(5), "push").await;
    let mut answered = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("get")
        .expect("stored");
    answered.delivery = DeliveryState::Sent;
    answered.task_id = Some("task-1".into());
    answered.task_state = Some(TaskState::AuthRequired.as_str().into());
    answered.needs_person_since = Some(at(7));
    store.outbox_update(&answered).await.expect("answer");
    push("lapse:3", "task-3", TaskState::Working, at(6), "push").await;
    let mut b = store
        .outbox_get(&t, &billing, "lapse:b")
        .await
        .expect("get")
        .expect("stored");
    b.task_id = Some("task-b".into());
    b.task_state = Some(TaskState::InputRequired.as_str().into());
    b.needs_person_since = Some(at(1));
    store.outbox_update(&b).await.expect("billing's");

    let waiting = store
        .outbox_needing_person(&t, &booking, None, 10)
        .await
        .expect("waiting");
    assert_eq!(
        ids(waiting.clone()),
        ["lapse:2", "lapse:1"],
        "earliest first"
    );
    assert_eq!(waiting[0].needs_person_since, Some(at(5)));
    assert_eq!(
        waiting_ids(&booking, Some(at(6)), 10, "due by").await,
        ["lapse:2"]
    );
    assert_eq!(waiting_ids(&booking, None, 1, "limit").await, ["lapse:2"]);
    // The same state pushed again keeps the instant the wait began.
    push(
        "lapse:2",
        "task-2",
        TaskState::InputRequired,
        at(9),
        "push again",
    )
    .await;
    assert_eq!(
        store
            .outbox_get(&t, &booking, "lapse:2")
            .await
            .expect("get")
            .expect("stored")
            .needs_person_since,
        Some(at(5))
    );
    // Answered by the person: off the list.
    push(
        "lapse:2",
        "task-2",
        TaskState::Working,
        at(10),
        "working again",
    )
    .await;
    assert_eq!(
        waiting_ids(&booking, None, 10, "waiting").await,
        ["lapse:1"]
    );
    assert_eq!(
        waiting_ids(&billing, None, 10, "billing").await,
        ["lapse:b"]
    );
    // A lapse task still followed is in the following lane, not this one (`Lane::at`), in
    // every store alike.
    let mut followed = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("get")
        .expect("stored");
    followed.follow_at = Some(at(20));
    store.outbox_update(&followed).await.expect("followed");
    assert!(waiting_ids(&booking, None, 10, "followed").await.is_empty());
}
