//! The subject view operators read (contracts/serve.md, `GET /v1/subjects/{type}/{id}`):
//! `{ "subject", "expectations": [ExpectationRecord], "facts": [...] }`. One function, so the
//! HTTP route, the web page, the timeline picture and `a2a-watcher subject --db` answer alike.

use serde_json::{json, Value};
use watcher_core::slice::SubjectState;

/// The subject view of `state`: the subject, every ExpectationRecord on it in raising order
/// (contracts/replay.md shape) and its facts in receipt order, each
/// `{ "factKey", "source", "observedAt", "receivedAt", "satisfied": [ids], "mapping"?,
/// "claimedObservedAt"? }` (UTC instants).
pub fn subject_view(state: &SubjectState) -> Value {
    let facts: Vec<Value> = state
        .facts
        .iter()
        .map(|f| {
            let mut v = json!({
                "factKey": f.fact_key,
                "source": f.source,
                "observedAt": f.observed_at,
                "receivedAt": f.received_at,
                "satisfied": f.satisfied.iter().map(|s| s.id.to_string()).collect::<Vec<_>>(),
            });
            if let Some(mapping) = &f.mapping {
                v["mapping"] = json!(mapping);
            }
            // semantics.md "Time": the value as given, beside the effective one.
            if let Some(given) = &f.observed_at_given {
                v["claimedObservedAt"] = json!(given);
            } else if f.claimed_observed_at != f.observed_at {
                v["claimedObservedAt"] = json!(f.claimed_observed_at);
            }
            v
        })
        .collect();
    json!({
        "subject": state.subject,
        "expectations": state.records.iter().map(|r| r.to_contract_json()).collect::<Vec<_>>(),
        "facts": facts,
    })
}
