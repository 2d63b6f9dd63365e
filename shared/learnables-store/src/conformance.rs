//! The definition store conformance suite: the checks every [`DefinitionStore`] passes (style.md,
//! "one core, many adapters, one conformance suite").
//!
//! Each check is a public async function taking a fresh store;
//! [`definition_store_conformance!`](crate::definition_store_conformance) expands to one
//! `#[tokio::test]` per check, so a backend's test file is one line:
//!
//! ```ignore
//! learnables_store::definition_store_conformance!(learnables_store::MemoryDefinitionStore::new());
//! ```
//!
//! The expression is evaluated once per test and may give a store or a [`Guarded`] store (a
//! store plus something that must outlive it, such as a temporary directory). The caller's
//! crate needs `tokio` (features `macros`, `rt-multi-thread`) as a dev-dependency.
//!
//! The checks are test code: they panic, with a message naming the rule broken.

use std::sync::Arc;

use learnables::{
    active, create, history, show_back, teach, Collections, DefinitionId, DefinitionState,
    HistoryKind, Lesson, LessonDto, LessonResult, Registry, TaughtBy, TenantId, Via,
};
use serde_json::{json, Value};
use tokio::sync::Barrier;

use crate::{absorb_with_retry, AbsorbError, Absorbed, DefinitionStore, DefinitionStoreError};

pub mod reviews;
pub use reviews::reviews_follow_the_entrys_history;

/// What a check gets from the expression given to
/// [`definition_store_conformance!`](crate::definition_store_conformance): the store under test
/// and a guard kept alive until the check ends.
pub trait Fixture {
    /// The store under test.
    type Store: DefinitionStore + 'static;
    /// Dropped after the check.
    type Guard;
    /// Splits the fixture into a shared store and its guard.
    fn split(self) -> (Arc<Self::Store>, Self::Guard);
}

impl<S: DefinitionStore + 'static> Fixture for S {
    type Store = S;
    type Guard = ();
    fn split(self) -> (Arc<S>, ()) {
        (Arc::new(self), ())
    }
}

/// A store with something that must outlive it, such as the `tempfile::TempDir` its database
/// file lives in.
pub struct Guarded<S, G> {
    /// The store under test.
    pub store: S,
    /// Kept alive, then dropped, after the check.
    pub guard: G,
}

impl<S: DefinitionStore + 'static, G> Fixture for Guarded<S, G> {
    type Store = S;
    type Guard = G;
    fn split(self) -> (Arc<S>, G) {
        (Arc::new(self.store), self.guard)
    }
}

/// Expands to one `#[tokio::test]` (multi-threaded runtime) per conformance check, each on a
/// fresh store made by evaluating `$make` (a [`DefinitionStore`](crate::DefinitionStore) or a
/// [`Guarded`](crate::conformance::Guarded) one).
///
/// Call it at most once per module; wrap calls for several setups in their own modules.
#[macro_export]
macro_rules! definition_store_conformance {
    ($make:expr) => {
        $crate::definition_store_conformance!(@checks $make;
            create_then_get,
            create_twice_conflicts,
            stale_replace_conflicts_and_changes_nothing,
            racing_writers_lose_no_lesson,
            absorb_with_retry_under_contention,
            absorb_with_retry_refusals_write_nothing,
            tenants_are_separate,
            unicode_forms_are_one_text,
            reviews_follow_the_entrys_history,
        );
    };
    (@checks $make:expr; $($check:ident),+ $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn $check() {
                let (store, _guard) = $crate::conformance::Fixture::split($make);
                $crate::conformance::$check(store).await;
            }
        )+
    };
}

// ---------------------------------------------------------------------------------------------
// Test data, also for the stores' own tests.

/// The person every lesson of the suite is taught by (`taughtBy`).
pub const DANA: &str = "dana@warehouse.example";

/// `minute` minutes after 2026-08-17T09:00:00Z, the instant the suite's definitions are made.
pub fn now(minute: i64) -> jiff::Timestamp {
    jiff::Timestamp::from_second(1_786_957_200 + minute * 60).expect("a fixed instant")
}

/// The credential every write of the suite comes through, `teacher-console`.
pub fn via() -> Via {
    Via::parse("teacher-console").expect("a credential id")
}

/// The tenant `name` (e.g. `acme`).
pub fn tenant(name: &str) -> TenantId {
    TenantId::parse(name).expect("a tenant")
}

/// The one definition id of the suite, `prealert-triage`.
pub fn definition_id() -> DefinitionId {
    DefinitionId::parse("prealert-triage").expect("an id")
}

