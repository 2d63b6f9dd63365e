//! Pagination of the list routes (`GET /v1/lapses`, `GET /v1/agents/{agentId}/rejections`,
//! `GET /v1/agents`; issue 10, docs/interpretation.md "Pages of the list routes"): `limit`
//! (default [`DEFAULT_LIMIT`], at most [`MAX_LIMIT`]) and an opaque `cursor` from the previous
//! answer's `nextCursor`; a page never exceeds [`MAX_PAGE_BYTES`] of JSON. Every page is read
//! with keyset pagination on a store index, never an offset.

use std::collections::BTreeMap;

use axum::http::Uri;

use crate::problem::ApiError;

/// Entries per page when `limit` is not given.
pub const DEFAULT_LIMIT: usize = 100;
/// The largest `limit` accepted.
pub const MAX_LIMIT: usize = 1000;
/// Most bytes of JSON one page's entries may take (the answer's envelope adds a few more); a
/// page that would be larger ends early with a `nextCursor`.
pub const MAX_PAGE_BYTES: usize = 1_000_000;

/// The query parameters of one list request, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageParams {
    /// Entries asked for: 1..=[`MAX_LIMIT`].
    pub limit: usize,
    /// The position the page starts after, decoded from `cursor`.
    pub after: Option<Cursor>,
    /// The other parameters given (the route's filters), by name.
    pub filters: BTreeMap<String, String>,
}

/// A decoded cursor: a store position, or (for `GET /v1/agents`) an agent id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cursor {
    /// A position in a store's order (outbox or rejections).
    Position(u64),
    /// A text: an agent id the page starts after (`GET /v1/agents`), or an incident position
    /// (`GET /v1/incidents`, [`crate::incidents::IncidentCursor`]).
    Agent(String),
}

/// The cursor's text for `kind` (one letter per route, so a cursor of one list is refused by
/// another) at `cursor`. Opaque to clients: `{kind}1.{hex}` (`1` is the format's version).
pub fn encode(kind: char, cursor: &Cursor) -> String {
    match cursor {
        Cursor::Position(p) => format!("{kind}1.{p:x}"),
        Cursor::Agent(a) => {
            let hex: String = a.bytes().map(|b| format!("{b:02x}")).collect();
            format!("{kind}1.{hex}")
        }
    }
}

fn bad_cursor(why: &str) -> ApiError {
    ApiError::bad_request(format!(
        "query parameter `cursor`: {why}; pass the `nextCursor` of the previous page unchanged"
    ))
}

/// Decodes the cursor `text` of route `kind`; agent cursors when `agents`.
fn decode(kind: char, text: &str, agents: bool) -> Result<Cursor, ApiError> {
    let body = text
        .strip_prefix(kind)
        .and_then(|t| t.strip_prefix("1."))
        .ok_or_else(|| bad_cursor("not a cursor of this list"))?;
    if body.is_empty() || body.len() > 2048 || !body.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(bad_cursor("malformed"));
    }
    if agents {
        if body.len() % 2 != 0 {
            return Err(bad_cursor("malformed"));
        }
        let bytes: Result<Vec<u8>, _> = (0..body.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&body[i..i + 2], 16))
            .collect();
        let text = bytes
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .ok_or_else(|| bad_cursor("malformed"))?;
        Ok(Cursor::Agent(text))
    } else {
        u64::from_str_radix(body, 16)
            .map(Cursor::Position)
            .map_err(|_| bad_cursor("malformed"))
    }
}

