//! Reading JSON bodies with errors that name what is wrong (problem+json), accepting
//! `application/json` and `application/a2a+json`.

use axum::body::Bytes;
use axum::http::{header, HeaderMap};
use serde_json::Value;

use crate::problem::ApiError;

/// Parses a JSON body. A `Content-Type` other than JSON (`*/json` or `*/*+json`) is 415.
///
/// # Errors
/// 415 for a non-JSON media type; 400 naming the line and column of a syntax error.
pub fn json_body(headers: &HeaderMap, body: &Bytes) -> Result<Value, ApiError> {
    if let Some(ct) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    {
        let mime = ct
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        let is_json = mime == "application/json" || mime.ends_with("+json") || mime.is_empty();
        if !is_json {
            return Err(ApiError::unsupported_media_type(format!(
                "Content-Type {mime:?} is not JSON; send application/json or application/a2a+json"
            )));
        }
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
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("the body is not valid JSON: {e}")))
}