/// Definition `prealert-triage` of `tenant_name` at version 1 with the wire `collections`,
/// created by [`DANA`] through [`via`] at [`now`]`(0)`.
pub fn definition_with(
    tenant_name: &str,
    collections: &Value,
    registry: &Registry,
) -> DefinitionState {
    create(
        tenant(tenant_name),
        definition_id(),
        Collections::parse(collections, registry).expect("valid collections"),
        TaughtBy::parse(DANA).expect("a person"),
        via(),
        None,
        now(0),
        registry,
    )
    .expect("created")
}

/// [`definition_with`] one `marks` collection, `customers`, holding `northgate` with one mark
/// (`@northgate-motors\.example` on `from`).
pub fn definition(tenant_name: &str, registry: &Registry) -> DefinitionState {
    definition_with(
        tenant_name,
        &json!({ "customers": {
            "learnable": "marks", "entry": "customer",
            "teaches": "which customer a message belongs to",
            "entries": { "northgate": { "label": "Northgate Motors Ltd", "value": { "marks": [
                { "pattern": "@northgate-motors\\.example", "where": "from" }
            ] } } }
        } }),
        registry,
    )
}

/// A lesson by [`DANA`] adding the mark `pattern` (on `from`) to `northgate` of [`definition`].
pub fn mark_lesson(pattern: &str) -> Lesson {
    Lesson::try_from(LessonDto {
        collection: "customers".into(),
        entry: "northgate".into(),
        value: json!({ "pattern": pattern, "where": "from" }),
        taught_by: DANA.into(),
        reason: Some(format!("teaching {pattern}")),
        expires_at: None,
    })
    .expect("a well-formed lesson")
}

/// Teaches `lesson` to definition [`definition_id`] of `tenant` through [`via`] at
/// [`now`]`(minute)`, with [`absorb_with_retry`].
///
/// # Errors
/// As [`absorb_with_retry`].
pub async fn absorb_lesson<S: DefinitionStore + ?Sized>(
    store: &S,
    tenant: &TenantId,
    lesson: &Lesson,
    minute: i64,
    registry: &Registry,
) -> Result<Absorbed<LessonResult>, AbsorbError> {
    absorb_with_retry(store, tenant, &definition_id(), |s| {
        teach(s, lesson, via(), now(minute), registry)
    })
    .await
}

/// The patterns of northgate's marks in the active version of a [`definition`].
pub fn active_patterns(state: &DefinitionState) -> Vec<String> {
    let served = active(state).expect("an active version");
    let value: Value = served
        .collections
        .get("customers")
        .and_then(|c| c.entry("northgate"))
        .map(|e| e.value().clone())
        .expect("northgate");
    value["marks"]
        .as_array()
        .expect("marks")
        .iter()
        .filter_map(|m| m["pattern"].as_str().map(str::to_owned))
        .collect()
}

/// Asserts that the lessons of two racing writers, marks `writer-a\.example` and
/// `writer-b\.example` taught on version 1 of a [`definition`], both landed: two new versions,
/// the last active, both marks in it.
pub fn assert_both_writers_landed(last: &DefinitionState) {
    assert_eq!(last.latest_version(), 3, "two lessons, two new versions");
    assert_eq!(last.active_version(), 3);
    let patterns = active_patterns(last);
    for p in ["writer-a\\.example", "writer-b\\.example"] {
        assert!(
            patterns.iter().any(|q| q == p),
            "{p} is in the active version: {patterns:?}"
        );
    }
}

/// The `describes` lines of every lesson in the history.
fn lesson_lines(state: &DefinitionState) -> Vec<String> {
    history(state)
        .iter()
        .filter(|h| h.kind() == HistoryKind::Lesson)
        .filter_map(|h| h.describes().map(str::to_owned))
        .collect()
}

async fn stored<S: DefinitionStore + ?Sized>(store: &S, tenant_name: &str) -> DefinitionState {
    store
        .get(&tenant(tenant_name), &definition_id())
        .await
        .expect("the store answers")
        .expect("the definition is stored")
}

// ---------------------------------------------------------------------------------------------
// Checks.

