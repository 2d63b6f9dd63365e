//! Reading JSON bodies with errors that name what is wrong (problem+json), accepting
//! `application/json` and `application/a2a+json`, and refusing a member that appears twice
//! ([`crate::strict_json`]).

use axum::body::Bytes;
use axum::http::{header, HeaderMap};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::problem::ApiError;
use crate::strict_json::{self, StrictJsonError};

/// The media type of a `Content-Type` that is not JSON (lowercased, parameters dropped), or
/// `None` for JSON: `application/json`, `*/*+json`, an empty media type, or no readable header.
pub(crate) fn non_json_media_type(headers: &HeaderMap) -> Option<String> {
    let ct = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())?;
    let mime = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let is_json = mime == "application/json" || mime.ends_with("+json") || mime.is_empty();
    (!is_json).then_some(mime)
}

/// Parses a JSON body, every member of which the watcher reads. A `Content-Type` other than
/// JSON (`*/json` or `*/*+json`) is 415.
///
/// # Errors
/// 415 for a non-JSON media type; 400 naming the line and column of a syntax error, or naming a
/// member that appears twice (`the member "entry" appears twice`).
pub fn json_body(headers: &HeaderMap, body: &Bytes) -> Result<Value, ApiError> {
    json_body_with(headers, body, strict_json::read_everything)
}

/// [`json_body`], with the parts `policy` marks opaque (forwarded untouched, never read) exempt
/// from the repeated-member check, e.g. [`strict_json::push_body`].
///
/// # Errors
/// As [`json_body`].
pub fn json_body_with(
    headers: &HeaderMap,
    body: &Bytes,
    policy: strict_json::Policy,
) -> Result<Value, ApiError> {
    if let Some(mime) = non_json_media_type(headers) {
        return Err(ApiError::unsupported_media_type(format!(
            "Content-Type {mime:?} is not JSON; send application/json or application/a2a+json"
        )));
    }
    if body.is_empty() {
        return Err(ApiError::bad_request(
            "the body is empty; a JSON document is required",
        ));
    }
    // JSON is UTF-8 (RFC 8259 §8.1): say so by name rather than as a bad code point.
    if let Err(e) = std::str::from_utf8(body) {
        return Err(ApiError::bad_request(format!(
            "the body is not valid UTF-8 (byte {}); JSON must be UTF-8 (RFC 8259 §8.1)",
            e.valid_up_to()
        )));
    }
    strict_json::from_slice_with(body, policy).map_err(|e| match e {
        StrictJsonError::Duplicate { .. } => ApiError::bad_request(e.to_string()),
        StrictJsonError::Syntax(e) => {
            ApiError::bad_request(format!("the body is not valid JSON: {e}"))
        }
    })
}

/// Parses a JSON body ([`json_body`]) as `T`, naming the member at fault ([`typed_value`]).
///
/// # Errors
/// As [`json_body`] and [`typed_value`].
pub fn typed_body<T: DeserializeOwned>(headers: &HeaderMap, body: &Bytes) -> Result<T, ApiError> {
    typed_value(json_body(headers, body)?)
}

/// `value` (a parsed body) as `T`, naming the member at fault.
///
/// # Errors
/// 400 `the body: field `{path}`: {what serde says}` for a member of the wrong type or value
/// (path as `messageIds[1]`), `the body: missing field ...` for one absent.
pub fn typed_value<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        if path == "." {
            ApiError::bad_request(format!("the body: {}", e.into_inner()))
        } else {
            ApiError::bad_request(format!("the body: field `{path}`: {}", e.into_inner()))
        }
    })
}
