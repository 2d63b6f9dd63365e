//! The events a channel tells (issue 25; expectations-v1 §13.1): a lapse ([`LapseEvent`], read
//! from its outbox entry) and what an agent's delivery and card do ([`AgentEvent`]), each with a
//! deterministic id and the links a person follows.

use percent_encoding::{utf8_percent_encode, NON_ALPHANUMERIC};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use watcher_core::ids::{AgentId, Subject, Tenant};
use watcher_core::lapse::LapseBlock;
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;
use watcher_core::EXPECTATIONS_URI;
use watcher_runtime::directory::{CardHealth, CardState};
use watcher_runtime::resolution::Resolution;
use watcher_runtime::store::OutboxEntry;

/// What a channel can tell (its `events` filter; the Standard Webhooks `type` of each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EventType {
    /// `lapse.recorded`: a lapse (overdue, skipped, stalled) was determined and its lapse task
    /// queued (expectations-v1 §13.1).
    LapseRecorded,
    /// `lapse.resolved`: a lapse the channel told has ended (its fact arrived late, its lapse
    /// task's Task completed, its expectation was withdrawn or superseded, an operator
    /// acknowledged it; `watcher_runtime::resolution`). Told once, and only after its
    /// `lapse.recorded`.
    LapseResolved,
    /// `lapse_task.failed`: a lapse task was given up (refused by the agent, or retried until
    /// `give_up_after`) and waits for an operator's re-queue.
    LapseTaskFailed,
    /// `delivery.failing`: an agent's first failed lapse task since none was failed; told
    /// instead of that task's `lapse_task.failed`.
    DeliveryFailing,
    /// `card.unavailable`: an agent's card could not be read for [`CARD_GRACE_SECS`].
    CardUnavailable,
    /// `lapse_task.needs_person`: the Task an agent created for a lapse task asks for input or
    /// authorization (`TASK_STATE_INPUT_REQUIRED` / `TASK_STATE_AUTH_REQUIRED`,
    /// expectations-v1 §10.2): the agent concluded that a person must act.
    LapseTaskNeedsPerson,
}

/// How long an agent's card must have failed to read before `card.unavailable` is told, in
/// seconds: a card that is back within a minute is not worth a person's attention.
pub const CARD_GRACE_SECS: i64 = 60;

impl EventType {
    /// The events about an agent rather than one lapse.
    pub const AGENT: [EventType; 4] = [
        EventType::LapseTaskFailed,
        EventType::DeliveryFailing,
        EventType::CardUnavailable,
        EventType::LapseTaskNeedsPerson,
    ];

    /// Its name (`lapse.recorded`, …), as in `events` and the body's `type`.
    pub fn name(self) -> &'static str {
        match self {
            EventType::LapseRecorded => "lapse.recorded",
            EventType::LapseResolved => "lapse.resolved",
            EventType::LapseTaskFailed => "lapse_task.failed",
            EventType::DeliveryFailing => "delivery.failing",
            EventType::CardUnavailable => "card.unavailable",
            EventType::LapseTaskNeedsPerson => "lapse_task.needs_person",
        }
    }

    /// The type named `name`, if any.
    pub fn parse(name: &str) -> Option<EventType> {
        [EventType::LapseRecorded, EventType::LapseResolved]
            .into_iter()
            .chain(EventType::AGENT)
            .find(|e| e.name() == name)
    }
}

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
            .map(str::to_owned);
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

/// The end of a lapse a channel told (`data` of a `lapse.resolved` event): the lapse as its
/// `lapse.recorded` event told it (ids, kind, block, links), the id of that event, and how it
/// ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResolvedEvent {
    /// The event's id: `res_` and 32 hex digits of SHA-256 over (`lapse.resolved`, tenant,
    /// agent, the lapse task's `messageId`): deterministic, the same on every channel and
    /// retry, and distinct from the lapse's own `msg_…` id (a lapse is resolved once).
    #[serde(skip)]
    pub id: String,
    /// The id of the lapse's `lapse.recorded` event (its `webhook-id`; the incident formats'
    /// key: PagerDuty `dedup_key`, Opsgenie `alias`, the Alertmanager `lapse` label).
    pub lapse_event_id: String,
    /// The lapse, as `lapse.recorded` tells it.
    #[serde(flatten)]
    pub lapse: LapseEvent,
    /// How it ended: `{"at": instant (UTC), "reason": "fact" | "task" | "withdrawn" |
    /// "superseded" | "acknowledged", ...}` (`watcher_runtime::resolution::Resolution`).
    pub resolution: Resolution,
}