/// A created definition reads back equal; nothing else is there.
pub async fn create_then_get<S: DefinitionStore>(store: Arc<S>) {
    let registry = Registry::builtin();
    let id = definition_id();
    let missing = store.get(&tenant("acme"), &id).await;
    assert!(
        matches!(missing, Ok(None)),
        "an empty store has no definition"
    );
    let state = definition("acme", &registry);
    store
        .create(&tenant("acme"), &id, &state)
        .await
        .expect("create");
    assert_eq!(
        stored(store.as_ref(), "acme").await,
        state,
        "get returns what create stored"
    );
    let other = DefinitionId::parse("another").expect("an id");
    assert!(matches!(store.get(&tenant("acme"), &other).await, Ok(None)));

    let wrong_key = store.create(&tenant("acme"), &other, &state).await;
    assert!(
        matches!(wrong_key, Err(DefinitionStoreError::Corrupt(_))),
        "a state is stored only under its own key: {wrong_key:?}"
    );
    assert!(matches!(store.get(&tenant("acme"), &other).await, Ok(None)));
}

/// Creating an existing definition is a conflict and leaves the first in place.
pub async fn create_twice_conflicts<S: DefinitionStore>(store: Arc<S>) {
    let registry = Registry::builtin();
    let id = definition_id();
    let first = definition("acme", &registry);
    store
        .create(&tenant("acme"), &id, &first)
        .await
        .expect("create");
    let (second, _) = teach(
        &first,
        &mark_lesson("a\\.example"),
        via(),
        now(1),
        &registry,
    )
    .expect("taught");
    let second = second.expect("a change");
    let again = store.create(&tenant("acme"), &id, &second).await;
    assert!(
        matches!(again, Err(DefinitionStoreError::Conflict(_))),
        "creating twice is a conflict: {again:?}"
    );
    assert_eq!(
        stored(store.as_ref(), "acme").await,
        first,
        "the first stays"
    );
}

/// A replace computed from a stale revision is a conflict and changes nothing; so is one that
/// does not advance the revision, and one of a definition that does not exist.
pub async fn stale_replace_conflicts_and_changes_nothing<S: DefinitionStore>(store: Arc<S>) {
    let registry = Registry::builtin();
    let (acme, id) = (tenant("acme"), definition_id());
    let v1 = definition("acme", &registry);
    let nowhere = store.replace(&acme, &id, &v1, 0).await;
    assert!(
        matches!(nowhere, Err(DefinitionStoreError::Conflict(_))),
        "replacing a missing definition is a conflict: {nowhere:?}"
    );
    assert!(matches!(store.get(&acme, &id).await, Ok(None)));

    store.create(&acme, &id, &v1).await.expect("create");
    let (a, _) = teach(&v1, &mark_lesson("a\\.example"), via(), now(1), &registry).expect("a");
    let a = a.expect("a change");
    store
        .replace(&acme, &id, &a, v1.revision())
        .await
        .expect("the first replace wins");
    assert_eq!(stored(store.as_ref(), "acme").await, a);

    // Computed from v1, which is no longer stored.
    let (b, _) = teach(&v1, &mark_lesson("b\\.example"), via(), now(2), &registry).expect("b");
    let b = b.expect("a change");
    let stale = store.replace(&acme, &id, &b, v1.revision()).await;
    assert!(
        matches!(stale, Err(DefinitionStoreError::Conflict(_))),
        "a stale replace is a conflict: {stale:?}"
    );
    assert_eq!(
        stored(store.as_ref(), "acme").await,
        a,
        "a lost replace changes nothing"
    );

    let standing = store.replace(&acme, &id, &a, a.revision()).await;
    assert!(
        matches!(standing, Err(DefinitionStoreError::Conflict(_))),
        "a replace must advance the revision: {standing:?}"
    );
    assert_eq!(stored(store.as_ref(), "acme").await, a);
}

