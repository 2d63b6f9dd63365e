//! The keys each table of the configuration takes, for "did you mean" on an unknown key.

use crate::config::Config;
use crate::error::ConfigError;

/// Every key each table of the configuration takes (`""` is the top level), for "did you mean"
/// on an unknown key. `tests/configuration_doc.rs` checks it against the structs, so it cannot
/// drift from what is read.
pub const KNOWN_KEYS: &[(&str, &[&str])] = &[
    (
        "",
        &[
            "listen",
            "database",
            "public_url",
            "allow_private_endpoints",
            "retention_days",
            "sources",
            "agents",
            "operators",
            "teachers",
            "limits",
            "delivery",
            "notify",
        ],
    ),
    (
        "limits",
        &[
            "lineage_bound",
            "max_open_per_subject",
            "max_open_per_agent",
            "body_bytes",
            "body_read_secs",
            "json_depth",
            "string_bytes",
            "expectations_per_artifact",
            "facts_per_request",
            "check_corpus_entries",
        ],
    ),
    (
        "delivery",
        &[
            "timeout_secs",
            "give_up_after",
            "backoff_base",
            "backoff_max",
            "poll_first",
            "per_minute",
            "burst",
            "in_flight_per_agent",
            "in_flight",
            "reconcile_origins",
        ],
    ),
    (
        "agents",
        &[
            "id",
            "card",
            "endpoint",
            "push_token",
            "bearer",
            "tenant",
            "submit_lapses",
            "reconcile",
            "probe",
            "learnables",
            "resolve_on",
        ],
    ),
    (
        "sources",
        &["id", "token", "tenant", "signature", "mappings"],
    ),
    (
        "notify",
        &[
            "id",
            "tenant",
            "url",
            "secret",
            "format",
            "agents",
            "kinds",
            "expectation_kinds",
            "events",
            "digest",
            "grace",
            "timeout_secs",
            "from",
            "to",
            "tls",
            "username",
            "password",
            "routing_key",
            "api_key",
            "severity",
            "min_severity",
            "priority",
            "horizon",
            "redact",
            "redact_key",
        ],
    ),
    ("operators", &["id", "token", "tenant"]),
    ("teachers", &["id", "token", "tenant", "on_behalf_of"]),
];

/// The known key closest to the unknown dotted path `key` (`agents.0.push_tokn` →
/// `agents.0.push_token`), when one is within a small edit distance: at most a third of its
/// length, and at most 3 edits. `None` for a table this list does not cover.
pub fn did_you_mean(key: &str) -> Option<String> {
    let (parent, last) = match key.rsplit_once('.') {
        Some((p, l)) => (p, l),
        None => ("", key),
    };
    // The table's name without array indices: `agents.0` → `agents`.
    let table: Vec<&str> = parent
        .split('.')
        .filter(|s| !s.is_empty() && s.parse::<usize>().is_err())
        .collect();
    let table = table.join(".");
    let keys = KNOWN_KEYS.iter().find(|(t, _)| *t == table)?.1;
    closest(last, keys.iter().copied()).map(|k| match key.rsplit_once('.') {
        Some((p, _)) => format!("{p}.{k}"),
        None => k.to_owned(),
    })
}

/// The candidate closest to `word` by edit distance (Damerau–Levenshtein), when one is within a
/// small distance: at most a third of `word`'s length, and at most 3 edits; the first in sort
/// order among equally close ones. For "did you mean" on an unknown key ([`did_you_mean`]), an
/// unknown agent or tenant of a `[[notify]]` channel.
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let bound = (word.chars().count() / 3).clamp(1, 3);
    candidates
        .into_iter()
        .map(|k| (strsim::damerau_levenshtein(word, k), k))
        .filter(|(d, _)| *d <= bound)
        .min()
        .map(|(_, k)| k)
}

/// The keys of `text` that [`Config`] does not read, as dotted paths (`agents.0.tokn`).
///
/// # Errors
/// [`ConfigError::Toml`]: TOML syntax or type errors.
pub fn unknown_keys(text: &str) -> Result<Vec<String>, ConfigError> {
    let mut unknown = Vec::new();
    let _: Config = serde_ignored::deserialize(toml::Deserializer::new(text), |path| {
        unknown.push(path.to_string());
    })?;
    Ok(unknown)
}
