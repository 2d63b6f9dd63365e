//! The conformance checks of lapse tasks: identity, claims, delivery state, following, and pages.

use super::*;

/// The outbox: an entry whose (tenant, agent, messageId) exists is left as first written;
/// `outbox_due` gives queued entries due at `now`, oldest first, at most `limit`; `sent` is final;
/// `lapses` lists a tenant's entries only, in order of lapse.
pub async fn outbox_rules<S: Store + 'static>(store: Arc<S>) {
    let a = tenant("tenant-a");
    let b = tenant("tenant-b");
    let first = outbox_entry(&a, "lapse:e1:overdue:1", t0());
    let later = outbox_entry(&a, "lapse:e2:overdue:1", at(60));
    let other_tenant = outbox_entry(&b, "lapse:e1:overdue:1", t0());
    store
        .commit(
            &a,
            Commit {
                outbox: vec![first.clone(), later.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("commit outbox");
    store
        .commit(
            &b,
            Commit {
                outbox: vec![other_tenant.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("the same messageId in another tenant is another entry");

    // A second insert with the same messageId for the same agent leaves the first.
    let mut again = first.clone();
    again.request = json!({ "different": true });
    again.next_attempt_at = at(500);
    store
        .commit(
            &a,
            Commit {
                outbox: vec![again],
                ..Commit::default()
            },
        )
        .await
        .expect("a repeated messageId is not an error");
    assert_eq!(
        store
            .outbox_get(&a, &first.agent, &first.message_id)
            .await
            .expect("outbox_get"),
        Some(first.clone()),
        "an existing messageId of the same agent keeps its first entry"
    );
    assert_eq!(
        store.lapses(&a).await.expect("lapses").len(),
        2,
        "a repeated messageId of the same agent adds no entry"
    );
    assert_eq!(
        store
            .outbox_get(&b, &first.agent, &first.message_id)
            .await
            .expect("outbox_get"),
        Some(other_tenant.clone())
    );
    assert_eq!(
        store
            .outbox_get(&a, &first.agent, "lapse:none")
            .await
            .expect("outbox_get"),
        None
    );

    // Due entries.
    let ids = |list: Vec<OutboxEntry>| -> Vec<(Tenant, String)> {
        list.into_iter().map(|o| (o.tenant, o.message_id)).collect()
    };
    let mine = |e: &OutboxEntry| (e.tenant.clone(), e.message_id.clone());
    let due_now = ids(store.outbox_due(t0(), 10).await.expect("outbox_due"));
    assert_eq!(
        due_now,
        vec![mine(&first), mine(&other_tenant)],
        "entries due at now, oldest first"
    );
    assert_eq!(
        ids(store.outbox_due(at(60), 10).await.expect("outbox_due")),
        vec![mine(&first), mine(&later), mine(&other_tenant)]
    );
    assert_eq!(
        ids(store.outbox_due(at(60), 1).await.expect("outbox_due")),
        vec![mine(&first)],
        "at most `limit` entries"
    );

    // Sent is final.
    let mut sent = first.clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    sent.task_id = Some("task-99".into());
    sent.task_state = Some("TASK_STATE_SUBMITTED".into());
    store.outbox_update(&sent).await.expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&a, &first.agent, &first.message_id)
            .await
            .expect("outbox_get"),
        Some(sent.clone()),
        "an update replaces the delivery fields"
    );
    assert_eq!(
        store
            .outbox_get(&b, &first.agent, &first.message_id)
            .await
            .expect("outbox_get"),
        Some(other_tenant.clone()),
        "an update touches only its own tenant's entry"
    );
    for back in [DeliveryState::Queued, DeliveryState::Failed] {
        let mut undo = first.clone();
        undo.delivery = back;
        undo.attempts = 7;
        store.outbox_update(&undo).await.expect("outbox_update");
        assert_eq!(
            store
                .outbox_get(&a, &first.agent, &first.message_id)
                .await
                .expect("outbox_get"),
            Some(sent.clone()),
            "a sent entry is never changed back to {}",
            back.as_str()
        );
    }
    assert_eq!(
        ids(store.outbox_due(at(60), 10).await.expect("outbox_due")),
        vec![mine(&later), mine(&other_tenant)],
        "a sent entry is no longer due"
    );

    // Retry and failure.
    let mut retry = later.clone();
    retry.attempts = 1;
    retry.next_attempt_at = at(90);
    retry.last_error = Some("HTTP 503".into());
    store.outbox_update(&retry).await.expect("outbox_update");
    assert_eq!(
        ids(store.outbox_due(at(60), 10).await.expect("outbox_due")),
        vec![mine(&other_tenant)],
        "a retry waits for its next attempt"
    );
    assert_eq!(
        ids(store.outbox_due(at(90), 10).await.expect("outbox_due")),
        vec![mine(&later), mine(&other_tenant)]
    );
    let mut failed = retry.clone();
    failed.delivery = DeliveryState::Failed;
    store.outbox_update(&failed).await.expect("outbox_update");
    assert_eq!(
        ids(store.outbox_due(at(1000), 10).await.expect("outbox_due")),
        vec![mine(&other_tenant)],
        "a failed entry is not due"
    );

    // Updating an entry never written does not create it.
    let ghost = outbox_entry(&a, "lapse:ghost", t0());
    store.outbox_update(&ghost).await.expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&a, &ghost.agent, "lapse:ghost")
            .await
            .expect("outbox_get"),
        None,
        "outbox_update does not insert"
    );

    // Lapses per tenant.
    assert_eq!(
        store.lapses(&a).await.expect("lapses"),
        vec![sent, failed],
        "a tenant's entries, in order of lapse"
    );
    assert_eq!(store.lapses(&b).await.expect("lapses"), vec![other_tenant]);
    assert!(store
        .lapses(&tenant("tenant-c"))
        .await
        .expect("lapses")
        .is_empty());
}

/// An outbox entry's identity is (tenant, agent, messageId): expectation ids are scoped to the
/// raising agent, so two agents of one tenant may lapse with the same `messageId`. Both entries
/// are kept, in the same commit or in two; each is read and updated on its own; a repeat for
/// one agent still leaves that agent's first entry.
pub async fn outbox_identity_includes_agent<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let message_id = "lapse:exp-shared:overdue:2026-09-10T12:00:00Z";
    let booking = outbox_entry(&t, message_id, t0());
    let mut other = outbox_entry(&t, message_id, t0());
    other.agent = agent("other");
    other.request = json!({ "message": { "messageId": message_id }, "to": "other" });
    let mut third = outbox_entry(&t, message_id, at(1));
    third.agent = agent("third");

    // Two agents in one commit, a third in a later one.
    store
        .commit(
            &t,
            Commit {
                outbox: vec![booking.clone(), other.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("the same messageId for two agents in one commit");
    store
        .commit(
            &t,
            Commit {
                outbox: vec![third.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("the same messageId for a third agent in a later commit");
    for e in [&booking, &other, &third] {
        assert_eq!(
            store
                .outbox_get(&t, &e.agent, message_id)
                .await
                .expect("outbox_get"),
            Some(e.clone()),
            "agent {}'s entry is kept and found under its own agent",
            e.agent
        );
    }
    assert_eq!(
        store
            .outbox_get(&t, &agent("nobody"), message_id)
            .await
            .expect("outbox_get"),
        None,
        "an agent with no entry finds none, even when another agent has that messageId"
    );
    assert_eq!(
        store.lapses(&t).await.expect("lapses"),
        vec![booking.clone(), other.clone(), third.clone()],
        "all three entries are listed, in order of lapse"
    );
    let due = store.outbox_due(at(1), 10).await.expect("outbox_due");
    assert_eq!(
        due,
        vec![booking.clone(), other.clone(), third.clone()],
        "each agent's entry is due on its own"
    );

    // A repeat for one agent leaves that agent's first entry and adds nothing.
    let mut again = other.clone();
    again.request = json!({ "different": true });
    store
        .commit(
            &t,
            Commit {
                outbox: vec![again],
                ..Commit::default()
            },
        )
        .await
        .expect("a repeated (agent, messageId) is not an error");
    assert_eq!(
        store
            .outbox_get(&t, &other.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(other.clone()),
        "a repeated (tenant, agent, messageId) keeps its first entry"
    );
    assert_eq!(store.lapses(&t).await.expect("lapses").len(), 3);

    // Updates touch only their own agent's entry.
    let mut sent = booking.clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    sent.task_id = Some("task-booking".into());
    store.outbox_update(&sent).await.expect("outbox_update");
    let mut retry = other.clone();
    retry.attempts = 1;
    retry.next_attempt_at = at(30);
    retry.last_error = Some("HTTP 503".into());
    store.outbox_update(&retry).await.expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&t, &booking.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(sent.clone()),
        "the update of booking's entry is recorded"
    );
    assert_eq!(
        store
            .outbox_get(&t, &other.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(retry.clone()),
        "the update of other's entry is recorded on other's entry only"
    );
    assert_eq!(
        store
            .outbox_get(&t, &third.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(third.clone()),
        "an update of another agent's entry with the same messageId leaves this one"
    );
    // Booking's entry is sent: an update of other's entry to queued does not reopen it.
    let mut queued_again = retry.clone();
    queued_again.attempts = 2;
    store
        .outbox_update(&queued_again)
        .await
        .expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&t, &booking.agent, message_id)
            .await
            .expect("outbox_get"),
        Some(sent.clone()),
        "booking's sent entry is final whatever happens to other's"
    );
    assert_eq!(
        store.outbox_due(at(1), 10).await.expect("outbox_due"),
        vec![third.clone()],
        "sent is no longer due, the retry waits, the third is due"
    );
    assert_eq!(
        store.outbox_due(at(30), 10).await.expect("outbox_due"),
        vec![queued_again.clone(), third.clone()]
    );

    // Updating an agent with no entry does not create one.
    let mut ghost = booking.clone();
    ghost.agent = agent("nobody");
    store.outbox_update(&ghost).await.expect("outbox_update");
    assert_eq!(
        store
            .outbox_get(&t, &ghost.agent, message_id)
            .await
            .expect("outbox_get"),
        None,
        "outbox_update does not insert an entry for another agent"
    );
    assert_eq!(
        store.lapses(&t).await.expect("lapses"),
        vec![sent, queued_again, third]
    );
}

/// `outbox_of_agent`: only the (tenant, agent) asked for, only the delivery state asked for,
/// only entries due by `due_by` when it is given, earliest next attempt first, at most `limit`;
/// an `outbox_update` moves an entry from one state's answer to another's.
pub async fn outbox_by_agent_and_state<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let other_tenant = tenant("tenant-b");
    let late = outbox_entry(&t, "lapse:late", at(30));
    let early = outbox_entry(&t, "lapse:early", at(10));
    let middle = outbox_entry(&t, "lapse:middle", at(20));
    let mut elsewhere = outbox_entry(&t, "lapse:elsewhere", at(1));
    elsewhere.agent = agent("other");
    let foreign = outbox_entry(&other_tenant, "lapse:foreign", at(1));
    store
        .commit(
            &t,
            Commit {
                outbox: vec![
                    late.clone(),
                    early.clone(),
                    middle.clone(),
                    elsewhere.clone(),
                ],
                ..Commit::default()
            },
        )
        .await
        .expect("commit lapse tasks");
    store
        .commit(
            &other_tenant,
            Commit {
                outbox: vec![foreign],
                ..Commit::default()
            },
        )
        .await
        .expect("commit another tenant's lapse task");
    let ids = |v: Vec<OutboxEntry>| v.into_iter().map(|e| e.message_id).collect::<Vec<_>>();
    let booking = agent("booking");
    let queued = |due_by, limit| {
        let store = store.clone();
        let t = t.clone();
        let booking = booking.clone();
        async move {
            store
                .outbox_of_agent(&t, &booking, DeliveryState::Queued, due_by, limit)
                .await
                .expect("outbox_of_agent")
        }
    };
    assert_eq!(
        ids(queued(None, 10).await),
        ["lapse:early", "lapse:middle", "lapse:late"],
        "every queued entry of the agent, earliest next attempt first"
    );
    assert_eq!(
        ids(queued(Some(at(20)), 10).await),
        ["lapse:early", "lapse:middle"],
        "due_by bounds the next attempt, inclusive"
    );
    assert_eq!(
        ids(queued(None, 1).await),
        ["lapse:early"],
        "limit caps the answer"
    );
    assert_eq!(
        ids(queued(Some(at(5)), 10).await),
        Vec::<String>::new(),
        "nothing due by then"
    );
    assert_eq!(
        ids(store
            .outbox_of_agent(&t, &agent("other"), DeliveryState::Queued, None, 10)
            .await
            .expect("outbox_of_agent")),
        ["lapse:elsewhere"],
        "another agent's entries are its own"
    );

    let mut failed = middle.clone();
    failed.delivery = DeliveryState::Failed;
    failed.last_error = Some("gave up".into());
    store.outbox_update(&failed).await.expect("mark failed");
    assert_eq!(
        ids(queued(None, 10).await),
        ["lapse:early", "lapse:late"],
        "a failed entry leaves the queued answer"
    );
    assert_eq!(
        store
            .outbox_of_agent(&t, &booking, DeliveryState::Failed, None, 10)
            .await
            .expect("outbox_of_agent"),
        vec![failed.clone()],
        "and is found among the failed ones, as written"
    );
    let mut requeued = failed.clone();
    requeued.delivery = DeliveryState::Queued;
    requeued.next_attempt_at = at(40);
    requeued.last_error = None;
    store.outbox_update(&requeued).await.expect("re-queue");
    assert_eq!(
        ids(queued(None, 10).await),
        ["lapse:early", "lapse:late", "lapse:middle"],
        "a re-queued entry comes back at its new next attempt"
    );
    assert!(
        store
            .outbox_of_agent(&t, &booking, DeliveryState::Failed, None, 10)
            .await
            .expect("outbox_of_agent")
            .is_empty(),
        "and is no longer failed"
    );
    let mut sent = early.clone();
    sent.delivery = DeliveryState::Sent;
    store.outbox_update(&sent).await.expect("mark sent");
    assert_eq!(
        ids(store
            .outbox_of_agent(&t, &booking, DeliveryState::Sent, None, 10)
            .await
            .expect("outbox_of_agent")),
        ["lapse:early"],
        "sent entries are found by state too"
    );
}

/// `outbox_following`: only entries of (tenant, agent) with `follow_at` set, due by `due_by`
/// when given, earliest first; clearing `follow_at` removes an entry from the answer.
pub async fn outbox_following_by_next_poll<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let booking = agent("booking");
    let mut late = outbox_entry(&t, "lapse:late", t0());
    late.delivery = DeliveryState::Sent;
    late.follow_at = Some(at(30));
    late.follow_since = Some(t0());
    let mut early = outbox_entry(&t, "lapse:early", t0());
    early.delivery = DeliveryState::Sent;
    early.follow_at = Some(at(10));
    let not_followed = outbox_entry(&t, "lapse:plain", t0());
    let mut elsewhere = early.clone();
    elsewhere.agent = agent("other");
    store
        .commit(
            &t,
            Commit {
                outbox: vec![late.clone(), early.clone(), not_followed, elsewhere],
                ..Commit::default()
            },
        )
        .await
        .expect("commit lapse tasks");
    let ids = |v: Vec<OutboxEntry>| v.into_iter().map(|e| e.message_id).collect::<Vec<_>>();
    let following = |due_by| {
        let store = store.clone();
        let t = t.clone();
        let booking = booking.clone();
        async move {
            store
                .outbox_following(&t, &booking, due_by, 10)
                .await
                .expect("outbox_following")
        }
    };
    assert_eq!(
        ids(following(None).await),
        ["lapse:early", "lapse:late"],
        "followed entries of the agent, earliest poll first"
    );
    assert_eq!(ids(following(Some(at(10))).await), ["lapse:early"]);
    let mut done = early.clone();
    done.follow_at = None;
    done.task_state = Some("TASK_STATE_COMPLETED".into());
    store.outbox_update(&done).await.expect("stop following");
    assert_eq!(ids(following(None).await), ["lapse:late"]);
    let mut later = late.clone();
    later.follow_at = Some(at(5));
    store
        .outbox_update(&later)
        .await
        .expect("poll again sooner");
    assert_eq!(following(Some(at(5))).await, vec![later]);
}
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
        .commit(
            &t,
            Commit {
                outbox: entries,
                ..Commit::default()
            },
        )
        .await
        .expect("commit");
    let before = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("outbox_get")
        .expect("stored");

    // Eight senders at once.
    let claims = futures_join_all((0..8).map(|i| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        tokio::spawn(async move {
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
        })
    }))
    .await;
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
    for c in &claims {
        if !matches!(c, Claim::Claimed { .. }) {
            assert_eq!(
                c,
                &Claim::Taken {
                    delivery: DeliveryState::Queued,
                    leased_until: Some(at(5))
                }
            );
        }
    }
    let winner = granted[0].clone();
    let stored = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("outbox_get")
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
    let kept = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("outbox_get")
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
    let done = store
        .outbox_get(&t, &booking, "lapse:1")
        .await
        .expect("outbox_get")
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
        store
            .outbox_get(&t, &booking, "lapse:2")
            .await
            .expect("outbox_get")
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

/// A claim's lease by `owner` (its own incarnation, no sender name) until `until`.
pub(crate) fn lease_of(owner: &str, until: Instant) -> crate::lease::Lease {
    crate::lease::Lease {
        owner: owner.to_owned(),
        incarnation: owner.to_owned(),
        sender: None,
        until,
    }
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

/// A lapse task marked `withdrawn` (never sent: its origin task was found ended before sending)
/// is stored as such, found by its agent and state, and left out of the queue.
pub async fn withdrawn_lapse_tasks_are_kept<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let entry = outbox_entry(&t, "lapse:withdrawn", at(1));
    store
        .commit(
            &t,
            Commit {
                outbox: vec![entry.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("commit a lapse task");
    let mut withdrawn = entry.clone();
    withdrawn.delivery = DeliveryState::Withdrawn;
    withdrawn.last_error = Some("not sent: the origin task is TASK_STATE_CANCELED".into());
    store
        .outbox_update(&withdrawn)
        .await
        .expect("mark withdrawn");
    let got = store
        .outbox_get(&t, &entry.agent, &entry.message_id)
        .await
        .expect("outbox_get")
        .expect("kept");
    assert_eq!(got.delivery, DeliveryState::Withdrawn);
    let listed = store
        .outbox_of_agent(&t, &entry.agent, DeliveryState::Withdrawn, None, 10)
        .await
        .expect("outbox_of_agent");
    assert_eq!(listed.len(), 1);
    let queued = store
        .outbox_of_agent(&t, &entry.agent, DeliveryState::Queued, None, 10)
        .await
        .expect("outbox_of_agent");
    assert!(queued.is_empty(), "{queued:?}");
    assert!(store
        .outbox_due(at(100), 10)
        .await
        .expect("outbox_due")
        .is_empty());
}

// ---------------------------------------------------------------------------------------------
// Flat cost and pages (issue 10).

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
            .commit(
                t,
                Commit {
                    outbox: chunk.to_vec(),
                    ..Commit::default()
                },
            )
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
            Commit {
                outbox: vec![queued.clone(), billing.clone(), later.clone()],
                ..Commit::default()
            },
        )
        .await
        .expect("commit");
    store
        .commit(
            &b,
            Commit {
                outbox: vec![other_tenant],
                ..Commit::default()
            },
        )
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
            Commit {
                outbox: vec![queued.clone(), outbox_entry(&t, "lapse:2", t0())],
                ..Commit::default()
            },
        )
        .await
        .expect("commit");
    let stored = |id: &'static str| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        async move {
            store
                .outbox_get(&t, &booking, id)
                .await
                .expect("outbox_get")
                .expect("stored")
        }
    };
    let push = |id: &'static str, task: &'static str, state: TaskState| {
        let (store, t, booking) = (Arc::clone(&store), t.clone(), booking.clone());
        async move {
            store
                .outbox_task_state(&t, &booking, id, task, state)
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
                    .outbox_task_state(&t, &booking, "lapse:2", "task-race", state)
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

/// `lapses_page` pages through 500 lapse tasks (a size the DynamoDB emulator pages through in seconds;
/// `shared/watcher-http/tests/pagination.rs` pages 2,500): each exactly once, in order of lapse, at most
/// `limit` per page, ending with no `next`; with the `agent`, `delivery` and `since` filters
/// every page holds only matching entries and together exactly the matching ones; other
/// tenants' entries never appear.
pub async fn lapses_are_paged<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    let entries = numbered_entries(&a, "", 0, 500);
    commit_outbox(&*store, &a, entries.clone()).await;
    commit_outbox(&*store, &b, numbered_entries(&b, "b", 0, 30)).await;
    // Every 7th entry was delivered.
    let mut expected = entries.clone();
    for o in expected.iter_mut().step_by(7) {
        o.delivery = DeliveryState::Sent;
        store.outbox_update(o).await.expect("update");
    }

    let query = |limit: usize| LapseQuery {
        limit,
        ..LapseQuery::default()
    };
    let (got, pages) = all_pages(&*store, &a, query(20), 100).await;
    assert_eq!(
        ids(&got),
        ids(&expected),
        "each lapse task exactly once, in order"
    );
    assert_eq!(got, expected, "entries come back whole");
    assert!(
        (25..=26).contains(&pages),
        "500 at 20 a page: {pages} pages"
    );

    let (got, _) = all_pages(&*store, &a, query(200), 10).await;
    assert_eq!(ids(&got), ids(&expected));
    let (got, pages) = all_pages(&*store, &a, query(600), 10).await;
    assert_eq!(ids(&got), ids(&expected));
    assert_eq!(pages, 1, "everything fits one page of 600");

    let filtered = |q: &LapseQuery| -> Vec<String> {
        ids(&expected
            .iter()
            .filter(|o| q.matches(o))
            .cloned()
            .collect::<Vec<_>>())
    };
    let mut by_agent = query(20);
    by_agent.agent = Some(agent("billing"));
    let (got, _) = all_pages(&*store, &a, by_agent.clone(), 100).await;
    assert_eq!(ids(&got), filtered(&by_agent));
    assert_eq!(got.len(), 250);

    let mut sent = query(10);
    sent.delivery = Some(DeliveryState::Sent);
    let (got, _) = all_pages(&*store, &a, sent.clone(), 100).await;
    assert_eq!(ids(&got), filtered(&sent));
    assert_eq!(got.len(), 72);

    let mut since = query(20);
    since.since = Some(t0().plus(IsoDuration::parse("PT400S").expect("a duration")));
    since.agent = Some(agent("booking"));
    since.delivery = Some(DeliveryState::Queued);
    let (got, _) = all_pages(&*store, &a, since.clone(), 100).await;
    assert_eq!(ids(&got), filtered(&since));
    assert!(!got.is_empty());

    let (got, _) = all_pages(&*store, &b, query(7), 10).await;
    assert_eq!(got.len(), 30, "tenant-b sees its 30 lapse tasks only");
    let none = store
        .lapses_page(&tenant("tenant-c"), &query(10))
        .await
        .expect("lapses_page");
    assert_eq!(
        none,
        LapsePage::default(),
        "an empty tenant: no entries, no next"
    );
}
