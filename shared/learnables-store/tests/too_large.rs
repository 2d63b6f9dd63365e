//! [`DefinitionStoreError::TooLarge`] through [`absorb_with_retry`]: returned after the one
//! attempt that met it (never retried, unlike a `Conflict`), with nothing written. The memory and
//! SQLite stores set no size limit, so a wrapper refuses every replacement as too large.

use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use learnables::{DefinitionId, DefinitionState, Registry, TenantId};
use learnables_store::conformance::{
    absorb_lesson, definition, definition_id, mark_lesson, tenant,
};
use learnables_store::{
    AbsorbError, DefinitionBackend, DefinitionStore, DefinitionStoreError, MemoryDefinitionStore,
    Swapped,
};

const LIMIT: usize = 1024;

/// A memory store whose every replacement is refused as too large, counting the attempts.
struct Cramped {
    inner: MemoryDefinitionStore,
    replaces: AtomicU32,
}

#[async_trait]
impl DefinitionBackend for Cramped {
    async fn load(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        self.inner.load(tenant, id).await
    }

    async fn insert(&self, state: &DefinitionState) -> Result<bool, DefinitionStoreError> {
        self.inner.insert(state).await
    }

    async fn swap(&self, state: &DefinitionState, _: u64) -> Result<Swapped, DefinitionStoreError> {
        self.replaces.fetch_add(1, Ordering::SeqCst);
        Err(DefinitionStoreError::TooLarge {
            what: format!("definition {}/{}", state.tenant(), state.id()),
            bytes: LIMIT + 1,
            limit: LIMIT,
        })
    }
}

#[tokio::test]
async fn too_large_is_returned_at_once_and_nothing_is_written() {
    let registry = Registry::builtin();
    let (tenant, id) = (tenant("acme"), definition_id());
    let v1 = definition("acme", &registry);
    let store = Cramped {
        inner: MemoryDefinitionStore::new(),
        replaces: AtomicU32::new(0),
    };
    store.create(&tenant, &id, &v1).await.expect("create");

    let lesson = mark_lesson("billing@origin\\.example");
    let taught = absorb_lesson(&store, &tenant, &lesson, 1, &registry).await;

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
