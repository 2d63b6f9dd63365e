//! The conformance checks of leased sends: a claim is exclusive among concurrent claimers, a lease
//! expires, and a sent or claimed entry answers taken (expectations-v1 §10.2, issue 22 item 2).

use super::*;

/// Leased sends ([`crate::lease`]): of eight claims of one queued entry at once, exactly one is
/// granted (lease and `attempt_started_at` = now written, nothing else) and seven answer
/// `Taken` with the lease's end; a writer that read the entry
/// before the claim keeps the lease; the holder's outcome releases it; a `sent` entry answers
/// `Taken` and is not changed; an expired lease, or a restarted sender's own (same name, new
/// incarnation), is taken over as ambiguous; an entry not stored
/// answers `Gone`; another agent's entry with the same `messageId` is claimed on its own.
pub async fn outbox_claims_are_exclusive<S: Store + 'static>(store: Arc<S>) {
    use crate::lease::Claim;
    let t = tenant("tenant-a");
    let booking = agent("booking");
    let mut other_agent = outbox_entry(&t, "lapse:1", t0());
    other_agent.agent = agent("billing");
    let mut sent = outbox_entry(&t, "lapse:2", t0());
    sent.delivery = DeliveryState::Sent;
    let entries = vec![
        outbox_entry(&t, "lapse:1", t0()),
        sent.clone(),
        outbox_entry(&t, "lapse:3", t0()),
        outbox_entry(&t, "lapse:4", t0()),
        other_agent,
    ];
    store
        .commit(&t, Commit::of_outbox(entries))
        .await
        .expect("commit");
    let before = stored_entry(&*store, &t, &booking, "lapse:1")
        .await
        .expect("stored");

    // Eight senders at once.
    let claims = eight_at_once(&store, |store, i| {
        let (t, booking) = (t.clone(), booking.clone());
        async move {
            store
                .outbox_claim(
                    &t,
                    &booking,
                    "lapse:1",
                    &lease_of(&format!("sender-{i}#0"), at(5)),
                    t0(),
                )
                .await
                .expect("outbox_claim")
        }
    })
    .await;
    let winner = the_one_granted(&claims, at(5));
    let stored = stored_entry(&*store, &t, &booking, "lapse:1")
        .await
        .expect("stored");
    assert_eq!(stored, winner, "the claim answers the entry as written");
    assert_eq!(stored.attempt_started_at, Some(t0()));
    assert_eq!(
        stored.next_attempt_at,
        t0(),
        "a claim changes only the lease and the attempt"
    );
    let lease = stored.lease.clone().expect("leased");
    assert_eq!(lease.until, at(5));

    // A writer that read the entry before the claim (a deferral) keeps the lease.
    let mut stale = before.clone();
    stale.last_error = Some("deferred".into());
    store.outbox_update(&stale).await.expect("outbox_update");
    let kept = stored_entry(&*store, &t, &booking, "lapse:1")
        .await
        .expect("stored");
    assert_eq!(
        kept.lease,
        Some(lease.clone()),
        "only the holder releases a lease"
    );
    assert_eq!(
        store
            .outbox_claim(&t, &booking, "lapse:1", &lease_of("late#0", at(9)), at(4))
            .await
            .expect("outbox_claim"),
        Claim::Taken {
            delivery: DeliveryState::Queued,
            leased_until: Some(at(5))
        },
        "a live lease is not taken over"
    );

    // The holder's outcome releases it; a sent entry is never claimed.
    let mut outcome = winner.clone();
    outcome.delivery = DeliveryState::Sent;
    outcome.attempt_started_at = None;
    store.outbox_update(&outcome).await.expect("outbox_update");
    let done = stored_entry(&*store, &t, &booking, "lapse:1")
        .await
        .expect("stored");
    assert_eq!(done.lease, None, "the holder's outcome releases the lease");
    assert_eq!(done.delivery, DeliveryState::Sent);
    for id in ["lapse:1", "lapse:2"] {
        assert_eq!(
            store
                .outbox_claim(&t, &booking, id, &lease_of("again#0", at(15)), at(10))
                .await
                .expect("outbox_claim"),
            Claim::Taken {
                delivery: DeliveryState::Sent,
                leased_until: None
            },
            "{id}: a sent entry is taken"
        );
    }
    assert_eq!(
        stored_entry(&*store, &t, &booking, "lapse:2")
            .await
            .expect("stored"),
        sent,
        "a refused claim writes nothing"
    );

    // A crashed sender's lease expires and is taken over, as ambiguous.
    let first = store
        .outbox_claim(&t, &booking, "lapse:3", &lease_of("crashed#0", at(5)), t0())
        .await
        .expect("outbox_claim");
    assert!(matches!(
        first,
        Claim::Claimed {
            ambiguous: false,
            ..
        }
    ));
    match store
        .outbox_claim(&t, &booking, "lapse:3", &lease_of("next#0", at(10)), at(5))
        .await
        .expect("outbox_claim")
    {
        Claim::Claimed { entry, ambiguous } => {
            assert!(ambiguous, "the crashed sender may have posted it");
            assert_eq!(entry.lease.map(|l| l.owner).as_deref(), Some("next#0"));
            assert_eq!(entry.attempt_started_at, Some(at(5)));
        }
        other => panic!("an expired lease is taken over, got {other:?}"),
    }

    // A restarted sender (same name, new incarnation) takes its predecessor's claim at once.
    let named = |incarnation: &str| crate::lease::Lease {
        owner: format!("{incarnation}#0"),
        incarnation: incarnation.to_owned(),
        sender: Some("serve:/var/lib/watcher.db".into()),
        until: at(5),
    };
    let before_crash = store
        .outbox_claim(&t, &booking, "lapse:4", &named("run-1"), t0())
        .await
        .expect("outbox_claim");
    assert!(matches!(before_crash, Claim::Claimed { .. }));
    match store
        .outbox_claim(&t, &booking, "lapse:4", &named("run-2"), at(1))
        .await
        .expect("outbox_claim")
    {
        Claim::Claimed { entry, ambiguous } => {
            assert!(ambiguous, "the predecessor may have posted it");
            assert_eq!(entry.lease, Some(named("run-2")));
        }
        other => panic!("a restarted sender takes back its claim, got {other:?}"),
    }

    // Identity: another agent's entry with the same messageId; an entry not stored.
    assert!(matches!(
        store
            .outbox_claim(
                &t,
                &agent("billing"),
                "lapse:1",
                &lease_of("b#0", at(5)),
                t0()
            )
            .await
            .expect("outbox_claim"),
        Claim::Claimed { .. }
    ));
    assert_eq!(
        store
            .outbox_claim(&t, &booking, "lapse:none", &lease_of("x#0", at(5)), t0())
            .await
            .expect("outbox_claim"),
        Claim::Gone
    );
}

