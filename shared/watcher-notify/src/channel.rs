//! A notification channel built from its `[[notify]]` table (issue 25): the checked URL, secret,
//! format, filters and digest window.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use lettre::message::Mailbox;
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, Tokio1Executor};
use watcher_config::config::NotifyConfig;
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::record::LapseKind;
use watcher_core::time::IsoDuration;
use watcher_runtime::store::OutboxEntry;

use crate::body::{self, Digest, Notification};
use crate::event::{AgentEvent, EventType, LapseEvent, ResolvedEvent};
use crate::incident::{self, Severity, Vendor};
use crate::redact::Redaction;
use crate::sign::Secret;

pub use watcher_config::config::NotifyConfig as ChannelConfig;

/// What a channel's body looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `{ "type", "timestamp", "data" }` JSON, as Standard Webhooks recommends.
    StandardWebhooks,
    /// A Slack incoming-webhook body: `text` (the notification's fallback) and `blocks`.
    Slack,
    /// A Microsoft Teams incoming-webhook (Workflows) body: a message with one Adaptive Card.
    Teams,
    /// A plain-text email over SMTP ([`EmailTarget`]).
    Email,
    /// The Standard Webhooks JSON published to an SNS topic (`url` is its ARN), through the
    /// deployment's [`crate::transport::Publish`] (the AWS functions only).
    Sns,
    /// A PagerDuty Events API v2 `trigger` per lapse ([`crate::incident::pagerduty`]).
    PagerDuty,
    /// An Opsgenie alert per lapse ([`crate::incident::opsgenie`]).
    Opsgenie,
    /// A Prometheus Alertmanager alert per lapse ([`crate::incident::alertmanager`]).
    Alertmanager,
}

impl Format {
    /// The configuration's name of the format.
    pub fn name(self) -> &'static str {
        match self {
            Format::StandardWebhooks => "standard-webhooks",
            Format::Slack => "slack",
            Format::Teams => "teams",
            Format::Email => "email",
            Format::Sns => "sns",
            Format::PagerDuty => "pagerduty",
            Format::Opsgenie => "opsgenie",
            Format::Alertmanager => "alertmanager",
        }
    }

    /// Whether it opens an incident per event (PagerDuty, Opsgenie, Alertmanager).
    pub fn is_incident(self) -> bool {
        matches!(
            self,
            Format::PagerDuty | Format::Opsgenie | Format::Alertmanager
        )
    }

    /// Whether its body is JSON data a program reads (Standard Webhooks, SNS, the incident
    /// formats), rather than text a person reads: redacted values are left out of it
    /// ([`Redaction::strip`]).
    pub fn is_data(self) -> bool {
        matches!(self, Format::StandardWebhooks | Format::Sns) || self.is_incident()
    }
}

/// A channel ready to post. Its `Debug` shows where it posts as [`Channel::target`] only: a
/// URL's path may hold a credential.
#[derive(Clone)]
pub struct Channel {
    /// Its id, unique within the tenant.
    pub id: String,
    /// The tenant whose lapses it tells.
    pub tenant: Tenant,
    /// Where it posts.
    pub url: String,
    /// The signing key; `None`: requests are not signed.
    pub secret: Option<Secret>,
    /// The body's shape.
    pub format: Format,
    /// Only these agents; empty: all.
    pub agents: BTreeSet<AgentId>,
    /// Only these lapses; empty: all.
    pub kinds: BTreeSet<LapseKind>,
    /// Only lapses of expectations of these kinds (`expectation_kinds`, the lapse block's
    /// `kind`); empty: all.
    pub expectation_kinds: BTreeSet<String>,
    /// Only these events; empty: all.
    pub events: BTreeSet<EventType>,
    /// The severity of each lapse kind on this channel, every format: its `severity` table
    /// over the defaults (`overdue` `error`, `stalled` and `skipped` `warning`).
    pub severities: BTreeMap<LapseKind, Severity>,
    /// Only lapses at least this severe (`min_severity`); `None`: all. Agent events are not
    /// filtered by it.
    pub min_severity: Option<Severity>,
    /// One digest per window instead of one message per lapse.
    pub digest: Option<IsoDuration>,
    /// How long a lapse must stay unresolved before it is told (`grace`); `None`: told at once.
    pub grace: Option<IsoDuration>,
    /// Per-request timeout.
    pub timeout: Duration,
    /// Where an email channel sends (`format = "email"`); `None` for the HTTP formats.
    pub email: Option<EmailTarget>,
    /// The incident formats' key, severities, priorities and horizon; `None` for the others.
    pub vendor: Option<Vendor>,
    /// What its notifications leave out or hash (`redact`, `redact_key`).
    pub redaction: Redaction,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel")
            .field("id", &self.id)
            .field("tenant", &self.tenant)
            .field("target", &self.target())
            .field("format", &self.format)
            .field("agents", &self.agents)
            .field("kinds", &self.kinds)
            .field("expectation_kinds", &self.expectation_kinds)
            .field("events", &self.events)
            .field("min_severity", &self.min_severity)
            .field("digest", &self.digest)
            .field("grace", &self.grace)
            .field("email", &self.email)
            .field("redaction", &self.redaction)
            .finish_non_exhaustive()
    }
}

