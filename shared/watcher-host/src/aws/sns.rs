//! [`Publish`] on Amazon SNS: how the timer function's `sns` notification channels publish
//! (issue 25). The message is the Standard Webhooks JSON; the event's id and type ride as
//! message attributes (`webhook-id`, `type`) so subscribers filter and deduplicate on them.

use async_trait::async_trait;
use aws_sdk_sns::types::MessageAttributeValue;
use watcher_notify::transport::Publish;

/// Publishes with an SNS client.
#[derive(Debug, Clone)]
pub struct SnsPublisher {
    client: aws_sdk_sns::Client,
}

impl SnsPublisher {
    /// A publisher over `client`.
    pub fn new(client: aws_sdk_sns::Client) -> SnsPublisher {
        SnsPublisher { client }
    }
}

fn attribute(value: &str) -> Result<MessageAttributeValue, String> {
    MessageAttributeValue::builder()
        .data_type("String")
        .string_value(value)
        .build()
        .map_err(|e| e.to_string())
}

#[async_trait]
impl Publish for SnsPublisher {
    async fn publish(
        &self,
        topic: &str,
        subject: &str,
        message: &str,
        id: &str,
        event_type: &str,
    ) -> Result<(), String> {
        self.client
            .publish()
            .topic_arn(topic)
            .subject(subject)
            .message(message)
            .message_attributes("webhook-id", attribute(id)?)
            .message_attributes("type", attribute(event_type)?)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| {
                let e = aws_sdk_sns::error::DisplayErrorContext(e);
                format!("SNS Publish: {e}")
            })
    }
}