/// Reads `limit`, `cursor` and the filters named in `filters` from `uri`'s query. Each
/// parameter at most once; any other parameter is refused.
///
/// # Errors
/// 400 problem+json naming the parameter: `limit` not an integer in 1..=[`MAX_LIMIT`], a
/// `cursor` not given by this list, an unknown or repeated parameter, a query that is not
/// `application/x-www-form-urlencoded`.
pub fn parse(uri: &Uri, kind: char, filters: &[&str]) -> Result<PageParams, ApiError> {
    let pairs: Vec<(String, String)> =
        axum::extract::Query::<Vec<(String, String)>>::try_from_uri(uri)
            .map(|q| q.0)
            .map_err(|e| ApiError::bad_request(format!("the query string: {e}")))?;
    let mut seen: BTreeMap<String, String> = BTreeMap::new();
    for (name, value) in pairs {
        if name != "limit" && name != "cursor" && !filters.contains(&name.as_str()) {
            let mut known = vec!["limit", "cursor"];
            known.extend_from_slice(filters);
            return Err(ApiError::bad_request(format!(
                "query parameter `{name}`: not known here (known: {})",
                known.join(", ")
            )));
        }
        if seen.contains_key(&name) {
            return Err(ApiError::bad_request(format!(
                "query parameter `{name}`: given more than once"
            )));
        }
        seen.insert(name, value);
    }
    let limit = match seen.remove("limit") {
        None => DEFAULT_LIMIT,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
            _ => {
                return Err(ApiError::bad_request(format!(
                    "query parameter `limit`: {text:?} is not an integer from 1 to {MAX_LIMIT}"
                )))
            }
        },
    };
    let after = seen
        .remove("cursor")
        // Text cursors: an agent id (`GET /v1/agents`), an incident position (`GET /v1/incidents`).
        .map(|c| decode(kind, &c, matches!(kind, 'a' | 'i')))
        .transpose()?;
    Ok(PageParams {
        limit,
        after,
        filters: seen,
    })
}

/// Collects the JSON of a page's items until [`MAX_PAGE_BYTES`]: answers the items kept and
/// whether the page was cut short (then the next page starts after the last item kept).
pub fn fill<T, V: serde::Serialize>(
    items: impl IntoIterator<Item = (T, V)>,
) -> (Vec<V>, Option<T>, bool) {
    let mut out = Vec::new();
    let mut bytes = 0usize;
    let mut last = None;
    for (pos, v) in items {
        let size = serde_json::to_string(&v).map_or(0, |s| s.len()) + 1;
        if bytes + size > MAX_PAGE_BYTES && !out.is_empty() {
            return (out, last, true);
        }
        bytes += size;
        out.push(v);
        last = Some(pos);
    }
    (out, last, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uri(q: &str) -> Uri {
        format!("/v1/lapses?{q}").parse().unwrap()
    }

    #[test]
    fn limits_and_cursors_are_checked() {
        let p = parse(&uri(""), 'l', &["agent"]).unwrap();
        assert_eq!((p.limit, p.after), (DEFAULT_LIMIT, None));
        assert_eq!(parse(&uri("limit=1000"), 'l', &[]).unwrap().limit, 1000);
        for bad in ["limit=0", "limit=1001", "limit=x", "limit=-1", "limit="] {
            let e = parse(&uri(bad), 'l', &[]).unwrap_err();
            assert!(e.detail.contains("`limit`"), "{bad}: {}", e.detail);
        }
        let c = encode('l', &Cursor::Position(4242));
        let p = parse(&uri(&format!("cursor={c}&agent=booking")), 'l', &["agent"]).unwrap();
        assert_eq!(p.after, Some(Cursor::Position(4242)));
        assert_eq!(p.filters.get("agent").map(String::as_str), Some("booking"));
        let other = encode('r', &Cursor::Position(1));
        for bad in [
            "cursor=zzz",
            "cursor=l1.",
            "cursor=l1.xyz",
            &format!("cursor={other}"),
        ] {
            let e = parse(&uri(bad), 'l', &[]).unwrap_err();
            assert!(e.detail.contains("`cursor`"), "{bad}: {}", e.detail);
        }
        let a = encode('a', &Cursor::Agent("booking.v2".into()));
        assert_eq!(
            parse(&uri(&format!("cursor={a}")), 'a', &[]).unwrap().after,
            Some(Cursor::Agent("booking.v2".into()))
        );
        let e = parse(&uri("colour=red"), 'l', &["agent"]).unwrap_err();
        assert!(e.detail.contains("`colour`"), "{}", e.detail);
        let e = parse(&uri("limit=1&limit=2"), 'l', &[]).unwrap_err();
        assert!(e.detail.contains("more than once"), "{}", e.detail);
    }

    #[test]
    fn a_page_stops_before_a_megabyte() {
        let big = serde_json::Value::String("x".repeat(300_000));
        let (kept, last, cut) = fill((0..10).map(|i| (i, big.clone())));
        assert_eq!((kept.len(), last, cut), (3, Some(2), true));
        let (kept, last, cut) = fill((0..2).map(|i| (i, big.clone())));
        assert_eq!((kept.len(), last, cut), (2, Some(1), false));
    }
}