/// An email channel's SMTP relay, sender and recipients, checked and built once.
#[derive(Clone)]
pub struct EmailTarget {
    /// The relay, with its TLS mode, port, timeout and credentials.
    pub transport: AsyncSmtpTransport<Tokio1Executor>,
    /// The sender.
    pub from: Mailbox,
    /// The recipients (at least one).
    pub to: Vec<Mailbox>,
}

impl std::fmt::Debug for EmailTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The transport holds the credentials: not shown.
        f.debug_struct("EmailTarget")
            .field("from", &self.from)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

impl EmailTarget {
    /// The target `config` describes (its `format` is `email`, [`NotifyConfig::check`] passed).
    ///
    /// # Errors
    /// The field and the reason: a URL without a host or with a bad port, a mailbox that does
    /// not parse, a relay the TLS setup refuses.
    fn of(config: &NotifyConfig, timeout: Duration) -> Result<EmailTarget, String> {
        let rest = config.url.strip_prefix("smtp://").unwrap_or(&config.url);
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) => {
                let port: u16 = p.parse().map_err(|_| format!("url: {p:?} is not a port"))?;
                (h, Some(port))
            }
            None => (authority, None),
        };
        if host.is_empty() {
            return Err(format!("url: {:?} names no host", config.url));
        }
        let mut builder = match config.tls.as_str() {
            "implicit" => AsyncSmtpTransport::<Tokio1Executor>::relay(host)
                .map_err(|e| format!("url: {host}: {e}"))?,
            "none" => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(host),
            _ => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(host)
                .map_err(|e| format!("url: {host}: {e}"))?,
        };
        if let Some(port) = port {
            builder = builder.port(port);
        }
        builder = builder.timeout(Some(timeout));
        if let (Some(user), Some(password)) = (&config.username, &config.password) {
            builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
        }
        let mailbox = |field: &str, text: &str| {
            text.parse::<Mailbox>()
                .map_err(|e| format!("{field}: {text:?} is not a mailbox: {e}"))
        };
        Ok(EmailTarget {
            transport: builder.build(),
            from: mailbox("from", config.from.as_deref().unwrap_or(""))?,
            to: config
                .to
                .iter()
                .map(|t| mailbox("to", t))
                .collect::<Result<_, _>>()?,
        })
    }
}

impl Channel {
    /// Builds the channel `config` describes.
    ///
    /// # Errors
    /// `notify: channel "{id}": {field}: {reason}` for the first field that does not hold
    /// ([`NotifyConfig::check`], then the tenant, agent ids and the secret).
    pub fn from_config(config: &NotifyConfig) -> Result<Channel, String> {
        let bad = |reason: String| format!("notify: channel {:?}: {reason}", config.id);
        config.check().map_err(|e| e.to_string())?;
        let tenant =
            Tenant::parse(config.tenant.clone()).map_err(|e| bad(format!("tenant: {e}")))?;
        let agents = config
            .agents
            .iter()
            .map(|a| AgentId::parse(a.clone()).map_err(|e| bad(format!("agents: {a:?}: {e}"))))
            .collect::<Result<_, _>>()?;
        let kinds = config
            .kinds
            .iter()
            .map(|k| match k.as_str() {
                "overdue" => Ok(LapseKind::Overdue),
                "skipped" => Ok(LapseKind::Skipped),
                "stalled" => Ok(LapseKind::Stalled),
                other => Err(bad(format!("kinds: {other:?} is not a lapse"))),
            })
            .collect::<Result<_, _>>()?;
        let events = config
            .events
            .iter()
            .map(|e| {
                EventType::parse(e).ok_or_else(|| bad(format!("events: {e:?} is not an event")))
            })
            .collect::<Result<_, _>>()?;
        // The severities the incident formats send, for every format: `min_severity` reads
        // them (`severity` itself is refused outside PagerDuty and Alertmanager).
        let severities = Vendor::new(None, &config.severity, &BTreeMap::new(), None)
            .map_err(&bad)?
            .severity;
        let min_severity = config
            .min_severity
            .as_deref()
            .map(|m| {
                Severity::parse(m)
                    .ok_or_else(|| bad(format!("min_severity: {m:?} is not a severity")))
            })
            .transpose()?;
        let format = match config.format.as_str() {
            "slack" => Format::Slack,
            "teams" => Format::Teams,
            "email" => Format::Email,
            "sns" => Format::Sns,
            "pagerduty" => Format::PagerDuty,
            "opsgenie" => Format::Opsgenie,
            "alertmanager" => Format::Alertmanager,
            _ => Format::StandardWebhooks,
        };
        let url = match (format, config.url.is_empty()) {
            (Format::PagerDuty, true) => watcher_config::notify::PAGERDUTY_URL.to_owned(),
            (Format::Opsgenie, true) => watcher_config::notify::OPSGENIE_URL.to_owned(),
            _ => config.url.clone(),
        };
        let vendor = format
            .is_incident()
            .then(|| {
                Vendor::new(
                    config.routing_key.clone().or(config.api_key.clone()),
                    &config.severity,
                    &config.priority,
                    config.horizon.as_ref(),
                )
            })
            .transpose()
            .map_err(bad)?;
        let redaction = Redaction::new(&config.redact, config.redact_key.as_deref())
            .map_err(|e| bad(format!("redact: {e}")))?;
        let timeout = Duration::from_secs(config.timeout_secs);
        let email = (format == Format::Email)
            .then(|| EmailTarget::of(config, timeout))
            .transpose()
            .map_err(bad)?;
        let secret = config
            .secret
            .as_deref()
            .map(Secret::parse)
            .transpose()
            .map_err(|e| bad(format!("secret: {e}")))?;
        Ok(Channel {
            id: config.id.clone(),
            tenant,
            url,
            secret,
            format,
            agents,
            kinds,
            expectation_kinds: config.expectation_kinds.iter().cloned().collect(),
            events,
            severities,
            min_severity,
            digest: config.digest.clone(),
            grace: config.grace.clone(),
            timeout,
            email,
            vendor,
            redaction,
        })
    }

