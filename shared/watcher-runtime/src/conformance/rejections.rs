//! The conformance checks of rejections per tenant and agent.

use super::*;

/// Rejections are kept per tenant and agent, oldest first, across commits.
pub async fn rejections_per_tenant_and_agent<S: Store + 'static>(store: Arc<S>) {
    let a = tenant("tenant-a");
    let b = tenant("tenant-b");
    let r1 = rejection("booking", "r1", at(2));
    let r2 = rejection("pricing", "r2", at(1));
    let r3 = rejection("booking", "r3", at(1));
    let r4 = rejection("booking", "r4", at(0));
    let r5 = Rejection {
        expectation_id: None,
        task_id: None,
        ..rejection("booking", "r5", at(3))
    };
    store
        .commit(
            &a,
            Commit::of_rejections(vec![r1.clone(), r2.clone(), r3.clone()]),
        )
        .await
        .expect("commit rejections");
    store
        .commit(&b, Commit::of_rejections(vec![r4.clone()]))
        .await
        .expect("commit rejections");
    store
        .commit(&a, Commit::of_rejections(vec![r5.clone()]))
        .await
        .expect("commit rejections");
    let got = |t: &Tenant, name: &str| {
        let store = Arc::clone(&store);
        let t = t.clone();
        let name = name.to_owned();
        async move {
            store
                .rejections(&t, &agent(&name))
                .await
                .expect("rejections")
        }
    };
    assert_eq!(
        got(&a, "booking").await,
        vec![r1.clone(), r3.clone(), r5.clone()],
        "oldest (first kept) first, across commits"
    );
    assert_eq!(got(&a, "pricing").await, vec![r2]);
    assert_eq!(got(&b, "booking").await, vec![r4]);
    assert!(got(&b, "pricing").await.is_empty());

    // In pages of 2: r1, r3, then r5 with no next page; each exactly once.
    let (first, next) = store
        .rejections_page(&a, &agent("booking"), None, 2)
        .await
        .expect("rejections_page");
    let first: Vec<Rejection> = first.into_iter().map(|(_, r)| r).collect();
    assert_eq!(first, vec![r1, r3]);
    assert!(next.is_some(), "a third rejection remains");
    let (second, end) = store
        .rejections_page(&a, &agent("booking"), next, 2)
        .await
        .expect("rejections_page");
    let second: Vec<Rejection> = second.into_iter().map(|(_, r)| r).collect();
    assert_eq!(second, vec![r5]);
    assert_eq!(end, None, "the last page has no next");
}
