//! `Watcher::report_facts`: a request's warnings are kept in the facts' own commit, so both are
//! recorded or neither (expectations-v1 §9; docs/interpretation.md "Warnings are kept with the
//! rejections").

use std::sync::Arc;

use watcher_core::fact::{parse_fact, Fact};
use watcher_core::ids::{Source, Tenant};
use watcher_core::settings::Settings;
use watcher_core::time::Instant;
use watcher_runtime::directory::Directory;
use watcher_runtime::facts::source_key;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Rejections;
use watcher_runtime::watcher::Watcher;

fn fact(source: &Source) -> Fact {
    parse_fact(
        &serde_json::json!({ "factKey": "shipment.manifest.received:PA-1",
            "observedAt": "2026-09-10T09:59:00Z", "subject": { "type": "shipment", "id": "PA-1" } }),
        source,
    )
    .expect("a fact")
}

#[tokio::test]
async fn warnings_are_recorded_with_the_facts_or_not_at_all() {
    let store = Arc::new(MemoryStore::new());
    let watcher = Watcher::new(store.clone(), Directory::new(), Settings::default());
    let tenant = Tenant::parse("default").expect("tenant");
    let source = Source::parse("carrier-feed").expect("source");
    let now = Instant::parse("2026-09-10T10:00:00Z").expect("instant");
    let warnings = vec!["member `colour` of a fact is not defined; ignored".to_owned()];
    let key = source_key(source.as_str()).expect("source key");

    store.fail_writes(true);
    let failed = watcher
        .report_facts(&tenant, &source, vec![fact(&source)], warnings.clone(), now)
        .await;
    assert!(failed.is_err(), "the store refused the commit");
    store.fail_writes(false);
    assert!(
        store
            .rejections(&tenant, &key)
            .await
            .expect("read")
            .is_empty(),
        "no warning kept without its facts"
    );

    let outcome = watcher
        .report_facts(&tenant, &source, vec![fact(&source)], warnings.clone(), now)
        .await
        .expect("recorded");
    assert_eq!(outcome.results.len(), 1);
    assert_eq!(outcome.warnings, warnings);
    let kept = store.rejections(&tenant, &key).await.expect("read");
    assert_eq!(kept.len(), 1);
    assert!(kept[0].warning);
    assert_eq!(kept[0].reason, warnings[0]);
    assert_eq!(
        serde_json::to_value(&outcome).expect("json"),
        serde_json::json!({
            "results": [{ "factKey": "shipment.manifest.received:PA-1", "satisfied": [] }],
            "warnings": warnings,
        })
    );
}
