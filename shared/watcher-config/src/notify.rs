//! `[[notify]]`: a notification channel's configuration (issue 25; expectations-v1 §13.1), its
//! formats, events and TLS modes, and the checks that need no network.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde::Deserialize;
use watcher_core::time::IsoDuration;

use crate::config::{default_tenant, AgentConfig, TeacherConfig};
use crate::error::ConfigError;
use crate::keys::closest;

fn default_notify_format() -> String {
    "standard-webhooks".into()
}
fn default_notify_timeout() -> u64 {
    10
}

fn default_notify_tls() -> String {
    "starttls".into()
}

/// The formats a `[[notify]]` channel can post.
pub const NOTIFY_FORMATS: [&str; 8] = [
    "standard-webhooks",
    "slack",
    "teams",
    "email",
    "sns",
    "pagerduty",
    "opsgenie",
    "alertmanager",
];

/// The formats that open an incident per lapse (PagerDuty, Opsgenie, Alertmanager): each lapse
/// is its own alert, keyed by the lapse's id, so they take no `digest`.
pub const INCIDENT_FORMATS: [&str; 3] = ["pagerduty", "opsgenie", "alertmanager"];

/// Where a `pagerduty` channel posts when `url` is not given: the Events API v2 endpoint.
pub const PAGERDUTY_URL: &str = "https://events.pagerduty.com/v2/enqueue";

/// The Opsgenie API's base URL when an `opsgenie` channel gives no `url` (the US instance; the
/// EU instance is `https://api.eu.opsgenie.com`).
pub const OPSGENIE_URL: &str = "https://api.opsgenie.com";

/// PagerDuty's `payload.severity` values (Events API v2), which `severity` maps lapses to.
pub const PAGERDUTY_SEVERITIES: [&str; 4] = ["critical", "error", "warning", "info"];

/// Opsgenie's alert priorities, which `priority` maps lapses to.
pub const OPSGENIE_PRIORITIES: [&str; 5] = ["P1", "P2", "P3", "P4", "P5"];

/// What `redact` can name: `subject` (the subject's id), `fact_key` (the key of the fact an
/// expectation waits for), `agent_text` (what agents wrote: `expects`, the lapse task's
/// sentence built from it, agents' answers), `expectation` (expectation ids and the lapse
/// task's `messageId`, which holds one).
pub const REDACT_FIELDS: [&str; 4] = ["subject", "fact_key", "agent_text", "expectation"];

/// The lapse kinds, as `kinds`, `severity` and `priority` name them.
const LAPSE_KINDS: [&str; 3] = ["overdue", "skipped", "stalled"];

/// The events a `[[notify]]` channel can tell (`events`; expectations-v1 §13.1, §10.2).
pub const NOTIFY_EVENTS: [&str; 6] = [
    "lapse.recorded",
    "lapse.resolved",
    "lapse_task.failed",
    "delivery.failing",
    "card.unavailable",
    "lapse_task.needs_person",
];

/// How an email channel secures its SMTP connection (`tls`).
pub const NOTIFY_TLS: [&str; 3] = ["starttls", "implicit", "none"];

