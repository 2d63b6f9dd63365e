//! The Learnables authority as a raiser (expectations-v1 §16): a lesson taught with `expiresAt`
//! raises a `lesson.review` expectation on the subject `{ "type": "lesson", "id":
//! "{definition}/{collection}/{entry}@{version}" }`, due at the expiry; a later lesson or an
//! activation that changes the entry reports the fact that satisfies it.
//!
//! The raiser is the definition's owner (`[[agents]] learnables`) when its card declares the
//! kind `lesson.review` on subjects of type `lesson`: its lapse task goes to it as any other.
//! Otherwise it is [`AUTHORITY_AGENT`], which no agent can be (the configuration refuses the
//! id), and the lapse task is recorded in the outbox for no agent
//! ([`DeliveryState::Unaddressed`](crate::store::DeliveryState::Unaddressed)): the
//! notification channels tell it (`lapse.recorded`), `GET /v1/lapses` and `/ui` list it.
//! Raising and satisfying are idempotent (the engine's: the same expectation from the same
//! task is a duplicate, a fact is recorded once), so the authority may say the same twice.

use serde_json::json;
use watcher_core::card::{ExpectationKind, ExpectationsDeclaration};
use watcher_core::engine::{AgentProfile, Input, Origin, PushItem, ReportedFact};
use watcher_core::expectation::Expectation;
use watcher_core::ids::{AgentId, ContextId, FactKey, Source, Subject, TaskId, Tenant};
use watcher_core::time::Instant;

use crate::directory::Directory;
use crate::store::Store;
use crate::watcher::{Applied, ApplyError, Watcher};

pub use crate::authority::AUTHORITY_AGENT;

/// The expectation kind (expectations-v1 §16).
pub const LESSON_REVIEW_KIND: &str = "lesson.review";

/// The subject type of a review.
pub const LESSON_SUBJECT_TYPE: &str = "lesson";

/// One lesson's review, as the authority asks the watcher to keep it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LessonReview {
    /// The definition the lesson was taught into (the review's `contextId`).
    pub definition: String,
    /// `{definition}/{collection}/{entry}@{version}`: the subject's id.
    pub subject_id: String,
    /// When the knowledge should be looked at again (UTC): the expectation's `dueAt`.
    pub expires_at: Instant,
    /// Who taught it, for the person reading the lapse.
    pub taught_by: String,
}

impl LessonReview {
    /// `lesson.review:{subject_id}`: the expectation's id, scoped to [`AUTHORITY_AGENT`].
    pub fn expectation_id(&self) -> String {
        format!("{LESSON_REVIEW_KIND}:{}", self.subject_id)
    }

    /// `lesson.reviewed:{subject_id}`: the fact that satisfies it.
    pub fn fact_key(subject_id: &str) -> String {
        format!("lesson.reviewed:{subject_id}")
    }

    /// The expectation (expectations-v1 §8), as the authority raises it.
    ///
    /// # Errors
    /// The parser's, naming the field (a subject id too long, for instance).
    pub fn expectation(&self) -> Result<Expectation, String> {
        Expectation::from_json(&json!({
            "expectationId": self.expectation_id(),
            "kind": LESSON_REVIEW_KIND,
            "subject": { "type": LESSON_SUBJECT_TYPE, "id": self.subject_id },
            "expects": format!(
                "someone looks again at {} (taught by {}) by its expiry",
                self.subject_id, self.taught_by
            ),
            "satisfiedBy": { "factKey": Self::fact_key(&self.subject_id) },
            "dueAt": self.expires_at.to_string(),
            "basis": "declared",
        }))
        .map_err(|e| e.to_string())
    }
}