    /// The notification of the lapse `e` on this channel: redacted ([`Redaction::lapse`]),
    /// in its format (with its severities on an incident format), redacted values left out of
    /// a JSON body.
    pub fn lapse(&self, e: &LapseEvent) -> Notification {
        let e = self.redaction.lapse(e);
        let n = match &self.vendor {
            Some(v) => incident::lapse(self.format, v, &e),
            None => body::lapse(self.format, &e),
        };
        self.finish(n)
    }

    /// The notification of the end of a lapse `e` on this channel, redacted
    /// ([`Redaction::resolved`]), in its format: an incident format closes the incident its
    /// lapse opened ([`incident::resolved`]).
    pub fn resolved(&self, e: &ResolvedEvent) -> Notification {
        let e = self.redaction.resolved(e);
        let n = match &self.vendor {
            Some(v) => incident::resolved(self.format, v, &e),
            None => body::resolved(self.format, &e),
        };
        self.finish(n)
    }

    /// The notification of the agent event `e` on this channel, redacted as
    /// [`Channel::lapse`].
    pub fn agent_event(&self, e: &AgentEvent) -> Notification {
        let e = self.redaction.agent(e);
        let n = match &self.vendor {
            Some(v) => incident::agent_event(self.format, v, &e),
            None => body::agent_event(self.format, &e),
        };
        self.finish(n)
    }

    /// The notification of the digest `d` (of lapse events already redacted with
    /// [`Redaction::lapse`]) on this channel.
    pub fn digest(&self, d: &Digest) -> Notification {
        let n = match &self.vendor {
            Some(v) => incident::digest(self.format, v, d),
            None => body::digest(self.format, d),
        };
        self.finish(n)
    }

    fn finish(&self, mut n: Notification) -> Notification {
        if self.format.is_data() {
            self.redaction.strip(&mut n.body);
        }
        n
    }

    /// Where the channel posts, as scheme and host (and port) only: `https://hooks.slack.com`.
    /// A Slack or Teams URL's path is a credential, so this is what may be shown.
    pub fn target(&self) -> String {
        if self.format == Format::Sns {
            // A topic's ARN names no credential.
            return self.url.clone();
        }
        let (scheme, rest) = self.url.split_once("://").unwrap_or(("", &self.url));
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        // Credentials written into the authority (`user:pass@host`) are not shown either.
        let host = authority.rsplit('@').next().unwrap_or(authority);
        format!("{scheme}://{host}")
    }

    /// Whether the channel tells `entry`'s lapse (`lapse.recorded` is among its events, and
    /// its agent, lapse kind, expectation kind and severity pass the filters).
    pub fn wants(&self, entry: &OutboxEntry) -> bool {
        self.tells(EventType::LapseRecorded)
            && self.watches(&entry.agent)
            && (self.kinds.is_empty() || self.kinds.contains(&entry.lapse))
            && self.severe_enough(entry.lapse)
            && (self.expectation_kinds.is_empty()
                || expectation_kind(entry).is_some_and(|k| self.expectation_kinds.contains(k)))
    }

