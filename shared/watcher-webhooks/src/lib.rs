//! Carrier webhooks without glue (contracts/serve.md "Carrier webhooks",
//! `POST /v1/sources/{sourceId}/webhook`): a source's mappings turn a carrier's own JSON into facts
//! (expectations-v1 §9.2), and its optional signature authenticates the carrier. Pure: payloads,
//! headers and the current instant in; facts, or errors naming the mapping, field and pointer, out.
//! The HTTP route (watcher-http) and the configuration (watcher-config) use it; so does the dry run
//! `a2a-watcher webhook test`.

pub mod mapping;
pub mod pointer;
pub mod signature;
pub mod template;

pub use mapping::{MappedFact, Mapping, MappingConfig, MappingError, Mappings, Outcome};
pub use signature::{Signature, SignatureConfig, SignatureError};

/// What one source's webhook needs: its checked mappings and, when configured, its signature.
#[derive(Debug, Clone, Default)]
pub struct SourceHook {
    /// When set, requests must carry a valid signature (the signature replaces the bearer token).
    pub signature: Option<Signature>,
    /// The mappings, in configuration order.
    pub mappings: Mappings,
}

impl SourceHook {
    /// Checks a source's `[sources.signature]` and `[[sources.mappings]]`.
    ///
    /// # Errors
    /// A message naming the mapping (or `signature`) and the field, e.g.
    /// `mapping "tracker.updated": field `fact_key`: …` or `signature: field `tolerance`: …`.
    pub fn compile(
        signature: Option<&SignatureConfig>,
        mappings: &[MappingConfig],
    ) -> Result<SourceHook, String> {
        let signature = match signature {
            None => None,
            Some(c) => Some(
                Signature::compile(c)
                    .map_err(|(field, reason)| format!("signature: field `{field}`: {reason}"))?,
            ),
        };
        let mappings = Mappings::compile(mappings).map_err(|e| e.to_string())?;
        Ok(SourceHook {
            signature,
            mappings,
        })
    }
}
