//! An input is ordered after every input already recorded on the subjects it touches, whatever
//! number the store answered for it (`watcher_runtime::sequence::above_slice`;
//! docs/interpretation.md "Raising order without a counter"): a store whose numbers come from
//! the clocks of several processes (DynamoDB) may answer a number below one another process
//! stored a moment ago.

use std::sync::Arc;
use watcher_runtime::store::Records as _;

use crate::common::apply_raise;
use watcher_core::ids::{Subject, Tenant};
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::directory::Directory;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Commit;
use watcher_runtime::watcher::Watcher;

#[tokio::test]
async fn an_input_numbered_below_one_recorded_on_its_subject_is_ordered_after_it() {
    let store = Arc::new(MemoryStore::new());
    let watcher = Watcher::new(Arc::clone(&store), Directory::new(), Settings::default());
    let t = Tenant::parse("tenant-a").expect("tenant");
    let subject = Subject::parse("shipment", "PA-1").expect("subject");
    let t0 = Instant::parse("2026-09-10T12:00:00Z").expect("instant");
    apply_raise(&watcher, &t, ("e-1", "PA-1", "2026-09-10T13:00:00Z"), t0).await;
    // Another process, whose clock runs ahead, numbered that raise far above this store's count.
    let ahead = 1u64 << 61;
    let mut state = store
        .subject(&t, &subject)
        .await
        .expect("subject")
        .expect("stored");
    state.records[0].order.input = ahead;
    store
        .commit(
            &t,
            Commit {
                subjects: vec![state],
                ..Commit::default()
            },
        )
        .await
        .expect("rewrite the order");

    apply_raise(&watcher, &t, ("e-2", "PA-1", "2026-09-10T13:00:00Z"), t0).await;
    let state = store
        .subject(&t, &subject)
        .await
        .expect("subject")
        .expect("stored");
    let orders: Vec<(String, u64)> = state
        .records
        .iter()
        .map(|r| (r.expectation.expectation_id.to_string(), r.order.input))
        .collect();
    assert_eq!(orders.len(), 2, "{orders:?}");
    assert_eq!(orders[0], ("e-1".to_owned(), ahead));
    assert_eq!(
        orders[1],
        ("e-2".to_owned(), ahead + 1),
        "the later raise is ordered after the earlier one on its subject"
    );
}
