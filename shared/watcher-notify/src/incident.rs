//! The incident formats (issue 43): a lapse, or an agent's event, as an alert that the
//! on-call tools open and later close by a stable key: PagerDuty Events API v2
//! ([`pagerduty`]), the Opsgenie Alert API ([`opsgenie`]) and Prometheus Alertmanager's
//! `POST /api/v2/alerts` ([`alertmanager`]).
//!
//! Each event becomes one [`Incident`] (its key, summary, severity, priority, labels and
//! details), which each vendor's module writes in the vendor's documented field names and
//! limits. The key is the event's deterministic id ([`LapseEvent::id`], `msg_…`, the
//! `webhook-id` of the Standard Webhooks channel), so the same lapse is the same incident on
//! every retry and every deployment; the resolve payloads (PagerDuty `resolve`, Opsgenie close,
//! Alertmanager `endsAt`) are built from the same incident.
//!
//! Secrets stay out of the bodies built here: the PagerDuty `routing_key` and the Opsgenie
//! `GenieKey` are added when posting ([`Vendor::request`]).

use std::collections::BTreeMap;

use serde_json::{json, Value};
use watcher_core::record::LapseKind;
use watcher_core::time::{Instant, IsoDuration};

use crate::body::{kind_name, Digest, Notification};
use crate::channel::{Channel, Format};
use crate::event::{hashed_id, AgentEvent, EventType, LapseEvent, ResolvedEvent};
use crate::transport::{PostError, Transport};

pub mod alertmanager;
pub mod opsgenie;
pub mod pagerduty;

/// A PagerDuty severity (Events API v2 `payload.severity`), also Alertmanager's `severity`
/// label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// `critical`.
    Critical,
    /// `error`.
    Error,
    /// `warning`.
    Warning,
    /// `info`.
    Info,
}

impl Severity {
    /// Its name in the vendor's enum: `critical`, `error`, `warning`, `info`.
    pub fn name(self) -> &'static str {
        match self {
            Severity::Critical => "critical",
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }

    /// The severity `name` names, if any.
    pub fn parse(name: &str) -> Option<Severity> {
        [
            Severity::Critical,
            Severity::Error,
            Severity::Warning,
            Severity::Info,
        ]
        .into_iter()
        .find(|s| s.name() == name)
    }
}

/// An Opsgenie priority, `P1` (highest) to `P5`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Priority(u8);

impl Priority {
    /// `P1` … `P5`.
    pub fn name(self) -> String {
        format!("P{}", self.0)
    }

    /// The priority `name` (`P1` … `P5`) names, if any.
    pub fn parse(name: &str) -> Option<Priority> {
        let n: u8 = name.strip_prefix('P')?.parse().ok()?;
        (1..=5).contains(&n).then_some(Priority(n))
    }
}

/// How long an Alertmanager alert fires when `horizon` is not set: a day.
pub const DEFAULT_HORIZON: &str = "PT24H";

/// A channel's settings for the incident formats, defaults filled in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vendor {
    /// The PagerDuty routing key or the Opsgenie API key; `None` for Alertmanager.
    key: Option<String>,
    /// Severity per lapse kind (PagerDuty, Alertmanager).
    pub severity: BTreeMap<LapseKind, Severity>,
    /// Priority per lapse kind (Opsgenie).
    pub priority: BTreeMap<LapseKind, Priority>,
    /// How long an Alertmanager alert fires (`endsAt` − `startsAt`).
    pub horizon: IsoDuration,
}

impl Default for Vendor {
    /// No key; `overdue` `error` / `P2`, `stalled` and `skipped` `warning` / `P3`; a horizon of
    /// [`DEFAULT_HORIZON`].
    fn default() -> Vendor {
        Vendor {
            key: None,
            severity: BTreeMap::from([
                (LapseKind::Overdue, Severity::Error),
                (LapseKind::Stalled, Severity::Warning),
                (LapseKind::Skipped, Severity::Warning),
            ]),
            priority: BTreeMap::from([
                (LapseKind::Overdue, Priority(2)),
                (LapseKind::Stalled, Priority(3)),
                (LapseKind::Skipped, Priority(3)),
            ]),
            horizon: IsoDuration::parse(DEFAULT_HORIZON).unwrap_or_else(|_| IsoDuration::zero()),
        }
    }
}

