//! `[[notify]]`: a notification channel's configuration (issue 25; expectations-v1 §13.1), its
//! formats, events and TLS modes, and the checks that need no network.

use serde::Deserialize;
use watcher_core::time::IsoDuration;

use crate::config::default_tenant;
use crate::error::ConfigError;

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
pub const NOTIFY_FORMATS: [&str; 5] = ["standard-webhooks", "slack", "teams", "email", "sns"];

/// The events a `[[notify]]` channel can tell (`events`; expectations-v1 §13.1, §10.2).
pub const NOTIFY_EVENTS: [&str; 5] = [
    "lapse.recorded",
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
    /// Tenant whose lapses it tells.
    #[serde(default = "default_tenant")]
    pub tenant: String,
    /// Where to send: for `standard-webhooks`, `slack` and `teams` the http(s) URL to POST to (the receiver's endpoint, or a Slack or Teams incoming-webhook URL: a credential, so give it as `url_file` or `url_env` to keep it out of the file); for `email` the SMTP relay, `smtp://host[:port]`; for `sns` the topic's ARN.
    pub url: String,
    /// Signing secret for the Standard Webhooks `webhook-signature` header (`whsec_` + base64, or any text); give it as `secret_file` or `secret_env` to keep it out of the file. Without it nothing is signed.
    #[serde(default)]
    pub secret: Option<String>,
    /// `standard-webhooks` (JSON: `type`, `timestamp`, `data`), `slack` (`text` and blocks), `teams` (an Adaptive Card message), `email` (a plain-text message over SMTP to `to`; `url` is then `smtp://host[:port]`) or `sns` (the AWS deployment only: the Standard Webhooks JSON published to the SNS topic whose ARN is `url`).
    #[serde(default = "default_notify_format")]
    pub format: String,
    /// Only lapses of these agents (ids); empty: every agent of the tenant.
    #[serde(default)]
    pub agents: Vec<String>,
    /// Only these lapses: `overdue`, `skipped`, `stalled`; empty: all three.
    #[serde(default)]
    pub kinds: Vec<String>,
    /// Only these events (absent or empty, the default: all five): `lapse.recorded` (a lapse; a `lapse.digest` per window when `digest` is set), `lapse_task.needs_person` (the task an agent created for a lapse task asks for input or authorization), `delivery.failing` (a lapse task of an agent is given up while none of its others is failed; told instead of that task's `lapse_task.failed`), `lapse_task.failed` (any further lapse task given up: it waits for an operator's re-queue), `card.unavailable` (an agent's card could not be read for a minute). `agents` filters every event; `kinds` filters lapses only.
    #[serde(default)]
    pub events: Vec<String>,
    /// ISO 8601 duration: when set, lapses are told as one digest per window (counts and the first few) instead of one message each; the window opens at the first lapse not yet told.
    #[serde(default)]
    pub digest: Option<IsoDuration>,
    /// Per-request timeout in seconds. Default 10.
    #[serde(default = "default_notify_timeout")]
    pub timeout_secs: u64,
    /// Email: the sender, `Name <address>` or an address.
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
}

impl NotifyConfig {
    /// Checks what can be checked without building the channel: the id, the URL's scheme, the
    /// format, the lapse kinds, the events and the digest window.
    ///
    /// # Errors
    /// [`ConfigError::Notify`] naming the channel and the field.
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
        if self.format == "email" {
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
        for k in &self.kinds {
            if !["overdue", "skipped", "stalled"].contains(&k.as_str()) {
                return Err(bad(format!(
                    "kinds: {k:?} is not a lapse (overdue, skipped, stalled)"
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
        if self.timeout_secs == 0 {
            return Err(bad("timeout_secs: must be at least 1".into()));
        }
        Ok(())
    }
}
