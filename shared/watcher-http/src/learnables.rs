//! The Learnables authority over HTTP (contracts/learnables.md "Routes"; learnables-v1 §12.1
//! external profile): one router factory, [`learnables_router`], merged into the watcher's
//! router by the host.
//!
//! Handlers authenticate, parse the body into `learnables` domain types, call one pure operation
//! of the core (through [`absorb_with_retry`] for writes, so racing writers lose nothing), and
//! shape the answer. Nothing here reads a key inside a lesson value or an entry value (§9): the
//! learnable judges, and its own reason is the `detail` of a 422 (§10.1).
//!
//! Authorization (contract "Credentials", §13.2):
//! - every route needs a known bearer token (401 otherwise);
//! - writes (`PUT`, lessons, `lessons:check`, activate, tombstone) need a teacher's token; reads
//!   (the definition, a version, history, show-back, descriptors, the learnables) a teacher's or
//!   an operator's; a source's or an agent's token gets 403 everywhere, an operator's 403 on
//!   writes;
//! - `taughtBy` must be the teacher's `id` or one of its `on_behalf_of` people (403 otherwise),
//!   and history records the credential's `id` as `via`;
//! - definitions are looked up in the credential's tenant only: another tenant's definition is
//!   404, exactly as one that does not exist.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Extension, Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use learnables::{
    AuthorityError, Collections, DefinitionId, DefinitionState, Lesson, LessonDto, Reason,
    Registry, TaughtBy, TenantId, Via,
};
use learnables_store::{absorb_with_retry, AbsorbError, DefinitionStore, DefinitionStoreError};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use watcher_runtime::clock::Clock;

use crate::auth::{Credentials, Principal, Role};
use crate::body::typed_body as body_as;
pub use crate::learnables_answers::{
    Activated, DescriptorsList, HistoryList, LearnablesList, Tombstoned,
};
use crate::learnables_requests::{
    ActivateRequest, CreateDefinitionRequest, ShowBackRequest, TombstoneRequest,
};
use crate::lesson_reviews::LessonReviews;
use crate::limits::Limits;
use crate::problem::ApiError;
use crate::route_table::{route, Route};

/// Everything the authority's handlers need; cheap to clone.
#[derive(Clone)]
pub struct LearnablesState {
    /// Where definitions live (memory, SQLite, or another backend).
    pub store: Arc<dyn DefinitionStore>,
    /// Who may call what: teachers write, operators read.
    pub credentials: Arc<Credentials>,
    /// The authority's clock: `at` of every version and history entry.
    pub clock: Arc<dyn Clock>,
    /// The learnables definitions may use (`Registry::builtin()` in `serve`).
    pub registry: Arc<Registry>,
    /// Where the reviews of lessons taught with `expiresAt` go (expectations-v1 §16): the
    /// watcher beside the authority; `None` where there is none (then an expiry is recorded on
    /// the version and nothing notices it).
    pub reviews: Option<Arc<dyn LessonReviews>>,
}