fn kind_of(name: &str) -> Option<LapseKind> {
    match name {
        "overdue" => Some(LapseKind::Overdue),
        "skipped" => Some(LapseKind::Skipped),
        "stalled" => Some(LapseKind::Stalled),
        _ => None,
    }
}

impl Vendor {
    /// The settings of a channel: `key` (its `routing_key` or `api_key`), its `severity` and
    /// `priority` tables (lapse kind → value) over the defaults, its `horizon`.
    ///
    /// # Errors
    /// `severity.overdue: "high" is not a PagerDuty severity`, … (what `NotifyConfig::check`
    /// refuses first).
    pub fn new(
        key: Option<String>,
        severity: &BTreeMap<String, String>,
        priority: &BTreeMap<String, String>,
        horizon: Option<&IsoDuration>,
    ) -> Result<Vendor, String> {
        let mut v = Vendor {
            key,
            ..Vendor::default()
        };
        for (k, s) in severity {
            let kind = kind_of(k).ok_or_else(|| format!("severity: {k:?} is not a lapse"))?;
            let s = Severity::parse(s)
                .ok_or_else(|| format!("severity.{k}: {s:?} is not a PagerDuty severity"))?;
            v.severity.insert(kind, s);
        }
        for (k, p) in priority {
            let kind = kind_of(k).ok_or_else(|| format!("priority: {k:?} is not a lapse"))?;
            let p =
                Priority::parse(p).ok_or_else(|| format!("priority.{k}: {p:?} is not P1 … P5"))?;
            v.priority.insert(kind, p);
        }
        if let Some(h) = horizon {
            v.horizon = h.clone();
        }
        Ok(v)
    }

    /// The URL, headers and body to post `n` with on a channel of `format` whose `url` is
    /// `base` (already defaulted): PagerDuty posts to `base` with `routing_key` set in the
    /// body; Opsgenie to `{base}/v2/alerts` (a close: `{base}/v2/alerts/{alias}/close?
    /// identifierType=alias`, the alias taken out of the body) with `Authorization: GenieKey
    /// {key}`; Alertmanager to `{base}/api/v2/alerts`.
    pub fn request(
        &self,
        format: Format,
        base: &str,
        n: &Notification,
    ) -> (String, Vec<(&'static str, String)>, Value) {
        let key = self.key.clone().unwrap_or_default();
        match format {
            Format::PagerDuty => {
                let mut body = n.body.clone();
                if let Some(o) = body.as_object_mut() {
                    o.insert("routing_key".into(), Value::String(key));
                }
                (base.to_owned(), Vec::new(), body)
            }
            Format::Opsgenie => {
                let mut body = n.body.clone();
                // A close names its alert in the URL, not the body ([`opsgenie::close`]).
                let url = match body
                    .as_object_mut()
                    .and_then(|o| o.remove(opsgenie::CLOSE_ALIAS))
                {
                    Some(Value::String(alias)) => opsgenie::close_url(base, &alias),
                    _ => opsgenie::alerts_url(base),
                };
                (
                    url,
                    vec![("authorization", format!("GenieKey {key}"))],
                    body,
                )
            }
            _ => (alertmanager::alerts_url(base), Vec::new(), n.body.clone()),
        }
    }
}

/// Posts `n` on the incident channel `ch` (whose settings are `vendor`) with `transport`: to
/// the vendor's endpoint with its key ([`Vendor::request`]), without the Standard Webhooks
/// headers.
///
/// # Errors
/// The transport's; an `HTTP 400` (or Opsgenie's `422`, "semantically invalid") is
/// [`PostError::Rejected`]: the vendor will never take this event (PagerDuty's "invalid
/// event", Opsgenie's and Alertmanager's validation errors). `401`, `403`, `429` and `5xx`
/// stay [`PostError::Failed`], retried with the channel's backoff (a key an operator fixes).
pub async fn post(
    transport: &dyn Transport,
    vendor: &Vendor,
    ch: &Channel,
    n: &Notification,
) -> Result<(), PostError> {
    let (url, headers, body) = vendor.request(ch.format, &ch.url, n);
    let body = serde_json::to_vec(&body).map_err(|e| PostError::Failed(e.to_string()))?;
    match transport.post(&url, &headers, body, ch.timeout).await {
        Err(PostError::Failed(words))
            if words.starts_with("HTTP 400 ") || words.starts_with("HTTP 422 ") =>
        {
            Err(PostError::Rejected(words))
        }
        other => other,
    }
}

/// One event as an incident: what every vendor's payload is written from.
#[derive(Debug, Clone, PartialEq)]
pub struct Incident {
    /// Its stable key: the event's id (PagerDuty `dedup_key`, Opsgenie `alias`, the
    /// Alertmanager `lapse` label).
    pub key: String,
    /// One line: `Overdue: shipment.manifest for shipment PA-1 (agent booking)`.
    pub summary: String,
    /// The event in a person's words (the lapse task's text, the agent event's sentence).
    pub description: String,
    /// When it began (UTC): the lapse's `lapsedAt`, the agent event's instant.
    pub at: Instant,
    /// `overdue`, `skipped`, `stalled`, or the agent event's type (`delivery.failing`, …).
    pub kind: String,
    /// The tenant.
    pub tenant: String,
    /// The agent.
    pub agent: String,
    /// The subject's type, when the event is about a lapse with a block.
    pub subject_type: Option<String>,
    /// `{type} {id}` of the subject, when known.
    pub entity: Option<String>,
    /// The severity (PagerDuty, Alertmanager).
    pub severity: Severity,
    /// The priority (Opsgenie).
    pub priority: Priority,
    /// Where the event comes from: the host of the deployment's `public_url`, else
    /// `a2a-watcher`.
    pub source: String,
    /// The facts, by name (strings only: Opsgenie `details` and Alertmanager take no other).
    pub details: BTreeMap<String, String>,
    /// Links a person follows: (text, href).
    pub links: Vec<(String, String)>,
}

/// The host of `link` (`https://watcher.example/ui/…` → `watcher.example`), else
/// `a2a-watcher`.
fn source_of(link: Option<&str>) -> String {
    link.and_then(|l| l.split_once("://"))
        .map(|(_, rest)| rest.split(['/', '?', '#']).next().unwrap_or(""))
        .map(|a| a.rsplit('@').next().unwrap_or(a).to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "a2a-watcher".to_owned())
}

fn capitalised(k: LapseKind) -> &'static str {
    match k {
        LapseKind::Overdue => "Overdue",
        LapseKind::Skipped => "Skipped",
        LapseKind::Stalled => "Stalled",
    }
}