/// Claims and updates by a read ([`crate::store::Outbox::outbox_claim_read`], [`crate::store::Outbox::outbox_update_read`])
/// answer and write what the plain ones do, whatever the read: of eight claims of one entry
/// handed the same fresh read at once, exactly one is granted; a read made stale by a send
/// answers `Taken` and writes nothing; an update by the claim's answer after a push recorded
/// the task's state meanwhile keeps that state, releases the lease and is sent; a stale read's
/// update never changes a sent entry back; an entry not stored answers `Gone`. By a fresh read,
/// neither costs more work than the plain call (`Upkeep::work_done`).
pub async fn claims_and_updates_by_a_read<S: Store + 'static>(store: Arc<S>) {
    use crate::lease::Claim;
    use a2a_types::TaskState;
    let t = tenant("tenant-a");
    let booking = agent("booking");
    let entries = ["lapse:1", "lapse:2", "lapse:3", "lapse:4"]
        .into_iter()
        .map(|id| outbox_entry(&t, id, t0()))
        .collect();
    store
        .commit(&t, Commit::of_outbox(entries))
        .await
        .expect("commit");
    let read = |id: &'static str| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        async move {
            stored_entry(&*store, &t, &booking, id)
                .await
                .expect("stored")
        }
    };

    // Eight senders handed the same read at once: one claim is granted.
    let fresh = read("lapse:1").await;
    let claims = eight_at_once(&store, |store, i| {
        let fresh = fresh.clone();
        async move {
            store
                .outbox_claim_read(&fresh, &lease_of(&format!("sender-{i}#0"), at(5)), t0())
                .await
                .expect("outbox_claim_read")
        }
    })
    .await;
    let marked = the_one_granted(&claims, at(5));
    assert_eq!(
        read("lapse:1").await,
        marked,
        "the claim answers the entry as written"
    );

    // A push records the task's state between the claim and the sender's outcome: the outcome,
    // written by the claim's answer, keeps it and releases the lease.
    store
        .outbox_task_state(
            &t,
            &booking,
            "lapse:1",
            "task-1",
            TaskState::Completed,
            at(1),
        )
        .await
        .expect("outbox_task_state")
        .expect("the push is recorded");
    let mut outcome = marked.clone();
    outcome.delivery = DeliveryState::Sent;
    outcome.attempts = 1;
    outcome.attempt_started_at = None;
    outcome.task_id = Some("task-1".into());
    outcome.task_state = Some(TaskState::Submitted.as_str().into());
    store
        .outbox_update_read(&marked, &outcome)
        .await
        .expect("outbox_update_read");
    let sent = read("lapse:1").await;
    assert_eq!(sent.delivery, DeliveryState::Sent);
    assert_eq!(sent.attempts, 1);
    assert_eq!(
        sent.task_state.as_deref(),
        Some(TaskState::Completed.as_str()),
        "the pushed state, further on, is kept"
    );
    assert_eq!(sent.lease, None, "the holder's outcome releases the lease");

    // The read from before the send is stale: claiming by it is refused, writing nothing, and
    // an update by it never changes the sent entry back.
    assert_eq!(
        store
            .outbox_claim_read(&fresh, &lease_of("late#0", at(15)), at(10))
            .await
            .expect("outbox_claim_read"),
        Claim::Taken {
            delivery: DeliveryState::Sent,
            leased_until: None
        }
    );
    let mut deferred = fresh.clone();
    deferred.next_attempt_at = at(30);
    store
        .outbox_update_read(&fresh, &deferred)
        .await
        .expect("outbox_update_read");
    assert_eq!(
        read("lapse:1").await,
        sent,
        "a sent entry is never changed back"
    );

    // By a fresh read, no more work than the plain calls (`lapse:2` plainly, `lapse:3` by a read).
    let work = || store.work_done().unwrap_or(0);
    let claim_and_send = |claimed: &OutboxEntry| {
        let mut done = claimed.clone();
        done.delivery = DeliveryState::Sent;
        done.attempts = 1;
        done.attempt_started_at = None;
        done
    };
    let start = work();
    let Claim::Claimed { entry: plain, .. } = store
        .outbox_claim(&t, &booking, "lapse:2", &lease_of("plain#0", at(5)), t0())
        .await
        .expect("outbox_claim")
    else {
        panic!("a queued entry is claimed");
    };
    store
        .outbox_update(&claim_and_send(&plain))
        .await
        .expect("outbox_update");
    let plain_work = work() - start;
    let fresh = read("lapse:3").await;
    let start = work();
    let Claim::Claimed { entry: by_read, .. } = store
        .outbox_claim_read(&fresh, &lease_of("read#0", at(5)), t0())
        .await
        .expect("outbox_claim_read")
    else {
        panic!("a queued entry is claimed");
    };
    store
        .outbox_update_read(&by_read, &claim_and_send(&by_read))
        .await
        .expect("outbox_update_read");
    let read_work = work() - start;
    assert!(
        read_work <= plain_work,
        "by a read: {read_work} units of work, plainly: {plain_work}"
    );
    let mut expected = claim_and_send(&by_read);
    expected.lease = None;
    assert_eq!(read("lapse:3").await, expected);

    // An entry not stored.
    let mut ghost = fresh.clone();
    ghost.message_id = "lapse:none".into();
    assert_eq!(
        store
            .outbox_claim_read(&ghost, &lease_of("x#0", at(5)), t0())
            .await
            .expect("outbox_claim_read"),
        Claim::Gone
    );
}

