//! The conformance checks of the outbox's read side ([`crate::store::LapseLog`]): the lapse pages
//! with their filters and cursors, and the newest position a notification channel starts from.

use super::outbox::{all_pages, commit_outbox, ids, numbered_entries};
use super::*;

/// A tenant's newest lapse position is the last one `lapses_page` answers; `None` before any;
/// another tenant's lapse tasks do not count (notification channels start there).
pub async fn last_lapse_position_is_the_newest<S: Store + 'static>(store: Arc<S>) {
    let (a, b) = (tenant("tenant-a"), tenant("tenant-b"));
    assert_eq!(
        store
            .last_lapse_position(&a)
            .await
            .expect("last_lapse_position"),
        None,
        "no lapse task yet"
    );
    for (i, t) in [(1, &a), (2, &a), (3, &b)] {
        store
            .commit(
                t,
                Commit::of_outbox(vec![outbox_entry(
                    t,
                    &format!("lapse:exp-{i}:overdue:x"),
                    at(i),
                )]),
            )
            .await
            .expect("commit a lapse task");
    }
    let page = store
        .lapses_page(
            &a,
            &LapseQuery {
                limit: 10,
                ..LapseQuery::default()
            },
        )
        .await
        .expect("lapses_page");
    assert_eq!(page.entries.len(), 2);
    assert_eq!(
        store
            .last_lapse_position(&a)
            .await
            .expect("last_lapse_position"),
        page.entries.last().map(|(p, _)| *p),
        "the newest of this tenant's, not the other tenant's"
    );
    assert!(store
        .last_lapse_position(&b)
        .await
        .expect("last_lapse_position")
        .is_some());
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

/// Every delivery state the lapse list shows ([`DeliveryState::ALL`]) is a filter of
/// `lapses_page`, alone and with `agent`: 100 lapse tasks, `i` in state `ALL[i % 5]` (the
/// `unaddressed` ones committed so, as the authority's lapses are; the others queued, then moved
/// by `outbox_update` as delivery and reconciliation move them), paged 4 at a time, give exactly
/// the matching ones in order of lapse. The filter is applied within the page's bounded look
/// ([`crate::store::lapse_scan_budget`]), never by reading the whole outbox.
pub async fn lapses_filter_by_every_delivery_state<S: Store + 'static>(store: Arc<S>) {
    let t = tenant("tenant-states");
    let mut entries = numbered_entries(&t, "s", 0, 100);
    for (i, o) in entries.iter_mut().enumerate() {
        if DeliveryState::ALL[i % DeliveryState::ALL.len()] == DeliveryState::Unaddressed {
            o.delivery = DeliveryState::Unaddressed;
        }
    }
    commit_outbox(&*store, &t, entries.clone()).await;
    for (i, o) in entries.iter_mut().enumerate() {
        let state = DeliveryState::ALL[i % DeliveryState::ALL.len()];
        if o.delivery != state {
            o.delivery = state;
            store.outbox_update(o).await.expect("update");
        }
    }
    for state in DeliveryState::ALL {
        for who in [None, Some(agent("billing"))] {
            let query = LapseQuery {
                limit: 4,
                delivery: Some(state),
                agent: who.clone(),
                ..LapseQuery::default()
            };
            let (got, _) = all_pages(&*store, &t, query.clone(), 100).await;
            let want: Vec<&OutboxEntry> = entries.iter().filter(|o| query.matches(o)).collect();
            assert_eq!(
                ids(&got),
                want.iter()
                    .map(|o| o.message_id.clone())
                    .collect::<Vec<_>>(),
                "delivery {state}, agent {who:?}: exactly the matching lapse tasks, in order"
            );
            assert_eq!(
                got.len(),
                if who.is_some() { 10 } else { 20 },
                "delivery {state}, agent {who:?}"
            );
            assert!(got.iter().all(|o| o.delivery == state));
        }
    }
}
