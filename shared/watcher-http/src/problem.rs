//! RFC 9457 problem details: one error type for every route (style: one `ApiError`).

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// `Retry-After` of a 503 ([`ApiError::unavailable`]) that names no other.
pub const UNAVAILABLE_RETRY_AFTER_SECS: u64 = 5;

/// An HTTP error answered as `application/problem+json` with `title`, `status`, and a `detail`
/// that names the field and the rule. Internal causes are logged, never shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// HTTP status.
    pub status: StatusCode,
    /// Short, fixed summary of the problem type.
    pub title: &'static str,
    /// What is wrong, for a person: the field and the rule.
    pub detail: String,
    /// Seconds for a `Retry-After` header, when the client should try again later.
    pub retry_after: Option<u64>,
    /// One RFC 9457 extension member beside the standard ones (its name and value), for a
    /// client that acts on more than the words of `detail` ([`ApiError::with_member`]).
    /// Boxed: most errors have none, and every `Result` of a route carries the error's size.
    pub member: Option<Box<(&'static str, serde_json::Value)>>,
}

impl ApiError {
    /// 400: the body is malformed.
    pub fn bad_request(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "Malformed request", detail)
    }

    /// 401: no or unknown credential.
    pub fn unauthorized(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "Unauthorized", detail)
    }

    /// 403: a credential of the wrong kind or tenant.
    pub fn forbidden(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "Forbidden", detail)
    }

    /// 404: nothing there for this caller.
    pub fn not_found(detail: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "Not found", detail)
    }

    /// 415: the body is not JSON.
    pub fn unsupported_media_type(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Unsupported media type",
            detail,
        )
    }

    /// 503: the deployment cannot serve the request now (a dependency throttled, failed, timed
    /// out, or other writers kept winning); the request may be sent again. Always with
    /// `Retry-After` ([`UNAVAILABLE_RETRY_AFTER_SECS`] unless [`ApiError::with_retry_after`]
    /// says otherwise): a client is told when, not only that.
    pub fn unavailable(detail: impl Into<String>) -> Self {
        Self::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "Temporarily unavailable",
            detail,
        )
        .with_retry_after(UNAVAILABLE_RETRY_AFTER_SECS)
    }

    /// Any status.
    pub fn new(status: StatusCode, title: &'static str, detail: impl Into<String>) -> Self {
        ApiError {
            status,
            title,
            detail: detail.into(),
            retry_after: None,
            member: None,
        }
    }

    /// The same error, with the extension member `name` (RFC 9457 §3.2) set to `value`: e.g.
    /// a 409 of `POST /v1/incidents/acknowledge` carries the incident as it stands
    /// (`"incident"`), so a client can tell its own earlier acknowledgement from another end.
    pub fn with_member(mut self, name: &'static str, value: serde_json::Value) -> Self {
        self.member = Some(Box::new((name, value)));
        self
    }

    /// The same error, answered with `Retry-After: secs`.
    pub fn with_retry_after(mut self, secs: u64) -> Self {
        self.retry_after = Some(secs);
        self
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({
            "type": "about:blank",
            "title": self.title,
            "status": self.status.as_u16(),
            "detail": self.detail,
        });
        if let Some(member) = self.member {
            let (name, value) = *member;
            body[name] = value;
        }
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body.to_string(),
        )
            .into_response();
        if let Some(secs) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from(secs));
        }
        response
    }
}