/// At most `max` characters of `s`, the last of them `…` when cut.
pub fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

impl Incident {
    /// The incident of the lapse `e` (redacted as the channel wants it) under `v`.
    pub fn of_lapse(e: &LapseEvent, v: &Vendor) -> Incident {
        let mut details = BTreeMap::from([
            ("event_id".to_owned(), e.id.clone()),
            ("tenant".to_owned(), e.tenant.to_string()),
            ("agent".to_owned(), e.agent.to_string()),
            ("lapse".to_owned(), kind_name(e.lapse).to_owned()),
            ("message_id".to_owned(), e.message_id.clone()),
            ("lapsed_at".to_owned(), e.lapsed_at.to_string()),
            ("delivery".to_owned(), e.delivery.to_owned()),
        ]);
        if let Some(b) = &e.block {
            for (k, val) in [
                ("expectation_id", b.expectation_id.to_string()),
                ("kind", b.kind.clone()),
                ("subject_type", b.subject.subject_type.clone()),
                ("subject_id", b.subject.id.clone()),
                ("expects", b.expects.clone()),
                ("due_at", b.due_at.to_string()),
            ] {
                details.insert(k.to_owned(), val);
            }
        }
        if let Some(t) = &e.text {
            details.insert("text".to_owned(), t.clone());
        }
        let links: Vec<(String, String)> = e
            .links
            .iter()
            .flat_map(|l| {
                [
                    ("Operator page".to_owned(), l.operator.clone()),
                    ("Timeline".to_owned(), l.timeline.clone()),
                ]
            })
            .collect();
        Incident {
            key: e.id.clone(),
            summary: format!(
                "{}: {} (agent {})",
                capitalised(e.lapse),
                e.headline(),
                e.agent
            ),
            description: e.text.clone().unwrap_or_else(|| e.headline()),
            at: e.lapsed_at,
            kind: kind_name(e.lapse).to_owned(),
            tenant: e.tenant.to_string(),
            agent: e.agent.to_string(),
            subject_type: e.block.as_ref().map(|b| b.subject.subject_type.clone()),
            entity: e
                .block
                .as_ref()
                .map(|b| format!("{} {}", b.subject.subject_type, b.subject.id)),
            severity: v
                .severity
                .get(&e.lapse)
                .copied()
                .unwrap_or(Severity::Warning),
            priority: v.priority.get(&e.lapse).copied().unwrap_or(Priority(3)),
            source: source_of(links.first().map(|(_, h)| h.as_str())),
            details,
            links,
        }
    }

