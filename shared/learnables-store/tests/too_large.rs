//! [`DefinitionStoreError::TooLarge`] through [`absorb_with_retry`]: returned after the one
//! attempt that met it (never retried, unlike a `Conflict`), with nothing written. The memory and
//! SQLite stores set no size limit, so a wrapper refuses every replacement as too large.

use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use learnables::{
    create, teach, Collections, DefinitionId, DefinitionState, Lesson, LessonDto, Registry,
    TaughtBy, TenantId, Via,
};
use learnables_store::{
    absorb_with_retry, AbsorbError, DefinitionStore, DefinitionStoreError, MemoryDefinitionStore,
};
use serde_json::json;

const LIMIT: usize = 1024;

/// A memory store whose `replace` refuses every state as too large, counting the calls.
struct Cramped {
    inner: MemoryDefinitionStore,
    replaces: AtomicU32,
}

#[async_trait]
impl DefinitionStore for Cramped {
    async fn get(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        self.inner.get(tenant, id).await
    }

    async fn create(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
        state: &DefinitionState,
    ) -> Result<(), DefinitionStoreError> {
        self.inner.create(tenant, id, state).await
    }

    async fn replace(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
        _state: &DefinitionState,
        _expected_revision: u64,
    ) -> Result<(), DefinitionStoreError> {
        self.replaces.fetch_add(1, Ordering::SeqCst);
        Err(DefinitionStoreError::TooLarge {
            what: format!("definition {tenant}/{id}"),
            bytes: LIMIT + 1,
            limit: LIMIT,
        })
    }
}

#[tokio::test]
async fn too_large_is_returned_at_once_and_nothing_is_written() {
    let registry = Registry::builtin();
    let (tenant, id) = (
        TenantId::parse("acme").expect("a tenant"),
        DefinitionId::parse("prealert-triage").expect("an id"),
    );
    let now = jiff::Timestamp::from_second(1_786_957_200).expect("an instant");
    let via = Via::parse("teacher-console").expect("a credential id");
    let collections = Collections::parse(
        &json!({ "customers": {
            "learnable": "marks", "entry": "customer", "teaches": "which customer",
            "entries": { "northgate": { "label": "Northgate Motors Ltd", "value": { "marks": [] } } }
        } }),
        &registry,
    )
    .expect("valid collections");
    let dana = TaughtBy::parse("dana@warehouse.example").expect("a person");
    let v1 = create(
        tenant.clone(),
        id.clone(),
        collections,
        dana,
        via.clone(),
        None,
        now,
        &registry,
    )
    .expect("created");
    let store = Cramped {
        inner: MemoryDefinitionStore::new(),
        replaces: AtomicU32::new(0),
    };
    store.create(&tenant, &id, &v1).await.expect("create");

    let lesson = Lesson::try_from(LessonDto {
        collection: "customers".into(),
        entry: "northgate".into(),
        value: json!({ "pattern": "billing@origin\\.example", "where": "from" }),
        taught_by: "dana@warehouse.example".into(),
        reason: None,
        expires_at: None,
    })
    .expect("a lesson");
    let taught = absorb_with_retry(&store, &tenant, &id, |s| {
        teach(s, &lesson, via.clone(), now, &registry)
    })
    .await;

    match taught {
        Err(AbsorbError::Store(DefinitionStoreError::TooLarge { what, bytes, limit })) => {
            assert_eq!(what, "definition acme/prealert-triage");
            assert_eq!((bytes, limit), (LIMIT + 1, LIMIT));
        }
        other => panic!("expected AbsorbError::Store(TooLarge), got {other:?}"),
    }
    assert_eq!(
        store.replaces.load(Ordering::SeqCst),
        1,
        "one attempt: too large is not retried"
    );
    let stored = store.get(&tenant, &id).await.expect("get");
    assert_eq!(stored, Some(v1), "the stored definition is unchanged");
}

#[test]
fn too_large_says_which_definition_its_size_the_limit_and_that_nothing_was_written() {
    let e = DefinitionStoreError::TooLarge {
        what: "definition acme/prealert-triage".into(),
        bytes: 430_000,
        limit: 409_600,
    };
    assert_eq!(
        e.to_string(),
        "definition acme/prealert-triage would be 430000 bytes stored, over the definition \
         store's limit of 409600 bytes; it was refused and nothing was written"
    );
}
