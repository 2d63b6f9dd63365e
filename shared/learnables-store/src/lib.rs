//! Where a Learnables-v1 authority keeps its definitions (contracts/learnables.md; learnables-v1
//! §10.3 versioning, §13.2 tenant scope, §13.4 "answerable from stored state").
//!
//! - [`DefinitionStore`] — the port: a definition's whole [`DefinitionState`] under
//!   `(tenant, id)`, created once and replaced only by compare-and-set on
//!   [`DefinitionState::revision`].
//! - [`DefinitionBackend`] — what a backend implements to be a [`DefinitionStore`]: a read and
//!   two conditional writes; the key, revision and conflict checks are the store's, once.
//! - [`MemoryDefinitionStore`] — in process, for tests and the demo.
//! - [`SqliteDefinitionStore`] — one SQLite table, for `a2a-watcher serve`; it may share the
//!   watcher's database file.
//! - [`absorb_with_retry`] — load, apply a pure operation of the `learnables` core, write with
//!   compare-and-set, and on a lost race re-run the operation on the state that won: two writers
//!   racing never lose an update (contract "Rules").
//! - `conformance` (feature `test-utils`) — the checks every implementation passes, expanded
//!   by `definition_store_conformance!`.
//!
//! ```
//! use learnables::*;
//! use learnables_store::{absorb_with_retry, DefinitionStore, MemoryDefinitionStore};
//! use serde_json::json;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let registry = Registry::builtin();
//! let store = MemoryDefinitionStore::new();
//! let (tenant, id) = (TenantId::parse("acme")?, DefinitionId::parse("prealert-triage")?);
//! let now = jiff::Timestamp::from_second(1_786_957_200)?;
//! let collections = Collections::parse(&json!({ "customers": {
//!     "learnable": "marks", "entry": "customer", "teaches": "which customer a message belongs to",
//!     "entries": { "northgate": { "label": "Northgate Motors Ltd", "value": { "marks": [] } } }
//! } }), &registry)?;
//! let dana = TaughtBy::parse("dana@warehouse.example")?;
//! let via = Via::parse("teacher-console")?;
//! let state = create(tenant.clone(), id.clone(), collections, dana, via.clone(), None, now, &registry)?;
//! store.create(&tenant, &id, &state).await?;
//!
//! let lesson = Lesson::try_from(LessonDto {
//!     collection: "customers".into(),
//!     entry: "northgate".into(),
//!     value: json!({ "pattern": "billing@origin\\.example", "where": "from" }),
//!     taught_by: "dana@warehouse.example".into(),
//!     reason: None,
//!     expires_at: None,
//! })?;
//! let done = absorb_with_retry(&store, &tenant, &id, |s| teach(s, &lesson, via.clone(), now, &registry)).await?;
//! assert!(done.written && done.output.learned);
//! assert_eq!(store.get(&tenant, &id).await?.map(|s| s.active_version()), Some(2));
//! # Ok(()) }
//! ```

#[cfg(feature = "test-utils")]
pub mod conformance;
mod memory;
mod retry;
mod sqlite;

use async_trait::async_trait;
use learnables::{DefinitionId, DefinitionState, TenantId};

pub use memory::MemoryDefinitionStore;
pub use retry::{
    absorb_with_retry, absorb_with_retry_using, AbsorbError, Absorbed, OpOutcome, MAX_ATTEMPTS,
};
pub use sqlite::{SqliteDefinitionStore, BUSY_TIMEOUT, TABLE};

