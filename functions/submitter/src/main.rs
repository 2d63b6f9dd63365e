//! The submitter function: fed by the FIFO lapse queue, posts each lapse task once, and reports
//! partial batch failures (`ReportBatchItemFailures`) for the ones to retry.

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{service_fn, LambdaEvent};
use watcher_host::aws::Function;
use watcher_runtime::clock::{Clock, SystemClock};

#[tokio::main]
async fn main() -> Result<(), lambda_runtime::Error> {
    watcher_lambda::init_tracing();
    let parts = watcher_host::aws::from_env(Function::Submitter)
        .await
        .map_err(|e| format!("{e:#}"))?;
    let parts = &parts;
    let sending = parts
        .sending_for(Function::Submitter)
        .map_err(|e| format!("{e:#}"))?;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let now = SystemClock.now();
        watcher_lambda::submitter::pick_up_cards(&parts.cards, &event.payload, now).await;
        let response: SqsBatchResponse = watcher_lambda::submitter::handle(
            &*parts.watcher.store,
            &sending.submitter,
            &parts.endpoints,
            Some(&*sending.reconciler),
            &*parts.redelivery,
            event.payload,
            now,
        )
        .await;
        Ok::<_, lambda_runtime::Error>(response)
    }))
    .await
}
