//! What a channel posts (issue 25): one lapse event, a lapse's end or a digest, in the
//! channel's [`Format`].
//!
//! * Standard Webhooks JSON: `{ "type": "lapse.recorded" | "lapse.resolved" | "lapse.digest"
//!   | "lapse_task.failed" | "delivery.failing" | "card.unavailable" | "notify.test", "timestamp": UTC instant,
//!   "data": … }` (the structure the Standard Webhooks specification
//!   recommends);
//! * Slack: `{ "text", "mrkdwn": false, "blocks" }`, `text` being what notifications and screen
//!   readers show;
//! * Teams: `{ "type": "message", "attachments": [Adaptive Card 1.4] }`, as Teams incoming
//!   webhooks (Workflows) take it;
//! * email: `{ "subject", "text" }`, sent as a plain-text message (`transport::send_email`).
//!
//! Agent text (subject ids and types, kinds, `expects`, the lapse task's text, agents' answers)
//! is made inert for the format it lands in ([`crate::escape`]): the Slack, Teams and email
//! bodies pass every text they show through it, so no agent text becomes a mention, a link or
//! formatting. The only links are the watcher's own (the operator page, the timeline). The
//! Standard Webhooks and SNS bodies carry the event as JSON data, unchanged: a receiver that
//! shows it to a person escapes it for its own format.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};
use watcher_core::lapse::LapseBlock;
use watcher_core::record::LapseKind;
use watcher_core::time::Instant;

use crate::channel::Format;
use crate::escape;
use crate::event::{hashed_id, AgentEvent, LapseEvent, ResolvedEvent};

/// How many lapses a digest lists by name; the rest are counted.
pub const DIGEST_LISTS: usize = 5;

/// A body ready to post, with its id (`webhook-id`).
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The event id: the same for every attempt of this notification.
    pub id: String,
    /// The JSON posted.
    pub body: Value,
}

/// A window's lapses told at once (`data` of a `lapse.digest` event).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Digest {
    /// `dig_` and 32 hex digits over (tenant, channel, first and last position): the same
    /// for every attempt.
    #[serde(skip)]
    pub id: String,
    /// The channel it was made for.
    pub channel: String,
    /// How many lapses it covers (the same as `opened`).
    pub count: u64,
    /// How many lapses it tells as opened (`lapse.recorded`).
    pub opened: u64,
    /// How many ends of lapses the channel told before or in it it tells (`lapse.resolved`),
    /// each once.
    pub resolved: u64,
    /// How many of each lapse (`overdue`, `skipped`, `stalled`).
    pub by_kind: BTreeMap<&'static str, u64>,
    /// How many per agent.
    pub by_agent: BTreeMap<String, u64>,
    /// The earliest instant it covers (UTC): the first lapse's `lapsedAt` or resolution's `at`.
    pub from: Instant,
    /// The latest instant it covers (UTC).
    pub to: Instant,
    /// The first [`DIGEST_LISTS`] lapses, in order.
    pub first: Vec<LapseEvent>,
    /// The operator page's list of lapse tasks, when `public_url` is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
}

impl Digest {
    /// The digest of `events` (in order, at least one) for `channel`.
    pub fn of(channel: &str, events: &[LapseEvent], public_url: Option<&str>) -> Option<Digest> {
        Digest::of_both(channel, events, &[], public_url)
    }

