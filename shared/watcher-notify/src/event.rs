//! A lapse as a notification event (issue 25; expectations-v1 §13.1): read from its outbox
//! entry, with a deterministic id and the links a person follows.

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use watcher_core::ids::{AgentId, Subject, Tenant};
use watcher_core::lapse::LapseBlock;
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_core::EXPECTATIONS_URI;
use watcher_runtime::store::OutboxEntry;

/// One lapse recorded, as every channel tells it (`data` of a `lapse.recorded` event).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LapseEvent {
    /// The event's id: `msg_` and 32 hex digits of SHA-256 over (tenant, agent, the lapse
    /// task's `messageId`). The same lapse has the same id on every channel and every retry
    /// (Standard Webhooks' `webhook-id`, which receivers deduplicate on).
    #[serde(skip)]
    pub id: String,
    /// The lapse page position it was read at (the channel's cursor moves past it).
    #[serde(skip)]
    pub position: u64,
    /// The tenant.
    pub tenant: Tenant,
    /// The agent that raised the expectation (the lapse task goes to it).
    pub agent: AgentId,
    /// The lapse task's deterministic `messageId` (semantics.md "The lapse task").
    pub message_id: String,
    /// `overdue`, `skipped` or `stalled`.
    pub lapse: LapseKind,
    /// When the watcher determined the lapse (UTC).
    pub lapsed_at: Instant,
    /// The lapse block the lapse task carries (expectations-v1 §10.1): expectation id, kind,
    /// subject, expects, due times, lineage. Absent only for an entry whose stored request
    /// does not hold one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub block: Option<LapseBlock>,
    /// The lapse in a person's words (the lapse task's text).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The lapse task's delivery state when the event was read (`queued`, `sent`, …).
    pub delivery: &'static str,
    /// Links to the operator page and the timeline of the subject, when the deployment's
    /// `public_url` is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub links: Option<Links>,
}

/// Where a person reads more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Links {
    /// The subject's operator page (`/ui/subjects/{type}/{id}`).
    pub operator: String,
    /// The subject's timeline picture (`/v1/subjects/{type}/{id}/timeline.svg`).
    pub timeline: String,
}

impl LapseEvent {
    /// The event of `entry`, read at `position`; `public_url` (no trailing slash needed) makes
    /// the links.
    pub fn of(position: u64, entry: &OutboxEntry, public_url: Option<&str>) -> LapseEvent {
        let block: Option<LapseBlock> = entry
            .request
            .pointer("/message/metadata")
            .and_then(|m| m.get(EXPECTATIONS_URI))
            .and_then(|m| m.get("lapse"))
            .and_then(|b| serde_json::from_value(b.clone()).ok());
        let text = entry
            .request
            .pointer("/message/parts/0/text")
            .and_then(Value::as_str)
            .map(str::to_string);
        let links = public_url
            .zip(block.as_ref())
            .map(|(base, b)| Links::of(base, &b.subject));
        LapseEvent {
            id: event_id(&entry.tenant, &entry.agent, &entry.message_id),
            position,
            tenant: entry.tenant.clone(),
            agent: entry.agent.clone(),
            message_id: entry.message_id.clone(),
            lapse: entry.lapse,
            lapsed_at: entry.lapsed_at,
            block,
            text,
            delivery: entry.delivery.as_str(),
            links,
        }
    }

    /// `{kind} for {subject type} {subject id}`, or the expectation id when the block is
    /// missing: the event's name in a sentence.
    pub fn headline(&self) -> String {
        match &self.block {
            Some(b) => format!("{} for {} {}", b.kind, b.subject.subject_type, b.subject.id),
            None => format!("expectation {}", self.message_id),
        }
    }
}

impl Links {
    /// The links of `subject` under `base`.
    pub fn of(base: &str, subject: &Subject) -> Links {
        let base = base.trim_end_matches('/');
        let (t, id) = (
            utf8_percent_encode(&subject.subject_type, NON_ALPHANUMERIC),
            utf8_percent_encode(&subject.id, NON_ALPHANUMERIC),
        );
        Links {
            operator: format!("{base}/ui/subjects/{t}/{id}"),
            timeline: format!("{base}/v1/subjects/{t}/{id}/timeline.svg"),
        }
    }
}

/// `{prefix}_` and 32 hex digits of SHA-256 over `parts`, each ended by a newline: an id
/// that is the same for the same parts and fits a header.
pub fn hashed_id(prefix: &str, parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update(b"\n");
    }
    let digest = h.finalize();
    format!("{prefix}_{}", hex::encode(&digest[..16]))
}

/// The id of the lapse event of the lapse task `message_id` of `agent` of `tenant`.
pub fn event_id(tenant: &Tenant, agent: &AgentId, message_id: &str) -> String {
    hashed_id(
        "msg",
        &["lapse", tenant.as_str(), agent.as_str(), message_id],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deterministic_and_distinct_per_agent() {
        let t = Tenant::parse("default".to_string()).unwrap();
        let (a, b) = (
            AgentId::parse("booking".to_string()).unwrap(),
            AgentId::parse("billing".to_string()).unwrap(),
        );
        let m = "lapse:exp-1:overdue:2026-09-11T02:15:00Z";
        assert_eq!(event_id(&t, &a, m), event_id(&t, &a, m));
        assert_ne!(event_id(&t, &a, m), event_id(&t, &b, m));
        let id = event_id(&t, &a, m);
        assert!(id.starts_with("msg_") && id.len() == 36, "{id}");
    }

    #[test]
    fn links_encode_the_subject_as_path_segments() {
        let s = Subject {
            subject_type: "shipment".into(),
            id: "PA 1/2".into(),
        };
        let l = Links::of("https://watcher.example/", &s);
        assert_eq!(
            l.operator,
            "https://watcher.example/ui/subjects/shipment/PA%201%2F2"
        );
        assert_eq!(
            l.timeline,
            "https://watcher.example/v1/subjects/shipment/PA%201%2F2/timeline.svg"
        );
    }
}