/// `[[notify]]`: one notification channel (issue 25; expectations-v1 §13.1). Checked when the
/// configuration is read; the secret's form when the channel is built (`watcher_notify`).
#[derive(Debug, Clone, Deserialize)]
pub struct NotifyConfig {
    /// The channel's id, unique within its tenant (kept with its progress; named in logs,
    /// metrics and `a2a-watcher notify test --channel`).
    pub id: String,
    /// Tenant whose lapses it tells; it must have an `[[agents]]` or `[[teachers]]` entry (else the configuration is refused: no lapse of it could be told).
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// Where to send: for `standard-webhooks`, `slack` and `teams` the http(s) URL to POST to (the receiver's endpoint, or a Slack or Teams incoming-webhook URL: a credential, so give it as `url_file` or `url_env` to keep it out of the file); for `email` the SMTP relay, `smtp://host[:port]`; for `sns` the topic's ARN; for `pagerduty` the Events API v2 endpoint (absent: `https://events.pagerduty.com/v2/enqueue`); for `opsgenie` the API's base URL (absent: `https://api.opsgenie.com`; the EU instance is `https://api.eu.opsgenie.com`); for `alertmanager` the Alertmanager's base URL (alerts go to `{url}/api/v2/alerts`). Required for every format but `pagerduty` and `opsgenie`. A URL without a host, with a port that is not a number, or that the HTTP client cannot parse is refused. A receiver's redirect (3xx) is not followed: it is a failure, retried.
    #[serde(default)]
    pub url: String,
    /// Signing secret for the Standard Webhooks `webhook-signature` header (`whsec_` + base64, or any text); give it as `secret_file` or `secret_env` to keep it out of the file. Without it nothing is signed. Refused when empty, when a `whsec_` secret has no base64 key after the prefix, and on `email`, `sns`, `pagerduty`, `opsgenie` and `alertmanager` channels (not signed).
    #[serde(default)]
    pub secret: Option<String>,
    /// `standard-webhooks` (JSON: `type`, `timestamp`, `data`), `slack` (`text` and blocks), `teams` (an Adaptive Card message), `email` (a plain-text message over SMTP to `to`; `url` is then `smtp://host[:port]`) `sns` (the AWS deployment only: the Standard Webhooks JSON published to the SNS topic whose ARN is `url`), `pagerduty` (an Events API v2 `trigger` per lapse, `dedup_key` the lapse's id), `opsgenie` (an Alert API create per lapse, `alias` the lapse's id) or `alertmanager` (a Prometheus Alertmanager alert per lapse, `POST /api/v2/alerts`). docs/howto/notifications.md lists each format's fields.
    #[serde(default = "default_notify_format")]
    pub format: String,
    /// Only lapses of these agents (ids); empty: every agent of the tenant. Each must be an `[[agents]]` id of the channel's tenant (or `learnables-authority`, for lesson reviews), else the configuration is refused, naming the closest id.
    #[serde(default)]
    pub agents: Vec<String>,
    /// Only these lapses, by lapse kind: `overdue`, `skipped`, `stalled`; empty: all three. Digests count only these. Refused when `events` leaves out `lapse.recorded`.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Only lapses of expectations of these kinds (the expectation's `kind`, e.g. `shipment.manifest`, compared exactly); empty: every kind. Their ends (`lapse.resolved`) follow. Refused when a name is empty, and when `events` leaves out `lapse.recorded`.
    #[serde(default)]
    pub expectation_kinds: Vec<String>,
    /// Only these events (absent or empty, the default: all six): `lapse.recorded` (a lapse; a `lapse.digest` per window when `digest` is set), `lapse.resolved` (the end of a lapse the channel told: its fact arrived late, its lapse task's Task completed, its expectation was withdrawn or superseded, or an operator acknowledged it; PagerDuty `resolve`, Opsgenie close, Alertmanager `endsAt`; counted in the digest when `digest` is set; needs `lapse.recorded`), `lapse_task.needs_person` (the task an agent created for a lapse task asks for input or authorization), `delivery.failing` (a lapse task of an agent is given up while none of its others is failed; told instead of that task's `lapse_task.failed`), `lapse_task.failed` (any further lapse task given up: it waits for an operator's re-queue), `card.unavailable` (an agent's card could not be read for a minute). `agents` filters every event; `kinds` filters lapses only.
    #[serde(default)]
    pub events: Vec<String>,
    /// ISO 8601 duration: when set, lapses are told as one digest per window (counts and the first few) instead of one message each; the window opens at the first lapse not yet told. Refused when `events` leaves out `lapse.recorded`, and on `pagerduty`, `opsgenie` and `alertmanager` channels (each lapse is its own incident).
    #[serde(default)]
    pub digest: Option<IsoDuration>,
    /// ISO 8601 duration (`PT2M`): a lapse is told only once it is this old and only if it is still unresolved then; a lapse resolved within the grace (its fact arrived a minute late) is told to nobody, nor is its end. Absent: each lapse is told at once. Refused when not longer than zero, and when `events` leaves out `lapse.recorded`.
    #[serde(default)]
    pub grace: Option<IsoDuration>,
    /// Per-request timeout in seconds. Default 10.
    #[serde(default = "default_notify_timeout")]
    pub timeout_secs: u64,
    /// Email: the sender, `Name <address>` or an address. `from`, `to`, `username` and `password` are refused on the other formats.
    #[serde(default)]
    pub from: Option<String>,
    /// Email: the recipients, each `Name <address>` or an address.
    #[serde(default)]
    pub to: Vec<String>,
    /// Email: `starttls` (the server must offer STARTTLS; port 587 unless the URL names one), `implicit` (TLS from the first byte; port 465) or `none` (plain text: only for a relay on this machine).
    #[serde(default = "default_notify_tls")]
    pub tls: String,
    /// Email: the SMTP user name, when the server asks for one.
    #[serde(default)]
    pub username: Option<String>,
    /// Email: the SMTP password; give it as `password_file` or `password_env`.
    #[serde(default)]
    pub password: Option<String>,
    /// PagerDuty (required there, refused elsewhere): the integration's routing key (Events API v2 `routing_key`); give it as `routing_key_file` or `routing_key_env`.
    #[serde(default)]
    pub routing_key: Option<String>,
    /// Opsgenie (required there, refused elsewhere): the API integration's key, sent as `Authorization: GenieKey {key}`; give it as `api_key_file` or `api_key_env`.
    #[serde(default)]
    pub api_key: Option<String>,
    /// PagerDuty and Alertmanager: the severity per lapse, a table of `overdue`, `skipped`, `stalled` to `critical`, `error`, `warning` or `info` (PagerDuty's values; Alertmanager's `severity` label). A lapse not named keeps its default: `overdue` `error`, `stalled` `warning`, `skipped` `warning`.
    #[serde(default)]
    pub severity: BTreeMap<String, String>,
    /// Only lapses at least this severe, every format: `critical`, `error`, `warning` or `info` (absent: every lapse). A lapse's severity is the channel's `severity` table, else the defaults (`overdue` `error`, `stalled` `warning`, `skipped` `warning`), whatever the format; so `min_severity = "error"` tells overdue lapses only, unless `severity` raises the others. Digests count only the lapses that pass. Agent events are not filtered by it (choose them with `events`). Refused when `events` leaves out `lapse.recorded`.
    #[serde(default)]
    pub min_severity: Option<String>,
    /// Opsgenie: the priority per lapse, a table of `overdue`, `skipped`, `stalled` to `P1` … `P5`. A lapse not named keeps its default: `overdue` `P2`, `stalled` `P3`, `skipped` `P3`.
    #[serde(default)]
    pub priority: BTreeMap<String, String>,
    /// Alertmanager: ISO 8601 duration, how long an alert fires: each is posted once with `endsAt` = its `startsAt` + `horizon`, so the Alertmanager does not resolve it after its `resolve_timeout`. Absent: `PT24H`.
    #[serde(default)]
    pub horizon: Option<IsoDuration>,
    /// What leaves for the receiver, every format: the fields named here (`subject`, `fact_key`, `agent_text`, `expectation`; docs/howto/notifications.md "Redaction") are left out, or, with `redact_key`, replaced by `hmac_` and 32 hex digits of their HMAC-SHA256 under that key.
    #[serde(default)]
    pub redact: Vec<String>,
    /// The key of the `redact` hashes (any text); give it as `redact_key_file` or `redact_key_env`. Absent: redacted fields are left out. Refused without `redact`.
    #[serde(default)]
    pub redact_key: Option<String>,
}