/// The authority's routes (contracts/learnables.md "Routes"), with the default [`Limits`]
/// ([`learnables_router_with`]) and request tracing; a `Router<()>` for the host to `.merge(...)` into
/// its own.
///
/// | route | who | answer |
/// |---|---|---|
/// | `GET /v1/learnables` | teacher, operator | `{ "learnables": [{ "name", "how", "decidedBy", "lessonFields" }] }` |
/// | `GET /v1/definitions/{id}/descriptors` | teacher, operator | `{ "learnables": [LearnableDescriptor] }` (§6.2; the card's `params` shape) |
/// | `PUT /v1/definitions/{id}` | teacher | 201 `{ "definitionVersion": 1, "versionId", "collections" }`; 409 if it exists |
/// | `GET /v1/definitions/{id}` | teacher, operator | the active version `{ "definitionVersion", "versionId", "collections" }` |
/// | `GET /v1/definitions/{id}/versions/{n}` | teacher, operator | version n; 410 once tombstoned |
/// | `POST /v1/definitions/{id}/lessons` | teacher | 200 LessonResult (§10.4); 422 with the learnable's reason |
/// | `POST /v1/definitions/{id}/lessons:check` | teacher | `{ "matches", "changes" }` (§13.1); writes nothing |
/// | `POST /v1/definitions/{id}/show-back` | teacher, operator | the §11 report keyed by entry noun |
/// | `GET /v1/definitions/{id}/history` | teacher, operator | `{ "history": [HistoryEntry] }`, newest first |
/// | `POST /v1/definitions/{id}/activate` | teacher | `{ "activated", "definitionVersion", "versionId", "previousVersionId"? }` |
/// | `POST /v1/definitions/{id}/versions/{n}/tombstone` | teacher | `{ "tombstoned", "definitionVersion", "versionId" }`; 409 for the active version |
///
/// Every error is `application/problem+json` ([`ApiError`]): 400 malformed, 401 no credential,
/// 403 wrong kind of credential or `taughtBy`, 404 no such definition or version in this tenant,
/// 409 conflict, 410 tombstoned, 413 the definition would be too large for the store (nothing
/// written; tombstone versions or split the definition), 415 not JSON, 422 refused by the
/// learnable, 500 corrupt stored data, 503 store unavailable or contended (retry).
///
/// # Example
/// ```ignore
/// let app = watcher_router(app_state).merge(learnables_router(learnables_state));
/// ```
pub fn learnables_router(state: LearnablesState) -> Router {
    learnables_router_with(state, Limits::default())
}

/// The authority's routes (contracts/learnables.md): one table builds [`learnables_router_with`]
/// and lists them for [`learnables_routes`].
fn learnables_table() -> Vec<Route<LearnablesState>> {
    use crate::route_table::Method::{Get, Post, Put};
    vec![
        route(Get, "/v1/learnables", list_learnables),
        route(Get, "/v1/definitions/{id}", get_definition),
        route(Put, "/v1/definitions/{id}", put_definition),
        route(Get, "/v1/definitions/{id}/descriptors", get_descriptors),
        route(Get, "/v1/definitions/{id}/versions/{n}", get_version),
        route(Post, "/v1/definitions/{id}/lessons", post_lesson),
        // axum 0.8 captures with `{…}`; a `:` inside a literal segment is plain text.
        route(Post, "/v1/definitions/{id}/lessons:check", post_check),
        route(Post, "/v1/definitions/{id}/show-back", post_show_back),
        route(Get, "/v1/definitions/{id}/history", get_history),
        route(Post, "/v1/definitions/{id}/activate", post_activate),
        route(
            Post,
            "/v1/definitions/{id}/versions/{n}/tombstone",
            post_tombstone,
        ),
    ]
}

/// `(method, path)` of every route [`learnables_router_with`] answers (axum's path patterns).
pub fn learnables_routes() -> Vec<(crate::route_table::Method, &'static str)> {
    crate::route_table::list(&learnables_table())
}

/// [`learnables_router`] with `limits` (body size, JSON depth and strings, `lessons:check`
/// corpus entries; every error problem+json).
pub fn learnables_router_with(state: LearnablesState, limits: Limits) -> Router {
    let routes = crate::route_table::build(learnables_table()).with_state(state);
    crate::limits::apply(routes, limits).layer(tower_http::trace::TraceLayer::new_for_http())
}

// ---------------------------------------------------------------------------------------------
// Errors.

/// An [`AuthorityError`] as problem+json with its own status. A refusal's `detail` is the
/// learnable's reason, unchanged (§10.1).
/// The authority's clock as the timestamp learnables record. jiff's `Timestamp` ends at
/// 9999-12-30T22:00:00.999999999Z, a day before the instant range does; a clock set later (only
/// a test clock can be) reads as that last timestamp.
fn now_at(state: &LearnablesState) -> jiff::Timestamp {
    state
        .clock
        .now()
        .timestamp()
        .unwrap_or(jiff::Timestamp::MAX)
}