/// Why a [`DefinitionStore`] did not do what it was asked.
#[derive(Debug, thiserror::Error)]
pub enum DefinitionStoreError {
    /// A conditional write lost: [`DefinitionStore::create`] found the definition already there,
    /// or [`DefinitionStore::replace`] found another revision (or no definition) stored.
    ///
    /// What to do: for `create`, answer 409 (the id is taken); for `replace`, reload and re-run
    /// the operation on what is stored now ([`absorb_with_retry`] does).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The backend failed (I/O, a lock held too long, a task that could not run).
    ///
    /// What to do: retrying may help; the source says why. Answer 503.
    #[error("the definition store failed: {0}")]
    Backend(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// Stored data could not be read back as a valid [`DefinitionState`] under its key, or a
    /// caller asked to store a state under a key that is not its own (it would read back
    /// corrupt).
    ///
    /// What to do: not retryable; the stored definition needs attention. Answer 500.
    #[error("a stored definition is corrupt: {0}")]
    Corrupt(String),
    /// The state to write is larger than the backend can store (DynamoDB: one item of at most
    /// 400 KB; the memory and SQLite stores set no limit). Refused before anything is sent:
    /// nothing was written and the stored definition is unchanged. Every version keeps its
    /// whole content (learnables-v1 §10.3), so a definition grows with each lesson until it
    /// reaches the limit.
    ///
    /// What to do: not retryable — the same write fails the same way. Tombstone versions no
    /// longer needed (a tombstone erases a version's content, §14) or split the definition
    /// into smaller ones, then teach again. Answer 413.
    #[error(
        "{what} would be {bytes} bytes stored, over the definition store's limit of {limit} \
         bytes; it was refused and nothing was written"
    )]
    TooLarge {
        /// Which definition, e.g. `definition acme/prealert-triage`.
        what: String,
        /// Its size as the backend counts it, in bytes.
        bytes: usize,
        /// The most the backend stores, in bytes.
        limit: usize,
    },
}

impl DefinitionStoreError {
    /// Wraps a backend error, keeping it as the source.
    pub fn backend(e: impl std::error::Error + Send + Sync + 'static) -> Self {
        Self::Backend(Box::new(e))
    }
}

/// The definitions port: one [`DefinitionState`] per `(tenant, id)` (§13.2: a definition belongs
/// to exactly one tenant; the same id in another tenant is another definition).
///
/// A state is stored whole. Every write is atomic: a reader sees the state before or after it,
/// never a mixture. Versions are immutable because the core never changes one in place (§10.3);
/// the store only guarantees that no update is lost, by compare-and-set on
/// [`DefinitionState::revision`].
///
/// Implementations pass the `conformance` suite (feature `test-utils`) via
/// `definition_store_conformance!`.
#[async_trait]
pub trait DefinitionStore: Send + Sync {
    /// The stored state of definition `id` in `tenant`, or `None` if there is none there.
    ///
    /// # Errors
    /// [`DefinitionStoreError::Backend`] when the backend fails;
    /// [`DefinitionStoreError::Corrupt`] when what is stored is not a valid state for this key.
    async fn get(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError>;

    /// Stores `state` as definition `id` of `tenant`, only if there is none yet.
    ///
    /// # Errors
    /// [`DefinitionStoreError::Conflict`] when the definition already exists (nothing changes);
    /// [`DefinitionStoreError::Corrupt`] when `state.tenant()`/`state.id()` are not
    /// `tenant`/`id`; [`DefinitionStoreError::TooLarge`] when `state` is over the backend's
    /// size limit (nothing changes); [`DefinitionStoreError::Backend`] when the backend fails.
    async fn create(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
        state: &DefinitionState,
    ) -> Result<(), DefinitionStoreError>;

    /// Replaces definition `id` of `tenant` with `state`, only if the stored state's revision is
    /// still `expected_revision` (the revision of the state the change was computed from).
    ///
    /// # Errors
    /// [`DefinitionStoreError::Conflict`] when the stored revision differs, there is no such
    /// definition, or `state.revision()` is not above `expected_revision` (a write that would let
    /// a stale writer in); nothing changes. [`DefinitionStoreError::Corrupt`] for a state whose
    /// tenant or id is not the key; [`DefinitionStoreError::TooLarge`] when `state` is over the
    /// backend's size limit (nothing changes); [`DefinitionStoreError::Backend`] when the
    /// backend fails.
    async fn replace(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
        state: &DefinitionState,
        expected_revision: u64,
    ) -> Result<(), DefinitionStoreError>;
}

/// The conditional writes of one backend — the memory, SQLite and DynamoDB stores. Every
/// [`DefinitionBackend`] is a [`DefinitionStore`] whose key, revision and conflict checks are
/// these same ones, in one place.
///
/// Before a backend is asked to write, the [`DefinitionStore`] has checked that `state` is to be
/// stored under its own key ([`DefinitionState::tenant`], [`DefinitionState::id`]) and, for a
/// replacement, that it advances the revision; it turns what the backend found into the
/// [`DefinitionStoreError::Conflict`]s [`DefinitionStore`] documents.
#[async_trait]
pub trait DefinitionBackend: Send + Sync {
    /// The stored state of definition `id` in `tenant`, read back and checked, or `None` if
    /// there is none there: [`DefinitionStore::get`].
    ///
    /// # Errors
    /// [`DefinitionStoreError::Backend`] when the backend fails;
    /// [`DefinitionStoreError::Corrupt`] when what is stored is not a valid state for this key.
    async fn load(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError>;

    /// Stores `state` under its own key only if nothing is stored there: `true` when written,
    /// `false` (nothing changed) when a definition is there already.
    ///
    /// # Errors
    /// [`DefinitionStoreError::TooLarge`] when `state` is over the backend's size limit
    /// (nothing changes); [`DefinitionStoreError::Backend`] when the backend fails.
    async fn insert(&self, state: &DefinitionState) -> Result<bool, DefinitionStoreError>;

    /// Replaces the state stored under `state`'s key only if its revision is
    /// `expected_revision`; [`Swapped`] says whether it did, and what it found if not.
    ///
    /// # Errors
    /// As [`DefinitionBackend::insert`].
    async fn swap(
        &self,
        state: &DefinitionState,
        expected_revision: u64,
    ) -> Result<Swapped, DefinitionStoreError>;
}

/// What [`DefinitionBackend::swap`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Swapped {
    /// The state was written.
    Done,
    /// Nothing written: the stored definition is at this revision (as the backend spells it),
    /// not the expected one.
    AtRevision(String),
    /// Nothing written: no definition is stored under the key.
    Missing,
}

/// Every backend is a store: the key, revision and conflict checks of [`DefinitionStore`] around
/// the backend's own read and conditional writes.
#[async_trait]
impl<B: DefinitionBackend + ?Sized> DefinitionStore for B {
    async fn get(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
    ) -> Result<Option<DefinitionState>, DefinitionStoreError> {
        self.load(tenant, id).await
    }

