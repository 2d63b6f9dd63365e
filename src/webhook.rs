//! `a2a-watcher webhook test --config F --source ID PAYLOAD.json`: the dry run of a source's
//! webhook mappings (contracts/serve.md "Carrier webhooks"). It prints the facts a payload would
//! yield, or the error the route would answer with, and records nothing (no store is opened).
//! Signatures are not checked: a dry run has no request headers.

use std::path::Path;

use anyhow::{anyhow, Context};
use serde_json::{json, Value};
use watcher_config::Config;
use watcher_webhooks::Outcome;

/// What the dry run prints on stdout, or the mapping error (as the route's 422 would name it).
///
/// # Errors
/// An unreadable or invalid configuration, an unknown source, an unreadable or non-JSON payload,
/// or a matched mapping that cannot be read from the payload.
pub fn dry_run(config: &Path, source: &str, payload: &Path) -> anyhow::Result<Value> {
    let config = Config::load(config)?;
    let src = config
        .sources
        .iter()
        .find(|s| s.id == source)
        .ok_or_else(|| {
            let known: Vec<&str> = config.sources.iter().map(|s| s.id.as_str()).collect();
            anyhow!("no source {source:?} in the configuration (sources: {known:?})")
        })?;
    let hook = src.hook()?;
    let text =
        std::fs::read(payload).with_context(|| format!("Failed to read {}", payload.display()))?;
    let value = crate::validate::parse_json_file(payload, &text)?;
    match hook.mappings.apply(&value) {
        Ok(Outcome::Unmatched) => Ok(json!({ "source": source, "facts": [], "unmatched": true })),
        Ok(Outcome::Facts(facts)) => Ok(json!({
            "source": source,
            "facts": facts.iter().map(watcher_webhooks::MappedFact::to_json).collect::<Vec<_>>(),
        })),
        Err(e) => Err(anyhow!(
            "{e} (the webhook would answer 422 and record nothing)"
        )),
    }
}
