//! The Opsgenie Alert API (<https://docs.opsgenie.com/docs/alert-api>): create an alert with
//! `POST {base}/v2/alerts`, close it with
//! `POST {base}/v2/alerts/{alias}/close?identifierType=alias`, both with
//! `Authorization: GenieKey {key}` and answered `202 Accepted` (the request is queued). The base
//! is `https://api.opsgenie.com`, or `https://api.eu.opsgenie.com` for the EU instance.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// What a path segment encodes: everything but RFC 3986 §2.3's unreserved characters (letters,
/// digits, `-`, `.`, `_`, `~`), which must be left as they are.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
use serde_json::{json, Value};

use super::{cut, Incident};

/// Opsgenie's limit on `message`, in characters.
pub const MESSAGE_MAX: usize = 130;
/// Opsgenie's limit on `alias` and `entity`, in characters.
pub const ALIAS_MAX: usize = 512;
/// Opsgenie's limit on `description`, in characters.
pub const DESCRIPTION_MAX: usize = 15_000;
/// Opsgenie's limit on `source`, in characters.
pub const SOURCE_MAX: usize = 100;
/// Opsgenie's limits on `tags`: how many, and characters each.
pub const TAGS_MAX: (usize, usize) = (20, 50);
/// Opsgenie's limit on `details` (keys and values together), in characters; values are cut so
/// that the whole fits.
pub const DETAILS_MAX: usize = 8_000;

/// Where alerts are created: `{base}/v2/alerts`.
pub fn alerts_url(base: &str) -> String {
    format!("{}/v2/alerts", base.trim_end_matches('/'))
}

/// Where the alert `alias` is closed: `{base}/v2/alerts/{alias}/close?identifierType=alias`,
/// the alias percent-encoded as a path segment (all but the unreserved characters).
pub fn close_url(base: &str, alias: &str) -> String {
    format!(
        "{}/v2/alerts/{}/close?identifierType=alias",
        base.trim_end_matches('/'),
        utf8_percent_encode(alias, SEGMENT)
    )
}

/// The create request of `i`: `message` (cut to [`MESSAGE_MAX`]), `alias` its key,
/// `description`, `priority` (`P1` … `P5`), `tags` (`a2a-watcher`, the lapse kind or event
/// type, `agent:{id}`, `tenant:{id}`), `details` (strings), `entity` (the subject) and
/// `source`.
pub fn create(i: &Incident) -> Value {
    let tags: Vec<String> = ["a2a-watcher".to_owned(), i.kind.clone()]
        .into_iter()
        .chain((!i.agent.is_empty()).then(|| format!("agent:{}", i.agent)))
        .chain((!i.tenant.is_empty()).then(|| format!("tenant:{}", i.tenant)))
        .map(|t| cut(&t, TAGS_MAX.1))
        .take(TAGS_MAX.0)
        .collect();
    // Each value cut to an equal share of the limit, keys counted.
    let share = DETAILS_MAX / i.details.len().max(1);
    let details: serde_json::Map<String, Value> = i
        .details
        .iter()
        .map(|(k, v)| {
            let room = share.saturating_sub(k.chars().count()).max(1);
            (k.clone(), Value::String(cut(v, room)))
        })
        .collect();
    let mut alert = json!({
        "message": cut(&i.summary, MESSAGE_MAX),
        "alias": cut(&i.key, ALIAS_MAX),
        "description": cut(&i.description, DESCRIPTION_MAX),
        "priority": i.priority.name(),
        "tags": tags,
        "details": details,
        "source": cut(&i.source, SOURCE_MAX),
    });
    if let Some(entity) = &i.entity {
        alert["entity"] = json!(cut(entity, ALIAS_MAX));
    }
    alert
}

/// The member of a close notification's body that names the alert to close: taken out of the
/// body when posting and put in the URL ([`close_url`]; [`super::Vendor::request`]), so the
/// request's body is `source` and `note` only.
pub const CLOSE_ALIAS: &str = "closeAlias";

/// The close request's body (posted to [`close_url`]): `source` and `note` (why it closed).
pub fn close(source: &str, note: &str) -> Value {
    json!({ "source": cut(source, SOURCE_MAX), "note": cut(note, 25_000) })
}
