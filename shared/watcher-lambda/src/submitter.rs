//! The submitter function: SQS messages `{"tenant","agent","messageId"}` → the outbox entry →
//! `SendMessage` to the agent. Reports partial batch failures, so one agent's retry does not
//! redeliver the others (`ReportBatchItemFailures` must be on the event source mapping).
//!
//! The durable outbox, not the queue, guarantees one lapse task per (agent, `messageId`): each
//! entry is claimed before it is sent (`Store::outbox_claim`, a lease of
//! `watcher_delivery::deliver::LEASE`), so an entry already sent, or claimed by another
//! invocation handed the same message, is not sent, however often and to however many
//! invocations SQS delivers it.

use std::collections::HashSet;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use watcher_core::ids::{AgentId, Tenant};
use watcher_core::time::Instant;
use watcher_delivery::deliver::{EntryOutcome, Submitter};
use watcher_delivery::endpoint::Endpoints;
use watcher_runtime::store::Store;

/// Handles one batch at `now`. A message that cannot be parsed is dropped with an error log (it
/// can never succeed; the outbox still holds the entry for the sweep). A lapse task that must be
/// retried later, or a store failure, is reported as a batch item failure so SQS redelivers it
/// after the visibility timeout — and so is every later message of the *same agent* (its FIFO
/// message group) in the batch, unprocessed, so that no agent's lapse tasks overtake one another
/// (AWS's guidance for partial batch responses on FIFO queues). Other agents' messages in the
/// batch are delivered: one agent's trouble never holds up another (the per-agent lanes of
/// `serve`). A lapse task claimed by another invocation is handed back the same way (it comes
/// back after the visibility timeout and is then found sent, or its claim expired). A message
/// received again after a send whose outcome was not recorded is looked for with `ListTasks`
/// before it is sent again (`Submitter::deliver_one`).
pub async fn handle<S, E>(
    store: &S,
    submitter: &Submitter,
    endpoints: &E,
    event: SqsEvent,
    now: Instant,
) -> SqsBatchResponse
where
    S: Store + ?Sized,
    E: Endpoints + ?Sized,
{
    let mut response = SqsBatchResponse::default();
    let mut stopped: HashSet<(Tenant, AgentId)> = HashSet::new();
    let fail = |response: &mut SqsBatchResponse, id: String| {
        if !id.is_empty() {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            response.batch_item_failures.push(failure);
        }
    };
    for record in event.records {
        let id = record.message_id.clone().unwrap_or_default();
        let span = tracing::info_span!("lapse_message", sqs_message_id = %id);
        let _guard = span.enter();
        let Some(body) = record.body.as_deref() else {
            tracing::error!("SQS message without a body; dropped");
            continue;
        };
        let message = match watcher_aws::parse_queue_message(body) {
            Ok(m) => m,
            Err(e) => {
                tracing::error!(error = %e, "not a lapse queue message; dropped");
                continue;
            }
        };
        let lane = (message.tenant.clone(), message.agent.clone());
        if stopped.contains(&lane) {
            fail(&mut response, id);
            continue;
        }
        let retry = match submitter
            .deliver_one(
                store,
                endpoints,
                &message.tenant,
                &message.agent,
                &message.message_id,
                now,
            )
            .await
        {
            Ok(
                EntryOutcome::Retried { .. }
                | EntryOutcome::Deferred { .. }
                | EntryOutcome::NotDue { .. },
            ) => true,
            Ok(outcome) => {
                tracing::info!(?outcome, message_id = %message.message_id, "lapse message handled");
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "store failure; the message will be redelivered");
                true
            }
        };
        if retry {
            stopped.insert(lane);
            fail(&mut response, id);
        }
    }
    response
}
