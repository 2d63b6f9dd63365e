//! The conformance checks of origin tasks followed by next poll.

use super::*;

/// Follows two origin tasks of `booking`, since [`t0`] and since `at(200)`; answers the key
/// (tenant, agent) they are followed under.
pub(crate) async fn follow_old_and_new_origins<S: Store + 'static>(
    store: &Arc<S>,
) -> (Tenant, AgentId) {
    let t = Tenant::default_tenant();
    let booking = AgentId::parse("booking").expect("agent");
    for (task, since) in [("task-old", t0()), ("task-new", at(200))] {
        let origin = crate::origins::FollowedOrigin {
            tenant: t.clone(),
            agent: booking.clone(),
            task_id: task.to_owned(),
            since,
            next_at: at(300),
        };
        store.origin_follow(&origin).await.expect("origin_follow");
    }
    (t, booking)
}

/// The task ids of the origins followed under `key`, in due order (next poll, then id).
pub(crate) async fn followed_origins<S: Store + 'static>(
    store: &Arc<S>,
    (t, agent): &(Tenant, AgentId),
) -> Vec<String> {
    let mut ids: Vec<String> = store
        .origins_due(t, agent, at(1_000_000), 10)
        .await
        .expect("origins_due")
        .into_iter()
        .map(|o| o.task_id)
        .collect();
    ids.sort_by_key(|id| id != "task-old");
    ids
}

/// `origin_follow`, `origins_due`, `origin_reschedule`, `origin_stop`: origin tasks followed in
/// the store come back per (tenant, agent), due by the instant given, earliest next poll first,
/// at most `limit`; following a followed task keeps its schedule; a rescheduled task moves; a
/// stopped one is gone.
pub async fn origins_followed_by_next_poll<S: Store + 'static>(store: Arc<S>) {
    use crate::origins::FollowedOrigin;
    let t = Tenant::default_tenant();
    let other_tenant = Tenant::parse("acme").expect("tenant");
    let booking = AgentId::parse("booking").expect("agent");
    let other = AgentId::parse("other").expect("agent");
    let origin = |tenant: &Tenant, agent: &AgentId, task: &str, next: u32| FollowedOrigin {
        tenant: tenant.clone(),
        agent: agent.clone(),
        task_id: task.to_owned(),
        since: t0(),
        next_at: at(next),
    };
    for (o, added) in [
        (origin(&t, &booking, "task-late", 20), true),
        (origin(&t, &booking, "task-early", 10), true),
        (origin(&t, &booking, "task-early", 1), false),
        (origin(&t, &other, "task-other", 1), true),
        (origin(&other_tenant, &booking, "task-acme", 1), true),
    ] {
        assert_eq!(
            store.origin_follow(&o).await.expect("origin_follow"),
            added,
            "origin_follow answers whether {} was added",
            o.task_id
        );
    }
    let due = |by: u32, limit: usize| {
        let (store, t, booking) = (store.clone(), t.clone(), booking.clone());
        async move {
            store
                .origins_due(&t, &booking, at(by), limit)
                .await
                .expect("origins_due")
                .into_iter()
                .map(|o| (o.task_id, o.next_at))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(due(5, 10).await, vec![], "nothing of booking is due at 5");
    assert_eq!(
        due(10, 10).await,
        vec![("task-early".to_owned(), at(10))],
        "a task already followed keeps its schedule; only booking's, only the default tenant's"
    );
    assert_eq!(
        due(30, 10).await,
        vec![
            ("task-early".to_owned(), at(10)),
            ("task-late".to_owned(), at(20))
        ],
        "earliest next poll first"
    );
    assert_eq!(due(30, 1).await.len(), 1, "at most limit");
    let early = (t.clone(), booking.clone(), "task-early".to_owned());
    store
        .origin_reschedule(&early, at(25))
        .await
        .expect("origin_reschedule");
    assert_eq!(
        due(30, 10).await,
        vec![
            ("task-late".to_owned(), at(20)),
            ("task-early".to_owned(), at(25))
        ],
        "a rescheduled task moves"
    );
    let kept = store
        .origins_due(&t, &booking, at(30), 10)
        .await
        .expect("origins_due");
    assert_eq!(kept[1].since, t0(), "since is kept");
    store.origin_stop(&early).await.expect("origin_stop");
    store
        .origin_stop(&(t.clone(), booking.clone(), "never-followed".to_owned()))
        .await
        .expect("stopping an origin not followed is nothing");
    assert_eq!(due(30, 10).await, vec![("task-late".to_owned(), at(20))]);
    store
        .origin_reschedule(&early, at(1))
        .await
        .expect("rescheduling an origin not followed is nothing");
    assert_eq!(due(30, 10).await, vec![("task-late".to_owned(), at(20))]);
    let acme = store
        .origins_due(&other_tenant, &booking, at(30), 10)
        .await
        .expect("origins_due");
    assert_eq!(acme.len(), 1, "tenants are apart");
    assert!(
        store
            .origin_follow(&origin(&t, &booking, "task-early", 15))
            .await
            .expect("origin_follow"),
        "a stopped task may be followed again"
    );
    assert_eq!(
        due(30, 10).await,
        vec![
            ("task-early".to_owned(), at(15)),
            ("task-late".to_owned(), at(20))
        ]
    );
}