    /// The incident of the agent event `e`: `delivery.failing` is `error` / `P2` (lapse tasks
    /// are not reaching an agent), the others `warning` / `P3`.
    pub fn of_agent(e: &AgentEvent) -> Incident {
        let mut details = BTreeMap::from([
            ("event_id".to_owned(), e.id.clone()),
            ("event".to_owned(), e.event.name().to_owned()),
            ("tenant".to_owned(), e.tenant.to_string()),
            ("agent".to_owned(), e.agent.to_string()),
            ("at".to_owned(), e.at.to_string()),
        ]);
        if let Some(err) = &e.error {
            details.insert("error".to_owned(), err.clone());
        }
        if let Some(n) = e.attempts {
            details.insert("attempts".to_owned(), n.to_string());
        }
        if let Some(l) = &e.lapse_task {
            details.insert("lapse_event_id".to_owned(), l.id.clone());
            details.insert("message_id".to_owned(), l.message_id.clone());
            if let Some(b) = &l.block {
                details.insert("subject_type".to_owned(), b.subject.subject_type.clone());
                details.insert("subject_id".to_owned(), b.subject.id.clone());
            }
        }
        let failing = e.event == EventType::DeliveryFailing;
        let links: Vec<(String, String)> = e
            .link
            .iter()
            .map(|l| ("Agents".to_owned(), l.clone()))
            .collect();
        let block = e.lapse_task.as_ref().and_then(|l| l.block.as_ref());
        Incident {
            key: e.id.clone(),
            summary: e.title(),
            description: e.text.clone(),
            at: e.at,
            kind: e.event.name().to_owned(),
            tenant: e.tenant.to_string(),
            agent: e.agent.to_string(),
            subject_type: block.map(|b| b.subject.subject_type.clone()),
            entity: block.map(|b| format!("{} {}", b.subject.subject_type, b.subject.id)),
            severity: if failing {
                Severity::Error
            } else {
                Severity::Warning
            },
            priority: Priority(if failing { 2 } else { 3 }),
            source: source_of(e.link.as_deref()),
            details,
            links,
        }
    }

    /// The incident of a digest (a channel of an incident format takes no `digest`; should one
    /// be made, it is one alert keyed by the digest's id).
    pub fn of_digest(d: &Digest, v: &Vendor) -> Incident {
        let worst = d
            .first
            .iter()
            .filter_map(|e| v.severity.get(&e.lapse).copied())
            .min()
            .unwrap_or(Severity::Warning);
        Incident {
            key: d.id.clone(),
            summary: format!("a2a-watcher: {}", d.summary()),
            description: format!("{} from {} to {}", d.summary(), d.from, d.to),
            at: d.from,
            kind: "lapse.digest".to_owned(),
            tenant: d
                .first
                .first()
                .map(|e| e.tenant.to_string())
                .unwrap_or_default(),
            agent: d.by_agent.keys().next().cloned().unwrap_or_default(),
            subject_type: None,
            entity: None,
            severity: worst,
            priority: Priority(3),
            source: source_of(d.link.as_deref()),
            details: BTreeMap::from([
                ("count".to_owned(), d.count.to_string()),
                ("opened".to_owned(), d.opened.to_string()),
                ("resolved".to_owned(), d.resolved.to_string()),
            ]),
            links: d
                .link
                .iter()
                .map(|l| ("Lapse tasks".to_owned(), l.clone()))
                .collect(),
        }
    }