/// The authority's profile as a raiser: it keeps no clock and declares one kind,
/// `lesson.review` on subjects of type `lesson`.
pub fn authority_profile() -> AgentProfile {
    AgentProfile {
        id: authority(),
        declaration: ExpectationsDeclaration {
            keeps_time: false,
            lapse_skill: "lesson-review".into(),
            kinds: vec![ExpectationKind {
                kind: LESSON_REVIEW_KIND.into(),
                subject_type: LESSON_SUBJECT_TYPE.into(),
                describes: "a lesson taught with an expiry is looked at again by then".into(),
                basis: "declared".into(),
                skills: None,
            }],
        },
    }
}

/// [`AUTHORITY_AGENT`] as an agent id.
pub fn authority() -> AgentId {
    AgentId::parse(AUTHORITY_AGENT).unwrap_or_else(|_| unreachable!("a valid id"))
}

/// Who raises a review of a definition owned by `owner`: the owner's profile when it is
/// registered in `tenant` and its card declares `lesson.review` on subjects of type `lesson`;
/// otherwise [`authority_profile`].
pub fn raiser(directory: &Directory, tenant: &Tenant, owner: Option<&AgentId>) -> AgentProfile {
    owner
        .and_then(|id| directory.get(tenant, id))
        .map(|entry| entry.profile)
        .filter(|p| {
            p.declaration
                .kind(LESSON_REVIEW_KIND)
                .is_some_and(|k| k.subject_type == LESSON_SUBJECT_TYPE)
        })
        .unwrap_or_else(authority_profile)
}

fn invalid(what: &str, e: String) -> ApplyError {
    ApplyError::Invalid(format!("{what}: {e}"))
}

impl<S: Store + ?Sized> Watcher<S> {
    /// Raises `review` for `tenant` at `now`: one push whose task is `lesson:{subject_id}` in
    /// the context `definition`, from `owner` when that agent is registered in the tenant and its
    /// card declares `lesson.review` on subjects of type `lesson` ([`raiser`]), else from
    /// [`AUTHORITY_AGENT`]. Raising it again changes nothing.
    ///
    /// # Errors
    /// [`ApplyError::Invalid`] for a review the parser refuses; the store's failure.
    pub async fn open_lesson_review(
        &self,
        tenant: &Tenant,
        review: &LessonReview,
        owner: Option<&AgentId>,
        now: Instant,
    ) -> Result<Applied, ApplyError> {
        let expectation = review
            .expectation()
            .map_err(|e| invalid("expectation", e))?;
        let origin = Origin {
            task_id: TaskId::parse(format!("lesson:{}", review.subject_id))
                .map_err(|e| invalid("taskId", e))?,
            context_id: Some(
                ContextId::parse(review.definition.clone()).map_err(|e| invalid("contextId", e))?,
            ),
        };
        let input = Input::Push {
            agent: raiser(&self.directory, tenant, owner),
            items: vec![PushItem::Raise {
                origin,
                expectations: vec![Ok(expectation)],
                question_at: None,
                question_timestamp: None,
            }],
        };
        self.apply(tenant, &input, now).await
    }

    /// Satisfies the review of `subject_id` for `tenant` at `now`: the fact
    /// `lesson.reviewed:{subject_id}` from [`AUTHORITY_AGENT`], observed `now`. Reporting it
    /// again, or for a review already lapsed, satisfies nothing more.
    ///
    /// # Errors
    /// [`ApplyError::Invalid`] for a subject id the parser refuses; the store's failure.
    pub async fn close_lesson_review(
        &self,
        tenant: &Tenant,
        subject_id: &str,
        now: Instant,
    ) -> Result<Applied, ApplyError> {
        let fact = ReportedFact {
            fact_key: FactKey::parse(LessonReview::fact_key(subject_id))
                .map_err(|e| invalid("factKey", e))?,
            observed_at: now,
            observed_at_given: None,
            mapping: None,
            subject: Some(
                Subject::parse(LESSON_SUBJECT_TYPE, subject_id)
                    .map_err(|e| invalid("subject", e))?,
            ),
            source: Source::parse(AUTHORITY_AGENT).map_err(|e| invalid("source", e))?,
        };
        self.apply(tenant, &Input::Facts(vec![fact]), now).await
    }
}