    /// The digest of the lapses `events` and the resolutions `resolved` (each in order; at
    /// least one of either) for `channel`. Its id is the lapse-only digest's when `resolved`
    /// is empty, else it also hashes each resolution's id and instant.
    pub fn of_both(
        channel: &str,
        events: &[LapseEvent],
        resolved: &[ResolvedEvent],
        public_url: Option<&str>,
    ) -> Option<Digest> {
        let instants = events
            .iter()
            .map(|e| e.lapsed_at)
            .chain(resolved.iter().map(|r| r.resolution.at));
        let from = instants.clone().min()?;
        let to = instants.max()?;
        let tenant = events
            .first()
            .map(|e| &e.tenant)
            .or_else(|| resolved.first().map(|r| &r.lapse.tenant))?;
        let mut parts: Vec<String> = vec![tenant.to_string(), channel.to_owned()];
        if let (Some(first), Some(last)) = (events.first(), events.last()) {
            parts.push(first.position.to_string());
            parts.push(last.position.to_string());
        }
        for r in resolved {
            parts.push(r.id.clone());
            parts.push(r.resolution.at.to_string());
        }
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        let mut by_kind = BTreeMap::new();
        let mut by_agent = BTreeMap::new();
        for e in events {
            *by_kind.entry(kind_name(e.lapse)).or_insert(0) += 1;
            *by_agent.entry(e.agent.as_str().to_owned()).or_insert(0) += 1;
        }
        Some(Digest {
            id: hashed_id("dig", &parts),
            channel: channel.to_owned(),
            count: events.len() as u64,
            opened: events.len() as u64,
            resolved: resolved.len() as u64,
            by_kind,
            by_agent,
            from,
            to,
            first: events.iter().take(DIGEST_LISTS).cloned().collect(),
            link: public_url.map(|b| format!("{}/ui/lapses", b.trim_end_matches('/'))),
        })
    }

    /// `12 lapses (10 overdue, 2 stalled)`; with resolutions `12 opened (10 overdue, 2
    /// stalled), 9 resolved` (`0 opened, 3 resolved` when none opened).
    pub fn summary(&self) -> String {
        let kinds: Vec<String> = self
            .by_kind
            .iter()
            .map(|(k, n)| format!("{n} {k}"))
            .collect();
        if self.resolved > 0 {
            let kinds = if kinds.is_empty() {
                String::new()
            } else {
                format!(" ({})", kinds.join(", "))
            };
            return format!("{} opened{kinds}, {} resolved", self.count, self.resolved);
        }
        let noun = if self.count == 1 { "lapse" } else { "lapses" };
        format!("{} {noun} ({})", self.count, kinds.join(", "))
    }
}

/// `overdue`, `skipped` or `stalled`.
pub fn kind_name(k: LapseKind) -> &'static str {
    match k {
        LapseKind::Overdue => "overdue",
        LapseKind::Skipped => "skipped",
        LapseKind::Stalled => "stalled",
    }
}

fn capitalised(k: LapseKind) -> &'static str {
    match k {
        LapseKind::Overdue => "Overdue",
        LapseKind::Skipped => "Skipped",
        LapseKind::Stalled => "Stalled",
    }
}

/// The notification of one lapse in `format`.
pub fn lapse(format: Format, event: &LapseEvent) -> Notification {
    let body = match format {
        Format::StandardWebhooks | Format::Sns => json!({
            "type": "lapse.recorded",
            "timestamp": event.lapsed_at.to_string(),
            "data": event,
        }),
        Format::Slack => slack_lapse(event),
        Format::Teams => teams_lapse(event),
        Format::Email => email_lapse(event),
        Format::PagerDuty | Format::Opsgenie | Format::Alertmanager => {
            return crate::incident::lapse(format, &crate::incident::Vendor::default(), event)
        }
    };
    Notification {
        id: event.id.clone(),
        body,
    }
}

