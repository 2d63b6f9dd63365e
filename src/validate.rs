//! `a2a-watcher validate card|artifact FILE`: checks an Agent Card's Expectations declaration or
//! an artifact's Expectations metadata offline, with the watcher's own parsers
//! (`watcher_core::validate`), naming each field at fault. Exit 0 when valid, 1 otherwise.

use std::path::Path;

use anyhow::Context;
use serde_json::Value;
use watcher_core::validate::{self, Findings};

fn read_json(path: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    parse_json_file(path, text.as_bytes())
}

/// Parses the content of the file `path` as JSON the way the routes parse a body
/// ([`watcher_http::strict_json`]): a member that appears twice is refused by name.
///
/// # Errors
/// `{path}: the member "x" appears twice`, or `{path} is not JSON` with serde_json's message.
pub fn parse_json_file(path: &Path, bytes: &[u8]) -> anyhow::Result<Value> {
    use watcher_http::strict_json::{self, StrictJsonError};
    strict_json::from_slice(bytes).map_err(|e| match e {
        StrictJsonError::Duplicate { .. } => anyhow::anyhow!("{}: {e}", path.display()),
        StrictJsonError::Syntax(e) => {
            anyhow::Error::new(e).context(format!("{} is not JSON", path.display()))
        }
    })
}

/// The findings for a card file.
pub fn card(file: &Path) -> anyhow::Result<Findings> {
    Ok(validate::card(&read_json(file)?))
}

/// The findings for an artifact file; with `card`, kinds must be declared on that card.
pub fn artifact(file: &Path, card: Option<&Path>) -> anyhow::Result<Findings> {
    let declared = match card {
        None => None,
        Some(c) => {
            let doc = read_json(c)?;
            let d = watcher_core::card::declaration_from_card(&doc).map_err(|errors| {
                let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
                anyhow::anyhow!("the card {} is invalid: {}", c.display(), list.join("; "))
            })?;
            Some(d)
        }
    };
    Ok(validate::artifact(&read_json(file)?, declared.as_ref()))
}

/// Prints the findings (`error: …` and `warning: …` lines, then a verdict) and returns whether
/// the file is valid.
pub fn report(file: &Path, what: &str, findings: &Findings) -> bool {
    for e in &findings.errors {
        println!("error: {e}");
    }
    for w in &findings.warnings {
        println!("warning: {w}");
    }
    if findings.is_valid() {
        println!("{}: a valid {what}", file.display());
    } else {
        println!(
            "{}: not a valid {what} ({} error{})",
            file.display(),
            findings.errors.len(),
            if findings.errors.len() == 1 { "" } else { "s" }
        );
    }
    findings.is_valid()
}
