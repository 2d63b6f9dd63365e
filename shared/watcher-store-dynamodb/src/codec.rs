//! How the store's values become DynamoDB items and back: attribute helpers, the JSON forms of
//! what subjects contribute to the indexes, retention instants, and item size estimates.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use aws_sdk_dynamodb::types::AttributeValue;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use watcher_core::engine::{LiveUntil, Rejection, TimerKey};
use watcher_core::ids::{AgentId, ExpectationId, FactKey};
use watcher_core::record::RaiseOrder;
use watcher_core::slice::{SubjectState, TaskRecord};
use watcher_core::time::Instant;
use watcher_runtime::index::SubjectIndex;
use watcher_runtime::retention::{
    outbox_retention, rejection_retention, subject_retention, task_retention, Retention,
};
use watcher_runtime::store::{OutboxEntry, StoreError};

use crate::keys::{instant_key, AFTER_EVERY_INSTANT};

/// One DynamoDB item.
pub(crate) type Item = HashMap<String, AttributeValue>;

/// A string attribute.
pub(crate) fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// A number attribute.
pub(crate) fn n(v: impl std::fmt::Display) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

/// A string attribute of `item`.
///
/// # Errors
/// [`StoreError::Corrupt`] naming `what` when it is missing or not a string.
pub(crate) fn get_s<'a>(item: &'a Item, name: &str, what: &str) -> Result<&'a str, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v),
        _ => Err(StoreError::Corrupt(format!(
            "{what}: attribute `{name}` is missing or not a string"
        ))),
    }
}

/// A signed number attribute of `item` (a counter that an `ADD` may have taken below zero).
///
/// # Errors
/// [`StoreError::Corrupt`] naming `what` when it is missing or not an i64.
pub(crate) fn get_i64(item: &Item, name: &str, what: &str) -> Result<i64, StoreError> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().map_err(|e| {
            StoreError::Corrupt(format!(
                "{what}: attribute `{name}` = {v:?} is not an i64 ({e})"
            ))
        }),
        _ => Err(StoreError::Corrupt(format!(
            "{what}: attribute `{name}` is missing or not a number"
        ))),
    }
}

/// A non-negative integer attribute of `item`.
///
/// # Errors
/// [`StoreError::Corrupt`] naming `what` when it is missing or not a `u64`.
pub(crate) fn get_u64(item: &Item, name: &str, what: &str) -> Result<u64, StoreError> {
    match item.get(name) {
        Some(AttributeValue::N(v)) => v.parse().map_err(|e| {
            StoreError::Corrupt(format!(
                "{what}: attribute `{name}` = {v:?} is not a u64 ({e})"
            ))
        }),
        _ => Err(StoreError::Corrupt(format!(
            "{what}: attribute `{name}` is missing or not a number"
        ))),
    }
}

/// A value as JSON text.
///
/// # Errors
/// [`StoreError::Backend`] if serde refuses it (not expected for the record's types).
pub(crate) fn to_json<T: Serialize>(v: &T) -> Result<String, StoreError> {
    serde_json::to_string(v).map_err(crate::error::backend)
}

/// JSON text read back.
///
/// # Errors
/// [`StoreError::Corrupt`] naming `what` when it does not parse as a `T`.
pub(crate) fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("{what}: {e}")))
}

/// What a subject contributed to the index rows when it was last written (attribute
/// `indexed`): read before a commit so that only new or changed rows are written.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Indexed {
    /// Fact keys with a row in the fact-key index pointing at this subject.
    pub facts: BTreeSet<FactKey>,
    /// Expectations with a row in the id index, and the `liveUntil` written on that row
    /// (`None`: not live, no `live` index entry).
    pub expectations: Vec<IndexedExpectation>,
}

/// One expectation row as last written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct IndexedExpectation {
    /// The raising agent.
    pub agent: AgentId,
    /// Its `expectationId`.
    pub id: ExpectationId,
    /// The `live` index sort key, while it can lapse.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live_until: Option<String>,
}

impl Indexed {
    /// The rows `ix` (derived from a subject's new state) asks for.
    pub(crate) fn of(ix: &SubjectIndex) -> Indexed {
        let mut live: BTreeMap<(AgentId, ExpectationId), Option<String>> = BTreeMap::new();
        for (key, _agent, until) in &ix.live {
            live.insert((key.agent.clone(), key.id.clone()), live_key(*until));
        }
        Indexed {
            facts: ix.fact_keys.iter().cloned().collect(),
            expectations: ix
                .expectations
                .iter()
                .map(|e| IndexedExpectation {
                    agent: e.agent.clone(),
                    id: e.id.clone(),
                    live_until: live
                        .get(&(e.agent.clone(), e.id.clone()))
                        .cloned()
                        .flatten(),
                })
                .collect(),
        }
    }

    /// Rows of `self` that `stored` does not hold as they are: new fact keys, and expectations
    /// that are new or whose `liveUntil` changed.
    pub(crate) fn changed_since(
        &self,
        stored: &Indexed,
    ) -> (Vec<FactKey>, Vec<IndexedExpectation>) {
        let facts = self
            .facts
            .iter()
            .filter(|k| !stored.facts.contains(*k))
            .cloned()
            .collect();
        let before: BTreeMap<(&AgentId, &ExpectationId), &Option<String>> = stored
            .expectations
            .iter()
            .map(|e| ((&e.agent, &e.id), &e.live_until))
            .collect();
        let expectations = self
            .expectations
            .iter()
            .filter(|e| before.get(&(&e.agent, &e.id)) != Some(&&e.live_until))
            .cloned()
            .collect();
        (facts, expectations)
    }
}