/// Two writers load the same version, both teach, both write: exactly one write wins, the loser
/// retries on the winner's state, and both lessons end in the active version and the history
/// (contract "Rules": never a lost update).
pub async fn racing_writers_lose_no_lesson<S: DefinitionStore + 'static>(store: Arc<S>) {
    let registry = Arc::new(Registry::builtin());
    let (acme, id) = (tenant("acme"), definition_id());
    let v1 = definition("acme", &registry);
    store.create(&acme, &id, &v1).await.expect("create");
    let barrier = Arc::new(Barrier::new(2));

    let writer = |pattern: &'static str, minute: i64| {
        let (store, registry, barrier) = (store.clone(), registry.clone(), barrier.clone());
        let (acme, id) = (acme.clone(), id.clone());
        tokio::spawn(async move {
            let lesson = mark_lesson(pattern);
            let mut conflicts = 0u32;
            let mut first = true;
            loop {
                let current = store.get(&acme, &id).await.expect("get").expect("stored");
                let (next, result) =
                    teach(&current, &lesson, via(), now(minute), &registry).expect("taught");
                assert!(result.learned, "{pattern} is new to the entry");
                let next = next.expect("a change");
                if first {
                    // Both writers have loaded the same revision before either writes.
                    barrier.wait().await;
                    first = false;
                }
                match store.replace(&acme, &id, &next, current.revision()).await {
                    Ok(()) => return conflicts,
                    Err(DefinitionStoreError::Conflict(_)) => conflicts += 1,
                    Err(e) => panic!("the store failed: {e}"),
                }
                assert!(conflicts < 10, "{pattern} kept losing");
            }
        })
    };
    let a = writer("writer-a\\.example", 1);
    let b = writer("writer-b\\.example", 2);
    let (a, b) = (a.await.expect("writer a"), b.await.expect("writer b"));
    assert_eq!(
        a + b,
        1,
        "exactly one of two writers on one revision loses, once"
    );

    let last = stored(store.as_ref(), "acme").await;
    assert_both_writers_landed(&last);
    let lines = lesson_lines(&last);
    assert_eq!(lines.len(), 2, "history has both lessons: {lines:?}");
    for p in ["writer-a\\.example", "writer-b\\.example"] {
        assert!(
            lines.iter().any(|l| l.contains(p)),
            "history has {p}: {lines:?}"
        );
    }
}

/// Many writers through [`absorb_with_retry`] at once: every lesson lands, each in its own
/// version.
pub async fn absorb_with_retry_under_contention<S: DefinitionStore + 'static>(store: Arc<S>) {
    const WRITERS: usize = 8;
    let registry = Arc::new(Registry::builtin());
    let (acme, id) = (tenant("acme"), definition_id());
    store
        .create(&acme, &id, &definition("acme", &registry))
        .await
        .expect("create");
    let barrier = Arc::new(Barrier::new(WRITERS));
    let mut tasks = Vec::new();
    for i in 0..WRITERS {
        let (store, registry, barrier) = (store.clone(), registry.clone(), barrier.clone());
        let acme = acme.clone();
        tasks.push(tokio::spawn(async move {
            let lesson = mark_lesson(&format!("writer-{i}\\.example"));
            barrier.wait().await;
            absorb_lesson(store.as_ref(), &acme, &lesson, i as i64, &registry).await
        }));
    }
    for task in tasks {
        let done = task.await.expect("a writer").expect("absorbed");
        assert!(done.written && done.output.learned);
        assert!(done.attempts as usize <= WRITERS);
    }
    let last = stored(store.as_ref(), "acme").await;
    assert_eq!(last.latest_version(), WRITERS as u64 + 1);
    let patterns = active_patterns(&last);
    for i in 0..WRITERS {
        let p = format!("writer-{i}\\.example");
        assert!(
            patterns.contains(&p),
            "{p} is in the active version: {patterns:?}"
        );
    }
    assert_eq!(lesson_lines(&last).len(), WRITERS);
}

/// [`absorb_with_retry`] on a missing definition, a refusal, and a lesson that changes nothing:
/// an error or `written: false`, and the stored state untouched.
pub async fn absorb_with_retry_refusals_write_nothing<S: DefinitionStore>(store: Arc<S>) {
    let registry = Registry::builtin();
    let (acme, id) = (tenant("acme"), definition_id());
    let lesson = mark_lesson("billing@origin\\.example");
    let missing = absorb_lesson(store.as_ref(), &acme, &lesson, 1, &registry).await;
    assert!(
        matches!(
            missing,
            Err(AbsorbError::Authority(
                learnables::AuthorityError::NotFound { .. }
            ))
        ),
        "a missing definition is NotFound: {missing:?}"
    );

    let v1 = definition("acme", &registry);
    store.create(&acme, &id, &v1).await.expect("create");
    let bad = mark_lesson("billing@origin\\.example(");
    let refused = absorb_lesson(store.as_ref(), &acme, &bad, 1, &registry).await;
    assert!(
        matches!(
            refused,
            Err(AbsorbError::Authority(
                learnables::AuthorityError::Refused { .. }
            ))
        ),
        "the learnable's refusal comes back: {refused:?}"
    );
    assert_eq!(stored(store.as_ref(), "acme").await, v1, "nothing written");

    let taught = absorb_lesson(store.as_ref(), &acme, &lesson, 2, &registry)
        .await
        .expect("taught");
    assert!(taught.written && taught.attempts == 1);
    let again = absorb_lesson(store.as_ref(), &acme, &lesson, 3, &registry)
        .await
        .expect("not an error");
    assert!(!again.written && !again.output.learned);
    assert_eq!(again.state, taught.state);
    assert_eq!(stored(store.as_ref(), "acme").await, taught.state);
}