impl NotifyConfig {
    /// Checks what can be checked of the channel alone, without building it: the id, the URL
    /// (its scheme, a host, a port that is a number), the format, the lapse kinds, the events,
    /// the digest window, the secret's form (not empty; a `whsec_` secret has a base64 key
    /// after the prefix), and that no key is set that the format does not use (`from`, `to`,
    /// `username`, `password` outside email; `secret` on email and sns, which are not signed;
    /// `kinds`, `digest`, `grace`, `min_severity` or `lapse.resolved` when `events` leaves out
    /// `lapse.recorded`; a grace not longer than zero; a
    /// `min_severity` that is not a severity). What needs the rest of the configuration (the
    /// tenant, the `agents` filter) is [`NotifyConfig::check_in`].
    ///
    /// # Errors
    /// [`ConfigError::Notify`] naming the channel and the key.
    pub fn check(&self) -> Result<(), ConfigError> {
        let bad = |reason: String| ConfigError::Notify {
            id: self.id.clone(),
            reason,
        };
        if self.id.trim().is_empty() {
            return Err(bad("id: must not be empty".into()));
        }
        if !NOTIFY_FORMATS.contains(&self.format.as_str()) {
            return Err(bad(format!(
                "format: {:?} is not one of {}",
                self.format,
                NOTIFY_FORMATS.join(", ")
            )));
        }
        let incident = INCIDENT_FORMATS.contains(&self.format.as_str());
        let url_given = !self.url.is_empty();
        if !url_given && !matches!(self.format.as_str(), "pagerduty" | "opsgenie") {
            return Err(bad(format!("url: required (format = {:?})", self.format)));
        }
        if !url_given {
            // The vendor's own endpoint (`PAGERDUTY_URL`, `OPSGENIE_URL`).
        } else if self.format == "email" {
            if !self.url.starts_with("smtp://") {
                return Err(bad(format!(
                    "url: {:?} is not an smtp://host[:port] URL (format = \"email\")",
                    self.url
                )));
            }
            if self.from.as_deref().is_none_or(|f| f.trim().is_empty()) {
                return Err(bad("from: an email channel needs a sender".into()));
            }
            if self.to.is_empty() {
                return Err(bad(
                    "to: an email channel needs at least one recipient".into()
                ));
            }
            if !NOTIFY_TLS.contains(&self.tls.as_str()) {
                return Err(bad(format!(
                    "tls: {:?} is not one of {}",
                    self.tls,
                    NOTIFY_TLS.join(", ")
                )));
            }
            if self.username.is_some() != self.password.is_some() {
                return Err(bad("username, password: give both or neither".into()));
            }
        } else if self.format == "sns" {
            let arn: Vec<&str> = self.url.split(':').collect();
            if arn.len() != 6 || arn[0] != "arn" || arn[2] != "sns" || arn[5].is_empty() {
                return Err(bad(format!(
                    "url: {:?} is not an SNS topic ARN (arn:aws:sns:REGION:ACCOUNT:TOPIC; format = \"sns\")",
                    self.url
                )));
            }
        } else if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(bad(format!("url: {:?} is not an http(s) URL", self.url)));
        }
        if self.format != "sns" && url_given {
            check_authority(&self.url).map_err(|e| bad(format!("url: {e}")))?;
        }
        if self.format != "sns" && self.format != "email" && url_given {
            // What the HTTP client will refuse on every attempt (a space in the host, …).
            url::Url::parse(&self.url)
                .map_err(|e| bad(format!("url: not a URL the client can post to ({e})")))?;
        }
        if self.format != "email" {
            let given = [
                ("from", self.from.is_some()),
                ("to", !self.to.is_empty()),
                ("username", self.username.is_some()),
                ("password", self.password.is_some()),
            ];
            if let Some((key, _)) = given.iter().find(|(_, set)| *set) {
                return Err(bad(format!(
                    "{key}: only an email channel takes it (this channel's format is {:?})",
                    self.format
                )));
            }
        }
        if let Some(secret) = &self.secret {
            if self.format == "email" || self.format == "sns" || incident {
                return Err(bad(format!(
                    "secret: a channel of format {:?} is not signed; remove the secret",
                    self.format
                )));
            }
            check_secret(secret).map_err(|e| bad(format!("secret: {e}")))?;
        }
        for k in &self.kinds {
            if !["overdue", "skipped", "stalled"].contains(&k.as_str()) {
                return Err(bad(format!(
                    "kinds: {k:?} is not a lapse (overdue, skipped, stalled)"
                )));
            }
        }
        if self.expectation_kinds.iter().any(|k| k.trim().is_empty()) {
            return Err(bad(
                "expectation_kinds: a kind must not be empty (name the expectation's kind, e.g. \"shipment.manifest\")".into(),
            ));
        }
        if let Some(m) = &self.min_severity {
            if !PAGERDUTY_SEVERITIES.contains(&m.as_str()) {
                let hint = closest(m, PAGERDUTY_SEVERITIES.iter().copied())
                    .map(|n| format!(" (did you mean {n:?}?)"))
                    .unwrap_or_default();
                return Err(bad(format!(
                    "min_severity: {m:?} is not one of {}{hint}",
                    PAGERDUTY_SEVERITIES.join(", ")
                )));
            }
        }
        for e in &self.events {
            if !NOTIFY_EVENTS.contains(&e.as_str()) {
                return Err(bad(format!(
                    "events: {e:?} is not one of {}",
                    NOTIFY_EVENTS.join(", ")
                )));
            }
        }
        if let Some(d) = &self.digest {
            if d.as_nanos() <= 0 {
                return Err(bad("digest: the window must be longer than zero".into()));
            }
        }
        if let Some(g) = &self.grace {
            if g.as_nanos() <= 0 {
                return Err(bad(
                    "grace: must be longer than zero; remove it to tell each lapse at once".into(),
                ));
            }
        }
        if !self.events.is_empty() && !self.events.iter().any(|e| e == "lapse.recorded") {
            // `kinds` and `digest` act on lapses only.
            let given = [
                ("kinds", !self.kinds.is_empty()),
                ("expectation_kinds", !self.expectation_kinds.is_empty()),
                ("digest", self.digest.is_some()),
                ("grace", self.grace.is_some()),
                ("min_severity", self.min_severity.is_some()),
                (
                    "lapse.resolved",
                    self.events.iter().any(|e| e == "lapse.resolved"),
                ),
            ];
            if let Some((key, _)) = given.iter().find(|(_, set)| *set) {
                return Err(bad(format!(
                    "{key}: applies to lapses, but events leaves out \"lapse.recorded\"; add it to events or remove {key}"
                )));
            }
        }
        self.check_incident(incident).map_err(bad)?;
        self.check_redact().map_err(bad)?;
        if self.timeout_secs == 0 {
            return Err(bad("timeout_secs: must be at least 1".into()));
        }
        Ok(())
    }

    /// Checks the keys of the incident formats: `routing_key` on `pagerduty` and `api_key` on
    /// `opsgenie` (required, not blank, refused elsewhere), `severity` (PagerDuty's values) on
    /// `pagerduty` and `alertmanager`, `priority` (`P1` … `P5`) on `opsgenie`, `horizon` (longer
    /// than zero) on `alertmanager`, and no `digest` on any of them.
    ///
    /// # Errors
    /// `{key}: {reason}`.
    fn check_incident(&self, incident: bool) -> Result<(), String> {
        let format = self.format.as_str();
        for (key, value, wants) in [
            ("routing_key", &self.routing_key, "pagerduty"),
            ("api_key", &self.api_key, "opsgenie"),
        ] {
            match value {
                Some(_) if format != wants => return Err(format!(
                    "{key}: only a channel of format \"{wants}\" takes it (this channel's format is {format:?})"
                )),
                Some(v) if v.trim().is_empty() || v.chars().any(char::is_whitespace) => {
                    return Err(format!("{key}: must not be empty or hold spaces"))
                }
                None if format == wants => {
                    return Err(format!(
                        "{key}: a channel of format \"{wants}\" needs it (give {key}, {key}_file or {key}_env)"
                    ))
                }
                _ => {}
            }
        }
        let given = [
            (
                "severity",
                !self.severity.is_empty(),
                ["pagerduty", "alertmanager"].as_slice(),
            ),
            (
                "priority",
                !self.priority.is_empty(),
                ["opsgenie"].as_slice(),
            ),
            (
                "horizon",
                self.horizon.is_some(),
                ["alertmanager"].as_slice(),
            ),
        ];
        if let Some((key, _, formats)) = given
            .iter()
            .find(|(_, set, f)| *set && !f.contains(&format))
        {
            return Err(format!(
                "{key}: only a channel of format {} takes it (this channel's format is {format:?})",
                formats
                    .iter()
                    .map(|f| format!("{f:?}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            ));
        }
        for (map, key, values) in [
            (&self.severity, "severity", PAGERDUTY_SEVERITIES.as_slice()),
            (&self.priority, "priority", OPSGENIE_PRIORITIES.as_slice()),
        ] {
            for (kind, value) in map {
                if !LAPSE_KINDS.contains(&kind.as_str()) {
                    return Err(format!(
                        "{key}: {kind:?} is not a lapse ({})",
                        LAPSE_KINDS.join(", ")
                    ));
                }
                if !values.contains(&value.as_str()) {
                    return Err(format!(
                        "{key}.{kind}: {value:?} is not one of {}",
                        values.join(", ")
                    ));
                }
            }
        }
        if let Some(h) = &self.horizon {
            if h.as_nanos() <= 0 {
                return Err("horizon: must be longer than zero".into());
            }
        }
        if incident && self.digest.is_some() {
            return Err(format!(
                "digest: a channel of format {format:?} tells each lapse as its own incident; remove digest"
            ));
        }
        Ok(())
    }

    /// Checks `redact` (each name one of [`REDACT_FIELDS`], none twice) and `redact_key` (not
    /// empty; only with `redact`).
    ///
    /// # Errors
    /// `redact: {reason}` or `redact_key: {reason}`.
    fn check_redact(&self) -> Result<(), String> {
        for (i, name) in self.redact.iter().enumerate() {
            if !REDACT_FIELDS.contains(&name.as_str()) {
                let hint = closest(name, REDACT_FIELDS.iter().copied())
                    .map(|n| format!(" (did you mean {n:?}?)"))
                    .unwrap_or_default();
                return Err(format!(
                    "redact: {name:?} is not one of {}{hint}",
                    REDACT_FIELDS.join(", ")
                ));
            }
            if self.redact[..i].contains(name) {
                return Err(format!("redact: {name:?} is named twice"));
            }
        }
        match &self.redact_key {
            Some(k) if k.is_empty() => {
                Err("redact_key: must not be empty; remove it to leave redacted fields out".into())
            }
            Some(_) if self.redact.is_empty() => Err(
                "redact_key: hashes the fields named in redact, but redact is empty; name them or remove redact_key".into(),
            ),
            _ => Ok(()),
        }
    }

    /// Checks the channel against the rest of the configuration: its tenant has an agent or a
    /// teacher (else no lapse can ever be told), and each id in its `agents` filter is an agent
    /// of that tenant (or the Learnables authority, which raises `lesson.review` in every
    /// tenant), with "did you mean" naming the closest id when one is close.
    ///
    /// # Errors
    /// [`ConfigError::Notify`] naming the channel, the key and what is wrong: `tenant: "acme"
    /// has no [[agents]] or [[teachers]] …`, `agents: "billing" is an agent of tenant "t2", not
    /// of the channel's tenant "default"`, `agents: "bokking" is not an agent of tenant
    /// "default" (did you mean "booking"?)`.
    pub fn check_in(
        &self,
        agents: &[AgentConfig],
        teachers: &[TeacherConfig],
    ) -> Result<(), ConfigError> {
        let bad = |reason: String| ConfigError::Notify {
            id: self.id.clone(),
            reason,
        };
        let tenant = self.tenant.as_str();
        let known = agents
            .iter()
            .map(|a| a.tenant.as_str())
            .chain(teachers.iter().map(|t| t.tenant.as_str()));
        if !known.clone().any(|t| t == tenant) {
            let mut tenants: Vec<&str> = known.collect();
            tenants.sort_unstable();
            tenants.dedup();
            let hint = closest(tenant, tenants.iter().copied())
                .map(|t| format!(" (did you mean {t:?}?)"))
                .unwrap_or_default();
            return Err(bad(format!(
                "tenant: {tenant:?} has no [[agents]] or [[teachers]], so no lapse of it can be told{hint}"
            )));
        }
        let own: Vec<&str> = agents
            .iter()
            .filter(|a| a.tenant == tenant)
            .map(|a| a.id.as_str())
            .collect();
        let authority = watcher_runtime::lesson_review::AUTHORITY_AGENT;
        for id in &self.agents {
            if id == authority || own.contains(&id.as_str()) {
                continue;
            }
            let mut reason = match agents.iter().find(|a| a.id == *id) {
                Some(other) => format!(
                    "agents: {id:?} is an agent of tenant {:?}, not of the channel's tenant {tenant:?}",
                    other.tenant
                ),
                None => format!("agents: {id:?} is not an agent of tenant {tenant:?}"),
            };
            if let Some(near) = closest(id, own.iter().copied()) {
                reason.push_str(&format!(" (did you mean {near:?}?)"));
            }
            return Err(bad(reason));
        }
        Ok(())
    }
}

/// Checks that `url` (`scheme://[user@]host[:port]/…`) names a host, and a port that is a
/// number when it names one. Says what is wrong without the URL's path, which may hold a
/// credential.
fn check_authority(url: &str) -> Result<(), String> {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host_port = authority.rsplit('@').next().unwrap_or(authority);
    let (host, port) = match host_port.rsplit_once(':') {
        // An IPv6 literal's colons are inside its brackets.
        Some((h, p)) if !p.contains(']') => (h, Some(p)),
        _ => (host_port, None),
    };
    if host.is_empty() || host == "[]" {
        return Err(format!("\"{scheme}://\" names no host"));
    }
    if let Some(p) = port {
        if p.parse::<u16>().is_err() {
            return Err(format!("{p:?} is not a port"));
        }
    }
    Ok(())
}

/// Checks a signing secret's form: not empty, and a `whsec_` secret (Standard Webhooks' form)
/// has a base64 key after the prefix. Any other text is a key as it is. Says what is wrong
/// without the secret.
fn check_secret(secret: &str) -> Result<(), String> {
    if secret.is_empty() {
        return Err("must not be empty; remove it to send unsigned".into());
    }
    let Some(key) = secret.strip_prefix("whsec_") else {
        return Ok(());
    };
    if key.is_empty() {
        return Err(
            "a whsec_ secret needs its key, in base64, after the prefix; nothing follows whsec_"
                .into(),
        );
    }
    match base64::engine::general_purpose::STANDARD.decode(key) {
        Ok(bytes) if !bytes.is_empty() => Ok(()),
        Ok(_) => Err("a whsec_ secret needs its key, in base64, after the prefix; the key is empty".into()),
        Err(base64::DecodeError::InvalidByte(at, byte)) => Err(format!(
            "a whsec_ secret must be base64 after the prefix: {:?} at position {at} is not a base64 character",
            char::from(byte)
        )),
        Err(e) => Err(format!("a whsec_ secret must be base64 after the prefix: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use crate::Config;

    /// Two agents of `default`, one of `t2`, a teacher of `t3`.
    const PARTIES: &str = "[[agents]]\nid = \"booking\"\ncard = \"x\"\npush_token = \"p1\"\n\
        [[agents]]\nid = \"billing\"\ncard = \"x\"\npush_token = \"p2\"\n\
        [[agents]]\nid = \"customs\"\ncard = \"x\"\npush_token = \"p3\"\ntenant = \"t2\"\n\
        [[teachers]]\nid = \"teacher\"\ntoken = \"t\"\ntenant = \"t3\"\n";

    /// Why the configuration of [`PARTIES`] and the channel `ops` with `keys` (after `id`) is
    /// refused, as `serve` and the functions print it.
    fn refused(keys: &str) -> String {
        let text = format!("{PARTIES}[[notify]]\nid = \"ops\"\n{keys}");
        Config::from_toml(&text).expect_err("refused").to_string()
    }

    fn accepted(keys: &str) -> Config {
        Config::from_toml(&format!("{PARTIES}[[notify]]\nid = \"ops\"\n{keys}")).expect("accepted")
    }

    const URL: &str = "url = \"https://hooks.example/h\"\n";

    #[test]
    fn an_agents_filter_names_agents_of_the_channels_tenant() {
        assert_eq!(
            refused(&format!("{URL}agents = [\"bookng\"]\n")),
            "notify: channel \"ops\": agents: \"bookng\" is not an agent of tenant \"default\" (did you mean \"booking\"?)"
        );
        assert_eq!(
            refused(&format!("{URL}agents = [\"booking\", \"customs\"]\n")),
            "notify: channel \"ops\": agents: \"customs\" is an agent of tenant \"t2\", not of the channel's tenant \"default\""
        );
        assert_eq!(
            refused(&format!("{URL}agents = [\"zzz-unrelated\"]\n")),
            "notify: channel \"ops\": agents: \"zzz-unrelated\" is not an agent of tenant \"default\""
        );
        // An agent of another tenant, and one of the channel's is close: both said.
        assert_eq!(
            refused(&format!("{URL}agents = [\"booking\"]\ntenant = \"t2\"\n")),
            "notify: channel \"ops\": agents: \"booking\" is an agent of tenant \"default\", not of the channel's tenant \"t2\""
        );
        assert_eq!(
            refused(&format!("{URL}agents = [\"billin\"]\n")),
            "notify: channel \"ops\": agents: \"billin\" is not an agent of tenant \"default\" (did you mean \"billing\"?)"
        );
        let ok = accepted(&format!(
            "{URL}agents = [\"booking\", \"billing\", \"learnables-authority\"]\n"
        ));
        assert_eq!(ok.notify[0].agents.len(), 3);
        accepted(&format!("{URL}tenant = \"t2\"\nagents = [\"customs\"]\n"));
    }

    #[test]
    fn a_channels_tenant_has_an_agent_or_a_teacher() {
        assert_eq!(
            refused(&format!("{URL}tenant = \"t22\"\n")),
            "notify: channel \"ops\": tenant: \"t22\" has no [[agents]] or [[teachers]], so no lapse of it can be told (did you mean \"t2\"?)"
        );
        assert_eq!(
            refused(&format!("{URL}tenant = \"acme-logistics\"\n")),
            "notify: channel \"ops\": tenant: \"acme-logistics\" has no [[agents]] or [[teachers]], so no lapse of it can be told"
        );
        // A teacher's tenant: the Learnables authority raises lesson reviews there.
        accepted(&format!("{URL}tenant = \"t3\"\n"));
        // Nobody at all: the default tenant too.
        let err = Config::from_toml(&format!("[[notify]]\nid = \"ops\"\n{URL}"))
            .expect_err("refused")
            .to_string();
        assert_eq!(
            err,
            "notify: channel \"ops\": tenant: \"default\" has no [[agents]] or [[teachers]], so no lapse of it can be told"
        );
    }

    #[test]
    fn a_secret_that_cannot_sign_is_refused() {
        assert_eq!(
            refused(&format!("{URL}secret = \"whsec_\"\n")),
            "notify: channel \"ops\": secret: a whsec_ secret needs its key, in base64, after the prefix; nothing follows whsec_"
        );
        assert_eq!(
            refused(&format!("{URL}secret = \"whsec_not*base64\"\n")),
            "notify: channel \"ops\": secret: a whsec_ secret must be base64 after the prefix: '*' at position 3 is not a base64 character"
        );
        assert_eq!(
            refused(&format!("{URL}secret = \"whsec_QUJD=\"\n")),
            "notify: channel \"ops\": secret: a whsec_ secret must be base64 after the prefix: '=' at position 4 is not a base64 character"
        );
        assert_eq!(
            refused(&format!("{URL}secret = \"\"\n")),
            "notify: channel \"ops\": secret: must not be empty; remove it to send unsigned"
        );
        accepted(&format!(
            "{URL}secret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n"
        ));
        accepted(&format!("{URL}secret = \"any text is a key\"\n"));
    }

    #[test]
    fn keys_the_format_does_not_use_are_refused() {
        assert_eq!(
            refused("format = \"email\"\nurl = \"smtp://relay.example\"\nfrom = \"w@example.test\"\nto = [\"o@example.test\"]\nsecret = \"k\"\n"),
            "notify: channel \"ops\": secret: a channel of format \"email\" is not signed; remove the secret"
        );
        assert_eq!(
            refused("format = \"sns\"\nurl = \"arn:aws:sns:us-east-1:123456789012:ops\"\nsecret = \"k\"\n"),
            "notify: channel \"ops\": secret: a channel of format \"sns\" is not signed; remove the secret"
        );
        assert_eq!(
            refused(&format!("{URL}format = \"slack\"\nto = [\"o@example.test\"]\n")),
            "notify: channel \"ops\": to: only an email channel takes it (this channel's format is \"slack\")"
        );
        assert_eq!(
            refused(&format!("{URL}events = [\"delivery.failing\"]\nkinds = [\"overdue\"]\n")),
            "notify: channel \"ops\": kinds: applies to lapses, but events leaves out \"lapse.recorded\"; add it to events or remove kinds"
        );
        assert_eq!(
            refused(&format!("{URL}events = [\"card.unavailable\"]\ndigest = \"PT15M\"\n")),
            "notify: channel \"ops\": digest: applies to lapses, but events leaves out \"lapse.recorded\"; add it to events or remove digest"
        );
        accepted(&format!(
            "{URL}events = [\"lapse.recorded\", \"delivery.failing\"]\nkinds = [\"overdue\"]\ndigest = \"PT15M\"\n"
        ));
    }

    #[test]
    fn grace_is_a_positive_duration_for_lapses() {
        let ok = accepted(&format!("{URL}grace = \"PT2M\"\n"));
        assert_eq!(
            ok.notify[0]
                .grace
                .as_ref()
                .map(super::IsoDuration::as_nanos),
            Some(120_000_000_000)
        );
        assert_eq!(accepted(URL).notify[0].grace, None);
        assert_eq!(
            refused(&format!("{URL}grace = \"PT0S\"\n")),
            "notify: channel \"ops\": grace: must be longer than zero; remove it to tell each lapse at once"
        );
        assert_eq!(
            refused(&format!("{URL}events = [\"card.unavailable\"]\ngrace = \"PT2M\"\n")),
            "notify: channel \"ops\": grace: applies to lapses, but events leaves out \"lapse.recorded\"; add it to events or remove grace"
        );
        assert_eq!(
            refused(&format!("{URL}events = [\"lapse.resolved\"]\n")),
            "notify: channel \"ops\": lapse.resolved: applies to lapses, but events leaves out \"lapse.recorded\"; add it to events or remove lapse.resolved"
        );
        accepted(&format!(
            "{URL}events = [\"lapse.recorded\", \"lapse.resolved\"]\ngrace = \"PT2M\"\n"
        ));
        let ok = accepted(&format!(
            "{URL}expectation_kinds = [\"shipment.manifest\"]\n"
        ));
        assert_eq!(ok.notify[0].expectation_kinds, ["shipment.manifest"]);
        assert_eq!(
            refused(&format!("{URL}expectation_kinds = [\" \"]\n")),
            "notify: channel \"ops\": expectation_kinds: a kind must not be empty (name the expectation's kind, e.g. \"shipment.manifest\")"
        );
    }

    #[test]
    fn routing_by_lapse_kind_and_severity() {
        let ok = accepted(&format!(
            "{URL}kinds = [\"overdue\", \"stalled\"]\nmin_severity = \"error\"\n"
        ));
        assert_eq!(ok.notify[0].kinds, ["overdue", "stalled"]);
        assert_eq!(ok.notify[0].min_severity.as_deref(), Some("error"));
        assert_eq!(accepted(URL).notify[0].min_severity, None);
        // Every format takes it, not only those that send a severity.
        accepted("format = \"email\"\nurl = \"smtp://relay.example\"\nfrom = \"w@example.test\"\nto = [\"o@example.test\"]\nmin_severity = \"critical\"\n");
        assert_eq!(
            refused(&format!("{URL}kinds = [\"overdue\", \"late\"]\n")),
            "notify: channel \"ops\": kinds: \"late\" is not a lapse (overdue, skipped, stalled)"
        );
        assert_eq!(
            refused(&format!("{URL}min_severity = \"eror\"\n")),
            "notify: channel \"ops\": min_severity: \"eror\" is not one of critical, error, warning, info (did you mean \"error\"?)"
        );
        assert_eq!(
            refused(&format!("{URL}min_severity = \"P2\"\n")),
            "notify: channel \"ops\": min_severity: \"P2\" is not one of critical, error, warning, info"
        );
        assert_eq!(
            refused(&format!("{URL}events = [\"card.unavailable\"]\nmin_severity = \"error\"\n")),
            "notify: channel \"ops\": min_severity: applies to lapses, but events leaves out \"lapse.recorded\"; add it to events or remove min_severity"
        );
    }

    #[test]
    fn a_url_without_a_host_or_port_is_refused() {
        for (url, why) in [
            ("https://", "\"https://\" names no host"),
            ("https:///hook", "\"https://\" names no host"),
            ("http://user:pw@:8080/hook", "\"http://\" names no host"),
            ("https://hooks.example:99999/h", "\"99999\" is not a port"),
            ("https://hooks.example:/h", "\"\" is not a port"),
            (
                "https://hooks .example/h",
                "not a URL the client can post to (invalid international domain name)",
            ),
        ] {
            assert_eq!(
                refused(&format!("url = \"{url}\"\n")),
                format!("notify: channel \"ops\": url: {why}"),
                "{url}"
            );
        }
        assert_eq!(
            refused("format = \"email\"\nurl = \"smtp://:25\"\nfrom = \"w@example.test\"\nto = [\"o@example.test\"]\n"),
            "notify: channel \"ops\": url: \"smtp://\" names no host"
        );
        accepted("url = \"http://[::1]:8080/hook\"\n");
        accepted("url = \"https://user@hooks.example/h?k=v\"\n");
    }

    /// `serve` reads the file with `Config::load`, the functions their secret with
    /// `Config::from_toml`: both refuse the same channel with the same words.
    #[test]
    fn both_deployments_refuse_the_same_channel() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("watcher.toml");
        let text = format!("{PARTIES}[[notify]]\nid = \"ops\"\n{URL}agents = [\"bookng\"]\n");
        std::fs::write(&path, &text).unwrap();
        let serve = Config::load(&path).expect_err("refused").to_string();
        let aws = Config::from_toml(&text).expect_err("refused").to_string();
        assert_eq!(serve, aws);
        assert!(serve.contains("did you mean \"booking\"?"), "{serve}");
    }
}