/// The `live` index sort key of a record: its live-until instant, all 9s while it waits on an
/// anchor, none once it cannot lapse.
fn live_key(until: LiveUntil) -> Option<String> {
    match until {
        LiveUntil::Closed => None,
        LiveUntil::Indefinite => Some(AFTER_EVERY_INSTANT.to_owned()),
        LiveUntil::Until(t) => Some(instant_key(t)),
    }
}

/// One pending timer in a subject's `timers` attribute.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StoredTimer {
    /// When it falls due.
    pub at: Instant,
    /// Raising order of its record.
    pub order: RaiseOrder,
    /// Which timer.
    pub key: TimerKey,
}

/// `at` plus `days` as epoch seconds, the TTL attribute's unit.
pub(crate) fn expires_at(at: Instant, days: u32) -> i64 {
    at.as_second()
        .saturating_add(i64::from(days).saturating_mul(86_400))
}

/// A TTL from a [`Retention`]: its last activity plus `days`. `None` (no TTL) for an item that
/// must be kept, for [`Retention::Unreferenced`] (which this store never asks for: it cannot
/// tell whether a task's subjects are stored), and for every item when `days` is 0 (keep
/// forever, as `serve` does).
pub(crate) fn ttl(retention: Retention, days: u32) -> Option<i64> {
    if days == 0 {
        return None;
    }
    retention.since().map(|t| expires_at(t, days))
}

/// When a subject may be forgotten ([`subject_retention`]): once none of its records can lapse
/// any more, its last activity plus the retention.
pub(crate) fn subject_expiry(state: &SubjectState, days: u32) -> Option<i64> {
    ttl(subject_retention(state), days)
}

/// When a task record may be forgotten ([`task_retention`]): once its last status is terminal,
/// that status's receipt plus the retention. The table cannot tell at write time whether the
/// task's subjects are still stored, so they are taken to be.
pub(crate) fn task_expiry(task: &TaskRecord, days: u32) -> Option<i64> {
    ttl(task_retention(task, true), days)
}

/// When a lapse task may be forgotten ([`outbox_retention`]): once it is `sent` or `failed`,
/// its latest instant plus the retention. A queued entry is kept: it has still to be delivered.
pub(crate) fn outbox_expiry(entry: &OutboxEntry, days: u32) -> Option<i64> {
    ttl(outbox_retention(entry), days)
}

/// When an item of rejections may be forgotten ([`rejection_retention`]): the latest of them
/// plus the retention.
pub(crate) fn rejections_expiry<'a>(
    rejections: impl IntoIterator<Item = &'a Rejection>,
    days: u32,
) -> Option<i64> {
    let latest = rejections
        .into_iter()
        .filter_map(|r| rejection_retention(r).since())
        .max()?;
    ttl(Retention::Since(latest), days)
}

/// An upper estimate of an item's stored size: attribute names plus values (numbers counted as
/// their decimal text, which is never less than DynamoDB's own count).
pub(crate) fn item_size(item: &Item) -> usize {
    item.iter()
        .map(|(name, v)| {
            name.len()
                + match v {
                    AttributeValue::S(x) | AttributeValue::N(x) => x.len(),
                    AttributeValue::Bool(_) | AttributeValue::Null(_) => 1,
                    // Not written by this store; counted generously.
                    other => format!("{other:?}").len(),
                }
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_epoch_seconds_plus_days() {
        let t = Instant::parse("2026-09-10T12:00:00Z").unwrap();
        assert_eq!(expires_at(t, 0), 1_789_041_600);
        assert_eq!(expires_at(t, 30), 1_789_041_600 + 30 * 86_400);
        assert_eq!(
            ttl(Retention::Since(t), 30),
            Some(1_789_041_600 + 30 * 86_400)
        );
        assert_eq!(ttl(Retention::Since(t), 0), None, "0 days keeps forever");
        assert_eq!(ttl(Retention::Keep, 30), None);
        assert_eq!(ttl(Retention::Unreferenced, 30), None);
    }

    #[test]
    fn changed_rows_are_new_keys_and_moved_live_until() {
        let agent = AgentId::parse("booking").unwrap();
        let e = |id: &str, live: Option<&str>| IndexedExpectation {
            agent: agent.clone(),
            id: ExpectationId::parse(id).unwrap(),
            live_until: live.map(str::to_owned),
        };
        let k = |v: &str| FactKey::parse(v).unwrap();
        let stored = Indexed {
            facts: [k("a")].into(),
            expectations: vec![e("e1", Some("1")), e("e2", Some("2"))],
        };
        let new = Indexed {
            facts: [k("a"), k("b")].into(),
            expectations: vec![e("e1", Some("1")), e("e2", None), e("e3", Some("3"))],
        };
        let (facts, exps) = new.changed_since(&stored);
        assert_eq!(facts, vec![k("b")]);
        assert_eq!(exps, vec![e("e2", None), e("e3", Some("3"))]);
        assert_eq!(new.changed_since(&new), (vec![], vec![]));
    }
}