/// A claim's lease by `owner` (its own incarnation, no sender name) until `until`.
pub(crate) fn lease_of(owner: &str, until: Instant) -> crate::lease::Lease {
    crate::lease::Lease {
        owner: owner.to_owned(),
        incarnation: owner.to_owned(),
        sender: None,
        until,
    }
}

/// `claim(store, i)` for eight senders `i` at once, each on a task of its own, answered in
/// sender order (a check's "eight claims at once").
async fn eight_at_once<S, T, F, Fut>(store: &Arc<S>, claim: F) -> Vec<T>
where
    S: Store + 'static,
    T: Send + 'static,
    F: Fn(Arc<S>, usize) -> Fut,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    futures_join_all((0..8).map(|i| tokio::spawn(claim(Arc::clone(store), i)))).await
}

/// The one entry `claims` granted: exactly one is `Claimed` (not ambiguous, a fresh entry), and
/// every other answers `Taken` of a queued entry leased until `until`.
///
/// # Panics
/// When they are otherwise.
fn the_one_granted(claims: &[crate::lease::Claim], until: Instant) -> OutboxEntry {
    use crate::lease::Claim;
    let granted: Vec<&OutboxEntry> = claims
        .iter()
        .filter_map(|c| match c {
            Claim::Claimed { entry, ambiguous } => {
                assert!(!ambiguous, "a fresh entry is not ambiguous");
                Some(entry)
            }
            _ => None,
        })
        .collect();
    assert_eq!(granted.len(), 1, "exactly one claim is granted: {claims:?}");
    for c in claims
        .iter()
        .filter(|c| !matches!(c, Claim::Claimed { .. }))
    {
        assert_eq!(
            c,
            &Claim::Taken {
                delivery: DeliveryState::Queued,
                leased_until: Some(until)
            }
        );
    }
    granted[0].clone()
}

/// Awaits every spawned task, panicking when one panicked.
pub(crate) async fn futures_join_all<T: Send + 'static>(
    handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<T> {
    let mut out = Vec::new();
    for h in handles {
        out.push(h.await.expect("the task ran"));
    }
    out
}