/// The notification of the end of a lapse (`lapse.resolved`) in `format`: the Standard
/// Webhooks JSON (`timestamp` the resolution's instant, `data` the event), or for a person
/// `Resolved: {the lapse's line}` with why and when. An incident format gets the Alertmanager
/// form with default settings (the channel's own is [`crate::incident::resolved`]).
pub fn resolved(format: Format, e: &ResolvedEvent) -> Notification {
    let title = format!("Resolved: {}", lapse_line(&e.lapse));
    let why = format!("Resolved at {}: {}.", e.resolution.at, e.reason());
    let mut facts = event_facts(&e.lapse);
    facts.push(("Resolved", e.resolution.at.to_string()));
    facts.push(("Reason", e.reason_name().to_owned()));
    let body = match format {
        Format::StandardWebhooks | Format::Sns => json!({
            "type": "lapse.resolved",
            "timestamp": e.resolution.at.to_string(),
            "data": e,
        }),
        Format::Slack => {
            let mut blocks = vec![
                json!({ "type": "header", "text": slack_plain(&title) }),
                json!({ "type": "section", "text": slack_plain(&why) }),
                slack_facts(&facts),
            ];
            if let Some(l) = &e.lapse.links {
                blocks.push(json!({ "type": "context", "elements": [{ "type": "mrkdwn", "text": format!("<{}|Operator page> · <{}|Timeline>", l.operator, l.timeline) }] }));
            }
            slack_message(&title, blocks)
        }
        Format::Teams => {
            let body = vec![
                text_block(&title, true),
                text_block(&why, false),
                fact_set(&facts),
            ];
            let links = e
                .lapse
                .links
                .as_ref()
                .map(|l| {
                    vec![
                        ("Operator page", l.operator.as_str()),
                        ("Timeline", l.timeline.as_str()),
                    ]
                })
                .unwrap_or_default();
            teams_card(body, links)
        }
        Format::Email => {
            let mut text = format!("{}\n\n", escape::email(&why));
            for (k, v) in &facts {
                text.push_str(&format!("{k}: {}\n", escape::email(v)));
            }
            text.push_str(&format!(
                "Lapse task: {}\n",
                escape::email(&e.lapse.message_id)
            ));
            if let Some(l) = &e.lapse.links {
                text.push_str(&format!(
                    "\nOperator page: {}\nTimeline: {}\n",
                    l.operator, l.timeline
                ));
            }
            json!({ "subject": format!("[a2a-watcher] {}", escape::email(&title)), "text": text })
        }
        Format::PagerDuty | Format::Opsgenie | Format::Alertmanager => {
            return crate::incident::resolved(format, &crate::incident::Vendor::default(), e)
        }
    };
    Notification {
        id: e.id.clone(),
        body,
    }
}

/// The notification of a digest in `format`.
pub fn digest(format: Format, d: &Digest) -> Notification {
    let body = match format {
        Format::StandardWebhooks | Format::Sns => json!({
            "type": "lapse.digest",
            "timestamp": d.to.to_string(),
            "data": d,
        }),
        Format::Slack => slack_digest(d),
        Format::Teams => teams_digest(d),
        Format::Email => email_digest(d),
        Format::PagerDuty | Format::Opsgenie | Format::Alertmanager => {
            return crate::incident::digest(format, &crate::incident::Vendor::default(), d)
        }
    };
    Notification {
        id: d.id.clone(),
        body,
    }
}

/// The notification of an agent's event (a failed lapse task, failing delivery, an unreadable
/// card) in `format`: the event's sentence, its facts and a link to the agents page.
pub fn agent_event(format: Format, e: &AgentEvent) -> Notification {
    if format.is_incident() {
        return crate::incident::agent_event(format, &crate::incident::Vendor::default(), e);
    }
    let title = e.title();
    let mut facts: Vec<(&str, String)> = vec![("Agent", e.agent.to_string())];
    if let Some(l) = &e.lapse_task {
        if let Some(b) = &l.block {
            facts.push(subject_fact(b));
        }
        facts.push(("Lapse task", l.message_id.clone()));
    }
    facts.push(("When", e.at.to_string()));
    let body = match format {
        Format::StandardWebhooks | Format::Sns => json!({
            "type": e.event.name(),
            "timestamp": e.at.to_string(),
            "data": e,
        }),
        Format::Slack => {
            let mut blocks = vec![
                json!({ "type": "header", "text": slack_plain(&title) }),
                json!({ "type": "section", "text": slack_plain(&e.text) }),
                slack_facts(&facts),
            ];
            if let Some(link) = &e.link {
                blocks.push(json!({ "type": "context", "elements": [{ "type": "mrkdwn", "text": format!("<{link}|Agents>") }] }));
            }
            slack_message(&title, blocks)
        }
        Format::Teams => {
            let body = vec![
                text_block(&title, true),
                text_block(&e.text, false),
                fact_set(&facts),
            ];
            let links = e
                .link
                .as_deref()
                .map(|l| vec![("Agents", l)])
                .unwrap_or_default();
            teams_card(body, links)
        }
        Format::Email | Format::PagerDuty | Format::Opsgenie | Format::Alertmanager => {
            let mut text = format!("{}\n\n", escape::email(&e.text));
            for (k, v) in &facts {
                text.push_str(&format!("{k}: {}\n", escape::email(v)));
            }
            if let Some(link) = &e.link {
                text.push_str(&format!("\nAgents: {link}\n"));
            }
            json!({ "subject": format!("[a2a-watcher] {}", escape::email(&title)), "text": text })
        }
    };
    Notification {
        id: e.id.clone(),
        body,
    }
}

