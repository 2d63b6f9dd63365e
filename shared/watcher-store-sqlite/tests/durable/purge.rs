//! A large purge goes in batches, and requests proceed between them.

use super::*;
use watcher_runtime::store::LapseLog;

/// The purge deletes in batches, each its own transaction, and the connection is free between
/// them: 1,300 purgeable subjects and 1,300 sent lapse tasks at batches of 500 take 3 + 3 batches
/// (plus the tasks' and rejections' tables), and at every boundary a request (a commit and a
/// read) goes through and sees a state in between — some deleted, some not yet (counts of
/// batches and rows, never time).
#[tokio::test]
async fn a_large_purge_goes_in_batches_and_requests_proceed_between_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(SqliteStore::open(dir.path().join("w.db")).unwrap());
    let t = tenant();
    // Closed (withdrawn) records last active long before the purge's `before`.
    let old = instant("2026-09-10T12:00:00Z");
    let mut subjects = Vec::new();
    for i in 0..1300 {
        let mut rec = record(
            &format!("exp-{i}"),
            &format!("S-{i}"),
            "2026-01-01T01:00:00Z",
            None,
            i + 1,
        );
        rec.status = Status::Withdrawn;
        rec.withdrawal = Some(watcher_core::record::Withdrawal {
            withdrawn_at: instant("2026-09-10T12:00:00Z"),
            reason: "the task was canceled".into(),
        });
        subjects.push(state_with(vec![rec], &format!("S-{i}")));
    }
    for chunk in subjects.chunks(500) {
        commit_subjects(&store, &t, chunk.to_vec()).await;
    }
    let outbox: Vec<OutboxEntry> = (0..1300)
        .map(|i| {
            let mut o = entry(&format!("lapse:{i}"));
            o.delivery = DeliveryState::Sent;
            o.lapsed_at = old;
            o.next_attempt_at = old;
            o
        })
        .collect();
    store.commit(&t, Commit::of_outbox(outbox)).await.unwrap();

    let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
    let report = store
        .purge_batched(instant("2027-01-01T00:00:00Z"), 500, |n| {
            let store = Arc::clone(&store);
            let t = t.clone();
            let seen = Arc::clone(&seen);
            async move {
                // A request between batches: a commit and reads, on the same store.
                let live = state_with(
                    vec![record(
                        &format!("new-{n}"),
                        &format!("NEW-{n}"),
                        "2027-06-01T00:00:00Z",
                        None,
                        10_000 + n,
                    )],
                    &format!("NEW-{n}"),
                );
                store
                    .commit(&t, Commit::of_subjects(vec![live]))
                    .await
                    .expect("a commit between two batches of the purge");
                let first = store.subject(&t, &subject("S-0")).await.unwrap().is_some();
                let last = store
                    .subject(&t, &subject("S-999"))
                    .await
                    .unwrap()
                    .is_some();
                let lapses = store.lapses(&t).await.unwrap().len();
                seen.lock().unwrap().push((n, first, last, lapses));
            }
        })
        .await
        .unwrap();
    assert_eq!(report.subjects, 1300);
    assert_eq!(report.outbox, 1300);
    let seen = seen.lock().unwrap().clone();
    // Subjects: 500, 500, 300 rows looked at (the new subjects sort after the S- ones); tasks,
    // outbox 500, 500, 300, rejections: 3 + 1 + 3 + 1 batches.
    assert_eq!(seen.len(), 8, "{seen:?}");
    assert!(
        !seen[0].1,
        "after the first batch S-0 is gone: the batch was committed on its own"
    );
    assert!(
        seen[0].2,
        "after the first batch S-999 is still there: {seen:?}"
    );
    assert_eq!(
        seen[0].3, 1300,
        "the lapse tasks wait for their own batches"
    );
    assert_eq!(seen[4].3, 800, "one batch of lapse tasks done: {seen:?}");
    for n in 1..=8u64 {
        assert!(
            store
                .subject(&t, &subject(&format!("NEW-{n}")))
                .await
                .unwrap()
                .is_some(),
            "the commit made between batches {n} and {} is kept",
            n + 1
        );
    }
}
