//! Retention (expectations-v1 §14) by TTL: what expires and when.

use super::*;

#[tokio::test]
async fn closed_subjects_finished_tasks_sent_lapses_and_rejections_expire() {
    let store = store().await;
    let ttl = store
        .client()
        .describe_time_to_live()
        .table_name(store.table())
        .send()
        .await
        .expect("describe TTL");
    let ttl = ttl.time_to_live_description.expect("a TTL description");
    assert_eq!(ttl.time_to_live_status, Some(TimeToLiveStatus::Enabled));
    assert_eq!(ttl.attribute_name.as_deref(), Some("expiresAt"));

    let t = tenant("tenant-a");
    let satisfied = shipment("PA-SAT");
    let withdrawn = shipment("PA-WD");
    let lapsed = shipment("PA-LAPSED");
    let open = shipment("PA-OPEN");
    store
        .commit(
            &t,
            subjects_only(vec![
                subject_with_record(&t, "PA-SAT", 1),
                subject_with_record(&t, "PA-WD", 2),
                subject_with_record(&t, "PA-LAPSED", 3),
                subject_with_record(&t, "PA-OPEN", 4),
            ]),
        )
        .await
        .expect("create the subjects");
    for s in [&satisfied, &withdrawn, &lapsed, &open] {
        assert_eq!(
            expires_at(&raw_subject(&store, s).await),
            None,
            "{s}: a record that can lapse keeps its subject"
        );
    }

    // Satisfied at 30 (the fact received then), withdrawn at 40, lapsed overdue at 61 and
    // stalled at 181 (open, no timer left).
    let mut sat = load_one(&store, &t, &satisfied).await;
    sat.facts.push(fact("manifest:PA-SAT", &satisfied, at(30)));
    sat.records[0].status = Status::Satisfied;
    sat.records[0].satisfaction = Some(Satisfaction {
        fact_key: FactKey::parse("manifest:PA-SAT").expect("a valid fact key"),
        source: Source::parse("carrier-feed:test").expect("a valid source"),
        satisfied_at: at(30),
        observed_at: at(30),
        claimed_observed_at: None,
        late: false,
    });
    sat.last_satisfying_receipt = Some(at(30));
    let mut wd = load_one(&store, &t, &withdrawn).await;
    wd.records[0].status = Status::Withdrawn;
    wd.records[0].withdrawal = Some(Withdrawal {
        withdrawn_at: at(40),
        reason: "task task-1 was canceled".into(),
    });
    let mut lp = load_one(&store, &t, &lapsed).await;
    for (kind, when) in [(LapseKind::Overdue, at(61)), (LapseKind::Stalled, at(181))] {
        lp.records[0].lapses.push(LapseEntry {
            lapse: kind,
            lapsed_at: when,
            message_id: format!("lapse:exp-PA-LAPSED:{}:{}", kind.as_str(), at(60)),
            due_at: at(60),
        });
    }
    lp.records[0].horizon_checked = true;
    store
        .commit(&t, subjects_only(vec![sat, wd, lp]))
        .await
        .expect("close three subjects");
    assert_eq!(
        expires_at(&raw_subject(&store, &satisfied).await),
        Some(retained_until(at(30)))
    );
    assert_eq!(
        expires_at(&raw_subject(&store, &withdrawn).await),
        Some(retained_until(at(40)))
    );
    assert_eq!(
        expires_at(&raw_subject(&store, &lapsed).await),
        Some(retained_until(at(181)))
    );
    assert_eq!(expires_at(&raw_subject(&store, &open).await), None);

    // A new open record on a closed subject keeps it again.
    let mut again = load_one(&store, &t, &satisfied).await;
    again.records.push(record(&t, "exp-again", "PA-SAT", 9));
    store
        .commit(&t, subjects_only(vec![again]))
        .await
        .expect("reopen the subject");
    assert_eq!(expires_at(&raw_subject(&store, &satisfied).await), None);

    // Tasks: kept while running, expire after a terminal status.
    let task = TaskRef {
        agent: agent("booking"),
        task_id: TaskId::parse("task-1").expect("a valid task id"),
    };
    let mut rec = TaskRecord::new(task.clone());
    rec.statuses.push(StatusSeen {
        state: "TASK_STATE_WORKING".into(),
        at: at(1),
        received_at: at(1),
        timestamp: None,
        seq: 0,
        given_timestamp: None,
    });
    store
        .commit(&t, Commit::of_tasks(vec![rec.clone()]))
        .await
        .expect("a running task");
    assert_eq!(expires_at(&raw_items(&store, "task").await[0]), None);
    rec.version = 1;
    rec.statuses.push(StatusSeen {
        state: "TASK_STATE_COMPLETED".into(),
        at: at(50),
        received_at: at(51),
        timestamp: None,
        seq: 0,
        given_timestamp: None,
    });
    store
        .commit(&t, Commit::of_tasks(vec![rec]))
        .await
        .expect("a completed task");
    assert_eq!(
        expires_at(&raw_items(&store, "task").await[0]),
        Some(retained_until(at(51)))
    );

    // Lapse tasks: kept while queued, expire once sent; rejections expire.
    let queued = outbox_entry(&t, "lapse:exp-1:overdue:x", DeliveryState::Queued);
    store
        .commit(
            &t,
            Commit {
                outbox: vec![queued.clone()],
                rejections: vec![Rejection {
                    agent: agent("booking"),
                    expectation_id: Some("exp-bad".into()),
                    reason: "field `dueAt`: missing".into(),
                    task_id: None,
                    at: at(7),
                    warning: false,
                }],
                ..Commit::default()
            },
        )
        .await
        .expect("a lapse task and a rejection");
    assert_eq!(expires_at(&raw_items(&store, "outbox").await[0]), None);
    assert_eq!(
        expires_at(&raw_items(&store, "rejections").await[0]),
        Some(retained_until(at(7)))
    );
    let mut sent = queued.clone();
    sent.delivery = DeliveryState::Sent;
    sent.attempts = 1;
    sent.next_attempt_at = at(62);
    store.outbox_update(&sent).await.expect("mark sent");
    assert_eq!(
        expires_at(&raw_items(&store, "outbox").await[0]),
        Some(retained_until(at(62)))
    );
    assert_eq!(
        raw_items(&store, "outbox").await[0].get("queued"),
        None,
        "a sent entry has no queued attribute"
    );
}
