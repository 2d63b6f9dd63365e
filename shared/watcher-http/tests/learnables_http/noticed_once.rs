//! Each period of an expiring value in force is noticed once (expectations-v1 §16;
//! docs/interpretation.md "Lessons whose end is noticed"): the property of
//! `learnables_store::conformance::reviews`, carried through to the watcher. Random sequences of
//! lessons with and without `expiresAt`, undos, activations, tombstones and time passing go to
//! the authority's core; what each step opened and closed goes to the watcher through
//! [`WatcherReviews`] (as `serve` and the `lesson-write` function do); the watcher's timers are
//! fired at each step's instant. After each step, every period the model has seen has lapsed
//! (`overdue`, a lapse task no agent receives) exactly once if its expiry passed while its value
//! was in force, and never otherwise. On the memory store and on SQLite.

use std::collections::BTreeMap;

use learnables::review_changes;
use learnables_store::conformance::reviews::{self, Model};
use learnables_store::{DefinitionStore, MemoryDefinitionStore};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use tokio::sync::Notify;
use watcher_core::settings::Settings;
use watcher_http::lesson_reviews::{LessonReviews, WatcherReviews};
use watcher_runtime::directory::Directory;
use watcher_runtime::memory::MemoryStore;
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;
use watcher_store_sqlite::SqliteStore;

use super::*;

fn fail(what: &str) -> impl Fn(String) -> TestCaseError + '_ {
    move |e| TestCaseError::fail(format!("{what}: {e}"))
}

/// One sequence against a watcher over `store`.
async fn sequence(store: Arc<dyn Store>, ops: &[reviews::Op]) -> Result<(), TestCaseError> {
    let definitions = MemoryDefinitionStore::new();
    let tenant = TenantId::parse("acme").map_err(|e| fail("tenant")(e.to_string()))?;
    let id = DefinitionId::parse("prealert-triage").map_err(|e| fail("id")(e.to_string()))?;
    let first = reviews::starting_definition("acme");
    definitions
        .create(&tenant, &id, &first)
        .await
        .map_err(|e| fail("create")(e.to_string()))?;
    let at = |t: jiff::Timestamp| Instant::from_timestamp(t).expect("in range");
    let clock = Arc::new(FakeClock::new(at(reviews::start())));
    let watcher: Arc<Watcher<dyn Store>> = Arc::new(Watcher::new(
        store.clone(),
        Directory::new(),
        Settings::default(),
    ));
    let told = WatcherReviews {
        owners: Default::default(),
        watcher: watcher.clone(),
        clock: clock.clone(),
        wake: Arc::new(Notify::new()),
    };
    let watcher_tenant = Tenant::parse("acme").map_err(fail("tenant"))?;
    let mut model = Model::new(reviews::start());
    let mut before = first;
    for (i, op) in ops.iter().enumerate() {
        let request = model.apply(op);
        let now = at(model.now());
        clock.set(now);
        let done = reviews::carry_out(&definitions, &tenant, &id, &request, model.now()).await;
        prop_assert_eq!(done, reviews::expected(&request), "step {} {:?}", i, op);
        let after = definitions
            .get(&tenant, &id)
            .await
            .map_err(|e| fail("get")(e.to_string()))?
            .ok_or_else(|| TestCaseError::fail("the definition is gone"))?;
        told.reviewed(&tenant, &id, &review_changes(&before, &after))
            .await
            .map_err(fail("told"))?;
        watcher
            .fire_due(now)
            .await
            .map_err(|e| fail("fire")(e.to_string()))?;
        let mut lapses: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for entry in store
            .lapses(&watcher_tenant)
            .await
            .map_err(|e| fail("lapses")(e.to_string()))?
        {
            lapses
                .entry(entry.expectation_id.to_string())
                .or_default()
                .push(entry.lapse.as_str().to_owned());
        }
        let mut expected: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for p in model.periods() {
            if p.noticed_by(model.now()) {
                expected.insert(
                    format!("lesson.review:{}", p.subject_id(id.as_str())),
                    vec!["overdue".to_owned()],
                );
            }
        }
        prop_assert_eq!(
            &lapses,
            &expected,
            "after step {} {:?} at {} of {:?}",
            i,
            op,
            now,
            ops
        );
        before = after;
    }
    Ok(())
}

fn run_on(make: fn() -> Arc<dyn Store>, ops: &[reviews::Op]) -> Result<(), TestCaseError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(sequence(make(), ops))
}

fn memory() -> Arc<dyn Store> {
    Arc::new(MemoryStore::new())
}

fn sqlite() -> Arc<dyn Store> {
    Arc::new(SqliteStore::memory().expect("an in-memory database"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn each_period_of_an_expiring_value_in_force_is_noticed_once(ops in reviews::ops()) {
        run_on(memory, &ops)?;
    }

    #[test]
    fn each_period_is_noticed_once_on_sqlite(ops in reviews::ops()) {
        run_on(sqlite, &ops)?;
    }
}