impl ResolvedEvent {
    /// The event of the resolved `entry` (its `resolved` is `resolution`); `public_url` makes
    /// the links.
    pub fn of(entry: &OutboxEntry, resolution: &Resolution, public_url: Option<&str>) -> Self {
        let lapse = LapseEvent::of(0, entry, public_url);
        ResolvedEvent {
            id: resolved_event_id(&entry.tenant, &entry.agent, &entry.message_id),
            lapse_event_id: lapse.id.clone(),
            lapse,
            resolution: resolution.clone(),
        }
    }

    /// Why it ended, in words: `its fact arrived`, `its lapse task's Task reached
    /// TASK_STATE_COMPLETED`, `its expectation was withdrawn: {detail}`, `its expectation was
    /// superseded by {id}`, `acknowledged by {who}`.
    pub fn reason(&self) -> String {
        use watcher_runtime::resolution::ResolutionReason as R;
        match &self.resolution.reason {
            R::Fact => "its fact arrived".to_owned(),
            R::Task { state } => format!("its lapse task's Task reached {state}"),
            R::Withdrawn { detail } => format!("its expectation was withdrawn: {detail}"),
            R::Superseded { by } => format!("its expectation was superseded by {by}"),
            R::Acknowledged { by } => format!("acknowledged by {by}"),
        }
    }