fn authority(e: AuthorityError) -> ApiError {
    let status = StatusCode::from_u16(e.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    match e {
        AuthorityError::Refused { reason, .. } => {
            ApiError::new(status, "Refused by the learnable", reason)
        }
        AuthorityError::NotFound { .. } => ApiError::new(status, "Not found", e.to_string()),
        AuthorityError::Gone { .. } => ApiError::new(status, "Gone", e.to_string()),
        AuthorityError::Conflict { reason } => ApiError::new(status, "Conflict", reason),
        AuthorityError::Invalid { .. } => ApiError::new(status, "Malformed request", e.to_string()),
    }
}

/// A store failure: a conflict is 409; a backend failure 503 (retry), with the reason and
/// `Retry-After` of its class when the store said (`BackendFailure`), except one the store marked
/// permanent (`PermanentFailure`: access denied, a missing table), which is 500; corrupt data 500;
/// a definition too large to store 413 (no retry can help). Causes are logged, never shown.
fn store_error(e: DefinitionStoreError) -> ApiError {
    match e {
        DefinitionStoreError::TooLarge { .. } => {
            tracing::warn!(error = %e, "definition too large to store");
            ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "Payload Too Large",
                format!(
                    "{e}. Every version keeps its whole content, so retrying cannot help: \
                     tombstone versions no longer needed, or split the definition into smaller \
                     ones."
                ),
            )
        }
        DefinitionStoreError::Conflict(reason) => {
            ApiError::new(StatusCode::CONFLICT, "Conflict", reason)
        }
        DefinitionStoreError::Backend(_) => {
            // Throttling, a 5xx, a timeout: the request is answered 503 with `Retry-After` and
            // the reason when the store said (`BackendFailure` in the error's chain).
            match watcher_runtime::store::unavailability_of(&e) {
                Some(kind) => {
                    tracing::warn!(error = %e, reason = kind.reason(), "definition store unavailable");
                    ApiError::unavailable(format!(
                        "the definition store cannot serve the request now: {}; nothing was \
                         written: send it again after {} s (Retry-After)",
                        kind.reason(),
                        kind.retry_after_secs()
                    ))
                    .with_retry_after(kind.retry_after_secs())
                }
                None if watcher_runtime::store::is_permanent(&e) => {
                    tracing::error!(error = %e, "definition store refused the request for good");
                    ApiError::new(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        "Definition store refused",
                        "the definition store refused the request for a reason retrying cannot \
                         mend (its access, its table or the request); nothing was written; an \
                         operator must look at the deployment",
                    )
                }
                None => {
                    tracing::error!(error = %e, "definition store failure");
                    ApiError::unavailable(
                        "the definition store failed; nothing was written: send the request \
                         again after the Retry-After seconds",
                    )
                }
            }
        }
        DefinitionStoreError::Corrupt(_) => {
            tracing::error!(error = %e, "corrupt definition");
            ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "Stored definition unreadable",
                "the stored definition could not be read back; an operator must look at it",
            )
        }
    }
}