    /// The severity of a lapse of kind `lapse` on this channel ([`Channel::severities`]).
    pub fn severity(&self, lapse: LapseKind) -> Severity {
        self.severities
            .get(&lapse)
            .copied()
            .unwrap_or(Severity::Warning)
    }

    /// Whether a lapse of kind `lapse` is at least the channel's `min_severity` (none: yes).
    pub fn severe_enough(&self, lapse: LapseKind) -> bool {
        // `Severity` orders the most severe first: `Critical` < `Error` < …
        self.min_severity
            .is_none_or(|min| self.severity(lapse) <= min)
    }

    /// Whether the channel tells events of type `event` (its `events` filter; empty: all).
    pub fn tells(&self, event: EventType) -> bool {
        self.events.is_empty() || self.events.contains(&event)
    }

    /// Whether the channel tells events about `agent` (its `agents` filter; empty: all).
    pub fn watches(&self, agent: &AgentId) -> bool {
        self.agents.is_empty() || self.agents.contains(agent)
    }

    /// Whether the channel tells any of the agents' events (failed lapse tasks, failing
    /// delivery, unreadable cards).
    pub fn tells_agent_events(&self) -> bool {
        EventType::AGENT.iter().any(|e| self.tells(*e))
    }
}

/// The kind of the expectation whose lapse `entry` is (its lapse block's `kind`, in the
/// lapse task's `message.metadata`), when the stored request holds one.
fn expectation_kind(entry: &OutboxEntry) -> Option<&str> {
    entry
        .request
        .pointer("/message/metadata")?
        .get(watcher_core::EXPECTATIONS_URI)?
        .pointer("/lapse/kind")?
        .as_str()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn channel(url: &str) -> Channel {
        Channel::from_config(&NotifyConfig {
            id: "ops".into(),
            tenant: "default".into(),
            url: url.into(),
            secret: None,
            format: "slack".into(),
            agents: Vec::new(),
            kinds: Vec::new(),
            expectation_kinds: Vec::new(),
            events: Vec::new(),
            digest: None,
            grace: None,
            timeout_secs: 10,
            from: None,
            to: Vec::new(),
            tls: "starttls".into(),
            username: None,
            password: None,
            routing_key: None,
            api_key: None,
            severity: Default::default(),
            min_severity: None,
            priority: Default::default(),
            horizon: None,
            redact: Vec::new(),
            redact_key: None,
        })
        .unwrap()
    }

    /// A `format` channel with `severity` and `min_severity`.
    fn routed(format: &str, severity: &[(&str, &str)], min: &str) -> Channel {
        use serde::Deserialize as _;
        let mut config = NotifyConfig::deserialize(serde_json::json!({
            "id": "ops", "url": "http://127.0.0.1:9/h", "format": format,
            "min_severity": min,
            "severity": severity.iter().map(|(k, v)| (*k, *v)).collect::<BTreeMap<_, _>>(),
        }))
        .unwrap();
        config.routing_key = (format == "pagerduty").then(|| "key".into());
        Channel::from_config(&config).expect("a valid channel")
    }

    #[test]
    fn min_severity_reads_the_channels_severities_on_every_format() {
        use LapseKind::{Overdue, Skipped, Stalled};
        let told = |c: &Channel| {
            [Overdue, Stalled, Skipped]
                .into_iter()
                .filter(|k| c.severe_enough(*k))
                .collect::<Vec<_>>()
        };
        // The defaults: overdue error, stalled and skipped warning.
        assert_eq!(told(&routed("slack", &[], "error")), [Overdue]);
        assert_eq!(
            told(&routed("slack", &[], "warning")),
            [Overdue, Stalled, Skipped]
        );
        assert_eq!(told(&routed("slack", &[], "critical")), []);
        let pd = routed(
            "pagerduty",
            &[("stalled", "critical"), ("overdue", "info")],
            "error",
        );
        assert_eq!(pd.format, Format::PagerDuty);
        assert_eq!(told(&pd), [Stalled]);
        assert_eq!(pd.severity(Skipped), Severity::Warning);
        assert!(channel("http://127.0.0.1:9/h").severe_enough(Skipped));
    }

    #[test]
    fn the_target_shows_no_path_query_or_user() {
        assert_eq!(
            channel("https://hooks.slack.com/services/T0/B0/secret").target(),
            "https://hooks.slack.com"
        );
        assert_eq!(
            channel("http://user:pw@127.0.0.1:9000/hook?k=v").target(),
            "http://127.0.0.1:9000"
        );
    }
}
