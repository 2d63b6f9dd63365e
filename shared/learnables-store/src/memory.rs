//! [`MemoryDefinitionStore`]: definitions in a map behind a mutex.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use learnables::{DefinitionId, DefinitionState, TenantId};

use crate::{DefinitionBackend, DefinitionStoreError, Swapped};

type Key = (TenantId, DefinitionId);

/// A [`DefinitionStore`](crate::DefinitionStore) in process memory: for tests, the demo, and
/// anything that may forget its definitions on restart.
///
/// Cloning shares the map. The lock is never held across an `.await`.
#[derive(Debug, Clone, Default)]
pub struct MemoryDefinitionStore {
    definitions: Arc<Mutex<HashMap<Key, DefinitionState>>>,
}

impl MemoryDefinitionStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn map(&self) -> MutexGuard<'_, HashMap<Key, DefinitionState>> {
        // Every write below is one map operation, so a panic elsewhere while the lock was held
        // cannot have left a half-written state: keep using the map.
        self.definitions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl DefinitionBackend for MemoryDefinitionStore {
    async fn load(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        Ok(self.map().get(&(tenant.clone(), id.clone())).cloned())
    }

    async fn insert(&self, state: &DefinitionState) -> Result<bool, DefinitionStoreError> {
        let mut map = self.map();
        let key = (state.tenant().clone(), state.id().clone());
        if map.contains_key(&key) {
            return Ok(false);
        }
        map.insert(key, state.clone());
        Ok(true)
    }

    async fn swap(
        &self,
        state: &DefinitionState,
        expected_revision: u64,
    ) -> Result<Swapped, DefinitionStoreError> {
        let mut map = self.map();
        Ok(
            match map.get_mut(&(state.tenant().clone(), state.id().clone())) {
                Some(stored) if stored.revision() == expected_revision => {
                    *stored = state.clone();
                    Swapped::Done
                }
                Some(stored) => Swapped::AtRevision(stored.revision().to_string()),
                None => Swapped::Missing,
            },
        )
    }
}