/// The same id in two tenants is two definitions; writing one leaves the other.
pub async fn tenants_are_separate<S: DefinitionStore>(store: Arc<S>) {
    let registry = Registry::builtin();
    let id = definition_id();
    let acme = definition("acme", &registry);
    let globex = definition("globex", &registry);
    store
        .create(&tenant("acme"), &id, &acme)
        .await
        .expect("acme");
    store
        .create(&tenant("globex"), &id, &globex)
        .await
        .expect("the same id in another tenant is another definition");
    let lesson = mark_lesson("acme-only\\.example");
    absorb_lesson(store.as_ref(), &tenant("acme"), &lesson, 1, &registry)
        .await
        .expect("taught");
    assert_eq!(stored(store.as_ref(), "acme").await.latest_version(), 2);
    assert_eq!(
        stored(store.as_ref(), "globex").await,
        globex,
        "the other tenant's definition is untouched"
    );
    assert!(matches!(store.get(&tenant("initech"), &id).await, Ok(None)));
    let cross = store.replace(&tenant("globex"), &id, &acme, 0).await;
    assert!(
        matches!(cross, Err(DefinitionStoreError::Corrupt(_))),
        "a state is never written under another tenant: {cross:?}"
    );
}

/// Text in two Unicode forms is one text (learnables text is compared in NFC): a lesson naming
/// the entry `Café` decomposed (NFD) teaches the entry created composed (NFC), a mark that differs
/// from a stored one only in its form is already known (`learned: false`, nothing written), and
/// an input sent decomposed matches; what the store holds reads back in NFC.
pub async fn unicode_forms_are_one_text<S: DefinitionStore>(store: Arc<S>) {
    const COMPOSED: &str = "Caf\u{E9} Rouge";
    const DECOMPOSED: &str = "Cafe\u{301} Rouge";
    let registry = Registry::builtin();
    let (acme, id) = (tenant("acme"), definition_id());
    let v1 = definition_with(
        "acme",
        &json!({ "customers": {
            "learnable": "marks", "entry": "customer",
            "teaches": "which customer a message belongs to",
            "entries": { COMPOSED: { "label": "Café Rouge SARL", "value": { "marks": [] } } }
        } }),
        &registry,
    );
    store.create(&acme, &id, &v1).await.expect("create");
    let lesson = |entry: &str, pattern: &str| {
        Lesson::try_from(LessonDto {
            collection: "customers".into(),
            entry: entry.into(),
            value: json!({ "pattern": pattern, "where": "subject" }),
            taught_by: DANA.into(),
            reason: None,
            expires_at: None,
        })
        .expect("a well-formed lesson")
    };
    let first = lesson(DECOMPOSED, "Cafe\u{301} Rouge ref");
    let taught = absorb_lesson(store.as_ref(), &acme, &first, 1, &registry)
        .await
        .expect("taught");
    assert!(taught.written, "the first mark is new");
    let again = lesson(COMPOSED, "Caf\u{E9} Rouge ref");
    let same = absorb_lesson(store.as_ref(), &acme, &again, 2, &registry)
        .await
        .expect("not an error");
    assert!(
        !same.written && !same.output.learned,
        "a mark differing only in Unicode form is already known"
    );
    let state = stored(store.as_ref(), "acme").await;
    assert_eq!(state, taught.state);
    let served = active(&state).expect("an active version");
    let entries: Vec<String> = served
        .collections
        .get("customers")
        .map(|c| c.entries().map(|(n, _)| n.to_string()).collect())
        .expect("customers");
    assert_eq!(entries, vec![COMPOSED.to_owned()], "one entry, no twin");
    let value = served
        .collections
        .get("customers")
        .and_then(|c| c.entry(COMPOSED))
        .map(|e| e.value().clone())
        .expect("the entry");
    assert_eq!(value["marks"][0]["pattern"], json!("Caf\u{E9} Rouge ref"));
    let report = show_back(
        &state,
        &json!({ "subject": "RE: CAFE\u{301} ROUGE REF 2026-1" }),
        None,
        &registry,
    )
    .expect("a report");
    assert_eq!(report["customer"]["winner"], json!(COMPOSED), "{report}");
}
