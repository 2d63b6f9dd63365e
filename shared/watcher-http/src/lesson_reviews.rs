//! What the authority tells the watcher after a lesson or an activation (expectations-v1 §16):
//! each review the step opened is raised as a `lesson.review` expectation, each it closed is
//! satisfied ([`watcher_runtime::lesson_review`]). A port, so the authority's routes run with
//! or without a watcher beside them.

use std::collections::BTreeMap;
use std::sync::Arc;

use learnables::{DefinitionId, Review, ReviewChanges, TenantId};
use tokio::sync::Notify;
use watcher_core::ids::{AgentId, Tenant};
use watcher_runtime::clock::Clock;
use watcher_runtime::lesson_review::LessonReview;
use watcher_runtime::store::Store;
use watcher_runtime::watcher::Watcher;

/// Where the authority's review changes go.
#[async_trait::async_trait]
pub trait LessonReviews: Send + Sync {
    /// Raises each review `changes` opened and satisfies each it closed, for the definition
    /// `definition` of `tenant`. Saying the same twice changes nothing.
    ///
    /// # Errors
    /// Why the watcher did not record them, in words; the definition is written already, so the
    /// caller says so and a retried lesson raises its entry's open review again.
    async fn reviewed(
        &self,
        tenant: &TenantId,
        definition: &DefinitionId,
        changes: &ReviewChanges,
    ) -> Result<(), String>;
}

/// Who owns each definition: (tenant, definition id) → the agent a review is raised as, when
/// its card declares `lesson.review` (`[[agents]] learnables`).
pub type Owners = BTreeMap<(Tenant, String), AgentId>;

/// [`LessonReviews`] applied by the watcher beside the authority: `serve`, and the AWS
/// function that hosts the authority.
pub struct WatcherReviews {
    /// The definitions' owners ([`Owners`]).
    pub owners: Owners,
    /// The watcher the reviews are raised in.
    pub watcher: Arc<Watcher<dyn Store>>,
    /// Its clock: when a review is raised or closed.
    pub clock: Arc<dyn Clock>,
    /// Woken after a write (the timer loop listens), as after any input.
    pub wake: Arc<Notify>,
}

/// The watcher's form of `review` of `definition`: its `expiresAt` is already an instant of
/// the watcher's range (the authority reads it with the watcher's grammar, `instants`), so
/// every expiry the authority accepts can be raised, `9999-12-31T23:59:59Z` included.
pub fn lesson_review(definition: &DefinitionId, review: &Review) -> LessonReview {
    LessonReview {
        definition: definition.as_str().to_owned(),
        subject_id: review.subject_id(definition),
        expires_at: review.expires_at,
        taught_by: review.taught_by.as_str().to_owned(),
    }
}

#[async_trait::async_trait]
impl LessonReviews for WatcherReviews {
    async fn reviewed(
        &self,
        tenant: &TenantId,
        definition: &DefinitionId,
        changes: &ReviewChanges,
    ) -> Result<(), String> {
        if changes.is_empty() {
            return Ok(());
        }
        let tenant = Tenant::parse(tenant.as_str())?;
        let now = self.clock.now();
        for closed in &changes.closed {
            self.watcher
                .close_lesson_review(&tenant, &closed.subject_id(definition), now)
                .await
                .map_err(|e| e.to_string())?;
        }
        let owner = self
            .owners
            .get(&(tenant.clone(), definition.as_str().to_owned()));
        for opened in &changes.opened {
            let review = lesson_review(definition, opened);
            self.watcher
                .open_lesson_review(&tenant, &review, owner, now)
                .await
                .map_err(|e| e.to_string())?;
        }
        self.wake.notify_waiters();
        Ok(())
    }
}