/// A sample notification (`a2a-watcher notify test`): says it is a test, names the channel,
/// changes nothing. Its id is new each time (`now` in it).
pub fn test(format: Format, channel: &str, now: Instant) -> Notification {
    if format.is_incident() {
        return crate::incident::test(format, &crate::incident::Vendor::default(), channel, now);
    }
    let text = format!("Test notification from a2a-watcher for channel {channel}");
    let id = hashed_id("tst", &[channel, &now.to_string()]);
    let body = match format {
        Format::StandardWebhooks | Format::Sns => json!({
            "type": "notify.test",
            "timestamp": now.to_string(),
            "data": { "channel": channel, "text": text },
        }),
        Format::Slack => slack_message(
            &text,
            vec![json!({ "type": "section", "text": slack_plain(&text) })],
        ),
        Format::Teams => teams_card(vec![text_block(&text, true)], Vec::new()),
        Format::Email | Format::PagerDuty | Format::Opsgenie | Format::Alertmanager => json!({
            "subject": "[a2a-watcher] Test notification",
            "text": format!("{text}.\n\nNothing lapsed: this message only shows that the channel reaches you.\n"),
        }),
    };
    Notification { id, body }
}

fn lapse_line(e: &LapseEvent) -> String {
    format!(
        "{}: {} (agent {})",
        capitalised(e.lapse),
        e.headline(),
        e.agent
    )
}

/// A Slack message: `text` (what notifications and screen readers show) escaped and shown
/// without mrkdwn formatting, and the blocks.
fn slack_message(text: &str, blocks: Vec<Value>) -> Value {
    json!({ "text": escape::slack(text), "mrkdwn": false, "blocks": blocks })
}

/// A Slack `plain_text` object showing `text` as written ([`escape::slack`]): Slack applies no
/// formatting to plain text, so `*`, `_`, `~` and backticks stay characters.
fn slack_plain(text: &str) -> Value {
    json!({ "type": "plain_text", "text": escape::slack(text) })
}

/// A Slack section of `facts`, one `plain_text` field each: `Agent: booking`.
fn slack_facts(facts: &[(&str, String)]) -> Value {
    let fields: Vec<Value> = facts
        .iter()
        .map(|(k, v)| slack_plain(&format!("{k}: {v}")))
        .collect();
    json!({ "type": "section", "fields": fields })
}

/// A Teams `FactSet` of `facts`, each value escaped ([`escape::teams`]).
fn fact_set(facts: &[(&str, String)]) -> Value {
    let facts: Vec<Value> = facts
        .iter()
        .map(|(k, v)| json!({ "title": k, "value": escape::teams(v) }))
        .collect();
    json!({ "type": "FactSet", "facts": facts })
}

/// The `Subject` fact of a lapse block: `"{type} {id}"`.
fn subject_fact(b: &LapseBlock) -> (&'static str, String) {
    (
        "Subject",
        format!("{} {}", b.subject.subject_type, b.subject.id),
    )
}

fn event_facts(e: &LapseEvent) -> Vec<(&'static str, String)> {
    let mut facts = vec![("Agent", e.agent.to_string())];
    if let Some(b) = &e.block {
        facts.push(subject_fact(b));
        facts.push(("Expected", b.expects.clone()));
        facts.push(("Due", b.due_at.to_string()));
    }
    facts.push(("Lapsed", e.lapsed_at.to_string()));
    facts
}

