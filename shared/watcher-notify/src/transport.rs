//! The HTTP post of a notification, behind a trait so the notifier can be driven without a
//! network in unit tests.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;

/// Why a notification was not delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PostError {
    /// The receiver answered 3xx. Not followed: a notification is posted to its channel's URL
    /// only (a followed 301 or 302 becomes a GET without the signed body, and a 307 or 308
    /// would post the signed body to a URL nobody configured). What to do: give the channel
    /// the URL the receiver redirects to.
    Redirect {
        /// The status (300–399).
        status: u16,
        /// Where it pointed (`Location`, resolved against the channel's URL), as scheme and
        /// host, with `/…` when it has a path or query: a URL's path may hold a credential
        /// (as [`crate::Channel::target`] shows a channel's URL). `None` without a `Location`.
        location: Option<String>,
    },
    /// Any other failure, in words: `HTTP 503 from the receiver` and the start of its body, a
    /// connection error or timeout, the SMTP relay's or the SNS service's refusal.
    Failed(String),
    /// The receiver refused the notification for good (`HTTP 400` from PagerDuty, Opsgenie or
    /// an Alertmanager: the event is malformed and no retry changes that), in words with the
    /// receiver's message. Not retried: the channel records it and moves past the event.
    Rejected(String),
}

impl PostError {
    /// The outcome this failure is counted as in the metrics: `redirected` or `failed`.
    pub fn outcome(&self) -> &'static str {
        match self {
            PostError::Redirect { .. } => "redirected",
            PostError::Failed(_) | PostError::Rejected(_) => "failed",
        }
    }

    /// Whether retrying cannot help ([`PostError::Rejected`]).
    pub fn is_permanent(&self) -> bool {
        matches!(self, PostError::Rejected(_))
    }
}

impl fmt::Display for PostError {
    /// `redirect (301) to https://new.example/… not followed; give the channel the URL it
    /// redirects to`, or the failure's words.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PostError::Redirect {
                status,
                location: Some(to),
            } => write!(
                f,
                "redirect ({status}) to {to} not followed; give the channel the URL the receiver redirects to"
            ),
            PostError::Redirect {
                status,
                location: None,
            } => write!(f, "redirect ({status}) without a Location not followed"),
            PostError::Failed(words) => f.write_str(words),
            PostError::Rejected(words) => write!(f, "{words} (rejected for good: not retried)"),
        }
    }
}

impl From<String> for PostError {
    fn from(words: String) -> Self {
        PostError::Failed(words)
    }
}

/// Posts one body.
#[async_trait]
pub trait Transport: Send + Sync {
    /// POSTs `body` (JSON) to `url` with `headers`, waiting at most `timeout`. A redirect is
    /// not followed.
    ///
    /// # Errors
    /// Anything but a 2xx answer: [`PostError::Redirect`] for a 3xx, else
    /// [`PostError::Failed`] in words (`HTTP 503 from the receiver`, followed by the start of its
    /// body when it has one; the transport error).
    async fn post(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<(), PostError>;
}

/// [`Transport`] over reqwest (rustls), following no redirect.
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: reqwest::Client,
}

impl HttpTransport {
    /// A transport with its own connection pool, following no redirect.
    ///
    /// # Errors
    /// When the TLS back end cannot be set up.
    pub fn new() -> Result<HttpTransport, String> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("a2a-watcher/", env!("CARGO_PKG_VERSION")))
            // A 3xx is the receiver's answer, and a failure (`PostError::Redirect`).
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("the notification HTTP client: {e}"))?;
        Ok(HttpTransport { client })
    }
}

#[async_trait]
impl Transport for HttpTransport {
    async fn post(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<(), PostError> {
        let mut req = self
            .client
            .post(url)
            .timeout(timeout)
            .header("content-type", "application/json")
            .body(body);
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        let resp = req.send().await.map_err(|e| {
            // reqwest's Display omits the cause ("error sending request"); the chain names it.
            let mut text = e.to_string();
            let mut cause = std::error::Error::source(&e);
            while let Some(c) = cause {
                text.push_str(": ");
                text.push_str(&c.to_string());
                cause = c.source();
            }
            PostError::Failed(text)
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
        }
        if status.is_redirection() {
            let location = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .map(|to| shown_location(url, to));
            return Err(PostError::Redirect {
                status: status.as_u16(),
                location,
            });
        }
        // The receiver's own words, when it gave any: the start of its body, on one line.
        let said: String = resp
            .text()
            .await
            .unwrap_or_default()
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .chars()
            .take(200)
            .collect();
        if said.is_empty() {
            Err(format!("HTTP {} from the receiver", status.as_u16()).into())
        } else {
            Err(format!("HTTP {} from the receiver: {said}", status.as_u16()).into())
        }
    }
}

/// A redirect's `Location` (`to`, absolute or relative to `from`) as it may be shown: scheme,
/// host and port, then `/…` when it has a path other than `/` or a query. `to` as given, cut
/// at 200 characters, when it does not resolve.
fn shown_location(from: &str, to: &str) -> String {
    let resolved = reqwest::Url::parse(from).and_then(|base| base.join(to));
    match resolved {
        Ok(u) => {
            let host = u.host_str().unwrap_or("");
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            let more = if u.path() != "/" || u.query().is_some() {
                "/…"
            } else {
                ""
            };
            format!("{}://{host}{port}{more}", u.scheme())
        }
        Err(_) => format!("{:?}", to.chars().take(200).collect::<String>()),
    }
}

/// Sends `n` (an email body: `{ "subject", "text" }`) to `target`'s recipients, as a plain-text
/// message whose `Message-ID` is `<{id}@a2a-watcher>` (the same on every attempt).
///
/// # Errors
/// A body without a subject or text, a message that cannot be built, or the relay's refusal
/// or a connection error, in words.
pub async fn send_email(
    target: &crate::channel::EmailTarget,
    id: &str,
    body: &serde_json::Value,
) -> Result<(), String> {
    use lettre::AsyncTransport;
    let field = |k: &str| {
        body.get(k)
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| format!("the email body has no {k}"))
    };
    let mut message = lettre::Message::builder()
        .from(target.from.clone())
        .subject(field("subject")?)
        .message_id(Some(format!("<{id}@a2a-watcher>")))
        .header(lettre::message::header::ContentType::TEXT_PLAIN);
    for to in &target.to {
        message = message.to(to.clone());
    }
    let message = message
        .body(field("text")?.to_owned())
        .map_err(|e| format!("the email could not be built: {e}"))?;
    target
        .transport
        .send(message)
        .await
        .map(|_| ())
        .map_err(|e| format!("SMTP: {e}"))
}

/// Publishes a notification to a topic (an SNS topic on AWS): implemented by the deployment that
/// has the topic's client (`watcher-host`'s AWS parts), so this crate needs no AWS SDK.
#[async_trait]
pub trait Publish: Send + Sync {
    /// Publishes `message` (the Standard Webhooks JSON, as text) to `topic` with `subject` (at
    /// most 100 characters) and the event's `id` and `event_type` as message attributes
    /// (`webhook-id`, `type`), so a subscriber filters and deduplicates without parsing.
    ///
    /// # Errors
    /// The service's refusal or a connection error, in words.
    async fn publish(
        &self,
        topic: &str,
        subject: &str,
        message: &str,
        id: &str,
        event_type: &str,
    ) -> Result<(), String>;
}
