//! Creating what the adapters need — a schedule group, a FIFO lapse queue with its dead-letter
//! queue — for tests and local setups against moto (feature `test-utils`). In production the
//! deployment's template creates them.

use aws_sdk_scheduler::operation::get_schedule_group::GetScheduleGroupError;
use aws_sdk_sqs::types::QueueAttributeName;
use watcher_runtime::ports::PortError;

use crate::error::{permanent, port_error};
use crate::names::validate_group_name;

/// Creates the schedule group `name` unless it exists, and returns its ARN.
///
/// Looks first and creates only when the group is missing: moto answers `CreateScheduleGroup` on
/// an existing group by replacing it with an empty one (AWS answers ConflictException), which
/// would silently drop every schedule in it.
///
/// # Errors
/// Permanent for a name outside `[0-9a-zA-Z-_.]{1,64}` (checked before any call) and the
/// service's refusals; retryable for throttling, 5xx and timeouts.
pub async fn ensure_schedule_group(
    client: &aws_sdk_scheduler::Client,
    name: &str,
) -> Result<String, PortError> {
    validate_group_name(name).map_err(|e| permanent("schedule group name", e))?;
    match client.get_schedule_group().name(name).send().await {
        Ok(group) => return Ok(group.arn().unwrap_or_default().to_owned()),
        Err(e)
            if matches!(
                e.as_service_error(),
                Some(GetScheduleGroupError::ResourceNotFoundException(_))
            ) => {}
        Err(e) => return Err(port_error(format!("get schedule group {name}"), e)),
    }
    let created = client
        .create_schedule_group()
        .name(name)
        .send()
        .await
        .map_err(|e| port_error(format!("create schedule group {name}"), e))?;
    Ok(created.schedule_group_arn().to_owned())
}

/// A FIFO lapse queue and its dead-letter queue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LapseQueues {
    /// URL of the lapse queue (`{name}.fifo`).
    pub queue_url: String,
    /// ARN of the lapse queue.
    pub queue_arn: String,
    /// URL of its dead-letter queue (`{name}-dlq.fifo`).
    pub dlq_url: String,
    /// ARN of the dead-letter queue.
    pub dlq_arn: String,
}

/// Creates the FIFO queue `{name}.fifo` (explicit deduplication ids, so content-based
/// deduplication off) and its FIFO dead-letter queue `{name}-dlq.fifo`, to which a message moves
/// after `max_receive_count` receives without a delete. Idempotent for the same attributes.
///
/// # Errors
/// Permanent for an invalid name or attributes and the service's refusals; retryable for
/// throttling, 5xx and timeouts.
pub async fn create_lapse_queues(
    client: &aws_sdk_sqs::Client,
    name: &str,
    max_receive_count: u32,
) -> Result<LapseQueues, PortError> {
    let (dlq_url, dlq_arn) = create_fifo(client, &format!("{name}-dlq.fifo"), None).await?;
    let redrive = serde_json::json!({
        "deadLetterTargetArn": dlq_arn,
        "maxReceiveCount": max_receive_count,
    })
    .to_string();
    let (queue_url, queue_arn) =
        create_fifo(client, &format!("{name}.fifo"), Some(redrive)).await?;
    Ok(LapseQueues {
        queue_url,
        queue_arn,
        dlq_url,
        dlq_arn,
    })
}

/// Creates one FIFO queue, with a redrive policy if given; returns its URL and ARN.
async fn create_fifo(
    client: &aws_sdk_sqs::Client,
    name: &str,
    redrive: Option<String>,
) -> Result<(String, String), PortError> {
    let mut create = client
        .create_queue()
        .queue_name(name)
        .attributes(QueueAttributeName::FifoQueue, "true")
        .attributes(QueueAttributeName::ContentBasedDeduplication, "false");
    if let Some(policy) = redrive {
        create = create.attributes(QueueAttributeName::RedrivePolicy, policy);
    }
    create_queue(client, create, name).await
}

/// Creates the standard queue `name` that feeds the timer function delayed timer messages
/// ([`SqsTimerQueue`](crate::SqsTimerQueue); FIFO queues take no per-message delay) and returns
/// its URL and ARN. Idempotent for the same attributes.
///
/// # Errors
/// Permanent for an invalid name and the service's refusals; retryable for throttling, 5xx and
/// timeouts.
pub async fn create_timer_queue(
    client: &aws_sdk_sqs::Client,
    name: &str,
) -> Result<(String, String), PortError> {
    create_queue(client, client.create_queue().queue_name(name), name).await
}

/// Sends `create` (the `CreateQueue` of the queue `name`, for errors) and returns the queue's URL
/// and ARN.
async fn create_queue(
    client: &aws_sdk_sqs::Client,
    create: aws_sdk_sqs::operation::create_queue::builders::CreateQueueFluentBuilder,
    name: &str,
) -> Result<(String, String), PortError> {
    let created = create
        .send()
        .await
        .map_err(|e| port_error(format!("create queue {name}"), e))?;
    let url = created.queue_url().unwrap_or_default().to_owned();
    let attributes = client
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| port_error(format!("get the ARN of queue {name}"), e))?;
    let arn = attributes
        .attributes()
        .and_then(|a| a.get(&QueueAttributeName::QueueArn))
        .cloned()
        .unwrap_or_default();
    Ok((url, arn))
}
