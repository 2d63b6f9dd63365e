//! [`absorb_with_retry`]: load, apply a pure operation, compare-and-set, retry on a lost race
//! (contract "Rules": two writers racing on one version never lose an update).

use learnables::{AuthorityError, DefinitionId, DefinitionState, TenantId};

use backoff::{Backoff, Retry};

use crate::{DefinitionStore, DefinitionStoreError};

/// How many times [`absorb_with_retry`] runs the operation before giving up on a definition that
/// keeps changing under it. Each lost attempt means another writer's change was stored, so `n`
/// writers racing on one definition all succeed within `n` attempts; 16 leaves room for that
/// many simultaneous teachers of one definition.
pub const MAX_ATTEMPTS: u32 = 16;

/// What an operation given to [`absorb_with_retry`] may return: the new state to write (or
/// `None` when nothing changes), optionally paired with an answer for the caller.
///
/// Implemented for `Option<DefinitionState>` (what [`learnables::activate`] and
/// [`learnables::tombstone`] return; the output is `()`) and for `(Option<DefinitionState>, T)`
/// (what [`learnables::teach`] returns; the output is the [`learnables::LessonResult`]).
pub trait OpOutcome {
    /// What the caller gets back besides the state.
    type Output;
    /// Splits into the state to write and the caller's answer.
    fn split(self) -> (Option<DefinitionState>, Self::Output);
}

impl OpOutcome for Option<DefinitionState> {
    type Output = ();
    fn split(self) -> (Option<DefinitionState>, ()) {
        (self, ())
    }
}

impl<T> OpOutcome for (Option<DefinitionState>, T) {
    type Output = T;
    fn split(self) -> (Option<DefinitionState>, T) {
        self
    }
}

/// The result of [`absorb_with_retry`].
#[derive(Debug, Clone, PartialEq)]
pub struct Absorbed<T> {
    /// The state stored now: the one written, or — when the operation changed nothing — the one
    /// it was applied to.
    pub state: DefinitionState,
    /// Whether a new state was written.
    pub written: bool,
    /// The operation's answer from the attempt that counted (e.g. the `LessonResult`).
    pub output: T,
    /// How many times the operation ran (1 when no race was lost).
    pub attempts: u32,
}

/// Why [`absorb_with_retry`] wrote nothing.
#[derive(Debug, thiserror::Error)]
pub enum AbsorbError {
    /// The operation refused, or there is no such definition
    /// ([`AuthorityError::NotFound`], `what` = `definition {id}`).
    ///
    /// What to do: answer [`AuthorityError::http_status`]; nothing was written.
    #[error(transparent)]
    Authority(#[from] AuthorityError),
    /// The store failed or refused ([`DefinitionStoreError::Backend`],
    /// [`DefinitionStoreError::Corrupt`] or [`DefinitionStoreError::TooLarge`]; a `Conflict` is
    /// never passed through, it is retried). Returned after the attempt that met it: none of
    /// these is retried here.
    ///
    /// What to do: as the store error says (503 for a backend failure, 500 for corrupt data,
    /// 413 for a definition too large to store — nothing was written).
    #[error(transparent)]
    Store(DefinitionStoreError),
    /// Every one of [`MAX_ATTEMPTS`] attempts lost the race to another writer.
    ///
    /// What to do: nothing was written; the request may be sent again (503).
    #[error("definition {id} kept changing: {attempts} attempts each lost the race to another writer; try again")]
    Contended {
        /// The definition.
        id: DefinitionId,
        /// How many attempts were made.
        attempts: u32,
    },
}

/// Loads definition `id` of `tenant`, applies the pure `op` to it, and, if `op` returns a new
/// state, replaces the stored one with compare-and-set on the loaded revision. On a
/// [`DefinitionStoreError::Conflict`] it reloads and re-runs `op` on the state that won, up to
/// [`MAX_ATTEMPTS`] times — so a lesson racing another is applied on top of it, never over it
/// (contract "Rules"; §10.3 "never changed in place").
///
/// `op` is a call into the `learnables` core such as
/// `|s| teach(s, &lesson, via.clone(), now, &registry)`; it must be pure, since it may run more
/// than once. A refusal from `op` is returned at once, with nothing written.
///
/// # Errors
/// - [`AbsorbError::Authority`] with [`AuthorityError::NotFound`] when there is no such
///   definition in `tenant`, or whatever `op` refused with;
/// - [`AbsorbError::Store`] when the store fails, or refuses the new state as too large
///   ([`DefinitionStoreError::TooLarge`]: returned at once, not retried, since the same state
///   would be refused again);
/// - [`AbsorbError::Contended`] when every attempt lost the race.
pub async fn absorb_with_retry<S, O>(
    store: &S,
    tenant: &TenantId,
    id: &DefinitionId,
    op: impl Fn(&DefinitionState) -> Result<O, AuthorityError>,
) -> Result<Absorbed<O::Output>, AbsorbError>
where
    S: DefinitionStore + ?Sized,
    O: OpOutcome,
{
    let retry = Retry::new(Backoff::CONFLICT.with_attempts(MAX_ATTEMPTS));
    absorb_with_retry_using(store, tenant, id, &retry, op).await
}

/// [`absorb_with_retry`], waiting per `retry` after each lost race (the one retry policy of the
/// workspace, `backoff`: exponential backoff with full jitter; before, the next
/// attempt followed at once). At most [`MAX_ATTEMPTS`] attempts whatever `retry` allows.
///
/// # Errors
/// As [`absorb_with_retry`].
pub async fn absorb_with_retry_using<S, O>(
    store: &S,
    tenant: &TenantId,
    id: &DefinitionId,
    retry: &Retry,
    op: impl Fn(&DefinitionState) -> Result<O, AuthorityError>,
) -> Result<Absorbed<O::Output>, AbsorbError>
where
    S: DefinitionStore + ?Sized,
    O: OpOutcome,
{
    for attempt in 1..=MAX_ATTEMPTS {
        let current = store
            .get(tenant, id)
            .await
            .map_err(AbsorbError::Store)?
            .ok_or_else(|| AuthorityError::NotFound {
                what: format!("definition {id}"),
            })?;
        let (next, output) = op(&current)?.split();
        let Some(next) = next else {
            return Ok(Absorbed {
                state: current,
                written: false,
                output,
                attempts: attempt,
            });
        };
        match store.replace(tenant, id, &next, current.revision()).await {
            Ok(()) => {
                return Ok(Absorbed {
                    state: next,
                    written: true,
                    output,
                    attempts: attempt,
                })
            }
            // Lost to another writer: wait (full jitter, growing), then load again. No wait
            // after the last attempt.
            Err(DefinitionStoreError::Conflict(_)) if attempt < MAX_ATTEMPTS => {
                retry.pause(attempt).await;
            }
            Err(DefinitionStoreError::Conflict(_)) => {}
            // Not retried: re-running `op` on the same stored state computes the same state,
            // which is refused the same way.
            Err(e @ DefinitionStoreError::TooLarge { .. }) => return Err(AbsorbError::Store(e)),
            Err(other) => return Err(AbsorbError::Store(other)),
        }
    }
    Err(AbsorbError::Contended {
        id: id.clone(),
        attempts: MAX_ATTEMPTS,
    })
}
