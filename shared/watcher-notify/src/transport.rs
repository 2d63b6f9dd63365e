//! The HTTP post of a notification, behind a trait so the notifier can be driven without a
//! network in unit tests.

use std::time::Duration;

use async_trait::async_trait;

/// Posts one body.
#[async_trait]
pub trait Transport: Send + Sync {
    /// POSTs `body` (JSON) to `url` with `headers`, waiting at most `timeout`.
    ///
    /// # Errors
    /// Anything but a 2xx answer, in words (`HTTP 503 from the receiver`, followed by the start
    /// of its body when it has one; the transport error).
    async fn post(
        &self,
        url: &str,
        headers: &[(&'static str, String)],
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<(), String>;
}

/// [`Transport`] over reqwest (rustls).
#[derive(Debug, Clone)]
pub struct HttpTransport {
    client: reqwest::Client,
}

impl HttpTransport {
    /// A transport with its own connection pool.
    ///
    /// # Errors
    /// When the TLS back end cannot be set up.
    pub fn new() -> Result<HttpTransport, String> {
        let client = reqwest::Client::builder()
            .user_agent(concat!("a2a-watcher/", env!("CARGO_PKG_VERSION")))
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
    ) -> Result<(), String> {
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
            text
        })?;
        let status = resp.status();
        if status.is_success() {
            return Ok(());
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
            Err(format!("HTTP {} from the receiver", status.as_u16()))
        } else {
            Err(format!(
                "HTTP {} from the receiver: {said}",
                status.as_u16()
            ))
        }
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
        .body(field("text")?.to_string())
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
