//! The conformance checks of lapse tasks: identity, claims, delivery state, following, and pages.

use super::*;

mod claims;
mod pages;

pub use claims::*;
pub use pages::*;

/// The queued entries due at `now` of each of `lanes` (tenant, agent), as each agent's delivery
/// lane reads them ([`crate::store::Outbox::outbox_of_agent`] of `queued` due by `now`, at most
/// `limit` each), one lane after another in the order given.
async fn due_in_lanes<S: Store + ?Sized>(
    store: &S,
    lanes: &[(&Tenant, &AgentId)],
    now: Instant,
    limit: usize,
) -> Vec<OutboxEntry> {
    let mut due = Vec::new();
    for (tenant, agent) in lanes {
        due.extend(
            store
                .outbox_of_agent(tenant, agent, DeliveryState::Queued, Some(now), limit)
                .await
                .expect("outbox_of_agent"),
        );
    }
    due
}

/// The outbox: an entry whose (tenant, agent, messageId) exists is left as first written; an
/// agent's delivery lane (`outbox_of_agent` of `queued` due by `now`) gives its queued entries
/// due at `now`, earliest first, at most `limit`; `sent` is final; `lapses` lists a tenant's
/// entries only, in order of lapse.
pub async fn outbox_rules<S: Store + 'static>(store: Arc<S>) {
    let a = tenant("tenant-a");
    let b = tenant("tenant-b");
    let first = outbox_entry(&a, "lapse:e1:overdue:1", t0());
    let later = outbox_entry(&a, "lapse:e2:overdue:1", at(60));
    let other_tenant = outbox_entry(&b, "lapse:e1:overdue:1", t0());
    store
        .commit(&a, Commit::of_outbox(vec![first.clone(), later.clone()]))
        .await
        .expect("commit outbox");
    store
        .commit(&b, Commit::of_outbox(vec![other_tenant.clone()]))
        .await
        .expect("the same messageId in another tenant is another entry");

    // A second insert with the same messageId for the same agent leaves the first.
    let mut again = first.clone();
    again.request = json!({ "different": true });
    again.next_attempt_at = at(500);
    store
        .commit(&a, Commit::of_outbox(vec![again]))
        .await
        .expect("a repeated messageId is not an error");
    assert_eq!(
        stored_entry(&*store, &a, &first.agent, &first.message_id).await,
        Some(first.clone()),
        "an existing messageId of the same agent keeps its first entry"
    );
    assert_eq!(
        store.lapses(&a).await.expect("lapses").len(),
        2,
        "a repeated messageId of the same agent adds no entry"
    );
    assert_eq!(
        stored_entry(&*store, &b, &first.agent, &first.message_id).await,
        Some(other_tenant.clone())
    );
    assert_eq!(
        stored_entry(&*store, &a, &first.agent, "lapse:none").await,
        None
    );

    // Due entries, in the lanes of booking of each tenant.
    let ids = |list: Vec<OutboxEntry>| -> Vec<(Tenant, String)> {
        list.into_iter().map(|o| (o.tenant, o.message_id)).collect()
    };
    let mine = |e: &OutboxEntry| (e.tenant.clone(), e.message_id.clone());
    let lanes = [(&a, &first.agent), (&b, &first.agent)];
    let due_now = ids(due_in_lanes(&*store, &lanes, t0(), 10).await);
    assert_eq!(
        due_now,
        vec![mine(&first), mine(&other_tenant)],
        "entries due at now, oldest first"
    );
    assert_eq!(
        ids(due_in_lanes(&*store, &lanes, at(60), 10).await),
        vec![mine(&first), mine(&later), mine(&other_tenant)]
    );
    assert_eq!(
        ids(due_in_lanes(&*store, &lanes[..1], at(60), 1).await),
        vec![mine(&first)],
        "at most `limit` entries, earliest first"
    );

    // Sent is final.
    let mut sent = first.clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    sent.task_id = Some("task-99".into());
    sent.task_state = Some("TASK_STATE_SUBMITTED".into());
    store.outbox_update(&sent).await.expect("outbox_update");
    assert_eq!(
        stored_entry(&*store, &a, &first.agent, &first.message_id).await,
        Some(sent.clone()),
        "an update replaces the delivery fields"
    );
    assert_eq!(
        stored_entry(&*store, &b, &first.agent, &first.message_id).await,
        Some(other_tenant.clone()),
        "an update touches only its own tenant's entry"
    );
    for back in [DeliveryState::Queued, DeliveryState::Failed] {
        let mut undo = first.clone();
        undo.delivery = back;
        undo.attempts = 7;
        store.outbox_update(&undo).await.expect("outbox_update");
        assert_eq!(
            stored_entry(&*store, &a, &first.agent, &first.message_id).await,
            Some(sent.clone()),
            "a sent entry is never changed back to {}",
            back.as_str()
        );
    }
    assert_eq!(
        ids(due_in_lanes(&*store, &lanes, at(60), 10).await),
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
        ids(due_in_lanes(&*store, &lanes, at(60), 10).await),
        vec![mine(&other_tenant)],
        "a retry waits for its next attempt"
    );
    assert_eq!(
        ids(due_in_lanes(&*store, &lanes, at(90), 10).await),
        vec![mine(&later), mine(&other_tenant)]
    );
    let mut failed = retry.clone();
    failed.delivery = DeliveryState::Failed;
    store.outbox_update(&failed).await.expect("outbox_update");
    assert_eq!(
        ids(due_in_lanes(&*store, &lanes, at(1000), 10).await),
        vec![mine(&other_tenant)],
        "a failed entry is not due"
    );

    // Updating an entry never written does not create it.
    let ghost = outbox_entry(&a, "lapse:ghost", t0());
    store.outbox_update(&ghost).await.expect("outbox_update");
    assert_eq!(
        stored_entry(&*store, &a, &ghost.agent, "lapse:ghost").await,
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
        .commit(&t, Commit::of_outbox(vec![booking.clone(), other.clone()]))
        .await
        .expect("the same messageId for two agents in one commit");
    store
        .commit(&t, Commit::of_outbox(vec![third.clone()]))
        .await
        .expect("the same messageId for a third agent in a later commit");
    for e in [&booking, &other, &third] {
        assert_eq!(
            stored_entry(&*store, &t, &e.agent, message_id).await,
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
    let lanes = [(&t, &booking.agent), (&t, &other.agent), (&t, &third.agent)];
    let due = due_in_lanes(&*store, &lanes, at(1), 10).await;
    assert_eq!(
        due,
        vec![booking.clone(), other.clone(), third.clone()],
        "each agent's entry is due on its own"
    );

    // A repeat for one agent leaves that agent's first entry and adds nothing.
    let mut again = other.clone();
    again.request = json!({ "different": true });
    store
        .commit(&t, Commit::of_outbox(vec![again]))
        .await
        .expect("a repeated (agent, messageId) is not an error");
    assert_eq!(
        stored_entry(&*store, &t, &other.agent, message_id).await,
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
        stored_entry(&*store, &t, &booking.agent, message_id).await,
        Some(sent.clone()),
        "the update of booking's entry is recorded"
    );
    assert_eq!(
        stored_entry(&*store, &t, &other.agent, message_id).await,
        Some(retry.clone()),
        "the update of other's entry is recorded on other's entry only"
    );
    assert_eq!(
        stored_entry(&*store, &t, &third.agent, message_id).await,
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
        stored_entry(&*store, &t, &booking.agent, message_id).await,
        Some(sent.clone()),
        "booking's sent entry is final whatever happens to other's"
    );
    assert_eq!(
        due_in_lanes(&*store, &lanes, at(1), 10).await,
        vec![third.clone()],
        "sent is no longer due, the retry waits, the third is due"
    );
    assert_eq!(
        due_in_lanes(&*store, &lanes, at(30), 10).await,
        vec![queued_again.clone(), third.clone()]
    );

    // Updating an agent with no entry does not create one.
    let mut ghost = booking.clone();
    ghost.agent = agent("nobody");
    store.outbox_update(&ghost).await.expect("outbox_update");
    assert_eq!(
        stored_entry(&*store, &t, &ghost.agent, message_id).await,
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
            Commit::of_outbox(vec![
                late.clone(),
                early.clone(),
                middle.clone(),
                elsewhere.clone(),
            ]),
        )
        .await
        .expect("commit lapse tasks");
    store
        .commit(&other_tenant, Commit::of_outbox(vec![foreign]))
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
            Commit::of_outbox(vec![late.clone(), early.clone(), not_followed, elsewhere]),
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

/// A lapse task marked `withdrawn` (never sent: its origin task was found ended before sending)
/// is stored as such, found by its agent and state, and left out of the queue.
pub async fn withdrawn_lapse_tasks_are_kept<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-a");
    let entry = outbox_entry(&t, "lapse:withdrawn", at(1));
    store
        .commit(&t, Commit::of_outbox(vec![entry.clone()]))
        .await
        .expect("commit a lapse task");
    let mut withdrawn = entry.clone();
    withdrawn.delivery = DeliveryState::Withdrawn;
    withdrawn.last_error = Some("not sent: the origin task is TASK_STATE_CANCELED".into());
    store
        .outbox_update(&withdrawn)
        .await
        .expect("mark withdrawn");
    let got = stored_entry(&*store, &t, &entry.agent, &entry.message_id)
        .await
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
    assert!(due_in_lanes(&*store, &[(&t, &entry.agent)], at(100), 10)
        .await
        .is_empty());
}
