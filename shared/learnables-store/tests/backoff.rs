//! [`absorb_with_retry_using`]: each race lost to another writer waits before the next attempt
//! (the workspace's one retry policy, `backoff`: exponential backoff with full
//! jitter), and the attempts stay bounded. Before, the next attempt followed at once.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use backoff::{Backoff, RecordingSleeper, Retry};
use learnables::{teach, DefinitionId, DefinitionState, Registry, TenantId};
use learnables_store::conformance::{definition, definition_id, mark_lesson, now, tenant, via};
use learnables_store::{
    absorb_with_retry_using, AbsorbError, DefinitionBackend, DefinitionStore, DefinitionStoreError,
    MemoryDefinitionStore, Swapped, MAX_ATTEMPTS,
};

/// A memory store whose first `lose` replacements find another revision stored.
struct Raced {
    inner: MemoryDefinitionStore,
    lose: AtomicU32,
}

#[async_trait]
impl DefinitionBackend for Raced {
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

    async fn swap(
        &self,
        state: &DefinitionState,
        expected: u64,
    ) -> Result<Swapped, DefinitionStoreError> {
        if self
            .lose
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            return Ok(Swapped::AtRevision("another writer's".into()));
        }
        self.inner.swap(state, expected).await
    }
}

async fn teach_with(lose: u32) -> (Result<u32, AbsorbError>, Vec<Duration>) {
    let registry = Registry::builtin();
    let acme = tenant("acme");
    let store = Raced {
        inner: MemoryDefinitionStore::new(),
        lose: AtomicU32::new(0),
    };
    store
        .create(&acme, &definition_id(), &definition("acme", &registry))
        .await
        .expect("create");
    store.lose.store(lose, Ordering::SeqCst);
    let sleeper = Arc::new(RecordingSleeper::new());
    let retry = Retry::with_sleeper(Backoff::CONFLICT, sleeper.clone());
    let lesson = mark_lesson("billing@origin\\.example");
    let done = absorb_with_retry_using(&store, &acme, &definition_id(), &retry, |s| {
        teach(s, &lesson, via(), now(1), &registry)
    })
    .await
    .map(|a| a.attempts);
    (done, sleeper.waits())
}

#[tokio::test]
async fn each_lost_race_waits_with_growing_full_jitter() {
    let (done, waits) = teach_with(3).await;
    assert_eq!(done.expect("taught on the 4th attempt"), 4);
    assert_eq!(waits.len(), 3, "{waits:?}");
    for (wait, ceiling) in waits.iter().zip([5, 10, 20].map(Duration::from_millis)) {
        assert!(*wait <= ceiling, "{wait:?} over {ceiling:?}");
    }
}

#[tokio::test]
async fn a_definition_that_keeps_changing_gives_up_after_max_attempts() {
    let (done, waits) = teach_with(1_000).await;
    assert!(
        matches!(done, Err(AbsorbError::Contended { attempts, .. }) if attempts == MAX_ATTEMPTS),
        "{done:?}"
    );
    // A wait between attempts, none after the last.
    assert_eq!(waits.len(), MAX_ATTEMPTS as usize - 1);
}