    /// The reason's name: `fact`, `task`, `withdrawn`, `superseded`, `acknowledged`.
    pub fn reason_name(&self) -> &'static str {
        use watcher_runtime::resolution::ResolutionReason as R;
        match &self.resolution.reason {
            R::Fact => "fact",
            R::Task { .. } => "task",
            R::Withdrawn { .. } => "withdrawn",
            R::Superseded { .. } => "superseded",
            R::Acknowledged { .. } => "acknowledged",
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

/// Something an agent's delivery or card did (`data` of a `lapse_task.failed`,
/// `delivery.failing` or `card.unavailable` event).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentEvent {
    /// `evt_` and 32 hex digits of SHA-256 over (type, tenant, agent, and the failed lapse
    /// task's `messageId` and failure instant, or the instant the card began to fail): the
    /// same on every channel and every retry.
    #[serde(skip)]
    pub id: String,
    /// Its type.
    #[serde(skip)]
    pub event: EventType,
    /// The tenant.
    pub tenant: Tenant,
    /// The agent.
    pub agent: AgentId,
    /// When it happened (UTC): the lapse task failed, or the card began to fail.
    pub at: Instant,
    /// What happened, in a sentence a person reads.
    pub text: String,
    /// The failure in words (the agent's answer, the card read's error).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Attempts made to deliver the failed lapse task.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attempts: Option<u32>,
    /// The failed lapse task, as its `lapse.recorded` event tells it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lapse_task: Option<LapseEvent>,
    /// The operator page of the tenant's agents (`/ui/agents`), when `public_url` is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

impl AgentEvent {
    /// The `lapse_task.failed` (or, for `event` = [`EventType::DeliveryFailing`], the
    /// `delivery.failing`) event of the failed outbox entry `entry`, which failed at its
    /// `next_attempt_at`.
    pub fn failed(event: EventType, entry: &OutboxEntry, public_url: Option<&str>) -> AgentEvent {
        let lapse = LapseEvent::of(0, entry, public_url);
        let error = entry.last_error.clone();
        let tries = match entry.attempts {
            1 => "1 attempt".to_owned(),
            n => format!("{n} attempts"),
        };
        let why = error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        let text = if event == EventType::DeliveryFailing {
            format!(
                "Lapse tasks to agent {} are failing. The lapse task {} failed after {tries}{why}. \
                 Failed lapse tasks wait for an operator: once the agent is fixed, re-queue them \
                 with `a2a-watcher retry` or POST /v1/lapses/retry.",
                entry.agent,
                lapse.headline()
            )
        } else {
            format!(
                "The lapse task {} to agent {} failed after {tries}{why}. It waits for an \
                 operator's re-queue.",
                lapse.headline(),
                entry.agent
            )
        };
        AgentEvent {
            id: hashed_id(
                "evt",
                &[
                    event.name(),
                    entry.tenant.as_str(),
                    entry.agent.as_str(),
                    &entry.message_id,
                    &entry.next_attempt_at.to_string(),
                ],
            ),
            event,
            tenant: entry.tenant.clone(),
            agent: entry.agent.clone(),
            at: entry.next_attempt_at,
            text,
            error,
            attempts: Some(entry.attempts),
            lapse_task: Some(lapse),
            link: agents_page(public_url),
        }
    }

    /// The `lapse_task.needs_person` event of the outbox entry `entry`, whose task waits for a
    /// person since `since` (its `needs_person_since`).
    pub fn needs_person(
        entry: &OutboxEntry,
        since: Instant,
        public_url: Option<&str>,
    ) -> AgentEvent {
        let lapse = LapseEvent::of(0, entry, public_url);
        let what = match entry.task_state.as_deref() {
            Some("TASK_STATE_AUTH_REQUIRED") => "authorization",
            _ => "input",
        };
        let task = entry.task_id.as_deref().unwrap_or("(unnamed)");
        AgentEvent {
            id: hashed_id(
                "evt",
                &[
                    EventType::LapseTaskNeedsPerson.name(),
                    entry.tenant.as_str(),
                    entry.agent.as_str(),
                    &entry.message_id,
                    &since.to_string(),
                ],
            ),
            event: EventType::LapseTaskNeedsPerson,
            tenant: entry.tenant.clone(),
            agent: entry.agent.clone(),
            at: since,
            text: format!(
                "Agent {} needs a person for the lapse task {}: its task {task} asks for {what} \
                 ({}). The watcher does not answer it; someone who can should, in the agent's \
                 own channel.",
                entry.agent,
                lapse.headline(),
                entry.task_state.as_deref().unwrap_or("interrupted")
            ),
            error: None,
            attempts: None,
            lapse_task: Some(lapse),
            link: agents_page(public_url),
        }
    }

    /// The `card.unavailable` event of `agent` of `tenant`, whose card reads fail since
    /// `since` (`health.failing_since`).
    pub fn card(
        tenant: &Tenant,
        agent: &AgentId,
        health: &CardHealth,
        since: Instant,
        public_url: Option<&str>,
    ) -> AgentEvent {
        let consequence = match health.state {
            CardState::Stale => "the last card read is in use meanwhile",
            _ => "no card was ever read, so the agent's pushes are refused (503) until one is",
        };
        let why = health
            .error
            .as_deref()
            .map(|e| format!(": {e}"))
            .unwrap_or_default();
        AgentEvent {
            id: hashed_id(
                "evt",
                &[
                    EventType::CardUnavailable.name(),
                    tenant.as_str(),
                    agent.as_str(),
                    &since.to_string(),
                ],
            ),
            event: EventType::CardUnavailable,
            tenant: tenant.clone(),
            agent: agent.clone(),
            at: since,
            text: format!(
                "The agent card of {agent} cannot be read since {since}{why}. The watcher keeps \
                 trying; {consequence}."
            ),
            error: health.error.clone(),
            attempts: None,
            lapse_task: None,
            link: agents_page(public_url),
        }
    }

    /// The event in a few words: `Lapse task failed: {headline} (agent booking)`,
    /// `Delivery failing: agent booking`, `Card unavailable: agent booking`.
    pub fn title(&self) -> String {
        match (self.event, &self.lapse_task) {
            (EventType::LapseTaskFailed, Some(l)) => {
                format!("Lapse task failed: {} (agent {})", l.headline(), self.agent)
            }
            (EventType::DeliveryFailing, _) => format!("Delivery failing: agent {}", self.agent),
            (EventType::CardUnavailable, _) => format!("Card unavailable: agent {}", self.agent),
            (EventType::LapseTaskNeedsPerson, Some(l)) => {
                format!("Needs a person: {} (agent {})", l.headline(), self.agent)
            }
            _ => format!("{}: agent {}", self.event.name(), self.agent),
        }
    }
}

fn agents_page(public_url: Option<&str>) -> Option<String> {
    public_url.map(|b| format!("{}/ui/agents", b.trim_end_matches('/')))
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

/// The id of the `lapse.resolved` event of the lapse task `message_id` of `agent` of `tenant`.
pub fn resolved_event_id(tenant: &Tenant, agent: &AgentId, message_id: &str) -> String {
    hashed_id(
        "res",
        &[
            "lapse.resolved",
            tenant.as_str(),
            agent.as_str(),
            message_id,
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_deterministic_and_distinct_per_agent() {
        let t = Tenant::parse("default".to_owned()).unwrap();
        let (a, b) = (
            AgentId::parse("booking".to_owned()).unwrap(),
            AgentId::parse("billing".to_owned()).unwrap(),
        );
        let m = "lapse:exp-1:overdue:2026-09-11T02:15:00Z";
        assert_eq!(event_id(&t, &a, m), event_id(&t, &a, m));
        assert_ne!(event_id(&t, &a, m), event_id(&t, &b, m));
        let id = event_id(&t, &a, m);
        assert!(id.starts_with("msg_") && id.len() == 36, "{id}");
        let r = resolved_event_id(&t, &a, m);
        assert_eq!(r, resolved_event_id(&t, &a, m));
        assert!(r.starts_with("res_") && r.len() == 36, "{r}");
        assert_ne!(&r[4..], &id[4..], "distinct from the lapse's id");
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