    /// A test incident of `channel` at `now` (`a2a-watcher notify test`): severity `info`,
    /// priority `P5`, a key new each time.
    pub fn test(channel: &str, now: Instant) -> Incident {
        Incident {
            key: hashed_id("tst", &[channel, &now.to_string()]),
            summary: format!("Test notification from a2a-watcher for channel {channel}"),
            description: "Nothing lapsed: this alert only shows that the channel reaches you."
                .to_owned(),
            at: now,
            kind: "notify.test".to_owned(),
            tenant: String::new(),
            agent: String::new(),
            subject_type: None,
            entity: None,
            severity: Severity::Info,
            priority: Priority(5),
            source: "a2a-watcher".to_owned(),
            details: BTreeMap::from([("channel".to_owned(), channel.to_owned())]),
            links: Vec::new(),
        }
    }
}

/// The opening notification of `i` in `format` (an incident format; any other gets the
/// Alertmanager form, which none asks for).
pub fn open(format: Format, v: &Vendor, i: &Incident) -> Notification {
    let body = match format {
        Format::PagerDuty => pagerduty::trigger(i),
        Format::Opsgenie => opsgenie::create(i),
        _ => alertmanager::firing(i, &v.horizon),
    };
    Notification {
        id: i.key.clone(),
        body,
    }
}

/// The notification of one lapse in an incident `format`.
pub fn lapse(format: Format, v: &Vendor, e: &LapseEvent) -> Notification {
    open(format, v, &Incident::of_lapse(e, v))
}

/// The notification of the end of the lapse of `e` in an incident `format`, closing the
/// incident its `lapse.recorded` opened (the same key): PagerDuty `resolve` with the same
/// `dedup_key`; an Opsgenie close of the alias, its `note` saying why and when; the same
/// Alertmanager alert (same labels, annotations and `startsAt`) with `endsAt` = the
/// resolution's instant. Its id is the `lapse.resolved` event's (`res_…`).
pub fn resolved(format: Format, v: &Vendor, e: &ResolvedEvent) -> Notification {
    let i = Incident::of_lapse(&e.lapse, v);
    let body = match format {
        Format::PagerDuty => pagerduty::resolve(&i.key),
        Format::Opsgenie => {
            let note = format!("Resolved at {}: {}.", e.resolution.at, e.reason());
            let mut b = opsgenie::close(&i.source, &note);
            b[opsgenie::CLOSE_ALIAS] = Value::String(cut(&i.key, opsgenie::ALIAS_MAX));
            b
        }
        _ => alertmanager::resolved(&i, e.resolution.at),
    };
    Notification {
        id: e.id.clone(),
        body,
    }
}

/// The notification of an agent's event in an incident `format`.
pub fn agent_event(format: Format, v: &Vendor, e: &AgentEvent) -> Notification {
    open(format, v, &Incident::of_agent(e))
}

/// The notification of a digest in an incident `format`.
pub fn digest(format: Format, v: &Vendor, d: &Digest) -> Notification {
    open(format, v, &Incident::of_digest(d, v))
}

/// A sample notification in an incident `format` (`a2a-watcher notify test`).
pub fn test(format: Format, v: &Vendor, channel: &str, now: Instant) -> Notification {
    open(format, v, &Incident::test(channel, now))
}

/// `details` as a JSON object of strings.
fn details(i: &Incident) -> Value {
    json!(i.details)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cut_counts_characters_and_marks_the_cut() {
        assert_eq!(cut("abc", 3), "abc");
        assert_eq!(cut("abcd", 3), "ab…");
        assert_eq!(cut("ééééé", 4).chars().count(), 4);
    }

    #[test]
    fn the_source_is_the_public_hosts_name() {
        assert_eq!(
            source_of(Some("https://u@watcher.example:8443/ui/x")),
            "watcher.example:8443"
        );
        assert_eq!(source_of(None), "a2a-watcher");
    }

    #[test]
    fn severities_and_priorities_parse_only_the_vendors_values() {
        for s in ["critical", "error", "warning", "info"] {
            assert_eq!(Severity::parse(s).map(Severity::name), Some(s));
        }
        assert_eq!(Severity::parse("high"), None);
        assert_eq!(
            Priority::parse("P1").map(Priority::name).as_deref(),
            Some("P1")
        );
        assert_eq!(
            Priority::parse("P5").map(Priority::name).as_deref(),
            Some("P5")
        );
        assert_eq!(Priority::parse("P0"), None);
        assert_eq!(Priority::parse("P6"), None);
        assert_eq!(Priority::parse("2"), None);
    }
}
