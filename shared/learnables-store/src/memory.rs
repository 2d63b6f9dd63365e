//! [`MemoryDefinitionStore`]: definitions in a map behind a mutex.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;
use learnables::{DefinitionId, DefinitionState, TenantId};

use crate::{check_advances, check_key, DefinitionStore, DefinitionStoreError};

type Key = (TenantId, DefinitionId);

/// A [`DefinitionStore`] in process memory: for tests, the demo, and anything that may forget
/// its definitions on restart.
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
impl DefinitionStore for MemoryDefinitionStore {
    async fn get(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        Ok(self.map().get(&(tenant.clone(), id.clone())).cloned())
    }

    async fn create(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
        state: &DefinitionState,
    ) -> Result<(), DefinitionStoreError> {
        check_key(tenant, id, state)?;
        let mut map = self.map();
        let key = (tenant.clone(), id.clone());
        if map.contains_key(&key) {
            return Err(DefinitionStoreError::Conflict(format!(
                "definition {id} already exists"
            )));
        }
        map.insert(key, state.clone());
        Ok(())
    }

    async fn replace(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
        state: &DefinitionState,
        expected_revision: u64,
    ) -> Result<(), DefinitionStoreError> {
        check_key(tenant, id, state)?;
        check_advances(state, expected_revision)?;
        let mut map = self.map();
        match map.get_mut(&(tenant.clone(), id.clone())) {
            Some(stored) if stored.revision() == expected_revision => {
                *stored = state.clone();
                Ok(())
            }
            Some(stored) => Err(DefinitionStoreError::Conflict(format!(
                "definition {id} is at revision {}, not {expected_revision}",
                stored.revision()
            ))),
            None => Err(DefinitionStoreError::Conflict(format!(
                "definition {id} does not exist"
            ))),
        }
    }
}