fn absorb_error(e: AbsorbError) -> ApiError {
    match e {
        AbsorbError::Authority(a) => authority(a),
        AbsorbError::Store(s) => store_error(s),
        AbsorbError::Contended { .. } => {
            tracing::warn!(error = %e, "definition contended");
            ApiError::unavailable(e.to_string())
                .with_retry_after(watcher_runtime::store::Unavailable::Contended.retry_after_secs())
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Parsing at the edge.

/// The caller, who must hold one of `roles`, with its tenant as the core's [`TenantId`].
fn caller<'a>(
    state: &'a LearnablesState,
    headers: &HeaderMap,
    roles: &[Role],
) -> Result<(&'a Principal, TenantId), ApiError> {
    let principal = state.credentials.require(headers, roles, false)?;
    let tenant = TenantId::parse(principal.tenant.as_str()).map_err(|e| {
        ApiError::forbidden(format!(
            "the credential's tenant cannot own definitions: {e}"
        ))
    })?;
    Ok((principal, tenant))
}

const READERS: &[Role] = &[Role::Teacher, Role::Operator];
const WRITERS: &[Role] = &[Role::Teacher];

/// The credential as history's `via`.
fn via_of(principal: &Principal) -> Result<Via, ApiError> {
    Via::parse(principal.id.as_str()).map_err(|e| {
        ApiError::forbidden(format!(
            "the credential's id cannot be recorded as via: {e}"
        ))
    })
}

/// 403 unless `taught_by` is the teacher itself or one of the people it may teach for.
fn may_teach_as(principal: &Principal, taught_by: &TaughtBy) -> Result<(), ApiError> {
    let who = taught_by.as_str();
    if principal.id == who || principal.on_behalf_of.iter().any(|p| p == who) {
        Ok(())
    } else {
        Err(ApiError::forbidden(format!(
            "taughtBy {who:?} is neither this teacher credential ({:?}) nor one of the people it may teach on behalf of",
            principal.id
        )))
    }
}

fn definition_id(raw: &str) -> Result<DefinitionId, ApiError> {
    DefinitionId::parse(raw).map_err(authority)
}

fn version_number(raw: &str) -> Result<u64, ApiError> {
    raw.parse::<u64>().ok().filter(|n| *n > 0).ok_or_else(|| {
        ApiError::bad_request(format!(
            "version {raw:?}: a version number is a whole number from 1"
        ))
    })
}

/// Who and why, as every write but a lesson carries them.
struct Author {
    taught_by: TaughtBy,
    reason: Option<Reason>,
}

impl Author {
    /// Parses `taughtBy` and `reason`, then checks the teacher may act for that person.
    fn parse(
        principal: &Principal,
        taught_by: String,
        reason: Option<String>,
    ) -> Result<Self, ApiError> {
        let taught_by = TaughtBy::parse(taught_by).map_err(authority)?;
        may_teach_as(principal, &taught_by)?;
        let reason = Reason::parse_optional(reason).map_err(authority)?;
        Ok(Self { taught_by, reason })
    }
}

/// `POST .../lessons:check` body.
#[derive(Deserialize)]
struct CheckBody {
    lesson: LessonDto,
    corpus: Vec<Value>,
}

/// A lesson from the wire, whose `taughtBy` this teacher may write for.
fn lesson_for(principal: &Principal, dto: LessonDto) -> Result<Lesson, ApiError> {
    let lesson = Lesson::try_from(dto).map_err(authority)?;
    may_teach_as(principal, lesson.taught_by())?;
    Ok(lesson)
}

/// The definition `id` of `tenant`; 404 when there is none in that tenant.
async fn load(
    state: &LearnablesState,
    tenant: &TenantId,
    id: &DefinitionId,
) -> Result<DefinitionState, ApiError> {
    state
        .store
        .get(tenant, id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::not_found(format!("definition {id} does not exist")))
}

// ---------------------------------------------------------------------------------------------
// Handlers.

/// `GET /v1/learnables`: `{ "learnables": [{ "name", "how", "decidedBy", "lessonFields" }] }`.
async fn list_learnables(
    State(state): State<LearnablesState>,
    headers: HeaderMap,
) -> Result<Json<impl Serialize>, ApiError> {
    caller(&state, &headers, READERS)?;
    Ok(Json(LearnablesList {
        learnables: state.registry.summaries(),
    }))
}

/// `GET /v1/definitions/{id}/descriptors`: `{ "learnables": [LearnableDescriptor] }` (§6.2), the
/// shape of the card's `params`.
async fn get_descriptors(
    State(state): State<LearnablesState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<impl Serialize>, ApiError> {
    let (_, tenant) = caller(&state, &headers, READERS)?;
    let definition = load(&state, &tenant, &definition_id(&id)?).await?;
    let descriptors = learnables::descriptors(&definition, &state.registry).map_err(authority)?;
    Ok(Json(DescriptorsList {
        learnables: descriptors,
    }))
}

/// `PUT /v1/definitions/{id}`: 201 with version 1 and `Location`; 409 if it exists.
async fn put_definition(
    State(state): State<LearnablesState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let (principal, tenant) = caller(&state, &headers, WRITERS)?;
    let id = definition_id(&id)?;
    let body: CreateDefinitionRequest = body_as(&headers, &body)?;
    let author = Author::parse(principal, body.taught_by, body.reason)?;
    let collections =
        Collections::parse(&body.collections, state.registry.as_ref()).map_err(authority)?;
    let created = learnables::create(
        tenant.clone(),
        id.clone(),
        collections,
        author.taught_by,
        via_of(principal)?,
        author.reason,
        now_at(&state),
        &state.registry,
    )
    .map_err(authority)?;
    state
        .store
        .create(&tenant, &id, &created)
        .await
        .map_err(store_error)?;
    let served = learnables::active(&created).map_err(authority)?;
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, format!("/v1/definitions/{id}"))],
        Json(served),
    )
        .into_response())
}

