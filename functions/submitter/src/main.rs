//! The submitter function: fed by the FIFO lapse queue's wake-ups, runs each woken agent's lane
//! (`watcher_delivery::lane::Lane`, as serve does) while the invocation has time, and reports
//! partial batch failures (`ReportBatchItemFailures`) for the wake-ups to hand back.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use lambda_runtime::{service_fn, LambdaEvent};
use watcher_host::aws::Function;
use watcher_lambda::submitter::{LaneWakes, Lanes, NoLaneWakes};
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
    // Delayed wake-ups of lanes go to the timer queue, when the deployment has one.
    let wakes: Arc<dyn LaneWakes> = match std::env::var("TIMER_QUEUE_URL") {
        Ok(url) if !url.is_empty() => {
            let aws = watcher_aws::sdk_env::sdk_config_from_env().map_err(|e| format!("{e:#}"))?;
            Arc::new(watcher_aws::SqsTimerQueue::new(
                aws_sdk_sqs::Client::new(&aws),
                url,
            ))
        }
        _ => Arc::new(NoLaneWakes),
    };
    let wakes = &*wakes;
    let lanes = &Lanes {
        store: &*parts.watcher.store,
        submitter: &sending.submitter,
        endpoints: &parts.endpoints,
        reconciler: Some(&*sending.reconciler),
        per_agent: sending.lanes.per_agent,
        batch: sending.lanes.batch,
    };
    let margin = watcher_lambda::submitter::margin(sending.request_timeout);
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let stop =
            watcher_lambda::submitter::stop_taking_at(event.context.deadline, now_ms, margin);
        watcher_lambda::submitter::pick_up_cards(&parts.cards, &event.payload, SystemClock.now())
            .await;
        let response: SqsBatchResponse = watcher_lambda::submitter::handle(
            lanes,
            &*parts.redelivery,
            wakes,
            &SystemClock,
            event.payload,
            Some(stop),
        )
        .await;
        Ok::<_, lambda_runtime::Error>(response)
    }))
    .await
}
