//! Which entry goes where: one named entry, tenants' own endpoints, two agents with one messageId, a 0.3 agent.

use super::*;

#[tokio::test]
async fn a_named_entry_is_posted_when_due() {
    let agent =
        spawn_capture_agent(Behaviour::always(Reply::task("task-9", TaskState::Working))).await;
    let mut entry = lapse_entry("exp-one");
    entry.next_attempt_at = plus_secs(t0(), 60);
    let store = store_with(vec![entry.clone()]).await;
    let endpoints = endpoints(agent.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);

    let early = deliver_entry(&sub, &store, &endpoints, &entry, t0()).await;
    assert_eq!(
        early,
        EntryOutcome::NotDue {
            at: plus_secs(t0(), 60)
        }
    );
    let missing = deliver_named(
        &sub,
        &store,
        &endpoints,
        (&entry.tenant, &entry.agent, "lapse:nope"),
        t0(),
    )
    .await;
    assert_eq!(missing, EntryOutcome::Skipped { delivery: None });
    assert_eq!(agent.request_count(), 0);

    let sent = deliver_entry(&sub, &store, &endpoints, &entry, plus_secs(t0(), 60)).await;
    assert_eq!(
        sent,
        EntryOutcome::Sent(SendOutcome::Task {
            id: "task-9".into(),
            state: TaskState::Working
        })
    );
    assert_eq!(
        get(&store, &entry).await.task_state.as_deref(),
        Some("TASK_STATE_WORKING")
    );
}

#[tokio::test]
async fn tenants_reach_their_own_endpoints() {
    let agent_a = spawn_capture_agent(Behaviour::accept()).await;
    let agent_b = spawn_capture_agent(Behaviour::accept()).await;
    let acme = Tenant::parse("acme").unwrap();
    let mut other = lapse_entry("exp-acme");
    other.tenant = acme.clone();
    let mine = lapse_entry("exp-default");
    let store = store_with(vec![mine.clone(), other.clone()]).await;
    let mut endpoints = endpoints(agent_a.endpoint(None));
    endpoints.insert((acme, booking()), agent_b.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);

    let acme_booking = (Tenant::parse("acme").unwrap(), booking());
    let lanes = [(tenant(), booking()), acme_booking];
    let r = lane_passes(&sub, &store, &endpoints, t0(), &lanes).await;
    assert_eq!((r[0].delivery.sent, r[1].delivery.sent), (1, 1));
    assert_eq!(agent_a.requests()[0].message_id().unwrap(), mine.message_id);
    assert_eq!(
        agent_b.requests()[0].message_id().unwrap(),
        other.message_id
    );
    assert_eq!(
        (
            agent_a.sent_message_ids().len(),
            agent_b.sent_message_ids().len()
        ),
        (1, 1)
    );
}

/// Expectation ids are scoped to the raising agent: two agents of one tenant may have lapse tasks
/// with the same `messageId`. Each goes to its own agent, and each is recorded on its own entry.
#[tokio::test]
async fn two_agents_with_the_same_message_id_each_get_their_lapse_task() {
    let agent_a = spawn_capture_agent(Behaviour::always(Reply::task(
        "task-booking",
        TaskState::Submitted,
    )))
    .await;
    let agent_b = spawn_capture_agent(Behaviour::always(Reply::task(
        "task-other",
        TaskState::Working,
    )))
    .await;
    let other_agent = AgentId::parse("other").unwrap();
    let mine = lapse_entry("exp-shared");
    let mut theirs = lapse_entry("exp-shared");
    theirs.agent = other_agent.clone();
    assert_eq!(mine.message_id, theirs.message_id);
    let store = store_with(vec![mine.clone(), theirs.clone()]).await;
    let mut endpoints = endpoints(agent_a.endpoint(None));
    endpoints.insert((tenant(), other_agent.clone()), agent_b.endpoint(None));
    let sub = submitter(RetryPolicy::default(), None);
    let lanes = [(tenant(), booking()), (tenant(), other_agent)];

    let r = lane_passes(&sub, &store, &endpoints, t0(), &lanes).await;
    assert_eq!((r[0].delivery.sent, r[1].delivery.sent), (1, 1), "{r:?}");
    assert_eq!(
        (
            agent_a.sent_message_ids().len(),
            agent_b.sent_message_ids().len()
        ),
        (1, 1)
    );
    assert_eq!(agent_a.requests()[0].message_id().unwrap(), mine.message_id);
    assert_eq!(agent_b.requests()[0].message_id().unwrap(), mine.message_id);
    let (a, b) = (get(&store, &mine).await, get(&store, &theirs).await);
    assert_eq!(a.task_id.as_deref(), Some("task-booking"));
    assert_eq!(b.task_id.as_deref(), Some("task-other"));
    assert_eq!(b.task_state.as_deref(), Some("TASK_STATE_WORKING"));

    // Neither is sent again, by a pass or by name.
    let r = lane_passes(&sub, &store, &endpoints, plus_secs(t0(), 600), &lanes).await;
    assert!(
        r.iter().all(|r| r.delivery == DeliveryReport::default()),
        "{r:?}"
    );
    for e in [&mine, &theirs] {
        assert_eq!(
            deliver_entry(&sub, &store, &endpoints, e, t0()).await,
            EntryOutcome::Skipped {
                delivery: Some(DeliveryState::Sent)
            }
        );
    }
    assert_eq!(
        (
            agent_a.sent_message_ids().len(),
            agent_b.sent_message_ids().len()
        ),
        (1, 1)
    );
}