/// `GET /v1/definitions/{id}`: the active version.
async fn get_definition(
    State(state): State<LearnablesState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<impl Serialize>, ApiError> {
    let (_, tenant) = caller(&state, &headers, READERS)?;
    let definition = load(&state, &tenant, &definition_id(&id)?).await?;
    let served = learnables::active(&definition).map_err(authority)?;
    Ok(Json(served))
}

/// `GET /v1/definitions/{id}/versions/{n}`: version n, the same every time; 410 once tombstoned.
async fn get_version(
    State(state): State<LearnablesState>,
    Path((id, n)): Path<(String, String)>,
    headers: HeaderMap,
) -> Result<Json<impl Serialize>, ApiError> {
    let (_, tenant) = caller(&state, &headers, READERS)?;
    let id = definition_id(&id)?;
    let n = version_number(&n)?;
    let definition = load(&state, &tenant, &id).await?;
    let served = learnables::get_version(&definition, n).map_err(authority)?;
    Ok(Json(served))
}

/// `POST /v1/definitions/{id}/lessons`: 200 LessonResult (§10.4), `learned: false` for a lesson
/// the entry already holds; 422 with the learnable's reason.
async fn post_lesson(
    State(state): State<LearnablesState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<impl Serialize>, ApiError> {
    let (principal, tenant) = caller(&state, &headers, WRITERS)?;
    let id = definition_id(&id)?;
    let lesson = lesson_for(principal, body_as(&headers, &body)?)?;
    let via = via_of(principal)?;
    let at = now_at(&state);
    let registry = state.registry.as_ref();
    let done = absorb_with_retry(state.store.as_ref(), &tenant, &id, |d| {
        let (next, result) = learnables::teach(d, &lesson, via.clone(), at, registry)?;
        let changes = next
            .as_ref()
            .map(|n| learnables::review_changes(d, n))
            .unwrap_or_default();
        Ok((next, (result, changes)))
    })
    .await
    .map_err(absorb_error)?;
    let (result, mut changes) = done.output;
    if !done.written {
        // A lesson sent again after the watcher missed its review: raise the entry's open
        // review again (the watcher keeps one).
        changes.opened.extend(
            done.state
                .review_of(lesson.collection(), lesson.entry())
                .cloned(),
        );
    }
    tell_reviews(&state, &tenant, &id, &changes, result.definition_version).await?;
    Ok(Json(result))
}

/// Gives `changes` to the watcher beside the authority, if there is one. The definition is
/// written already: a failure answers 503 saying so, and the lesson sent again raises its
/// entry's open review again.
async fn tell_reviews(
    state: &LearnablesState,
    tenant: &TenantId,
    id: &DefinitionId,
    changes: &learnables::ReviewChanges,
    version: u64,
) -> Result<(), ApiError> {
    let Some(reviews) = state.reviews.as_ref().filter(|_| !changes.is_empty()) else {
        return Ok(());
    };
    reviews.reviewed(tenant, id, changes).await.map_err(|e| {
        tracing::error!(error = %e, definition = %id.as_str(), "lesson review not recorded");
        ApiError::unavailable(format!(
            "version {version} is recorded, but the watcher did not record its lesson.review ({e}); \
             send the same request again"
        ))
    })
}

/// `POST /v1/definitions/{id}/lessons:check`: what the lesson would do to the corpus (§13.1);
/// writes nothing.
async fn post_check(
    State(state): State<LearnablesState>,
    Extension(limits): Extension<Limits>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<impl Serialize>, ApiError> {
    let (principal, tenant) = caller(&state, &headers, WRITERS)?;
    let id = definition_id(&id)?;
    let body: CheckBody = body_as(&headers, &body)?;
    if body.corpus.len() > limits.check_corpus_entries {
        return Err(Limits::refusal(
            "check_corpus_entries",
            limits.check_corpus_entries,
            format_args!("field `corpus`: {} entries", body.corpus.len()),
        ));
    }
    let lesson = lesson_for(principal, body.lesson)?;
    let definition = load(&state, &tenant, &id).await?;
    let report = learnables::check(&definition, &lesson, &body.corpus, &state.registry)
        .map_err(authority)?;
    Ok(Json(report))
}

/// `POST /v1/definitions/{id}/show-back`: the §11 report of the active version (or of
/// `definitionVersion`), keyed by each collection's entry noun.
async fn post_show_back(
    State(state): State<LearnablesState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<Value>, ApiError> {
    let (_, tenant) = caller(&state, &headers, READERS)?;
    let id = definition_id(&id)?;
    let body: ShowBackRequest = body_as(&headers, &body)?;
    let definition = load(&state, &tenant, &id).await?;
    let report = learnables::show_back(
        &definition,
        &body.input,
        body.definition_version,
        &state.registry,
    )
    .map_err(authority)?;
    Ok(Json(report))
}

/// `GET /v1/definitions/{id}/history`: `{ "history": [...] }`, newest first.
async fn get_history(
    State(state): State<LearnablesState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Json<impl Serialize>, ApiError> {
    let (_, tenant) = caller(&state, &headers, READERS)?;
    let definition = load(&state, &tenant, &definition_id(&id)?).await?;
    Ok(Json(HistoryList {
        history: learnables::history(&definition),
    }))
}

/// `POST /v1/definitions/{id}/activate`: makes version n active again (undo, §10.3).
/// `activated` is false when n was already active (nothing recorded).
async fn post_activate(
    State(state): State<LearnablesState>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<impl Serialize>, ApiError> {
    let (principal, tenant) = caller(&state, &headers, WRITERS)?;
    let id = definition_id(&id)?;
    let body: ActivateRequest = body_as(&headers, &body)?;
    let author = Author::parse(principal, body.taught_by, body.reason)?;
    let via = via_of(principal)?;
    let at = now_at(&state);
    let n = body.definition_version;
    let done = absorb_with_retry(state.store.as_ref(), &tenant, &id, |d| {
        let replaced = learnables::active(d)?.version_id;
        let next = learnables::activate(
            d,
            n,
            author.taught_by.clone(),
            via.clone(),
            author.reason.clone(),
            at,
        )?;
        let changes = next
            .as_ref()
            .map(|next| learnables::review_changes(d, next))
            .unwrap_or_default();
        Ok((next, (replaced, changes)))
    })
    .await
    .map_err(absorb_error)?;
    let (replaced, changes) = done.output;
    let served = learnables::active(&done.state).map_err(authority)?;
    tell_reviews(&state, &tenant, &id, &changes, served.definition_version).await?;
    Ok(Json(Activated {
        activated: done.written,
        definition_version: served.definition_version,
        version_id: served.version_id,
        previous_version_id: done.written.then_some(replaced),
    }))
}

/// `POST /v1/definitions/{id}/versions/{n}/tombstone`: version n's content is no longer served
/// (§14). `tombstoned` is false when it already was. 409 for the active version.
async fn post_tombstone(
    State(state): State<LearnablesState>,
    Path((id, n)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<impl Serialize>, ApiError> {
    let (principal, tenant) = caller(&state, &headers, WRITERS)?;
    let id = definition_id(&id)?;
    let n = version_number(&n)?;
    let body: TombstoneRequest = body_as(&headers, &body)?;
    let author = Author::parse(principal, body.taught_by, body.reason)?;
    let via = via_of(principal)?;
    let at = now_at(&state);
    let done = absorb_with_retry(state.store.as_ref(), &tenant, &id, |d| {
        learnables::tombstone(
            d,
            n,
            author.taught_by.clone(),
            via.clone(),
            author.reason.clone(),
            at,
        )
    })
    .await
    .map_err(absorb_error)?;
    let version_id = done
        .state
        .version(n)
        .map(|v| v.version_id().clone())
        .ok_or_else(|| {
            authority(AuthorityError::NotFound {
                what: format!("version {n} of {id}"),
            })
        })?;
    Ok(Json(Tombstoned {
        tombstoned: done.written,
        definition_version: n,
        version_id,
    }))
}