    async fn create(
        &self,
        tenant: &TenantId,
        id: &DefinitionId,
        state: &DefinitionState,
    ) -> Result<(), DefinitionStoreError> {
        check_key(tenant, id, state)?;
        if self.insert(state).await? {
            Ok(())
        } else {
            Err(DefinitionStoreError::Conflict(format!(
                "definition {id} already exists"
            )))
        }
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
        let found = match self.swap(state, expected_revision).await? {
            Swapped::Done => return Ok(()),
            Swapped::AtRevision(r) => {
                format!("definition {id} is at revision {r}, not {expected_revision}")
            }
            Swapped::Missing => format!("definition {id} does not exist"),
        };
        Err(DefinitionStoreError::Conflict(found))
    }
}

/// Refuses to store a state under a key that is not its own.
fn check_key(
    tenant: &TenantId,
    id: &DefinitionId,
    state: &DefinitionState,
) -> Result<(), DefinitionStoreError> {
    if state.tenant() == tenant && state.id() == id {
        Ok(())
    } else {
        Err(DefinitionStoreError::Corrupt(format!(
            "refusing to store definition {}/{} under the key {tenant}/{id}",
            state.tenant(),
            state.id()
        )))
    }
}

/// Refuses a replacement that does not advance the revision.
fn check_advances(
    state: &DefinitionState,
    expected_revision: u64,
) -> Result<(), DefinitionStoreError> {
    if state.revision() > expected_revision {
        Ok(())
    } else {
        Err(DefinitionStoreError::Conflict(format!(
            "the new state of {} has revision {}, which does not advance on {expected_revision}",
            state.id(),
            state.revision()
        )))
    }
}