fn slack_lapse(e: &LapseEvent) -> Value {
    let mut blocks = vec![
        json!({ "type": "header", "text": slack_plain(&format!("{}: {}", capitalised(e.lapse), e.headline())) }),
        json!({ "type": "section", "text": slack_plain(e.text.as_deref().unwrap_or(&e.headline())) }),
        slack_facts(&event_facts(e)),
    ];
    if let Some(l) = &e.links {
        blocks.push(json!({ "type": "context", "elements": [{ "type": "mrkdwn", "text": format!("<{}|Operator page> · <{}|Timeline>", l.operator, l.timeline) }] }));
    }
    slack_message(&lapse_line(e), blocks)
}

fn slack_digest(d: &Digest) -> Value {
    let mut list: Vec<String> = d
        .first
        .iter()
        .map(|e| format!("• {}", lapse_line(e)))
        .collect();
    if d.count > d.first.len() as u64 {
        list.push(format!("…and {} more", d.count - d.first.len() as u64));
    }
    let mut blocks = vec![
        json!({ "type": "header", "text": slack_plain(&format!("{} from {} to {}", d.summary(), d.from, d.to)) }),
        json!({ "type": "section", "text": slack_plain(&list.join("\n")) }),
    ];
    if let Some(link) = &d.link {
        blocks.push(json!({ "type": "context", "elements": [{ "type": "mrkdwn", "text": format!("<{link}|All lapse tasks>") }] }));
    }
    slack_message(&format!("a2a-watcher: {}", d.summary()), blocks)
}

/// A `TextBlock` showing `text` as written ([`escape::teams`]).
fn text_block(text: &str, bold: bool) -> Value {
    markdown_block(escape::teams(text), bold)
}

/// A `TextBlock` of `markdown`, the watcher's own (agent text in it already escaped).
fn markdown_block(markdown: String, bold: bool) -> Value {
    let mut b = json!({ "type": "TextBlock", "text": markdown, "wrap": true });
    if bold {
        b["weight"] = json!("Bolder");
        b["size"] = json!("Medium");
    }
    b
}

fn teams_card(body: Vec<Value>, links: Vec<(&str, &str)>) -> Value {
    let actions: Vec<Value> = links
        .into_iter()
        .map(|(title, url)| json!({ "type": "Action.OpenUrl", "title": title, "url": url }))
        .collect();
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "contentUrl": null,
            "content": {
                "$schema": "http://adaptivecards.io/schemas/adaptive-card.json",
                "type": "AdaptiveCard",
                "version": "1.4",
                "body": body,
                "actions": actions,
            },
        }],
    })
}

fn teams_lapse(e: &LapseEvent) -> Value {
    let mut body = vec![text_block(
        &format!("{}: {}", capitalised(e.lapse), e.headline()),
        true,
    )];
    if let Some(t) = &e.text {
        body.push(text_block(t, false));
    }
    body.push(fact_set(&event_facts(e)));
    let links = e
        .links
        .as_ref()
        .map(|l| {
            vec![
                ("Operator page", l.operator.as_str()),
                ("Timeline", l.timeline.as_str()),
            ]
        })
        .unwrap_or_default();
    teams_card(body, links)
}

fn teams_digest(d: &Digest) -> Value {
    let mut body = vec![text_block(
        &format!("{} from {} to {}", d.summary(), d.from, d.to),
        true,
    )];
    for e in &d.first {
        // A list item: the `- ` is the watcher's; the line is escaped.
        body.push(markdown_block(
            format!("- {}", escape::teams(&lapse_line(e))),
            false,
        ));
    }
    if d.count > d.first.len() as u64 {
        body.push(text_block(
            &format!("…and {} more", d.count - d.first.len() as u64),
            false,
        ));
    }
    let links = d
        .link
        .as_deref()
        .map(|l| vec![("All lapse tasks", l)])
        .unwrap_or_default();
    teams_card(body, links)
}

fn email_lapse(e: &LapseEvent) -> Value {
    let mut text = String::new();
    if let Some(t) = &e.text {
        text.push_str(&escape::email(t));
        text.push_str("\n\n");
    }
    for (k, v) in event_facts(e) {
        text.push_str(&format!("{k}: {}\n", escape::email(&v)));
    }
    text.push_str(&format!("Lapse task: {}\n", escape::email(&e.message_id)));
    if let Some(l) = &e.links {
        text.push_str(&format!(
            "\nOperator page: {}\nTimeline: {}\n",
            l.operator, l.timeline
        ));
    }
    json!({ "subject": format!("[a2a-watcher] {}", escape::email(&lapse_line(e))), "text": text })
}

