//! Facts reported by a source as one application step (`POST /v1/facts`, carrier webhooks):
//! the facts applied all or nothing, with what the request ignored kept as the source's warnings
//! in the same commit, and the outcome typed (expectations-v1 §9, §13.5).

use serde::Serialize;
use watcher_core::engine::{Effect, Input, Rejection};
use watcher_core::fact::Fact;
use watcher_core::ids::{AgentId, ExpectationId, FactKey, Source, Tenant};
use watcher_core::time::Instant;

use crate::store::Store;
use crate::watcher::{ApplyError, Watcher};

/// What reported facts did, as `POST /v1/facts` answers it:
/// `{ "results": [{ "factKey", "satisfied" }], "alreadyRecorded"?, "warnings"? }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FactsOutcome {
    /// One per fact recorded, in order.
    pub results: Vec<FactResult>,
    /// Keys of facts received before exactly (key, source, `observedAt`: fact identity, §9.1),
    /// recorded once, so these changed nothing; sorted, each once.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub already_recorded: Vec<String>,
    /// What the request ignored (members a fact does not define), kept on the record under the
    /// source ([`source_key`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<String>,
}

/// One fact's result: `{ "factKey", "satisfied": [expectationId] }`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct FactResult {
    /// The fact's key.
    pub fact_key: FactKey,
    /// The expectations it satisfied.
    pub satisfied: Vec<ExpectationId>,
}

/// The key under which a source's warnings are kept with the rejections: `source:{sourceId}`
/// (sources and agents share the rejections store; the prefix keeps them apart). `None` for a
/// source id too long to carry the prefix.
pub fn source_key(source: &str) -> Option<AgentId> {
    AgentId::parse(format!("source:{source}")).ok()
}

impl<S: Store + ?Sized> Watcher<S> {
    /// Records `facts` of `source` for `tenant` at `now`, all or nothing, with `warnings` (what
    /// the request ignored) kept as the source's rejections marked `warning` in the same
    /// commit, and answers what they did.
    ///
    /// # Errors
    /// The store's failure: nothing was recorded.
    pub async fn report_facts(
        &self,
        tenant: &Tenant,
        source: &Source,
        facts: Vec<Fact>,
        warnings: Vec<String>,
        now: Instant,
    ) -> Result<FactsOutcome, ApplyError> {
        let kept: Vec<Rejection> = match source_key(source.as_str()) {
            Some(key) => warnings
                .iter()
                .map(|w| Rejection {
                    agent: key.clone(),
                    expectation_id: None,
                    reason: w.clone(),
                    task_id: None,
                    at: now,
                    warning: true,
                })
                .collect(),
            None => Vec::new(),
        };
        let applied = self
            .apply_keeping(tenant, &Input::Facts(facts), kept, now)
            .await?;
        let mut out = FactsOutcome {
            warnings,
            ..FactsOutcome::default()
        };
        for e in &applied.effects {
            if let Effect::FactRecorded {
                fact_key,
                satisfied,
                duplicate,
                ..
            } = e
            {
                out.results.push(FactResult {
                    fact_key: fact_key.clone(),
                    satisfied: satisfied.iter().map(|s| s.id.clone()).collect(),
                });
                if *duplicate {
                    out.already_recorded.push(fact_key.to_string());
                }
            }
        }
        out.already_recorded.sort();
        out.already_recorded.dedup();
        Ok(out)
    }
}