/// serve spawns its lanes on tokio, and the Lambda holds `&dyn Store`: a lane's pass and the
/// send entry point must be `Send` over trait objects.
#[test]
fn passes_are_send_over_trait_objects() {
    fn assert_send<T: Send>(_: &T) {}
    let store = MemoryStore::new();
    let store: &dyn watcher_runtime::store::Store = &store;
    let endpoints: std::sync::Arc<dyn Endpoints> = std::sync::Arc::new(endpoints(
        AgentEndpoint::configured("http://127.0.0.1:9/", None),
    ));
    let sub = submitter(RetryPolicy::default(), None);
    let (tenant, agent) = (tenant(), booking());
    let clock = FakeClock::new(t0());
    let lane = Lane {
        tenant: &tenant,
        agent: &agent,
        store,
        submitter: &sub,
        endpoints: &*endpoints,
        reconciler: None,
        slots: None,
        per_agent: 4,
        batch: BATCH,
    };
    let pass = lane.pass(&clock, None);
    assert_send(&pass);
    let ids = (&tenant, &agent, "m");
    let one = sub.deliver_read_with(
        store,
        &*endpoints,
        sub.buckets(),
        ids,
        None,
        watcher_delivery::deliver::Places::none(),
        t0(),
    );
    assert_send(&one);
}

/// An agent whose card offers only A2A 0.3 is sent `message/send` with the 0.3 message shape,
/// and its bare-Task answer (with `kind`, a lowercase state) is a delivered task.
#[tokio::test]
async fn a_0_3_agent_is_sent_message_send() {
    let answer = serde_json::json!({ "jsonrpc": "2.0", "id": "x", "result": {
        "kind": "task", "id": "task-v03", "contextId": "ctx",
        "status": { "state": "submitted" } } });
    let agent = spawn_capture_agent(Behaviour::from_fn(move |_, req| {
        let mut a = answer.clone();
        a["id"] = req.rpc_id();
        Reply::http(200, a.to_string())
    }))
    .await;
    let (entry, store) = one_lapse_task("exp-v03").await;
    let endpoint = agent
        .endpoint(None)
        .speaking(watcher_delivery::endpoint::Protocol::V03);
    let endpoints = endpoints(endpoint);
    let sub = submitter(RetryPolicy::default(), None);
    let r = pass(&sub, &store, &endpoints, t0()).await;
    assert_eq!((r.sent, r.retried, r.failed), (1, 0, 0));
    let done = get(&store, &entry).await;
    assert_eq!(done.delivery, DeliveryState::Sent);
    assert_eq!(done.task_id.as_deref(), Some("task-v03"));

    let req = &agent.requests()[0];
    assert_eq!(req.rpc_method().as_deref(), Some("message/send"));
    assert_eq!(req.header("a2a-version"), None, "0.3 has no version header");
    assert!(req.header("x-a2a-extensions").is_some());
    let body = req.json().expect("JSON");
    let message = &body["params"]["message"];
    assert_eq!(message["kind"], "message");
    assert_eq!(message["role"], "user");
    assert_eq!(message["messageId"], entry.message_id.as_str());
    assert_eq!(message["parts"][0]["kind"], "text");
    assert_eq!(body["params"]["configuration"]["blocking"], false);
}