fn email_digest(d: &Digest) -> Value {
    let mut text = format!("{} from {} to {}:\n\n", d.summary(), d.from, d.to);
    for e in &d.first {
        text.push_str(&format!("- {}\n", escape::email(&lapse_line(e))));
    }
    if d.count > d.first.len() as u64 {
        text.push_str(&format!("…and {} more\n", d.count - d.first.len() as u64));
    }
    if let Some(link) = &d.link {
        text.push_str(&format!("\nAll lapse tasks: {link}\n"));
    }
    json!({ "subject": format!("[a2a-watcher] {}", d.summary()), "text": text })
}

/// A subject line for a Standard Webhooks body (an SNS message's `Subject`): the lapse or the
/// digest in words, at most 100 characters of printable ASCII (SNS's limit), cut with `...`.
pub fn subject_of(body: &Value) -> String {
    let data = &body["data"];
    let agent = data["agent"].as_str().unwrap_or("");
    // A lapse task's event: `what`, then the task's subject and agent.
    let task = |what: &str| {
        let subject = &data["lapseTask"]["block"]["subject"];
        format!(
            "a2a-watcher: {what}: {} {} (agent {agent})",
            subject["type"].as_str().unwrap_or(""),
            subject["id"].as_str().unwrap_or("")
        )
    };
    let text = match body["type"].as_str() {
        Some("lapse.digest") => match data["resolved"].as_u64().unwrap_or(0) {
            0 => format!(
                "a2a-watcher: {} lapses",
                data["count"].as_u64().unwrap_or(0)
            ),
            r => format!(
                "a2a-watcher: {} opened, {r} resolved",
                data["count"].as_u64().unwrap_or(0)
            ),
        },
        Some("lapse.resolved") => format!(
            "a2a-watcher: resolved: {} {} for {} {} (agent {})",
            data["lapse"].as_str().unwrap_or("lapse"),
            data["block"]["kind"].as_str().unwrap_or(""),
            data["block"]["subject"]["type"].as_str().unwrap_or(""),
            data["block"]["subject"]["id"].as_str().unwrap_or(""),
            agent
        ),
        Some("notify.test") => "a2a-watcher: test notification".to_owned(),
        Some("lapse_task.failed") => task("lapse task failed"),
        Some("lapse_task.needs_person") => task("needs a person"),
        Some("delivery.failing") => format!("a2a-watcher: delivery failing: agent {agent}"),
        Some("card.unavailable") => format!("a2a-watcher: card unavailable: agent {agent}"),
        _ => format!(
            "a2a-watcher: {} {} for {} {} (agent {})",
            data["lapse"].as_str().unwrap_or("lapse"),
            data["block"]["kind"].as_str().unwrap_or(""),
            data["block"]["subject"]["type"].as_str().unwrap_or(""),
            data["block"]["subject"]["id"].as_str().unwrap_or(""),
            agent
        ),
    };
    let ascii: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() || c == ' ' {
                c
            } else {
                '?'
            }
        })
        .collect();
    if ascii.len() > 100 {
        format!("{}...", &ascii[..97])
    } else {
        ascii
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_fit_sns() {
        let long = json!({ "type": "lapse.recorded", "data": {
            "lapse": "overdue", "agent": "booking",
            "block": { "kind": "shipment.manifest", "subject": { "type": "shipment", "id": "x".repeat(200) } },
        }});
        let s = subject_of(&long);
        assert_eq!(s.len(), 100);
        assert!(
            s.starts_with("a2a-watcher: overdue shipment.manifest for shipment xxx")
                && s.ends_with("...")
        );
        let digest = json!({ "type": "lapse.digest", "data": { "count": 500 } });
        assert_eq!(subject_of(&digest), "a2a-watcher: 500 lapses");
        let odd =
            json!({ "type": "lapse.recorded", "data": { "lapse": "overdue", "agent": "b\u{e9}" } });
        assert!(subject_of(&odd).ends_with("(agent b?)"));
    }
}
